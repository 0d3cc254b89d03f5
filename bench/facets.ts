// Facet counts benchmark (docs/benchmarks.md "Participant list counts and facets"): over a derived
// database, groups participant_list into the facet cube as `build` does, builds the facet vectors, and
// measures what a first page pays for its `meta`: the bytes it reads (the cube, or the vectors of a
// one-dimension filter) and the CPU of parsing and summing them, over a seeded mix of filter
// combinations drawn from the database's own values. Read-only.
import { jsonBody } from '../src/api/json.js';
import { cubeCounts, cubeOf, decodeCube, encodeCube, FACET_DIMENSIONS, FacetCounter, isFacetVector, vectorsOf, type FacetDimension } from '../src/api/participants/facets.js';
import { POSTING_VALUES_MAX } from '../src/api/participants/plan.js';
import { curatedSeatNames, facetLabelsOf, facetTupleRows } from '../src/api/participants/query.js';
import { openDb } from '../src/db/index.js';
import { Rng } from '../src/demo/prng.js';

export interface FacetsBenchResult {
  bench: 'facets';
  db: string;
  participants: number;
  /** Whether the covering index participant_list_facets exists (a database derived by this version). */
  covering_index: boolean;
  group_seconds: number;
  cells: number;
  cube_bytes: number;
  vectors: number;
  vector_bytes: { total: number; max: number; median: number };
  /** Per request kind: requests, bytes read (median, max) and CPU ms (median, p99, max) of parse + sum + buckets. */
  requests: Record<string, { n: number; bytes_median: number; bytes_max: number; cpu_ms_median: number; cpu_ms_p99: number; cpu_ms_max: number }>;
}

const dec = new TextDecoder();
const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export function benchFacets(dbPath: string, requests: number, seed: number, progress: (line: string) => void): FacetsBenchResult {
  const db = openDb(dbPath, { readonly: true });
  try {
    const participants = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    const covering = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'participant_list_facets'").get() !== undefined;
    progress(`grouping ${participants} participants (covering index: ${covering})`);
    let t = performance.now();
    const tuples = facetTupleRows(db);
    const groupSeconds = (performance.now() - t) / 1000;
    const cube = cubeOf(tuples, facetLabelsOf(curatedSeatNames(db)));
    const cubeBody = encodeCube(cube);
    const vectors = vectorsOf(cube).map((v) => ({ ...v, body: jsonBody(v.vector) }));
    const sizes = vectors.map((v) => v.body.length);
    const byValue = new Map(vectors.map((v) => [`${v.dim}\u0000${v.value}`, v.body]));
    progress(`${tuples.length} cells, ${cubeBody.length} bytes; ${vectors.length} vectors`);

    // The request mix: one dimension with one value (the common filter), one dimension with several,
    // two dimensions, three dimensions; values drawn uniformly from each dimension's values.
    const rng = new Rng(seed);
    const rand = (): number => rng.float();
    const values = (dim: FacetDimension): string[] => cube.values[dim];
    const pick = (dim: FacetDimension, n: number): string[] => Array.from({ length: n }, () => values(dim)[Math.floor(rand() * values(dim).length)]!);
    const dimsOf = (n: number): FacetDimension[] => {
      const left = [...FACET_DIMENSIONS];
      return Array.from({ length: n }, () => left.splice(Math.floor(rand() * left.length), 1)[0]!);
    };
    const kinds: Record<string, () => Partial<Record<FacetDimension, string[]>>> = {
      'one value': () => Object.fromEntries(dimsOf(1).map((d) => [d, pick(d, 1)])),
      'one dimension, 2-8 values': () => Object.fromEntries(dimsOf(1).map((d) => [d, pick(d, 2 + Math.floor(rand() * 7))])),
      'two dimensions': () => Object.fromEntries(dimsOf(2).map((d) => [d, pick(d, 1 + Math.floor(rand() * 2))])),
      'three dimensions': () => Object.fromEntries(dimsOf(3).map((d) => [d, pick(d, 1)])),
    };
    const out: FacetsBenchResult['requests'] = {};
    for (const [kind, make] of Object.entries(kinds)) {
      const cpu: number[] = [];
      const bytes: number[] = [];
      for (let i = 0; i < requests; i++) {
        const accepts = make();
        const dims = Object.keys(accepts) as FacetDimension[];
        const one = dims.length === 1 && accepts[dims[0]!]!.length <= POSTING_VALUES_MAX;
        const reads = one ? accepts[dims[0]!]!.map((v) => byValue.get(`${dims[0]!}\u0000${v}`)).filter((b): b is Uint8Array => b !== undefined) : [cubeBody];
        t = performance.now();
        // What the composer does with the bytes it read (src/edge/compose/participants.ts).
        let counter: FacetCounter;
        if (one) {
          counter = new FacetCounter();
          for (const b of reads) {
            const v: unknown = JSON.parse(dec.decode(b));
            if (isFacetVector(v)) counter.addVector(v);
          }
        } else {
          const c = decodeCube(cubeBody);
          if (c === null) throw new Error('not a cube');
          counter = cubeCounts(c, accepts);
        }
        jsonBody(counter.buckets());
        cpu.push(performance.now() - t);
        bytes.push(reads.reduce((n, b) => n + b.length, 0));
      }
      out[kind] = {
        n: requests,
        bytes_median: quantile(bytes, 0.5),
        bytes_max: Math.max(...bytes),
        cpu_ms_median: round(quantile(cpu, 0.5)),
        cpu_ms_p99: round(quantile(cpu, 0.99)),
        cpu_ms_max: round(Math.max(...cpu)),
      };
      progress(`${kind}: ${JSON.stringify(out[kind])}`);
    }
    return {
      bench: 'facets',
      db: dbPath,
      participants,
      covering_index: covering,
      group_seconds: round(groupSeconds),
      cells: tuples.length,
      cube_bytes: cubeBody.length,
      vectors: vectors.length,
      vector_bytes: { total: sizes.reduce((a, b) => a + b, 0), max: Math.max(...sizes), median: quantile(sizes, 0.5) },
      requests: out,
    };
  } finally {
    db.close();
  }
}
