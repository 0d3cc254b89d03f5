// Deterministic pseudo-random numbers for the demo scenario. Nothing in src/demo uses Math.random or the
// clock: every value is a pure function of (seed, stream, index...), so any participant, probe or window
// can be recomputed on its own (random access) and the same seed always gives the same bytes.
import { fnv1a, mix32 } from '../api/fnv1a.js';

export { mix32 };

/** Hash of up to five 32-bit integers. */
export function hash32(a: number, b = 0, c = 0, d = 0, e = 0): number {
  let h = mix32((a >>> 0) ^ 0x9e3779b9);
  h = mix32(((h ^ (b >>> 0)) + 0x7f4a7c15) >>> 0);
  h = mix32(((h ^ (c >>> 0)) + 0x85ebca6b) >>> 0);
  h = mix32(((h ^ (d >>> 0)) + 0xc2b2ae35) >>> 0);
  h = mix32(((h ^ (e >>> 0)) + 0x27d4eb2f) >>> 0);
  return h;
}

/** FNV-1a over a string, for naming random streams (`streamId('participant')`). */
export function streamId(name: string): number {
  return fnv1a(name);
}

const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;

/** xoshiro128** seeded through splitmix32. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
      z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
      return (z ^ (z >>> 15)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    if ((this.a | this.b | this.c | this.d) === 0) this.a = 1;
  }

  static of(...parts: number[]): Rng {
    return new Rng(hash32(parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 0, parts[4] ?? 0));
  }

  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.b << 9) >>> 0;
    this.c = (this.c ^ this.a) >>> 0;
    this.d = (this.d ^ this.b) >>> 0;
    this.b = (this.b ^ this.c) >>> 0;
    this.a = (this.a ^ this.d) >>> 0;
    this.c = (this.c ^ t) >>> 0;
    this.d = rotl(this.d, 11);
    return r;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(arr: readonly T[]): T {
    if (arr.length === 0) throw new Error('pick from an empty array');
    return arr[this.int(arr.length)]!;
  }

  /** Picks by weight: `items` are [value, weight] pairs. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let x = this.float() * total;
    for (const [v, w] of items) {
      x -= w;
      if (x < 0) return v;
    }
    return items[items.length - 1]![0];
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    let u = this.float();
    if (u < 1e-12) u = 1e-12;
    const v = this.float();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}

/** Picks an index from a cumulative weight array (strictly increasing, last = total). */
export function pickCumulative(cum: Float64Array | readonly number[], x01: number): number {
  const total = cum[cum.length - 1]!;
  const x = x01 * total;
  let lo = 0;
  let hi = cum.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cum[mid]! > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const FEISTEL_BITS = 22; // domain 2^22 = 4,194,304
const HALF = FEISTEL_BITS / 2;
const HALF_MASK = (1 << HALF) - 1;
export const PERMUTE_LIMIT = 1 << FEISTEL_BITS;

function feistel(x: number, key: number): number {
  let l = (x >>> HALF) & HALF_MASK;
  let r = x & HALF_MASK;
  for (let round = 0; round < 4; round++) {
    const f = hash32(key, round, r) & HALF_MASK;
    const nl = r;
    r = (l ^ f) & HALF_MASK;
    l = nl;
  }
  return ((l << HALF) | r) >>> 0;
}

/**
 * A keyed bijection of [0, m) onto itself (m <= 2^22), by a 4-round Feistel network with cycle walking.
 * Used to give participants unique, random-looking identifier serials without storing anything.
 */
export function permute(x: number, key: number, m: number): number {
  if (m > PERMUTE_LIMIT || x < 0 || x >= m) throw new Error(`permute: ${x} outside [0, ${m})`);
  let v = feistel(x, key);
  while (v >= m) v = feistel(v, key);
  return v;
}

/** 65,536 standard normal deviates (fixed), for cheap deterministic noise: NORMALS[hash & 0xffff]. */
export const NORMALS: Float64Array = (() => {
  const r = new Rng(0x5eed);
  const t = new Float64Array(65536);
  for (let k = 0; k < t.length; k++) t[k] = r.normal();
  return t;
})();
