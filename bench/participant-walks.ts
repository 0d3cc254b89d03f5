// The participant list's walks (issue 14, docs/benchmarks.md "Participant list walks"): a documented
// query mix over a built snapshot, each query walked page after page through the resolver, with the
// files, bytes, chunks and CPU of every request, and per walk the pages against ⌈matches / limit⌉.
//
// The mix, in each of the six orders (PARTICIPANT_SORTS), at limits 1, 7, 50 and 200 in turn:
// - no filter;
// - one filter per facet dimension: the most common value, a middle one and the rarest of country,
//   scheme, smp and ap; both values of registered and provenance;
// - sparse two-filter combinations: pairs of values of two dimensions, each value held by at least
//   1% of the participants, whose intersection is small (1–10, 11–1,000 and over 1,000 matches;
//   found in the facet cube), two of each size where the cube has them;
// - searches: a canonical id, a bare identifier value, the first two letters of a common 3-letter name
//   fragment, that fragment, a 5–8 letter name fragment, and a text no name holds; the fragment's first
//   letter, alone, with the most common country and with registered=false;
// - the three name fragments with filters: the most common country, a middle scheme, the most common SMP,
//   registered=false, provenance=discovered (no name: no match), a middle country with the most common
//   scheme;
// - the three name fragments with a large SMP or seat: the second SMP, the most common seat, the middle
//   SMP and seat of those held by at least 1% of the participants.
// A walk follows next_cursor for at most `maxPages` pages (or `walkBudgetMs`); a walk that reaches its
// end is complete, and then its pages must be max(1, ⌈items / limit⌉).
import fs from 'node:fs';
import path from 'node:path';
import { CUBE_PATH, CUBE_STRIDE, decodeCube, FACET_DIMENSIONS, type FacetCube, type FacetDimension } from '../src/api/participants/facets.js';
import { PARTICIPANT_SORTS } from '../src/api/schemas/index.js';
import { createResolve, SNAPSHOT_INFO_PATH } from '../src/edge/resolve.js';
import { directoryReader } from '../src/serve/index.js';
import { inflateSync } from '../src/serve/inflate.js';
import { decodeStored } from '../src/render/stored.js';
import { countingReader, dist } from './reads.js';

export interface WalkBenchOptions {
  out: string;
  /** Pages per walk at most. */
  maxPages: number;
  /** Wall-clock budget of one walk (ms). */
  walkBudgetMs: number;
  /** Name fragments to search for (from the snapshot when absent). */
  names: string[];
  ids: Array<{ id: string; value: string }>;
}

interface RequestCost {
  url: string;
  files: number;
  /** Bytes as stored (transferred); `decoded`: after decoding gzip (parsed). */
  bytes: number;
  decoded: number;
  chunks: number;
  /**
   * The shim's CPU: the request answered again from the files it read, held in memory, REPLAYS times;
   * the least of those runs. Timed by the clock: with no I/O to wait for, the time the thread ran, its
   * garbage collection included, and not the collector's helper threads, which process.cpuUsage adds
   * in (a Worker's CPU limit counts the request's thread; its fetches cost it no CPU). The least, as
   * this machine's speed varies by a factor of two from one second to the next (a fixed loop takes
   * 27 to 60 ms): it is the request's cost at the machine's speed.
   */
  cpu_ms: number;
  /** The median of the runs from memory. */
  cpu_median_ms: number;
  /** The CPU of the request as walked, reading its files from the directory (the thread pool included). */
  cpu_io_ms: number;
}

/** Runs of each request from memory (RequestCost.cpu_ms). */
const REPLAYS = 5;

export interface WalkResult {
  group: string;
  url: string;
  limit: number;
  pages: number;
  items: number;
  complete: boolean;
  /** meta.filter_count of the first page (null: not counted). */
  filter_count: number | null;
  /** Pages followed by a next page holding fewer than `limit` items (0 is the rule). */
  short: number;
  /** A complete walk's pages equal max(1, ⌈items / limit⌉). */
  pages_as_expected: boolean | null;
  requests: RequestCost[];
}

/** Values of each dimension with their participant counts, most common first (from the cube). */
function valueCounts(cube: FacetCube): Record<FacetDimension, Array<{ value: string; count: number }>> {
  const out = {} as Record<FacetDimension, Array<{ value: string; count: number }>>;
  FACET_DIMENSIONS.forEach((dim, d) => {
    const n = new Array<number>(cube.values[dim].length).fill(0);
    for (let c = 0; c < cube.cells.length; c += CUBE_STRIDE) {
      const code = cube.cells[c + d]!;
      if (code >= 0) n[code]! += cube.cells[c + FACET_DIMENSIONS.length]!;
    }
    out[dim] = cube.values[dim].map((value, i) => ({ value, count: n[i]! })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  });
  return out;
}

/** Sparse pairs: two values of two dimensions, each held by >= 1% of all, whose intersection is small. */
function sparsePairs(cube: FacetCube, counts: ReturnType<typeof valueCounts>, total: number): Array<{ q: Record<string, string>; matches: number }> {
  const big = FACET_DIMENSIONS.map((dim) => new Set(counts[dim].filter((v) => v.count >= total / 100).map((v) => cube.values[dim].indexOf(v.value))));
  const pairs = new Map<string, { q: Record<string, string>; matches: number }>();
  for (let a = 0; a < FACET_DIMENSIONS.length; a++) {
    for (let b = a + 1; b < FACET_DIMENSIONS.length; b++) {
      const n = new Map<string, number>();
      for (let c = 0; c < cube.cells.length; c += CUBE_STRIDE) {
        const x = cube.cells[c + a]!;
        const y = cube.cells[c + b]!;
        if (!big[a]!.has(x) || !big[b]!.has(y)) continue;
        const k = `${x},${y}`;
        n.set(k, (n.get(k) ?? 0) + cube.cells[c + FACET_DIMENSIONS.length]!);
      }
      for (const [k, m] of n) {
        const [x, y] = k.split(',').map(Number) as [number, number];
        const da = FACET_DIMENSIONS[a]!;
        const db = FACET_DIMENSIONS[b]!;
        pairs.set(`${da}=${x}&${db}=${y}`, { q: { [da]: cube.values[da][x]!, [db]: cube.values[db][y]! }, matches: m });
      }
    }
  }
  const all = [...pairs.values()].sort((p, q) => p.matches - q.matches || JSON.stringify(p.q).localeCompare(JSON.stringify(q.q)));
  const pick = (lo: number, hi: number): Array<{ q: Record<string, string>; matches: number }> => {
    const inRange = all.filter((p) => p.matches >= lo && p.matches <= hi);
    return inRange.length <= 2 ? inRange : [inRange[0]!, inRange[Math.floor(inRange.length / 2)]!];
  };
  return [...pick(1, 10), ...pick(11, 1000), ...pick(1001, Number.MAX_SAFE_INTEGER)];
}

const LIMITS = [1, 7, 50, 200];

export async function benchParticipantWalks(o: WalkBenchOptions, log: (s: string) => void): Promise<{ walks: WalkResult[]; summary: ReturnType<typeof summariseWalks> }> {
  const out = path.resolve(o.out);
  const cube = decodeCube(new Uint8Array(decodeStored(fs.readFileSync(path.join(out, CUBE_PATH)))));
  if (cube === null) throw new Error(`${out}/${CUBE_PATH}: not a facet cube`);
  const counts = valueCounts(cube);
  const total = counts.registered.reduce((n, v) => n + v.count, 0);
  // `rotation`: the queries added to the mix after its limits were first rotated take their limits in a
  // rotation of their own, one per addition (1: two letters; 2: one letter), so that every other query
  // keeps the limits of the runs documented before them (3: the searches with a large SMP or seat).
  const queries: Array<{ group: string; q: Record<string, string>; rotation?: number }> = [{ group: 'no filter', q: {} }];
  for (const dim of ['country', 'scheme', 'smp', 'ap'] as const) {
    const vs = counts[dim];
    for (const [which, v] of [
      ['most common', vs[0]],
      ['middle', vs[Math.floor(vs.length / 2)]],
      ['rarest', vs[vs.length - 1]],
    ] as const) {
      if (v) queries.push({ group: `one filter (${which})`, q: { [dim]: v.value } });
    }
  }
  for (const v of ['true', 'false']) queries.push({ group: 'one filter (registered)', q: { registered: v } });
  for (const v of ['directory', 'discovered']) queries.push({ group: 'one filter (provenance)', q: { provenance: v } });
  for (const p of sparsePairs(cube, counts, total)) {
    const size = p.matches <= 10 ? '1–10' : p.matches <= 1000 ? '11–1,000' : 'over 1,000';
    queries.push({ group: `sparse pair (${size} matches)`, q: p.q });
  }
  const id = o.ids[0];
  if (id) queries.push({ group: 'search: id', q: { q: id.id } });
  const bare = o.ids.find((x) => /\d{4}/.test(x.value));
  if (bare) queries.push({ group: 'search: bare value', q: { q: bare.value } });
  const short = o.names.map((n) => n.toLowerCase().slice(0, 3)).find((s) => /^\p{L}{3}$/u.test(s));
  // Two letters: what a search box sends first (no trigram: the grams index counts it, the main list or an unregistered name list holds it).
  const two = short?.slice(0, 2);
  if (two) queries.push({ group: 'search: 2 letters', q: { q: two }, rotation: 1 });
  if (short) queries.push({ group: 'search: 3 letters', q: { q: short } });
  const longer = o.names.map((n) => n.toLowerCase().split(/\s+/).find((w) => w.length >= 5 && w.length <= 8)).find((w) => w !== undefined);
  if (longer) queries.push({ group: 'search: 5–8 letters', q: { q: longer } });
  queries.push({ group: 'search: no match', q: { q: 'zzqxv' } });
  // A name search with filters: the common words' walks, through values their names hold often, seldom
  // or never (the discovered participants have no name).
  for (const word of [two, short, longer]) {
    if (word === undefined) continue;
    const middle = (dim: FacetDimension) => counts[dim][Math.floor(counts[dim].length / 2)]?.value;
    const withFilter: Array<Record<string, string | undefined>> = [
      { country: counts.country[0]?.value },
      { scheme: middle('scheme') },
      { smp: counts.smp[0]?.value },
      { registered: 'false' },
      { provenance: 'discovered' },
      { country: middle('country'), scheme: counts.scheme[0]?.value },
    ];
    for (const f of withFilter) {
      if (Object.values(f).some((v) => v === undefined)) continue;
      queries.push({ group: 'search with filters', q: { q: word, ...(f as Record<string, string>) }, rotation: word === two ? 1 : 0 });
    }
  }
  // The same words with a large SMP or seat other than the most common SMP: the second SMP, the most
  // common seat, and the middle SMP and seat of those held by at least 1% of the participants. A common
  // text with a large value is the documented gap (docs/snapshot-format.md "Why no list bounds it"):
  // their matches are sparse in both lists, and the reads are not bounded by 8 files.
  const large = (dim: 'smp' | 'ap'): string | undefined => {
    const big = counts[dim].filter((v) => v.count >= total / 100);
    return big[Math.floor(big.length / 2)]?.value;
  };
  for (const word of [two, short, longer]) {
    if (word === undefined) continue;
    const withLarge: Array<Record<string, string | undefined>> = [{ smp: counts.smp[1]?.value }, { smp: large('smp') }, { ap: counts.ap[0]?.value }, { ap: large('ap') }];
    for (const f of withLarge) {
      if (Object.values(f).some((v) => v === undefined)) continue;
      queries.push({ group: 'search with a large smp or ap', q: { q: word, ...(f as Record<string, string>) }, rotation: 3 });
    }
  }
  // One letter: the first key a search box sends (a short name list holds it, as two letters).
  const one = short?.slice(0, 1);
  if (one) {
    queries.push({ group: 'search: 1 letter', q: { q: one }, rotation: 2 });
    queries.push({ group: 'search with filters', q: { q: one, country: counts.country[0]!.value }, rotation: 2 });
    queries.push({ group: 'search with filters', q: { q: one, registered: 'false' }, rotation: 2 });
  }

  // Every file a request read (null: absent), for its replays from memory.
  const seen = new Map<string, Uint8Array | null>();
  const disk = directoryReader(out);
  const c = countingReader({
    async read(p) {
      const b = await disk.read(p);
      seen.set(p, b);
      return b;
    },
  });
  const memory = {
    async read(p: string): Promise<Uint8Array | null> {
      const b = seen.get(p);
      if (b !== undefined) return b;
      // The resolver reads the snapshot's info again when its copy is old: not a file of the request.
      if (p === SNAPSHOT_INFO_PATH) return disk.read(p);
      throw new Error(`a replay read ${p}, which the request did not`);
    },
  };
  let decoded = 0;
  const resolve = createResolve({ inflate: inflateSync, onStats: (_route, st) => (decoded = st.decoded) });
  // Warm-up, not measured: the first page of every walk once, so that the figures are those of a
  // resolver that has answered requests before (a Worker isolate serves many), not of code compiled
  // by the first request that runs it.
  for (const sort of PARTICIPANT_SORTS) {
    for (const { q } of queries) await resolve({ url: new URL(`http://bench.invalid/v1/participants?${new URLSearchParams({ ...q, sort }).toString()}`), routeId: null }, disk);
  }
  const walks: WalkResult[] = [];
  const turns = [0, 0, 0, 0];
  for (const sort of PARTICIPANT_SORTS) {
    for (const { group, q, rotation = 0 } of queries) {
      // Rotation 3 has four queries a word: turned only per query, each would have one limit in every
      // order, so it turns once more per order.
      const limit = LIMITS[(turns[rotation]!++ + (rotation === 3 ? PARTICIPANT_SORTS.indexOf(sort) : 0)) % LIMITS.length]!;
      const base = { ...q, sort, limit: String(limit) };
      const url0 = `/v1/participants?${new URLSearchParams(base).toString()}`;
      const w: WalkResult = { group, url: url0, limit, pages: 0, items: 0, complete: false, filter_count: null, short: 0, pages_as_expected: null, requests: [] };
      const started = performance.now();
      let cursor: string | null = null;
      for (;;) {
        const url = cursor === null ? url0 : `/v1/participants?${new URLSearchParams({ ...base, cursor }).toString()}`;
        c.begin();
        seen.clear();
        decoded = 0;
        const request = { url: new URL(`http://bench.invalid${url}`), routeId: null };
        const cpu0 = process.cpuUsage();
        const a = await resolve(request, c.reader);
        const cpu = process.cpuUsage(cpu0);
        const { files, bytes, chunks } = c.end();
        const fileDecoded = decoded;
        const replays: number[] = [];
        for (let i = 0; i < REPLAYS; i++) {
          const t0 = performance.now();
          const again = await resolve(request, memory);
          const t = performance.now() - t0;
          if (again.status !== a.status || again.body.length !== a.body.length) throw new Error(`${url}: a replay from memory answered differently`);
          replays.push(t);
        }
        replays.sort((x, y) => x - y);
        w.requests.push({ url, files, bytes, decoded: fileDecoded, chunks, cpu_ms: replays[0]!, cpu_median_ms: replays[REPLAYS >> 1]!, cpu_io_ms: (cpu.user + cpu.system) / 1000 });
        if (a.status !== 200) throw new Error(`${url}: ${a.status}`);
        const body = JSON.parse(new TextDecoder().decode(a.body)) as { items: unknown[]; next_cursor: string | null; meta?: { filter_count: number | null } };
        w.pages++;
        w.items += body.items.length;
        if (body.meta) w.filter_count = body.meta.filter_count;
        if (body.next_cursor === null) {
          w.complete = true;
          break;
        }
        if (body.items.length < limit) w.short++;
        cursor = body.next_cursor;
        if (w.pages >= o.maxPages || performance.now() - started > o.walkBudgetMs) break;
      }
      if (w.complete) w.pages_as_expected = w.pages === Math.max(1, Math.ceil(w.items / limit));
      walks.push(w);
      const r = w.requests;
      log(
        `  ${sort.padEnd(15)} ${group.padEnd(32)} limit ${String(limit).padStart(3)}: ${w.pages} page(s)${w.complete ? ' (end)' : ''}, ${w.items} items, short ${w.short}, files max ${Math.max(...r.map((x) => x.files))}, bytes max ${Math.round(Math.max(...r.map((x) => x.bytes)) / 1024)} KiB, cpu max ${Math.max(...r.map((x) => x.cpu_ms)).toFixed(1)} ms (median ${Math.max(...r.map((x) => x.cpu_median_ms)).toFixed(1)} ms)  ${w.url}`,
      );
    }
  }
  const slowest = walks.flatMap((w) => w.requests).sort((x, y) => y.cpu_ms - x.cpu_ms);
  log('  the requests of most CPU: the least of the runs from memory (their median, the request as walked with its file reads):');
  for (const r of slowest.slice(0, 15)) log(`    ${r.cpu_ms.toFixed(1).padStart(6)} ms (${r.cpu_median_ms.toFixed(1)} ms, ${r.cpu_io_ms.toFixed(1)} ms)  ${r.files} files, ${Math.round(r.decoded / 1024)} KiB decoded  ${r.url}`);
  return { walks, summary: summariseWalks(walks) };
}

/** Per query group: requests, files / bytes / chunks / CPU (median, p99, max), short pages, walks as expected. */
export function summariseWalks(walks: WalkResult[]) {
  const groups = new Map<string, WalkResult[]>();
  for (const w of walks) groups.set(w.group, [...(groups.get(w.group) ?? []), w]);
  const row = (ws: WalkResult[]) => {
    const reqs = ws.flatMap((w) => w.requests);
    const complete = ws.filter((w) => w.complete);
    return {
      walks: ws.length,
      requests: reqs.length,
      files: dist(reqs.map((r) => r.files)),
      bytes: dist(reqs.map((r) => r.bytes)),
      decoded: dist(reqs.map((r) => r.decoded)),
      chunks: dist(reqs.map((r) => r.chunks)),
      cpu_ms: dist(reqs.map((r) => Math.round(r.cpu_ms * 100) / 100)),
      cpu_median_ms: dist(reqs.map((r) => Math.round(r.cpu_median_ms * 100) / 100)),
      cpu_io_ms: dist(reqs.map((r) => Math.round(r.cpu_io_ms * 100) / 100)),
      short_pages: ws.reduce((n, w) => n + w.short, 0),
      complete_walks: complete.length,
      complete_as_expected: complete.filter((w) => w.pages_as_expected).length,
      within_budget: reqs.filter((r) => r.files <= 8 && r.bytes <= 1024 * 1024).length,
    };
  };
  return { all: row(walks), groups: Object.fromEntries([...groups].map(([g, ws]) => [g, row(ws)])) };
}

const kib = (b: number): string => (b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`);

/** The walks' markdown table (docs/benchmarks.md). */
export function walksMarkdown(s: ReturnType<typeof summariseWalks>): string {
  const lines = [
    '| query group | walks (complete, as expected) | requests | within 8 files and 1 MiB | files p50 / p99 / max | bytes p50 / p99 / max (stored) | decoded p50 / p99 / max | chunks p50 / max | CPU ms p50 / p99 / max | CPU ms, median of runs, p50 / p99 / max | short pages |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const line = (name: string, r: ReturnType<typeof summariseWalks>['all']) =>
    `| ${name} | ${r.walks} (${r.complete_walks}, ${r.complete_as_expected}) | ${r.requests} | ${r.within_budget} | ${r.files.p50} / ${r.files.p99} / ${r.files.max} | ${kib(r.bytes.p50)} / ${kib(r.bytes.p99)} / ${kib(r.bytes.max)} | ${kib(r.decoded.p50)} / ${kib(r.decoded.p99)} / ${kib(r.decoded.max)} | ${r.chunks.p50} / ${r.chunks.max} | ${r.cpu_ms.p50} / ${r.cpu_ms.p99} / ${r.cpu_ms.max} | ${r.cpu_median_ms.p50} / ${r.cpu_median_ms.p99} / ${r.cpu_median_ms.max} | ${r.short_pages} |`;
  for (const [g, r] of Object.entries(s.groups)) lines.push(line(g, r));
  lines.push(line('**all**', s.all));
  return lines.join('\n');
}
