// The grams index: what counts every name search of the participant list exactly (issue 14;
// docs/snapshot-format.md "Participants", "Counting name searches: the grams index"). Edge-safe: the
// renderer writes these files (src/render/grams.ts), the shim reads them (src/edge/compose/participants.ts).
//
// A gram is a run of code points of a folded name (plan.ts foldName). A gram is frequent when more
// than GRAM_THRESHOLD named participants hold it; frequent grams are closed under taking grams (a
// gram of a frequent gram is held at least as often). A name search's text is either frequent, and
// its matches are counted per facet cell (the gram's cell counts, summed over the cells a filter
// accepts: any filters), or it holds an infrequent gram, and all its matches are among that gram's
// names, at most GRAM_THRESHOLD: a small set, read whole. The index stores:
// - dictionary shards: per frequent gram, the code points after it that make an infrequent gram, each
//   with the length of the shortest infrequent gram that ends there (whose names are listed); per
//   infrequent gram of one or two code points, the gram whose names are listed;
// - cell shards (binary): per frequent gram, its named participants per cell of the facet cube;
// - gram lists: the participants holding each minimal infrequent gram (an infrequent gram whose grams
//   a code point shorter are frequent) of one, two, four or more code points; those of three are the
//   trigram lists.
import { encodeSegment } from '../paths.js';
import { fnv1aMixed } from '../fnv1a.js';
import { compareCodePoints } from '../sort-keys.js';
import { addCodeSums, CUBE_STRIDE, FACET_DIMENSIONS, FacetCounter, type FacetCube, type FacetDimension } from './facets.js';
import type { StoredParticipant } from './plan.js';

/**
 * A gram held by more named participants than this is frequent (counted per cell); a search holding a
 * gram held by fewer reads that gram's names whole (plan.ts SMALL_SET_MAX: the same bound).
 */
export const GRAM_THRESHOLD = 1024;

export const GRAMS_PREFIX = 'f/participants/grams/';
export const GRAM_DICT_FORMAT = 'peppol-snapshot/participant-gram-dict@1';
export const GRAM_CELLS_FORMAT = 'peppol-snapshot/participant-gram-cells@1';
export const GRAM_LIST_FORMAT = 'peppol-snapshot/participant-gram-list@1';
/**
 * Dictionary shards (by a gram's key: gramKey): every one is written, an empty one too. At `peppol`
 * 1.2 MB in all, about 5 KB a shard.
 */
export const GRAM_DICT_SHARDS = 256;
/**
 * Cell shards (by the frequent gram): every one is written, an empty one too. At `peppol` 34.7 MB in
 * all, about 136 KB a shard, of which a search decodes its gram's cells only; a cycle that changes
 * names rewrites most of them, so fewer shards are fewer objects a cycle.
 */
export const GRAM_CELL_SHARDS = 256;

/** The code points of a text. */
export const codePointsOf = (s: string): string[] => Array.from(s);

/** The dictionary key of a gram: its first three code points (the whole gram when shorter). */
export function gramKey(gram: string): string {
  const cps = codePointsOf(gram);
  return cps.length <= 3 ? gram : cps.slice(0, 3).join('');
}

/** A hash of a string into `n` shards: FNV-1a finished with murmur3's mixer. */
function shardOf(s: string, n: number): number {
  return fnv1aMixed(s) % n;
}

const hex3 = (n: number): string => n.toString(16).padStart(3, '0');

/** The dictionary shard holding a gram's entry (by its key). */
export function gramDictShard(gram: string): number {
  return shardOf(gramKey(gram), GRAM_DICT_SHARDS);
}
export function gramDictPath(shard: number): string {
  return `${GRAMS_PREFIX}dict/${hex3(shard)}.json`;
}
/** The cell shard holding a frequent gram's cell counts. */
export function gramCellShard(gram: string): number {
  return shardOf(gram, GRAM_CELL_SHARDS);
}
export function gramCellsPath(shard: number): string {
  return `${GRAMS_PREFIX}cells/${hex3(shard)}.bin`;
}
/** The list of a minimal infrequent gram's participants (not of a trigram: that is its trigram list). */
export function gramListPath(gram: string): string {
  return `${GRAMS_PREFIX}list/${encodeSegment(gram)}.json`;
}

/**
 * A dictionary shard. `frequent`: each frequent gram whose key hashes here, with its extensions: per
 * code point after it that makes an infrequent gram held by some name, the length (in code points) of
 * the shortest infrequent gram ending at that code point (a suffix of the extension: its names are
 * listed, a small set holding every name that holds the extension). Grams of one or two code points
 * have none (a search that long is looked up by itself). `infrequent`: each infrequent gram of one or
 * two code points held by some name, with the gram whose list holds its names (itself, or one of its
 * code points). Keys in code-point order.
 */
export interface GramDict {
  format: typeof GRAM_DICT_FORMAT;
  frequent: Record<string, Record<string, number>>;
  infrequent: Record<string, string>;
}

export function isGramDict(v: unknown): v is GramDict {
  return typeof v === 'object' && v !== null && (v as { format?: unknown }).format === GRAM_DICT_FORMAT; // the one field read to tell
}

/** A gram list: the participants holding the gram, in the default order (first_seen.desc). */
export interface GramList {
  format: typeof GRAM_LIST_FORMAT;
  items: StoredParticipant[];
}

export function isGramList(v: unknown): v is GramList {
  return typeof v === 'object' && v !== null && (v as { format?: unknown }).format === GRAM_LIST_FORMAT && Array.isArray((v as { items?: unknown }).items); // the fields read
}

/**
 * What a name search's text is, by the dictionary shard of its key (gramDictShard):
 * - frequent: its matches are counted by its cell counts (gramCellShard);
 * - list: every match holds `gram`, whose names are listed (gramListPath; a trigram: its trigram list);
 * - none: no name holds it.
 */
export type GramLookup = { kind: 'frequent' } | { kind: 'list'; gram: string } | { kind: 'none' };

export function lookupGram(dict: GramDict, text: string): GramLookup {
  const cps = codePointsOf(text);
  if (cps.length <= 2) {
    if (Object.hasOwn(dict.frequent, text)) return { kind: 'frequent' };
    return Object.hasOwn(dict.infrequent, text) ? { kind: 'list', gram: dict.infrequent[text]! } : { kind: 'none' };
  }
  // The longest frequent prefix (frequent grams are closed under prefixes).
  let prefix = '';
  let n = 0;
  for (let i = 3; i <= cps.length; i++) {
    const p = cps.slice(0, i).join('');
    if (!Object.hasOwn(dict.frequent, p)) break;
    prefix = p;
    n = i;
  }
  // The first trigram is not frequent: its trigram list holds every match (or no name holds it).
  if (n === 0) return { kind: 'list', gram: cps.slice(0, 3).join('') };
  if (n === cps.length) return { kind: 'frequent' };
  const ext = dict.frequent[prefix]!;
  const c = cps[n]!;
  if (!Object.hasOwn(ext, c)) return { kind: 'none' };
  const len = ext[c]!;
  return { kind: 'list', gram: cps.slice(n + 1 - len, n + 1).join('') };
}

// ---------------------------------------------------------------------------------------------
// Cell shards

/**
 * A cell shard, little-endian: a u32 header length, the JSON header `{"format", "grams": [[gram,
 * count, offset, cells], …]}` (grams in code-point order; `count` the named participants holding the
 * gram; `offset` where its cells start in the body, in bytes after the header; `cells` how many), then
 * the body: per gram, `cells` pairs of unsigned LEB128 varints, the cell's index in the facet cube
 * less the previous cell's (the first: the index itself) and the gram's participants in it.
 */
interface CellShardHeader {
  format: typeof GRAM_CELLS_FORMAT;
  grams: Array<[gram: string, count: number, offset: number, cells: number]>;
}

/** A frequent gram's participants per cube cell: ascending cube cell indexes and their counts. */
export interface GramCells {
  count: number;
  cells: Uint32Array;
  counts: Uint32Array;
}

function pushVarint(out: number[], v: number): void {
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** A cell shard's bytes from its grams (any order) and their cells (ascending). */
export function encodeGramCells(grams: ReadonlyArray<{ gram: string; cells: ArrayLike<number>; counts: ArrayLike<number> }>): Uint8Array {
  const sorted = [...grams].sort((a, b) => compareCodePoints(a.gram, b.gram));
  const body: number[] = [];
  const header: CellShardHeader = { format: GRAM_CELLS_FORMAT, grams: [] };
  for (const g of sorted) {
    const offset = body.length;
    let count = 0;
    let prev = 0;
    for (let i = 0; i < g.cells.length; i++) {
      pushVarint(body, g.cells[i]! - prev);
      pushVarint(body, g.counts[i]!);
      prev = g.cells[i]!;
      count += g.counts[i]!;
    }
    header.grams.push([g.gram, count, offset, g.cells.length]);
  }
  const head = new TextEncoder().encode(JSON.stringify(header));
  const bytes = new Uint8Array(4 + head.length + body.length);
  new DataView(bytes.buffer).setUint32(0, head.length, true);
  bytes.set(head, 4);
  bytes.set(body, 4 + head.length);
  return bytes;
}

/** The header of a cell shard's bytes; null when they are not one. */
function cellShardHeader(bytes: Uint8Array): { header: CellShardHeader; body: number } | null {
  if (bytes.length < 4) return null;
  const headLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if (4 + headLength > bytes.length) return null;
  try {
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headLength))) as CellShardHeader;
    return header.format === GRAM_CELLS_FORMAT && Array.isArray(header.grams) ? { header, body: 4 + headLength } : null;
  } catch {
    return null;
  }
}

/** Decodes `n` cells of a gram from `at` in the bytes; null when they run past the end. */
function decodeCells(bytes: Uint8Array, at: number, n: number, count: number): GramCells | null {
  const cells = new Uint32Array(n);
  const counts = new Uint32Array(n);
  let prev = 0;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (at >= bytes.length) throw new RangeError('varint past the end');
      const b = bytes[at++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  try {
    for (let i = 0; i < n; i++) {
      prev += varint();
      cells[i] = prev;
      counts[i] = varint();
    }
  } catch {
    return null;
  }
  return { count, cells, counts };
}

/**
 * A gram's cells from a cell shard's bytes: undefined when the shard does not hold the gram (it is not
 * frequent), null when the bytes are not a cell shard.
 */
export function gramCellsOf(bytes: Uint8Array, gram: string): GramCells | undefined | null {
  const h = cellShardHeader(bytes);
  if (h === null) return null;
  const grams = h.header.grams;
  let lo = 0;
  let hi = grams.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const c = compareCodePoints(grams[mid]![0], gram);
    if (c === 0) {
      const [, count, offset, n] = grams[mid]!;
      return decodeCells(bytes, h.body + offset, n, count);
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return undefined;
}

/** Every gram of a cell shard's bytes with its cells (verify); null when they are not a cell shard. */
export function allGramCells(bytes: Uint8Array): Array<{ gram: string; cells: GramCells }> | null {
  const h = cellShardHeader(bytes);
  if (h === null) return null;
  const out: Array<{ gram: string; cells: GramCells }> = [];
  for (const [gram, count, offset, n] of h.header.grams) {
    const cells = decodeCells(bytes, h.body + offset, n, count);
    if (cells === null) return null;
    out.push({ gram, cells });
  }
  return out;
}

/**
 * The count and facets of a frequent gram's participants whose facet values pass `accepts` (per
 * dimension: the accepted values, or undefined for no filter on it): cubeCounts weighted by the
 * gram's participants per cell instead of the cell's.
 */
export function gramCubeCounts(cube: FacetCube, accepts: Partial<Record<FacetDimension, readonly string[]>>, g: GramCells): FacetCounter {
  const wanted = FACET_DIMENSIONS.map((dim) => {
    const want = accepts[dim];
    if (want === undefined) return null;
    const set = new Set(want);
    return Uint8Array.from(cube.values[dim], (v) => (set.has(v) ? 1 : 0));
  });
  const sums = FACET_DIMENSIONS.map((dim) => new Float64Array(cube.values[dim].length));
  let total = 0;
  const { cells } = cube;
  const nCells = cells.length / CUBE_STRIDE;
  for (let i = 0; i < g.cells.length; i++) {
    const cell = g.cells[i]!;
    if (cell >= nCells) throw new RangeError(`gram cell ${cell} is not a cell of the cube (${nCells})`);
    const c = cell * CUBE_STRIDE;
    let pass = true;
    for (let d = 0; d < FACET_DIMENSIONS.length && pass; d++) {
      const mask = wanted[d];
      if (mask === null || mask === undefined) continue;
      const code = cells[c + d]!;
      if (code < 0 || mask[code] !== 1) pass = false;
    }
    if (!pass) continue;
    const n = g.counts[i]!;
    total += n;
    for (let d = 0; d < FACET_DIMENSIONS.length; d++) {
      const code = cells[c + d]!;
      if (code >= 0) sums[d]![code] = sums[d]![code]! + n;
    }
  }
  const counter = new FacetCounter();
  counter.label(cube.labels);
  addCodeSums(counter, cube, total, sums);
  return counter;
}
