// The lists of `/v1/participants`: the main lists (five orders; first_seen.asc reads the default one backward), the posting lists, the trigram lists, the
// identifier index and the cell list, and the first page at default parameters. A full build writes them streaming; an
// incremental build patches them in place around the participants the change set names. Stated once
// in docs/snapshot-format.md ("Participants") and docs/incremental.md ("Lists patched in place").
import type { Direction, SortKey } from '../../api/sort-keys.js';
import { compareKeys } from '../../api/sort-keys.js';
import { LIMIT_DEFAULT } from '../../api/params.js';
import {
  CELLS_DIRS,
  CELLS_PARTITION,
  cellKey,
  DEFAULT_SORT,
  expandParticipant,
  facetValues,
  foldName,
  ID_INDEX_DIRS,
  ID_INDEX_PARTITION,
  hasPostingList,
  LIST_CHUNK_MIN_ITEMS,
  LIST_ROUTE,
  listKey,
  listOrder,
  MAIN_FACET_FIELDS,
  MAIN_LIST_SORTS,
  mainPartition,
  ORDERED_POSTINGS,
  ORDERED_POSTINGS_COUNTED,
  countsFacets,
  PARTICIPANT_KEYS,
  POSTING_DIMENSIONS,
  postingPartition,
  storeParticipant,
  gramCountTableOf,
  isGramCountTable,
  shortGramsOf,
  shortSearchGramsOf,
  trigramOf,
  trigramPartition,
  trigramsOf,
  TRIGRAM_ORDERS,
  TRIGRAMS_FORMAT,
  TRIGRAMS_PATH,
  unregisteredGramOf,
  unregisteredGramPartition,
  UNREGISTERED_GRAMS_FORMAT,
  UNREGISTERED_GRAMS_PATH,
  type GramCountTable,
  type ParticipantSort,
  type PostingDimension,
  type StoredParticipant,
} from '../../api/participants/plan.js';
import { listRootPath, listRootPrefix } from '../../api/paths.js';
import { CUBE_PATH, cubeOf, encodeCube, SCHEME_LABELS_PATH, vectorPath, vectorsOf } from '../../api/participants/facets.js';
import { orderDirs } from '../../api/routes/request.js';
import { curatedSeatNames, facetLabelsOf, facetTupleRows, LIST_COLUMNS, listItemOf, orderSql, participantsList, type ListRow } from '../../api/participants/query.js';
import type { ParticipantListItem } from '../../api/schemas/index.js';
import type { ListRoot } from '../../edge/list-format.js';
import { keyOfRoot, withKeys } from '../../edge/derived-keys.js';
import type { RenderContext } from '../context.js';
import { level0Of, patchList, type PatchOp } from '../list-patch.js';
import { rowObjects } from '../../db/statements.js';
import { pendingOf, type ListWriterOptions, type Pending } from '../lists.js';
import { GRAMS_PART, renderGrams } from '../grams.js';
import { changedListRows, type ChangedListRow } from '../state.js';

/** Root paths of every participant list start with this. */
const LISTS_PREFIX = listRootPrefix(LIST_ROUTE);

/**
 * An incremental build patches the lists unless the list items of more than this share of the
 * participants changed (and more than PATCH_MIN): a mass migration that moves most items of most
 * lists is written in full, which then costs less than reading the chunks one by one. Most changed
 * participants change no list item at all (a new history row): measured at the medium demo, a day of
 * changes (7,262 participants) patched 461 lists reading 968 chunks, 3.0 s against 34 s written.
 */
const PATCH_SHARE_MAX = 1 / 4;
const PATCH_MIN = 5_000;

const BATCH = 2000;

type Layout = Pick<ListWriterOptions, 'minItems' | 'entryCounts' | 'derivedKey' | 'indexFanout'>;
/**
 * The participant lists' index nodes hold up to PARTICIPANT_INDEX_FANOUT entries (others 128): a list
 * of 3 million participants in chunks of about 270 (11,132 chunks at `peppol`) is a root and one level
 * of nodes (70 nodes of about 160 entries), so a page reads its root, a node and its chunk, where it
 * read two levels of nodes before.
 */
export const PARTICIPANT_INDEX_FANOUT = 256;
const LAYOUT: Layout = { minItems: LIST_CHUNK_MIN_ITEMS, indexFanout: PARTICIPANT_INDEX_FANOUT };
/**
 * Every participant list stores its items without their keys (format list@3): the key is a function
 * of the item, named by the root (plan.ts PARTICIPANT_KEYS), and a chunk's JSON is about a fifth smaller.
 */
const derivedKeys = (layout: Layout, derivedKey: string): Layout => ({ ...layout, derivedKey });
/** The layout of a list in a main order (main, posting and trigram lists). */
const inOrder = (layout: Layout, sort: ParticipantSort): Layout => derivedKeys(layout, PARTICIPANT_KEYS.order(sort));

/** The value of a posting dimension an item is listed under (null: none, or a value without lists). */
function postingValue(item: ParticipantListItem, dim: PostingDimension): string | null {
  const v = facetValues(item, dim)[0];
  return v !== undefined && hasPostingList(dim, v) ? v : null;
}

/**
 * The posting lists stored in `sort` an item is in (one per dimension with a value), by partition:
 * every posting dimension's in the default order, ORDERED_POSTINGS's in the others.
 */
function postingPartitionsOf(item: ParticipantListItem, sort: ParticipantSort = DEFAULT_SORT): string[][] {
  const out: string[][] = [];
  for (const dim of POSTING_DIMENSIONS) {
    if (sort !== DEFAULT_SORT && !ORDERED_POSTINGS[dim].includes(sort)) continue;
    const v = postingValue(item, dim);
    if (v !== null) out.push(postingPartition(dim, v, sort));
  }
  return out;
}

/**
 * Opens a posting or trigram list stored in `sort`: the lists in other orders and every trigram list
 * count ORDERED_POSTINGS_COUNTED per index entry (countsFacets), the default order's posting lists none.
 */
function listIn(ctx: RenderContext, partition: string[], sort: ParticipantSort): ReturnType<RenderContext['list']> {
  return ctx.list(LIST_ROUTE, partition, orderDirs(listOrder(sort)), countsFacets(partition, sort) ? ORDERED_POSTINGS_COUNTED : undefined, inOrder(LAYOUT, sort), true);
}

/** The posting lists one pass writes side by side, each opened at its first item. */
class PostingWriters {
  private readonly open = new Map<string, ReturnType<RenderContext['list']>>();

  constructor(
    private readonly ctx: RenderContext,
    private readonly sort: ParticipantSort,
  ) {}

  add(partition: string[], p: Pending): void {
    const k = partition.join('\u0000');
    let w = this.open.get(k);
    if (w === undefined) this.open.set(k, (w = listIn(this.ctx, partition, this.sort)));
    w.addPending(p);
  }

  /** Finishes every list; returns how many. */
  finish(): number {
    for (const w of this.open.values()) w.finish();
    return this.open.size;
  }
}

/**
 * The name lists of one kind: the trigram lists (every named participant, by trigram), the short name
 * lists (every named participant, by gram of one or two code points: plan.ts SHORT_GRAM_MAX) or the
 * unregistered participants' name lists (plan.ts unregisteredGramPartition: by gram of one to three
 * code points).
 */
interface NameLists {
  partition: (gram: string, sort: ParticipantSort) => string[];
  /** Whether these lists may hold an item (by its name's grams); `where` says the same in SQL, over participant_list. */
  holds: (item: ParticipantListItem) => item is ParticipantListItem & { name: string };
  where: string;
  /** The grams of a folded name whose lists hold its participant, if `holds` it. */
  gramsOfName: (folded: string) => string[];
  /**
   * The table of the lists' sizes (plan.ts GramCountTable), where a search reads one: its file, and
   * the gram of a default-order list's partition of this kind (null for any other list). A short
   * name list has none: a search of one gram opens that gram's list root.
   */
  table?: { path: string; format: string; gramOf: (partition: readonly string[]) => string | null };
}
const named = (item: ParticipantListItem): item is ParticipantListItem & { name: string } => item.name !== null;
const TRIGRAM_LISTS: NameLists = {
  partition: trigramPartition,
  holds: named,
  where: 'name IS NOT NULL',
  gramsOfName: trigramsOf,
  table: { path: TRIGRAMS_PATH, format: TRIGRAMS_FORMAT, gramOf: trigramOf },
};
const SHORT_LISTS: NameLists = {
  partition: trigramPartition,
  holds: named,
  where: 'name IS NOT NULL',
  gramsOfName: shortSearchGramsOf,
};
const UNREGISTERED_LISTS: NameLists = {
  partition: unregisteredGramPartition,
  holds: (item): item is ParticipantListItem & { name: string } => item.name !== null && !item.registered,
  where: 'name IS NOT NULL AND registered = 0',
  gramsOfName: shortGramsOf,
  table: { path: UNREGISTERED_GRAMS_PATH, format: UNREGISTERED_GRAMS_FORMAT, gramOf: unregisteredGramOf },
};
const NAME_LISTS: readonly NameLists[] = [TRIGRAM_LISTS, SHORT_LISTS, UNREGISTERED_LISTS];
/** The kinds with a table of their sizes. */
const TABLED = NAME_LISTS.filter((k): k is NameLists & { table: NonNullable<NameLists['table']> } => k.table !== undefined);
/** The grams of an item whose lists of this kind it is in (none when the kind does not hold it). */
const gramsOf = (kind: NameLists, item: ParticipantListItem): string[] => (kind.holds(item) ? kind.gramsOfName(foldName(item.name)) : []);
/** The list sizes by gram of each kind with a table (NAME_LISTS order). */
type NameCounts = Map<NameLists, Map<string, number>>;
const nameCounts = (): NameCounts => new Map(TABLED.map((k) => [k, new Map<string, number>()]));

/**
 * The name lists of one kind one pass writes side by side (the default order's, or those of one of
 * TRIGRAM_ORDERS, which count ORDERED_POSTINGS_COUNTED per index entry), at most `max` open at once:
 * the grams first met after that are left in `overflow`, for writeOverflowNameLists.
 */
class NameListWriters {
  private readonly open = new Map<string, ReturnType<RenderContext['list']>>();
  readonly overflow = new Set<string>();

  constructor(
    private readonly ctx: RenderContext,
    private readonly sort: ParticipantSort,
    private readonly max: number,
    readonly kind: NameLists,
  ) {}

  add(gram: string, p: Pending): void {
    let w = this.open.get(gram);
    if (w === undefined) {
      if (this.overflow.has(gram)) return;
      if (this.open.size >= this.max) {
        this.overflow.add(gram);
        return;
      }
      this.open.set(gram, (w = listIn(this.ctx, this.kind.partition(gram, this.sort), this.sort)));
    }
    w.addPending(p);
  }

  /** Finishes every open list; returns how many. */
  finish(): number {
    for (const w of this.open.values()) w.finish();
    return this.open.size;
  }
}

/** The posting lists in other orders an item is in (ORDERED_POSTINGS of the dimensions it has a value of), with the order. */
function orderedPostingsOf(item: ParticipantListItem): Array<{ partition: string[]; sort: ParticipantSort }> {
  const out: Array<{ partition: string[]; sort: ParticipantSort }> = [];
  for (const dim of POSTING_DIMENSIONS) {
    const v = postingValue(item, dim);
    if (v !== null) for (const sort of ORDERED_POSTINGS[dim]) out.push({ partition: postingPartition(dim, v, sort), sort });
  }
  return out;
}

/**
 * The facet values an item is counted under, one shared object per combination: an item waiting in
 * the unfinished chunks of a pass's lists holds it (thousands of lists side by side at `peppol`), and
 * the combinations are few (22,535 of the six facets at `peppol`, fewer of these four).
 */
const facetCombinations = new Map<string, Record<string, string[]>>();
function facetsOf(item: ParticipantListItem): Record<string, string[]> {
  const values = MAIN_FACET_FIELDS.map((f) => facetValues(item, f));
  const k = JSON.stringify(values);
  let out = facetCombinations.get(k);
  if (out === undefined) {
    out = {};
    MAIN_FACET_FIELDS.forEach((f, i) => (out![f] = values[i]!));
    facetCombinations.set(k, out);
  }
  return out;
}

export function renderParticipantsList(ctx: RenderContext, trigramWritersMax = TRIGRAM_WRITERS_MAX): void {
  const { db } = ctx;
  const seatNames = curatedSeatNames(db);
  // The facet cube (src/api/participants/facets.ts): the counts and facets of every first page without
  // a search; the default page's facets are its sums.
  const tuples = facetTupleRows(db);
  const cube = cubeOf(tuples, facetLabelsOf(seatNames));
  ctx.sink.put(CUBE_PATH, encodeCube(cube), 'application/octet-stream', 'mutable');
  ctx.sink.put(SCHEME_LABELS_PATH, ctx.serialise(cube.labels.scheme), 'application/json', 'mutable');
  // Its sums per facet value: the counts and facets of a filter on one dimension.
  for (const { dim, value, vector } of vectorsOf(cube)) ctx.sink.put(vectorPath(dim, value), ctx.serialise(vector), 'application/json', 'mutable');
  const body = participantsList(
    db,
    { sort: DEFAULT_SORT, country: undefined, scheme: undefined, smp: undefined, ap: undefined, registered: undefined, provenance: undefined, q: undefined, limit: LIMIT_DEFAULT, cursor: undefined },
    ctx.nowMs,
    tuples,
  );
  if (body.status !== 200) throw new Error('participants.list: default page is not 200');
  ctx.exact(['v1', 'participants'], body.body);
  // The grams index, unless the worker writes it (src/render/offload.ts).
  if (!ctx.elsewhere.has(GRAMS_PART)) renderGrams(ctx);
  if (ctx.participants === 'changed' && ctx.lists?.patchable && patchLists(ctx, seatNames)) return;
  // A full write. In an incremental build the lists kept so far go first (their files are retired;
  // those written again stay).
  for (const root of ctx.lists?.roots(LISTS_PREFIX) ?? []) ctx.lists!.drop(root);
  const counts = nameCounts();
  ctx.listsReport = { mode: 'written', lists: writeLists(ctx, seatNames, trigramWritersMax, counts), chunks_read: 0 };
  putNameCounts(ctx, counts);
}

/** Writes the name lists' tables (plan.ts TRIGRAMS_PATH, UNREGISTERED_GRAMS_PATH): the size of every list. */
function putNameCounts(ctx: RenderContext, counts: NameCounts): void {
  for (const kind of TABLED) ctx.sink.put(kind.table.path, ctx.serialise(gramCountTableOf(kind.table.format, counts.get(kind)!)), 'application/json', 'mutable');
}

/**
 * The size of every name list of a kind, counted from the names (the lists hold the participants
 * whose folded name holds the gram): the table of an incremental build after one that wrote none.
 */
function gramCountsFromNames(ctx: RenderContext, kind: NameLists): Map<string, number> {
  const counts = new Map<string, number>();
  for (const rows of namedParticipants(ctx, kind.where)) for (const r of rows) for (const t of kind.gramsOfName(foldName(r.name))) counts.set(t, (counts.get(t) ?? 0) + 1);
  return counts;
}
/** The size of every trigram list, counted from the names. */
export const trigramCountsFromNames = (ctx: RenderContext): Map<string, number> => gramCountsFromNames(ctx, TRIGRAM_LISTS);
/** The size of every unregistered name list, counted from the names. */
export const unregisteredGramCountsFromNames = (ctx: RenderContext): Map<string, number> => gramCountsFromNames(ctx, UNREGISTERED_LISTS);

// ---------------------------------------------------------------------------------------------
// Full write

/** Participants with a name in participant_id order, in batches (no statement stays open while the caller works). */
type NameRow = { participant_id: number; pid: string; name: string; first_seen_at: number };
function* namedParticipants(ctx: RenderContext, where: string): Generator<NameRow[]> {
  const q = ctx.db.prepare(`SELECT participant_id, pid, name, first_seen_at FROM participant_list WHERE participant_id > ? AND ${where} ORDER BY participant_id LIMIT ${BATCH}`);
  let last = -Infinity;
  for (;;) {
    const rows = q.all(last) as NameRow[];
    if (rows.length === 0) return;
    yield rows;
    last = rows[rows.length - 1]!.participant_id;
  }
}

/**
 * Writes the name lists of `sort` a pass left over (NameListWriters.overflow), one after the other:
 * their (gram, participant) pairs go into a plain temporary table (appends), and one sorted query
 * (SQLite's external sort) gives them by gram, then in list order; nothing participant-sized is held
 * in memory (the temporary database is on disk while rendering). Returns how many lists.
 */
function writeOverflowNameLists(ctx: RenderContext, writers: NameListWriters, sort: ParticipantSort, seatNames: ReadonlyMap<string, string>): number {
  const { overflow, kind } = writers;
  if (overflow.size === 0) return 0;
  const { db } = ctx;
  const order = listOrder(sort);
  db.exec('DROP TABLE IF EXISTS temp.participant_trigrams; CREATE TEMP TABLE participant_trigrams (t TEXT NOT NULL, participant_id INTEGER NOT NULL)');
  try {
    const ins = db.prepare('INSERT INTO temp.participant_trigrams (t, participant_id) VALUES (?, ?)');
    const insertBatch = db.transaction((rows: NameRow[]) => {
      for (const r of rows) for (const t of kind.gramsOfName(foldName(r.name))) if (overflow.has(t)) ins.run(t, r.participant_id);
    });
    for (const rows of namedParticipants(ctx, kind.where)) insertBatch(rows);
    // The order's columns are participant_list's (the temporary table has none of their names).
    const cols = LIST_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ');
    const sql = `SELECT g.t AS "group", ${cols} FROM temp.participant_trigrams g JOIN participant_list l ON l.participant_id = g.participant_id ORDER BY g.t, ${orderSql(order)}`;
    let current: string | null = null;
    let w: ReturnType<RenderContext['list']> | null = null;
    let n = 0;
    for (const r of rowObjects<ListRow & { group: string }>(db.prepare(sql))) {
      if (r.group !== current) {
        w?.finish();
        n++;
        current = r.group;
        w = listIn(ctx, kind.partition(current, sort), sort);
      }
      const item = listItemOf(r, seatNames);
      // Every name list counts the main lists' facets per entry (countsFacets).
      w!.addPending(pendingOf(JSON.stringify(storeParticipant(item)), listKey(order, item), facetsOf(item)));
    }
    w?.finish();
    return n;
  } finally {
    db.exec('DROP TABLE IF EXISTS temp.participant_trigrams');
  }
}

/**
 * Most trigram lists one pass writes at once (the default order's, and each of TRIGRAM_ORDERS's). Each
 * open list holds its unfinished chunk (at most chunk_max_bytes of items, shared with the other lists),
 * so this bounds the pass's memory; the trigrams first met after it is reached are written afterwards
 * from a sorted temporary table (writeOverflowTrigrams). The demo's names have about 3,000 trigrams.
 */
export const TRIGRAM_WRITERS_MAX = 8192;

/**
 * The renderer of the participant lists' two index lists (the identifier index and the cell list) on
 * their own: a full build's worker writes them while the main thread writes the other lists
 * (src/render/offload.ts OFFLOADED_ROUTES; the main thread's participants.list then leaves them out,
 * RenderContext.elsewhere). An incremental build writes them with the others.
 */
export const INDEX_LISTS_PART = 'participants.list:index-lists';

export function renderParticipantIndexLists(ctx: RenderContext): void {
  const n = writeIndexLists(ctx, curatedSeatNames(ctx.db));
  // The worker's other part of the lists (the short name lists) adds to it.
  ctx.listsReport = { mode: 'written', lists: (ctx.listsReport?.lists ?? 0) + n, chunks_read: 0 };
}

/**
 * The renderer of the short name lists on their own (SHORT_LISTS: plan.ts SHORT_GRAM_MAX), a pass over
 * the named participants in each of their orders: a full build's worker writes them while the main
 * thread writes the other lists, which then leaves them out (RenderContext.elsewhere). They are 185
 * million items at `peppol`, about 500 s of the main thread's passes (docs/benchmarks.md "The short
 * name lists"); the worker had as long left over before the record packs. An incremental build
 * patches them with the others.
 */
export const SHORT_LISTS_PART = 'participants.list:short-lists';

export function renderShortNameLists(ctx: RenderContext, trigramWritersMax = TRIGRAM_WRITERS_MAX): void {
  const seatNames = curatedSeatNames(ctx.db);
  let lists = 0;
  for (const sort of [DEFAULT_SORT, ...TRIGRAM_ORDERS]) {
    const order = listOrder(sort);
    const n = new NameListWriters(ctx, sort, trigramWritersMax, SHORT_LISTS);
    for (const r of rowObjects<ListRow>(ctx.db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list WHERE ${SHORT_LISTS.where} ORDER BY ${orderSql(order)}`))) {
      const item = listItemOf(r, seatNames);
      // As the main-list passes write them: the item counted under its facet values (countsFacets).
      const p = pendingOf(JSON.stringify(storeParticipant(item)), listKey(order, item), facetsOf(item));
      for (const g of gramsOf(SHORT_LISTS, item)) n.add(g, p);
    }
    lists += n.finish() + writeOverflowNameLists(ctx, n, sort, seatNames);
  }
  ctx.listsReport = { mode: 'written', lists: (ctx.listsReport?.lists ?? 0) + lists, chunks_read: 0 };
}

/** Writes every list (but the index lists and the short name lists where another thread writes them); returns how many. */
function writeLists(ctx: RenderContext, seatNames: ReadonlyMap<string, string>, trigramWritersMax: number, counts: NameCounts): number {
  const { db } = ctx;
  const kinds = NAME_LISTS.filter((k) => k !== SHORT_LISTS || !ctx.elsewhere.has(SHORT_LISTS_PART));
  let lists = MAIN_LIST_SORTS.length;
  const dflt = listOrder(DEFAULT_SORT);
  const dfltDirs = orderDirs(dflt);
  // The main lists other than the default order, one pass each, which also writes the posting and
  // trigram lists stored in that order (plan.ts ORDERED_POSTINGS, TRIGRAM_ORDERS): a posting list in an
  // order is the main list's items of its value, in the same order, so the item's JSON and key are
  // computed once for all.
  for (const sort of MAIN_LIST_SORTS) {
    if (sort === DEFAULT_SORT) continue;
    const order = listOrder(sort);
    const dirs = orderDirs(order);
    // The main lists count their four facets per index entry (not only in the root): a walk passes over
    // the entries whose counts rule a filter out (docs/snapshot-format.md "Participants"), e.g. the
    // named participants before the discovered ones in name or country order.
    const w = ctx.list(LIST_ROUTE, mainPartition(sort), dirs, MAIN_FACET_FIELDS, inOrder(LAYOUT, sort), true);
    const postings = new PostingWriters(ctx, sort);
    const names = TRIGRAM_ORDERS.includes(sort) ? kinds.map((kind) => new NameListWriters(ctx, sort, trigramWritersMax, kind)) : [];
    for (const r of rowObjects<ListRow>(db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY ${orderSql(order)}`))) {
      const item = listItemOf(r, seatNames);
      const withFacets = pendingOf(JSON.stringify(storeParticipant(item)), listKey(order, item), facetsOf(item));
      w.addPending(withFacets);
      // These posting and name lists count the main list's facets per entry (ORDERED_POSTINGS_COUNTED): the same item.
      for (const partition of postingPartitionsOf(item, sort)) postings.add(partition, withFacets);
      for (const n of names) for (const g of gramsOf(n.kind, item)) n.add(g, withFacets);
    }
    w.finish();
    lists += postings.finish();
    for (const n of names) lists += n.finish() + writeOverflowNameLists(ctx, n, sort, seatNames);
  }

  // One pass in the default order writes the main list of that order, the posting list of each facet
  // value and the trigram lists of folded names (rule 2): they share the order, so an item's JSON, key
  // and boundary are computed once and the same item goes into every list it belongs to. A chunk's
  // end depends only on the list's own items, so lists written side by side are the lists written one
  // by one.
  {
    const main = ctx.list(LIST_ROUTE, mainPartition(DEFAULT_SORT), dfltDirs, MAIN_FACET_FIELDS, inOrder(LAYOUT, DEFAULT_SORT), true);
    const postings = new PostingWriters(ctx, DEFAULT_SORT);
    const names = kinds.map((kind) => new NameListWriters(ctx, DEFAULT_SORT, trigramWritersMax, kind));
    for (const r of rowObjects<ListRow>(db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY ${orderSql(dflt)}`))) {
      const item = listItemOf(r, seatNames);
      const withFacets = pendingOf(JSON.stringify(storeParticipant(item)), listKey(dflt, item), facetsOf(item));
      main.addPending(withFacets);
      // The posting lists count no facets: their copy lets the facet values go with the main list's
      // chunk (these lists hold thousands of unfinished chunks at once). The name lists count them
      // (countsFacets): the same item.
      const p: Pending = { ...withFacets, facets: undefined };
      for (const partition of postingPartitionsOf(item)) postings.add(partition, p);
      for (const n of names) {
        const c = counts.get(n.kind);
        for (const g of gramsOf(n.kind, item)) {
          if (c !== undefined) c.set(g, (c.get(g) ?? 0) + 1);
          n.add(g, withFacets);
        }
      }
    }
    main.finish();
    lists += postings.finish();
    for (const n of names) lists += n.finish();
    if (!ctx.elsewhere.has(INDEX_LISTS_PART)) lists += writeIndexLists(ctx, seatNames);
    for (const n of names) lists += writeOverflowNameLists(ctx, n, DEFAULT_SORT, seatNames);
  }

  return lists;
}

/** Writes the identifier index and the cell list, a sorted pass each; returns how many lists (2). */
function writeIndexLists(ctx: RenderContext, seatNames: ReadonlyMap<string, string>): number {
  const { db } = ctx;
  // The identifier index: [value, id] ascending (rule 1 of the participant list).
  {
    const w = ctx.list(LIST_ROUTE, ID_INDEX_PARTITION, ID_INDEX_DIRS, undefined, derivedKeys(LAYOUT, PARTICIPANT_KEYS.ids), true);
    for (const r of rowObjects<ListRow>(db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY value, pid`))) {
      w.add(storeParticipant(listItemOf(r, seatNames)), [r.value, r.pid]);
    }
    w.finish();
  }

  // The cell list: clustered by facet combination in the cube's cell order (plan.ts CELLS_PARTITION).
  // SQLite's BINARY order of the text columns is code-point order, as the key's; the writer checks it.
  {
    const w = ctx.list(LIST_ROUTE, CELLS_PARTITION, CELLS_DIRS, undefined, derivedKeys(LAYOUT, PARTICIPANT_KEYS.cells), true);
    let prev: SortKey | null = null;
    const sql = `SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY coalesce(country, ''), scheme, registered, provenance, coalesce(smp, ''), coalesce(ap_seat_id, ''), first_seen_at DESC, pid DESC`;
    for (const r of rowObjects<ListRow>(db.prepare(sql))) {
      const item = listItemOf(r, seatNames);
      const key = cellKey(item);
      if (prev !== null && compareKeys(prev, key, CELLS_DIRS) >= 0) throw new Error(`cell list out of order at ${JSON.stringify(key)}`);
      w.add(storeParticipant(item), key);
      prev = key;
    }
    w.finish();
  }
  return 2;
}

// ---------------------------------------------------------------------------------------------
// Patch in place

/** The changes of one list. */
interface ListChanges {
  partition: string[];
  dirs: Direction[];
  facetFields?: readonly string[];
  layout: Layout;
  /** Kept when empty (the main lists and the identifier index always exist). */
  always: boolean;
  ops: Map<string, PatchOp>;
}

/**
 * Patches every list in place; false (nothing written) when a full write is the better way: too many
 * changes, or no lists kept from the previous build.
 */
function patchLists(ctx: RenderContext, seatNames: ReadonlyMap<string, string>): boolean {
  const { db } = ctx;
  const store = ctx.lists!;
  const idRoot = listRootPath(LIST_ROUTE, ID_INDEX_PARTITION);
  if (!store.has(idRoot)) return false;
  // The tables of the previous build's name lists. A build before the unregistered name lists wrote
  // none of them (nor their table): they are written whole, with every list.
  const previousTables = new Map<NameLists, GramCountTable<string>>();
  for (const kind of TABLED) {
    let table: unknown = null;
    try {
      table = ctx.readPrevious(kind.table.path);
    } catch {
      // not written by the previous build
    }
    if (isGramCountTable(table, kind.table.format)) previousTables.set(kind, table);
  }
  if (!previousTables.has(UNREGISTERED_LISTS)) return false;
  const rows = changedListRows(db);
  // The previous build's own files, read as the format they were written in: the casts below name it.
  const readFile = (rel: string): unknown => ctx.readPrevious(rel);
  const before = storedItems(rows.map((r) => [r.id_value, r.id_pid]), readFile(idRoot) as ListRoot, readFile);

  const lists = new Map<string, ListChanges>();
  const changesOf = (partition: string[], dirs: Direction[], kind: 'main' | 'ids' | 'posting' | 'ordered', derivedKey: string): ListChanges => {
    // 'ids': a list every participant is in (the identifier index, the cell list), kept when empty;
    // 'ordered': a list that counts facets per entry as the main lists do (countsFacets): a posting list
    // in another order, a trigram list.
    const root = listRootPath(LIST_ROUTE, partition);
    let c = lists.get(root);
    if (c === undefined) {
      c = { partition, dirs, layout: derivedKeys(LAYOUT, derivedKey), always: kind === 'main' || kind === 'ids', ops: new Map() };
      if (kind === 'main') c.facetFields = MAIN_FACET_FIELDS;
      if (kind === 'ordered') c.facetFields = ORDERED_POSTINGS_COUNTED;
      lists.set(root, c);
    }
    return c;
  };
  const dflt = listOrder(DEFAULT_SORT);
  const dfltDirs = orderDirs(dflt);
  /** Every list an item is in, with its key there. */
  const placesOf = (item: ParticipantListItem): Array<{ list: ListChanges; key: SortKey; facets?: Record<string, string[]> }> => {
    const out: Array<{ list: ListChanges; key: SortKey; facets?: Record<string, string[]> }> = [];
    const facets = facetsOf(item);
    for (const sort of MAIN_LIST_SORTS) {
      const order = listOrder(sort);
      out.push({ list: changesOf(mainPartition(sort), orderDirs(order), 'main', PARTICIPANT_KEYS.order(sort)), key: listKey(order, item), facets });
    }
    const key = listKey(dflt, item);
    const dfltKey = PARTICIPANT_KEYS.order(DEFAULT_SORT);
    for (const partition of postingPartitionsOf(item)) out.push({ list: changesOf(partition, dfltDirs, 'posting', dfltKey), key });
    for (const { partition, sort } of orderedPostingsOf(item)) {
      const order = listOrder(sort);
      out.push({ list: changesOf(partition, orderDirs(order), 'ordered', PARTICIPANT_KEYS.order(sort)), key: listKey(order, item), facets });
    }
    out.push({ list: changesOf([...ID_INDEX_PARTITION], ID_INDEX_DIRS, 'ids', PARTICIPANT_KEYS.ids), key: [item.value, item.id] });
    out.push({ list: changesOf([...CELLS_PARTITION], CELLS_DIRS, 'ids', PARTICIPANT_KEYS.cells), key: cellKey(item) });
    for (const kind of NAME_LISTS) {
      const grams = gramsOf(kind, item);
      for (const t of grams) out.push({ list: changesOf(kind.partition(t, DEFAULT_SORT), dfltDirs, 'ordered', dfltKey), key, facets });
      for (const sort of TRIGRAM_ORDERS) {
        const order = listOrder(sort);
        const k = listKey(order, item);
        for (const t of grams) out.push({ list: changesOf(kind.partition(t, sort), orderDirs(order), 'ordered', PARTICIPANT_KEYS.order(sort)), key: k, facets });
      }
    }
    return out;
  };
  const moved: Array<{ was: StoredParticipant | undefined; now: StoredParticipant | undefined; nowJson: string | undefined }> = [];
  for (const r of rows) {
    const was = before.get(r.id_pid);
    // A participant still listed has every column of its list row (the LEFT JOIN matched).
    const now = r.present === null ? undefined : storeParticipant(listItemOf(r as ListRow, seatNames));
    const nowJson = now === undefined ? undefined : JSON.stringify(now);
    if (was?.json !== nowJson) moved.push({ was: was?.item, now, nowJson });
  }
  const total = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
  if (moved.length > (store.patchLimit ?? Math.max(PATCH_MIN, total * PATCH_SHARE_MAX))) return false;
  for (const { was, now, nowJson } of moved) {
    if (was !== undefined) {
      for (const p of placesOf(expandParticipant(was))) {
        const keyJson = JSON.stringify(p.key);
        p.list.ops.set(keyJson, { key: p.key, keyJson });
      }
    }
    if (now !== undefined) {
      for (const p of placesOf(expandParticipant(now))) {
        const keyJson = JSON.stringify(p.key);
        p.list.ops.set(keyJson, { key: p.key, keyJson, json: nowJson, facets: p.facets });
      }
    }
  }

  // The tables of the previous build, updated with the sizes of the name lists patched below (the
  // trigram table counted from the names when that build wrote none).
  const counts: NameCounts = new Map(TABLED.map((kind) => {
    const previous = previousTables.get(kind);
    return [kind, previous !== undefined ? new Map(previous.counts) : gramCountsFromNames(ctx, kind)];
  }));
  /** The name list of a partition in the default order, with its kind's counts; null for any other list. */
  const countedAs = (partition: readonly string[]): { gram: string; counts: Map<string, number> } | null => {
    for (const kind of TABLED) {
      const gram = kind.table.gramOf(partition);
      if (gram !== null) return { gram, counts: counts.get(kind)! };
    }
    return null;
  };
  let reads = 0;
  for (const [root, c] of lists) {
    const ops = [...c.ops.values()].sort((a, b) => compareKeys(a.key, b.key, c.dirs));
    const opts = ctx.listOptions(c.dirs, c.facetFields, c.layout);
    const named = countedAs(c.partition);
    if (!store.has(root)) {
      // A list the previous build did not have (a new country, trigram, ...).
      const puts = ops.filter((o) => o.json !== undefined);
      named?.counts.set(named.gram, puts.length);
      if (puts.length === 0) continue;
      const w = ctx.list(LIST_ROUTE, c.partition, c.dirs, c.facetFields, c.layout, true);
      for (const o of puts) w.addPending(pendingOf(o.json!, o.key, o.facets));
      w.finish();
      continue;
    }
    const unit = store.unit(root);
    const held = store.paths(unit);
    const sink = ctx.unitSink(unit);
    const r = patchList({
      root: readFile(root) as ListRoot,
      read: readFile,
      readChunk: (rel, keyOf) => ctx.readPreviousChunk(rel, keyOf),
      ops,
      opts,
      sink,
      facetsOf: (stored) => facetsOf(expandParticipant(stored as StoredParticipant)),
      holds: (p) => held.has(p),
    });
    reads += r.reads;
    named?.counts.set(named.gram, r.root.count);
    if (r.root.count === 0 && !c.always) {
      store.drop(root);
      continue;
    }
    sink.put(root, new TextEncoder().encode(JSON.stringify(r.root)), 'application/json', 'mutable');
    const keep = new Set(r.paths);
    keep.add(root);
    store.retire(unit, [...held].filter((p) => !keep.has(p)));
  }
  putNameCounts(ctx, counts);
  ctx.listsReport = { mode: 'patched', lists: lists.size, chunks_read: reads };
  return true;
}

/**
 * The items the previous build stored for some participants (by id), read from its identifier index:
 * the chunks holding their keys, each read once.
 */
function storedItems(keys: Array<[value: string, id: string]>, root: ListRoot, read: (rel: string) => unknown): Map<string, { item: StoredParticipant; json: string }> {
  const out = new Map<string, { item: StoredParticipant; json: string }>();
  const sorted = keys.map((k): SortKey => k).sort((a, b) => compareKeys(a, b, ID_INDEX_DIRS));
  const entries = level0Of(root, read);
  const keyOf = keyOfRoot(root);
  let e = 0;
  let chunk: { path: string; keys: Map<string, number>; items: unknown[] } = { path: '', keys: new Map(), items: [] };
  for (const key of sorted) {
    while (e < entries.length && compareKeys(entries[e]!.last, key, ID_INDEX_DIRS) < 0) e++;
    if (e === entries.length) break;
    const entry = entries[e]!;
    if (compareKeys(key, entry.first, ID_INDEX_DIRS) < 0) continue;
    if (chunk.path !== entry.path) {
      const c = withKeys(keyOf, read(entry.path) as { items: unknown[] });
      chunk = { path: entry.path, keys: new Map(c.keys.map((k, i) => [JSON.stringify(k), i])), items: c.items };
    }
    const at = chunk.keys.get(JSON.stringify(key));
    if (at === undefined) continue;
    const item = chunk.items[at] as StoredParticipant;
    out.set(expandParticipant(item).id, { item, json: JSON.stringify(item) });
  }
  return out;
}
