// The oracle of the event feed and the anomalies: answers straight from SQLite (events, event_hosts,
// event_seats, anomaly_events; anomaly readers of src/derive/anomalies.ts). Rules: src/api/events-shared.ts.
import type { CursorPosition } from '../cursor.js';
import type { Db } from '../../db/index.js';
import { anomalyList, anomalyView, eventAnomalies, type AnomalyFilters, type AnomalyView } from '../../derive/anomalies.js';
import type { Detector } from '../../derive/anomaly-id.js';
import {
  addHourCount,
  anomalyCursor,
  chartBucketFor,
  eventCursor,
  eventMeta,
  META_SCAN_MAX,
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

export const eventsListQuery: QueryFn = (db, params, nowMs) => {
  const limit = params.limit as number;
  const types = params.type as readonly string[] | undefined;
  const w = withTypes(nonTypeWhere(params), types);
  const cursor = params.cursor as CursorPosition | undefined;
  const prev = params.prev_cursor as CursorPosition | undefined;
  let rows: EventRow[];
  let more: boolean;
  if (prev) {
    const [t, id] = prev.key as FeedKey;
    rows = (
      db
        .prepare(`SELECT ${COLS} FROM events e ${cond(w, ['(e.observed_at > ? OR (e.observed_at = ? AND e.id > ?))'])} ORDER BY e.observed_at ASC, e.id ASC LIMIT ?`)
        .all(...w.args, t, t, id, limit) as EventRow[]
    ).reverse();
    const last = rows[rows.length - 1];
    more =
      last !== undefined &&
      db.prepare(`SELECT 1 FROM events e ${cond(w, ['(e.observed_at < ? OR (e.observed_at = ? AND e.id < ?))'])} LIMIT 1`).get(...w.args, last.observed_at, last.observed_at, last.id) !== undefined;
  } else {
    const extra: string[] = [];
    const args = [...w.args];
    if (cursor) {
      const [t, id] = cursor.key as FeedKey;
      extra.push('(e.observed_at < ? OR (e.observed_at = ? AND e.id < ?))');
      args.push(t, t, id);
    }
    rows = db.prepare(`SELECT ${COLS} FROM events e ${cond(w, extra)} ORDER BY e.observed_at DESC, e.id DESC LIMIT ?`).all(...args, limit + 1) as EventRow[];
    more = rows.length > limit;
    if (more) rows = rows.slice(0, limit);
  }
  const items = rows.map((r) => globalEvent(db, r));
  const first = rows[0];
  const last = rows[rows.length - 1];
  const page: Record<string, unknown> = {
    items,
    next_cursor: more && last ? eventCursor([last.observed_at, last.id], 'next') : null,
    prev_cursor: first ? eventCursor([first.observed_at, first.id], 'prev') : null,
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
  const items: StoredAnomaly['a'][] = [];
  let lastKey: FeedKey | null = null;
  let more = false;
  for (const { item, key } of anomalyList(db, filters, cursor ? (cursor.key as FeedKey) : undefined)) {
    if (items.length === limit) {
      more = true;
      break;
    }
    items.push(apiAnomaly(item));
    lastKey = key;
  }
  return ok({ items, next_cursor: more && lastKey ? anomalyCursor(lastKey) : null });
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
