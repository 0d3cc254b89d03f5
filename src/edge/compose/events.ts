// Composers of the event feed and the anomalies: answers from snapshot files only. Edge-safe (no Node
// imports). Layout: src/render/routes/events.ts; rules: src/api/events-shared.ts.
import type { CursorPosition } from '../../api/cursor.js';
import {
  addHourCount,
  anomalyEntryMayMatch,
  anomalyMatch,
  anomalyPage,
  anomalyPlan,
  chartBucketFor,
  eventCursor,
  eventMeta,
  eventPartition,
  eventPlan,
  FeedCollector,
  HOUR_MS,
  META_SCAN_MAX,
  NEWEST_FIRST_DIRS,
  bucketEnd,
  HISTOGRAM_LISTS,
  type BucketRow,
  type ChartBucket,
  type HourTypeCounts,
  type StoredAnomaly,
  type StoredEvent,
} from '../../api/events-shared.js';
import { EVENT_TYPES } from '../../api/schemas/constants.js';
import { compareKeys, type SortKey } from '../../api/keys.js';
import { exactFilePath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { canonicalQuery, ROUTES } from '../../api/routes.js';
import type { IndexEntry } from '../list-format.js';
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

type OpenedList = NonNullable<Awaited<ReturnType<typeof openList>>>;

/**
 * meta counts: per chart bucket (or hour) and type, the events inside [since, until] under the
 * non-type filters; null when they degrade (events-shared). Reads: the partition's events list index
 * with at most one chunk at each of since and until (events older than them, per type, counted from
 * the entries' type counts), and the histogram rows of the window at the chart's resolution. With a
 * participant partition (no histograms) or two or more entity filters, the window's events are
 * counted one by one (at most META_SCAN_MAX of them for the latter).
 */
async function metaCounts(ctx: ComposeContext, f: EventFilters, bucket: ChartBucket, shared: OpenedList | null): Promise<HourTypeCounts | null> {
  const out: HourTypeCounts = new Map();
  const partition = eventPartition(f);
  const events = shared ?? (await openList(ctx, 'events.list', partition));
  if (events === null) return out;
  try {
    const list = events.list;
    const total = list.root.counts?.type ?? {};
    /** Events older than `x` (ms), per type. */
    const olderThan = async (x: number): Promise<Record<string, number>> => {
      const newer = await list.countBefore((k) => (k[0] as number) < x, 'type', (item) => (item as StoredEvent).e.type);
      return Object.fromEntries(Object.entries(total).map(([t, n]) => [t, n - (newer.get(t) ?? 0)]));
    };
    const low = f.since === undefined ? {} : await olderThan(f.since);
    const high = f.until === undefined ? total : await olderThan(f.until + 1);
    const entities = [f.participant, f.seat, f.host].filter((v) => v !== undefined).length;
    if (partition[0] === 'participant' || entities >= 2) {
      let n = 0;
      for (const [t, c] of Object.entries(high)) n += c - (low[t] ?? 0);
      if (entities >= 2 && n > META_SCAN_MAX) return null;
      const match = eventMatch(f);
      for await (const { key, item } of list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
        if (f.since !== undefined && (key[0] as number) < f.since) break;
        if (match(item)) addHourCount(out, Math.floor((key[0] as number) / HOUR_MS) * HOUR_MS, (item as StoredEvent).e.type, 1);
      }
      return out;
    }
    const hist = await openList(ctx, HISTOGRAM_LISTS[bucket], partition);
    if (hist === null) return out;
    for await (const { item } of hist.list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
      const row = item as BucketRow;
      const end = bucketEnd(row.h, bucket);
      if (f.since !== undefined && end <= f.since) break;
      // Events in the bucket and the window = older than its upper edge − older than its lower edge.
      const cut = f.until !== undefined && f.until + 1 < end;
      EVENT_TYPES.forEach((t, i) => {
        const c = row.c[i] ?? 0;
        if (c === 0) return;
        const lo = f.since !== undefined && f.since > row.h ? (low[t] ?? 0) : (row.o[i] ?? 0);
        const n = (cut ? (high[t] ?? 0) : (row.o[i] ?? 0) + c) - lo;
        if (n > 0) addHourCount(out, row.h, t, n);
      });
    }
    hist.done();
    return out;
  } finally {
    if (shared === null) events.done();
  }
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
  /** Offers a walk's items to the collector while they lie inside [since, until] and it takes more. */
  const collect = async (items: AsyncGenerator<{ key: SortKey; item: unknown }>, inRange: (k: SortKey) => boolean): Promise<void> => {
    for await (const { key, item } of items) {
      if (!inRange(key)) break;
      const s = item as StoredEvent;
      if (!collector.offer(s, key, candidate(s), match(s))) break;
    }
  };
  const opened = await openList(ctx, 'events.list', plan.partition);
  let olderFollows = false;
  if (opened !== null) {
    const list = opened.list;
    const from = (prev ?? cursor)?.key;
    if (dir === 'older') {
      const items = list.scan({
        start: (k) => (from === undefined || compareKeys(k, from, DIRS) > 0) && inUntil(k),
        // Entries wholly older than since hold nothing for the page.
        skip: (e) => !inSince(e.first) || noCandidate(e),
      });
      await collect(items, inSince);
    } else {
      const items = list.scanBackward({
        // Items newer than the watermark and at or after since, the nearest first.
        start: (k) => compareKeys(k, prev!.key, DIRS) >= 0 || !inSince(k),
        skip: (e) => !inUntil(e.last) || noCandidate(e),
      });
      await collect(items, inUntil);
      const oldest = collector.oldestKey;
      const after = oldest === null ? null : await list.keyAfter(oldest);
      olderFollows = after !== null && inSince(after);
    }
  }
  const { next, prev: newer } = collector.cursorKeys(olderFollows);
  const out: Record<string, unknown> = {
    items: collector.page.items.map((s) => s.e),
    next_cursor: next === null ? null : eventCursor(next, 'next'),
    prev_cursor: newer === null ? null : eventCursor(newer, 'prev'),
  };
  if (!cursor && !prev) {
    // The whole feed's list (its root gives the totals): the page's own when it reads the whole feed.
    const all = opened !== null && plan.partition[0] === 'all' ? null : await openList(ctx, 'events.list', ['all']);
    const root = all === null ? opened?.list.root : all.list.root;
    const total = root?.count ?? 0;
    const lastEntry = root && root.entries.length > 0 ? root.entries[root.entries.length - 1]! : null;
    const oldest = lastEntry ? (lastEntry.last[0] as number) : null;
    const filterActive = f.types !== undefined || f.host !== undefined || f.seat !== undefined || f.participant !== undefined || f.since !== undefined || f.until !== undefined;
    const bucket = chartBucketFor(f.since, f.until, oldest, ctx.nowMs);
    // meta counts the first entity filter's list, or the whole feed: a list already open is reused
    // (its root and recent chunks are then read once).
    const metaPartition = eventPartition(f).join('/');
    const same = opened !== null && plan.partition.join('/') === metaPartition ? opened : all !== null && metaPartition === 'all' ? all : null;
    out.meta = eventMeta({ total, filterActive, types: f.types, hours: await metaCounts(ctx, f, bucket, same), bucket });
    all?.done();
  }
  opened?.done();
  return ok(out);
};

const composeAnomalies: ComposeFn = async (params, ctx): Promise<ApiResult> => {
  if (canonicalQuery(ROUTES['anomalies.list'], params, { now: ctx.nowMs }) === '') {
    const body = await readJson(ctx, exactFilePath(['v1', 'anomalies']));
    if (body === null) throw new Error('snapshot file v1/anomalies.json is missing');
    return ok(body);
  }
  // Canonical parameters of anomalies.list (parseRequest): the types its ParamDefs declare.
  const cursor = params.cursor as CursorPosition | undefined;
  const since = params.since as number | undefined;
  const limit = params.limit as number;
  const plan = anomalyPlan({
    detector: params.detector as string | undefined,
    grade: params.grade as string | undefined,
    acknowledged: params.acknowledged as boolean | undefined,
    host: params.host as string | undefined,
    seat: params.seat as string | undefined,
  });
  const opened = await openList(ctx, 'anomalies.list', plan.partition);
  if (opened === null) return ok({ items: [], next_cursor: null });
  const after = cursor?.key;
  // Every entry whose combined counts hold no combination the filters accept is passed over unread, so
  // each chunk read holds a match and the `limit` + 1 matches are found within `limit` + 2 chunks.
  const matches: Array<{ item: StoredAnomaly['a']; key: SortKey }> = [];
  const skip = (e: IndexEntry): boolean => !anomalyEntryMayMatch(plan, e.counts);
  for await (const { key, item } of opened.list.scan({ start: after === undefined ? undefined : (k) => compareKeys(k, after, DIRS) > 0, skip })) {
    // Keys are [observed_at ms, id]; the chunks hold StoredAnomaly items (src/render/routes/events.ts).
    if (since !== undefined && (key[0] as number) < since) break;
    const s = item as StoredAnomaly;
    if (!anomalyMatch(plan, s)) continue;
    matches.push({ item: s.a, key });
    if (matches.length > limit) break;
  }
  opened.done();
  return ok(anomalyPage(matches, limit));
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
