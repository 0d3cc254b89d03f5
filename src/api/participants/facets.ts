// The participant list's `meta` counts: `filter_count` and the facets of the match set, shared by the
// oracle (src/api/participants/query.ts), the renderer (the facet cube) and the shim's composer.
// Edge-safe: no Node imports. The rule (which requests are counted, where the counts come from) is
// stated once in docs/snapshot-format.md, "Participants" ("Counts and facets").
import { compareCodePoints } from '../sort-keys.js';
import type { FacetBucket, ParticipantListItem } from '../schemas/index.js';
import { encodeSegment } from '../paths.js';

/** The facets of ListMeta and ParticipantStats, in their key order. */
export const FACET_DIMENSIONS = ['country', 'scheme', 'registered', 'provenance', 'smp', 'ap'] as const;
export type FacetDimension = (typeof FACET_DIMENSIONS)[number];

export type Facets = Record<FacetDimension, FacetBucket[]>;

/** The facets whose buckets carry a label: the scheme's name, the curated provider behind a seat. */
export const LABELLED_DIMENSIONS = ['scheme', 'ap'] as const;
export type LabelledDimension = (typeof LABELLED_DIMENSIONS)[number];
/** Labels by facet value, for the values that have one. Data, not code: the shim holds no code list. */
export type FacetLabels = Record<LabelledDimension, Record<string, string>>;

const noLabels = (): FacetLabels => ({ scheme: {}, ap: {} });

/** A participant's value in each facet dimension (null: no bucket: a discovered participant's country, no SMP, no seat). */
export type FacetTuple = readonly [country: string | null, scheme: string | null, registered: string | null, provenance: string | null, smp: string | null, ap: string | null];

export function facetTupleOf(item: ParticipantListItem): FacetTuple {
  return [item.country, item.scheme, item.registered ? 'true' : 'false', item.provenance, item.smp, item.ap_seat_id];
}

const byCodePoint = compareCodePoints;

type LabelSource = Readonly<Record<string, string>> | ReadonlyMap<string, string>;

/**
 * Sums participants per facet value. `buckets()` lists every value with a count (no top-N cut) by
 * count descending, then value in code-point order, with the labels it was given (`label`, and the
 * items' `ap_provider` for their seats).
 */
export class FacetCounter {
  private readonly counts = FACET_DIMENSIONS.map(() => new Map<string, number>());
  // The labels as given, looked up when the buckets are listed: a facet vector carries a label for
  // each of its seats (over a thousand), and copying them per vector cost more than the sums.
  private readonly labelSources: Record<LabelledDimension, LabelSource[]> = { scheme: [], ap: [] };
  private readonly itemLabels = new Map<string, string>();
  total = 0;

  /** Adds the counts of one facet value's participants per value of every facet (a FacetVector's). */
  addVector(v: FacetVector): void {
    for (let d = 0; d < FACET_DIMENSIONS.length; d++) {
      const m = this.counts[d]!;
      const counts = v.counts[FACET_DIMENSIONS[d]!];
      for (const value in counts) m.set(value, (m.get(value) ?? 0) + counts[value]!);
    }
    this.total += v.count;
    this.label(v.labels);
  }

  add(tuple: FacetTuple, n = 1): void {
    this.total += n;
    for (let d = 0; d < FACET_DIMENSIONS.length; d++) {
      const v = tuple[d];
      if (v === null || v === undefined) continue;
      const m = this.counts[d]!;
      m.set(v, (m.get(v) ?? 0) + n);
    }
  }

  /** Adds `total` participants and, per dimension (by index), their counts by value. */
  addSums(total: number, countsOf: (d: number) => ReadonlyMap<string, number>): void {
    this.total += total;
    for (let d = 0; d < FACET_DIMENSIONS.length; d++) {
      const m = this.counts[d]!;
      for (const [value, n] of countsOf(d)) m.set(value, (m.get(value) ?? 0) + n);
    }
  }

  addItem(item: ParticipantListItem): void {
    this.add(facetTupleOf(item));
    if (item.ap_seat_id !== null && item.ap_provider !== null) this.itemLabels.set(item.ap_seat_id, item.ap_provider);
  }

  /** Labels of facet values (scheme → its name, seat id → curated provider name); kept, not copied. */
  label(labels: Partial<Record<LabelledDimension, LabelSource>>): void {
    for (const dim of LABELLED_DIMENSIONS) {
      const l = labels[dim];
      if (l !== undefined) this.labelSources[dim].push(l);
    }
  }

  /** A value's label: the latest given wins, as if each were copied over the ones before. */
  private labelOf(dim: LabelledDimension, value: string): string | undefined {
    if (dim === 'ap') {
      const l = this.itemLabels.get(value);
      if (l !== undefined) return l;
    }
    const sources = this.labelSources[dim];
    for (let i = sources.length - 1; i >= 0; i--) {
      const src = sources[i]!;
      const l = src instanceof Map ? src.get(value) : Object.hasOwn(src, value) ? (src as Readonly<Record<string, string>>)[value] : undefined;
      if (l !== undefined) return l;
    }
    return undefined;
  }

  buckets(): Facets {
    const out = {} as Facets;
    FACET_DIMENSIONS.forEach((dim, d) => {
      const list: FacetBucket[] = [...this.counts[d]!].map(([value, count]) => ({ value, count }));
      list.sort((a, b) => b.count - a.count || byCodePoint(a.value, b.value));
      for (const b of list) {
        const label = dim === 'scheme' || dim === 'ap' ? this.labelOf(dim, b.value) : undefined;
        if (label !== undefined) b.label = label;
      }
      out[dim] = list;
    });
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// The facet cube

export const CUBE_FORMAT = 'peppol-snapshot/participant-cube@1';
/** Where the renderer writes the cube, in binary (encodeCube; an internal object, never an answer). */
export const CUBE_PATH = 'f/participants/cube.bin';
/** Where snapshots written before the binary cube have it, as JSON: the shim reads it when CUBE_PATH is absent. */
export const CUBE_JSON_PATH = 'f/participants/cube.json';

/**
 * Every distinct combination of the six facet values among the participants, with how many hold it
 * (22,535 combinations for 3,016,199 participants at the `peppol` demo). `values` is each dimension's
 * dictionary (code-point order); `cells` is flat: per combination the six dictionary indexes in
 * FACET_DIMENSIONS order (-1 for null) and the count. `labels` names the schemes of the code list
 * and the seats with a curated provider. Any filter combination over the six dimensions is a set of combinations, so its count and
 * its facets are sums over the cube.
 */
export interface FacetCube {
  format: typeof CUBE_FORMAT;
  values: Record<FacetDimension, string[]>;
  labels: FacetLabels;
  cells: readonly number[] | Int32Array;
}

export const CUBE_STRIDE = FACET_DIMENSIONS.length + 1;

/** The binary cube's header (encodeCube). */
export const CUBE_BINARY_FORMAT = 'peppol-snapshot/participant-cube@2';
interface CubeHeader {
  format: typeof CUBE_BINARY_FORMAT;
  values: Record<FacetDimension, string[]>;
  labels: FacetLabels;
  /** Combinations (cells). */
  cells: number;
  /** Bytes of each dimension's codes, in FACET_DIMENSIONS order. */
  widths: Array<1 | 2 | 4>;
}

/** Bytes per code of a dictionary of `n` values (the largest code of the width stands for null). */
const widthFor = (n: number): 1 | 2 | 4 => (n < 0xff ? 1 : n < 0xffff ? 2 : 4);
const NULL_CODE = { 1: 0xff, 2: 0xffff, 4: 0xffffffff } as const;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** The dimensions' code columns in stored order: wider first (each aligned), then FACET_DIMENSIONS order. */
const codeColumns = (widths: ReadonlyArray<1 | 2 | 4>): number[] => ([4, 2, 1] as const).flatMap((w) => widths.flatMap((x, d) => (x === w ? [d] : [])));

/**
 * The cube as the renderer stores it: parsing the JSON cube's array of 160,000 numbers took 7 of a
 * page's 12 ms at `peppol`. Layout, little-endian: a u32 header length, the JSON header (CubeHeader:
 * the dictionaries, the labels, the cell count, the code widths), zeros to a multiple of 4; then
 * columns of one value per cell: the counts (u32), then the codes of each dimension of width 4, of
 * width 2, of width 1, each in FACET_DIMENSIONS order.
 */
export function encodeCube(cube: FacetCube): Uint8Array {
  const n = cube.cells.length / CUBE_STRIDE;
  const widths = FACET_DIMENSIONS.map((dim) => widthFor(cube.values[dim].length));
  const header: CubeHeader = { format: CUBE_BINARY_FORMAT, values: cube.values, labels: cube.labels, cells: n, widths };
  const head = new TextEncoder().encode(JSON.stringify(header));
  const start = Math.ceil((4 + head.length) / 4) * 4;
  const bytes = new Uint8Array(start + n * (4 + widths.reduce<number>((a, w) => a + w, 0)));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, head.length, true);
  bytes.set(head, 4);
  let at = start;
  for (let c = 0; c < n; c++, at += 4) view.setUint32(at, cube.cells[c * CUBE_STRIDE + FACET_DIMENSIONS.length]!, true);
  for (const d of codeColumns(widths)) {
    const w = widths[d]!;
    for (let c = 0; c < n; c++, at += w) {
      const code = cube.cells[c * CUBE_STRIDE + d]!;
      const v = code < 0 ? NULL_CODE[w] : code;
      if (w === 4) view.setUint32(at, v, true);
      else if (w === 2) view.setUint16(at, v, true);
      else view.setUint8(at, v);
    }
  }
  return bytes;
}

/**
 * The cube of encodeCube's bytes; null when they are not one. `littleEndian`: whether this machine's
 * typed arrays read the columns as stored (a test reads them through a DataView too).
 */
export function decodeCube(bytes: Uint8Array, littleEndian = LITTLE_ENDIAN): FacetCube | null {
  if (bytes.length < 4) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headLength = view.getUint32(0, true);
  if (4 + headLength > bytes.length) return null;
  let header: CubeHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headLength))) as CubeHeader;
  } catch {
    return null;
  }
  if (header.format !== CUBE_BINARY_FORMAT) return null;
  const n = header.cells;
  const { widths } = header;
  let at = Math.ceil((4 + headLength) / 4) * 4;
  if (bytes.length !== at + n * (4 + widths.reduce<number>((a, w) => a + w, 0))) return null;
  const cells = new Int32Array(n * CUBE_STRIDE);
  // Each column through a typed array over the bytes (aligned: a copy when the file's bytes start
  // off a multiple of 4 in their buffer), or a DataView on a big-endian machine.
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const column = (w: 1 | 2 | 4): ArrayLike<number> => {
    const from = aligned.byteOffset + at;
    if (littleEndian) return w === 4 ? new Uint32Array(aligned.buffer, from, n) : w === 2 ? new Uint16Array(aligned.buffer, from, n) : new Uint8Array(aligned.buffer, from, n);
    const out = new Uint32Array(n);
    const v = new DataView(aligned.buffer, from, n * w);
    for (let c = 0; c < n; c++) out[c] = w === 4 ? v.getUint32(c * 4, true) : w === 2 ? v.getUint16(c * 2, true) : v.getUint8(c);
    return out;
  };
  const counts = column(4);
  for (let c = 0, i = FACET_DIMENSIONS.length; c < n; c++, i += CUBE_STRIDE) cells[i] = counts[c]!;
  at += 4 * n;
  for (const d of codeColumns(widths)) {
    const w = widths[d]!;
    const codes = column(w);
    const nullCode = NULL_CODE[w];
    for (let c = 0, i = d; c < n; c++, i += CUBE_STRIDE) {
      const v = codes[c]!;
      cells[i] = v === nullCode ? -1 : v;
    }
    at += w * n;
  }
  return { format: CUBE_FORMAT, values: header.values, labels: header.labels, cells };
}

/** Builds the cube from (tuple, count) rows, any order; the result is canonical (sorted). */
export function cubeOf(rows: Iterable<{ tuple: FacetTuple; count: number }>, labelOf: Record<LabelledDimension, (value: string) => string | null>): FacetCube {
  const all = [...rows];
  const values = {} as Record<FacetDimension, string[]>;
  const index = FACET_DIMENSIONS.map((dim, d) => {
    const vs = [...new Set(all.map((r) => r.tuple[d]).filter((v): v is string => v !== null))].sort(byCodePoint);
    values[dim] = vs;
    return new Map(vs.map((v, i) => [v, i]));
  });
  const coded = all.map((r) => [...r.tuple.map((v, d) => (v === null ? -1 : index[d]!.get(v)!)), r.count]);
  coded.sort((a, b) => {
    for (let i = 0; i < FACET_DIMENSIONS.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return 0;
  });
  const labels = noLabels();
  for (const dim of LABELLED_DIMENSIONS) {
    for (const v of values[dim]) {
      const l = labelOf[dim](v);
      if (l !== null) labels[dim][v] = l;
    }
  }
  return { format: CUBE_FORMAT, values, labels, cells: coded.flat() };
}

export function isFacetCube(x: unknown): x is FacetCube {
  return typeof x === 'object' && x !== null && (x as { format?: unknown }).format === CUBE_FORMAT;
}

/**
 * Whether the cube's cell at offset `c` of `cells` passes `accepts` (per dimension: the accepted
 * values, or undefined for no filter on it; a null value passes no filter).
 */
function cellFilter(cube: FacetCube, accepts: Partial<Record<FacetDimension, readonly string[]>>): (c: number) => boolean {
  // Per filtered dimension, whether each dictionary code is accepted (a null, -1, never is).
  const dims: number[] = [];
  const masks: Uint8Array[] = [];
  FACET_DIMENSIONS.forEach((dim, d) => {
    const want = accepts[dim];
    if (want === undefined) return;
    const set = new Set(want);
    const mask = new Uint8Array(cube.values[dim].length);
    cube.values[dim].forEach((v, i) => (mask[i] = set.has(v) ? 1 : 0));
    dims.push(d);
    masks.push(mask);
  });
  const { cells } = cube;
  return (c) => {
    for (let k = 0; k < dims.length; k++) {
      const code = cells[c + dims[k]!]!;
      if (code < 0 || masks[k]![code] !== 1) return false;
    }
    return true;
  };
}

/**
 * The count and facets of the participants whose facet values pass `accepts` (per dimension: the
 * accepted values, or undefined for no filter on it).
 */
export function cubeCounts(cube: FacetCube, accepts: Partial<Record<FacetDimension, readonly string[]>>): FacetCounter {
  const passes = cellFilter(cube, accepts);
  const counter = new FacetCounter();
  counter.label(cube.labels);
  const { cells } = cube;
  // Summed by dictionary code, then named once per value.
  const sums = FACET_DIMENSIONS.map((dim) => new Float64Array(cube.values[dim].length));
  let total = 0;
  for (let c = 0; c < cells.length; c += CUBE_STRIDE) {
    if (!passes(c)) continue;
    const n = cells[c + FACET_DIMENSIONS.length]!;
    total += n;
    for (let d = 0; d < FACET_DIMENSIONS.length; d++) {
      const code = cells[c + d]!;
      if (code >= 0) sums[d]![code] = sums[d]![code]! + n;
    }
  }
  addCodeSums(counter, cube, total, sums);
  return counter;
}

/** Adds `total` participants and their counts per dictionary code of each dimension (`sums`), named by the cube's dictionaries. */
export function addCodeSums(counter: FacetCounter, cube: FacetCube, total: number, sums: readonly Float64Array[]): void {
  counter.addSums(total, (d) => {
    const values = cube.values[FACET_DIMENSIONS[d]!];
    const out = new Map<string, number>();
    sums[d]!.forEach((n, code) => {
      if (n > 0) out.set(values[code]!, n);
    });
    return out;
  });
}

/** The number of participants whose facet values pass `accepts` (cubeCounts' total, without its facets). */
export function cubeTotal(cube: FacetCube, accepts: Partial<Record<FacetDimension, readonly string[]>>): number {
  const passes = cellFilter(cube, accepts);
  const { cells } = cube;
  let total = 0;
  for (let c = 0; c < cells.length; c += CUBE_STRIDE) if (passes(c)) total += cells[c + FACET_DIMENSIONS.length]!;
  return total;
}

// ---------------------------------------------------------------------------------------------
// Facet vectors: the cube summed per facet value

export const VECTOR_FORMAT = 'peppol-snapshot/participant-facet-vector@1';

/**
 * The facets of the participants holding one facet value (`count` of them): per facet, the count of
 * each value among them. The values of one dimension are disjoint, so a filter on one dimension sums
 * its accepted values' vectors: a few KB instead of the whole cube (485 KB at `peppol`).
 */
export interface FacetVector {
  format: typeof VECTOR_FORMAT;
  count: number;
  counts: Record<FacetDimension, Record<string, number>>;
  labels: FacetLabels;
}

/** Where the renderer writes the vector of a facet value (an internal object, never an answer). */
export function vectorPath(dim: FacetDimension, value: string): string {
  return `${VECTORS_PREFIX}${encodeSegment(dim)}/${encodeSegment(value)}.json`;
}

export const VECTORS_PREFIX = 'f/participants/facets/';

export function isFacetVector(x: unknown): x is FacetVector {
  return typeof x === 'object' && x !== null && (x as { format?: unknown }).format === VECTOR_FORMAT;
}

/** Every facet value's vector, from the cube, with the value it belongs to. */
export function vectorsOf(cube: FacetCube): Array<{ dim: FacetDimension; value: string; vector: FacetVector }> {
  const out: Array<{ dim: FacetDimension; value: string; vector: FacetVector }> = [];
  FACET_DIMENSIONS.forEach((dim, d) => {
    const byCode = new Map<number, FacetVector>();
    for (let c = 0; c < cube.cells.length; c += CUBE_STRIDE) {
      const code = cube.cells[c + d]!;
      if (code < 0) continue;
      let v = byCode.get(code);
      if (v === undefined) {
        v = { format: VECTOR_FORMAT, count: 0, counts: emptyCounts(), labels: noLabels() };
        byCode.set(code, v);
      }
      const n = cube.cells[c + FACET_DIMENSIONS.length]!;
      v.count += n;
      for (let e = 0; e < FACET_DIMENSIONS.length; e++) {
        const ec = cube.cells[c + e]!;
        if (ec < 0) continue;
        const edim = FACET_DIMENSIONS[e]!;
        const value = cube.values[edim][ec]!;
        const m = v.counts[edim];
        m[value] = (m[value] ?? 0) + n;
        if ((edim === 'scheme' || edim === 'ap') && Object.hasOwn(cube.labels[edim], value)) v.labels[edim][value] = cube.labels[edim][value]!;
      }
    }
    for (const [code, vector] of [...byCode].sort((a, b) => a[0] - b[0])) out.push({ dim, value: cube.values[dim][code]!, vector: canonicalVector(vector) });
  });
  return out;
}

function emptyCounts(): Record<FacetDimension, Record<string, number>> {
  return { country: {}, scheme: {}, registered: {}, provenance: {}, smp: {}, ap: {} };
}

/** Keys in code-point order, so that equal vectors are equal bytes. */
function canonicalVector(v: FacetVector): FacetVector {
  const sorted = <T>(o: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(o).sort((a, b) => byCodePoint(a[0], b[0])));
  const counts = emptyCounts();
  for (const dim of FACET_DIMENSIONS) counts[dim] = sorted(v.counts[dim]);
  return { format: v.format, count: v.count, counts, labels: { scheme: sorted(v.labels.scheme), ap: sorted(v.labels.ap) } };
}

/** Where the renderer writes the labels of the list's schemes: the facets of a search read whole label theirs from it. */
export const SCHEME_LABELS_PATH = 'f/participants/scheme-labels.json';

// ---------------------------------------------------------------------------------------------
// Runs of the cell list

/**
 * A run of consecutive cube cells that a filter accepts: the cell list (plan.ts CELLS_PARTITION)
 * holds their participants together, from `first` to `last` (cell tuples as the list's key prefix:
 * null as ''), `count` of them from item `offset` of the list on.
 */
export interface CellRun {
  first: string[];
  last: string[];
  count: number;
  offset: number;
}

/**
 * The runs of the cells whose facet values pass `accepts` (as cubeCounts; and `only`, when given), in cell order, which is
 * the cell list's order: the cube sorts its cells by dictionary code per dimension in
 * FACET_DIMENSIONS order, dictionaries are in code-point order and null (-1) comes first, as '' does.
 */
export function cellRuns(cube: FacetCube, accepts: Partial<Record<FacetDimension, readonly string[]>>, only?: (cell: number) => boolean): CellRun[] {
  const filter = cellFilter(cube, accepts);
  // `only`: of those, the cells (by index) it keeps (a frequent gram's: where its participants are).
  const passes = only === undefined ? filter : (c: number): boolean => filter(c) && only(c / CUBE_STRIDE);
  const tuple = (c: number): string[] => FACET_DIMENSIONS.map((dim, d) => {
    const code = cube.cells[c + d]!;
    return code < 0 ? '' : cube.values[dim][code]!;
  });
  const runs: CellRun[] = [];
  // The open run and its last cell so far (its `last` tuple is made when it ends).
  let open: CellRun | null = null;
  let lastCell = -1;
  let offset = 0;
  const { cells } = cube;
  for (let c = 0; c < cells.length; c += CUBE_STRIDE) {
    const n = cells[c + FACET_DIMENSIONS.length]!;
    if (passes(c)) {
      if (open === null) runs.push((open = { first: tuple(c), last: [], count: n, offset }));
      else open.count += n;
      lastCell = c;
    } else if (open !== null) {
      open.last = tuple(lastCell);
      open = null;
    }
    offset += n;
  }
  if (open !== null) open.last = tuple(lastCell);
  return runs;
}
