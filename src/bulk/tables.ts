// The tables of the bulk downloads (docs/bulk.md, "Tables"): every published resource as rows, each
// row the API's object (the oracle's readers and query functions, so a row is what the API answers),
// with its zod schema. Rows are generated in a stable order from one database state, one at a time:
// no table is held in memory (hosts, providers, seats, access points and zones are bounded by the
// network's operators, not by its participants, and are read whole as the API reads them).
//
// Privacy (spec rule 5): a discovered participant never has a name or a card. The derivation gives
// them none (a card is taken only from a directory observation showing the participant present,
// docs/methodology/participants.md); the tables enforce it again and count what they had to drop
// (`redacted`), so a derivation bug cannot publish one.
import { z } from 'zod';
import type { Db } from '../db/index.js';
import { apiAnomaly, globalEvent, type EventRow } from '../api/events/query.js';
import { AnomalyView, GlobalEvent } from '../api/events/schema.js';
import { hostsQuery } from '../api/hosts/query.js';
import { uptimeItem, type UptimeRow } from '../api/hosts/query.js';
import { HostSummary, IncidentView, UptimeBucket } from '../api/hosts/schema.js';
import { incidentApi, smlApi } from '../api/hosts/views.js';
import { curatedSeatNames, listItemOf, LIST_COLUMNS, type ListRow } from '../api/participants/query.js';
import { ParticipantHistoryRow, ParticipantListItem } from '../api/participants/schema.js';
import type { ParticipantListItem as ListItem } from '../api/participants/schema.js';
import { apsListQuery, providersListQuery, seatsDetailQuery } from '../api/providers/query.js';
import { ApKey, ApView, ChurnParticipant, ChurnSeriesPoint, ProviderView, SeatView } from '../api/providers/schema.js';
import { ChurnCategory, ParticipantIdString } from '../api/schemas/common.js';
import { ZoneIncidentView } from '../api/schemas/sml.js';
import { apiTs, apiTsOrNull } from '../api/time.js';
import { anomalyView } from '../derive/anomalies.js';
import { CHURN_CATEGORIES } from '../derive/churn.js';
import { churnDailyByIdentity, churnFactsByIdentity } from '../derive/churn-lists.js';
import { hostIncidents, type HostRole } from '../derive/hosts/read.js';
import { ROLLUP_TABLES, type Resolution } from '../derive/hosts/rollup.js';
import { participantHistory } from '../derive/participants/read.js';
import { smlResponse } from '../derive/zones.js';
import type { ApiResult } from '../api/result.js';

/** What a table's rows are read from: one database state at one snapshot clock. */
export interface TableSource {
  db: Db;
  nowMs: number;
  /** Counts rows dropped or fields nulled for privacy (see the file comment). */
  redact: () => void;
}

export interface BulkTable {
  /** File and SQLite table name. */
  name: string;
  title: string;
  description: string;
  /** The zod schema of a row (an API resource, or one with the keys that place it: a participant, a provider key). */
  schema: z.ZodType;
  rows: (src: TableSource) => Iterable<unknown>;
}

/** The body of an oracle answer that must succeed. */
function body<T>(r: ApiResult, what: string): T {
  if (r.status !== 200) throw new Error(`bulk ${what}: the oracle answered ${r.status}`);
  return r.body as T;
}

/** Participant rows in participant id order, with their internal key (for the history table). */
function participantRows(db: Db): IterableIterator<ListRow & { participant_id: number }> {
  return db
    .prepare(`SELECT l.participant_id, ${LIST_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ')} FROM participants p JOIN participant_list l ON l.participant_id = p.id ORDER BY p.pid`)
    .iterate() as IterableIterator<ListRow & { participant_id: number }>;
}

function* participants(src: TableSource): Generator<ListItem> {
  const seatNames = curatedSeatNames(src.db);
  for (const r of participantRows(src.db)) {
    const item = listItemOf(r, seatNames);
    if (item.provenance === 'discovered' && (item.name !== null || item.country !== null)) {
      src.redact();
      yield { ...item, name: null, country: null };
    } else yield item;
  }
}

const HistoryRow = z.strictObject({ participant: ParticipantIdString.describe('the participant, canonical scheme::value'), ...ParticipantHistoryRow.shape });

function* history(src: TableSource): Generator<z.infer<typeof HistoryRow>> {
  for (const p of participantRows(src.db)) {
    for (const { item } of participantHistory(src.db, p.pid)) {
      // A discovered participant's card facts are never published (none exist by the derivation).
      if (p.provenance === 'discovered' && item.fact === 'card') {
        src.redact();
        continue;
      }
      yield { participant: p.pid, fact: item.fact, valid_from: apiTs(item.valid_from), valid_to: apiTsOrNull(item.valid_to), detail: item.detail };
    }
  }
}

function hosts(src: TableSource): Array<z.infer<typeof HostSummary>> {
  return body<{ items: Array<z.infer<typeof HostSummary>> }>(hostsQuery(src.db, {}, src.nowMs), 'hosts').items;
}

/** A resolution's buckets: host by host (hostname order), oldest bucket first, the rollup (`__all__`) before the locations. */
function uptime(resolution: Resolution): (src: TableSource) => Generator<z.infer<typeof UptimeBucket>> {
  return function* (src) {
    const hostList = src.db.prepare('SELECT id, hostname, role FROM hosts WHERE role IS NOT NULL ORDER BY hostname').all() as Array<{ id: number; hostname: string; role: HostRole }>;
    const q = src.db.prepare(`SELECT bucket_start, location, up, degraded, down, sketches FROM ${ROLLUP_TABLES[resolution]} WHERE host_id = ? ORDER BY bucket_start, location`);
    for (const h of hostList) {
      for (const r of q.iterate(h.id) as IterableIterator<UptimeRow>) yield uptimeItem(resolution, h.hostname, h.role, r);
    }
  };
}

function* incidents(src: TableSource): Generator<z.infer<typeof IncidentView>> {
  for (const { item } of hostIncidents(src.db)) yield incidentApi(item);
}

function zoneIncidents(src: TableSource): Array<z.infer<typeof ZoneIncidentView>> {
  return smlApi(smlResponse(src.db, src.nowMs)).zones.flatMap((zone) => zone.incidents ?? []);
}

function* events(src: TableSource): Generator<z.infer<typeof GlobalEvent>> {
  const rows = src.db
    .prepare(
      `SELECT e.id, e.type, e.observed_at, e.hostname, e.payload, p.pid, l.provenance FROM events e
       LEFT JOIN participants p ON p.id = e.participant_id LEFT JOIN participant_list l ON l.participant_id = e.participant_id
       ORDER BY e.observed_at DESC, e.id DESC`,
    )
    .iterate() as IterableIterator<EventRow & { provenance: string | null }>;
  for (const r of rows) {
    // A card change of a discovered participant would carry its card (none exist by the derivation).
    if (r.provenance === 'discovered' && r.type === 'directory_card_changed') {
      src.redact();
      continue;
    }
    yield globalEvent(src.db, r);
  }
}

function* anomalies(src: TableSource): Generator<z.infer<typeof AnomalyView>> {
  for (const id of src.db.prepare('SELECT id FROM anomalies ORDER BY observed_at DESC, id DESC').pluck().iterate() as IterableIterator<string>) {
    const v = anomalyView(src.db, id);
    if (v !== null) yield apiAnomaly(v);
  }
}

function* seats(src: TableSource): Generator<z.infer<typeof SeatView>> {
  for (const seatId of src.db.prepare('SELECT seat_id FROM seat_identities ORDER BY seat_id').pluck().all() as string[]) {
    yield body<z.infer<typeof SeatView>>(seatsDetailQuery(src.db, { seatId }, src.nowMs), `seat ${seatId}`);
  }
}

const ChurnDay = z.strictObject({ key: ApKey.describe('the access point (provider key) the counts are of'), ...ChurnSeriesPoint.shape });

/** One row per access point and UTC day with churn (the days of /v1/aps/{key}/churn that are not all zero). */
function* churnDaily(src: TableSource): Generator<z.infer<typeof ChurnDay>> {
  let cur: z.infer<typeof ChurnDay> | null = null;
  const done = (d: z.infer<typeof ChurnDay>): z.infer<typeof ChurnDay> => ({ ...d, net_growth: d.joiners + d.movers_in - d.movers_out - d.leavers });
  for (const r of churnDailyByIdentity(src.db)) {
    if (cur === null || cur.key !== r.owner || cur.day !== r.day) {
      if (cur !== null) yield done(cur);
      cur = { key: r.owner, day: r.day, joiners: 0, movers_in: 0, movers_out: 0, leavers: 0, net_growth: 0 };
    }
    if (r.category === 'joiner') cur.joiners += r.n;
    else if (r.category === 'leaver') cur.leavers += r.n;
    else if (r.category === 'mover_in') cur.movers_in += r.n;
    else cur.movers_out += r.n;
  }
  if (cur !== null) yield done(cur);
}

const ChurnParticipantRow = z.strictObject({
  key: ApKey.describe('the access point (provider key) the participant counts for'),
  category: ChurnCategory,
  ...ChurnParticipant.shape,
});

/** Every participant behind the churn counts, by category, access point, day (newest first) and id. */
function* churnParticipants(src: TableSource): Generator<z.infer<typeof ChurnParticipantRow>> {
  for (const category of CHURN_CATEGORIES) {
    for (const r of churnFactsByIdentity(src.db, category)) {
      yield { key: r.owner, category, id: r.id, scheme: r.scheme, value: r.value, day: r.day, counterpart_key: r.counterpart_key, counterpart_name: r.counterpart_name };
    }
  }
}

/** The tables, in the order of the data package. */
export const BULK_TABLES: readonly BulkTable[] = [
  { name: 'participants', title: 'Participants', description: 'Every participant as in /v1/participants (ParticipantListItem), by id. Discovered participants carry no name or country.', schema: ParticipantListItem, rows: participants },
  { name: 'participant_history', title: 'Participant history', description: "Every participant's facts history as in /v1/participants/{id}/history (ParticipantHistoryRow) with the participant's id; by participant, newest first.", schema: HistoryRow, rows: history },
  { name: 'hosts', title: 'Hosts', description: 'Every monitored host as in /v1/hosts (HostSummary) at the snapshot clock, worst first.', schema: HostSummary, rows: hosts },
  { name: 'uptime_hourly', title: 'Hourly uptime', description: 'Hourly uptime buckets as in /v1/hosts/{hostname}/uptime (UptimeBucket): by host, oldest first, the rollup (__all__) before the locations.', schema: UptimeBucket, rows: uptime('hourly') },
  { name: 'uptime_daily', title: 'Daily uptime', description: 'Daily uptime buckets (UptimeBucket), ordered as the hourly ones.', schema: UptimeBucket, rows: uptime('daily') },
  { name: 'uptime_monthly', title: 'Monthly uptime', description: 'Monthly uptime buckets (UptimeBucket), ordered as the hourly ones.', schema: UptimeBucket, rows: uptime('monthly') },
  { name: 'incidents', title: 'Host incidents', description: 'Every host incident as in /v1/incidents (IncidentView), newest first.', schema: IncidentView, rows: incidents },
  { name: 'zone_incidents', title: 'Zone incidents', description: 'Every SML/SMK zone incident as in /v1/sml (ZoneIncidentView), by zone, newest first.', schema: ZoneIncidentView, rows: zoneIncidents },
  { name: 'events', title: 'Change events', description: 'Every change event as in /v1/events (GlobalEvent, with its participant), newest first.', schema: GlobalEvent, rows: events },
  { name: 'anomalies', title: 'Anomalies', description: 'Every anomaly as in /v1/anomalies (AnomalyView), newest first.', schema: AnomalyView, rows: anomalies },
  { name: 'providers', title: 'Providers', description: 'The member registry as in /v1/providers (ProviderView), busiest first.', schema: ProviderView, rows: (src) => body<{ items: unknown[] }>(providersListQuery(src.db, {}, src.nowMs), 'providers').items },
  { name: 'seats', title: 'Seats', description: 'Every seat as in /v1/seats/{seatId} (SeatView), by seat id.', schema: SeatView, rows: seats },
  { name: 'access_points', title: 'Access points', description: 'Every access point provider as in /v1/aps (ApView) at the snapshot clock, busiest first.', schema: ApView, rows: (src) => body<{ items: unknown[] }>(apsListQuery(src.db, {}, src.nowMs), 'access points').items },
  { name: 'churn_daily', title: 'Churn per day', description: 'Joiners, movers and leavers per access point and UTC day (the series of /v1/aps/{key}/churn without its zero days), by key and day.', schema: ChurnDay, rows: churnDaily },
  { name: 'churn_participants', title: 'Churn participants', description: 'The participants behind the churn counts (ChurnParticipant of /v1/aps/{key}/churn/participants) with the access point and category, unbounded.', schema: ChurnParticipantRow, rows: churnParticipants },
];
