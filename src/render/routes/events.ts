// Renders the event feed and the anomalies: the exact files at default parameters, every anomaly's
// file, the events lists per partition with their histogram lists, and the anomaly lists with their
// counted facets. The layout is stated once in docs/api-providers-events.md ("Event feed", snapshot
// layout; "Anomalies"). Streaming: each partition family is one ordered statement.
import { anomalyFacetFields, anomalyFacetValues, bucketStart, EVENT_CHUNK_MIN_ITEMS, HISTOGRAM_LISTS, NEWEST_FIRST_DIRS, type BucketRow, type StoredAnomaly, type StoredEvent } from '../../api/events/feed.js';
import { LIMIT_DEFAULT } from '../../api/params.js';
import { anomaliesDetailQuery, anomaliesListQuery, apiAnomaly, eventsListQuery, globalEvent, type EventRow } from '../../api/events/query.js';
import { EVENT_TYPES } from '../../api/schemas/common.js';
import type { Db } from '../../db/index.js';
import { anomalyView } from '../../derive/anomalies.js';
import type { RenderContext } from '../context.js';
import { HOUR_MS } from '../../api/time.js';

/** An events row with the partition value it is listed under. */
interface Row extends EventRow {
  part: string;
}

const EVENT_COLS = 'e.id, e.type, e.observed_at, e.hostname, e.payload, p.pid';

/** Builds StoredEvent items for rows (related hosts and seats, anomalies) through the indexes. */
function storedEvents(db: Db): (r: Row) => StoredEvent {
  const seats = db.prepare('SELECT seat_id FROM event_seats WHERE event_id = ? ORDER BY seat_id').pluck();
  return (r) => ({ e: globalEvent(db, r), s: seats.all(r.id) as string[] });
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
    const list = ctx.list(HISTOGRAM_LISTS[bucket], partition, ['desc']);
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

/** Writes one events list per partition value of an ordered row stream (rows grouped by `part`). */
function writeEventPartitions(ctx: RenderContext, family: string, rows: Iterable<Row>): void {
  const stored = storedEvents(ctx.db);
  // A participant has a handful of events: the shim counts them directly. A type partition's meta
  // counts come from the whole feed's histograms. Neither has histograms of its own.
  const histograms = family !== 'participant' && family !== 'type';
  let partition: string[] | null = null;
  let list: ReturnType<RenderContext['list']> | null = null;
  let hours: Array<{ h: number; c: Map<string, number> }> = [];
  const finish = (): void => {
    list?.finish();
    if (partition && histograms) writeHistograms(ctx, partition, hours);
    hours = [];
  };
  let part: string | null = null;
  for (const r of rows) {
    if (r.part !== part) {
      finish();
      part = r.part;
      partition = family === 'all' ? ['all'] : [family, part];
      list = ctx.list('events.list', partition, [...NEWEST_FIRST_DIRS], ['type'], { minItems: EVENT_CHUNK_MIN_ITEMS });
    }
    list!.add(stored(r), [r.observed_at, r.id], { type: [r.type] });
    if (histograms) {
      const h = Math.floor(r.observed_at / HOUR_MS) * HOUR_MS;
      let last = hours[hours.length - 1];
      if (!last || last.h !== h) hours.push((last = { h, c: new Map() }));
      last.c.set(r.type, (last.c.get(r.type) ?? 0) + 1);
    }
  }
  finish();
}

function renderEvents(ctx: RenderContext): void {
  const db = ctx.db;
  const r = eventsListQuery(
    db,
    { type: undefined, host: undefined, seat: undefined, participant: undefined, since: undefined, until: undefined, prev_cursor: undefined, limit: LIMIT_DEFAULT, cursor: undefined },
    ctx.nowMs,
  );
  if (r.status === 200) ctx.exact(['v1', 'events'], r.body);
  const base = `FROM events e LEFT JOIN participants p ON p.id = e.participant_id`;
  writeEventPartitions(ctx, 'all', db.prepare(`SELECT 'all' AS part, ${EVENT_COLS} ${base} ORDER BY e.observed_at DESC, e.id DESC`).iterate() as Iterable<Row>);
  writeEventPartitions(
    ctx,
    'host',
    db.prepare(`SELECT l.hostname AS part, ${EVENT_COLS} FROM event_hosts l JOIN events e ON e.id = l.event_id LEFT JOIN participants p ON p.id = e.participant_id ORDER BY l.hostname, e.observed_at DESC, e.id DESC`).iterate() as Iterable<Row>,
  );
  writeEventPartitions(
    ctx,
    'seat',
    db.prepare(`SELECT l.seat_id AS part, ${EVENT_COLS} FROM event_seats l JOIN events e ON e.id = l.event_id LEFT JOIN participants p ON p.id = e.participant_id ORDER BY l.seat_id, e.observed_at DESC, e.id DESC`).iterate() as Iterable<Row>,
  );
  // One list per type: a type filter alone reads (and merges) the lists of its types, not the feed.
  writeEventPartitions(
    ctx,
    'type',
    db.prepare(`SELECT e.type AS part, ${EVENT_COLS} ${base} ORDER BY e.type, e.observed_at DESC, e.id DESC`).iterate() as Iterable<Row>,
  );
  writeEventPartitions(
    ctx,
    'participant',
    db.prepare(`SELECT p.pid AS part, ${EVENT_COLS} FROM events e JOIN participants p ON p.id = e.participant_id ORDER BY p.pid, e.observed_at DESC, e.id DESC`).iterate() as Iterable<Row>,
  );
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
