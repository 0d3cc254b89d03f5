// The bulk downloads (docs/bulk.md) of the small demo, as an open-data user and an operator would check
// them: datapackage.json meets the Data Package and Table Schema v2 profiles, every listed file is there
// with its bytes and hash, every NDJSON line is a valid API object, DuckDB reads every Parquet file (typed
// columns, several row groups) with the API's totals, the SQLite dump opens and answers, no discovered
// participant's name or card appears anywhere; the copy is written once per UTC day, kept between, expires,
// and the day's copy an incremental build writes is the one a full build writes.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig, type Config } from '../src/config/index.js';
import { runBuild, type BuildSummary } from '../src/render/build.js';
import { verifySnapshot } from '../src/render/verify.js';
import { readStoredJson } from '../src/render/stored.js';
import { BULK_TABLES } from '../src/bulk/tables.js';
import { recordPackOf, recordPackPath, recordPath } from '../src/api/participants/record.js';
import { encodeSegment } from '../src/api/paths.js';
import { openDb } from '../src/db/index.js';
import { copyOfDb, copyOfSmallDemoDb, derivedSmallDemo } from './helpers/demo-fixture.js';
import { ramTempDir } from './helpers/feeds.js';
import { tree } from './helpers/tree.js';
import { dataPackageProblems } from './helpers/datapackage-profile.js';
import { stagingDir } from '../src/bulk/background.js';
import { acquireLock, LockedError } from '../src/util/lock.js';

const DAY1 = '2026-11-22';
const NOW1 = Date.parse(`${DAY1}T00:00:00Z`);
const DAY2 = '2026-11-23';
const NOW2 = Date.parse(`${DAY2}T00:15:00Z`);

interface Resource {
  name: string;
  path: string;
  type?: string;
  format: string;
  bytes: number;
  hash: string;
  schema?: { fields: Array<{ name: string; type: string; constraints?: { required?: boolean } }> };
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const readJson = (p: string): unknown => JSON.parse(fs.readFileSync(p, 'utf8'));
const mtimes = (dir: string): Map<string, number> => new Map(fs.readdirSync(dir).map((f) => [f, fs.statSync(path.join(dir, f)).mtimeMs]));

/** Every entry of a snapshot's manifest, by path. */
function manifest(out: string): Map<string, { sha256: string; bytes: number; content_type: string; cache_class: string }> {
  const m = readJson(path.join(out, 'manifest.json')) as { shards: Array<{ path: string }> };
  const entries = m.shards.flatMap((s) =>
    fs
      .readFileSync(path.join(out, s.path), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { path: string; sha256: string; bytes: number; content_type: string; cache_class: string }),
  );
  return new Map(entries.map((e) => [e.path, e]));
}

/** Count of a stored list (its root's `count`), 0 when the list has no root. */
function listCount(out: string, rel: string): number {
  const abs = path.join(out, rel);
  return fs.existsSync(abs) ? (readStoredJson(abs) as { count: number }).count : 0;
}

/** Sum of the counts of every list root under a directory of `i/`, whose file name passes `keep`. */
function listCounts(out: string, dir: string, keep: (file: string) => boolean = () => true): number {
  let n = 0;
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (keep(e.name)) n += (readStoredJson(p) as { count: number }).count;
    }
  };
  if (fs.existsSync(path.join(out, dir))) walk(path.join(out, dir));
  return n;
}

let dbPath: string;
let work: string;
let out: string;
let first: BuildSummary;
let duck: DuckDBConnection;
let config: Config;

beforeAll(async () => {
  // Derived (the small demo derived once per run, test/helpers/demo-fixture.ts, copied), then the hourly
  // buckets cut to the last 7 days (70,560 rows instead of 352,800): the test's time goes to the formats,
  // not to one large table. Small row groups give every large table several.
  dbPath = copyOfDb((await derivedSmallDemo()).db).path;
  const db = openDb(dbPath);
  try {
    db.prepare('DELETE FROM uptime_hourly WHERE bucket_start < ?').run(NOW1 - 7 * 86_400_000);
  } finally {
    db.close();
  }
  work = ramTempDir('bulk-');
  out = path.join(work, 'out');
  config = { ...defaultConfig(), bulk: { ...defaultConfig().bulk, row_group_rows: 10_000 } };
  first = runBuild({ config, dbPath, outDir: out, nowMs: NOW1 });
  duck = await (await DuckDBInstance.create(':memory:')).connect();
}, 600_000);

afterAll(() => duck?.closeSync());

describe('the bulk copy of a day', () => {
  const copy = (): string => path.join(out, 'bulk', DAY1);
  const pkg = (): { resources: Resource[]; licenses: unknown[] } => readJson(path.join(copy(), 'datapackage.json')) as { resources: Resource[]; licenses: unknown[] };

  it('is written by the first build of the day, in every format, and the snapshot verifies', () => {
    expect(first.bulk).toMatchObject({ mode: 'written', day: DAY1, redacted: 0 });
    const names = pkg().resources.map((r) => r.path);
    for (const t of BULK_TABLES) {
      expect(names).toContain(`${t.name}.ndjson.gz`);
      expect(names).toContain(`${t.name}.parquet`);
    }
    // The flat tables have CSV too; those with lists or free-form objects do not.
    for (const t of ['participants', 'hosts', 'uptime_hourly', 'uptime_daily', 'uptime_monthly', 'churn_daily', 'churn_participants']) expect(names).toContain(`${t}.csv.gz`);
    for (const t of ['events', 'incidents', 'participant_history', 'providers']) expect(names).not.toContain(`${t}.csv.gz`);
    expect(names).toContain('peppol.sqlite.gz');
    expect(verifySnapshot(out).problems).toEqual([]);
  });

  it('datapackage.json meets the Data Package and Table Schema v2 profiles, with the configured licence and sources', () => {
    const p = pkg();
    expect(dataPackageProblems(p)).toEqual([]);
    expect(p.licenses).toEqual(config.bulk.licenses);
    // The validator rejects what the profiles reject.
    expect(dataPackageProblems({ resources: [{ name: 'X', path: '../a', hash: 'nope', schema: { fields: [{ type: 'text' }] } }] })).toEqual([
      'resources[0].name: required, lower-case alphanumerics with . - _',
      'resources[0].path contains a ".." segment',
      'resources[0].hash: not algorithm:hex',
      'resources[0].schema.fields[0].name: required',
      'resources[0].schema.fields[0].type: text is not a Table Schema type',
    ]);
    expect(dataPackageProblems({ resources: [] })).toEqual(['resources: required, a non-empty array']);
  });

  it('lists every file with its bytes and sha256, in the manifest as stored, SHA256SUMS beside it; bulk/latest/ holds the same bytes', () => {
    const m = manifest(out);
    const files = fs.readdirSync(copy()).sort();
    const listed = [...pkg().resources.map((r) => r.path), 'datapackage.json', 'SHA256SUMS'].sort();
    expect(files).toEqual(listed);
    for (const r of pkg().resources) {
      const body = fs.readFileSync(path.join(copy(), r.path));
      expect({ path: r.path, bytes: body.length, hash: `sha256:${sha256(body)}` }).toEqual({ path: r.path, bytes: r.bytes, hash: r.hash });
      const e = m.get(`bulk/${DAY1}/${r.path}`)!;
      expect({ sha256: e.sha256, bytes: e.bytes, cache_class: e.cache_class }).toEqual({ sha256: sha256(body), bytes: body.length, cache_class: 'mutable' });
      expect(e.content_type).toBe(r.path.endsWith('.gz') ? 'application/gzip' : 'application/vnd.apache.parquet');
      expect(e).not.toHaveProperty('content_encoding');
      expect(fs.readFileSync(path.join(out, 'bulk', 'latest', r.path)).equals(body)).toBe(true);
    }
    const sums = fs.readFileSync(path.join(copy(), 'SHA256SUMS'), 'utf8').trim().split('\n');
    expect(sums).toHaveLength(files.length - 1);
    for (const line of sums) {
      const [hash, file] = line.split('  ');
      expect(sha256(fs.readFileSync(path.join(copy(), file!))), file).toBe(hash);
    }
    expect(fs.readFileSync(path.join(out, 'bulk/latest/datapackage.json')).equals(fs.readFileSync(path.join(copy(), 'datapackage.json')))).toBe(true);
  });

  it('every NDJSON line validates against its table schema, with the Table Schema fields as keys', () => {
    for (const t of BULK_TABLES) {
      const r = pkg().resources.find((x) => x.path === `${t.name}.ndjson.gz`)!;
      const lines = gunzipSync(fs.readFileSync(path.join(copy(), r.path))).toString('utf8').split('\n');
      expect(lines.pop(), t.name).toBe('');
      expect(lines.length, t.name).toBe(first.bulk.tables[t.name]!.rows);
      const fields = r.schema!.fields.map((f) => f.name);
      for (const line of lines) {
        const row = JSON.parse(line) as Record<string, unknown>;
        const v = t.schema.safeParse(row);
        expect(v.success, `${t.name}: ${line.slice(0, 200)} ${v.error?.issues[0]?.message ?? ''}`).toBe(true);
        expect(Object.keys(row).filter((k) => !fields.includes(k)), t.name).toEqual([]);
      }
    }
  });

  it("DuckDB reads every Parquet file: typed columns, several row groups where the table is large, the API's totals", async () => {
    const totals: Record<string, number> = {};
    const api = (rel: string): unknown => readStoredJson(path.join(out, rel));
    totals.participants = (api('v1/participants.json') as { meta: { total_count: number } }).meta.total_count;
    totals.participant_history = 0;
    for (const line of gunzipSync(fs.readFileSync(path.join(copy(), 'participants.ndjson.gz'))).toString('utf8').trim().split('\n')) {
      const id = (JSON.parse(line) as { id: string }).id;
      const rec = (api(recordPackPath(recordPackOf(id))) as { records: Record<string, { history: { items: unknown[]; next_cursor: string | null } | null }> }).records[id]!;
      totals.participant_history += rec.history === null ? 0 : rec.history.next_cursor === null ? rec.history.items.length : listCount(out, `i/participants.history/${path.basename(recordPath(id))}`);
    }
    totals.hosts = (api('v1/hosts.json') as { items: unknown[] }).items.length;
    for (const res of ['hourly', 'daily', 'monthly']) totals[`uptime_${res}`] = listCounts(out, 'i/hosts.uptime', (f) => f === `${res}.json`);
    totals.incidents = listCount(out, 'i/incidents.list/_all.json');
    totals.zone_incidents = (api('v1/sml.json') as { zones: Array<{ incidents: unknown[] }> }).zones.reduce((n, z) => n + z.incidents.length, 0);
    totals.events = listCount(out, 'i/events.list/all.json');
    totals.anomalies = listCount(out, 'i/anomalies.list/all.json');
    totals.providers = (api('v1/providers.json') as { items: unknown[] }).items.length;
    totals.seats = fs.readdirSync(path.join(out, 'v1/seats')).length;
    totals.access_points = (api('v1/aps.json') as { items: unknown[] }).items.length;
    totals.churn_daily = listCounts(out, 'i/aps.churn');
    totals.churn_participants = listCounts(out, `i/${encodeSegment('aps.churn_participants')}`);
    for (const t of BULK_TABLES) {
      expect(totals[t.name], t.name).toBeGreaterThan(0);
      const file = path.join(copy(), `${t.name}.parquet`);
      const rows = (await duck.runAndReadAll(`SELECT count(*) FROM read_parquet('${file}')`)).getRows();
      expect({ table: t.name, rows: Number(rows[0]![0]) }).toEqual({ table: t.name, rows: totals[t.name] });
    }
    const hourly = path.join(copy(), 'uptime_hourly.parquet');
    const groups = (await duck.runAndReadAll(`SELECT count(DISTINCT row_group_id), max(row_group_num_rows) FROM parquet_metadata('${hourly}')`)).getRows()[0]!;
    expect(Number(groups[0])).toBeGreaterThan(1);
    expect(Number(groups[1])).toBe(config.bulk.row_group_rows);
    const types = new Map((await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${hourly}')`)).getRows().map((r) => [String(r[0]), String(r[1])]));
    expect(Object.fromEntries(['bucket_start', 'checks_total', 'uptime_pct', 'phases_total_p95', 'hostname'].map((c) => [c, types.get(c)]))).toEqual({
      bucket_start: 'TIMESTAMP WITH TIME ZONE',
      checks_total: 'BIGINT',
      uptime_pct: 'DOUBLE',
      phases_total_p95: 'DOUBLE',
      hostname: 'VARCHAR',
    });
    // A row read back equals the NDJSON row it came from (flattened).
    const ndjson = JSON.parse(gunzipSync(fs.readFileSync(path.join(copy(), 'uptime_hourly.ndjson.gz'))).toString('utf8').split('\n')[0]!) as { hostname: string; bucket_start: string; location: string; up: number; phases: { total: { p95: number } } };
    const back = (await duck.runAndReadAll(`SELECT hostname, strftime(bucket_start AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.000Z'), location, up, phases_total_p95 FROM read_parquet('${hourly}') LIMIT 1`)).getRows()[0]!;
    expect([back[0], back[1], back[2], Number(back[3]), back[4]]).toEqual([ndjson.hostname, ndjson.bucket_start, ndjson.location, ndjson.up, ndjson.phases.total.p95]);
  });

  it('the SQLite dump opens and answers a query', () => {
    const file = path.join(work, 'dump.sqlite');
    fs.writeFileSync(file, gunzipSync(fs.readFileSync(path.join(copy(), 'peppol.sqlite.gz'))));
    const db = new Database(file, { readonly: true });
    try {
      for (const t of BULK_TABLES) expect(db.prepare(`SELECT count(*) FROM "${t.name}"`).pluck().get(), t.name).toBe(first.bulk.tables[t.name]!.rows);
      const busiest = db
        .prepare(`SELECT p.ap_seat_id, count(*) AS n FROM participants p JOIN seats s ON s.seat_id = p.ap_seat_id WHERE p.registered = 1 GROUP BY 1 ORDER BY n DESC, 1 LIMIT 1`)
        .get() as { ap_seat_id: string; n: number };
      expect(busiest.n).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  it("holds no discovered participant's name or card: none in any table, and one planted in the database is dropped", async () => {
    const discovered = db0((db) => db.prepare("SELECT p.pid FROM participants p JOIN participant_list l ON l.participant_id = p.id WHERE l.provenance = 'discovered'").pluck().all() as string[]);
    expect(discovered.length).toBeGreaterThan(0);
    const ids = new Set(discovered);
    for (const line of gunzipSync(fs.readFileSync(path.join(copy(), 'participants.ndjson.gz'))).toString('utf8').trim().split('\n')) {
      const p = JSON.parse(line) as { id: string; name: string | null; country: string | null };
      if (ids.has(p.id)) expect([p.name, p.country]).toEqual([null, null]);
    }
    for (const line of gunzipSync(fs.readFileSync(path.join(copy(), 'participant_history.ndjson.gz'))).toString('utf8').trim().split('\n')) {
      const h = JSON.parse(line) as { participant: string; fact: string };
      if (ids.has(h.participant)) expect(h.fact).not.toBe('card');
    }
    const leaks = await duck.runAndReadAll(
      `SELECT count(*) FROM read_parquet('${path.join(copy(), 'participants.parquet')}') WHERE provenance = 'discovered' AND (name IS NOT NULL OR country IS NOT NULL)`,
    );
    expect(Number(leaks.getRows()[0]![0])).toBe(0);
    // A name planted on a discovered participant (a derivation that broke the rule) reaches no row.
    const planted = copyOfSmallDemoDb();
    fs.copyFileSync(dbPath, planted.path);
    const db = planted.open();
    try {
      const victim = db.prepare("SELECT participant_id, pid FROM participant_list WHERE provenance = 'discovered' ORDER BY pid LIMIT 1").get() as { participant_id: number; pid: string };
      const secret = 'Zzplanted Secret Holding Oy';
      db.prepare('UPDATE participant_list SET name = ?, country = ? WHERE participant_id = ?').run(secret, 'FI', victim.participant_id);
      db.prepare("INSERT INTO participant_history (participant_id, valid_from, fact, valid_to, flag, name, country, registration_date, hostname) VALUES (?, 0, 'card', NULL, NULL, ?, 'FI', NULL, NULL)").run(victim.participant_id, secret);
      let redacted = 0;
      let text = '';
      for (const t of BULK_TABLES.filter((x) => x.name === 'participants' || x.name === 'participant_history')) {
        for (const row of t.rows({ db, nowMs: NOW1, redact: () => redacted++ })) text += JSON.stringify(row);
      }
      expect(redacted).toBe(2);
      expect(text).toContain(victim.pid);
      expect(text).not.toContain(secret);
    } finally {
      db.close();
    }
  });
});

/** Files of the staging directory of the background writer (src/bulk/background.ts). */
const staged = (o: string, file: string): string => path.join(stagingDir(o), file);

/** Waits until `ok()` holds, polling; fails after `ms`. */
async function until(what: string, ok: () => boolean, ms = 300_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether the writer's lock is free (no writer process runs: the lock dies with its process). */
function writerGone(o: string): boolean {
  try {
    acquireLock(stagingDir(o), 'test').release();
    return true;
  } catch (e) {
    if (e instanceof LockedError) return false;
    throw e;
  }
}

/** Whether a process has ended (gone, or a zombie its parent, this test process, has not reaped yet). */
function ended(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/** Paths of the files that differ between two trees (present in one only, or other bytes). */
function treeDiff(a: Map<string, Buffer>, b: Map<string, Buffer>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])].filter((p) => !(a.get(p)?.equals(b.get(p) ?? Buffer.alloc(0)) ?? false)).sort();
}

/** Copies a SQLite database in WAL mode that no process writes (the file and its WAL). */
function copyDb(from: string, to: string): void {
  for (const ext of ['', '-wal', '-shm']) fs.rmSync(`${to}${ext}`, { force: true });
  fs.copyFileSync(from, to);
  if (fs.existsSync(`${from}-wal`)) fs.copyFileSync(`${from}-wal`, `${to}-wal`);
}

describe('the background writer (an incremental build due to write the copy)', () => {
  // A directory of its own, from the first build's tree and state, over a database of its own (the
  // tests write to it): its builds are incremental, the day's copy of DAY1 in place.
  let bgDb: string;
  let bgOut: string;
  /** Writers started here, killed at the end whatever happened. */
  const pids = new Set<number>();
  const build = (nowMs: number, extra: Partial<Parameters<typeof runBuild>[0]> = {}): BuildSummary => {
    const s = runBuild({ config, dbPath: bgDb, outDir: bgOut, nowMs, bulkWriter: true, ...extra });
    if (s.bulk.writer?.pid != null) pids.add(s.bulk.writer.pid);
    return s;
  };
  const bulkManifest = (o: string): Array<[string, unknown]> => [...manifest(o)].filter(([p]) => p.startsWith('bulk/')).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const bulkTree = (o: string): Map<string, Buffer> => new Map([...tree(o)].filter(([p]) => p.startsWith('bulk/')));

  beforeAll(() => {
    const dir = path.join(work, 'bg');
    fs.mkdirSync(dir);
    bgDb = path.join(dir, 'db.sqlite');
    copyDb(dbPath, bgDb);
    bgOut = path.join(dir, 'out');
    fs.cpSync(out, bgOut, { recursive: true });
    fs.copyFileSync(`${out}.state.sqlite`, `${bgOut}.state.sqlite`);
  });

  afterAll(() => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended
      }
    }
  });

  let started: BuildSummary;
  let writerPid: number;
  const ref = (): string => path.join(work, 'bg', 'ref.sqlite');

  it('starts the writer and returns without the copy: the earlier copy stays published, the snapshot verifies', () => {
    const before = { manifest: bulkManifest(bgOut), latest: mtimes(path.join(bgOut, 'bulk', 'latest')) };
    started = build(NOW2);
    expect(started.render.mode).toBe('incremental');
    expect(started.bulk).toMatchObject({ mode: 'started', day: DAY2, reason: 'no copy of the day yet', files: 0, written: 0 });
    writerPid = started.bulk.writer!.pid!;
    expect(writerPid).toBeGreaterThan(0);
    // Paused (a real process, stopped by a signal): what follows does not race it.
    process.kill(writerPid, 'SIGSTOP');
    // The build waited for the writer's snapshot, not for its copy.
    expect(fs.existsSync(staged(bgOut, 'ready.json'))).toBe(true);
    expect(fs.existsSync(staged(bgOut, 'done.json'))).toBe(false);
    expect(writerGone(bgOut)).toBe(false);
    // Nothing of the new copy in the snapshot; the earlier one as it was (files, mtimes, manifest entries).
    expect(fs.existsSync(path.join(bgOut, 'bulk', DAY2))).toBe(false);
    expect(bulkManifest(bgOut)).toEqual(before.manifest);
    expect(mtimes(path.join(bgOut, 'bulk', 'latest'))).toEqual(before.latest);
    expect(verifySnapshot(bgOut).problems).toEqual([]);
  }, 300_000);

  it('a build while the writer runs starts no second writer and keeps the earlier copy', () => {
    const job = fs.readFileSync(staged(bgOut, 'job.json'));
    const before = bulkManifest(bgOut);
    const again = build(NOW2);
    expect(again.bulk).toMatchObject({ mode: 'pending', day: DAY2, written: 0 });
    expect(again.bulk.writer).toMatchObject({ pid: writerPid, now: new Date(NOW2).toISOString() });
    expect(fs.readFileSync(staged(bgOut, 'job.json')).equals(job)).toBe(true);
    expect(bulkManifest(bgOut)).toEqual(before);
    expect(fs.existsSync(path.join(bgOut, 'bulk', DAY2))).toBe(false);
  }, 300_000);

  it("writes the copy from the starting build's database state (a read snapshot), whatever is written to the database after", async () => {
    // The state the build rendered from, kept aside; then the database changes under the paused writer.
    copyDb(bgDb, ref());
    const db = openDb(bgDb);
    try {
      expect(db.prepare("UPDATE participant_list SET name = 'Zz changed after the snapshot' WHERE provenance <> 'discovered'").run().changes).toBeGreaterThan(0);
      expect(db.prepare('DELETE FROM events').run().changes).toBeGreaterThan(0);
      expect(db.prepare('DELETE FROM uptime_hourly').run().changes).toBeGreaterThan(0);
    } finally {
      db.close();
    }
    process.kill(writerPid, 'SIGCONT');
    await until('done.json', () => fs.existsSync(staged(bgOut, 'done.json')) || fs.existsSync(staged(bgOut, 'failed.json')));
    expect(fs.existsSync(staged(bgOut, 'failed.json'))).toBe(false);
    await until('the writer ends', () => writerGone(bgOut), 60_000);
    // Back to the state the copy is of, so that the whole tree compares with one full build below.
    copyDb(ref(), bgDb);
  }, 600_000);

  // (Byte for byte the full build, which verifies: test 'is written by the first build of the day'. A
  // verify of the demo reads every file, some 10 s: the tests below verify where no full build is compared.)
  it('the next build adopts the finished copy: the tree, bulk files and manifest included, is the full build of that state and clock, byte for byte', () => {
    // keep_days 1: DAY1's copy expires in the same build (a full build into a fresh directory has none).
    const keepOne: Config = { ...config, bulk: { ...config.bulk, keep_days: 1 } };
    const adopted = runBuild({ config: keepOne, dbPath: bgDb, outDir: bgOut, nowMs: NOW2, bulkWriter: true });
    expect(adopted.render.mode).toBe('incremental');
    expect(adopted.bulk).toMatchObject({ mode: 'adopted', day: DAY2, expired: [DAY1], redacted: 0 });
    expect(adopted.bulk.writer).toMatchObject({ pid: writerPid, now: new Date(NOW2).toISOString(), upto: started.bulk.writer!.upto });
    expect(adopted.bulk.writer!.seconds).toBeGreaterThan(0);
    expect(adopted.bulk.writer!.peak_rss_mb).toBeGreaterThan(0);
    expect(adopted.bulk.files).toBe(fs.readdirSync(path.join(bgOut, 'bulk', DAY2)).length);
    expect(Object.keys(adopted.bulk.tables)).toEqual(BULK_TABLES.map((t) => t.name));
    // The staging directory is gone once the copy is in the snapshot.
    expect(fs.existsSync(stagingDir(bgOut))).toBe(false);

    const fresh = path.join(work, 'bg', 'fresh');
    const full = runBuild({ config: keepOne, dbPath: ref(), outDir: fresh, nowMs: NOW2, bulkWriter: true });
    expect(full.bulk).toMatchObject({ mode: 'written', day: DAY2 });
    expect(treeDiff(bulkTree(bgOut), bulkTree(fresh))).toEqual([]);
    expect(bulkManifest(bgOut)).toEqual(bulkManifest(fresh));
    expect(treeDiff(tree(bgOut), tree(fresh))).toEqual([]);
    // A later build the same day keeps it.
    const later = build(NOW2 + 3_600_000);
    expect(later.bulk).toMatchObject({ mode: 'kept', day: DAY2, written: 0 });
  }, 600_000);

  it('a writer killed half way is never adopted; the next build starts a new one, whose copy is adopted', async () => {
    const day3 = '2026-11-24';
    const now3 = Date.parse(`${day3}T00:15:00Z`);
    const first = build(now3);
    expect(first.bulk).toMatchObject({ mode: 'started', day: day3 });
    const pid = first.bulk.writer!.pid!;
    // Half way: once its first file is complete, long before its last.
    await until('a first staged file', () => fs.existsSync(staged(bgOut, day3)) && fs.readdirSync(staged(bgOut, day3)).some((f) => !f.includes('.tmp-')));
    process.kill(pid, 'SIGSTOP');
    expect(fs.existsSync(staged(bgOut, 'done.json'))).toBe(false);
    process.kill(pid, 'SIGKILL');
    await until('the killed writer releases its lock', () => writerGone(bgOut), 60_000);

    const next = build(now3 + 15 * 60_000);
    expect(next.bulk.mode).toBe('started');
    expect(next.bulk.reason).toMatch(/^no copy of the day yet; the writer started .* ended without finishing, started again$/);
    expect(next.bulk.writer!.pid).not.toBe(pid);
    // Nothing of the killed writer's files reached the snapshot.
    expect(fs.existsSync(path.join(bgOut, 'bulk', day3))).toBe(false);
    expect([...manifest(bgOut).keys()].filter((p) => p.startsWith(`bulk/${day3}/`))).toEqual([]);

    await until('done.json', () => fs.existsSync(staged(bgOut, 'done.json')));
    const adopted = build(now3 + 30 * 60_000);
    expect(adopted.bulk).toMatchObject({ mode: 'adopted', day: day3 });
    expect(adopted.bulk.writer!.pid).toBe(next.bulk.writer!.pid);
    expect(adopted.bulk.writer!.now).toBe(new Date(now3 + 15 * 60_000).toISOString());
    expect(fs.readdirSync(path.join(bgOut, 'bulk')).sort()).toEqual([DAY2, day3, 'latest']);
    expect(fs.readFileSync(path.join(bgOut, 'bulk', 'latest', 'datapackage.json')).equals(fs.readFileSync(path.join(bgOut, 'bulk', day3, 'datapackage.json')))).toBe(true);
    expect(verifySnapshot(bgOut).problems).toEqual([]);
  }, 600_000);

  it('build --full writes the copy within the build and drops a running writer; a new UTC day drops the unfinished writer of the day before; bulk.enabled false stops one and removes every copy', () => {
    const day4 = '2026-11-25';
    const now4 = Date.parse(`${day4}T00:15:00Z`);
    const first = build(now4);
    expect(first.bulk).toMatchObject({ mode: 'started', day: day4 });
    process.kill(first.bulk.writer!.pid!, 'SIGSTOP');
    const full = build(now4, { full: true });
    expect(full.bulk).toMatchObject({ mode: 'written', day: day4 });
    expect(fs.existsSync(stagingDir(bgOut))).toBe(false);
    expect(writerGone(bgOut)).toBe(true);

    const day5 = '2026-11-26';
    const now5 = Date.parse(`${day5}T00:15:00Z`);
    const second = build(now5);
    expect(second.bulk).toMatchObject({ mode: 'started', day: day5 });
    const pid5 = second.bulk.writer!.pid!;
    process.kill(pid5, 'SIGSTOP');
    // The next day comes before that writer finished: it is stopped, that day's copy abandoned, the new day's started.
    const day6 = '2026-11-27';
    const now6 = Date.parse(`${day6}T00:15:00Z`);
    const third = build(now6);
    expect(third.bulk).toMatchObject({ mode: 'started', day: day6, reason: 'no copy of the day yet' });
    expect(third.bulk.writer!.pid).not.toBe(pid5);
    expect(ended(pid5)).toBe(true);
    expect(JSON.parse(fs.readFileSync(staged(bgOut, 'job.json'), 'utf8'))).toMatchObject({ day: day6 });
    expect(fs.readdirSync(path.join(bgOut, 'bulk')).sort()).toEqual([DAY2, '2026-11-24', day4, 'latest']);

    const off: Config = { ...config, bulk: { ...config.bulk, enabled: false } };
    const disabled = build(now6, { config: off });
    expect(disabled.bulk.mode).toBe('disabled');
    expect(fs.existsSync(stagingDir(bgOut))).toBe(false);
    expect(writerGone(bgOut)).toBe(true);
    expect(fs.existsSync(path.join(bgOut, 'bulk'))).toBe(false);
    expect([...manifest(bgOut).keys()].filter((p) => p.startsWith('bulk/'))).toEqual([]);
    expect(verifySnapshot(bgOut).problems).toEqual([]);
  }, 600_000);
});

/** Runs f over a read-only connection to the built database. */
function db0<T>(f: (db: ReturnType<typeof openDb>) => T): T {
  const db = openDb(dbPath);
  try {
    return f(db);
  } finally {
    db.close();
  }
}

describe('cadence', () => {
  it('builds later the same day keep the copy; the next day writes a new one; an expired copy goes; the day written equals a full build', () => {
    const latest = path.join(out, 'bulk', 'latest');
    const before = { dated: mtimes(path.join(out, 'bulk', DAY1)), latest: mtimes(latest) };
    const m1 = manifest(out);
    const same = runBuild({ config, dbPath, outDir: out, nowMs: NOW1 + 6 * 3_600_000 });
    expect(same.render.mode).toBe('incremental');
    expect(same.bulk).toMatchObject({ mode: 'kept', day: DAY1, written: 0 });
    expect({ dated: mtimes(path.join(out, 'bulk', DAY1)), latest: mtimes(latest) }).toEqual(before);
    const m2 = manifest(out);
    for (const [p, e] of m1) if (p.startsWith('bulk/')) expect(m2.get(p), p).toEqual(e);

    // The next UTC day: a new dated copy; the earlier one stays (keep_days 7); latest files whose bytes
    // did not change keep their mtime (publish skips them).
    const next = runBuild({ config, dbPath, outDir: out, nowMs: NOW2 });
    expect(next.render.mode).toBe('incremental');
    expect(next.bulk).toMatchObject({ mode: 'written', day: DAY2, expired: [] });
    expect(fs.readdirSync(path.join(out, 'bulk')).sort()).toEqual([DAY1, DAY2, 'latest']);
    const after = mtimes(latest);
    const unchanged = [...after].filter(([f, t]) => before.latest.get(f) === t).map(([f]) => f);
    expect(unchanged).toContain('participants.parquet');
    expect(next.bulk.written).toBeLessThan(2 * next.bulk.files);

    // keep_days 1: the earlier copy expires at the next build (a setting that changes no byte of a copy
    // does not write it again).
    const keepOne: Config = { ...config, bulk: { ...config.bulk, keep_days: 1 } };
    const later = runBuild({ config: keepOne, dbPath, outDir: out, nowMs: NOW2 });
    expect(later.bulk).toMatchObject({ mode: 'kept', expired: [DAY1] });
    expect(fs.readdirSync(path.join(out, 'bulk')).sort()).toEqual([DAY2, 'latest']);
    expect([...manifest(out).keys()].filter((p) => p.startsWith(`bulk/${DAY1}/`))).toEqual([]);

    // A full build of the same database at the same --now into a fresh directory gives the same tree,
    // byte for byte, bulk and manifest included: the day's copy is a function of the database state and
    // the clock of the build that wrote it.
    const fresh = path.join(work, 'fresh');
    const full = runBuild({ config: keepOne, dbPath, outDir: fresh, nowMs: NOW2 });
    expect(full.bulk).toMatchObject({ mode: 'written', day: DAY2 });
    const a = tree(out);
    const b = tree(fresh);
    const differ = [...new Set([...a.keys(), ...b.keys()])].filter((p) => !(a.get(p)?.equals(b.get(p) ?? Buffer.alloc(0)) ?? false));
    expect(differ).toEqual([]);
  }, 600_000);

  it('bulk.enabled false removes every copy, and the discovery documents no longer link it', () => {
    const off: Config = { ...config, bulk: { ...config.bulk, enabled: false } };
    const s = runBuild({ config: off, dbPath, outDir: out, nowMs: NOW2 + 30 * 60_000 });
    expect(s.bulk.mode).toBe('disabled');
    expect(fs.existsSync(path.join(out, 'bulk'))).toBe(false);
    expect([...manifest(out).keys()].filter((p) => p.startsWith('bulk/'))).toEqual([]);
    expect(fs.readFileSync(path.join(out, '.well-known/api-catalog'), 'utf8')).not.toContain('datapackage.json');
    expect(readJson(path.join(out, 'openapi.json'))).not.toHaveProperty('externalDocs');
    expect(verifySnapshot(out).problems).toEqual([]);
  }, 300_000);
});
