// Fuzzing ingest (bench/fuzz.ts): 12,000 lines, 10,000 of them mutated, through the whole pipeline on
// the main thread and on two parse workers; every line must end as the feed schema says (a record or
// a reject with the schema's error), the run must end normally, and every unmutated record must be
// kept. The seed is fixed so that a failure reproduces; every problem line names it. More lines:
// `npm run bench -- fuzz --lines 1000000 [--seed N]`.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFuzz } from '../bench/fuzz.js';
import { tempDir } from './helpers/feeds.js';

const SEED = 20261122;

describe('ingest under fuzzed lines', () => {
  it(`turns each of 10,000 mutated lines into what the schema says, and keeps every unmutated record (seed ${SEED})`, async () => {
    const r = await runFuzz({ seed: SEED, lines: 12_000, perSegment: 1_500, dir: join(tempDir('fuzz-'), 'run'), workers: [0, 2] });
    expect(r.problems, `seed ${SEED}: reproduce with npm run bench -- fuzz --lines 12000 --per-segment 1500 --seed ${SEED}`).toEqual([]);
    expect(r.mutated).toBeGreaterThanOrEqual(10_000);
    // The mix is rich enough to mean something: plenty of records and of rejects, some skipped.
    expect(r.expected.records).toBeGreaterThan(3_000);
    expect(r.expected.rejects).toBeGreaterThan(3_000);
    expect(r.expected.blank).toBeGreaterThan(50);
    for (const s of r.summaries) expect(s.failed_sources).toEqual([]);
  }, 300_000);
});
