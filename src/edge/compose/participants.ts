// The shim's participants family: the same answers as the oracle (src/api/query/participants.ts), from
// snapshot files only (docs/snapshot-format.md "Participants"). Edge-safe: no Node imports, no DB.
//
// Reads per request:
// - detail, stats, and any request at default parameters: one exact file;
// - events / history: the exact first page (404 when absent); when it holds the whole list
//   (next_cursor null) any limit and cursor are paged from it, else the participant's stored list;
// - the list: see composeListWith below (candidate sets of at most smallSetMax(total) items are read whole and
//   paged in memory; otherwise a walk of a posting list merge or of the main list of the order).
import { compareKeys, type Direction, type SortKey } from '../../api/keys.js';
import { LIMIT_DEFAULT } from '../../api/params.js';
import {
  acceptedValues,
  activeDimensions,
  activePostingDimensions,
  afterCursor,
  classifySearch,
  DEFAULT_SORT,
  DETAIL_ROUTE,
  dirsOf,
  EVENTS_ROUTE,
  filterCountMode,
  HISTORY_ROUTE,
  ID_INDEX_PARTITION,
  itemMatches,
  LIST_ROUTE,
  listKey,
  listMeta,
  listOrder,
  listPage,
  listParamsOf,
  MAIN_FACET_FIELDS,
  mainPartition,
  postingPartition,
  simplePage,
  SMALL_SET_MAX,
  smallSetMax,
  STATS_ROUTE,
  trigramPartition,
  trigramsOf,
  type ListParams,
  type PostingDimension,
  type Search,
} from '../../api/participants-shared.js';
import { exactFilePath, listRootPath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { orderOf, ROUTES, sortKeyOf, type OrderSpec } from '../../api/routes.js';
import type { CursorPosition } from '../../api/cursor.js';
import type { FacetBucket, ParticipantListItem, ParticipantStats } from '../../api/schemas/index.js';
import { composePage, ListReader, SnapshotFormatError, type ReadFile } from '../list-reader.js';
import type { IndexEntry } from '../list-format.js';
import type { ComposeContext, ComposeFn, Params } from './types.js';

const dec = new TextDecoder();

/** One request's file access: counts every file and byte into ctx.stats, reads each path once. */
class Files {
  private readonly cache = new Map<string, Promise<Uint8Array | null>>();
  private readonly readers: ListReader[] = [];
  constructor(private readonly ctx: ComposeContext) {}

  readonly read: ReadFile = (path) => {
    let p = this.cache.get(path);
    if (p === undefined) {
      p = this.ctx.read(path).then((b) => {
        if (b !== null) {
          this.ctx.stats.files++;
          this.ctx.stats.bytes += b.length;
        }
        return b;
      });
      this.cache.set(path, p);
    }
    return p;
  };

  async json<T>(path: string): Promise<T | null> {
    const b = await this.read(path);
    return b === null ? null : (JSON.parse(dec.decode(b)) as T);
  }

  async list(route: string, partition: readonly string[]): Promise<ListReader | null> {
    const r = await ListReader.open(this.read, listRootPath(route, partition));
    if (r !== null) this.readers.push(r);
    return r;
  }

  /** Adds the chunk reads of every list opened to ctx.stats (files and bytes are counted by read). */
  done(): void {
    for (const r of this.readers) this.ctx.stats.chunks += r.stats.chunks;
    this.readers.length = 0;
  }
}

async function withFiles(ctx: ComposeContext, f: (files: Files) => Promise<ApiResult>): Promise<ApiResult> {
  const files = new Files(ctx);
  try {
    return await f(files);
  } finally {
    files.done();
  }
}

// ---------------------------------------------------------------------------------------------
// Single resources

const composeDetail: ComposeFn = (params, ctx) =>
  withFiles(ctx, async (files) => {
    const id = params.id as string;
    const body = await files.json<unknown>(exactFilePath(['v1', 'participants', id]));
    return body === null ? notFoundOf('participant', id) : ok(body);
  });

const composeStats: ComposeFn = (_params, ctx) =>
  withFiles(ctx, async (files) => {
    const body = await files.json<ParticipantStats>(exactFilePath(['v1', 'stats', 'participants']));
    if (body === null) throw new SnapshotFormatError('missing v1/stats/participants.json');
    return ok(body);
  });

// ---------------------------------------------------------------------------------------------
// A participant's events and history

interface SimplePage {
  items: Array<Record<string, unknown>>;
  next_cursor: string | null;
}

/** The page after `cursor` from a participant's stored list (used when the list exceeds one default page). */
export async function pageFromStoredList(
  read: ReadFile,
  route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE,
  id: string,
  cursor: CursorPosition | undefined,
  limit: number,
): Promise<{ page: SimplePage; reader: ListReader }> {
  const list = await ListReader.open(read, listRootPath(route, [id]));
  if (list === null) throw new SnapshotFormatError(`missing list ${route} of ${id}`);
  const dirs = list.root.dirs;
  const pg = await composePage(list, { start: cursor === undefined ? undefined : (k) => compareKeys(k, cursor.key, dirs) > 0, limit });
  return { page: simplePage(route, [id], pg.items as Array<Record<string, unknown>>, pg.keys, pg.more), reader: list };
}

function perParticipant(route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE): ComposeFn {
  const order = orderOf(ROUTES[route].list!, {});
  const dirs = dirsOf(order);
  const segment = route === EVENTS_ROUTE ? 'events' : 'history';
  return (params, ctx) =>
    withFiles(ctx, async (files) => {
      const id = params.id as string;
      const limit = params.limit as number;
      const cursor = params.cursor as CursorPosition | undefined;
      const exact = await files.json<SimplePage>(exactFilePath(['v1', 'participants', id, segment]));
      if (exact === null) return notFoundOf('participant', id);
      if (cursor === undefined && limit === LIMIT_DEFAULT) return ok(exact);
      if (exact.next_cursor === null) {
        // The exact first page holds the whole list: page it here.
        const rest = exact.items.map((item) => ({ item, key: sortKeyOf(order, item) })).filter((e) => afterCursor(e.key, cursor, dirs));
        const pageItems = rest.slice(0, limit);
        return ok(simplePage(route, [id], pageItems.map((e) => e.item), pageItems.map((e) => e.key), rest.length > limit));
      }
      const { page, reader } = await pageFromStoredList(files.read, route, id, cursor, limit);
      ctx.stats.chunks += reader.stats.chunks;
      return ok(page);
    });
}

// ---------------------------------------------------------------------------------------------
// The participant list

type Keyed = { item: ParticipantListItem; key: SortKey };

/** Every item of a list (a small candidate set). */
async function readAll(list: ListReader | null): Promise<ParticipantListItem[]> {
  const out: ParticipantListItem[] = [];
  if (list === null) return out;
  for await (const { item } of list.scan()) out.push(item as ParticipantListItem);
  return out;
}

/** Merges lists of one order (disjoint items) from after `cursor`, in order. */
async function* merge(lists: ListReader[], dirs: Direction[], cursor: CursorPosition | undefined): AsyncGenerator<Keyed> {
  const start = cursor === undefined ? undefined : (k: SortKey) => compareKeys(k, cursor.key, dirs) > 0;
  const its = lists.map((l) => l.scan({ start }));
  const heads: Array<Keyed | null> = await Promise.all(its.map(async (it) => {
    const n = await it.next();
    return n.done ? null : { item: n.value.item as ParticipantListItem, key: n.value.key };
  }));
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (h && (best < 0 || compareKeys(h.key, heads[best]!.key, dirs) < 0)) best = i;
    }
    if (best < 0) return;
    yield heads[best]!;
    const n = await its[best]!.next();
    heads[best] = n.done ? null : { item: n.value.item as ParticipantListItem, key: n.value.key };
  }
}

function sumCounts(counts: Record<string, number> | undefined, values: readonly string[]): number {
  let n = 0;
  for (const v of values) n += counts?.[v] ?? 0;
  return n;
}

/** True when `p` is the list's default request (the exact file answers it). */
function isDefaultRequest(p: ListParams): boolean {
  return p.sort === DEFAULT_SORT && p.cursor === undefined && p.q === undefined && p.limit === LIMIT_DEFAULT && activeDimensions(p).length === 0;
}

async function composeListWith(files: Files, p: ListParams): Promise<ApiResult> {
  if (isDefaultRequest(p)) {
    const body = await files.json<unknown>(exactFilePath(['v1', 'participants']));
    if (body === null) throw new SnapshotFormatError('missing v1/participants.json');
    return ok(body);
  }
  const order: OrderSpec = listOrder(p.sort);
  const dirs = dirsOf(order);
  const search: Search | null = p.q === undefined ? null : classifySearch(p.q);
  const first = p.cursor === undefined;
  const main = await files.list(LIST_ROUTE, mainPartition(p.sort));
  if (main === null) throw new SnapshotFormatError(`missing list ${LIST_ROUTE} ${p.sort}`);

  // Sizes of the candidate sets: posting dimensions (country and scheme from the main root's counts,
  // smp and ap from their posting roots) and the rarest trigram of a name search.
  const postingTotals = new Map<PostingDimension, number>();
  const postingLists = new Map<PostingDimension, () => Promise<ListReader[]>>();
  for (const d of activePostingDimensions(p)) {
    const values = acceptedValues(p, d);
    const open = async (): Promise<ListReader[]> => (await Promise.all(values.map((v) => files.list(LIST_ROUTE, postingPartition(d, v))))).filter((l): l is ListReader => l !== null);
    postingLists.set(d, open);
    if ((MAIN_FACET_FIELDS as readonly string[]).includes(d)) postingTotals.set(d, sumCounts(main.root.counts?.[d], values));
    else postingTotals.set(d, (await open()).reduce((n, l) => n + l.root.count, 0));
  }
  let rarest: number | null = null;
  let rarestList: ListReader | null = null;
  if (search !== null && search.kind === 'name') {
    const tris = trigramsOf(search.text);
    if (tris.length > 0) {
      const roots = await Promise.all(tris.map((t) => files.list(LIST_ROUTE, trigramPartition(t))));
      rarest = Infinity;
      for (const r of roots) {
        const n = r === null ? 0 : r.root.count;
        if (n < rarest) {
          rarest = n;
          rarestList = r;
        }
      }
    }
  }
  const total = main.root.count;
  const smallMax = smallSetMax(total);
  const mode = filterCountMode(p, search, rarest, postingTotals, total);

  let items: ParticipantListItem[];
  let keys: SortKey[];
  let more: boolean;
  let count: number | null = null;

  // A small candidate set: read whole, filter, sort, page in memory (the same sources as mode 'set').
  let small: (() => Promise<ParticipantListItem[]>) | null = null;
  if (search !== null && search.kind !== 'name') {
    const value = search.value;
    small = async () => {
      const ids = await files.list(LIST_ROUTE, ID_INDEX_PARTITION);
      if (ids === null) throw new SnapshotFormatError('missing identifier index');
      const page = await composePage(ids, {
        start: (k) => compareKeys(k, [value, ''], ['asc', 'asc']) >= 0,
        stop: (k) => k[0] !== value,
        limit: SMALL_SET_MAX, // values are unique per scheme: a handful of items
      });
      return page.items as ParticipantListItem[];
    };
  } else if (rarest !== null && rarest <= smallMax) {
    const l = rarestList;
    small = () => readAll(l);
  } else {
    let bestDim: PostingDimension | null = null;
    for (const [d, n] of postingTotals) if (n <= smallMax && (bestDim === null || n < postingTotals.get(bestDim)!)) bestDim = d;
    if (bestDim !== null) {
      const open = postingLists.get(bestDim)!;
      small = async () => (await Promise.all((await open()).map(readAll))).flat();
    }
  }

  if (small !== null) {
    const all: Keyed[] = (await small()).filter((i) => itemMatches(i, p, search)).map((item) => ({ item, key: listKey(order, item) }));
    all.sort((a, b) => compareKeys(a.key, b.key, dirs));
    count = all.length;
    const rest = all.filter((e) => afterCursor(e.key, p.cursor, dirs));
    const pageRows = rest.slice(0, p.limit);
    items = pageRows.map((e) => e.item);
    keys = pageRows.map((e) => e.key);
    more = rest.length > p.limit;
  } else {
    // A walk in list order: merged posting lists of the most selective dimension (default order only),
    // or the main list of the order, skipping chunks whose facet counts rule the filters out.
    const source = async function* (): AsyncGenerator<Keyed> {
      const posting = [...postingTotals].sort((a, b) => a[1] - b[1])[0];
      if (p.sort === DEFAULT_SORT && posting !== undefined) {
        yield* merge(await postingLists.get(posting[0])!(), dirs, p.cursor);
        return;
      }
      const facetDims = activeDimensions(p).filter((d) => (MAIN_FACET_FIELDS as readonly string[]).includes(d));
      const skip = (e: IndexEntry): boolean => facetDims.some((d) => e.counts?.[d] !== undefined && sumCounts(e.counts[d], acceptedValues(p, d)) === 0);
      const start = p.cursor === undefined ? undefined : (k: SortKey) => compareKeys(k, p.cursor!.key, dirs) > 0;
      for await (const { item, key } of main.scan({ start, skip })) yield { item: item as ParticipantListItem, key };
    };
    items = [];
    keys = [];
    more = false;
    for await (const e of source()) {
      if (!itemMatches(e.item, p, search)) continue;
      if (items.length === p.limit) {
        more = true;
        break;
      }
      items.push(e.item);
      keys.push(e.key);
    }
    if (mode === 'facet') {
      const d = activeDimensions(p)[0]!;
      count = (MAIN_FACET_FIELDS as readonly string[]).includes(d) ? sumCounts(main.root.counts?.[d], acceptedValues(p, d)) : postingTotals.get(d as PostingDimension)!;
    }
  }

  let meta;
  if (first) {
    const stats = await files.json<ParticipantStats>(exactFilePath(['v1', 'stats', 'participants']));
    if (stats === null) throw new SnapshotFormatError('missing v1/stats/participants.json');
    const facets: Record<string, FacetBucket[]> = stats.facets;
    meta = listMeta(main.root.count, mode === 'set' || mode === 'facet' ? count : null, facets);
  }
  return ok(listPage(p.sort, items, keys, more, meta));
}

const composeList: ComposeFn = (params: Params, ctx) => withFiles(ctx, (files) => composeListWith(files, listParamsOf(params)));

export const PARTICIPANT_COMPOSERS: Record<string, ComposeFn> = {
  [LIST_ROUTE]: composeList,
  [DETAIL_ROUTE]: composeDetail,
  [EVENTS_ROUTE]: perParticipant(EVENTS_ROUTE),
  [HISTORY_ROUTE]: perParticipant(HISTORY_ROUTE),
  [STATS_ROUTE]: composeStats,
};
