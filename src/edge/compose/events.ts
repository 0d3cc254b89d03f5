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
import type { Chunk, IndexEntry, IndexNode, ListRoot } from '../list-format.js';
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

/** The item filter of the entity filters (and, unless `anyType`, the type filter). */
function eventMatch(f: EventFilters, anyType = false): (item: unknown) => boolean {
  const types = !anyType && f.types ? new Set(f.types) : null;
  return (x) => {
    const s = x as StoredEvent;
    if (types && !types.has(s.e.type)) return false;
    if (f.host !== undefined && !s.h.includes(f.host)) return false;
    if (f.seat !== undefined && !s.s.includes(f.seat)) return false;
    if (f.participant !== undefined && s.p !== f.participant) return false;
    return true;
  };
}

/** Skips index entries whose per-chunk type counts hold none of the wanted types. */
function typeSkip(types: readonly string[] | undefined): ((e: IndexEntry) => boolean) | undefined {
  if (!types) return undefined;
  return (e) => types.every((t) => (e.counts?.type?.[t] ?? 0) === 0);
}

const dec = new TextDecoder();

async function load<T>(ctx: ComposeContext, path: string): Promise<T> {
  const body = await ctx.read(path);
  if (body === null) throw new Error(`missing snapshot file ${path}`);
  ctx.stats.files++;
  ctx.stats.bytes += body.length;
  return JSON.parse(dec.decode(body)) as T;
}

/**
 * Items strictly before `key` in list order (i.e. newer), walked backward (oldest of them first),
 * skipping entries `skip` rules out. Reads the index nodes and chunks it needs.
 */
async function* scanBackward(ctx: ComposeContext, root: ListRoot, key: SortKey, skip?: (e: IndexEntry) => boolean): AsyncGenerator<{ key: SortKey; item: unknown }> {
  const before = (k: SortKey): boolean => compareKeys(k, key, root.dirs) < 0;
  async function* walk(entries: readonly IndexEntry[], level: number): AsyncGenerator<{ key: SortKey; item: unknown }> {
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]!;
      if (!before(e.first) || (skip && skip(e))) continue;
      if (level === 0) {
        const chunk = await load<Chunk>(ctx, e.path);
        ctx.stats.chunks++;
        for (let j = chunk.keys.length - 1; j >= 0; j--) if (before(chunk.keys[j]!)) yield { key: chunk.keys[j]!, item: chunk.items[j] };
      } else {
        const node = await load<IndexNode>(ctx, e.path);
        yield* walk(node.entries, level - 1);
      }
    }
  }
  yield* walk(root.entries, root.level);
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
  const match = eventMatch(f, true);
  for await (const { key, item } of events.list.scan({ start: f.until === undefined ? undefined : (k) => (k[0] as number) <= f.until! })) {
    if (f.since !== undefined && (key[0] as number) < f.since) break;
    if (!match(item)) continue;
    addHourCount(out, Math.floor((key[0] as number) / HOUR_MS) * HOUR_MS, (item as StoredEvent).e.type, 1);
  }
  events.done();
  return out;
}

type Keyed = { key: SortKey; item: unknown };

/** Merges streams each in the order `cmp` (negative: a first) into one stream in that order. */
async function* mergeKeyed(gens: Array<AsyncGenerator<Keyed>>, cmp: (a: SortKey, b: SortKey) => number): AsyncGenerator<Keyed> {
  if (gens.length === 1) {
    yield* gens[0]!;
    return;
  }
  const heads: Array<Keyed | null> = [];
  for (const g of gens) {
    const r = await g.next();
    heads.push(r.done ? null : r.value);
  }
  try {
    for (;;) {
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i];
        if (h && (best < 0 || cmp(h.key, heads[best]!.key) < 0)) best = i;
      }
      if (best < 0) return;
      yield heads[best]!;
      const r = await gens[best]!.next();
      heads[best] = r.done ? null : r.value;
    }
  } finally {
    for (const g of gens) await g.return(undefined);
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
  // The lists read: the first entity filter's partition; else one list per wanted type (merged by key);
  // else the whole feed.
  const entity = eventPartition(f);
  const partitions = entity[0] === 'all' && f.types ? f.types.map((t) => ['type', t]) : [entity];
  const lists: Array<NonNullable<Awaited<ReturnType<typeof openList>>>> = [];
  for (const p of partitions) {
    const o = await openList(ctx, 'events.list', p);
    if (o !== null) lists.push(o);
  }
  const match = eventMatch(f);
  const skip = typeSkip(f.types);
  const inUntil = (k: SortKey): boolean => f.until === undefined || (k[0] as number) <= f.until;
  const afterKey = (c: SortKey) => (k: SortKey) => compareKeys(k, c, DIRS) > 0;
  /** Items of every list read from the first where `start` holds, in feed order. */
  const forward = (start: (k: SortKey) => boolean): AsyncGenerator<Keyed> => mergeKeyed(lists.map((o) => o.list.scan({ start, skip })), (a, b) => compareKeys(a, b, DIRS));
  /** Matching items inside the window from the first where `start` holds: `limit` of them, and whether more follow. */
  const page = async (start: (k: SortKey) => boolean, n: number): Promise<{ items: StoredEvent[]; keys: SortKey[]; more: boolean }> => {
    const items: StoredEvent[] = [];
    const keys: SortKey[] = [];
    for await (const { key, item } of forward((k) => start(k) && inUntil(k))) {
      if (f.since !== undefined && (key[0] as number) < f.since) break;
      if (!match(item)) continue;
      if (items.length === n) return { items, keys, more: true };
      items.push(item as StoredEvent);
      keys.push(key);
    }
    return { items, keys, more: false };
  };
  let items: StoredEvent[] = [];
  let keys: SortKey[] = [];
  let more = false;
  if (prev) {
    const backward = mergeKeyed(
      lists.map((o) => scanBackward(ctx, o.list.root, prev.key, skip)),
      (a, b) => compareKeys(b, a, DIRS),
    );
    for await (const { key, item } of backward) {
      if (f.until !== undefined && (key[0] as number) > f.until) break;
      if (f.since !== undefined && (key[0] as number) < f.since) continue;
      if (!match(item)) continue;
      items.push(item as StoredEvent);
      keys.push(key);
      if (items.length === limit) break;
    }
    items = items.reverse();
    keys = keys.reverse();
    more = keys.length > 0 && (await page(afterKey(keys[keys.length - 1]!), 0)).more;
  } else {
    const p = await page(cursor ? afterKey(cursor.key) : () => true, limit);
    ({ items, keys, more } = p);
  }
  for (const o of lists) o.done();
  const out: Record<string, unknown> = {
    items: items.map((s) => s.e),
    next_cursor: more ? eventCursor(keys[keys.length - 1]!, 'next') : null,
    prev_cursor: keys.length > 0 ? eventCursor(keys[0]!, 'prev') : null,
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
