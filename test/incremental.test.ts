// An incremental build equals a full build (docs/incremental.md): the small demo scenario from an early
// instant, advanced through cron cycles that each hit one kind of change (probes only; a day and a
// month boundary; an outage opening and closing; a mass SMP migration with its participant changes; a
// curated seat), at instants fast-check picks within each cycle's window. After every cycle the
// directory the incremental builds kept equals, file for file and byte for byte, a full build of the
// same database at the same --now into a fresh directory (and the participant and uptime lists were
// patched, not written again). Then a build killed at a random moment, and
// the build after it, give the same tree as a full build.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../src/config/index.js';
import { runBuild, type BuildSummary } from '../src/render/build.js';
import { statePath } from '../src/render/state.js';
import { testConfig } from './helpers/config.js';
import { runCli, startCli } from './helpers/cli.js';
import { ramTempDir } from './helpers/feeds.js';
import { tree } from './helpers/tree.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.parse('2026-10-31T22:00:00Z');

/** The cycles: a label and the window its instant is drawn from (15-minute steps after `from`). */
const CYCLES: ReadonlyArray<{ label: string; from: string; steps: number }> = [
  { label: 'probes only (+15 min)', from: '2026-10-31T22:15:00Z', steps: 1 },
  { label: 'a day and a month boundary', from: '2026-11-01T00:00:00Z', steps: 8 },
  { label: 'an outage opening (out-004, 15:30)', from: '2026-11-01T15:45:00Z', steps: 8 },
  { label: 'the outage closing (18:30)', from: '2026-11-01T19:00:00Z', steps: 4 },
  { label: 'a mass SMP migration (02:00-03:00) and the daily sweep', from: '2026-11-02T03:00:00Z', steps: 8 },
  { label: 'a seat becoming curated (10:17) during an outage', from: '2026-11-04T10:30:00Z', steps: 3 },
];

/** Empty directories under `dir` (a full build leaves none). */
function emptyDirs(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    const entries = fs.readdirSync(d, { withFileTypes: true });
    if (entries.length === 0 && d !== dir) out.push(d);
    for (const e of entries) if (e.isDirectory()) walk(path.join(d, e.name));
  };
  walk(dir);
  return out;
}

function expectSameTree(actual: string, expected: string, label: string): void {
  const a = tree(actual);
  const b = tree(expected);
  const missing = [...b.keys()].filter((p) => !a.has(p));
  const extra = [...a.keys()].filter((p) => !b.has(p));
  const differ = [...b.keys()].filter((p) => a.has(p) && !a.get(p)!.equals(b.get(p)!));
  expect({ missing: missing.slice(0, 10), extra: extra.slice(0, 10), differ: differ.slice(0, 10) }, label).toEqual({ missing: [], extra: [], differ: [] });
  expect(emptyDirs(actual), label).toEqual([]);
}

let feeds: string;
let dbPath: string;
let configFile: string;
let config: Config;
let work: string;

/** Bumped by each advance: the database's state, which a full build into `fresh` is of. */
let dbVersion = 0;
/** The database state and clock the tree in `fresh` was built from (fullBuildInto), if any. */
let freshOf: string | null = null;

async function advance(nowMs: number): Promise<void> {
  dbVersion++;
  const demo = await runCli(['demo', '--feeds', feeds, '--scale', 'small', '--seed', '1', '--now', new Date(nowMs).toISOString(), '--json']);
  expect(demo.code, demo.stderr).toBe(0);
  const ingest = await runCli(['ingest', '--config', configFile, '--db', dbPath, '--source', feeds, '--json']);
  expect(ingest.code, ingest.stderr).toBe(0);
}

function fullBuildInto(dir: string, nowMs: number): BuildSummary {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(statePath(dir), { force: true });
  freshOf = null;
  const s = runBuild({ config, dbPath, outDir: dir, nowMs, full: true });
  freshOf = `${dir} ${dbVersion} ${nowMs}`;
  return s;
}

/** `fresh` as a full build of the database as it is at `nowMs`: kept when it already is one. */
function fullTreeAt(dir: string, nowMs: number): void {
  if (freshOf !== `${dir} ${dbVersion} ${nowMs}`) fullBuildInto(dir, nowMs);
}

beforeAll(async () => {
  work = ramTempDir('incremental-');
  feeds = path.join(work, 'feeds');
  dbPath = path.join(work, 'db.sqlite');
  configFile = path.join(work, 'config.json');
  fs.writeFileSync(configFile, '{}\n');
  // Bulk downloads off: a day's copy is written once, by the first build of the day, so a full build into
  // a fresh directory later that day writes a newer one. test/bulk.test.ts checks that the copy an
  // incremental build writes equals the full build's (docs/bulk.md, "Incremental and full builds").
  config = testConfig();
  await advance(T0);
}, 240_000);

describe('incremental build', () => {
  it('equals a full build after every kind of cycle (random instants in each cycle window)', async () => {
    const out = path.join(work, 'out');
    const fresh = path.join(work, 'fresh');
    const first = runBuild({ config, dbPath, outDir: out, nowMs: T0 });
    expect(first.render.mode).toBe('full');
    const picks = fc.sample(fc.tuple(...CYCLES.map((c) => fc.integer({ min: 0, max: c.steps - 1 }))), 1)[0]!;
    const seen: string[] = [];
    const eventPartitions: string[] = [];
    /** Records an incremental build took from a pack's previous file (another participant of the pack changed). */
    let keptRecords = 0;
    let prevMs = T0;
    for (const [i, c] of CYCLES.entries()) {
      const nowMs = Date.parse(c.from) + picks[i]! * 15 * MINUTE;
      const label = `${c.label} at ${new Date(nowMs).toISOString()}`;
      seen.push(label);
      await advance(nowMs);
      const inc = runBuild({ config, dbPath, outDir: out, nowMs });
      expect(inc.render.mode, label).toBe('incremental');
      // The uptime lists were rendered in the worker thread (src/render/offload.ts).
      expect(inc.render.threads, label).toBe(2);
      const full = fullBuildInto(fresh, nowMs);
      expectSameTree(out, fresh, label);
      // Only the changed participants were rendered again, and the build wrote less than a full one.
      expect(inc.render.participants, label).toBeLessThan(full.files);
      expect(inc.written, label).toBeLessThan(full.written);
      if (i === 0) expect(inc.render.participants, label).toBe(0);
      // The manifest and the participant lists were patched in place, not written again.
      expect(inc.manifest.mode, label).toBe('patched');
      // A probe-only cycle keeps most manifest shards (a curated seat may touch files in every one).
      if (i === 0) expect(inc.manifest.shards_cut, label).toBeLessThan(inc.manifest.shards / 2);
      expect(inc.render.lists?.mode, label).toBe('patched');
      if (inc.render.participants! > 0) expect(inc.render.lists!.lists, label).toBeGreaterThan(0);
      if (c.label.startsWith('a mass SMP migration')) expect(inc.render.participants, label).toBeGreaterThanOrEqual(120);
      // Only the changed participants' record packs were written again; a full build renders every record.
      expect(inc.render.records.packs, label).toBeLessThanOrEqual(inc.render.participants!);
      expect(full.render.records.kept, label).toBe(0);
      expect(full.render.records.packs, label).toBeLessThan(full.render.records.rendered);
      keptRecords += inc.render.records.kept;
      // The uptime lists were patched (their newest buckets read) unless the clock moved on more than a
      // day since the build before (the last cycle), and read fewer rows than a full build.
      const u = inc.render.uptime!;
      const full_u = full.render.uptime!;
      if (nowMs - prevMs <= 24 * HOUR) {
        expect({ reason: u.full_reason, written: u.lists_written }, label).toEqual({ reason: null, written: 0 });
        expect(u.lists_patched, label).toBe(full_u.lists_written);
        expect(u.rows_read * 5, label).toBeLessThan(full_u.rows_read);
      } else expect(u.full_reason, label).toBe('the clock moved on more than a day');
      // The event lists of partitions without a change were kept, neither read nor written.
      const ev = inc.render.events!;
      expect(ev.full_reason, label).toBeNull();
      expect(ev.partitions_written, label).toBeLessThan(full.render.events!.partitions_written);
      eventPartitions.push(`${label}: ${ev.partitions_written} of ${full.render.events!.partitions_written}`);
      // The grams index is updated from the changed participants when a list item may differ, else kept
      // (the trees are equal, above); a full build writes it whole.
      expect(full.render.grams, label).toBe('written');
      if (i === 0) expect(inc.render.grams, label).toBe('kept');
      else expect(['updated', 'kept'], label).toContain(inc.render.grams);
      if (c.label.startsWith('a mass SMP migration')) expect(inc.render.grams, label).toBe('updated');
      prevMs = nowMs;
    }
    console.log(`event partitions written: ${eventPartitions.join('; ')}`);
    expect(seen).toHaveLength(CYCLES.length);
    // Some changed participant shared its pack with one that did not change (at `small`, 5,157
    // participants in 131,072 packs: the mass migration's hundreds of participants meet some).
    expect(keptRecords).toBeGreaterThan(0);
    // An incremental build with more changed participants than it patches writes the lists in full
    // (a mass migration): the same tree again.
    const lastMs = Date.parse(CYCLES[CYCLES.length - 1]!.from) + (picks[CYCLES.length - 1]! + 4) * 15 * MINUTE;
    await advance(lastMs);
    const written = runBuild({ config, dbPath, outDir: out, nowMs: lastMs, listPatchLimit: -1 });
    expect(written.render.mode).toBe('incremental');
    expect(written.render.lists?.mode).toBe('written');
    fullBuildInto(fresh, lastMs);
    expectSameTree(out, fresh, 'lists written in full by an incremental build');
  }, 900_000);

  it('a build killed at a random moment, then built again, gives the tree of a full build', async () => {
    const out = path.join(work, 'out');
    const fresh = path.join(work, 'fresh');
    const nowMs = Date.parse('2026-11-05T06:00:00Z');
    await advance(nowMs);
    const cfg = path.join(work, 'kill-config.json');
    fs.writeFileSync(cfg, JSON.stringify({ database: dbPath, out, bulk: { enabled: false } }));
    // How long an uninterrupted incremental build of this change takes, measured on a copy.
    const probeDb = path.join(work, 'probe.sqlite');
    fs.copyFileSync(dbPath, probeDb);
    const probeOut = path.join(work, 'probe-out');
    fs.cpSync(out, probeOut, { recursive: true });
    fs.copyFileSync(statePath(out), statePath(probeOut));
    const probeCfg = path.join(work, 'probe-config.json');
    fs.writeFileSync(probeCfg, JSON.stringify({ database: probeDb, out: probeOut, bulk: { enabled: false } }));
    const t0 = performance.now();
    const timed = await runCli(['build', '--config', probeCfg, '--now', new Date(nowMs).toISOString(), '--json']);
    expect(timed.code, timed.stderr).toBe(0);
    const took = performance.now() - t0;
    const killAfter = fc.sample(fc.integer({ min: 100, max: Math.max(200, Math.round(took)) }), 1)[0]!;
    const run = startCli(['build', '--config', cfg, '--now', new Date(nowMs).toISOString(), '--json']);
    const timer = setTimeout(() => run.child.kill('SIGKILL'), killAfter);
    const killed = await run.done;
    clearTimeout(timer);
    // Killed (most often) or finished before the signal: either way the next build must repair.
    const again = runBuild({ config, dbPath, outDir: out, nowMs });
    expect(again.render.mode, `killed after ${killAfter} ms (exit ${killed.code})`).toMatch(/^(incremental|full)$/);
    fullBuildInto(fresh, nowMs);
    expectSameTree(out, fresh, `killed after ${killAfter} ms`);
    // And the build after that is incremental again.
    const next = runBuild({ config, dbPath, outDir: out, nowMs });
    expect(next.render.mode).toBe('incremental');
    expect(next.render.lists?.mode).toBe('patched');
    expect(next.written).toBe(0);
  }, 600_000);

  it('a first build killed at a random moment (files written in place), then built again, gives the tree of a full build', async () => {
    // A first build into an empty directory writes its mutable files straight to their names
    // (src/render/sink.ts): one killed mid-way may leave a file cut short, which the next build must
    // replace.
    const nowMs = Date.parse('2026-11-05T06:00:00Z');
    const out = path.join(work, 'first-killed');
    const fresh = path.join(work, 'fresh');
    fs.rmSync(out, { recursive: true, force: true });
    fs.rmSync(statePath(out), { force: true });
    const cfg = path.join(work, 'first-kill-config.json');
    fs.writeFileSync(cfg, JSON.stringify({ database: dbPath, out, bulk: { enabled: false } }));
    const killAfter = fc.sample(fc.integer({ min: 300, max: 3000 }), 1)[0]!;
    const run = startCli(['build', '--config', cfg, '--now', new Date(nowMs).toISOString(), '--json']);
    const timer = setTimeout(() => run.child.kill('SIGKILL'), killAfter);
    const killed = await run.done;
    clearTimeout(timer);
    // Killed (most often; a build that finished first is the build before an incremental one): cut
    // one of the records it left short, as a kill inside a write would.
    const finished = killed.code === 0;
    const records = path.join(out, 'v1', 'participants');
    const cut = !finished && fs.existsSync(records) ? fs.readdirSync(records).find((f) => f.endsWith('.json')) : undefined;
    if (cut !== undefined) fs.truncateSync(path.join(records, cut), 5);
    const again = runBuild({ config, dbPath, outDir: out, nowMs });
    // Killed: no committed state, so a full build (one that finished has its state, but was run with
    // another configuration file: full as well, for the changed render settings).
    expect(again.render.mode, `killed after ${killAfter} ms (exit ${killed.code})`).toBe('full');
    // The database and clock of the test before: its full build is still in `fresh`.
    fullTreeAt(fresh, nowMs);
    expectSameTree(out, fresh, `first build killed after ${killAfter} ms, ${cut ?? 'no record'} cut short`);
  }, 600_000);
});
