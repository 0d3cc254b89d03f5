// A mergeable latency sketch: a log-bucketed histogram with a relative-error guarantee (the
// DDSketch construction), stored as sparse bucket counts. See docs/methodology/hosts.md, "Percentiles".
//
// - Relative accuracy α = 1 %: γ = (1 + α) / (1 − α). A value x ≥ SKETCH_MIN_VALUE goes to bucket
//   i = ceil(log_γ x), i.e. γ^(i−1) < x ≤ γ^i, and the bucket reports 2·γ^i / (γ + 1), which is within
//   α of every value the bucket can hold. Values below SKETCH_MIN_VALUE (1 µs) are counted in a zero
//   bucket that reports 0.
// - Percentiles are nearest-rank: the p-th percentile of n values is the value of rank ceil(p·n/100)
//   in ascending order (1-based). The sketch walks its buckets in ascending order to that rank, so its
//   answer is within α of the exact nearest-rank percentile of the values it was built from.
// - Merging adds counts bucket by bucket, so a merged sketch is exactly the sketch of the union of the
//   values: daily, monthly and all-location percentiles never average percentiles.
// - Encoding (BLOB): a version byte (1), then per sketch: varint zero count, varint number of
//   non-empty buckets k, then per bucket a varint w = 2·position + (count > 1 ? 1 : 0), where position
//   is the zigzag-encoded index for the first bucket and the gap to the previous index for the others,
//   followed by a varint count only when the low bit is set. Varints are LEB128 (7 bits a byte, low
//   first). Several sketches (one per phase) are concatenated in one BLOB.

export const SKETCH_ALPHA = 0.01;
export const SKETCH_GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
const LN_GAMMA = Math.log(SKETCH_GAMMA);
/** Values below this (milliseconds) are counted as zero. */
export const SKETCH_MIN_VALUE = 1e-3;
const ENCODING_VERSION = 1;

/** The bucket of a value ≥ SKETCH_MIN_VALUE. */
export function bucketIndex(x: number): number {
  return Math.ceil(Math.log(x) / LN_GAMMA) || 0; // never -0
}

/** Bucket indices whose values are kept (|i| below this): 1 µs to hours of latency fall within. */
const VALUE_TABLE_HALF = 2048;
const valueTable = new Float64Array(2 * VALUE_TABLE_HALF).fill(Number.NaN);

/**
 * The value a bucket reports: within α of anything in (γ^(i−1), γ^i]. Memoised (the same computation):
 * rendering the uptime lists asks for it per percentile of every bucket, and Math.pow was 4% of a
 * full build.
 */
export function bucketValue(i: number): number {
  const at = i + VALUE_TABLE_HALF;
  if (at < 0 || at >= valueTable.length || !Number.isInteger(i)) return valueOf(i);
  let v = valueTable[at]!;
  if (Number.isNaN(v)) valueTable[at] = v = valueOf(i);
  return v;
}
const valueOf = (i: number): number => (2 * Math.pow(SKETCH_GAMMA, i)) / (SKETCH_GAMMA + 1);

/** Rank (1-based) of the nearest-rank p-th percentile among n values; p in (0, 100]. */
export function nearestRank(p: number, n: number): number {
  // p·n is an exact integer for integer p; dividing exactly-representable integers rounds correctly,
  // so ceil sees the true quotient.
  return Math.max(1, Math.ceil((p * n) / 100));
}

/** The exact nearest-rank p-th percentile of values (null when empty): the reference the sketch approximates. */
export function exactPercentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[nearestRank(p, sorted.length) - 1]!;
}

export class Sketch {
  /** Count of values below SKETCH_MIN_VALUE. */
  zero = 0;
  /** Non-empty bucket indices, strictly ascending, and their counts. */
  idx: number[] = [];
  cnt: number[] = [];

  get count(): number {
    let n = this.zero;
    for (const c of this.cnt) n += c;
    return n;
  }

  /** The sketch of a list of values (nulls and non-finite values are the caller's to skip). */
  static of(values: readonly number[]): Sketch {
    let zero = 0;
    const ix: number[] = [];
    for (const x of values) {
      if (x < SKETCH_MIN_VALUE) zero++;
      else ix.push(bucketIndex(x));
    }
    return Sketch.fromIndices(ix, zero);
  }

  /** The sketch of values given by their bucket indices (bucketIndex) plus a count of zero values. */
  static fromIndices(indices: readonly number[], zero: number): Sketch {
    const s = new Sketch();
    s.zero = zero;
    if (indices.length === 0) return s;
    let ix: ArrayLike<number>;
    if (indices.length <= 32) {
      // Insertion sort: most buckets of a location-hour hold a handful of values.
      const a = [...indices];
      for (let j = 1; j < a.length; j++) {
        const v = a[j]!;
        let k = j - 1;
        while (k >= 0 && a[k]! > v) {
          a[k + 1] = a[k]!;
          k--;
        }
        a[k + 1] = v;
      }
      ix = a;
    } else ix = Int32Array.from(indices).sort();
    for (let j = 0; j < ix.length; j++) {
      const i = ix[j]!;
      const last = s.idx.length - 1;
      if (last >= 0 && s.idx[last] === i) s.cnt[last]!++;
      else {
        s.idx.push(i);
        s.cnt.push(1);
      }
    }
    return s;
  }

  /** The sketch of the union of the sketches' values. */
  static merge(list: readonly Sketch[]): Sketch {
    const out = new Sketch();
    if (list.length === 1) {
      const only = list[0]!;
      out.zero = only.zero;
      out.idx = [...only.idx];
      out.cnt = [...only.cnt];
      return out;
    }
    const counts = new Map<number, number>();
    for (const s of list) {
      out.zero += s.zero;
      for (let k = 0; k < s.idx.length; k++) counts.set(s.idx[k]!, (counts.get(s.idx[k]!) ?? 0) + s.cnt[k]!);
    }
    out.idx = [...counts.keys()].sort((a, b) => a - b);
    out.cnt = out.idx.map((i) => counts.get(i)!);
    return out;
  }

  /** The nearest-rank p-th percentile (p in (0, 100]), within α relative error; null when empty. */
  percentile(p: number): number | null {
    const n = this.count;
    if (n === 0) return null;
    const rank = nearestRank(p, n);
    if (rank <= this.zero) return 0;
    let seen = this.zero;
    for (let k = 0; k < this.idx.length; k++) {
      seen += this.cnt[k]!;
      if (seen >= rank) return bucketValue(this.idx[k]!);
    }
    return bucketValue(this.idx[this.idx.length - 1]!);
  }
}

function writeVarint(out: number[], v: number): void {
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

const zigzag = (v: number): number => (v >= 0 ? 2 * v : -2 * v - 1);
const unzigzag = (v: number): number => (v % 2 === 0 ? v / 2 : -(v + 1) / 2);

/** Encodes sketches (in a fixed order, e.g. the five phases) into one BLOB. */
export function encodeSketches(list: readonly Sketch[]): Buffer {
  const out: number[] = [ENCODING_VERSION];
  for (const s of list) {
    writeVarint(out, s.zero);
    writeVarint(out, s.idx.length);
    for (let k = 0; k < s.idx.length; k++) {
      // The low bit says whether a count follows (counts of 1, the common case, are implied).
      const pos = k === 0 ? zigzag(s.idx[0]!) : s.idx[k]! - s.idx[k - 1]!;
      const many = s.cnt[k]! > 1;
      writeVarint(out, pos * 2 + (many ? 1 : 0));
      if (many) writeVarint(out, s.cnt[k]!);
    }
  }
  return Buffer.from(out);
}

/** Decodes a BLOB of `n` sketches written by encodeSketches. */
export function decodeSketches(buf: Uint8Array, n: number): Sketch[] {
  let pos = 0;
  const read = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (pos >= buf.length) throw new Error('sketch BLOB is truncated');
      const b = buf[pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  if (buf[pos++] !== ENCODING_VERSION) throw new Error(`unknown sketch encoding version ${buf[0]}`);
  const out: Sketch[] = [];
  for (let j = 0; j < n; j++) {
    const s = new Sketch();
    s.zero = read();
    const k = read();
    let prev = 0;
    for (let m = 0; m < k; m++) {
      const word = read();
      const pos = Math.floor(word / 2);
      prev = m === 0 ? unzigzag(pos) : prev + pos;
      s.idx.push(prev);
      s.cnt.push(word % 2 === 1 ? read() : 1);
    }
    out.push(s);
  }
  if (pos !== buf.length) throw new Error('sketch BLOB has trailing bytes');
  return out;
}
