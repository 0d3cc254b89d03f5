// Pure pieces of the event feed and the anomaly list that the oracle (./query.ts), the renderer
// (src/render/routes/events.ts) and the shim (src/edge/compose/events.ts) share. Edge-safe. The rules
// (order, source lists, full pages in both cursor directions, meta and its degraded form, anomaly
// pages) are stated once in docs/api-providers-events.md, "Event feed" and "Anomalies".
import { encodeCursor } from '../cursor.js';
import type { Direction, SortKey } from '../sort-keys.js';
import { orderDirs, routeOrder } from '../routes/request.js';
import { ROUTES } from '../routes/table.js';
import { DAY_MS, HOUR_MS, WEEK_MS } from '../time.js';
import type { AnomalyView, GlobalEvent } from '../schemas/index.js';

export const EVENT_ROUTE = 'events.list';
export const ANOMALY_ROUTE = 'anomalies.list';
/** Directions of the event and anomaly key [observed_at, id]: the declared order of both lists. */
export const NEWEST_FIRST_DIRS: Direction[] = orderDirs(routeOrder(ROUTES[EVENT_ROUTE]));
export type FeedKey = [number, string];

/** A feed key of a parsed cursor (parseRequest accepted it: its key fits the order [observed_at ms, id]). */
export function feedKey(k: SortKey): FeedKey {
  const [t, id] = k;
  if (typeof t !== 'number' || typeof id !== 'string') throw new Error(`not a feed key: ${JSON.stringify(k)}`);
  return [t, id];
}

/**
 * Most events of a seat or host counted one by one for meta under both a `seat` and a `host` filter
 * (without `participant`): about two chunks of events (EVENT_CHUNK_MIN_ITEMS), so that a first page
 * stays within a bounded read. With a `participant` filter, its own events are counted whatever their
 * number, as for that filter alone.
 */
export const META_SCAN_MAX = 200;
/** Windows up to this long chart by hour; up to CHART_DAY_MAX_MS by day; longer by week. */
export const CHART_HOUR_MAX_MS = 3 * DAY_MS;
export const CHART_DAY_MAX_MS = 90 * DAY_MS;

export type ChartBucket = 'hour' | 'day' | 'week';

export function eventCursor(key: SortKey, dir: 'next' | 'prev'): string {
  return encodeCursor({ route: EVENT_ROUTE, partition: [], key, hint: '', dir });
}

export function anomalyCursor(key: SortKey): string {
  return encodeCursor({ route: ANOMALY_ROUTE, partition: [], key, hint: '', dir: 'next' });
}

/**
 * The chart resolution of a window [since, until]: since defaults to the oldest event of the feed
 * (now when the feed is empty), until to the snapshot clock. A span up to 3 days charts by hour, up to
 * 90 days by day, longer by week.
 */
export function chartBucketFor(sinceMs: number | undefined, untilMs: number | undefined, oldestMs: number | null, nowMs: number): ChartBucket {
  const end = untilMs ?? nowMs;
  const start = sinceMs ?? oldestMs ?? end;
  const span = end - start;
  return span <= CHART_HOUR_MAX_MS ? 'hour' : span <= CHART_DAY_MAX_MS ? 'day' : 'week';
}

/** Start of the bucket holding `ms`: UTC hour, UTC day, or ISO week (Monday 00:00 UTC). */
export function bucketStart(ms: number, bucket: ChartBucket): number {
  if (bucket === 'hour') return Math.floor(ms / HOUR_MS) * HOUR_MS;
  if (bucket === 'day') return Math.floor(ms / DAY_MS) * DAY_MS;
  // 1970-01-05 (4 days after the epoch) was a Monday.
  const monday = 4 * DAY_MS;
  return Math.floor((ms - monday) / WEEK_MS) * WEEK_MS + monday;
}

/** Event counts per UTC hour and type (under the non-type filters, inside the window). */
export type HourTypeCounts = Map<number, Map<string, number>>;

export function addHourCount(into: HourTypeCounts, hour: number, type: string, n: number): void {
  let m = into.get(hour);
  if (!m) into.set(hour, (m = new Map()));
  m.set(type, (m.get(type) ?? 0) + n);
}

export interface FacetBucketOut {
  value: string;
  count: number;
}

export interface EventFeedMetaOut {
  total_count: number;
  total_count_estimated: boolean;
  filter_count: number | null;
  facets: Record<string, FacetBucketOut[]>;
  chart_bucket: ChartBucket;
  chart_data: Array<{ bucket_start: string; count: number }>;
  /** Present (true) only when the counts were not made: filter_count null, facets {} and chart_data [] then say nothing. */
  counts_omitted?: true;
}

export interface MetaInput {
  total: number;
  /** True when any of type, host, seat, participant, since, until is set. */
  filterActive: boolean;
  /** The type filter (sorted list), or undefined. */
  types: readonly string[] | undefined;
  /** Exact counts, or null when they degraded (over META_SCAN_MAX). */
  hours: HourTypeCounts | null;
  bucket: ChartBucket;
}

/** EventFeedMeta from the counts (one implementation for oracle and shim). */
export function eventMeta(m: MetaInput): EventFeedMetaOut {
  if (m.hours === null) {
    return { total_count: m.total, total_count_estimated: false, filter_count: null, facets: {}, chart_bucket: m.bucket, chart_data: [], counts_omitted: true };
  }
  const wanted = m.types ? new Set(m.types) : null;
  const byType = new Map<string, number>();
  const byBucket = new Map<number, number>();
  let matching = 0;
  for (const [hour, types] of m.hours) {
    for (const [type, n] of types) {
      if (n === 0) continue;
      byType.set(type, (byType.get(type) ?? 0) + n);
      if (wanted && !wanted.has(type)) continue;
      matching += n;
      const b = bucketStart(hour, m.bucket);
      byBucket.set(b, (byBucket.get(b) ?? 0) + n);
    }
  }
  const facet = [...byType]
    .filter(([, n]) => n > 0)
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  const chart = [...byBucket]
    .filter(([, n]) => n > 0)
    .sort((a, b) => a[0] - b[0])
    .map(([t, count]) => ({ bucket_start: new Date(t).toISOString(), count }));
  return {
    total_count: m.total,
    total_count_estimated: false,
    filter_count: m.filterActive ? matching : null,
    facets: { type: facet },
    chart_bucket: m.bucket,
    chart_data: chart,
  };
}

/** The entity filter whose stored list a request reads: participant, else seat, else host, else the whole feed. */
export function eventPartition(p: { participant?: string; seat?: string; host?: string }): string[] {
  if (p.participant !== undefined) return ['participant', p.participant];
  if (p.seat !== undefined) return ['seat', p.seat];
  if (p.host !== undefined) return ['host', p.host];
  return ['all'];
}

/** Anomaly list partition: seat, else host, else all. */
export function anomalyPartition(p: { seat?: string; host?: string }): string[] {
  if (p.seat !== undefined) return ['seat', p.seat];
  if (p.host !== undefined) return ['host', p.host];
  return ['all'];
}

/** A stored event-list item: the GlobalEvent plus what the filters match on. */
export interface StoredEvent {
  /** The GlobalEvent; its `related_hosts` and `participant` are what the host and participant filters match. */
  e: GlobalEvent;
  /** Related seats (event_seats), sorted. */
  s: string[];
}

/** A stored anomaly-list item: the AnomalyView plus its hosts and seats. */
export interface StoredAnomaly {
  a: AnomalyView;
  h: string[];
  s: string[];
}

/**
 * A row of a histogram list of one event partition (one list per chart resolution, HISTOGRAM_LISTS):
 * the bucket start, the partition's events in the bucket per type (`c`), and per type the events older
 * than the bucket (`o`, so that rows of past buckets never change as events are added); counts in the
 * order of EVENT_TYPES (src/api/schemas/common.ts). With `o`, the number of events older than any
 * bucket boundary is read off one row.
 */
export interface BucketRow {
  h: number;
  c: number[];
  o: number[];
}

/** The histogram list of each chart resolution. */
export const HISTOGRAM_LISTS: Record<ChartBucket, string> = {
  hour: 'events.list.hours',
  day: 'events.list.days',
  week: 'events.list.weeks',
};

/** The end (exclusive) of the bucket starting at `start`. */
export function bucketEnd(start: number, bucket: ChartBucket): number {
  return start + (bucket === 'hour' ? HOUR_MS : bucket === 'day' ? DAY_MS : WEEK_MS);
}

/**
 * Event chunks hold at least this many events before a content-defined boundary (still at most
 * render.chunk_max_bytes): a page of up to 200 events plus the one that tells whether more follow
 * then spans at most three chunks when every event of its source list matches.
 */
export const EVENT_CHUNK_MIN_ITEMS = 100;

/** How a request reads the feed: the stored list, and the filters matched item by item. */
export interface EventPlan {
  /** The source list's partition: ['all'], ['type', t], ['participant' | 'seat' | 'host', value]. */
  partition: string[];
  /** Wanted types the source does not imply (null: the source implies the type filter, or there is none). */
  types: ReadonlySet<string> | null;
  /** Entity filters the source does not imply. */
  seat?: string;
  host?: string;
}

export interface EventFilterParams {
  types?: readonly string[];
  host?: string;
  seat?: string;
  participant?: string;
}

export function eventPlan(f: EventFilterParams): EventPlan {
  const entity = eventPartition(f);
  if (entity[0] === 'all') {
    if (f.types === undefined) return { partition: entity, types: null };
    if (f.types.length === 1) return { partition: ['type', f.types[0]!], types: null };
    return { partition: entity, types: new Set(f.types) };
  }
  const plan: EventPlan = { partition: entity, types: f.types === undefined ? null : new Set(f.types) };
  // The partition is the first of participant, seat, host: the later ones remain to be matched.
  if (entity[0] === 'participant' && f.seat !== undefined) plan.seat = f.seat;
  if (entity[0] !== 'host' && f.host !== undefined) plan.host = f.host;
  return plan;
}

/**
 * Collects one event page from the matches offered in reading order: toward older events (`older`:
 * after `cursor`, or from the head) or toward newer ones (`newer`: after `prev_cursor`, the nearest
 * first). The caller offers the matches inside [since, until] until offer() returns false or the
 * source ends. Pages are full: toward older events the page takes `limit` matches and stops at the
 * one after them (a next page exists); toward newer events it stops once it holds `limit`.
 */
export class FeedCollector<T> {
  readonly items: T[] = [];
  readonly keys: SortKey[] = [];
  private more = false;

  constructor(
    private readonly limit: number,
    private readonly dir: 'older' | 'newer',
  ) {}

  /** Offers the next match; false when the page is complete (offer no more). */
  offer(item: T, key: SortKey): boolean {
    if (this.items.length === this.limit) {
      // Toward older events only: a match after a full page.
      this.more = true;
      return false;
    }
    this.items.push(item);
    this.keys.push(key);
    return this.dir === 'older' || this.items.length < this.limit;
  }

  /**
   * The page's cursor keys once the offers are done. Toward older events: next_cursor's is the page's
   * last (oldest) item when a further match was offered, prev_cursor's the newest item (null on an
   * empty page). Toward newer events: prev_cursor's is the page's newest item, or the `watermark`
   * polled, unchanged, when the page is empty (nothing newer yet); next_cursor's the oldest item when
   * `olderFollows` (a match older than it lies at or after since).
   */
  cursorKeys(olderFollows: boolean, watermark?: SortKey): { next: SortKey | null; prev: SortKey | null } {
    if (this.dir === 'older') return { next: this.more ? this.keys[this.keys.length - 1]! : null, prev: this.keys[0] ?? null };
    return { next: olderFollows ? (this.keys[0] ?? null) : null, prev: this.keys[this.keys.length - 1] ?? watermark ?? null };
  }

  /** The key of the page's oldest item (null on an empty page). */
  get oldestKey(): SortKey | null {
    return (this.dir === 'older' ? this.keys[this.keys.length - 1] : this.keys[0]) ?? null;
  }

  /** The page's items newest first. */
  get page(): { items: T[]; keys: SortKey[] } {
    return this.dir === 'older' ? { items: this.items, keys: this.keys } : { items: [...this.items].reverse(), keys: [...this.keys].reverse() };
  }
}

// ---------------------------------------------------------------------------------------------
// Anomaly pages

/** The anomaly filters the lists count per index entry, in the order of the combined facet's value. */
export const ANOMALY_FACETS = ['detector', 'grade', 'acknowledged'] as const;
export type AnomalyFacet = (typeof ANOMALY_FACETS)[number];

export function isAnomalyFacet(field: string): field is AnomalyFacet {
  return (ANOMALY_FACETS as readonly string[]).includes(field);
}

/**
 * The facet counted per index entry of every anomaly list: one value per combination of detector,
 * grade and acknowledgement, `<detector>|<grade>|<acknowledged>` (at most 5 × 2 × 2 = 20 values; 10
 * occur, as a detector raises one grade). Counting combinations rather than each filter on its own is
 * what lets a page filtered by two or three of them skip every chunk without a match.
 */
export const ANOMALY_COMBINED = 'detector|grade|acknowledged';
/**
 * Counted on a host's list besides ANOMALY_COMBINED: `<seat>|<detector>|<grade>|<acknowledged>` for
 * each seat an anomaly names (an anomaly names one or two; one without seats adds none), so that a
 * page filtered by `host` and `seat` skips the chunks without a match too.
 */
export const ANOMALY_SEAT_COMBINED = 'seat|detector|grade|acknowledged';

/**
 * The facet fields an anomaly list of a partition family ('all', 'host', 'seat') counts per index
 * entry: each of ANOMALY_FACETS on its own (what shims before the combined facet skip by, so that
 * they still answer a newer snapshot), the combined facet, and on a host's list the seat's.
 */
export function anomalyFacetFields(family: string): string[] {
  return [...ANOMALY_FACETS, ANOMALY_COMBINED, ...(family === 'host' ? [ANOMALY_SEAT_COMBINED] : [])];
}

/** The value of a counted filter an anomaly carries, as the index counts it (acknowledged as "true"/"false"). */
export function anomalyFacetValue(a: StoredAnomaly['a'], facet: AnomalyFacet): string {
  return facet === 'acknowledged' ? String(a.acknowledged) : a[facet];
}

/** An anomaly's values of the facet fields of its list (anomalyFacetFields), for the list writer. */
export function anomalyFacetValues(family: string, s: StoredAnomaly): Record<string, string[]> {
  const values = ANOMALY_FACETS.map((f) => anomalyFacetValue(s.a, f));
  const combined = values.join('|');
  const out: Record<string, string[]> = Object.fromEntries(ANOMALY_FACETS.map((f, i) => [f, [values[i]!]]));
  out[ANOMALY_COMBINED] = [combined];
  if (family === 'host') out[ANOMALY_SEAT_COMBINED] = s.s.map((seat) => `${seat}|${combined}`);
  return out;
}

export interface AnomalyFilterParams {
  detector?: string;
  grade?: string;
  acknowledged?: boolean;
  host?: string;
  seat?: string;
}

/** How a request reads the anomalies: the stored list, and the filters matched item by item. */
export interface AnomalyPlan {
  /** The source list's partition: ['all'], ['host', hostname], ['seat', seat]. */
  partition: string[];
  /** Counted filters as [field, value] (acknowledged as "true"/"false"), in ANOMALY_FACETS order. */
  facets: Array<[AnomalyFacet, string]>;
  /** The seat left to match on the host's list (both host and seat given). */
  seat?: string;
}

/**
 * The list a page reads: the host's, else the seat's, else all anomalies. With both host and seat the
 * host's list is read and the seat is matched item by item: a host's anomalies name few seats, so its
 * index counts them (ANOMALY_SEAT_COMBINED) at little cost, where a seat's would count many hosts.
 */
export function anomalyPlan(f: AnomalyFilterParams): AnomalyPlan {
  const facets: Array<[AnomalyFacet, string]> = [];
  for (const facet of ANOMALY_FACETS) {
    const v = f[facet];
    if (v !== undefined) facets.push([facet, String(v)]);
  }
  if (f.host !== undefined) return f.seat === undefined ? { partition: ['host', f.host], facets } : { partition: ['host', f.host], facets, seat: f.seat };
  if (f.seat !== undefined) return { partition: ['seat', f.seat], facets };
  return { partition: ['all'], facets };
}

/** Item counts per value of facet fields, as a list index entry holds them (src/edge/list-format.ts FacetCounts). */
export type AnomalyEntryCounts = Readonly<Record<string, Readonly<Record<string, number>>>>;

/**
 * Whether an index entry of the plan's list may hold a match, from its counts: true when the entry
 * counts an item of a combination the plan accepts (every set filter equal, the others any value; on
 * a host's list with a seat left to match, a combination of that seat). An entry this rules out is
 * never read, so every chunk a page reads holds a match (of every filter but `since`).
 */
export function anomalyEntryMayMatch(plan: AnomalyPlan, counts: AnomalyEntryCounts | undefined): boolean {
  if (plan.facets.length === 0 && plan.seat === undefined) return true;
  const field = plan.seat === undefined ? ANOMALY_COMBINED : ANOMALY_SEAT_COMBINED;
  const byValue = counts?.[field];
  // A snapshot written before the combined counts: the counts of each filter alone rule out what they can.
  if (byValue === undefined) return plan.facets.every(([f, v]) => counts?.[f] === undefined || (counts[f][v] ?? 0) > 0);
  for (const [value, n] of Object.entries(byValue)) {
    if (n === 0) continue;
    // The last three parts are detector, grade and acknowledged (none holds a '|'); a seat is the rest.
    const parts = value.split('|');
    const combo = parts.slice(-ANOMALY_FACETS.length);
    if (plan.seat !== undefined && parts.slice(0, -ANOMALY_FACETS.length).join('|') !== plan.seat) continue;
    if (plan.facets.every(([f, v]) => combo[ANOMALY_FACETS.indexOf(f)] === v)) return true;
  }
  return false;
}

/**
 * A page of the anomaly list from the matches after the cursor, in list order, at most `limit` + 1 of
 * them: the first `limit`, and `next_cursor` on the last of those when another match follows (else
 * null). Pages are always full: a page holds `limit` items whenever that many more matches exist.
 */
export function anomalyPage<T>(matches: ReadonlyArray<{ item: T; key: SortKey }>, limit: number): { items: T[]; next_cursor: string | null } {
  const page = matches.slice(0, limit);
  return { items: page.map((m) => m.item), next_cursor: matches.length > limit ? anomalyCursor(page[page.length - 1]!.key) : null };
}
