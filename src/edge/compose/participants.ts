// The shim's participants family: the same answers as the oracle (src/api/query/participants.ts), from
// snapshot files only (docs/snapshot-format.md "Participants"). Edge-safe: no Node imports, no DB.
//
// Reads per request:
// - detail: the participant's record (src/api/participant-record.ts), one file; unknown: 404;
// - events / history: the record (one file, 404 without it); a null page is the empty page; an answer
//   lying within the record's first page (the whole list when its next_cursor is null, else at least
//   `limit` items after the cursor) is paged from it; any other, the participant's stored list (root,
//   index nodes, chunks). A snapshot built before the record is read as before (legacy below);
// - stats, and the list at default parameters: one exact file;
// - the list: see composeListWith below (candidate sets of at most SMALL_SET_MAX items are read whole
//   and paged in memory; otherwise a window of WALK_WINDOW items of one source list in the order:
//   the main list, or in the default order a single-valued posting list or the rarest trigram's list).
import { compareKeys, type SortKey } from '../../api/keys.js';
import { LIMIT_DEFAULT } from '../../api/params.js';
import {
  acceptedValues,
  activeDimensions,
  afterCursor,
  classifySearch,
  DEFAULT_SORT,
  DETAIL_ROUTE,
  dirsOf,
  EVENTS_ROUTE,
  expandParticipant,
  filterCountMode,
  HISTORY_ROUTE,
  ID_INDEX_PARTITION,
  LIST_ROUTE,
  listMeta,
  listOrder,
  listPage,
  listParamsOf,
  MAIN_FACET_FIELDS,
  mainPartition,
  PageCollector,
  planList,
  plannedPostingDimensions,
  postingPartition,
  setPage,
  simplePage,
  SMALL_SET_MAX,
  STATS_ROUTE,
  searchTrigrams,
  trigramPartition,
  type ListParams,
  type PostingDimension,
  type RarestTrigram,
  type Search,
  type StoredParticipant,
} from '../../api/participants-shared.js';
import { exactFilePath, listRootPath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { orderOf, ROUTES, sortKeyOf, type OrderSpec } from '../../api/routes.js';
import type { CursorPosition } from '../../api/cursor.js';
import type { FacetBucket, ParticipantListItem, ParticipantStats, ParticipantView } from '../../api/schemas/index.js';
import { isParticipantRecord, RECORD_PAGE, recordPath, type ParticipantRecord, type RecordPage } from '../../api/participant-record.js';
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

/**
 * A participant's record, or null when the participant is unknown. A snapshot built before the record
 * holds the ParticipantView itself at that path and each non-empty first page in a file of its own
 * (`v1/participants/<id>/events.json`, `…/history.json`): read as a record whose pages are read on
 * demand, so that this shim answers such a snapshot too and can be deployed before a snapshot with
 * records is published. That legacy path can go once no snapshot without records is served.
 */
async function recordOf(files: Files, id: string): Promise<{ record: ParticipantRecord; legacy: boolean } | null> {
  const body = await files.json<unknown>(recordPath(id));
  if (body === null) return null;
  if (isParticipantRecord(body)) return { record: body, legacy: false };
  return { record: { participant: body as ParticipantView, history: null, events: null }, legacy: true };
}

const composeDetail: ComposeFn = (params, ctx) =>
  withFiles(ctx, async (files) => {
    const id = params.id as string;
    const r = await recordOf(files, id);
    return r === null ? notFoundOf('participant', id) : ok(r.record.participant);
  });

const composeStats: ComposeFn = (_params, ctx) =>
  withFiles(ctx, async (files) => {
    const body = await files.json<ParticipantStats>(exactFilePath(['v1', 'stats', 'participants']));
    if (body === null) throw new SnapshotFormatError('missing v1/stats/participants.json');
    return ok(body);
  });

// ---------------------------------------------------------------------------------------------
// A participant's events and history

/** The page after `cursor` from a participant's stored list (used when the list exceeds one default page). */
export async function pageFromStoredList(
  read: ReadFile,
  route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE,
  id: string,
  cursor: CursorPosition | undefined,
  limit: number,
): Promise<{ page: RecordPage; reader: ListReader }> {
  const list = await ListReader.open(read, listRootPath(route, [id]));
  if (list === null) throw new SnapshotFormatError(`missing list ${route} of ${id}`);
  const dirs = list.root.dirs;
  const pg = await composePage(list, { start: cursor === undefined ? undefined : (k) => compareKeys(k, cursor.key, dirs) > 0, limit });
  return { page: simplePage(route, [id], pg.items as Array<Record<string, unknown>>, pg.keys, pg.more), reader: list };
}

function perParticipant(route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE): ComposeFn {
  const order = orderOf(ROUTES[route].list!, {});
  const dirs = dirsOf(order);
  const member = RECORD_PAGE[route];
  return (params, ctx) =>
    withFiles(ctx, async (files) => {
      const id = params.id as string;
      const limit = params.limit as number;
      const cursor = params.cursor as CursorPosition | undefined;
      const r = await recordOf(files, id);
      if (r === null) return notFoundOf('participant', id);
      // The first page at default parameters; null: the list is empty, the empty page for any limit and cursor.
      const first = r.legacy ? await files.json<RecordPage>(exactFilePath(['v1', 'participants', id, member])) : r.record[member];
      if (first === null) return ok(simplePage(route, [id], [], [], false));
      // The first page is the list's first items: those after the cursor in it begin the answer. It
      // answers alone when it holds the whole list, or `limit` of them (then more follow).
      const whole = first.next_cursor === null;
      const rest = first.items.map((item) => ({ item, key: sortKeyOf(order, item) })).filter((e) => afterCursor(e.key, cursor, dirs));
      if (whole || rest.length >= limit) {
        const pageItems = rest.slice(0, limit);
        return ok(simplePage(route, [id], pageItems.map((e) => e.item), pageItems.map((e) => e.key), rest.length > limit || !whole));
      }
      const { page, reader } = await pageFromStoredList(files.read, route, id, cursor, limit);
      ctx.stats.chunks += reader.stats.chunks;
      return ok(page);
    });
}

// ---------------------------------------------------------------------------------------------
// The participant list

/** Every item of a list (a small candidate set). */
async function readAll(list: ListReader | null): Promise<ParticipantListItem[]> {
  const out: ParticipantListItem[] = [];
  if (list === null) return out;
  for await (const { item } of list.scan()) out.push(expandParticipant(item as StoredParticipant));
  return out;
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
  const main = await files.list(LIST_ROUTE, mainPartition(p.sort));
  if (main === null) throw new SnapshotFormatError(`missing list ${LIST_ROUTE} ${p.sort}`);

  // Sizes of the candidate sources: posting dimensions of at most POSTING_VALUES_MAX values (country and
  // scheme from the main root's counts, smp and ap from their posting roots) and the rarest of at most
  // SEARCH_TRIGRAMS_MAX trigrams of a name search.
  const postingTotals = new Map<PostingDimension, number>();
  const postingLists = new Map<PostingDimension, () => Promise<ListReader[]>>();
  for (const d of plannedPostingDimensions(p)) {
    const values = acceptedValues(p, d);
    const open = async (): Promise<ListReader[]> => (await Promise.all(values.map((v) => files.list(LIST_ROUTE, postingPartition(d, v))))).filter((l): l is ListReader => l !== null);
    postingLists.set(d, open);
    if ((MAIN_FACET_FIELDS as readonly string[]).includes(d)) postingTotals.set(d, sumCounts(main.root.counts?.[d], values));
    else postingTotals.set(d, (await open()).reduce((n, l) => n + l.root.count, 0));
  }
  let rarest: RarestTrigram | null = null;
  let rarestList: ListReader | null = null;
  if (search !== null && search.kind === 'name') {
    const tris = searchTrigrams(search.text);
    const roots = await Promise.all(tris.map((t) => files.list(LIST_ROUTE, trigramPartition(t))));
    for (let i = 0; i < tris.length; i++) {
      const n = roots[i]?.root.count ?? 0;
      if (rarest === null || n < rarest.count) {
        rarest = { trigram: tris[i]!, count: n };
        rarestList = roots[i] ?? null;
      }
    }
  }
  const plan = planList(p, search, rarest, postingTotals);
  const mode = filterCountMode(p, search, plan);

  let items: ParticipantListItem[];
  let nextKey: SortKey | null;
  let count: number | null = null;
  if (plan.kind === 'set') {
    let candidates: ParticipantListItem[];
    if (plan.source === 'ids') {
      const value = (search as Search & { value: string }).value;
      const ids = await files.list(LIST_ROUTE, ID_INDEX_PARTITION);
      if (ids === null) throw new SnapshotFormatError('missing identifier index');
      const page = await composePage(ids, {
        start: (k) => compareKeys(k, [value, ''], ['asc', 'asc']) >= 0,
        stop: (k) => k[0] !== value,
        limit: SMALL_SET_MAX, // values are unique per scheme: a handful of items
      });
      candidates = (page.items as StoredParticipant[]).map(expandParticipant);
    } else if (plan.source === 'trigram') candidates = await readAll(rarestList);
    else candidates = (await Promise.all((await postingLists.get(plan.dim)!()).map(readAll))).flat();
    const page = setPage(candidates, p, search, order);
    ({ items, nextKey, count } = page);
  } else {
    // A window of the source list in the requested order (PageCollector).
    let source: ListReader | null;
    if (plan.source === 'main') source = main;
    else if (plan.source === 'trigram') source = rarestList;
    else source = await files.list(LIST_ROUTE, postingPartition(plan.dim, plan.value));
    const collector = new PageCollector(p, search);
    if (source !== null) {
      const start = p.cursor === undefined ? undefined : (k: SortKey) => compareKeys(k, p.cursor!.key, dirs) > 0;
      for await (const { item, key } of source.scan({ start })) if (!collector.offer(expandParticipant(item as StoredParticipant), key)) break;
    }
    items = collector.items;
    nextKey = collector.nextKey;
    if (mode === 'facet') {
      const d = activeDimensions(p)[0]!;
      count = (MAIN_FACET_FIELDS as readonly string[]).includes(d) ? sumCounts(main.root.counts?.[d], acceptedValues(p, d)) : postingTotals.get(d as PostingDimension)!;
    }
  }

  let meta;
  if (p.cursor === undefined) {
    const stats = await files.json<ParticipantStats>(exactFilePath(['v1', 'stats', 'participants']));
    if (stats === null) throw new SnapshotFormatError('missing v1/stats/participants.json');
    const facets: Record<string, FacetBucket[]> = stats.facets;
    meta = listMeta(main.root.count, mode === 'set' || mode === 'facet' ? count : null, facets);
  }
  return ok(listPage(p.sort, items, nextKey, meta));
}

const composeList: ComposeFn = (params: Params, ctx) => withFiles(ctx, (files) => composeListWith(files, listParamsOf(params)));

export const PARTICIPANT_COMPOSERS: Record<string, ComposeFn> = {
  [LIST_ROUTE]: composeList,
  [DETAIL_ROUTE]: composeDetail,
  [EVENTS_ROUTE]: perParticipant(EVENTS_ROUTE),
  [HISTORY_ROUTE]: perParticipant(HISTORY_ROUTE),
  [STATS_ROUTE]: composeStats,
};
