// The latency sketch (src/derive/sketch.ts): relative accuracy of nearest-rank percentiles, exact
// merging, and the BLOB encoding. The host-day check on the demo data is in derive-hosts.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeSketches, encodeSketches, exactPercentile, nearestRank, Sketch, SKETCH_ALPHA, SKETCH_MIN_VALUE } from '../src/derive/sketch.js';

/** Latencies spread over nine orders of magnitude (log-uniform), as probes can see them. */
const latency = fc.double({ min: Math.log(SKETCH_MIN_VALUE), max: Math.log(1e6), noNaN: true }).map((l) => Math.exp(l));
const samples = fc.array(latency, { minLength: 1, maxLength: 400 });
const pct = fc.oneof(fc.constantFrom(50, 95, 99), fc.integer({ min: 1, max: 100 }));

function withinAlpha(estimate: number | null, exact: number | null): boolean {
  if (exact === null) return estimate === null;
  return estimate !== null && Math.abs(estimate - exact) <= SKETCH_ALPHA * exact * (1 + 1e-9);
}

describe('nearest-rank percentiles', () => {
  it('are the value of rank ceil(p·n/100) in ascending order', () => {
    expect(exactPercentile([4, 1, 3, 2], 50)).toBe(2);
    expect(exactPercentile([4, 1, 3, 2], 51)).toBe(3);
    expect(exactPercentile([4, 1, 3, 2], 100)).toBe(4);
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(exactPercentile(hundred, 95)).toBe(95);
    expect(exactPercentile(hundred, 99)).toBe(99);
    expect(exactPercentile([], 50)).toBeNull();
    fc.assert(fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 100_000 }), (p, n) => nearestRank(p, n) === Math.ceil((p * n) / 100 - 1e-12) && nearestRank(p, n) >= 1 && nearestRank(p, n) <= n));
  });
});

describe('Sketch', () => {
  it('answers every percentile within 1 % of the exact nearest-rank value', () => {
    fc.assert(
      fc.property(samples, pct, (xs, p) => withinAlpha(Sketch.of(xs).percentile(p), exactPercentile(xs, p))),
      { numRuns: 500 },
    );
  });

  it('stays within 1 % on heavily repeated and clustered values', () => {
    const clustered = fc.array(fc.tuple(latency, fc.integer({ min: 1, max: 50 })), { minLength: 1, maxLength: 20 }).map((pairs) => pairs.flatMap(([v, n]) => Array<number>(n).fill(v)));
    fc.assert(fc.property(clustered, pct, (xs, p) => withinAlpha(Sketch.of(xs).percentile(p), exactPercentile(xs, p))));
  });

  it('merging sketches gives the sketch of the union (same buckets, same percentiles)', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.oneof(latency, fc.constant(0)), { maxLength: 60 }), { minLength: 1, maxLength: 8 }), pct, (parts, p) => {
        const merged = Sketch.merge(parts.map((xs) => Sketch.of(xs)));
        const whole = Sketch.of(parts.flat());
        expect(merged.zero).toBe(whole.zero);
        expect(merged.idx).toEqual(whole.idx);
        expect(merged.cnt).toEqual(whole.cnt);
        expect(merged.count).toBe(parts.flat().length);
        expect(merged.percentile(p)).toBe(whole.percentile(p));
      }),
    );
  });

  it('counts values below 1 µs as zero and reports 0 for them; an empty sketch has no percentile', () => {
    const s = Sketch.of([0, 0, 0, 5]);
    expect(s.zero).toBe(3);
    expect(s.percentile(50)).toBe(0);
    expect(s.percentile(75)).toBe(0);
    expect(Math.abs(s.percentile(100)! - 5)).toBeLessThanOrEqual(0.05);
    expect(new Sketch().percentile(50)).toBeNull();
    expect(new Sketch().count).toBe(0);
  });

  it('encodes several sketches into one BLOB and decodes them unchanged', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.oneof(latency, fc.constant(0)), { maxLength: 80 }), { minLength: 1, maxLength: 6 }), (lists) => {
        const sketches = lists.map((xs) => Sketch.of(xs));
        const blob = encodeSketches(sketches);
        const back = decodeSketches(blob, sketches.length);
        expect(back.map((s) => [s.zero, s.idx, s.cnt])).toEqual(sketches.map((s) => [s.zero, s.idx, s.cnt]));
      }),
    );
  });

  it('is compact: a location-hour of four checks takes a few bytes per phase', () => {
    const blob = encodeSketches([Sketch.of([12.3, 12.9, 13.4, 25]), Sketch.of([]), Sketch.of([0.1, 0.1, 0.2, 0.1]), Sketch.of([800, 801, 950, 1200]), Sketch.of([900, 1000, 1100, 1300])]);
    expect(blob.length).toBeLessThan(50);
  });

  it('rejects a truncated BLOB, trailing bytes and an unknown version', () => {
    const blob = encodeSketches([Sketch.of([1, 2, 3])]);
    expect(() => decodeSketches(blob.subarray(0, blob.length - 1), 1)).toThrow(/truncated/);
    expect(() => decodeSketches(Buffer.concat([blob, Buffer.from([0])]), 1)).toThrow(/trailing/);
    expect(() => decodeSketches(Buffer.from([9, 0, 0]), 1)).toThrow(/version/);
  });
});
