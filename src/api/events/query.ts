// The oracle of the event feed and the anomalies: answers straight from SQLite (events, event_hosts,
// event_seats, anomaly_events; anomaly readers of src/derive/anomalies.ts). Rules: src/api/events/feed.ts.
import type { Db } from '../../db/index.js';
import { statement } from '../../db/statements.js';
import type { EventType } from '../../derive/event-types.js';
import { anomalyList, anomalyView, eventAnomalies, type AnomalyFilters, type AnomalyView } from '../../derive/anomalies.js';
import {
  addHourCount,
  anomalyPage,
  chartBucketFor,
  eventCursor,
  eventMeta,
  FeedCollector,
  META_SCAN_MAX,
  feedKey,
  type FeedKey,
  type HourTypeCounts,
  type StoredAnomaly,
  type StoredEvent,
} from './feed.js';
import type { ParamsOf } from '../handlers.js';
import { notFoundOf, ok } from '../result.js';
import { routeOrder } from '../routes/request.js';
import { ROUTES } from '../routes/table.js';
import { afterSql, keysetOf, orderBySql, reversed } from '../query/keyset.js';
import type { Queries, QueryFn } from '../query/types.js';
import { apiTs } from '../time.js';

export interface EventRow {
  id: string;
  /** events.type holds only the change-event types (the derive steps write no other). */
  type: EventType;
  observed_at: number;
  hostname: string | null;
  payload: string;
  /** The participant's canonical id (participant events), else null. */
  pid: string | null;
}

/** The hosts an event relates to (the `host` filter's relation), in code-point order. */
function relatedHosts(db: Db, eventId: string): string[] {
  return statement(db, 'SELECT hostname FROM event_hosts WHERE event_id = ? ORDER BY hostname').pluck().all(eventId) as string[];
}

/** The GlobalEvent of an events row. */
export function globalEvent(db: Db, r: EventRow): StoredEvent['e'] {
  return {
    id: r.id,
    type: r.type,
    hostname: r.hostname,
    participant: r.pid,
    related_hosts: relatedHosts(db, r.id),
    observed_at: apiTs(r.observed_at),
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    anomalies: eventAnomalies(db, r.id),
  };
}

interface Where {
  sql: string[];
  args: unknown[];
}

/** The non-type filters of events.list (entity filters and the window), any subset of them. */
interface NonTypeFilters {
  host?: string;
  seat?: string;
  participant?: string;
  since?: number;
  until?: number;
}

/** WHERE clauses of the non-type filters (entity filters and the window). */
function nonTypeWhere(params: NonTypeFilters): Where {
  const w: Where = { sql: [], args: [] };
  if (params.host !== undefined) {
    w.sql.push('e.id IN (SELECT event_id FROM event_hosts WHERE hostname = ?)');
    w.args.push(params.host);
  }
  if (params.seat !== undefined) {
    w.sql.push('e.id IN (SELECT event_id FROM event_seats WHERE seat_id = ?)');
    w.args.push(params.seat);
  }
  if (params.participant !== undefined) {
    w.sql.push('e.participant_id IN (SELECT id FROM participants WHERE pid = ?)');
    w.args.push(params.participant);
  }
  if (params.since !== undefined) {
    w.sql.push('e.observed_at >= ?');
    w.args.push(params.since);
  }
  if (params.until !== undefined) {
    w.sql.push('e.observed_at <= ?');
    w.args.push(params.until);
  }
  return w;
}

function withTypes(w: Where, types: readonly string[] | undefined): Where {
  if (!types) return w;
  return { sql: [...w.sql, `e.type IN (${types.map(() => '?').join(', ')})`], args: [...w.args, ...types] };
}

const cond = (w: Where, extra: string[] = []): string => {
  const all = [...w.sql, ...extra];
  return all.length === 0 ? '' : `WHERE ${all.join(' AND ')}`;
};

/** The columns of an EventRow, selected from `events e`. */
export const EVENT_ROW_COLS = 'e.id, e.type, e.observed_at, e.hostname, e.payload, (SELECT pid FROM participants WHERE id = e.participant_id) AS pid';

/** Exact per-hour, per-type counts under the non-type filters; null when they degrade (src/api/events/feed.ts). */
function hourCounts(db: Db, params: ParamsOf<'events.list'>): HourTypeCounts | null {
  const w = nonTypeWhere(params);
  const entities = (['participant', 'seat', 'host'] as const).filter((k) => params[k] !== undefined);
  if (entities.length >= 2 && params.participant === undefined) {
    // The events of the first entity filter inside the window, counted one by one by the shim.
    const first = entities[0]!;
    const only = nonTypeWhere({ [first]: params[first], since: params.since, until: params.until });
    const n = db.prepare(`SELECT count(*) FROM events e ${cond(only)}`).pluck().get(...only.args) as number;
    if (n > META_SCAN_MAX) return null;
  }
  const out: HourTypeCounts = new Map();
  const rows = db.prepare(`SELECT (e.observed_at / 3600000) * 3600000 AS h, e.type, count(*) AS n FROM events e ${cond(w)} GROUP BY h, e.type`).all(...w.args) as Array<{
    h: number;
    type: string;
    n: number;
  }>;
  for (const r of rows) addHourCount(out, r.h, r.type, r.n);
  return out;
}

/** The feed's keyset, newest first (the declared order of events.list), and read toward newer events. */
const OLDER_FIRST = keysetOf(routeOrder(ROUTES['events.list']), { observed_at: 'e.observed_at', id: 'e.id' });
const NEWER_FIRST = reversed(OLDER_FIRST);

/**
 * The matches a page takes, in reading order: after the cursor (`older`: toward older events, the
 * `limit` + 1 nearest, the last telling whether a next page exists) or after prev_cursor (`newer`:
 * toward newer events, the `limit` nearest). Every filter in SQL, whatever list the shim reads.
 */
function pageRows(db: Db, where: Where, dir: 'older' | 'newer', after: FeedKey | undefined, limit: number): EventRow[] {
  const keyset = dir === 'older' ? OLDER_FIRST : NEWER_FIRST;
  const from = after === undefined ? null : afterSql(keyset, after);
  return db
    .prepare(`SELECT ${EVENT_ROW_COLS} FROM events e ${cond(where, from ? [from.sql] : [])} ORDER BY ${orderBySql(keyset)} LIMIT ?`)
    .all(...where.args, ...(from?.args ?? []), dir === 'older' ? limit + 1 : limit) as EventRow[];
}

/** The newest `n` events, newest first, as the feed's first page holds them (the status page's Atom feed). */
export function newestEvents(db: Db, n: number): StoredEvent['e'][] {
  return pageRows(db, { sql: [], args: [] }, 'older', undefined, n)
    .slice(0, n)
    .map((r) => globalEvent(db, r));
}

export const eventsListQuery: QueryFn<'events.list'> = (db, params, nowMs) => {
  const limit = params.limit;
  const types = params.type;
  const cursor = params.cursor;
  const prev = params.prev_cursor;
  const dir = prev ? 'newer' : 'older';
  const where = withTypes(nonTypeWhere(params), types);
  const collector = new FeedCollector<EventRow>(limit, dir);
  const from = prev ?? cursor;
  for (const r of pageRows(db, where, dir, from === undefined ? undefined : feedKey(from.key), limit)) {
    if (!collector.offer(r, [r.observed_at, r.id])) break;
  }
  // Toward newer events, next_cursor needs a match older than the page (inside the window: at or after since).
  const oldest = collector.oldestKey;
  const older = dir === 'newer' && oldest !== null ? afterSql(OLDER_FIRST, oldest) : null;
  const olderFollows = older !== null && db.prepare(`SELECT 1 FROM events e ${cond(where, [older.sql])} LIMIT 1`).get(...where.args, ...older.args) !== undefined;
  const { next, prev: newer } = collector.cursorKeys(olderFollows, prev?.key);
  const page: Record<string, unknown> = {
    items: collector.page.items.map((r) => globalEvent(db, r)),
    next_cursor: next === null ? null : eventCursor(next, 'next'),
    prev_cursor: newer === null ? null : eventCursor(newer, 'prev'),
  };
  if (!cursor && !prev) {
    const total = db.prepare('SELECT count(*) FROM events').pluck().get() as number;
    const oldest = db.prepare('SELECT min(observed_at) FROM events').pluck().get() as number | null;
    const filterActive = (['type', 'host', 'seat', 'participant', 'since', 'until'] as const).some((k) => params[k] !== undefined);
    page.meta = eventMeta({
      total,
      filterActive,
      types,
      hours: hourCounts(db, params),
      bucket: chartBucketFor(params.since, params.until, oldest, nowMs),
    });
  }
  return ok(page);
};

/** AnomalyView with observed_at in API form. */
export function apiAnomaly(v: AnomalyView): StoredAnomaly['a'] {
  return { ...v, observed_at: apiTs(v.observed_at) };
}

export const anomaliesListQuery: QueryFn<'anomalies.list'> = (db, params) => {
  const limit = params.limit;
  const filters: AnomalyFilters = {
    detector: params.detector,
    grade: params.grade,
    host: params.host,
    seat: params.seat,
    acknowledged: params.acknowledged,
    sinceMs: params.since,
  };
  const cursor = params.cursor;
  // Every filter in SQL, whatever list the shim reads: the `limit` + 1 nearest matches after the cursor.
  const matches: Array<{ item: StoredAnomaly['a']; key: FeedKey }> = [];
  for (const { item, key } of anomalyList(db, filters, cursor ? feedKey(cursor.key) : undefined)) {
    matches.push({ item: apiAnomaly(item), key });
    if (matches.length > limit) break;
  }
  return ok(anomalyPage(matches, limit));
};

export const anomaliesDetailQuery: QueryFn<'anomalies.detail'> = (db, params) => {
  const id = params.id;
  const v = anomalyView(db, id);
  return v === null ? notFoundOf('anomaly', id) : ok(apiAnomaly(v));
};

export const EVENTS_QUERIES = {
  'events.list': eventsListQuery,
  'anomalies.list': anomaliesListQuery,
  'anomalies.detail': anomaliesDetailQuery,
} satisfies Partial<Queries>;
