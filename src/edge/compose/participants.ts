// The shim's participants family: the same answers as the oracle (src/api/participants/query.ts), from
// snapshot files only. Edge-safe. What each request reads (the record, a participant's stored lists,
// the list's candidate sets and walks) is stated once in docs/snapshot-format.md, "Participants".
import { compareKeys, keysAfter, type Direction, type SortKey } from '../../api/sort-keys.js';
import { acceptedValues, activeDimensions, DEFAULT_SORT, hasPostingList, LIST_CHUNK_MIN_ITEMS, postingSource, CELL_KEY_FIELDS, CELLS_DIRS, CELLS_PARTITION, CHUNK_ITEMS_ESTIMATE, classifySearch, itemMatches, POSTING_VALUES_MAX, DETAIL_ROUTE, EVENTS_ROUTE, expandParticipant, facetAccepts, HISTORY_ROUTE, ID_INDEX_PARTITION, LIST_ROUTE, listMeta, listOrder, listPage, MAIN_FACET_FIELDS, mainPartition, mainSource, metaMode, nullableFields, PageCollector, planList, plannedPostingDimensions, postingPartition, setPage, SMALL_SET_MAX, searchTrigrams, gramCount, trigramPartition, trigramSource, TRIGRAM_TABLE_MIN, TRIGRAMS_PATH, isGramCountTable, isShortGram, isTrigramCounts, unregisteredGramPartition, unregisteredSearchGrams, UNREGISTERED_GRAMS_FORMAT, UNREGISTERED_GRAMS_PATH, type ListParams, type ParticipantSort, type PostingDimension, type RarestTrigram, type Search, type StoredParticipant } from '../../api/participants/plan.js';
import { notFoundOf, ok } from '../../api/result.js';
import { orderDirs } from '../../api/routes/request.js';
import type { OrderSpec } from '../../api/routes/types.js';
import type { ParticipantListItem, ParticipantView } from '../../api/schemas/index.js';
import { CUBE_JSON_PATH, CUBE_PATH, cellRuns, cubeCounts, cubeTotal, decodeCube, FacetCounter, type CellRun, type FacetCube, type FacetDimension, isFacetCube, isFacetVector, SCHEME_LABELS_PATH, vectorPath } from '../../api/participants/facets.js';
import { gramCellShard, gramCellsOf, gramCellsPath, gramCubeCounts, gramDictPath, gramDictShard, gramListPath, isGramDict, isGramList, lookupGram, type GramCells, type GramLookup } from '../../api/participants/grams.js';
import { isParticipantRecord, isRecordPack, RECORD_PAGE, recordPackOf, recordPackPath, recordPath, type ParticipantRecord, type RecordPage } from '../../api/participants/record.js';
import { composePage, firstTrue, ListReader, scanReverse, SnapshotFormatError, type ScanOptions } from '../list-reader.js';
import { facetCount, type IndexEntry } from '../list-format.js';
import type { Source } from './source.js';
import { listComposer, type StoredList } from './scan.js';
import type { ComposeFn, Composers } from './types.js';

// ---------------------------------------------------------------------------------------------
// Single resources

/**
 * A participant's record, or null when the participant is unknown: from its record pack. Where the
 * pack is absent (no participant hashes to it, or a snapshot built before record packs), the
 * participant's own path: a snapshot of that time holds the record there, and one built before records
 * holds the ParticipantView itself, with each non-empty first page in a file of its own
 * (`v1/participants/<id>/events.json`, `…/history.json`), read on demand. So this shim answers the
 * snapshots of each format and can be deployed before a snapshot of the next is published; the
 * fallback can go once no snapshot without record packs is served.
 */
async function recordOf(src: Source, id: string): Promise<{ record: ParticipantRecord; legacy: boolean } | null> {
  const pack = await src.json<unknown>(recordPackPath(recordPackOf(id)));
  if (pack !== null) {
    if (!isRecordPack(pack)) throw new SnapshotFormatError(`${recordPackPath(recordPackOf(id))} is not a record pack`);
    return Object.hasOwn(pack.records, id) ? { record: pack.records[id]!, legacy: false } : null;
  }
  const body = await src.json<unknown>(recordPath(id));
  if (body === null) return null;
  if (isParticipantRecord(body)) return { record: body, legacy: false };
  return { record: { participant: body as ParticipantView, history: null, events: null }, legacy: true };
}

const composeDetail: ComposeFn<'participants.detail'> = async ({ id }, src) => {
  const r = await recordOf(src, id);
  return r === null ? notFoundOf('participant', id) : ok(r.record.participant);
};

// ---------------------------------------------------------------------------------------------
// A participant's events and history

/**
 * A participant's events and history: stored as published; the first page at default parameters is
 * in the participant's record (src/api/participants/record.ts), so most requests read that one file.
 */
function perParticipant(route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE): StoredList<{ id: string }> {
  const member = RECORD_PAGE[route];
  return {
    facet: () => [],
    counted: [],
    firstPage: async ({ id }, src) => {
      const r = await recordOf(src, id);
      if (r === null) return undefined;
      return r.legacy ? await src.exact<RecordPage>(['v1', 'participants', id, member]) : r.record[member];
    },
  };
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

/** What a request derives from the facet cube, each at most once: the cube, the filter's runs of the cell list. */
type CubeMemo = { cube?: FacetCube; runs?: { runs: CellRun[]; chunks: number }; gramCells?: ReadonlySet<number> };
async function readCube(src: Source, memo: CubeMemo): Promise<FacetCube> {
  const cube = await cubeIfAny(src, memo);
  if (cube === null) throw new SnapshotFormatError(`missing or malformed ${CUBE_PATH}`);
  return cube;
}

/**
 * The facet cube, or null in a snapshot without one (readCube: the same file, read once). A snapshot
 * written before the binary cube has it as JSON (CUBE_JSON_PATH).
 */
async function cubeIfAny(src: Source, memo: CubeMemo): Promise<FacetCube | null> {
  if (memo.cube !== undefined) return memo.cube;
  const bytes = await src.read(CUBE_PATH);
  if (bytes !== null) {
    const cube = decodeCube(bytes);
    if (cube === null) throw new SnapshotFormatError(`malformed ${CUBE_PATH}`);
    return (memo.cube = cube);
  }
  const cube = await src.json<unknown>(CUBE_JSON_PATH);
  return isFacetCube(cube) ? (memo.cube = cube) : null;
}

/** The filter's runs of the cell list (cellRuns) and the chunks they span (runsChunks). */
async function filterRuns(p: ListParams, src: Source, memo: CubeMemo): Promise<{ runs: CellRun[]; chunks: number }> {
  if (memo.runs !== undefined) return memo.runs;
  // A frequent gram's search: only the cells holding its participants.
  const only = memo.gramCells;
  const runs = cellRuns(await readCube(src, memo), facetAccepts(p), only === undefined ? undefined : (cell) => only.has(cell));
  return (memo.runs = { runs, chunks: runsChunks(runs) });
}

/**
 * The count and facets of the filter matches (no search): a filter on one dimension sums its accepted
 * values' vectors, any other the facet cube's cells (src/api/participants/facets.ts).
 */
async function cubeCounter(p: ListParams, src: Source, memo: CubeMemo): Promise<FacetCounter> {
  const dims = activeDimensions(p);
  // No filter: every participant, the sum of both `registered` values' vectors (two files of a few
  // dozen KB instead of the cube).
  const dim: FacetDimension | undefined = dims.length === 0 ? 'registered' : dims.length === 1 ? dims[0] : undefined;
  const values = dims.length === 0 ? ['true', 'false'] : dims.length === 1 ? acceptedValues(p, dims[0]!) : [];
  if (dim !== undefined && values.length <= POSTING_VALUES_MAX) {
    // One dimension: the sum of its accepted values' vectors (a value without one has no participant).
    const counter = new FacetCounter();
    for (const v of await Promise.all(values.map((value) => src.json<unknown>(vectorPath(dim, value))))) {
      if (v === null) continue;
      if (!isFacetVector(v)) throw new SnapshotFormatError(`malformed facet vector of ${dim}`);
      counter.addVector(v);
    }
    return counter;
  }
  return cubeCounts(await readCube(src, memo), facetAccepts(p));
}

/**
 * Whether a filtered walk had better read the filter matches' runs of the cell list whole: the
 * estimated chunks of each (a walk: `limit` + 1 matches at the matches' density along its source, as
 * if uniform; the runs: the chunks their items span in the cell list, and a seek each), the runs when
 * fewer and at most CELL_CHUNKS_MAX. Only the reads differ: either way the page is the first `limit`
 * matches after the cursor.
 */
async function cellRunsToRead(p: ListParams, src: Source, memo: CubeMemo, total: number, matches: number): Promise<CellRun[] | null> {
  const walkChunks = ((p.limit + 1) * total) / Math.max(1, matches) / CHUNK_ITEMS_ESTIMATE;
  if (walkChunks <= WALK_CHUNKS_CHEAP) return null;
  const { runs, chunks } = await filterRuns(p, src, memo);
  return chunks <= CELL_CHUNKS_MAX && chunks < walkChunks ? runs : null;
}

/** The participants holding a gram the grams index lists (a small set). */
async function readGramList(src: Source, gram: string): Promise<ParticipantListItem[]> {
  const list = await src.json<unknown>(gramListPath(gram));
  if (!isGramList(list)) throw new SnapshotFormatError(`missing or malformed ${gramListPath(gram)}`);
  return list.items.map(expandParticipant);
}

/** The chunks runs of the cell list span (estimated from their offsets), and a seek into each. */
function runsChunks(runs: readonly CellRun[]): number {
  let chunks = 0;
  let lastChunk = -1;
  for (const r of runs) {
    const from = Math.max(Math.floor(r.offset / CHUNK_ITEMS_ESTIMATE), lastChunk + 1);
    lastChunk = Math.floor((r.offset + r.count - 1) / CHUNK_ITEMS_ESTIMATE);
    chunks += Math.max(0, lastChunk - from + 1) + 1;
  }
  return chunks;
}

/**
 * The cheapest list that holds every match of a walk, to read whole instead when the walk turns out
 * sparse (the walk's fallback): the rarest trigram's list of a name search, the filter's runs of the
 * cell list; with its estimated chunks. Null when there is neither.
 */
async function walkFallback(
  p: ListParams,
  search: Search | null,
  src: Source,
  memo: CubeMemo,
  rarest: { count: number; list: ListReader } | null,
): Promise<{ chunks: number; read: () => Promise<ParticipantListItem[]> } | null> {
  let best: { chunks: number; read: () => Promise<ParticipantListItem[]> } | null = null;
  if (rarest !== null) best = { chunks: Math.ceil(rarest.count / CHUNK_ITEMS_ESTIMATE) + 1, read: () => readAll(rarest.list) };
  if (activeDimensions(p).length > 0) {
    const { runs, chunks } = await filterRuns(p, src, memo);
    if (best === null || chunks < best.chunks) {
      const cells = await src.list(LIST_ROUTE, CELLS_PARTITION);
      if (cells !== null) best = { chunks, read: async () => (runs.length === 0 ? [] : readRuns(cells, runs, p, search)) };
    }
  }
  return best;
}

/**
 * The most items of an unregistered or short name list a page reads whole (a small set): about two
 * chunks (LIST_CHUNK_MIN_ITEMS). `q=vi&registered=false` (713 of them at `peppol`) read 6 chunks a
 * page whole, 11 files; walked, it reads the chunk or two of its page.
 */
const NAME_LIST_SET_MAX = 2 * LIST_CHUNK_MIN_ITEMS;

/** Chunks a walk reads before it looks for a fallback (dense walks never do). */
const FALLBACK_CHECK_CHUNKS = 8;

/**
 * Most chunks the runs of a combination may span (as estimated) for a page to read them: the runs are
 * read whole on every page, so a combination of more matches walks (measured at `peppol`: a rare
 * country's 7,000 participants span 52 chunks, 2.3 MiB a page, where its walk read 17 files; a pair
 * of 89 matches estimated at 10 chunks read 8, where its walk read 99 files).
 */
const CELL_CHUNKS_MAX = 16;

/** A walk estimated at this many chunks or fewer is walked without weighing the cell list (no cube read). */
const WALK_CHUNKS_CHEAP = 4;

/** Every item of the cell list within the runs (and a few beside them in the chunks read) that matches the request. */
async function readRuns(list: ListReader, runs: readonly CellRun[], p: ListParams, search: Search | null): Promise<ParticipantListItem[]> {
  const dirs = CELLS_DIRS.slice(0, CELL_KEY_FIELDS);
  const prefix = (k: SortKey): SortKey => k.slice(0, CELL_KEY_FIELDS);
  const cmp = (a: SortKey, b: SortKey): number => compareKeys(a, b, dirs);
  // An entry is read when its key range meets a run: the first run ending at or after its first key starts at or before its last.
  const overlaps = (first: SortKey, last: SortKey): boolean => {
    const i = firstTrue(runs.length, (x) => cmp(runs[x]!.last, first) >= 0);
    return i < runs.length && cmp(runs[i]!.first, last) <= 0;
  };
  const end = runs[runs.length - 1]!.last;
  const out: ParticipantListItem[] = [];
  for await (const { item, key } of list.scan({ start: (k) => cmp(prefix(k), runs[0]!.first) >= 0, skip: (e) => !overlaps(prefix(e.first), prefix(e.last)) })) {
    if (cmp(prefix(key), end) > 0) break;
    const it = expandParticipant(item as StoredParticipant);
    if (itemMatches(it, p, search)) out.push(it);
  }
  return out;
}

/**
 * The index entries a walk of a list that counts facets per entry passes over (the main lists and the
 * posting lists stored in other orders: ORDERED_POSTINGS_COUNTED): those whose counts hold none of the values an
 * active counted facet (MAIN_FACET_FIELDS) accepts. With the counts of the filter matches (`counter`)
 * every counted facet also accepts only the values the matches hold, a null country included (an
 * entry's null countries are its items less its counted countries), so a filter on smp or ap (which
 * the lists do not count) passes over the entries without its participants' countries, schemes,
 * registrations or provenances. An entry without per-entry counts (a list written before they were
 * kept) is read.
 */
function mainSkip(p: ListParams, counter: FacetCounter | null): ((e: IndexEntry) => boolean) | undefined {
  const wanted = new Map<string, { values: readonly string[]; nulls: boolean }>();
  for (const d of activeDimensions(p)) if ((MAIN_FACET_FIELDS as readonly string[]).includes(d)) wanted.set(d, { values: acceptedValues(p, d), nulls: false });
  if (counter !== null) {
    const buckets = counter.buckets();
    for (const d of MAIN_FACET_FIELDS) {
      const held = buckets[d];
      const nulls = held.reduce((n, b) => n + b.count, 0) < counter.total;
      const values = held.map((b) => b.value);
      const before = wanted.get(d);
      wanted.set(d, before === undefined ? { values, nulls } : { values: before.values.filter((v) => values.includes(v)), nulls: false });
    }
  }
  if (wanted.size === 0) return undefined;
  return (e) => {
    if (e.counts === undefined) return false;
    for (const [d, w] of wanted) {
      if (!Object.hasOwn(e.counts, d)) continue; // not counted here: rules nothing out
      let n = 0;
      for (const v of w.values) n += facetCount(e.counts, d, v);
      if (w.nulls) n += e.count - Object.values(e.counts[d]!).reduce((a, b) => a + b, 0);
      if (n === 0) return true;
    }
    return false;
  };
}

/**
 * At most how many items of index entries (a list's root) pass the request's filters on the facets the
 * entries count (MAIN_FACET_FIELDS): per entry the least, over those filters, of its items holding an
 * accepted value. Null without such a filter, or when an entry counts nothing (a list written before).
 */
function passingAtMost(p: ListParams, entries: readonly IndexEntry[]): number | null {
  const dims = activeDimensions(p).filter((d) => (MAIN_FACET_FIELDS as readonly string[]).includes(d));
  if (dims.length === 0) return null;
  let total = 0;
  for (const e of entries) {
    if (e.counts === undefined) return null;
    let least = e.count;
    for (const d of dims) {
      if (!Object.hasOwn(e.counts, d)) continue;
      let n = 0;
      for (const v of acceptedValues(p, d)) n += facetCount(e.counts, d, v);
      least = Math.min(least, n);
    }
    total += least;
  }
  return total;
}

/**
 * The items of a list whose first key field is `value`, after `after` in the order of the remaining
 * fields, with their keys less the first field (a country's range of a country-order main list, read
 * in the name order of the same direction).
 */
async function* scanRange(list: ListReader, value: string, after: SortKey | undefined, skip: ScanOptions['skip']): AsyncGenerator<{ key: SortKey; item: unknown }> {
  const dirs = list.root.dirs;
  const rest = keysAfter(dirs.slice(1), after);
  const field = (k: SortKey): number => compareKeys(k.slice(0, 1), [value], dirs.slice(0, 1));
  const start = (k: SortKey): boolean => {
    const c = field(k);
    return c !== 0 ? c > 0 : rest(k.slice(1));
  };
  // The entries past the range are passed over unread: the range's end is known without reading the
  // chunk after it.
  const past = (e: IndexEntry): boolean => field(e.first) > 0 || (skip?.(e) ?? false);
  for await (const { key, item } of list.scan({ start, skip: past })) {
    if (key[0] !== value) return;
    yield { key: key.slice(1), item };
  }
}

/** scanRange in the reversed order of the list's remaining fields (the name order opposite the stored one). */
async function* scanRangeReversed(list: ListReader, value: string, nullable: readonly boolean[], after: SortKey | undefined, skip: ScanOptions['skip']): AsyncGenerator<{ key: SortKey; item: unknown }> {
  for await (const { key, item } of scanReverse(list, { nullable, prefix: [value], after: after === undefined ? undefined : [value, ...after], skip })) yield { key: key.slice(1), item };
}

/** Whether the lists stored in `sort` are ordered by country first (the country orders). */
const byCountry = (sort: ParticipantSort): boolean => listOrder(sort).fields[0]?.field === 'country';

/**
 * A list in a country order (first key field: the country) walked for the accepted countries only: each
 * country's range in the walk's order, from the cursor's, reached by a descent instead of reading the
 * other countries' chunks or passing over their index entries. Full keys.
 */
async function* scanCountries(
  list: ListReader,
  countries: readonly string[],
  backward: boolean,
  nullable: readonly boolean[],
  after: SortKey | undefined,
  skip: ScanOptions['skip'],
): AsyncGenerator<{ key: SortKey; item: unknown }> {
  // The stored order's direction of the country field, turned when the list is read reversed.
  const dir: Direction = list.root.dirs[0] === 'asc' ? (backward ? 'desc' : 'asc') : backward ? 'asc' : 'desc';
  const ordered = [...countries].sort((a, b) => compareKeys([a], [b], [dir]));
  for (const c of ordered) {
    if (after !== undefined && compareKeys([c], [after[0] ?? null], [dir]) < 0) continue;
    const rest = after !== undefined && after[0] === c ? after.slice(1) : undefined;
    const range = backward ? scanRangeReversed(list, c, nullable, rest, skip) : scanRange(list, c, rest, skip);
    for await (const { key, item } of range) yield { key: [c, ...key], item };
  }
}

/**
 * Several scans of lists in one order merged into that order (each yields its items in it; a
 * participant is in one of them: they are one dimension's values). Each list is read only as far as
 * the merged items reach.
 */
async function* mergeScans(scans: Array<AsyncGenerator<{ key: SortKey; item: unknown }>>, dirs: readonly Direction[]): AsyncGenerator<{ key: SortKey; item: unknown }> {
  const nextOf = async (s: AsyncGenerator<{ key: SortKey; item: unknown }>): Promise<{ key: SortKey; item: unknown } | null> => {
    const r = await s.next();
    return r.done === true ? null : r.value;
  };
  const heads = await Promise.all(scans.map(nextOf));
  for (;;) {
    let at = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (h != null && (at < 0 || compareKeys(h.key, heads[at]!.key, dirs) < 0)) at = i;
    }
    if (at < 0) return;
    yield heads[at]!;
    heads[at] = await nextOf(scans[at]!);
  }
}

/** A list request other than the default one (its exact file answers that: src/edge/compose/index.ts). */
const composeList: ComposeFn<'participants.list'> = async (p, src) => {
  const order: OrderSpec = listOrder(p.sort);
  const dirs = orderDirs(order);
  const search: Search | null = p.q === undefined ? null : classifySearch(p.q);
  // first_seen.asc reads the default order's main list backward (MAIN_LIST_SORTS).
  const mainAt = mainSource(p.sort);
  // Read when the page needs it: a walk of it, or the sizes of the filter's values when the facet cube
  // does not give them.
  let mainList: ListReader | undefined;
  /** The main list of a stored order (the requested order's by default; the Source opens each once). */
  const mainOf = async (sort: ParticipantSort = mainAt.sort): Promise<ListReader> => {
    const l = await src.list(LIST_ROUTE, mainPartition(sort));
    if (l === null) throw new SnapshotFormatError(`missing list ${LIST_ROUTE} ${sort}`);
    if (sort === mainAt.sort) mainList = l;
    return l;
  };

  // Sizes of the candidate sources: posting dimensions of at most POSTING_VALUES_MAX values (one value
  // from the root of its own list in the requested order, or of the list whose range it is; several
  // values of country, scheme or registered from the main root's counts; smp and ap from their posting
  // roots) and the rarest of at most SEARCH_TRIGRAMS_MAX trigrams of a name search. So a page after the
  // first of a walk of one value's list reads that list only (the first page reads the main root for
  // its total_count).
  const postingTotals = new Map<PostingDimension, number>();
  const postingLists = new Map<PostingDimension, () => Promise<ListReader[]>>();
  const memo: CubeMemo = {};
  let rarest: RarestTrigram | null = null;
  // The rarest trigram's list in the order a walk of the requested one reads (trigramSource), or the
  // default order's (a snapshot written before the lists in TRIGRAM_ORDERS): the same participants.
  let rarestList: ListReader | null = null;
  let rarestSort: ParticipantSort = DEFAULT_SORT;
  // A name list of a gram (trigram or short) in that order, else the default order's.
  const namesInOrder = trigramSource(p.sort)?.sort ?? DEFAULT_SORT;
  const openNameList = async (g: string): Promise<{ list: ListReader | null; sort: ParticipantSort }> => {
    const l = namesInOrder === DEFAULT_SORT ? null : await src.list(LIST_ROUTE, trigramPartition(g, namesInOrder));
    return l !== null ? { list: l, sort: namesInOrder } : { list: await src.list(LIST_ROUTE, trigramPartition(g)), sort: DEFAULT_SORT };
  };
  // With `registered=false`, the unregistered participants' name lists (where their table says the
  // snapshot has them): the rarest of the search's grams there, and its list in the walk's order.
  const unregisteredGrams = search !== null && search.kind === 'name' && p.registered === false ? unregisteredSearchGrams(search.text) : [];
  const unregisteredTable = unregisteredGrams.length > 0 ? await src.json<unknown>(UNREGISTERED_GRAMS_PATH) : null;
  const unregisteredLists = isGramCountTable(unregisteredTable, UNREGISTERED_GRAMS_FORMAT);
  if (unregisteredLists) {
    let least = { trigram: unregisteredGrams[0]!, count: Infinity };
    for (const g of unregisteredGrams) {
      const n = gramCount(unregisteredTable, g);
      if (n < least.count) least = { trigram: g, count: n };
    }
    // Read whole up to two chunks or so; a larger list holds the matches densely (of a text of at
    // most three code points, exactly), and the grams index counts them (its cells, or the list of
    // an infrequent gram, one file): walked, a page reads the chunks of its items only.
    rarest = { ...least, setMax: NAME_LIST_SET_MAX };
    rarestSort = namesInOrder;
    if (least.count > 0) {
      const partition = unregisteredGramPartition(least.trigram, rarestSort);
      rarestList = await src.list(LIST_ROUTE, partition);
      if (rarestList === null) throw new SnapshotFormatError(`missing list ${LIST_ROUTE} ${partition.join('/')} that ${UNREGISTERED_GRAMS_PATH} counts`);
    }
  } else if (search !== null && search.kind === 'name' && isShortGram(search.text)) {
    // A text of one or two code points is the gram of a short name list, which holds its matches
    // exactly: its root in the walk's order, or the default order's. A snapshot written before these
    // lists has neither: the grams index plans it, as it did then (its list, or the main list walked).
    const { list, sort } = await openNameList(search.text);
    if (list !== null) {
      rarest = { trigram: search.text, count: list.root.count, setMax: NAME_LIST_SET_MAX };
      rarestList = list;
      rarestSort = sort;
    }
  } else if (search !== null && search.kind === 'name') {
    const tris = searchTrigrams(search.text);
    // Three trigrams or more: their sizes from the trigram table, then the rarest one's root only (a
    // snapshot without the table, written before it and the lists in TRIGRAM_ORDERS: every trigram's
    // root in the default order). Fewer: every trigram's root, in the requested order's lists.
    const short = tris.length < TRIGRAM_TABLE_MIN;
    const table = short ? null : await src.json<unknown>(TRIGRAMS_PATH);
    const counted = isTrigramCounts(table);
    const roots = counted ? [] : await Promise.all(tris.map(async (t) => (short ? openNameList(t) : { list: await src.list(LIST_ROUTE, trigramPartition(t)), sort: DEFAULT_SORT })));
    for (let i = 0; i < tris.length; i++) {
      const n = counted ? gramCount(table, tris[i]!) : (roots[i]?.list?.root.count ?? 0);
      if (rarest === null || n < rarest.count) {
        rarest = { trigram: tris[i]!, count: n };
        ({ list: rarestList, sort: rarestSort } = roots[i] ?? { list: null, sort: DEFAULT_SORT });
      }
    }
    if (counted && rarest !== null && rarest.count > 0) ({ list: rarestList, sort: rarestSort } = await openNameList(rarest.trigram));
  }
  // A combination of filters reads the facet cube anyway (its count, the walk weighed against the cell
  // list): the totals of its values come from the cube, not from the main root and the smp and ap
  // values' posting roots.
  // An unregistered name list holds a subset of the registered=false posting list: that list is no
  // source then, and its size is not read.
  const planned = plannedPostingDimensions(p).filter((d) => !(unregisteredLists && d === 'registered'));
  // So does the first page of a filtered name search with no small candidate set of its own: a frequent
  // text counts its matches in the cube's cells (gramCubeCounts), and otherwise the cube replaces the
  // roots it would read for its values' totals and its total_count (one file for two or more).
  const searchCube = p.cursor === undefined && search?.kind === 'name' && activeDimensions(p).length > 0 && (rarest === null || rarest.count > (rarest.setMax ?? SMALL_SET_MAX));
  const cube = (activeDimensions(p).length >= 2 && (search === null || search.kind === 'name')) || searchCube ? await cubeIfAny(src, memo) : null;
  for (const d of planned) {
    const values = acceptedValues(p, d);
    // The lists of the requested order where the dimension has them (the same items in another order;
    // a snapshot written before them has the default order's only).
    const at = postingSource(d, p.sort);
    const sort = at?.kind === 'posting' ? at.sort : DEFAULT_SORT;
    const openValue = async (v: string): Promise<ListReader | null> => (await src.list(LIST_ROUTE, postingPartition(d, v, sort))) ?? (sort === DEFAULT_SORT ? null : await src.list(LIST_ROUTE, postingPartition(d, v)));
    const open = async (): Promise<ListReader[]> => (await Promise.all(values.map(openValue))).filter((l): l is ListReader => l !== null);
    postingLists.set(d, open);
    // One value: the root of its own list in this order (which a walk of it reads), or of the country
    // order's main list whose range it is (a country in a name order).
    const one = values.length === 1 && hasPostingList(d, values[0]!) ? at?.kind : undefined;
    if (cube !== null) postingTotals.set(d, cubeTotal(cube, { [d]: values }));
    else if (one === 'posting' || !(MAIN_FACET_FIELDS as readonly string[]).includes(d)) postingTotals.set(d, (await open()).reduce((n, l) => n + l.root.count, 0));
    else postingTotals.set(d, sumCounts((await mainOf(one === 'range' ? at!.sort : undefined)).root.counts?.[d], values));
  }
  // A name search that would walk: the grams index says whether its text is a frequent gram (counted
  // per cell) or which gram's list holds every match (src/api/participants/grams.ts). A snapshot
  // without the index (written before it) walks the search uncounted, as it did then. A first page
  // reads the text's cell shard first: a frequent gram's cells are there (its count, and the cells its
  // matches are in), and then the dictionary is not read. A page after the first needs no count: it
  // reads the dictionary only (a few KB, where a cell shard is tens).
  let gram: GramLookup | null = null;
  let gramCells: GramCells | undefined;
  // Only a search that would walk: a small set (the rarest trigram's, a filter value's) counts its matches itself.
  const gramIndexed = search !== null && search.kind === 'name' && planList(p, search, rarest, postingTotals).kind === 'walk';
  let gramBytes: Uint8Array | null = null;
  if (gramIndexed && p.cursor === undefined) {
    const path = gramCellsPath(gramCellShard(search.text));
    gramBytes = await src.read(path);
    const cells = gramBytes === null ? undefined : gramCellsOf(gramBytes, search.text);
    if (cells === null) throw new SnapshotFormatError(`malformed ${path}`);
    if (cells !== undefined) {
      gram = { kind: 'frequent' };
      gramCells = cells;
      memo.gramCells = new Set(cells.cells);
    }
  }
  // Otherwise the dictionary (a first page: when the cell shard is there, so the index is). A page after
  // the first whose text is the gram of the list it would walk (a short name list, a trigram list, an
  // unregistered name list of a text of at most three code points) needs no lookup: that list holds
  // exactly its matches, and one of at most GRAM_THRESHOLD items is at most four chunks from the cursor.
  const exactList = rarestList !== null && search?.kind === 'name' && rarest?.trigram === search.text;
  if (gramIndexed && gram === null && ((p.cursor !== undefined && !exactList) || gramBytes !== null)) {
    const dict = await src.json<unknown>(gramDictPath(gramDictShard(search.text)));
    if (dict !== null) {
      if (!isGramDict(dict)) throw new SnapshotFormatError(`malformed ${gramDictPath(gramDictShard(search.text))}`);
      gram = lookupGram(dict, search.text);
      // A first page found the text in no cell shard: the dictionary may not call it frequent.
      if (gram.kind === 'frequent' && p.cursor === undefined) throw new SnapshotFormatError(`${gramCellsPath(gramCellShard(search.text))} does not count the frequent gram ${JSON.stringify(search.text)}`);
    }
  }
  let plan = planList(p, search, rarest, postingTotals, gram);
  // A name search with a filter on one value, walking that value's list: the rarest trigram's list in
  // this order may hold the matches in fewer chunks, where it counts the filter's facets per index
  // entry (TRIGRAM_ORDERS; the walk passes over the entries without them) and its root tells how many
  // entries hold candidates. The value's list holds all its participants, whatever their names.
  if (plan.kind === 'walk' && plan.source === 'posting' && rarest !== null && rarestList !== null && rarestSort === trigramSource(p.sort)?.sort) {
    const skip = mainSkip(p, null);
    const entries = rarestList.root.entries;
    if (skip !== undefined && entries.every((e) => e.counts !== undefined)) {
      const level0 = rarestList.root.level === 0;
      let chunks = 0;
      for (const e of entries) if (!skip(e)) chunks += level0 ? 1 : Math.ceil(e.count / CHUNK_ITEMS_ESTIMATE);
      if (chunks < Math.ceil(postingTotals.get(plan.dim)! / CHUNK_ITEMS_ESTIMATE)) plan = { kind: 'walk', source: 'trigram', trigram: rarest.trigram };
    }
  }

  // Several values of one posting dimension (at most POSTING_VALUES_MAX), each with a list of its own
  // in the requested order: where the walk would read the main list, it reads their lists merged in
  // that order, which hold the dimension's matches densely (the main list holds them among everyone:
  // a filter of three seats in a name order read 280 files at `peppol`). A snapshot without one of the
  // lists walks the main list.
  let merged: { dim: PostingDimension; lists: ListReader[]; stored: ParticipantSort; backward: boolean } | null = null;
  if (plan.kind === 'walk' && plan.source === 'main') {
    let best: PostingDimension | null = null;
    for (const [d, n] of postingTotals) {
      const values = acceptedValues(p, d);
      if (values.length > 1 && values.every((v) => hasPostingList(d, v)) && postingSource(d, p.sort)?.kind === 'posting' && (best === null || n < postingTotals.get(best)!)) best = d;
    }
    if (best !== null) {
      const at = postingSource(best, p.sort)!;
      const lists = await Promise.all(acceptedValues(p, best).map((v) => src.list(LIST_ROUTE, postingPartition(best, v, at.sort))));
      if (lists.every((l): l is ListReader => l !== null)) merged = { dim: best, lists, stored: at.sort, backward: at.backward };
    }
  }

  // The counts of the filter matches (the facet cube or vectors), read before the items where they
  // help the page: on a first page (its meta needs them anyway) they let a walk without a search stop
  // once it holds every match; on any page of a filtered walk of the main list or a posting list they
  // weigh the walk against the cell list (cellRunsToRead), and a main-list walk passes over the entries
  // without the matches' facet values (mainSkip).
  const first = p.cursor === undefined;
  // The items a filtered walk goes through: its source list's (a name search's trigram walk is not weighed).
  // A posting list whose value is the only filter is all matches: nothing to weigh.
  const dense = plan.kind === 'walk' && plan.source === 'posting' && activeDimensions(p).length === 1;
  // A main-list walk in a country order with a country filter goes through its countries' ranges only
  // (it passes over the other countries' index entries: mainSkip), not the whole list.
  const countryRanges = byCountry(mainAt.sort) ? postingTotals.get('country') : undefined;
  // A posting list stored in a country order, with a country filter, is read in its countries' ranges
  // only (scanCountries): the value's participants in those countries.
  let walked: number | null = null;
  if (plan.kind === 'walk' && !dense && activeDimensions(p).length > 0) {
    // A merged walk of one dimension's values alone is all matches: nothing to weigh.
    if (merged !== null) walked = activeDimensions(p).length > 1 ? postingTotals.get(merged.dim)! : null;
    else if (plan.source === 'main') walked = countryRanges ?? (await mainOf()).root.count;
    else if (plan.source === 'posting') {
      const inCountries = plan.dim !== 'country' && p.country !== undefined && byCountry(postingSource(plan.dim, p.sort)!.sort);
      walked = inCountries && cube !== null ? cubeTotal(cube, { [plan.dim]: [plan.value], country: acceptedValues(p, 'country') }) : postingTotals.get(plan.dim)!;
    }
  }
  const mode = metaMode(search, plan, gram);
  const wantCounter = (first && (search === null || mode === 'filters')) || walked !== null;
  const filterCounter = wantCounter ? await cubeCounter(p, src, memo) : null;
  // A frequent gram's matches under the filters, on a first page: its meta, and the walk stops once it
  // holds them all (and passes over the index entries without their facet values).
  const gramCounter = first && gramCells !== undefined ? gramCubeCounts(await readCube(src, memo), facetAccepts(p), gramCells) : null;

  let items: ParticipantListItem[];
  let nextKey: SortKey | null;
  let matches: ParticipantListItem[] = [];
  // A sparse filter combination reads its runs of the cell list rather than walk (cellRunsToRead); a
  // snapshot without the cell list is walked. A name search's walk of its trigram list is weighed too
  // where that list's root counts the filters' facets: at most that many of its candidates pass them.
  const trigramWalk = plan.kind === 'walk' && plan.source === 'trigram' && rarestList !== null && rarestSort === trigramSource(p.sort)?.sort;
  const passing = trigramWalk ? passingAtMost(p, rarestList!.root.entries) : null;
  // A frequent gram's matches under the filters, exactly (its cells of the cube): the walk weighed by them.
  // (Only a first page has the cells, and it has counted them.)
  const gramMatches = gramCounter !== null && activeDimensions(p).length > 0 ? gramCounter.total : null;
  const runs =
    walked !== null && filterCounter !== null
      ? await cellRunsToRead(p, src, memo, walked, gramMatches ?? filterCounter.total)
      : trigramWalk && (gramMatches ?? passing) !== null
        ? await cellRunsToRead(p, src, memo, rarestList!.root.count, gramMatches ?? passing!)
        : null;
  const cells = runs === null ? null : await src.list(LIST_ROUTE, CELLS_PARTITION);
  if (plan.kind === 'set') {
    let candidates: ParticipantListItem[];
    if (plan.source === 'ids') {
      const value = (search as Search & { value: string }).value;
      const ids = await src.list(LIST_ROUTE, ID_INDEX_PARTITION);
      if (ids === null) throw new SnapshotFormatError('missing identifier index');
      const page = await composePage(ids, {
        start: (k) => compareKeys(k, [value, ''], ['asc', 'asc']) >= 0,
        stop: (k) => k[0] !== value,
        limit: SMALL_SET_MAX, // values are unique per scheme: a handful of items
      });
      candidates = (page.items as StoredParticipant[]).map(expandParticipant);
    } else if (plan.source === 'trigram') candidates = await readAll(plan.trigram === rarest?.trigram ? rarestList : await src.list(LIST_ROUTE, trigramPartition(plan.trigram)));
    else if (plan.source === 'gram') candidates = await readGramList(src, plan.gram);
    else if (plan.source === 'none') candidates = [];
    else candidates = (await Promise.all((await postingLists.get(plan.dim)!()).map(readAll))).flat();
    ({ items, nextKey, matches } = setPage(candidates, p, search, order));
  } else if (runs !== null && cells !== null) {
    // A sparse combination: its runs of the cell list, read whole and paged in memory.
    ({ items, nextKey } = setPage(runs.length === 0 ? [] : await readRuns(cells, runs, p, search), p, search, order));
  } else {
    // The source list in the requested order from the cursor until the page is full (PageCollector),
    // past the index entries whose facet counts rule a filter out (the main lists count four facets).
    // The opposite orders share their lists: first_seen.asc, name.desc and country.desc read the lists
    // of first_seen.desc, name.asc and country.asc reversed (READ_REVERSED; the trigram lists are in
    // the default order and TRIGRAM_ORDERS). A snapshot without a posting or trigram list in the
    // requested order walks the main list. A country in a name order is a range of the country
    // order's main list.
    let source: ListReader | null;
    let backward = false;
    let stored: ParticipantSort = mainAt.sort;
    let range: string | null = null;
    if (merged !== null) {
      source = null;
      stored = merged.stored;
      backward = merged.backward;
    } else if (plan.source === 'main') {
      source = await mainOf();
      backward = mainAt.backward;
    } else if (plan.source === 'trigram') {
      const at = trigramSource(p.sort)!;
      if (rarestSort === at.sort) {
        source = rarestList;
        stored = at.sort;
        backward = at.backward;
      } else {
        source = await mainOf();
        backward = mainAt.backward;
      }
    } else {
      const at = postingSource(plan.dim, p.sort)!;
      source = await src.list(LIST_ROUTE, at.kind === 'range' ? mainPartition(at.sort) : postingPartition(plan.dim, plan.value, at.sort));
      if (source !== null) {
        stored = at.sort;
        backward = at.backward;
        if (at.kind === 'range') range = plan.value;
      } else {
        source = await mainOf();
        backward = mainAt.backward;
      }
    }
    // A walk that has read as many chunks as its fallback would cost reads the fallback instead: a
    // page then costs at most about twice the smallest list that holds every match (a ski-rental rule:
    // dense walks stay cheap, sparse ones stop paying for the order).
    const collector = new PageCollector(p, search, search === null ? filterCounter?.total : gramCounter?.total);
    let fallback: Awaited<ReturnType<typeof walkFallback>> | undefined;
    let switched = false;
    const walkedLists = merged !== null ? merged.lists : source !== null ? [source] : [];
    if (walkedLists.length > 0 && !collector.complete) {
      // The lists that count the main lists' facets per index entry: the main lists (a country's range
      // is one), the posting lists stored in other orders and every trigram list (countsFacets; a list
      // written before it counted has no counts per entry, and mainSkip reads every entry of it).
      const skip = source === mainList || range !== null || stored !== DEFAULT_SORT || (source !== null && source === rarestList) ? mainSkip(p, gramCounter ?? filterCounter) : undefined;
      const chunksRead = (): number => walkedLists.reduce((n, l) => n + l.stats.chunks, 0);
      const from = chunksRead();
      const nullable = nullableFields(stored);
      /** One list from the cursor, in the requested order. */
      const scanOne = (list: ListReader): AsyncGenerator<{ key: SortKey; item: unknown }> => {
        // A posting list in a country order with a country filter: the accepted countries' ranges.
        const countries = list !== mainList && range === null && byCountry(stored) ? acceptedValues(p, 'country') : [];
        return countries.length > 0
          ? scanCountries(list, countries, backward, nullable, p.cursor?.key, skip)
          : range !== null
            ? backward
              ? scanRangeReversed(list, range, nullable, p.cursor?.key, skip)
              : scanRange(list, range, p.cursor?.key, skip)
            : backward
              ? scanReverse(list, { nullable, after: p.cursor?.key, skip })
              : list.scan({ start: keysAfter(dirs, p.cursor?.key), skip });
      };
      const items = walkedLists.length === 1 ? scanOne(walkedLists[0]!) : mergeScans(walkedLists.map(scanOne), dirs);
      for await (const { item, key } of items) {
        if (!collector.offer(expandParticipant(item as StoredParticipant), key)) break;
        const read = chunksRead() - from;
        // A merged walk reads a chunk of each list at least, and two where a list's next chunk starts.
        if (read < FALLBACK_CHECK_CHUNKS + 2 * (walkedLists.length - 1)) continue;
        // The rarest trigram's list is a fallback unless it is what the walk reads.
        if (fallback === undefined) fallback = await walkFallback(p, search, src, memo, rarest !== null && rarestList !== null && source !== rarestList ? { count: rarest.count, list: rarestList } : null);
        if (fallback !== null && read >= fallback.chunks) {
          switched = true;
          break;
        }
      }
    }
    if (switched && fallback) ({ items, nextKey } = setPage(await fallback.read(), p, search, order));
    else {
      items = collector.items;
      nextKey = collector.nextKey;
    }
  }

  let meta;
  if (first) {
    let counter: FacetCounter;
    if (mode === 'set') {
      counter = new FacetCounter();
      for (const i of matches) counter.addItem(i);
      if (matches.length > 0) counter.label({ scheme: (await src.json<Record<string, string>>(SCHEME_LABELS_PATH)) ?? {} });
    } else if (mode === 'gram') counter = gramCounter!;
    else counter = filterCounter ?? (await cubeCounter(p, src, memo));
    // Every participant: the main list's count, or the cube's when the page has it and not the main list.
    const anyCube = cube ?? memo.cube ?? null;
    meta = listMeta(p, mainList === undefined && anyCube !== null ? cubeTotal(anyCube, {}) : (await mainOf()).root.count, mode, counter);
  }
  return ok(listPage(p.sort, items, nextKey, meta));
};

export const PARTICIPANT_COMPOSERS = {
  [LIST_ROUTE]: composeList,
  [DETAIL_ROUTE]: composeDetail,
  [EVENTS_ROUTE]: listComposer(EVENTS_ROUTE, perParticipant(EVENTS_ROUTE)),
  [HISTORY_ROUTE]: listComposer(HISTORY_ROUTE, perParticipant(HISTORY_ROUTE)),
} satisfies Partial<Composers>;
