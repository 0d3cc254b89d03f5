// `peppol-snapshot build` and `verify` on the small demo: a complete snapshot that verifies, every route
// of the route table rendered, byte-identical rebuilds that rewrite nothing, and stale files removed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { CUBE_PATH, decodeCube } from '../src/api/participants/facets.js';
import { allGramCells, GRAMS_PREFIX } from '../src/api/participants/grams.js';
import { ROUTE_LIST } from '../src/api/routes/table.js';
import { getMeta, openDb, setMeta } from '../src/db/index.js';
import { APART_STALE_EXIT } from '../src/derive/apart.js';
import { startRecording, stopRecording } from '../src/derive/changes.js';
import { ROLLUP_TABLES } from '../src/derive/hosts/rollup.js';
import { dayStart, hourStart, monthStart } from '../src/derive/hosts/time.js';
import { EDGE_ONLY, runBuild, type BuildSummary } from '../src/render/build.js';
import { createRecords, removeRecords } from '../src/render/offload.js';
import { statePath } from '../src/render/state.js';
import { verifySnapshot } from '../src/render/verify.js';
import { runCli } from './helpers/cli.js';
import { testConfig } from './helpers/config.js';
import { builtSmallDemo, copyOfDb, copyOfSmallDemoDb, copyOfSnapshot } from './helpers/demo-fixture.js';
import { ramTempDir } from './helpers/feeds.js';
import { tree as treeBytes } from './helpers/tree.js';

const NOW = Date.parse('2026-11-22T00:00:00Z');

interface Entry {
  path: string;
  sha256: string;
  bytes: number;
  content_type: string;
  cache_class: string;
  content_encoding?: string;
}
interface ShardRef {
  path: string;
  sha256: string;
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const gunzipIf = (b: Buffer): Buffer => (b[0] === 0x1f && b[1] === 0x8b ? gunzipSync(b) : b);

/** Every entry of a snapshot's manifest. */
function manifestEntries(dir: string): Entry[] {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { shards: ShardRef[] };
  return m.shards.flatMap((s) =>
    fs
      .readFileSync(path.join(dir, s.path), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Entry),
  );
}

/** Replaces one manifest entry in place (its shard rewritten, manifest.json given the shard's new sha256). */
function rewriteManifestEntry(dir: string, rel: string, f: (e: Entry) => Entry): void {
  const mPath = path.join(dir, 'manifest.json');
  const m = JSON.parse(fs.readFileSync(mPath, 'utf8')) as { shards: ShardRef[] };
  for (const s of m.shards) {
    const lines = fs.readFileSync(path.join(dir, s.path), 'utf8').split('\n');
    const i = lines.findIndex((l) => l !== '' && (JSON.parse(l) as Entry).path === rel);
    if (i < 0) continue;
    lines[i] = JSON.stringify(f(JSON.parse(lines[i]!) as Entry));
    const body = Buffer.from(lines.join('\n'));
    fs.writeFileSync(path.join(dir, s.path), body);
    s.sha256 = sha256(body);
  }
  fs.writeFileSync(mPath, JSON.stringify(m));
}

function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(dir, p), `${fs.statSync(p).mtimeMs}:${fs.statSync(p).size}`);
    }
  };
  walk(dir);
  return out;
}

/** Two trees hold the same paths with the same bytes. */
function expectSameTree(a: string, b: string): void {
  const x = treeBytes(a);
  const y = treeBytes(b);
  expect([...x.keys()].sort()).toEqual([...y.keys()].sort());
  expect([...x].filter(([p, bytes]) => !y.get(p)!.equals(bytes)).map(([p]) => p)).toEqual([]);
}

/**
 * The state of an output directory as two builds of the same files must agree on, whichever thread
 * allotted the units: each file with its hash and kind of unit (a participant's or the build's, or a
 * kept list's), the kept lists' roots, and how many list units hold files.
 */
function stateRows(dir: string): unknown[] {
  const s = new Database(statePath(dir), { readonly: true });
  try {
    return [
      s.prepare('SELECT path, unit >= 0 AS participant_or_build, sha256 FROM files ORDER BY path, unit >= 0').raw().all(),
      s.prepare('SELECT root FROM lists ORDER BY root').pluck().all(),
      s.prepare('SELECT count(DISTINCT unit) FROM files WHERE unit < 0').pluck().get(),
    ];
  } finally {
    s.close();
  }
}

describe('build', () => {
  let db: string;
  let out: string;
  let first: BuildSummary;
  beforeAll(async () => {
    // The first build of a copy of the small demo (shared with other test files, made once per run:
    // test/helpers/demo-fixture.ts), copied with its state and database: the tests below build on.
    const built = await builtSmallDemo();
    db = copyOfDb(built.db).path;
    out = copyOfSnapshot(built.out, 'build-out-');
    first = built.summary;
  }, 300_000);

  it('renders every route of the route table and a snapshot that verifies', () => {
    expect(first.generated_at).toBe('2026-11-22T00:00:00Z');
    expect(first.missing_routes).toEqual([]);
    for (const r of ROUTE_LIST) if (!EDGE_ONLY.has(r.id)) expect(Object.keys(first.routes)).toContain(r.id);
    expect([...EDGE_ONLY].sort()).toEqual(['discovery.problem_type', 'health', 'health.db']);
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as { generated_at: string; files: number };
    expect(Object.keys(manifest)[0]).toBe('generated_at');
    expect(manifest.files).toBe(first.files);
    const v = verifySnapshot(out);
    expect(v.problems).toEqual([]);
    expect(v.files).toBe(first.files);
  }, 300_000);

  it('a rebuild with the same database and --now rewrites nothing', () => {
    const before = tree(out);
    const again = runBuild({ config: testConfig(), dbPath: db, outDir: out, nowMs: NOW });
    expect(again.written).toBe(0);
    expect(again.removed).toBe(0);
    expect(again.files).toBe(first.files);
    expect(tree(out)).toEqual(before);
  }, 300_000);

  it('a full render caused by new code takes the state\'s hashes for unchanged files (both threads); --full and a killed build read them', () => {
    // A copy of the tree and its state, the state's code fingerprint changed (as new code would).
    const dir = path.join(ramTempDir('build-trusted-'), 'out');
    fs.cpSync(out, dir, { recursive: true });
    for (const ext of ['', '-wal']) if (fs.existsSync(statePath(out) + ext)) fs.copyFileSync(statePath(out) + ext, statePath(dir) + ext);
    const setInfo = (key: string, value: string): void => {
      const st = new Database(statePath(dir));
      try {
        st.prepare('UPDATE info SET value = ? WHERE key = ?').run(value, key);
      } finally {
        st.close();
      }
    };
    setInfo('fingerprint', 'other code');
    // A file of the main thread's routes, and a root of an uptime list (the worker's), changed on disk
    // behind the state's back: a render that takes the state's hashes does not read them, so they stay.
    const entries = manifestEntries(dir);
    const uptimeRoot = entries.find((e) => e.path.startsWith('i/') && e.path.includes('uptime'))!.path;
    const victims = ['openapi.json', uptimeRoot];
    const original = new Map(victims.map((v) => [v, fs.readFileSync(path.join(dir, v))]));
    const tamper = (): void => {
      for (const v of victims) fs.writeFileSync(path.join(dir, v), Buffer.concat([original.get(v)!, Buffer.from(' ')]));
    };
    tamper();
    const trusted = runBuild({ config: testConfig(), dbPath: db, outDir: dir, nowMs: NOW });
    expect(trusted.render).toMatchObject({ mode: 'full', reason: 'the code or the render settings changed', compare: 'state', threads: 2 });
    expect(trusted.written).toBe(0);
    expect(trusted.files).toBe(first.files);
    for (const v of victims) expect(fs.readFileSync(path.join(dir, v)).equals(original.get(v)!), v).toBe(false);
    // --full reads every file: both are written again.
    const full = runBuild({ config: testConfig(), dbPath: db, outDir: dir, nowMs: NOW, full: true });
    expect(full.render).toMatchObject({ mode: 'full', compare: 'bytes' });
    expect(full.written).toBe(victims.length);
    for (const v of victims) expect(fs.readFileSync(path.join(dir, v)).equals(original.get(v)!), v).toBe(true);
    // After a killed build the state does not vouch for the directory: new code reads the files too.
    tamper();
    setInfo('fingerprint', 'other code again');
    setInfo('in_progress', '1');
    const afterKill = runBuild({ config: testConfig(), dbPath: db, outDir: dir, nowMs: NOW });
    expect(afterKill.render).toMatchObject({ mode: 'full', compare: 'bytes' });
    expect(afterKill.written).toBe(victims.length);
    expectSameTree(dir, out);
  }, 300_000);

  /**
   * A copy of the first build's tree with one fault of each kind the tests below look for, and what
   * `verify` said of it (the CLI, run once: a verify of the small demo reads every file, 9 s): a
   * changed file, a missing one, a root stored as it is with its entry saying gzip, another without
   * content_encoding, a chunk holding keys its list derives and one without the keys its list stores.
   */
  let faulty: Promise<{ code: number | null; problems: Array<{ path: string; message: string }>; faults: { derived: string; keyed: string; plainRoot: string; bareRoot: string } }> | null = null;
  const verifiedFaultyCopy = () =>
    (faulty ??= (async () => {
      const copy = ramTempDir('build-faulty-');
      fs.cpSync(out, copy, { recursive: true });
      fs.appendFileSync(path.join(copy, 'openapi.json'), ' ');
      fs.rmSync(path.join(copy, 'snapshot.json'));
      const entries = manifestEntries(copy);
      const readJson = (rel: string): { entries: Array<{ path: string }>; keys?: unknown[]; items: unknown[] } =>
        JSON.parse(gunzipIf(fs.readFileSync(path.join(copy, rel))).toString('utf8')) as { entries: Array<{ path: string }>; keys?: unknown[]; items: unknown[] };
      const firstChunk = (root: string): string => {
        let p = readJson(root).entries[0]!.path;
        while ('entries' in readJson(p)) p = readJson(p).entries[0]!.path;
        return p;
      };
      const participantRoot = entries.find((e) => e.path.startsWith('i/participants.list/'))!.path;
      const uptimeRoot = entries.find((e) => e.path.startsWith('i/hosts.uptime/'))!.path;
      const derived = firstChunk(participantRoot);
      const keyed = firstChunk(uptimeRoot);
      // Rewrites a chunk (gzip-encoded, its manifest entry following) with other JSON.
      const rewrite = (rel: string, body: unknown): void => {
        const gz = gzipSync(JSON.stringify(body));
        fs.writeFileSync(path.join(copy, rel), gz);
        rewriteManifestEntry(copy, rel, (e) => ({ ...e, sha256: sha256(gz), bytes: gz.length }));
      };
      const d = readJson(derived);
      const k = readJson(keyed);
      expect(d.keys).toBeUndefined();
      rewrite(derived, { keys: d.items.map(() => ['x']), items: d.items });
      rewrite(keyed, { items: k.items });
      // Two other roots stored as they are, their manifest entries naming those bytes: one still says
      // content_encoding gzip, the other says nothing.
      const [plainRoot, bareRoot] = entries.filter((e) => e.path.startsWith('i/') && e.path !== participantRoot && e.path !== uptimeRoot).map((e) => e.path);
      for (const victim of [plainRoot!, bareRoot!]) {
        const plain = gunzipIf(fs.readFileSync(path.join(copy, victim)));
        fs.writeFileSync(path.join(copy, victim), plain);
        rewriteManifestEntry(copy, victim, (e) => {
          const { content_encoding: encoding, ...bare } = e;
          return { ...(victim === bareRoot ? bare : { ...bare, content_encoding: encoding }), sha256: sha256(plain), bytes: plain.length };
        });
      }
      const r = await runCli(['verify', '--out', copy]);
      // One line per problem on stderr: `verify: <path>: <message>` (paths hold no ': ').
      const problems = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('verify: ') && !/^verify: \d+ files, /.test(l))
        .map((l) => {
          const rest = l.slice('verify: '.length);
          const at = rest.indexOf(': ');
          return { path: rest.slice(0, at), message: rest.slice(at + 2) };
        });
      return { code: r.code, problems, faults: { derived, keyed, plainRoot: plainRoot!, bareRoot: bareRoot! } };
    })());
  const problemsOf = (all: Array<{ path: string; message: string }>, p: string) => all.filter((x) => x.path === p);

  it('verify reports a changed file and a missing one; the CLI exits 1', async () => {
    const v = await verifiedFaultyCopy();
    expect(v.code).toBe(1);
    expect(problemsOf(v.problems, 'openapi.json')).toEqual([{ path: 'openapi.json', message: 'sha256 or size differs from the manifest' }]);
    expect(problemsOf(v.problems, 'snapshot.json')).toEqual([{ path: 'snapshot.json', message: 'listed in the manifest but missing' }]);
    // Verify names the faulty files only: each fault is reported where it is, and nowhere else.
    const faultPaths = new Set(['openapi.json', 'snapshot.json', ...Object.values(v.faults)]);
    expect(v.problems.filter((p) => !faultPaths.has(p.path))).toEqual([]);
  }, 120_000);

  it('stores the parts the shim reads gzip-encoded, answers as they are; verify checks each against its path', async () => {
    const entries = manifestEntries(out);
    let stored = 0;
    let decoded = 0;
    const seen = { root: 0, chunk: 0, facets: 0, record: 0, answer: 0 };
    for (const e of entries) {
      const body = fs.readFileSync(path.join(out, e.path));
      const gz = body[0] === 0x1f && body[1] === 0x8b;
      const kind = e.path.startsWith('i/') ? 'root' : e.path.startsWith('c/') ? 'chunk' : e.path.startsWith('f/participants/records/') ? 'record' : e.path.startsWith('f/') ? 'facets' : e.path.startsWith('v1/') ? 'answer' : null;
      if (kind === null) {
        // Everything else is stored as it is. (These builds write no bulk downloads, testConfig: those
        // that are gzip files by format are stored as they are too, test/bulk.test.ts.)
        expect({ path: e.path, gz, enc: e.content_encoding }).toEqual({ path: e.path, gz: false, enc: undefined });
        continue;
      }
      seen[kind]++;
      const want = kind !== 'answer';
      expect({ path: e.path, gz, enc: e.content_encoding }).toEqual({ path: e.path, gz: want, enc: want ? 'gzip' : undefined });
      const content = gunzipIf(body);
      // JSON, but for the facet cube and the grams index's cell shards (binary: src/api/participants/facets.ts
      // encodeCube, src/api/participants/grams.ts encodeGramCells).
      if (e.path === CUBE_PATH) expect(decodeCube(new Uint8Array(content)), e.path).not.toBeNull();
      else if (e.path.startsWith(`${GRAMS_PREFIX}cells/`)) expect(allGramCells(new Uint8Array(content)), e.path).not.toBeNull();
      else expect(() => JSON.parse(content.toString('utf8')) as unknown, e.path).not.toThrow();
      // A content-addressed file is named by the SHA-256 of its JSON, not of its stored bytes.
      if (kind === 'chunk') expect(e.path).toBe(`c/${sha256(content).slice(0, 2)}/${sha256(content).slice(2, 40)}.json`);
      stored += body.length;
      decoded += content.length;
    }
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(0);
    expect(decoded / stored).toBeGreaterThan(3);

    // A root stored as it is, its manifest entry saying so: verify names the file.
    const v = await verifiedFaultyCopy();
    expect(problemsOf(v.problems, v.faults.plainRoot)).toEqual([{ path: v.faults.plainRoot, message: 'not stored gzip-encoded' }]);
    expect(problemsOf(v.problems, v.faults.bareRoot)).toEqual([{ path: v.faults.bareRoot, message: 'content_encoding is absent, expected gzip' }]);
  }, 120_000);

  it('verify reports a chunk holding keys its list derives, and one without the keys its list stores (and goes on)', async () => {
    const v = await verifiedFaultyCopy();
    expect(v.problems).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: v.faults.derived, message: expect.stringContaining('holds keys, though its list derives them') }), { path: v.faults.keyed, message: 'holds no keys' }]),
    );
  }, 120_000);

  // An incremental build removes exactly the files earlier builds wrote and this one does not
  // (test/incremental.test.ts compares whole trees); a file no build wrote is removed by a full build.
  it('a full build removes files in the directory that this build does not produce', () => {
    const stale = path.join(out, 'c', 'zz', 'stale-chunk.json');
    fs.mkdirSync(path.dirname(stale), { recursive: true });
    fs.writeFileSync(stale, '{}');
    const again = runBuild({ config: testConfig(), dbPath: db, outDir: out, nowMs: NOW, full: true });
    expect(again.removed).toBe(1);
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(path.dirname(stale))).toBe(false);
  }, 300_000);

  // A full build renders the uptime lists and a share of the participants' records in a worker thread
  // (src/render/offload.ts); the same build on one thread gives the same files and the same state.
  it('a full build with the render worker equals one on the calling thread, and leaves no records file', () => {
    const single = ramTempDir('build-single-');
    const one = runBuild({ config: testConfig(), dbPath: db, outDir: single, nowMs: NOW, worker: false });
    expect(first.render.threads).toBe(2);
    expect(one.render.threads).toBe(1);
    expect(one.written).toBe(first.written);
    expect(one.written_by_class).toEqual(first.written_by_class);
    // The participant lists, written by both threads (the worker's index lists and short name lists),
    // are counted once each.
    expect(first.render.lists).toEqual(one.render.lists);
    expect(first.routes['participants.list:index-lists']).toBeDefined();
    expect(first.routes['participants.list:short-lists']).toBeDefined();
    expect(one.routes['participants.list:short-lists']).toBeUndefined();
    expectSameTree(out, single);
    // Every file is recorded with its render unit in both states (the worker's rows were merged).
    expect(stateRows(out)).toEqual(stateRows(single));
    expect(fs.readdirSync(path.dirname(out)).filter((f) => f.startsWith(path.basename(out)) && f.endsWith('.worker'))).toEqual([]);
  }, 300_000);
  // The worker's sink looks up each content-addressed file it puts into an empty directory in its
  // records file (DirectorySink.has, the same statement): a search of an index on the path, not a scan
  // of every row recorded so far (which took 51 of the worker's 576 CPU-seconds at `peppol`).
  it("the worker's records file looks a file up by its path through an index", () => {
    const p = path.join(ramTempDir('build-records-'), 'records.sqlite');
    createRecords(p);
    const r = new Database(p, { readonly: true });
    try {
      const plan = r.prepare('EXPLAIN QUERY PLAN SELECT 1 FROM files WHERE path = ? LIMIT 1').all('c/00/0.json') as Array<{ detail: string }>;
      expect(plan.map((x) => x.detail)).toEqual([expect.stringMatching(/^SEARCH files USING (COVERING )?INDEX files_path \(path=\?\)$/)]);
    } finally {
      r.close();
      removeRecords(p);
    }
  });
  // An incremental build renders the uptime and event lists in the worker thread while the main thread
  // patches the participant lists (src/render/offload.ts): the same files and state as on one thread.
  it('an incremental build with the uptime and event lists in the worker equals one on the calling thread, files and state', () => {
    /** A copy of the database, the tree and its state, as the first build left them. */
    const copy = (tag: string): { db: string; out: string } => {
      const dir = ramTempDir(`build-inc-${tag}-`);
      const c = { db: path.join(dir, 'db.sqlite'), out: path.join(dir, 'out') };
      for (const suffix of ['', '-wal']) if (fs.existsSync(db + suffix)) fs.copyFileSync(db + suffix, c.db + suffix);
      fs.cpSync(out, c.out, { recursive: true });
      fs.copyFileSync(statePath(out), statePath(c.out));
      return c;
    };
    // 20 hours on, with new measurements: each host's newest buckets, copied to every hour since and to
    // the day and month of `later` (a derive's change set records them), so every uptime list gains
    // items, its head overflows into a new first chunk, and the earlier first chunk is retired.
    const later = NOW + 20 * 3600_000;
    const measured = (dbPath: string): void => {
      const d = openDb(dbPath);
      try {
        const seq = Number(getMeta(d, 'derive_upto') ?? '0') + 1;
        startRecording(d, seq);
        d.transaction(() => {
          const copyNewest = (table: string, at: number): void =>
            void d.prepare(`INSERT OR REPLACE INTO ${table} SELECT t.host_id, ?, t.location, t.up + 1, t.degraded, t.down, t.sketches FROM ${table} t
                            WHERE t.bucket_start = (SELECT max(bucket_start) FROM ${table} u WHERE u.host_id = t.host_id AND u.bucket_start < ?)`).run(at, at);
          for (let at = hourStart(NOW) + 3600_000; at <= later; at += 3600_000) copyNewest(ROLLUP_TABLES.hourly, at);
          copyNewest(ROLLUP_TABLES.daily, dayStart(later));
          copyNewest(ROLLUP_TABLES.monthly, monthStart(later));
          // A host no longer known (its uptime lists are dropped), and a new one with the buckets of
          // another (new lists, new units).
          const [gone, model] = d.prepare('SELECT id FROM hosts WHERE role IS NOT NULL ORDER BY hostname DESC LIMIT 2').pluck().all() as number[];
          d.prepare('DELETE FROM hosts WHERE id = ?').run(gone);
          const id = 1 + (d.prepare('SELECT max(id) FROM hosts').pluck().get() as number) + (d.prepare('SELECT max(host_id) FROM uptime_hourly').pluck().get() as number);
          d.prepare("INSERT INTO hosts (id, hostname, role) SELECT ?, 'new-host.example', role FROM hosts WHERE id = ?").run(id, model);
          for (const table of Object.values(ROLLUP_TABLES)) d.prepare(`INSERT INTO ${table} SELECT ?, bucket_start, location, up, degraded, down, sketches FROM ${table} WHERE host_id = ?`).run(id, model);
          // The newest host events gone: the partitions that list them are written again (new units),
          // or dropped when nothing is left in them.
          for (const e of d.prepare('SELECT id FROM events WHERE hostname IS NOT NULL ORDER BY observed_at DESC, id DESC LIMIT 3').pluck().all() as string[]) {
            for (const t of ['event_hosts', 'event_seats', 'anomaly_events']) d.prepare(`DELETE FROM ${t} WHERE event_id = ?`).run(e);
            d.prepare('DELETE FROM events WHERE id = ?').run(e);
          }
        })();
        stopRecording(d);
        setMeta(d, 'derive_upto', String(seq));
      } finally {
        d.close();
      }
    };
    const a = copy('worker');
    const b = copy('single');
    measured(a.db);
    measured(b.db);

    const two = runBuild({ config: testConfig(), dbPath: a.db, outDir: a.out, nowMs: later });
    const one = runBuild({ config: testConfig(), dbPath: b.db, outDir: b.out, nowMs: later, worker: false });
    expect(two.render).toMatchObject({ mode: 'incremental', threads: 2, compare: 'state' });
    expect(one.render).toMatchObject({ mode: 'incremental', threads: 1, compare: 'state' });
    expect(two.render.uptime).toEqual(one.render.uptime);
    expect(two.render.uptime!.lists_patched).toBeGreaterThan(0);
    expect(two.render.uptime!.rows_read).toBeGreaterThan(0);
    expect(two.render.uptime!.lists_written).toBe(3);
    expect(two.render.events).toEqual(one.render.events);
    expect(two.render.events!.partitions_written).toBeGreaterThan(0);
    expect(two.routes['events.list']).toBeDefined();
    expect(Object.keys(two.routes)).toContain('hosts.uptime');
    expect({ written: two.written, removed: two.removed, files: two.files, shards: two.manifest.shards }).toEqual({ written: one.written, removed: one.removed, files: one.files, shards: one.manifest.shards });
    expect(two.removed).toBeGreaterThan(0);
    // The worker knows each list file's earlier hash (the main thread only a retired file's): an
    // unchanged one leaves its manifest shard as it was.
    expect(two.manifest.mode).toBe('patched');
    expect(two.manifest.shards_cut).toBeLessThanOrEqual(one.manifest.shards_cut);
    expectSameTree(a.out, b.out);
    // The worker's files, retirements and lists were taken into the state as the main thread records
    // its own (units may be allotted in another order).
    expect(stateRows(a.out)).toEqual(stateRows(b.out));
    // The next build of each is incremental again and writes the same.
    const next = later + 15 * 60_000;
    const two2 = runBuild({ config: testConfig(), dbPath: a.db, outDir: a.out, nowMs: next });
    const one2 = runBuild({ config: testConfig(), dbPath: b.db, outDir: b.out, nowMs: next, worker: false });
    expect(two2.render.mode).toBe('incremental');
    expect({ written: two2.written, removed: two2.removed, uptime: two2.render.uptime }).toEqual({ written: one2.written, removed: one2.removed, uptime: one2.render.uptime });
    expect(fs.readdirSync(path.dirname(a.out)).filter((f) => f.endsWith('.worker'))).toEqual([]);
  }, 300_000);
});

describe('a full derive in a process of its own', () => {
  /** A copy of the small demo's database whose next derive is full (the watermark at 0: a first build). */
  function underived(): string {
    const p = copyOfSmallDemoDb().path;
    const d = new Database(p);
    d.prepare("UPDATE meta SET value = '0' WHERE key = 'derive_upto'").run();
    d.close();
    return p;
  }
  /** Every derived table's rows, hashed (src/derive/index.ts keeps their names in meta.derive_tables). */
  function derivedTables(p: string): Record<string, string> {
    const d = new Database(p, { readonly: true });
    try {
      const tables = JSON.parse(d.prepare("SELECT value FROM meta WHERE key = 'derive_tables'").pluck().get() as string) as string[];
      return Object.fromEntries(tables.map((t) => [t, sha256(Buffer.from(JSON.stringify(d.prepare(`SELECT * FROM "${t}"`).raw().all())))]));
    } finally {
      d.close();
    }
  }

  it('a first build derives in a child process: the same derived tables and the same tree as a derive in the build\'s own', async () => {
    // The build with the derive apart (the default) is the first build of a copy of the ingested small
    // demo that other test files share (made once per run, test/helpers/demo-fixture.ts, its write-ahead
    // log measured as here); copied, with its state and database, for the next build below.
    const built = await builtSmallDemo();
    const apart = built.summary;
    const a = copyOfDb(built.db).path;
    const outA = copyOfSnapshot(built.out, 'apart-a-');
    const b = underived();
    const outB = ramTempDir('apart-b-');
    // The write-ahead log as the render begins: emptied after a full derive, either way (a full derive of
    // the small demo leaves about 30 MB in it).
    const walAtRender = (db: string): { sizes: number[]; progress: (m: string) => void } => {
      const sizes: number[] = [];
      return { sizes, progress: (m) => void (m.startsWith('render: ') && sizes.length === 0 && sizes.push(fs.statSync(`${db}-wal`, { throwIfNoEntry: false })?.size ?? 0)) };
    };
    const walB = walAtRender(b);
    const inProcess = runBuild({ config: testConfig(), dbPath: b, outDir: outB, nowMs: NOW, deriveApart: false, progress: walB.progress });
    // A frame or so written since (the render's own bookkeeping), not the derive's megabytes.
    expect(built.walAtRender).toHaveLength(1);
    expect(built.walAtRender[0]).toBeLessThan(1 << 16);
    expect(walB.sizes).toHaveLength(1);
    expect(walB.sizes[0]).toBeLessThan(1 << 16);
    expect(apart.derive.full).toBe(true);
    expect(apart.derive.apart).toBe(true);
    expect(inProcess.derive.full).toBe(true);
    expect(inProcess.derive.apart).toBeUndefined();
    expect(Object.keys(apart.derive.steps)).toEqual(Object.keys(inProcess.derive.steps));
    // The first prune ran in the process apart too, and deleted what the in-process build deleted.
    expect(apart.pruned_probe_rows).toBeGreaterThan(0);
    expect(apart.pruned_probe_rows).toBe(inProcess.pruned_probe_rows);
    expect(derivedTables(a)).toEqual(derivedTables(b));
    expectSameTree(outA, outB);
    // The next build's derive is incremental: in the build's own process.
    const next = runBuild({ config: testConfig(), dbPath: a, outDir: outA, nowMs: NOW });
    expect(next.derive.full).toBe(false);
    expect(next.derive.apart).toBeUndefined();
  }, 300_000);

  it('the script exits 3 and writes nothing when its derive code is not the build\'s (the build then derives itself); 2 on a usage error', () => {
    const p = underived();
    /** The database's tables and its meta rows (derive's schema, tables and watermark). */
    const state = (): unknown[] => {
      const d = new Database(p, { readonly: true });
      try {
        return [d.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(), d.prepare('SELECT * FROM meta ORDER BY key').raw().all()];
      } finally {
        d.close();
      }
    };
    const before = state();
    const r = spawnSync(process.execPath, ['dist/derive-apart.mjs', p, 'not-this-schema', String(NOW)], { encoding: 'utf8' });
    expect(r.status).toBe(APART_STALE_EXIT);
    expect(state()).toEqual(before);
    for (const args of [[], [p, 'not-this-schema'], [p, 'not-this-schema', 'tomorrow']]) {
      const usage = spawnSync(process.execPath, ['dist/derive-apart.mjs', ...args], { encoding: 'utf8' });
      expect(usage.status).toBe(2);
      expect(usage.stderr).toContain('usage: derive-apart.mjs');
    }
    expect(state()).toEqual(before);
  });
});

describe('build from a bundle without its templates', () => {
  it('stops before any work with an error naming templates/status, not after the render', async () => {
    // dist/ copied away from the package (as a deployment might): node_modules reachable, templates not.
    const root = ramTempDir('bundle-away-');
    fs.mkdirSync(path.join(root, 'dist'));
    fs.copyFileSync('dist/peppol-snapshot.mjs', path.join(root, 'dist', 'peppol-snapshot.mjs'));
    fs.symlinkSync(path.resolve('node_modules'), path.join(root, 'node_modules'));
    const db = copyOfSmallDemoDb().path;
    const out = path.join(root, 'out');
    const r = await runCli(['build', '--db', db, '--out', out, '--now', new Date(NOW).toISOString()], { cli: path.join(root, 'dist', 'peppol-snapshot.mjs') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('templates/status not found');
    // Nothing derived, nothing rendered: the database has no derived state, the directory no file.
    expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([]);
    const d = new Database(db, { readonly: true });
    try {
      expect(d.prepare("SELECT count(*) FROM meta WHERE key = 'derive_upto'").pluck().get()).toBe(0);
    } finally {
      d.close();
    }
  });
});
