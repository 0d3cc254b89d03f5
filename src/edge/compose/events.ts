// Composers of the event feed and the anomalies: answers from snapshot files only. Edge-safe (no Node
// imports). Layout: src/render/routes/events.ts; rules: src/api/events/feed.ts.
import { addHourCount, anomalyEntryMayMatch, anomalyFacetValue, isAnomalyFacet, anomalyPlan, chartBucketFor, eventCursor, eventMeta, eventPartition, eventPlan, FeedCollector, META_SCAN_MAX, NEWEST_FIRST_DIRS, bucketEnd, HISTOGRAM_LISTS, type BucketRow, type ChartBucket, type HourTypeCounts, type StoredAnomaly, type StoredEvent } from '../../api/events/feed.js';
import { EVENT_TYPES } from '../../api/schemas/constants.js';
import { compareKeys, keysAfter, type SortKey } from '../../api/sort-keys.js';
import { ok, type ApiResult } from '../../api/result.js';
import { facetCount, type IndexEntry } from '../list-format.js';
import type { Source } from './source.js';
import type { ParamsOf } from '../../api/handlers.js';
import { listComposer, type StoredList } from './scan.js';
import type { ComposeFn, Composers } from './types.js';
import { HOUR_MS } from '../../api/time.js';


/** The filters of an event request (`types`: the `type` parameter). */
interface EventFilters {
  types?: readonly string[];
  host?: string;
  seat?: string;
  participant?: string;
  since?: number;
  until?: number;
}

/** The item filter of the entity filters (meta counts: any type). */
function eventMatch(f: EventFilters): (item: unknown) => boolean {
  return (x) => {
    const s = x as StoredEvent;
    if (f.host !== undefined && !s.e.related_hosts.includes(f.host)) return false;
    if (f.seat !== undefined && !s.s.includes(f.seat)) return false;
    if (f.participant !== undefined && s.e.participant !== f.participant) return false;
    return true;
  };
}

/**
 * meta counts: per chart bucket (or hour) and type, the events inside [since, until] under the
 * non-type filters; null when they degrade (src/api/events/feed.ts). Reads: the partition's events list index
 * with at most one chunk at each of since and until (events older than them, per type, counted from
 * the entries' type counts), and the histogram rows of the window at the chart's resolution. With a
 * participant partition (no histograms) or two or more entity filters, the window's events are
 * counted one by one (at most META_SCAN_MAX of them for the latter).
 */
async function metaCounts(src: Source, f: EventFilters, bucket: ChartBucket): Promise<HourTypeCounts | null> {
  const out: HourTypeCounts = new Map();
  const partition = eventPartition(f);
  const list = await src.list('events.list', partition);
  if (list === null) return out;
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
    if (entities >= 2 && f.participant === undefined && n > META_SCAN_MAX) return null;
    const match = eventMatch(f);
    for await (const { key, item } of list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
      if (f.since !== undefined && (key[0] as number) < f.since) break;
      if (match(item)) addHourCount(out, Math.floor((key[0] as number) / HOUR_MS) * HOUR_MS, (item as StoredEvent).e.type, 1);
    }
    return out;
  }
  const hist = await src.list(HISTOGRAM_LISTS[bucket], partition);
  if (hist === null) return out;
  for await (const { item } of hist.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
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
  return out;
}

const composeEvents: ComposeFn<'events.list'> = async (params, src): Promise<ApiResult> => {
  const { limit, cursor, prev_cursor: prev } = params;
  const f: EventFilters = { types: params.type, host: params.host, seat: params.seat, participant: params.participant, since: params.since, until: params.until };
  const plan = eventPlan(f);
  const dir = prev ? 'newer' : 'older';
  const collector = new FeedCollector<StoredEvent>(limit, dir);
  const time = (k: SortKey): number => k[0] as number;
  const inSince = (k: SortKey): boolean => f.since === undefined || time(k) >= f.since;
  const inUntil = (k: SortKey): boolean => f.until === undefined || time(k) <= f.until;
  const types = plan.types;
  const match = (s: StoredEvent): boolean =>
    (types === null || types.has(s.e.type)) && (plan.seat === undefined || s.s.includes(plan.seat)) && (plan.host === undefined || s.e.related_hosts.includes(plan.host));
  /**
   * Entries without an event of a wanted type (by the index's per-entry `type` counts, the only counts
   * event lists hold) hold no match: passed over unread. The seat or host left to match is not counted.
   */
  const noMatch = (e: IndexEntry): boolean => types !== null && e.counts?.type !== undefined && [...types].every((t) => facetCount(e.counts, 'type', t) === 0);
  const list = await src.list('events.list', plan.partition);
  let olderFollows = false;
  if (list !== null) {
    /** The matches of a walk while its items lie inside `inRange` ([since, until]), until `take` returns false. */
    const matches = async (items: AsyncGenerator<{ key: SortKey; item: unknown }>, inRange: (k: SortKey) => boolean, take: (s: StoredEvent, key: SortKey) => boolean): Promise<void> => {
      for await (const { key, item } of items) {
        if (!inRange(key)) break;
        const s = item as StoredEvent;
        if (match(s) && !take(s, key)) break;
      }
    };
    /** Toward older events from `after` (exclusive; undefined: from the head): items at or before until. */
    const olderItems = (after: SortKey | undefined): AsyncGenerator<{ key: SortKey; item: unknown }> => {
      const afterFrom = keysAfter(NEWEST_FIRST_DIRS, after);
      return list.scan({
        start: (k) => afterFrom(k) && inUntil(k),
        // Entries wholly older than since hold nothing for the page.
        skip: (e) => !inSince(e.first) || noMatch(e),
      });
    };
    if (dir === 'older') await matches(olderItems(cursor?.key), inSince, (s, key) => collector.offer(s, key));
    else {
      const items = list.scanBackward({
        // Items newer than the watermark and at or after since, the nearest first.
        start: (k) => compareKeys(k, prev!.key, NEWEST_FIRST_DIRS) >= 0 || !inSince(k),
        skip: (e) => !inUntil(e.last) || noMatch(e),
      });
      await matches(items, inUntil, (s, key) => collector.offer(s, key));
      // next_cursor: a match older than the page's oldest item, at or after since.
      const oldest = collector.oldestKey;
      if (oldest !== null) {
        await matches(olderItems(oldest), inSince, () => {
          olderFollows = true;
          return false;
        });
      }
    }
  }
  const { next, prev: newer } = collector.cursorKeys(olderFollows, prev?.key);
  const out: Record<string, unknown> = {
    items: collector.page.items.map((s) => s.e),
    next_cursor: next === null ? null : eventCursor(next, 'next'),
    prev_cursor: newer === null ? null : eventCursor(newer, 'prev'),
  };
  if (!cursor && !prev) {
    // The whole feed's list (its root gives the totals). A list opened twice is read once (Source.list).
    const root = (await src.list('events.list', ['all']))?.root;
    const total = root?.count ?? 0;
    const lastEntry = root && root.entries.length > 0 ? root.entries[root.entries.length - 1]! : null;
    const oldest = lastEntry ? (lastEntry.last[0] as number) : null;
    const filterActive = f.types !== undefined || f.host !== undefined || f.seat !== undefined || f.participant !== undefined || f.since !== undefined || f.until !== undefined;
    const bucket = chartBucketFor(f.since, f.until, oldest, src.nowMs);
    // meta counts the first entity filter's list, or the whole feed.
    out.meta = eventMeta({ total, filterActive, types: f.types, hours: await metaCounts(src, f, bucket), bucket });
  }
  return ok(out);
};

/**
 * Anomaly lists (src/render/routes/events.ts): StoredAnomaly items; the host's list is read for a host
 * filter, else the seat's, else all (anomalyPlan). Every entry whose combined counts hold no
 * combination the filters accept is passed over unread, so each chunk read holds a match and the
 * `limit` + 1 matches are found within `limit` + 2 chunks.
 */
const ANOMALIES: StoredList<ParamsOf<'anomalies.list'>> = {
  facet: (item, _key, facet) => {
    const s = item as StoredAnomaly;
    if (isAnomalyFacet(facet)) return anomalyFacetValue(s.a, facet);
    return facet === 'hosts' ? s.h : s.s;
  },
  counted: [],
  item: (s) => (s as StoredAnomaly).a,
  skip: (params) => {
    const plan = anomalyPlan(params);
    return (e) => !anomalyEntryMayMatch(plan, e.counts);
  },
};

export const EVENTS_COMPOSERS = {
  'events.list': composeEvents,
  'anomalies.list': listComposer('anomalies.list', ANOMALIES, (params) => ({ routeId: 'anomalies.list', partition: anomalyPlan(params).partition })),
} satisfies Partial<Composers>;
