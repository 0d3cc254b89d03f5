// The uptime lists patched by an incremental build (docs/incremental.md, "Uptime"): after each change
// of the buckets (new and updated open buckets, late data changing an old closed bucket, a deleted
// bucket, a role change, a new host, hosts no longer known) and each step of the clock (15 minutes to
// hours, across hours and days, back, more than a day), fixed and in random sequences, the uptime
// files the incremental builds kept equal those of a full render of the same database at the same
// --now, byte for byte (and at the end the whole tree equals a full build's); and the lists were
// patched, reading few rows, where they can be.
//
// The derive runs are simulated on the small demo's derived database: bucket rows written with the
// change set's recording on (src/derive/changes.ts), as the hosts step writes them, and the watermark
// raised.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../src/config/index.js';
import { getMeta, setMeta, type Db } from '../src/db/index.js';
import { startRecording, stopRecording } from '../src/derive/changes.js';
import { ROLLUP_TABLES, type Resolution } from '../src/derive/hosts/rollup.js';
import { dayStart, HOUR, hourStart, monthStart } from '../src/derive/hosts/time.js';
import { jsonBody } from '../src/api/json.js';
import { runBuild, type BuildSummary } from '../src/render/build.js';
import { RenderContext, type UptimeReport } from '../src/render/context.js';
import { HOSTS_RENDERERS } from '../src/render/routes/hosts.js';
import { DirectorySink } from '../src/render/sink.js';
import { statePath } from '../src/render/state.js';
import { testConfig } from './helpers/config.js';
import { builtSmallDemo, copyOfDb, copyOfSnapshot, smallDemo, type BuiltDemo } from './helpers/demo-fixture.js';
import { ramTempDir } from './helpers/feeds.js';
import { tree } from './helpers/tree.js';
import { decodeStored, readStoredJson } from '../src/render/stored.js';

const MINUTE = 60_000;
const DAY = 24 * HOUR;
const RESOLUTIONS: Resolution[] = ['hourly', 'daily', 'monthly'];
const bucketStart = (r: Resolution, ms: number): number => (r === 'hourly' ? hourStart(ms) : r === 'daily' ? dayStart(ms) : monthStart(ms));

let db: Db;
let dbPath: string;
let config: Config;
let work: string;
let hosts: Array<{ id: number; hostname: string }>;
let t0: number;
/** The first build of the small demo at t0 (shared, test/helpers/demo-fixture.ts): its tree, state and summary. */
let built: BuiltDemo;

/** Every uptime file of a tree (list roots, chunks they reach, the exact first pages): path -> bytes. */
function uptimeFiles(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const read = (rel: string): Buffer => {
    const b = fs.readFileSync(path.join(dir, rel));
    out.set(rel, b);
    return b;
  };
  const visit = (entries: Array<{ path: string }>, level: number): void => {
    for (const e of entries) {
      const b = read(e.path);
      if (level > 0) visit((JSON.parse(decodeStored(b).toString()) as { entries: Array<{ path: string }> }).entries, level - 1);
    }
  };
  const roots = path.join(dir, 'i', 'hosts.uptime');
  if (fs.existsSync(roots)) {
    for (const h of fs.readdirSync(roots)) {
      for (const f of fs.readdirSync(path.join(roots, h))) {
        const rel = `i/hosts.uptime/${h}/${f}`;
        const root = JSON.parse(decodeStored(read(rel)).toString()) as { level: number; entries: Array<{ path: string }> };
        visit(root.entries, root.level);
      }
    }
  }
  const v1 = path.join(dir, 'v1', 'hosts');
  for (const h of fs.readdirSync(v1)) if (fs.existsSync(path.join(v1, h, 'uptime.json'))) read(`v1/hosts/${h}/uptime.json`);
  return out;
}

function diff(a: Map<string, Buffer>, b: Map<string, Buffer>): { missing: string[]; extra: string[]; differ: string[] } {
  return {
    missing: [...b.keys()].filter((p) => !a.has(p)).slice(0, 10),
    extra: [...a.keys()].filter((p) => !b.has(p)).slice(0, 10),
    differ: [...b.keys()].filter((p) => a.has(p) && !a.get(p)!.equals(b.get(p)!)).slice(0, 10),
  };
}

const NO_DIFF = { missing: [], extra: [], differ: [] };

/** A derive run: `mutate` writes bucket rows with the change set's recording on; the watermark rises. */
function derived(mutate: () => void): void {
  const seq = Number(getMeta(db, 'derive_upto') ?? '0') + 1;
  startRecording(db, seq);
  try {
    db.transaction(mutate)();
  } finally {
    stopRecording(db);
  }
  setMeta(db, 'derive_upto', String(seq));
}

/** New probes of a host at `nowMs`: its open buckets get more checks (or appear). */
function probe(hostId: number, nowMs: number, n: number): void {
  for (const r of RESOLUTIONS) {
    const t = ROLLUP_TABLES[r];
    const b = bucketStart(r, nowMs);
    const has = db.prepare(`SELECT count(*) FROM ${t} WHERE host_id = ? AND bucket_start = ?`).pluck().get(hostId, b) as number;
    if (has > 0) db.prepare(`UPDATE ${t} SET up = up + ? WHERE host_id = ? AND bucket_start = ?`).run(n, hostId, b);
    else {
      // A copy of the host's newest bucket before it.
      const last = db.prepare(`SELECT max(bucket_start) FROM ${t} WHERE host_id = ? AND bucket_start < ?`).pluck().get(hostId, b) as number | null;
      if (last !== null) db.prepare(`INSERT INTO ${t} SELECT host_id, ?, location, up + ?, degraded, down, sketches FROM ${t} WHERE host_id = ? AND bucket_start = ?`).run(b, n, hostId, last);
    }
  }
}

/** Late data: one old bucket of a host (the `age`-th newest of the resolution) changes. */
function late(hostId: number, r: Resolution, age: number, how: 'update' | 'delete'): void {
  const t = ROLLUP_TABLES[r];
  const row = db.prepare(`SELECT bucket_start, location FROM ${t} WHERE host_id = ? ORDER BY bucket_start DESC, location LIMIT 1 OFFSET ?`).get(hostId, age) as
    | { bucket_start: number; location: string }
    | undefined;
  if (row === undefined) return;
  if (how === 'update') db.prepare(`UPDATE ${t} SET down = down + 1 WHERE host_id = ? AND bucket_start = ? AND location = ?`).run(hostId, row.bucket_start, row.location);
  else db.prepare(`DELETE FROM ${t} WHERE host_id = ? AND bucket_start = ? AND location = ?`).run(hostId, row.bucket_start, row.location);
}

function build(out: string, nowMs: number): BuildSummary {
  return runBuild({ config, dbPath, outDir: out, nowMs });
}

function fullBuild(dir: string, nowMs: number): BuildSummary {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(statePath(dir), { force: true });
  return runBuild({ config, dbPath, outDir: dir, nowMs, full: true });
}

/** The uptime files of a full render (the route alone, no kept lists) at `nowMs` into a fresh directory. */
function fullUptime(nowMs: number): Map<string, Buffer> {
  const dir = ramTempDir('uptime-incremental-full-');
  const sink = new DirectorySink(dir);
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: config.render.chunk_max_items, chunkMaxBytes: config.render.chunk_max_bytes }, jsonBody);
  db.exec('BEGIN');
  try {
    HOSTS_RENDERERS['hosts.uptime']!(ctx);
  } finally {
    db.exec('COMMIT');
  }
  sink.close();
  const files = uptimeFiles(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  return files;
}

/** An incremental build at `nowMs`; its uptime files equal a full render's. */
function step(out: string, nowMs: number, label: string): UptimeReport {
  const inc = build(out, nowMs);
  expect(inc.render.mode, label).toBe('incremental');
  // In the worker thread, with the units the main thread allotted (src/render/offload.ts).
  expect(inc.render.threads, label).toBe(2);
  expect(diff(uptimeFiles(out), fullUptime(nowMs)), label).toEqual(NO_DIFF);
  return inc.render.uptime!;
}

/** The whole tree of `out` equals a full build's (no file left behind, none missing). */
function sameTreeAsFull(out: string, nowMs: number, label: string): void {
  const fresh = path.join(work, 'fresh');
  fullBuild(fresh, nowMs);
  expect(diff(tree(out), tree(fresh)), label).toEqual(NO_DIFF);
}

const swapRole = (hostId: number): void => void db.prepare("UPDATE hosts SET role = CASE role WHEN 'AP' THEN 'SMP' ELSE 'AP' END WHERE id = ?").run(hostId);

beforeAll(async () => {
  // The small demo's first build (testConfig() at its now, as `build` below builds), made once per run
  // (test/helpers/demo-fixture.ts): its database copied here, its tree and state by the first test.
  built = await builtSmallDemo();
  const copy = copyOfDb(built.db);
  dbPath = copy.path;
  db = copy.open();
  // Bulk downloads off: written once per UTC day, they are not a function of the clock of every build
  // (test/bulk.test.ts, docs/bulk.md "Incremental and full builds").
  config = testConfig();
  work = ramTempDir('uptime-incremental-');
  t0 = Date.parse(smallDemo().now);
  hosts = db.prepare('SELECT id, hostname FROM hosts WHERE role IS NOT NULL ORDER BY id').all() as Array<{ id: number; hostname: string }>;
}, 120_000);

describe('uptime lists patched by an incremental build', () => {
  let out: string;
  let now: number;
  /** Hourly rows a full render reads. */
  let fullRows: number;
  /** The report of a cycle without changes. */
  let probeCycle: UptimeReport;
  /** The hosts left for the last tests. */
  let few: Array<{ id: number; hostname: string }>;

  it('probe cycles patch the lists, read few rows and give the files of a full build', () => {
    // The first build: a full one into an empty directory (the shared one, copied with its state).
    out = copyOfSnapshot(built.out, 'uptime-incremental-out-');
    const first = built.summary;
    expect(first.render.mode).toBe('full');
    expect(first.render.uptime).toMatchObject({ full_reason: 'a full build', lists_patched: 0, chunks_kept: 0 });
    fullRows = first.render.uptime!.rows_read;
    now = t0;
    // Within an hour, at the hour, within the first hour of a day.
    for (const minutes of [15, 30, 15]) {
      now += minutes * MINUTE;
      derived(() => {
        for (const h of hosts) probe(h.id, now, 3);
      });
      const u = step(out, now, `+${minutes} min`);
      expect(u.full_reason).toBeNull();
      expect(u.lists_patched).toBe(3 * hosts.length);
      expect(u.chunks_kept).toBeGreaterThan(0);
      expect(u.rows_read * 5).toBeLessThan(fullRows);
    }
    // Nothing changed: nothing is read but the front of each list.
    derived(() => {});
    const quiet = step(out, now, 'no change');
    expect(quiet.lists_patched).toBe(3 * hosts.length);
    // The buckets open at either clock only: at most two per resolution and location.
    expect(quiet.rows_read).toBeLessThanOrEqual(3 * 2 * 8 * hosts.length);
    probeCycle = quiet;
  }, 120_000);

  it('late data changing an old closed bucket, and a deleted one, behind the kept chunks: re-read from there', () => {
    const h = hosts[0]!;
    const root = (r: Resolution): { entries: unknown[] } => readStoredJson(path.join(out, `i/hosts.uptime/${h.hostname}/${r}.json`)) as { entries: unknown[] };
    const entries = root('hourly').entries.length;
    expect(entries).toBeGreaterThan(4);
    const rows = db.prepare('SELECT count(*) FROM uptime_hourly WHERE host_id = ?').pluck().get(h.id) as number;
    now += 15 * MINUTE;
    // Two thirds down the hourly list (far behind the first chunks), and an old daily bucket.
    derived(() => {
      probe(h.id, now, 1);
      late(h.id, 'hourly', Math.floor((rows * 2) / 3), 'update');
      late(h.id, 'daily', 40, 'update');
    });
    const u = step(out, now, 'late data');
    expect(u.lists_patched).toBe(3 * hosts.length);
    // The host's hourly list is read back to the changed bucket: from the database after it, from the
    // previous files before it.
    expect(u.rows_read - probeCycle.rows_read).toBeGreaterThan(rows / 2);
    expect(u.chunks_read - probeCycle.chunks_read).toBeGreaterThanOrEqual(Math.floor(entries / 3) - 1);
    now += 15 * MINUTE;
    derived(() => late(h.id, 'hourly', rows - 5, 'delete'));
    const v = step(out, now, 'a deleted old bucket');
    expect(v.lists_patched).toBe(3 * hosts.length);
    expect(v.chunks_read - probeCycle.chunks_read).toBeGreaterThanOrEqual(entries - 3);
    expect(probeCycle.chunks_kept - v.chunks_kept).toBeGreaterThanOrEqual(entries - 3);
  });

  it('hosts no longer known, a role change, a new host, the clock going back or jumping: written in full, same files', () => {
    // Four hosts stay known: the lists of the others are dropped.
    few = hosts.slice(0, 4);
    db.prepare(`DELETE FROM hosts WHERE id NOT IN (${few.map((h) => h.id).join(', ')})`).run();
    now += 15 * MINUTE;
    derived(() => {});
    let u = step(out, now, 'hosts no longer known');
    expect(u).toMatchObject({ lists_patched: 3 * few.length, lists_written: 0 });
    expect(fs.readdirSync(path.join(out, 'i/hosts.uptime')).sort()).toEqual(few.map((h) => h.hostname).sort());
    const [a, b] = few;
    now += 15 * MINUTE;
    swapRole(a!.id);
    derived(() => probe(b!.id, now, 1));
    u = step(out, now, 'role change');
    expect(u).toMatchObject({ lists_patched: 3 * (few.length - 1), lists_written: 3 });
    swapRole(a!.id);
    // A new host with the buckets of another.
    now += 15 * MINUTE;
    derived(() => {
      // An id no bucket names yet (the buckets of the hosts deleted above stay).
      const id = 1 + (db.prepare('SELECT max(host_id) FROM uptime_hourly').pluck().get() as number);
      db.prepare("INSERT INTO hosts (id, hostname, role) VALUES (?, 'new-host.example', 'AP')").run(id);
      for (const r of RESOLUTIONS) db.prepare(`INSERT INTO ${ROLLUP_TABLES[r]} SELECT ?, bucket_start, location, up, degraded, down, sketches FROM ${ROLLUP_TABLES[r]} WHERE host_id = ?`).run(id, b!.id);
    });
    u = step(out, now, 'a new host');
    expect(u).toMatchObject({ lists_patched: 3 * (few.length - 1), lists_written: 6 });
    db.prepare("DELETE FROM hosts WHERE hostname = 'new-host.example'").run();
    // The clock goes back, then jumps more than a day.
    now -= 30 * MINUTE;
    derived(() => {});
    u = step(out, now, 'the clock went back');
    expect(u).toMatchObject({ full_reason: 'the clock went back', lists_patched: 0 });
    now += DAY + HOUR;
    derived(() => {
      for (const h of few) probe(h.id, now, 2);
    });
    u = step(out, now, 'a jump of more than a day');
    expect(u).toMatchObject({ full_reason: 'the clock moved on more than a day', lists_patched: 0 });
    now += 15 * MINUTE;
    derived(() => {});
    expect(step(out, now, 'patched again').lists_patched).toBe(3 * few.length);
  }, 120_000);

  it('random cycles (property): every step gives the files of a full build', () => {
    const cycle = fc.record({
      minutes: fc.oneof({ arbitrary: fc.constantFrom(15, 30, 45, 60, 180, 600), weight: 8 }, { arbitrary: fc.constantFrom(-15, -90, 1500), weight: 1 }),
      probes: fc.subarray(few.map((_, i) => i)),
      late: fc.option(fc.record({ host: fc.nat(3), resolution: fc.constantFrom(...RESOLUTIONS), at: fc.integer({ min: 0, max: 1000 }), how: fc.constantFrom('update' as const, 'delete' as const) }), { freq: 3 }),
      role: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.nat(3), weight: 1 }),
    });
    let steps = 0;
    let patched = 0;
    fc.assert(
      fc.property(fc.array(cycle, { minLength: 2, maxLength: 5 }), (cycles) => {
        for (const c of cycles) {
          now += c.minutes * MINUTE;
          if (c.role !== null) swapRole(few[c.role]!.id);
          derived(() => {
            for (const i of c.probes) probe(few[i]!.id, now, 1 + i);
            if (c.late !== null) {
              const h = few[c.late.host]!;
              const n = db.prepare(`SELECT count(*) FROM ${ROLLUP_TABLES[c.late.resolution]} WHERE host_id = ?`).pluck().get(h.id) as number;
              late(h.id, c.late.resolution, Math.floor((c.late.at * n) / 1000), c.late.how);
            }
          });
          const u = step(out, now, `${JSON.stringify(c)} at ${new Date(now).toISOString()}`);
          steps++;
          patched += u.lists_patched;
        }
      }),
      { numRuns: 5, endOnFailure: true },
    );
    // Most lists were patched.
    expect(patched).toBeGreaterThan(steps * 3 * few.length * 0.5);
    sameTreeAsFull(out, now, 'after the random cycles');
  }, 120_000);
});
