// The participants family's pure rules, shared by the oracle (src/api/participants/query.ts, over
// SQLite), the renderer and the shim's composer (src/edge/compose/participants.ts, over snapshot files).
// Edge-safe: no Node imports. One implementation of: the `q` classification (spec "Rules for the
// participant list" 1–2), item matching, sort keys, page envelopes and cursors, `meta`, and the
// data-only rule deciding when `meta.filter_count` is exact or null (docs/snapshot-format.md,
// "Participants").
import type { ParamsOf } from '../handlers.js';
import { compareKeys, keysAfter, type Direction, type SortKey } from '../sort-keys.js';
import { foldText } from '../params.js';
import { orderDirs, orderOf, sortKeyOf } from '../routes/request.js';
import { ROUTES } from '../routes/table.js';
import type { OrderSpec } from '../routes/types.js';
import { FILTER_COUNT_CAP, PARTICIPANT_SORTS } from '../schemas/constants.js';
import type { ListMeta, ParticipantListItem, ParticipantListPage } from '../schemas/index.js';
import { parseParticipantId } from '../../feeds/ids.js';
import type { FacetCounter, FacetDimension } from './facets.js';
import type { GramLookup } from './grams.js';
import { nextCursor } from '../page.js';

export const LIST_ROUTE = 'participants.list';
export const EVENTS_ROUTE = 'participants.events';
export const HISTORY_ROUTE = 'participants.history';
export const DETAIL_ROUTE = 'participants.detail';
export const STATS_ROUTE = 'stats.participants';

export type ParticipantSort = (typeof PARTICIPANT_SORTS)[number];
export const DEFAULT_SORT: ParticipantSort = 'first_seen.desc';

/**
 * Where a list page reads from (docs/snapshot-format.md "Participants"):
 * - a candidate set of at most SMALL_SET_MAX items (an identifier lookup, the rarest trigram of a name
 *   search, the accepted values of one posting dimension) is read whole, filtered, sorted and paged in
 *   memory, and makes `filter_count` exact;
 * - otherwise the page walks a source list in the requested order from the cursor until it holds
 *   `limit` matches and has seen one more (or the list ends): every page but the last is full, and a
 *   page carries a `next_cursor` only when a further match exists. The walk stops early when the
 *   matches' exact count is known (a first page without a search: the facet cube) and all of them are
 *   on the page.
 * Either way the page is the first `limit` matches after the cursor in list order: the oracle answers
 * it with one SQL query whatever the plan.
 */
export const SMALL_SET_MAX = 1024;
/**
 * The participant lists' chunks hold at least this many items before a content-defined boundary
 * (src/render/lists.ts): a page of up to 200 items plus the one after it spans at most two chunks
 * where the matches are dense, and a sparse walk reads about half as many files as with 128 (the
 * decision and its costs: docs/snapshot-format.md "Participants").
 */
export const LIST_CHUNK_MIN_ITEMS = 256;
/**
 * Most values of one posting dimension (country, scheme, smp, ap) a page reads value by value: the
 * posting roots that give the smp and ap totals, and the lists of a small set. A dimension with more
 * values is matched item by item only: it is never the small set, and a lone smp or ap filter of more
 * values has `filter_count` null (its total would need a root per value). Answers stay exact; only
 * the reads stop growing with the length of the list (docs/api.md "Limits").
 */
export const POSTING_VALUES_MAX = 8;
/**
 * Most trigrams of a name search whose lists a page consults to find the rarest one (searchTrigrams);
 * the text itself is still matched whole.
 */
export const SEARCH_TRIGRAMS_MAX = 8;

/** Facet dimensions of the list filters (each a set of accepted values, or one value). */
export const FILTER_DIMENSIONS = ['country', 'scheme', 'smp', 'ap', 'registered', 'provenance'] as const;
export type FilterDimension = (typeof FILTER_DIMENSIONS)[number];
/**
 * Dimensions with a posting list per value (default order): high-cardinality or selective ones, and
 * the rare side of `registered` (hasPostingList).
 */
export const POSTING_DIMENSIONS = ['country', 'scheme', 'smp', 'ap', 'registered'] as const;
export type PostingDimension = (typeof POSTING_DIMENSIONS)[number];
/**
 * Posting dimensions whose lists hold one value only: `registered=false`, about 1% of the participants
 * (26,365 of 3 million at `peppol`), one or two in a main-list chunk, so a walk of the main list read
 * a chunk per match; `registered=true` is nearly everyone, and its walks read the main list densely.
 */
const POSTING_ONLY_VALUE: Partial<Record<PostingDimension, string>> = { registered: 'false' };
/** The one value of a posting dimension that has posting lists; undefined: every value has. */
export const postingOnlyValue = (dim: PostingDimension): string | undefined => POSTING_ONLY_VALUE[dim];
/** Whether the snapshot holds posting lists of this value of a posting dimension. */
export function hasPostingList(dim: PostingDimension, value: string): boolean {
  const only = postingOnlyValue(dim);
  return only === undefined || only === value;
}
/** Facet fields counted per chunk in the main lists (small value sets only: index size). */
export const MAIN_FACET_FIELDS = ['country', 'scheme', 'registered', 'provenance'] as const;

// ---------------------------------------------------------------------------------------------
// Partitions of the stored lists (docs/snapshot-format.md "Participants"). The main lists use the
// route's partition [sort]; the others use partitions no sort value can equal.

export const mainPartition = (sort: ParticipantSort): string[] => [sort];
/**
 * Posting list of one facet value, in the default order or in one of the other orders ORDERED_POSTINGS
 * names for its dimension. first_seen.asc reads the default order's list backward.
 */
export const postingPartition = (dim: PostingDimension, value: string, sort: ParticipantSort = DEFAULT_SORT): string[] => [sort, dim, value];
/**
 * The orders besides the first-seen ones in which a dimension's posting lists are also stored (and
 * read in the opposite direction for the opposite order: READ_REVERSED). The main lists do not count
 * smp and ap per index entry, and their values are many and mid-sized (200 SMPs, 1,500 seats over 3
 * million participants at `peppol`), so an SMP's or a seat's participants are spread along the name
 * and country orders: a walk of the main list read hundreds of chunks a page. A scheme's are spread
 * along the name orders likewise, and along the country orders within their countries: the main
 * lists count schemes per index entry, but a rare scheme of a large country (`0201`, 12,041 of Italy's
 * participants at `peppol`) is a few items in each of that country's chunks, and a page of 50 read
 * 10–14 files. A country's participants in a name order are a range of the country order's main list
 * (postingSource). These lists count the main lists' facets per index entry (ORDERED_POSTINGS_COUNTED).
 */
export const ORDERED_POSTINGS: Readonly<Record<PostingDimension, readonly ParticipantSort[]>> = {
  country: [],
  scheme: ['name.asc', 'country.asc'],
  smp: ['name.asc', 'country.asc'],
  ap: ['name.asc', 'country.asc'],
  registered: ['name.asc', 'country.asc'],
};
/**
 * The posting lists stored in other orders (ORDERED_POSTINGS) count MAIN_FACET_FIELDS per index entry,
 * as the main lists do: a walk of one with a filter on another dimension passes over the entries
 * without a wanted value (src/edge/compose/participants.ts mainSkip). A pair's matches can cluster
 * along an order (a seat's participants of a scheme without names are the last of its name-order list:
 * `scheme=0204&ap=…` in name order read every chunk of the seat's list before them, 12–27 files for a
 * page of one). The default order's posting lists count nothing per entry: thousands of them are
 * written side by side, each holding an unfinished chunk (its trigram lists do: countsFacets).
 */
export const ORDERED_POSTINGS_COUNTED: readonly string[] = MAIN_FACET_FIELDS;
/**
 * Whether a posting or name list stored in `sort` counts ORDERED_POSTINGS_COUNTED per index entry:
 * in the orders besides the default, and every name list (trigram, short, unregistered). A default-order trigram list counted
 * nothing until a name search with a filter walked one whole to find few matches or none (`q=gem`
 * with `provenance=discovered` read 300 files at `peppol`): with the counts, the walk passes over the
 * entries without the filter's values.
 */
export const countsFacets = (partition: readonly string[], sort: ParticipantSort): boolean => sort !== DEFAULT_SORT || trigramOf(partition) !== null || shortGramOf(partition) !== null || unregisteredGramOf(partition) !== null;
/**
 * The orders read from the lists of their opposite order, reversed (src/edge/list-reader.ts
 * scanReverse): every key field runs the other way and nulls stay last, which is the stored list
 * read backward except that each group's null block (no name, no country) is read in its place.
 * first_seen.asc is the default order's exact reverse (no nullable field).
 */
export const READ_REVERSED: Readonly<Partial<Record<ParticipantSort, ParticipantSort>>> = {
  'first_seen.asc': 'first_seen.desc',
  'name.desc': 'name.asc',
  'country.desc': 'country.asc',
};
/**
 * The orders stored as main lists: first_seen.desc, name.asc and country.asc. A walk of one of the
 * others reads its opposite's list reversed (mainSource). A cursor names the requested order all the
 * same (its key fields are the stored list's, in the other direction).
 */
export const MAIN_LIST_SORTS: readonly ParticipantSort[] = PARTICIPANT_SORTS.filter((s) => READ_REVERSED[s] === undefined);
/** The stored order whose lists a walk of `sort` reads, and whether reversed. */
export function mainSource(sort: ParticipantSort): { sort: ParticipantSort; backward: boolean } {
  const stored = READ_REVERSED[sort];
  return stored === undefined ? { sort, backward: false } : { sort: stored, backward: true };
}
/** Per key field of a stored order, whether it may be null (what scanReverse needs). */
export function nullableFields(sort: ParticipantSort): boolean[] {
  return listOrder(sort).fields.map((f) => f.nullable === true);
}
/** The country order whose main list holds a country's participants as a range in a name order. */
const COUNTRY_RANGE: Partial<Record<ParticipantSort, ParticipantSort>> = { 'name.asc': 'country.asc' };

/**
 * Where a walk of `sort` reads one value of `dim` densely (`backward`: the stored order's list read
 * reversed, mainSource):
 * - `posting`: a posting list, the default order's or one stored in another order (ORDERED_POSTINGS);
 * - `range`: a country's range of the country order's main list (country, then name, then id), whose
 *   keys less their first field are the name order's;
 * null where the dimension has neither in that order.
 */
export type PostingSource = { kind: 'posting' | 'range'; sort: ParticipantSort; backward: boolean };
export function postingSource(dim: PostingDimension, sort: ParticipantSort): PostingSource | null {
  const at = mainSource(sort);
  if (at.sort === DEFAULT_SORT || ORDERED_POSTINGS[dim].includes(at.sort)) return { kind: 'posting', ...at };
  const range = dim === 'country' ? COUNTRY_RANGE[at.sort] : undefined;
  return range === undefined ? null : { kind: 'range', sort: range, backward: at.backward };
}
/** The identifier index: every participant keyed by [value, id] ascending. */
export const ID_INDEX_PARTITION: readonly string[] = ['_ids'];
export const ID_INDEX_DIRS: Direction[] = ['asc', 'asc'];
/**
 * The cell list: every participant clustered by its facet combination, in the facet cube's cell order
 * (country, scheme, registered, provenance, smp, ap; null as ''), in the default order within a cell.
 * A filter combination's matches are runs of it (facets.ts cellRuns): a sparse combination reads them
 * whole and pages them in memory, in any order (docs/snapshot-format.md "Participants").
 */
export const CELLS_PARTITION: readonly string[] = ['_cells'];
export const CELL_KEY_FIELDS = 6;
export const CELLS_DIRS: Direction[] = ['asc', 'asc', 'asc', 'asc', 'asc', 'asc', 'desc', 'desc'];
/** An item's key in the cell list: its cell, then its default-order key. */
export function cellKey(item: ParticipantListItem): SortKey {
  return [item.country ?? '', item.scheme, item.registered ? 'true' : 'false', item.provenance, item.smp ?? '', item.ap_seat_id ?? '', ...listKey(listOrder(DEFAULT_SORT), item)];
}
/**
 * Items per chunk the shim assumes when it weighs a walk against reading a combination's runs: the
 * participant lists' chunks hold at least LIST_CHUNK_MIN_ITEMS (271 on average at `peppol`).
 */
export const CHUNK_ITEMS_ESTIMATE = 270;

/**
 * The key derivations of the participant lists' roots (format list@3, src/edge/derived-keys.ts): their
 * chunks store the items without their keys, which are a function of the item (about a fifth of a
 * chunk's JSON). A list in a main order (main, posting, trigram lists) derives the order's key
 * (listKey); the identifier index [value, id]; the cell list cellKey.
 */
export const PARTICIPANT_KEYS = {
  order: (sort: ParticipantSort): string => `participants/${sort}`,
  ids: 'participants/_ids',
  cells: 'participants/_cells',
} as const;

/**
 * Trigram posting list: participants whose folded name contains the trigram, in the default order (read
 * backward for first_seen.asc) or in one of TRIGRAM_ORDERS (read backward for its opposite).
 */
const TRIGRAMS_PARTITION = '_names';
export const trigramPartition = (trigram: string, sort: ParticipantSort = DEFAULT_SORT): string[] =>
  sort === DEFAULT_SORT ? [TRIGRAMS_PARTITION, trigram] : [sort, TRIGRAMS_PARTITION, trigram];
/**
 * The trigram of a default-order trigram list's partition (the inverse of trigramPartition); null for any
 * other list (the lists in TRIGRAM_ORDERS hold the same participants: the trigram table counts these).
 */
export const trigramOf = (partition: readonly string[]): string | null => (partition.length === 2 && partition[0] === TRIGRAMS_PARTITION && Array.from(partition[1]!).length === 3 ? partition[1]! : null);

/**
 * The short name lists: per gram of one or two code points without a space (shortSearchGramsOf), every
 * named participant whose folded name holds it, stored where the trigram lists are (`_names/<gram>`:
 * the gram's length tells the kinds apart; the default order and TRIGRAM_ORDERS), counting
 * ORDERED_POSTINGS_COUNTED per index entry. A name search of one or two code points has no trigram;
 * before these lists it walked the main list of its order, and its names cluster along the name and
 * country orders (`q=vi` in `country.asc` read 4,810–5,951 files a page at `peppol`). A text that
 * short is its gram: the list holds its matches exactly. A gram with a space is never a search's
 * text (the fold trims it) and has no list (docs/snapshot-format.md "Participants").
 */
export const SHORT_GRAM_MAX = 2;
/** The gram of a default-order short name list's partition (the inverse of trigramPartition for a gram of at most SHORT_GRAM_MAX code points); null for any other list. */
export const shortGramOf = (partition: readonly string[]): string | null => {
  if (partition.length !== 2 || partition[0] !== TRIGRAMS_PARTITION) return null;
  const n = Array.from(partition[1]!).length;
  return n >= 1 && n <= SHORT_GRAM_MAX ? partition[1]! : null;
};
/** Whether a folded search text is a short name list's gram: one or two code points (the fold leaves no space at either end). */
export const isShortGram = (folded: string): boolean => {
  const n = Array.from(folded).length;
  return n >= 1 && n <= SHORT_GRAM_MAX && !folded.includes(' ');
};
/** Distinct grams of one or two code points without a space of a folded text (the short name lists its participant is in), sorted by code point. */
export const shortSearchGramsOf = (folded: string): string[] => shortGramsOf(folded, SHORT_GRAM_MAX);

/**
 * The unregistered participants' name lists: per gram of one to UNREGISTERED_GRAM_MAX code points of a
 * folded name (shortGramsOf), the unregistered participants whose name holds it, stored where the
 * trigram lists are (the default order and TRIGRAM_ORDERS), counting ORDERED_POSTINGS_COUNTED per index
 * entry. They are about 1% of the participants (26,365 at `peppol`), so a common text's unregistered
 * matches are a few among its trigram's many candidates and among their own posting list's names
 * (`q=vil&registered=false`: 143 of `vil`'s 13,839 candidates) and a walk of either read a chunk or more per
 * match; in the list of their rarest gram they are most of the items (docs/snapshot-format.md
 * "Participants"). A text of at most three code points is a gram: its list holds its matches exactly.
 */
export const UNREGISTERED_GRAM_MAX = 3;
const UNREGISTERED_SUFFIX = ['registered', 'false'] as const;
export const unregisteredGramPartition = (gram: string, sort: ParticipantSort = DEFAULT_SORT): string[] => [...trigramPartition(gram, sort), ...UNREGISTERED_SUFFIX];
/** The gram of a default-order unregistered name list's partition (the inverse of unregisteredGramPartition); null for any other list. */
export const unregisteredGramOf = (partition: readonly string[]): string | null =>
  partition.length === 4 && partition[0] === TRIGRAMS_PARTITION && partition[2] === UNREGISTERED_SUFFIX[0] && partition[3] === UNREGISTERED_SUFFIX[1] ? partition[1]! : null;
/**
 * Distinct grams of one to `max` code points of a folded text that some search can ask for, sorted by
 * code point: a gram of fewer than three code points is a search's whole text (unregisteredSearchGrams,
 * isShortGram), which the fold trims, so one with a space is left out; a trigram with a space is a
 * longer text's trigram.
 */
export function shortGramsOf(folded: string, max: number = UNREGISTERED_GRAM_MAX): string[] {
  const cps = Array.from(folded);
  const out = new Set<string>();
  for (let i = 0; i < cps.length; i++) {
    let g = '';
    for (let n = 0; n < max && i + n < cps.length; n++) {
      g += cps[i + n]!;
      if (n >= 2 || !g.includes(' ')) out.add(g);
    }
  }
  return [...out].sort(compareCodePointStrings);
}
/**
 * The grams of a name search whose unregistered lists hold every unregistered match: the text itself
 * when it is a gram (at most UNREGISTERED_GRAM_MAX code points), otherwise each of its trigrams; none
 * for the empty text (every name holds it).
 */
export function unregisteredSearchGrams(folded: string): string[] {
  const n = Array.from(folded).length;
  return n === 0 ? [] : n <= UNREGISTERED_GRAM_MAX ? [folded] : trigramsOf(folded);
}
/**
 * The sizes of every unregistered name list, in one file (format as the trigram table's): a name
 * search with `registered=false` reads it, then its rarest gram's list. Its presence says the lists
 * are there (a snapshot written before them has neither).
 */
export const UNREGISTERED_GRAMS_PATH = 'f/participants/unregistered-grams.json';
export const UNREGISTERED_GRAMS_FORMAT = 'peppol-snapshot/participant-unregistered-grams@1';
/**
 * The orders besides the first-seen ones in which the trigram lists are also stored, counting
 * ORDERED_POSTINGS_COUNTED per index entry as the posting lists in those orders do (name.desc and
 * country.desc read them reversed). A name search of common trigrams only (the demo's names come from a
 * small vocabulary: `vil`, `ville`, `gem`) has no small candidate set; in a name or country order its
 * walk read its rarest trigram's list whole from the default order, 200–600 files a page at `peppol`.
 * In its own order that list holds the matches densely (docs/snapshot-format.md "Participants").
 */
export const TRIGRAM_ORDERS: readonly ParticipantSort[] = ['name.asc', 'country.asc'];
/** The stored order of the trigram list a walk of `sort` reads, and whether reversed; null where there is none. */
export function trigramSource(sort: ParticipantSort): { sort: ParticipantSort; backward: boolean } | null {
  const at = mainSource(sort);
  return at.sort === DEFAULT_SORT || TRIGRAM_ORDERS.includes(at.sort) ? at : null;
}

/**
 * The sizes of every trigram list, in one file: a name search of three trigrams or more reads it and
 * then the rarest trigram's root only, instead of a root per trigram (docs/snapshot-format.md
 * "Participants", rule 2). Pairs sorted by trigram in code-point order; a trigram without a list is
 * absent (no named participant holds it).
 */
export const TRIGRAMS_PATH = 'f/participants/trigrams.json';
export const TRIGRAMS_FORMAT = 'peppol-snapshot/participant-trigrams@1';
/** A table of list sizes by gram: the trigram table, the unregistered name lists' table. */
export interface GramCountTable<F extends string> {
  format: F;
  counts: Array<[gram: string, count: number]>;
}
export type TrigramCounts = GramCountTable<typeof TRIGRAMS_FORMAT>;
/** The table of these counts (gram → its list's size; lists of no item left out). */
export function gramCountTableOf<F extends string>(format: F, counts: ReadonlyMap<string, number>): GramCountTable<F> {
  const pairs = [...counts].filter(([, n]) => n > 0).sort((a, b) => compareCodePointStrings(a[0], b[0]));
  return { format, counts: pairs };
}
/** The trigram table of these counts. */
export const trigramCountsOf = (counts: ReadonlyMap<string, number>): TrigramCounts => gramCountTableOf(TRIGRAMS_FORMAT, counts);
/** Whether a parsed file is a table of this format (the renderer writes its pairs; verify checks them). */
export function isGramCountTable<F extends string>(v: unknown, format: F): v is GramCountTable<F> {
  return typeof v === 'object' && v !== null && (v as { format?: unknown }).format === format; // the one field read to tell
}
/** Whether a parsed file is a trigram table. */
export const isTrigramCounts = (v: unknown): v is TrigramCounts => isGramCountTable(v, TRIGRAMS_FORMAT);
/** The smallest number of trigrams for which a name search reads the trigram table rather than each trigram's root. */
export const TRIGRAM_TABLE_MIN = 3;
/** A gram's list size in a table (binary search: the pairs are sorted by code point); 0 when it has no list. */
export function gramCount(table: GramCountTable<string>, gram: string): number {
  let lo = 0;
  let hi = table.counts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const c = compareCodePointStrings(table.counts[mid]![0], gram);
    if (c === 0) return table.counts[mid]![1];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Search (`q`)

export type Search =
  /** A canonical id: the participant with this id (rule 1). */
  | { kind: 'id'; id: string; value: string }
  /** A bare identifier value: participants of any scheme with this value (rule 1). */
  | { kind: 'value'; value: string }
  /** Any other text: folded name contains it (rule 2). */
  | { kind: 'name'; text: string };

/**
 * A bare value is one token of identifier characters holding at least four digits (VAT, enterprise,
 * GLN and organisation numbers do; names such as "3m" or "studio54" stay name searches).
 */
const BARE_VALUE_RE = /^[a-z0-9][a-z0-9._:/+-]*$/;

/** Classifies a folded `q` (params textType already applied foldText). */
export function classifySearch(q: string): Search {
  const id = parseParticipantId(q);
  if (id) return { kind: 'id', id: id.id, value: id.value };
  if (BARE_VALUE_RE.test(q) && (q.match(/[0-9]/g)?.length ?? 0) >= 4) return { kind: 'value', value: q };
  return { kind: 'name', text: q };
}

/** The text names are matched on (the same fold as `q`). */
export const foldName = foldText;

/** Distinct trigrams (3 code points) of a folded text, sorted by code point; none under 3 code points. */
export function trigramsOf(folded: string): string[] {
  const cps = Array.from(folded);
  const out = new Set<string>();
  for (let i = 0; i + 3 <= cps.length; i++) out.add(cps[i]! + cps[i + 1]! + cps[i + 2]!);
  return [...out].sort(compareCodePointStrings);
}

/**
 * The trigrams of a name search whose list sizes decide the plan: every trigram of the text, or, above
 * SEARCH_TRIGRAMS_MAX, that many spread evenly over them in code-point order (the first included).
 */
export function searchTrigrams(folded: string): string[] {
  const all = trigramsOf(folded);
  if (all.length <= SEARCH_TRIGRAMS_MAX) return all;
  return Array.from({ length: SEARCH_TRIGRAMS_MAX }, (_, i) => all[Math.floor((i * all.length) / SEARCH_TRIGRAMS_MAX)]!);
}

function compareCodePointStrings(a: string, b: string): number {
  return compareKeys([a], [b], ['asc']);
}

// ---------------------------------------------------------------------------------------------
// Filters

/** The canonical list parameters: parseRequest's output for participants.list (its ParamDefs). */
export type ListParams = ParamsOf<'participants.list'>;

/** Active facet dimensions, in FILTER_DIMENSIONS order. */
export function activeDimensions(p: ListParams): FilterDimension[] {
  return FILTER_DIMENSIONS.filter((d) => p[d] !== undefined);
}

/** The values of a facet dimension an item carries (none for a null country, smp or seat). */
export function facetValues(item: ParticipantListItem, dim: FilterDimension): string[] {
  switch (dim) {
    case 'country':
      return item.country === null ? [] : [item.country];
    case 'scheme':
      return [item.scheme];
    case 'smp':
      return item.smp === null ? [] : [item.smp];
    case 'ap':
      return item.ap_seat_id === null ? [] : [item.ap_seat_id];
    case 'registered':
      return [item.registered ? 'true' : 'false'];
    case 'provenance':
      return [item.provenance];
  }
}

/** The accepted values of an active dimension (booleans as "true"/"false"). */
export function acceptedValues(p: ListParams, dim: FilterDimension): readonly string[] {
  const v = p[dim];
  if (v === undefined) return [];
  if (typeof v === 'boolean') return [v ? 'true' : 'false'];
  if (typeof v === 'string') return [v];
  return v;
}

/** Whether an item passes every filter and the search (AND across, OR within a list). */
export function itemMatches(item: ParticipantListItem, p: ListParams, search: Search | null): boolean {
  for (const d of activeDimensions(p)) {
    const want = acceptedValues(p, d);
    if (!facetValues(item, d).some((v) => want.includes(v))) return false;
  }
  if (search === null) return true;
  switch (search.kind) {
    case 'id':
      return item.id === search.id;
    case 'value':
      return item.value === search.value;
    case 'name':
      return item.name !== null && foldName(item.name).includes(search.text);
  }
}

// ---------------------------------------------------------------------------------------------
// Stored form

/**
 * A list item as the participant lists' chunks store it: the values of ParticipantListItem in field
 * order, without the field names (about 40% fewer bytes per item, so more items per chunk and fewer
 * bytes per page) and without the id, which is `scheme::value` (src/feeds/ids.ts). The composer
 * expands it back into the item, field for field.
 */
export type StoredParticipant = [
  scheme: string,
  value: string,
  name: string | null,
  country: string | null,
  registered: boolean,
  smp: string | null,
  ap_seat_id: string | null,
  ap_provider: string | null,
  provenance: ParticipantListItem['provenance'],
  first_seen_at: string,
];
/** The stored form before list@3 (docs/snapshot-format.md "Derived keys"): the id first. */
export type StoredParticipantWithId = [id: string, ...StoredParticipant];

export function storeParticipant(i: ParticipantListItem): StoredParticipant {
  // The id is left out because it is always the canonical `scheme::value`: a renderer bug otherwise.
  if (i.id !== `${i.scheme}::${i.value}`) throw new Error(`participant ${i.id} is not ${i.scheme}::${i.value}`);
  return [i.scheme, i.value, i.name, i.country, i.registered, i.smp, i.ap_seat_id, i.ap_provider, i.provenance, i.first_seen_at];
}

export function expandParticipant(s: StoredParticipant | StoredParticipantWithId): ParticipantListItem {
  // A snapshot written before list@3 stores the id first (11 values): read too, so that a shim
  // deployed before such a snapshot is replaced answers it.
  const v: StoredParticipant = s.length === 11 ? [s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10]] : s;
  return {
    id: `${v[0]}::${v[1]}`,
    scheme: v[0],
    value: v[1],
    name: v[2],
    country: v[3],
    registered: v[4],
    smp: v[5],
    ap_seat_id: v[6],
    ap_provider: v[7],
    provenance: v[8],
    first_seen_at: v[9],
  };
}

// ---------------------------------------------------------------------------------------------
// Orders, keys, pages

export function listOrder(sort: ParticipantSort): OrderSpec {
  // participants.list always has a list descriptor (src/api/routes/table.ts).
  return orderOf(ROUTES[LIST_ROUTE].list!, { sort });
}

/** Sort key of a list item under an order (first_seen as epoch ms). */
export function listKey(order: OrderSpec, item: ParticipantListItem): SortKey {
  return sortKeyOf(order, item as unknown as Record<string, unknown>);
}


/**
 * ParticipantListPage; `prev_cursor` is always null (the list has no backward parameter). `nextKey` is
 * the key the next page continues after (null on the last page).
 */
export function listPage(sort: ParticipantSort, items: ParticipantListItem[], nextKey: SortKey | null, meta: ListMeta | undefined): ParticipantListPage {
  const page: ParticipantListPage = {
    items,
    next_cursor: nextKey === null ? null : nextCursor(LIST_ROUTE, mainPartition(sort), nextKey),
    prev_cursor: null,
  };
  if (meta !== undefined) page.meta = meta;
  return page;
}

/**
 * `meta` (docs/snapshot-format.md "Counts and facets"): `total` is the list's count (exact); the
 * facets are `counter`'s: the matches, or with mode 'filters' (a snapshot without the grams index: an
 * uncounted search) the filter matches without the search, flagged `facets_without_q`.
 * `filter_count` is `counter`'s total, capped; null without filters and search, and with mode
 * 'filters'.
 */
export function listMeta(p: ListParams, total: number, mode: MetaMode, counter: FacetCounter): ListMeta {
  const meta: ListMeta = { total_count: total, total_count_estimated: false, filter_count: null, facets: counter.buckets() };
  const filtered = p.q !== undefined || activeDimensions(p).length > 0;
  if (mode === 'filters') meta.facets_without_q = true;
  else if (filtered) {
    meta.filter_count = Math.min(counter.total, FILTER_COUNT_CAP);
    meta.filter_count_capped = counter.total > FILTER_COUNT_CAP;
  }
  return meta;
}

/**
 * The rarest trigram of a name search: the trigram (first in code-point order among equals) and its
 * list size; `setMax`, when given, the most items of that list a page reads whole (SMALL_SET_MAX
 * otherwise).
 */
export interface RarestTrigram {
  trigram: string;
  count: number;
  setMax?: number;
}

/**
 * Where a page's items come from (data only; the composer evaluates it, and the tests with the oracle's sizes):
 * - `set`: a small candidate set, read whole (`ids`: an identifier search; `trigram`: the rarest trigram
 *   of a name search holds at most SMALL_SET_MAX participants, or the grams index names a trigram;
 *   `gram`: the grams index names the gram of the search whose list holds every match
 *   (src/api/participants/grams.ts); `none`: the grams index says no name holds the search;
 *   `posting`: the accepted values of the smallest active posting dimension hold at most
 *   SMALL_SET_MAX participants together);
 * - `walk`: a source list walked in the requested order until the page is full: the smallest of the
 *   single-valued posting lists stored in that order (postingSource: every dimension's in the first-seen
 *   orders, others per ORDERED_POSTINGS, a country's range of the country order's main list in a name
 *   order) and the rarest trigram's list in that order (trigramSource; ties: country, scheme, smp, ap,
 *   then the trigram), when one is active; otherwise the main list of the order.
 * `rarest` is null unless the search is a name search of 3+ code points (the rarest of searchTrigrams);
 * `postingTotals` holds the total of the accepted values per planned posting dimension
 * (plannedPostingDimensions: at most POSTING_VALUES_MAX values), in POSTING_DIMENSIONS order.
 */
export type ListPlan =
  | { kind: 'set'; source: 'ids' }
  | { kind: 'set'; source: 'trigram'; trigram: string }
  | { kind: 'set'; source: 'gram'; gram: string }
  | { kind: 'set'; source: 'none' }
  | { kind: 'set'; source: 'posting'; dim: PostingDimension }
  | { kind: 'walk'; source: 'main' }
  | { kind: 'walk'; source: 'posting'; dim: PostingDimension; value: string }
  | { kind: 'walk'; source: 'trigram'; trigram: string };

export function planList(p: ListParams, search: Search | null, rarest: RarestTrigram | null, postingTotals: ReadonlyMap<PostingDimension, number>, gram: GramLookup | null = null): ListPlan {
  if (search !== null && search.kind !== 'name') return { kind: 'set', source: 'ids' };
  if (rarest !== null && rarest.count <= (rarest.setMax ?? SMALL_SET_MAX)) return { kind: 'set', source: 'trigram', trigram: rarest.trigram };
  // A search that is not a frequent gram: its gram's list holds every match (a trigram's is its trigram list).
  if (gram?.kind === 'none') return { kind: 'set', source: 'none' };
  if (gram?.kind === 'list') return Array.from(gram.gram).length === 3 ? { kind: 'set', source: 'trigram', trigram: gram.gram } : { kind: 'set', source: 'gram', gram: gram.gram };
  // Only the values with posting lists (hasPostingList) are a source.
  const listed = (d: PostingDimension): boolean => acceptedValues(p, d).every((v) => hasPostingList(d, v));
  let small: PostingDimension | null = null;
  for (const [d, n] of postingTotals) if (n <= SMALL_SET_MAX && listed(d) && (small === null || n < postingTotals.get(small)!)) small = d;
  if (small !== null) return { kind: 'set', source: 'posting', dim: small };
  let best: ListPlan | null = null;
  let bestCount = Infinity;
  for (const [d, n] of postingTotals) {
    const values = acceptedValues(p, d);
    if (values.length === 1 && n < bestCount && listed(d) && postingSource(d, p.sort) !== null) {
      best = { kind: 'walk', source: 'posting', dim: d, value: values[0]! };
      bestCount = n;
    }
  }
  // The trigram lists are in the default order and TRIGRAM_ORDERS (each read backward for its opposite).
  if (trigramSource(p.sort) !== null && rarest !== null && rarest.count < bestCount) best = { kind: 'walk', source: 'trigram', trigram: rarest.trigram };
  return best ?? { kind: 'walk', source: 'main' };
}

/**
 * Where the shim counts `meta` from (docs/snapshot-format.md "Counts and facets"; the oracle counts
 * every request exactly, in SQL):
 * - 'cube': no search: the facet cube (every filter combination is a set of its cells);
 * - 'set': a search answered from a small candidate set: the set's matches, read whole;
 * - 'gram': a name search that is a frequent gram, answered by a walk: its participants per cell of
 *   the cube (src/api/participants/grams.ts gramCubeCounts);
 * - 'filters': a name search answered by a walk in a snapshot without the grams index: its matches
 *   are not counted (filter_count null); the facets count the filter matches (the cube) and say so
 *   (`facets_without_q`).
 */
export type MetaMode = 'cube' | 'set' | 'gram' | 'filters';

export function metaMode(search: Search | null, plan: ListPlan, gram: GramLookup | null): MetaMode {
  if (search === null) return 'cube';
  if (plan.kind === 'set') return 'set';
  return gram?.kind === 'frequent' ? 'gram' : 'filters';
}

/** The accepted values of each active facet dimension (the cube's filter). */
export function facetAccepts(p: ListParams): Partial<Record<FacetDimension, readonly string[]>> {
  const out: Partial<Record<FacetDimension, readonly string[]>> = {};
  for (const d of activeDimensions(p)) out[d] = acceptedValues(p, d);
  return out;
}

/**
 * Takes a walk's page from its source items, offered in list order from after the cursor: the first
 * `limit` matches, and whether a further match follows (the page then continues after its last item).
 * `expected`, when known, is the number of matches after the cursor: once all of them are taken the
 * walk stops without reading to the end of the source.
 */
export class PageCollector {
  readonly items: ParticipantListItem[] = [];
  private readonly keys: SortKey[] = [];
  private next: SortKey | null = null;
  private done: boolean;

  constructor(
    private readonly p: ListParams,
    private readonly search: Search | null,
    private readonly expected?: number,
  ) {
    this.done = expected === 0;
  }

  /** Whether the page is complete (offer no more). */
  get complete(): boolean {
    return this.done;
  }

  /** Offers the next source item; false when the page is complete (offer no more). */
  offer(item: ParticipantListItem, key: SortKey): boolean {
    if (this.done) return false;
    if (itemMatches(item, this.p, this.search)) {
      if (this.items.length === this.p.limit) {
        this.next = this.keys[this.keys.length - 1]!;
        this.done = true;
        return false;
      }
      this.items.push(item);
      this.keys.push(key);
      if (this.items.length === this.expected) this.done = true;
    }
    return !this.done;
  }

  /** The key the next page continues after; null when no further match exists. */
  get nextKey(): SortKey | null {
    return this.next;
  }
}

/** A small candidate set's page: its matches sorted in list order, paged after the cursor in memory. */
export function setPage(
  candidates: readonly ParticipantListItem[],
  p: ListParams,
  search: Search | null,
  order: OrderSpec,
): { items: ParticipantListItem[]; nextKey: SortKey | null; matches: ParticipantListItem[] } {
  const dirs = orderDirs(order);
  const after = keysAfter(dirs, p.cursor?.key);
  const all = candidates.filter((i) => itemMatches(i, p, search)).map((item) => ({ item, key: listKey(order, item) }));
  all.sort((a, b) => compareKeys(a.key, b.key, dirs));
  const rest = all.filter((e) => after(e.key));
  const page = rest.slice(0, p.limit);
  return { items: page.map((e) => e.item), nextKey: rest.length > p.limit ? page[page.length - 1]!.key : null, matches: all.map((e) => e.item) };
}

/** Active posting dimensions of a request. */
export function activePostingDimensions(p: ListParams): PostingDimension[] {
  return POSTING_DIMENSIONS.filter((d) => p[d] !== undefined);
}

/** Active posting dimensions a page may read value by value (at most POSTING_VALUES_MAX values): the keys of planList's `postingTotals`. */
export function plannedPostingDimensions(p: ListParams): PostingDimension[] {
  return activePostingDimensions(p).filter((d) => acceptedValues(p, d).length <= POSTING_VALUES_MAX);
}

