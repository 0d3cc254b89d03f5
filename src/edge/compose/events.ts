// Composers of the event feed and the anomalies: answers from snapshot files only. Edge-safe (no Node
// imports). Layout: src/render/routes/events.ts; rules: src/api/events-shared.ts.
import type { CursorPosition } from '../../api/cursor.js';
import {
  addHourCount,
  anomalyCursor,
  anomalyPartition,
  chartBucketFor,
  eventCursor,
  eventMeta,
  eventPartition,
  eventPlan,
  FeedCollector,
  HOUR_MS,
  META_SCAN_MAX,
  NEWEST_FIRST_DIRS,
  type HourRow,
  type HourTypeCounts,
  type StoredAnomaly,
  type StoredEvent,
} from '../../api/events-shared.js';
import { compareKeys, type SortKey } from '../../api/keys.js';
import { exactFilePath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { canonicalQuery, ROUTES } from '../../api/routes.js';
import type { IndexEntry } from '../list-format.js';
import { composePage } from '../list-reader.js';
import { openList, readJson } from './market.js';
import type { ComposeContext, ComposeFn, Params } from './types.js';

const DIRS = [...NEWEST_FIRST_DIRS];

interface EventFilters {
  types?: readonly string[];
  host?: string;
  seat?: string;
  participant?: string;
  since?: number;
  until?: number;
}

function filtersOf(params: Params): EventFilters {
  return {
    types: params.type as readonly string[] | undefined,
    host: params.host as string | undefined,
    seat: params.seat as string | undefined,
    participant: params.participant as string | undefined,
    since: params.since as number | undefined,
    until: params.until as number | undefined,
  };
}

/** The item filter of the entity filters (meta counts: any type). */
function eventMatch(f: EventFilters): (item: unknown) => boolean {
  return (x) => {
    const s = x as StoredEvent;
    if (f.host !== undefined && !s.h.includes(f.host)) return false;
    if (f.seat !== undefined && !s.s.includes(f.seat)) return false;
    if (f.participant !== undefined && s.p !== f.participant) return false;
    return true;
  };
}

/** Exact counts per hour and type of one partition's events inside [since, until] (all types). */
async function partitionHours(ctx: ComposeContext, partition: string[], f: EventFilters): Promise<HourTypeCounts> {
  const out: HourTypeCounts = new Map();
  if (partition[0] === 'participant') {
    // No histogram for a participant (a handful of events): count its events in the window.
    const events = await openList(ctx, 'events.list', partition);
    if (events === null) return out;
    for await (const { key, item } of events.list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
      if (f.since !== undefined && (key[0] as number) < f.since) break;
      addHourCount(out, Math.floor((key[0] as number) / HOUR_MS) * HOUR_MS, (item as StoredEvent).e.type, 1);
    }
    events.done();
    return out;
  }
  const hist = await openList(ctx, 'events.list.hours', partition);
  if (hist === null) return out;
  const edges: number[] = [];
  const lowHour = f.since === undefined ? undefined : Math.floor(f.since / HOUR_MS) * HOUR_MS;
  for await (const { item } of hist.list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
    const row = item as HourRow;
    if (lowHour !== undefined && row.h < lowHour) break;
    const full = (f.since === undefined || row.h >= f.since) && (f.until === undefined || row.h + HOUR_MS - 1 <= f.until);
    if (full) for (const [t, n] of Object.entries(row.c)) addHourCount(out, row.h, t, n);
    else edges.push(row.h);
  }
  hist.done();
  if (edges.length > 0) {
    // The hours cut by since or until: count their events in the window one by one.
    const events = await openList(ctx, 'events.list', partition);
    if (events !== null) {
      for (const h of edges) {
        const lo = Math.max(h, f.since ?? h);
        const hi = Math.min(h + HOUR_MS - 1, f.until ?? h + HOUR_MS - 1);
        for await (const { key, item } of events.list.scan({ start: (k) => (k[0] as number) <= hi })) {
          if ((key[0] as number) < lo) break;
          addHourCount(out, h, (item as StoredEvent).e.type, 1);
        }
      }
      events.done();
    }
  }
  return out;
}

/** meta counts (per hour and type under the non-type filters), or null when they degrade. */
async function metaHours(ctx: ComposeContext, f: EventFilters): Promise<HourTypeCounts | null> {
  const partition = eventPartition(f);
  const hours = await partitionHours(ctx, partition, f);
  const entities = [f.participant, f.seat, f.host].filter((v) => v !== undefined).length;
  if (entities < 2) return hours;
  let n = 0;
  for (const m of hours.values()) for (const c of m.values()) n += c;
  if (n > META_SCAN_MAX) return null;
  const out: HourTypeCounts = new Map();
  const events = await openList(ctx, 'events.list', partition);
  if (events === null) return out;
  const match = eventMatch(f);
  for await (const { key, item } of events.list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
    if (f.since !== undefined && (key[0] as number) < f.since) break;
    if (!match(item)) continue;
    addHourCount(out, Math.floor((key[0] as number) / HOUR_MS) * HOUR_MS, (item as StoredEvent).e.type, 1);
  }
  events.done();
  return out;
}

const composeEvents: ComposeFn = async (params, ctx): Promise<ApiResult> => {
  if (canonicalQuery(ROUTES['events.list'], params, { now: ctx.nowMs }) === '') {
    const body = await readJson(ctx, exactFilePath(['v1', 'events']));
    if (body === null) throw new Error('snapshot file v1/events.json is missing');
    return ok(body);
  }
  const f = filtersOf(params);
  const limit = params.limit as number;
  const cursor = params.cursor as CursorPosition | undefined;
  const prev = params.prev_cursor as CursorPosition | undefined;
  const plan = eventPlan(f);
  const dir = prev ? 'newer' : 'older';
  const collector = new FeedCollector<StoredEvent>(limit, plan.windowed, dir);
  const time = (k: SortKey): number => k[0] as number;
  const inSince = (k: SortKey): boolean => f.since === undefined || time(k) >= f.since;
  const inUntil = (k: SortKey): boolean => f.until === undefined || time(k) <= f.until;
  const types = plan.types;
  const candidate = (s: StoredEvent): boolean => types === null || types.has(s.e.type);
  const match = (s: StoredEvent): boolean => candidate(s) && (plan.seat === undefined || s.s.includes(plan.seat)) && (plan.host === undefined || s.h.includes(plan.host));
  /** Before the window starts, entries without a wanted type hold no candidate: not read. */
  const noCandidate = (e: IndexEntry): boolean => types !== null && !collector.inWindow && [...types].every((t) => (e.counts?.type?.[t] ?? 0) === 0);
  const opened = await openList(ctx, 'events.list', plan.partition);
  let next: SortKey | null = null;
  let newer: SortKey | null = null;
  if (opened !== null) {
    const list = opened.list;
    const from = (prev ?? cursor)?.key;
    if (dir === 'older') {
      const items = list.scan({
        start: (k) => (from === undefined || compareKeys(k, from, DIRS) > 0) && inUntil(k),
        // Entries wholly older than since hold nothing for the page.
        skip: (e) => !inSince(e.first) || noCandidate(e),
      });
      for await (const { key, item } of items) {
        if (!inSince(key)) break;
        const s = item as StoredEvent;
        if (!collector.offer(s, key, candidate(s), match(s))) break;
      }
      next = collector.continuation;
      newer = collector.page.keys[0] ?? null;
    } else {
      const items = list.scanBackward({
        // Items newer than the watermark and at or after since, the nearest first.
        start: (k) => compareKeys(k, prev!.key, DIRS) >= 0 || !inSince(k),
        skip: (e) => !inUntil(e.last) || noCandidate(e),
      });
      for await (const { key, item } of items) {
        if (!inUntil(key)) break;
        const s = item as StoredEvent;
        if (!collector.offer(s, key, candidate(s), match(s))) break;
      }
      newer = collector.continuation;
      const keys = collector.page.keys;
      const oldest = keys[keys.length - 1];
      if (oldest !== undefined) {
        const after = await list.keyAfter(oldest);
        next = after !== null && inSince(after) ? oldest : null;
      }
    }
    opened.done();
  }
  const out: Record<string, unknown> = {
    items: collector.page.items.map((s) => s.e),
    next_cursor: next === null ? null : eventCursor(next, 'next'),
    prev_cursor: newer === null ? null : eventCursor(newer, 'prev'),
  };
  if (!cursor && !prev) {
    const all = await openList(ctx, 'events.list', ['all']);
    const root = all?.list.root;
    all?.done();
    const total = root?.count ?? 0;
    const lastEntry = root && root.entries.length > 0 ? root.entries[root.entries.length - 1]! : null;
    const oldest = lastEntry ? (lastEntry.last[0] as number) : null;
    const filterActive = f.types !== undefined || f.host !== undefined || f.seat !== undefined || f.participant !== undefined || f.since !== undefined || f.until !== undefined;
    out.meta = eventMeta({ total, filterActive, types: f.types, hours: await metaHours(ctx, f), bucket: chartBucketFor(f.since, f.until, oldest, ctx.nowMs) });
  }
  return ok(out);
};

const composeAnomalies: ComposeFn = async (params, ctx): Promise<ApiResult> => {
  if (canonicalQuery(ROUTES['anomalies.list'], params, { now: ctx.nowMs }) === '') {
    const body = await readJson(ctx, exactFilePath(['v1', 'anomalies']));
    if (body === null) throw new Error('snapshot file v1/anomalies.json is missing');
    return ok(body);
  }
  const limit = params.limit as number;
  const cursor = params.cursor as CursorPosition | undefined;
  const host = params.host as string | undefined;
  const seat = params.seat as string | undefined;
  const since = params.since as number | undefined;
  const facets: Array<[string, string]> = [];
  if (params.detector !== undefined) facets.push(['detector', params.detector as string]);
  if (params.grade !== undefined) facets.push(['grade', params.grade as string]);
  if (params.acknowledged !== undefined) facets.push(['acknowledged', String(params.acknowledged)]);
  const opened = await openList(ctx, 'anomalies.list', anomalyPartition({ host, seat }));
  if (opened === null) return ok({ items: [], next_cursor: null });
  const after = cursor ? cursor.key : null;
  const page = await composePage(opened.list, {
    start: after === null ? undefined : (k) => compareKeys(k, after, DIRS) > 0,
    stop: since === undefined ? undefined : (k) => (k[0] as number) < since,
    match: (x) => {
      const s = x as StoredAnomaly;
      if (host !== undefined && !s.h.includes(host)) return false;
      if (seat !== undefined && !s.s.includes(seat)) return false;
      return facets.every(([f, v]) => (f === 'acknowledged' ? String(s.a.acknowledged) : (s.a as unknown as Record<string, string>)[f]) === v);
    },
    skip: facets.length === 0 ? undefined : (e) => facets.some(([f, v]) => (e.counts?.[f]?.[v] ?? 0) === 0),
    limit,
  });
  opened.done();
  return ok({
    items: (page.items as StoredAnomaly[]).map((s) => s.a),
    next_cursor: page.more ? anomalyCursor(page.keys[page.keys.length - 1]!) : null,
  });
};

const composeAnomaly: ComposeFn = async (params, ctx) => {
  const id = params.id as string;
  const body = await readJson(ctx, exactFilePath(['v1', 'anomalies', id]));
  return body === null ? notFoundOf('anomaly', id) : ok(body);
};

export const EVENTS_COMPOSERS: Record<string, ComposeFn> = {
  'events.list': composeEvents,
  'anomalies.list': composeAnomalies,
  'anomalies.detail': composeAnomaly,
};
