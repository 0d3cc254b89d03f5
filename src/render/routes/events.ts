// Renders the event feed and the anomalies: the exact files at default parameters, every anomaly's
// file, the events lists per partition with their histogram lists, and the anomaly lists with their
// counted facets. The layout is stated once in docs/api-providers-events.md ("Event feed", snapshot
// layout; "Anomalies"). Streaming: each partition family is one ordered statement.
import { anomalyFacetFields, anomalyFacetValues, bucketStart, EVENT_CHUNK_MIN_ITEMS, EVENT_ROUTE, HISTOGRAM_LISTS, NEWEST_FIRST_DIRS, type BucketRow, type StoredAnomaly, type StoredEvent } from '../../api/events/feed.js';
import { LIMIT_DEFAULT } from '../../api/params.js';
import { anomaliesDetailQuery, anomaliesListQuery, apiAnomaly, EVENT_ROW_COLS, eventsListQuery, globalEvent, type EventRow } from '../../api/events/query.js';
import { EVENT_TYPES } from '../../api/schemas/common.js';
import type { Db } from '../../db/index.js';
import { listRootPath, listRootPrefix } from '../../api/paths.js';
import { anomalyView } from '../../derive/anomalies.js';
import type { RenderContext } from '../context.js';
import { pendingOf } from '../lists.js';
import { HOUR_MS } from '../../api/time.js';

/** An events row of a partition's list: the partition value, the event's key and type. */
interface Row {
  part: string;
  id: string;
  type: string;
  observed_at: number;
}

const EVENT_COLS = 'e.id, e.type, e.observed_at';

/** Most stored events EventItems keeps (cleared when full). */
const EVENT_ITEMS_MAX = 200_000;

/**
 * The JSON of each event's StoredEvent (related hosts and seats, anomalies), built once per build:
 * an event is listed in the whole feed, its type's list, its participant's and those of its hosts
 * and seats, and building it (three statements and the serialisation) was most of writing the lists.
 */
class EventItems {
  private readonly memo = new Map<string, string>();
  private readonly row;
  private readonly seats;
  constructor(private readonly db: Db) {
    this.row = db.prepare(`SELECT ${EVENT_ROW_COLS} FROM events e WHERE e.id = ?`);
    this.seats = db.prepare('SELECT seat_id FROM event_seats WHERE event_id = ? ORDER BY seat_id').pluck();
  }
  json(id: string): string {
    let j = this.memo.get(id);
    if (j === undefined) {
      const r = this.row.get(id) as EventRow;
      const item: StoredEvent = { e: globalEvent(this.db, r), s: this.seats.all(id) as string[] };
      j = JSON.stringify(item);
      if (this.memo.size >= EVENT_ITEMS_MAX) this.memo.clear();
      this.memo.set(id, j);
    }
    return j;
  }
}

/** Counts per type in the order of EVENT_TYPES. */
function typeCounts(c: ReadonlyMap<string, number>): number[] {
  return EVENT_TYPES.map((t) => c.get(t) ?? 0);
}

/**
 * Writes the histogram lists of one partition (HISTOGRAM_LISTS: hour, day and week rows, newest
 * first) from its hourly counts, newest hour first. A partition's hours are few (one per hour with
 * an event), so they are held for the `o` totals.
 */
function writeHistograms(ctx: RenderContext, partition: string[], hours: Array<{ h: number; c: Map<string, number> }>): void {
  const total = new Map<string, number>();
  for (const { c } of hours) for (const [t, n] of c) total.set(t, (total.get(t) ?? 0) + n);
  for (const bucket of ['hour', 'day', 'week'] as const) {
    const list = ctx.list(HISTOGRAM_LISTS[bucket], partition, ['desc'], undefined, {}, true);
    // Events at or after the current bucket's start, per type: older = total − newer.
    const newer = new Map<string, number>();
    let row: { h: number; c: Map<string, number> } | null = null;
    const flush = (): void => {
      if (!row) return;
      for (const [t, n] of row.c) newer.set(t, (newer.get(t) ?? 0) + n);
      const older = new Map([...total].map(([t, n]) => [t, n - (newer.get(t) ?? 0)]));
      const out: BucketRow = { h: row.h, c: typeCounts(row.c), o: typeCounts(older) };
      list.add(out, [row.h]);
    };
    for (const { h, c } of hours) {
      const b = bucketStart(h, bucket);
      if (!row || row.h !== b) {
        flush();
        row = { h: b, c: new Map() };
      }
      for (const [t, n] of c) row.c.set(t, (row.c.get(t) ?? 0) + n);
    }
    flush();
    list.finish();
  }
}

/** The partition families of the event feed's lists (docs/api-providers-events.md, snapshot layout). */
const FAMILIES = ['all', 'host', 'seat', 'type', 'participant'] as const;
type Family = (typeof FAMILIES)[number];

/**
 * Whether a family's lists have histogram lists of their own. A participant has a handful of events:
 * the shim counts them directly. A type partition's meta counts come from the whole feed's
 * histograms.
 */
const hasHistograms = (family: Family): boolean => family !== 'participant' && family !== 'type';

const partitionOf = (family: Family, part: string): string[] => (family === 'all' ? ['all'] : [family, part]);

/** The roots of a partition's lists: its events list, and its histogram lists. */
function rootsOf(family: Family, part: string): string[] {
  const partition = partitionOf(family, part);
  const roots = [listRootPath(EVENT_ROUTE, partition)];
  if (hasHistograms(family)) for (const route of Object.values(HISTOGRAM_LISTS)) roots.push(listRootPath(route, partition));
  return roots;
}

/** Root prefixes of every partition's lists (all families). */
const ROOT_PREFIXES = [listRootPrefix(EVENT_ROUTE), ...Object.values(HISTOGRAM_LISTS).map((r) => listRootPrefix(r))];

/** The rows of a family, grouped by partition (`part`), each newest first; with `one`, of the partition `?` only. */
function familySql(family: Family, one: boolean): string {
  const order = 'e.observed_at DESC, e.id DESC';
  const base = 'FROM events e';
  switch (family) {
    case 'all':
      return `SELECT 'all' AS part, ${EVENT_COLS} ${base} ${one ? "WHERE ? = 'all'" : ''} ORDER BY ${order}`;
    case 'host':
      return `SELECT l.hostname AS part, ${EVENT_COLS} FROM event_hosts l JOIN events e ON e.id = l.event_id ${one ? 'WHERE l.hostname = ?' : ''} ORDER BY l.hostname, ${order}`;
    case 'seat':
      return `SELECT l.seat_id AS part, ${EVENT_COLS} FROM event_seats l JOIN events e ON e.id = l.event_id ${one ? 'WHERE l.seat_id = ?' : ''} ORDER BY l.seat_id, ${order}`;
    case 'type':
      // One list per type: a type filter alone reads (and merges) the lists of its types, not the feed.
      return `SELECT e.type AS part, ${EVENT_COLS} ${base} ${one ? 'WHERE e.type = ?' : ''} ORDER BY e.type, ${order}`;
    case 'participant':
      return `SELECT p.pid AS part, ${EVENT_COLS} FROM events e JOIN participants p ON p.id = e.participant_id ${one ? 'WHERE p.pid = ?' : ''} ORDER BY p.pid, ${order}`;
  }
}

/** Writes one events list per partition value of an ordered row stream (rows grouped by `part`); returns how many. */
function writeEventPartitions(ctx: RenderContext, items: EventItems, family: Family, rows: Iterable<Row>): number {
  const histograms = hasHistograms(family);
  let partition: string[] | null = null;
  let list: ReturnType<RenderContext['list']> | null = null;
  let hours: Array<{ h: number; c: Map<string, number> }> = [];
  const finish = (): void => {
    list?.finish();
    if (partition && histograms) writeHistograms(ctx, partition, hours);
    hours = [];
  };
  let part: string | null = null;
  let n = 0;
  for (const r of rows) {
    if (r.part !== part) {
      finish();
      n++;
      part = r.part;
      partition = partitionOf(family, part);
      list = ctx.list(EVENT_ROUTE, partition, [...NEWEST_FIRST_DIRS], ['type'], { minItems: EVENT_CHUNK_MIN_ITEMS }, true);
    }
    list!.addPending(pendingOf(items.json(r.id), [r.observed_at, r.id], { type: [r.type] }));
    if (histograms) {
      const h = Math.floor(r.observed_at / HOUR_MS) * HOUR_MS;
      let last = hours[hours.length - 1];
      if (!last || last.h !== h) hours.push((last = { h, c: new Map() }));
      last.c.set(r.type, (last.c.get(r.type) ?? 0) + 1);
    }
  }
  finish();
  return n;
}

function renderEvents(ctx: RenderContext): void {
  const db = ctx.db;
  const r = eventsListQuery(
    db,
    { type: undefined, host: undefined, seat: undefined, participant: undefined, since: undefined, until: undefined, prev_cursor: undefined, limit: LIMIT_DEFAULT, cursor: undefined },
    ctx.nowMs,
  );
  if (r.status === 200) ctx.exact(['v1', 'events'], r.body);
  const store = ctx.lists;
  // Why every partition's lists are written, or null: docs/incremental.md, "Event lists".
  const reason = ctx.keptListsUnusable('render_events', 'event');
  const items = new EventItems(db);
  let written = 0;
  if (store !== undefined && reason === null) {
    // Each changed partition is written again from its rows (none: its lists are gone); the files
    // of its earlier lists are retired first, so that unchanged ones are neither read nor written.
    const changed = db.prepare('SELECT family, part FROM temp.render_events ORDER BY family, part').all() as Array<{ family: Family; part: string }>;
    const one = new Map(FAMILIES.map((f) => [f, db.prepare(familySql(f, true))]));
    for (const c of changed) {
      for (const root of rootsOf(c.family, c.part)) store.drop(root);
      written += writeEventPartitions(ctx, items, c.family, one.get(c.family)!.iterate(c.part) as Iterable<Row>);
    }
  } else {
    // Every partition: the lists of an earlier build are dropped first (a recovering build's).
    if (store !== undefined) for (const prefix of ROOT_PREFIXES) for (const root of store.roots(prefix)) store.drop(root);
    for (const f of FAMILIES) written += writeEventPartitions(ctx, items, f, db.prepare(familySql(f, false)).iterate() as Iterable<Row>);
  }
  ctx.eventsReport = { full_reason: reason, partitions_written: written };
}

interface AnomalyRow {
  part: string;
  id: string;
}

function writeAnomalyPartitions(ctx: RenderContext, family: string, rows: Iterable<AnomalyRow>): void {
  const db = ctx.db;
  const hosts = db.prepare('SELECT hostname FROM anomaly_hosts WHERE anomaly_id = ? ORDER BY hostname').pluck();
  const seats = db.prepare('SELECT seat_id FROM anomaly_seats WHERE anomaly_id = ? ORDER BY seat_id').pluck();
  let part: string | null = null;
  let list: ReturnType<RenderContext['list']> | null = null;
  for (const r of rows) {
    if (r.part !== part) {
      list?.finish();
      part = r.part;
      list = ctx.list('anomalies.list', family === 'all' ? ['all'] : [family, part], [...NEWEST_FIRST_DIRS], anomalyFacetFields(family));
    }
    const a = apiAnomaly(anomalyView(db, r.id)!);
    const item: StoredAnomaly = { a, h: hosts.all(r.id) as string[], s: seats.all(r.id) as string[] };
    list!.add(item, [Date.parse(a.observed_at), a.id], anomalyFacetValues(family, item));
  }
  list?.finish();
}

function renderAnomaliesList(ctx: RenderContext): void {
  const db = ctx.db;
  const r = anomaliesListQuery(
    db,
    { detector: undefined, grade: undefined, host: undefined, seat: undefined, acknowledged: undefined, since: undefined, limit: LIMIT_DEFAULT, cursor: undefined },
    ctx.nowMs,
  );
  if (r.status === 200) ctx.exact(['v1', 'anomalies'], r.body);
  const order = 'ORDER BY part, a.observed_at DESC, a.id DESC';
  writeAnomalyPartitions(ctx, 'all', db.prepare(`SELECT 'all' AS part, a.id FROM anomalies a ${order}`).iterate() as Iterable<AnomalyRow>);
  writeAnomalyPartitions(ctx, 'host', db.prepare(`SELECT l.hostname AS part, a.id FROM anomaly_hosts l JOIN anomalies a ON a.id = l.anomaly_id ${order}`).iterate() as Iterable<AnomalyRow>);
  writeAnomalyPartitions(ctx, 'seat', db.prepare(`SELECT l.seat_id AS part, a.id FROM anomaly_seats l JOIN anomalies a ON a.id = l.anomaly_id ${order}`).iterate() as Iterable<AnomalyRow>);
}

function renderAnomaliesDetail(ctx: RenderContext): void {
  for (const id of ctx.db.prepare('SELECT id FROM anomalies ORDER BY id').pluck().all() as string[]) {
    const r = anomaliesDetailQuery(ctx.db, { id }, ctx.nowMs);
    if (r.status === 200) ctx.exact(['v1', 'anomalies', id], r.body);
  }
}

export const EVENTS_RENDERERS: Record<string, (ctx: RenderContext) => void> = {
  'events.list': renderEvents,
  'anomalies.list': renderAnomaliesList,
  'anomalies.detail': renderAnomaliesDetail,
};
