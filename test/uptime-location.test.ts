// The `location` filter of /v1/hosts/{h}/uptime, served from the one list per host and resolution
// (docs/api-hosts.md, docs/snapshot-format.md "Uptime"): over random host data (locations present in
// some periods only, densely or sparsely, so that index entries without a location are skipped), random
// chunk limits and random clocks (how much of the list sits in the root's head), every composed answer
// is byte-identical to the oracle's for random limits, cursors, `from` and `to`, and a walk over the
// pages of a filter gives every match exactly once, in order, on full pages.
import path from 'node:path';
import fs from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/api/cursor.js';
import { jsonBody, jsonText } from '../src/api/json.js';
import { runQuery } from '../src/api/query/index.js';
import { finishResult, paramErrorsOf } from '../src/api/result.js';
import { matchRoute } from '../src/api/routes/match.js';
import { parseRequest } from '../src/api/routes/request.js';
import { RESOLUTIONS } from '../src/api/schemas/index.js';
import { openDb, type Db } from '../src/db/index.js';
import { ROLLUP_DDL, ROLLUP_TABLES, type Resolution } from '../src/derive/hosts/rollup.js';
import { DAY, HOUR } from '../src/derive/hosts/time.js';
import { encodeSketches, Sketch } from '../src/derive/sketch.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { createResolve, SNAPSHOT_INFO_PATH } from '../src/edge/resolve.js';
import type { Resolve } from '../src/edge/types.js';
import { RenderContext } from '../src/render/context.js';
import { renderHostUptime } from '../src/render/routes/hosts.js';
import { DirectorySink } from '../src/render/sink.js';
import { directoryReader } from '../src/serve/index.js';
import { tempDir } from './helpers/feeds.js';

const BASE = 'https://api.example.test';
const HOST = 'ap.uptime.example';
const NAMED = 'smp-only.uptime.example';
const LOCATIONS = ['ams', 'dub', 'fra', 'mad', 'sto', 'waw', 'zrh'];
/** Locations no bucket has: unknown ones, and names of Object.prototype properties. */
const ABSENT = ['nowhere', 'constructor', '__proto__'];
const T0 = Date.UTC(2026, 6, 1);

let db: Db;
let hostId: number;
let namedId: number;
let sketchPool: Buffer[];

beforeAll(() => {
  db = openDb(path.join(tempDir('uptime-location-db-'), 'db.sqlite'));
  db.exec(ROLLUP_DDL);
  hostId = Number(db.prepare("INSERT INTO hosts (hostname, role) VALUES (?, 'AP')").run(HOST).lastInsertRowid);
  namedId = Number(db.prepare('INSERT INTO hosts (hostname, role) VALUES (?, NULL)').run(NAMED).lastInsertRowid);
  const rng = prng(1);
  sketchPool = Array.from({ length: 16 }, () =>
    encodeSketches(Array.from({ length: 5 }, () => Sketch.of(Array.from({ length: 1 + Math.floor(rng() * 6) }, () => (rng() < 0.1 ? 0 : 1 + rng() * 900))))),
  );
});

afterAll(() => {
  db?.close();
});

/** A small deterministic generator (mulberry32): the rows of a case come from one seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Bucket `i` of a resolution, newest last: hours, days or months from T0. */
function bucketAt(r: Resolution, i: number): number {
  if (r === 'hourly') return T0 + i * HOUR;
  if (r === 'daily') return T0 + i * DAY;
  const d = new Date(T0);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + i, 1);
}

interface HostData {
  seed: number;
  /** Buckets per resolution. */
  buckets: Record<Resolution, number>;
  /** Per location: the share of the buckets where it has one (1 = every bucket), within [from, to) of 0..1. */
  presence: Array<{ density: number; from: number; to: number }>;
}

const hostDataArb: fc.Arbitrary<HostData> = fc.record({
  seed: fc.nat(),
  buckets: fc.record({ hourly: fc.integer({ min: 0, max: 500 }), daily: fc.integer({ min: 0, max: 60 }), monthly: fc.integer({ min: 0, max: 8 }) }),
  presence: fc.array(
    fc.record({ density: fc.constantFrom(1, 1, 0.6, 0.1, 0.02), from: fc.double({ min: 0, max: 1, noNaN: true }), to: fc.double({ min: 0, max: 1, noNaN: true }) }),
    { minLength: LOCATIONS.length, maxLength: LOCATIONS.length },
  ),
});

/** Replaces the host's buckets; returns the newest bucket start of any resolution (or T0). */
function load(data: HostData): number {
  const rng = prng(data.seed);
  let newest = T0;
  for (const r of RESOLUTIONS) {
    const table = ROLLUP_TABLES[r];
    db.exec(`DELETE FROM ${table}`);
    const insert = db.prepare(`INSERT INTO ${table} (host_id, bucket_start, location, up, degraded, down, sketches) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    const n = data.buckets[r];
    for (let i = 0; i < n; i++) {
      const at = bucketAt(r, i);
      const here = LOCATIONS.filter((_, k) => {
        const p = data.presence[k]!;
        const x = i / Math.max(1, n);
        return x >= Math.min(p.from, p.to) && x <= Math.max(p.from, p.to) && rng() < p.density;
      });
      for (const loc of here.length > 0 ? ['', ...here] : []) {
        insert.run(hostId, at, loc, Math.floor(rng() * 5), Math.floor(rng() * 2), 1 + Math.floor(rng() * 2), sketchPool[Math.floor(rng() * sketchPool.length)]!);
      }
      newest = Math.max(newest, at);
    }
  }
  return newest;
}

interface Snapshot {
  resolve: Resolve;
  reader: ReturnType<typeof directoryReader>;
  nowMs: number;
  stats: ReadStats[];
}

function render(nowMs: number, chunkMaxItems: number, chunkMaxBytes: number): Snapshot {
  const out = tempDir('uptime-location-');
  const sink = new DirectorySink(out);
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems, chunkMaxBytes }, jsonBody);
  renderHostUptime(ctx, { id: hostId, hostname: HOST, role: 'AP' });
  renderHostUptime(ctx, { id: namedId, hostname: NAMED, role: null });
  fs.writeFileSync(path.join(out, SNAPSHOT_INFO_PATH), jsonText({ generated_at: new Date(nowMs).toISOString(), base_url: BASE }));
  sink.close();
  const stats: ReadStats[] = [];
  return { resolve: createResolve({ onStats: (_r, s) => void stats.push(s) }), reader: directoryReader(out), nowMs, stats };
}

interface Served {
  status: number;
  text: string;
}

function viaOracle(snap: Snapshot, target: string): Served {
  const url = new URL(BASE + target);
  const m = matchRoute(url.pathname)!;
  const parsed = parseRequest(m.route, m.pathParams, url.searchParams, { now: snap.nowMs });
  const r = parsed.ok ? runQuery(m.route.id, db, parsed.params, snap.nowMs) : paramErrorsOf(parsed.errors);
  const done = finishResult(r, { baseUrl: BASE, instance: url.pathname });
  return done.status === 200 ? { status: 200, text: jsonText(done.body) } : { status: done.status, text: jsonText(done.problem) };
}

/** Both answers, byte-identical; the parsed body. */
async function same(snap: Snapshot, target: string): Promise<{ status: number; body: { items: Array<Record<string, unknown>>; next_cursor: string | null } }> {
  const a = await snap.resolve({ url: new URL(BASE + target), routeId: null }, snap.reader);
  const shim = { status: a.status, text: new TextDecoder().decode(a.body) };
  const oracle = viaOracle(snap, target);
  expect({ target, ...shim }).toEqual({ target, ...oracle });
  return { status: oracle.status, body: JSON.parse(oracle.text) as { items: Array<Record<string, unknown>>; next_cursor: string | null } };
}

function q(pathname: string, params: Record<string, string | number | undefined>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) sp.set(k, String(v));
  const s = sp.toString();
  return s === '' ? pathname : `${pathname}?${s}`;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const uptimePath = (h: string): string => `/v1/hosts/${h}/uptime`;

/** The host's buckets of a resolution as the oracle orders them: [bucket_start, published location]. */
function keysOf(r: Resolution, location?: string): Array<[number, string]> {
  const rows = db.prepare(`SELECT bucket_start, location FROM ${ROLLUP_TABLES[r]} WHERE host_id = ?`).raw().all(hostId) as Array<[number, string]>;
  return rows
    .map(([t, l]): [number, string] => [t, l === '' ? '__all__' : l])
    .filter(([, l]) => location === undefined || l === location)
    .sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

const caseArb = fc.record({
  data: hostDataArb,
  chunkMaxItems: fc.integer({ min: 1, max: 120 }),
  chunkMaxBytes: fc.integer({ min: 1024, max: 24_576 }),
  // The clock: before, at or after the newest bucket (which buckets are open, i.e. kept in the head).
  clock: fc.integer({ min: -3 * HOUR, max: 70 * DAY }),
  requests: fc.array(
    fc.record({
      resolution: fc.constantFrom<Resolution | undefined>(undefined, 'hourly', 'daily', 'monthly'),
      location: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...LOCATIONS, '__all__') },
        { weight: 1, arbitrary: fc.constantFrom(...ABSENT, undefined) },
      ),
      limit: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.constantFrom(1, 2, 50, 200)),
      // Cursor: a bucket of the data (by share of the list) or any instant, with any location name.
      cursor: fc.option(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), fc.constantFrom(...LOCATIONS, '__all__', 'a', 'zzz')), { nil: undefined }),
      from: fc.option(fc.double({ min: -0.1, max: 1.1, noNaN: true }), { nil: undefined }),
      span: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 12 },
  ),
  walk: fc.record({ location: fc.constantFrom(...LOCATIONS, '__all__'), resolution: fc.constantFrom<Resolution>('hourly', 'daily'), limit: fc.integer({ min: 1, max: 200 }) }),
});

describe('uptime location filter over random host data', () => {
  it('answers byte-identical to the oracle; walks give every match once, on full pages', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const newest = load(c.data);
        const snap = render(newest + c.clock, c.chunkMaxItems, c.chunkMaxBytes);
        for (const r of c.requests) {
          const res = r.resolution ?? 'hourly';
          const all = keysOf(res);
          const first = all.length === 0 ? T0 : all[all.length - 1]![0];
          const last = all.length === 0 ? T0 : all[0]![0];
          const at = (x: number): number => Math.round(first + x * (last - first + HOUR));
          let cursor: string | undefined;
          if (r.cursor !== undefined) {
            const [x, exact, loc] = r.cursor;
            const key: [number, string] = exact && all.length > 0 ? all[Math.min(all.length - 1, Math.floor(x * all.length))]! : [at(x), loc];
            cursor = encodeCursor({ route: 'hosts.uptime', partition: [HOST, res], key, hint: '', dir: 'next' });
          }
          const from = r.from === undefined ? undefined : at(r.from);
          const to = from === undefined || r.span === undefined ? undefined : from + Math.round(r.span * (last - first + HOUR));
          const target = q(uptimePath(HOST), { resolution: r.resolution, location: r.location, limit: r.limit, cursor, from: from === undefined ? undefined : iso(from), to: to === undefined ? undefined : iso(to) });
          const { status, body } = await same(snap, target);
          expect(status).toBe(200);
          // Full pages: a cursor only after `limit` items.
          if (body.next_cursor !== null) expect(body.items.length).toBe(r.limit);
          for (const b of body.items) if (r.location !== undefined) expect(b.location).toBe(r.location);
        }
        // Unknown host: 404; a host only named: empty pages; an absent location: empty page from the root alone.
        expect((await same(snap, q(uptimePath('nope.uptime.example'), { location: 'fra' }))).status).toBe(404);
        expect((await same(snap, q(uptimePath(NAMED), { location: 'fra', limit: 5 }))).body).toEqual({ items: [], next_cursor: null });
        snap.stats.length = 0;
        expect((await same(snap, q(uptimePath(HOST), { location: 'constructor', limit: 200 }))).body).toEqual({ items: [], next_cursor: null });
        expect(snap.stats[0]).toMatchObject({ files: 1, chunks: 0 });

        // A walk over one location: every match once, in list order, every page but the last full.
        const { location, resolution, limit } = c.walk;
        const expected = keysOf(resolution, location);
        const seen: Array<[number, string]> = [];
        let next: string | null = null;
        for (let pages = 0; ; pages++) {
          expect(pages).toBeLessThanOrEqual(expected.length + 1);
          const target = q(uptimePath(HOST), { resolution, location, limit, cursor: next ?? undefined });
          const { body } = await same(snap, target);
          seen.push(...body.items.map((b): [number, string] => [Date.parse(b.bucket_start as string), b.location as string]));
          next = body.next_cursor;
          if (next === null) break;
          expect(body.items.length).toBe(limit);
        }
        expect(seen).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  }, 300_000);
});
