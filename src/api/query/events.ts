// The oracle of the event feed and the anomalies: answers straight from SQLite (events, event_hosts,
// event_seats, anomaly_events; anomaly readers of src/derive/anomalies.ts). Rules: src/api/events-shared.ts.
import type { CursorPosition } from '../cursor.js';
import type { Db } from '../../db/index.js';
import { anomalyList, anomalyView, eventAnomalies, type AnomalyFilters, type AnomalyView } from '../../derive/anomalies.js';
import type { Detector } from '../../derive/anomaly-id.js';
import {
  addHourCount,
  anomalyPage,
  chartBucketFor,
  eventCursor,
  eventMeta,
  eventPlan,
  EVENT_WINDOW,
  FeedCollector,
  META_SCAN_MAX,
  type EventPlan,
  type FeedKey,
  type HourTypeCounts,
  type StoredAnomaly,
  type StoredEvent,
} from '../events-shared.js';
import { apiTs } from '../market-shared.js';
import { notFoundOf, ok } from '../result.js';
import type { Params, QueryFn } from './types.js';

interface EventRow {
  id: string;
  type: string;
  observed_at: number;
  hostname: string | null;
  payload: string;
}

/** The GlobalEvent of an events row. */
export function globalEvent(db: Db, r: EventRow): StoredEvent['e'] {
  return {
    id: r.id,
    type: r.type,
    hostname: r.hostname,
    observed_at: apiTs(r.observed_at),
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    anomalies: eventAnomalies(db, r.id),
  };
}

interface Where {
  sql: string[];
  args: unknown[];
}

/** WHERE clauses of the non-type filters (entity filters and the window). */
function nonTypeWhere(params: Params): Where {
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

const COLS = 'e.id, e.type, e.observed_at, e.hostname, e.payload';

/** Exact per-hour, per-type counts under the non-type filters; null when they degrade (events-shared). */
function hourCounts(db: Db, params: Params): HourTypeCounts | null {
  const w = nonTypeWhere(params);
  const entities = ['participant', 'seat', 'host'].filter((k) => params[k] !== undefined);
  if (entities.length >= 2) {
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

/** Membership of the plan's source list (its partition) and the window [since, until]. */
function sourceWhere(plan: EventPlan, params: Params): Where {
  const [family, value] = plan.partition;
  const w: Where = { sql: [], args: [] };
  if (family === 'type') {
    w.sql.push('e.type = ?');
    w.args.push(value);
  } else if (family !== 'all') {
    const only = nonTypeWhere({ [family!]: value });
    w.sql.push(...only.sql);
    w.args.push(...only.args);
  }
  const win = nonTypeWhere({ since: params.since, until: params.until });
  return { sql: [...w.sql, ...win.sql], args: [...w.args, ...win.args] };
}

/** SQL of a plan's candidate test (an item of a wanted type) and full match, as 0/1 columns. */
function planColumns(plan: EventPlan): Where {
  const cand = plan.types === null ? '1' : `e.type IN (${[...plan.types].map(() => '?').join(', ')})`;
  const candArgs = plan.types === null ? [] : [...plan.types];
  const rest = nonTypeWhere({ seat: plan.seat, host: plan.host });
  const match = [cand, ...rest.sql].join(' AND ');
  return { sql: [`(${cand}) AS cand`, `(${match}) AS m`], args: [...candArgs, ...candArgs, ...rest.args] };
}

const OLDER = '(e.observed_at < ? OR (e.observed_at = ? AND e.id < ?))';
const NEWER = '(e.observed_at > ? OR (e.observed_at = ? AND e.id > ?))';
const AT_OR_OLDER = '(e.observed_at < ? OR (e.observed_at = ? AND e.id <= ?))';
const AT_OR_NEWER = '(e.observed_at > ? OR (e.observed_at = ? AND e.id >= ?))';
const keyArgs = ([t, id]: FeedKey): unknown[] => [t, t, id];

/**
 * The source rows a page examines, in reading order: after the cursor (`older`: toward older events;
 * `newer`: after prev_cursor toward newer ones) — for windowed plans from the first candidate on, at
 * most EVENT_WINDOW of them; for plain plans the `limit` (+ 1 toward older events) nearest.
 */
function pageRows(db: Db, plan: EventPlan, params: Params, dir: 'older' | 'newer', after: FeedKey | undefined, limit: number): Array<EventRow & { cand: number; m: number }> {
  const src = sourceWhere(plan, params);
  const order = dir === 'older' ? 'e.observed_at DESC, e.id DESC' : 'e.observed_at ASC, e.id ASC';
  let from = after === undefined ? null : { sql: dir === 'older' ? OLDER : NEWER, args: keyArgs(after) };
  if (plan.windowed && plan.types !== null) {
    // The window starts at the first candidate after the cursor.
    const cand = withTypes(src, [...plan.types]);
    const first = db
      .prepare(`SELECT e.observed_at, e.id FROM events e ${cond(cand, from ? [from.sql] : [])} ORDER BY ${order} LIMIT 1`)
      .raw()
      .get(...cand.args, ...(from?.args ?? [])) as FeedKey | undefined;
    if (first === undefined) return [];
    from = { sql: dir === 'older' ? AT_OR_OLDER : AT_OR_NEWER, args: keyArgs(first) };
  }
  const cols = planColumns(plan);
  const n = plan.windowed ? EVENT_WINDOW : dir === 'older' ? limit + 1 : limit;
  return db
    .prepare(`SELECT ${COLS}, ${cols.sql.join(', ')} FROM events e ${cond(src, from ? [from.sql] : [])} ORDER BY ${order} LIMIT ?`)
    .all(...cols.args, ...src.args, ...(from?.args ?? []), n) as Array<EventRow & { cand: number; m: number }>;
}

export const eventsListQuery: QueryFn = (db, params, nowMs) => {
  const limit = params.limit as number;
  const types = params.type as readonly string[] | undefined;
  const cursor = params.cursor as CursorPosition | undefined;
  const prev = params.prev_cursor as CursorPosition | undefined;
  const plan = eventPlan({ types, host: params.host as string | undefined, seat: params.seat as string | undefined, participant: params.participant as string | undefined });
  const dir = prev ? 'newer' : 'older';
  const collector = new FeedCollector<EventRow>(limit, plan.windowed, dir);
  for (const r of pageRows(db, plan, params, dir, (prev ?? cursor)?.key as FeedKey | undefined, limit)) {
    if (!collector.offer(r, [r.observed_at, r.id], r.cand === 1, r.m === 1)) break;
  }
  // Toward newer events, next_cursor needs an older event of the source at or after since.
  const oldest = collector.oldestKey as FeedKey | null;
  const src = sourceWhere(plan, { since: params.since });
  const olderFollows = dir === 'newer' && oldest !== null && db.prepare(`SELECT 1 FROM events e ${cond(src, [OLDER])} LIMIT 1`).get(...src.args, ...keyArgs(oldest)) !== undefined;
  const { next, prev: newer } = collector.cursorKeys(olderFollows);
  const page: Record<string, unknown> = {
    items: collector.page.items.map((r) => globalEvent(db, r)),
    next_cursor: next === null ? null : eventCursor(next, 'next'),
    prev_cursor: newer === null ? null : eventCursor(newer, 'prev'),
  };
  if (!cursor && !prev) {
    const total = db.prepare('SELECT count(*) FROM events').pluck().get() as number;
    const oldest = db.prepare('SELECT min(observed_at) FROM events').pluck().get() as number | null;
    const filterActive = ['type', 'host', 'seat', 'participant', 'since', 'until'].some((k) => params[k] !== undefined);
    page.meta = eventMeta({
      total,
      filterActive,
      types,
      hours: hourCounts(db, params),
      bucket: chartBucketFor(params.since as number | undefined, params.until as number | undefined, oldest, nowMs),
    });
  }
  return ok(page);
};

/** AnomalyView with observed_at in API form. */
export function apiAnomaly(v: AnomalyView): StoredAnomaly['a'] {
  return { ...v, observed_at: apiTs(v.observed_at) };
}

export const anomaliesListQuery: QueryFn = (db, params) => {
  // Canonical parameters of anomalies.list (parseRequest): the types its ParamDefs declare.
  const limit = params.limit as number;
  const filters: AnomalyFilters = {
    detector: params.detector as Detector | undefined,
    grade: params.grade as AnomalyFilters['grade'],
    host: params.host as string | undefined,
    seat: params.seat as string | undefined,
    acknowledged: params.acknowledged as boolean | undefined,
    sinceMs: params.since as number | undefined,
  };
  const cursor = params.cursor as CursorPosition | undefined;
  // Every filter in SQL, whatever list the shim reads: the `limit` + 1 nearest matches after the cursor.
  const matches: Array<{ item: StoredAnomaly['a']; key: FeedKey }> = [];
  for (const { item, key } of anomalyList(db, filters, cursor ? (cursor.key as FeedKey) : undefined)) {
    matches.push({ item: apiAnomaly(item), key });
    if (matches.length > limit) break;
  }
  return ok(anomalyPage(matches, limit));
};

export const anomaliesDetailQuery: QueryFn = (db, params) => {
  const id = params.id as string;
  const v = anomalyView(db, id);
  return v === null ? notFoundOf('anomaly', id) : ok(apiAnomaly(v));
};

export const EVENTS_QUERIES: Record<string, QueryFn> = {
  'events.list': eventsListQuery,
  'anomalies.list': anomaliesListQuery,
  'anomalies.detail': anomaliesDetailQuery,
};
