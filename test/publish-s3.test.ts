// publish end to end over the S3 protocol: a real S3-compatible server (s3rver) on 127.0.0.1, the CLI
// as the operator runs it, the small demo snapshot and its 15-minute cycles. A proxy in front of the
// server injects failures and records every write the server carried out, so a checker can say that
// at no moment did the bucket's manifest or an index name an object that was not there.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { listRootPath, storedEncoding } from '../src/api/paths.js';
import { openDb } from '../src/db/index.js';
import { COPY_FROM_BYTES, type PublishSummary } from '../src/publish/index.js';
import { writeManifest } from '../src/render/manifest.js';
import { DirectorySink, FILES_DDL, type CacheClass } from '../src/render/sink.js';
import { runCli, startCli } from './helpers/cli.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { ramTempBase, tempDir } from './helpers/feeds.js';
import { ReferenceChecker } from './helpers/publish-checker.js';
import { NO_FAULTS, S3RVER_CREDENTIALS, startFaultProxy, startS3rver, type FaultProxy, type S3Server } from './helpers/s3.js';
import { copyFeedDir, snapshotTempDir } from './helpers/snapshot.js';

const BUCKET = 'snap';
const MINUTE = 60_000;
const env = { ...S3RVER_CREDENTIALS };

let s3: S3Server;
let proxy: FaultProxy;
let client: S3Client;
let work: string;
/** The database (on the RAM disk when there is one, as the snapshot directory). */
let database: string;
let feeds: string;
let out: string;
/** A smaller snapshot made of some of `out`'s files (partOfSnapshot). */
let part: string;
let t0: number;
const checkers = new Map<string, ReferenceChecker>();
let replayed = 0;

/** A config file publishing `dir` (default `out`) to `prefix` of the bucket through the proxy. */
function configFile(prefix: string, dir: string = out): string {
  const file = path.join(work, `config-${prefix.replace(/\W/g, '')}.json`);
  const config = {
    sources: [{ name: 'demo', url: feeds }],
    database,
    out: dir,
    ingest: { workers: 1 },
    publish: {
      target: { type: 's3', bucket: BUCKET, prefix, endpoint: proxy.endpoint, force_path_style: true, checksums: 'when_required' },
      concurrency: 8,
      retries: 8,
      retry_base_ms: 20,
      timeout_ms: 1500,
      retention_hours: 0,
    },
  };
  fs.writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

async function publish(prefix: string): Promise<PublishSummary> {
  const r = await runCli(['publish', '--config', configFile(prefix), '--json'], { env });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as PublishSummary;
}

/** The snapshot's objects written since op `from` were all written before manifest.json started. */
function expectManifestLast(from: number, prefix: string): void {
  const puts = proxy.ops.slice(from).filter((o) => o.kind === 'put' && o.key.startsWith(prefix) && !o.key.startsWith(`${prefix}.publish/`));
  const manifest = puts.filter((o) => o.key === `${prefix}manifest.json`);
  expect(manifest).toHaveLength(1);
  expect(puts.length).toBeGreaterThan(1);
  expect(Math.max(...puts.filter((o) => o !== manifest[0]).map((o) => o.end))).toBeLessThanOrEqual(manifest[0]!.start);
}

/** Replays what the server wrote since the last call into each prefix's checker; no violation allowed. */
function check(): void {
  const ops = proxy.ops.slice(replayed);
  replayed = proxy.ops.length;
  for (const [prefix, c] of checkers) {
    c.replay(ops.filter((o) => o.key.startsWith(prefix)));
    expect(c.violations, prefix).toEqual([]);
  }
}

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

interface Entry {
  path: string;
  sha256: string;
  bytes: number;
  content_type: string;
  cache_class: CacheClass;
}

/** The manifest of a snapshot directory (default `out`): its shards' paths and every entry they list. */
function readManifest(dir: string = out): { shards: string[]; entries: Entry[] } {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { shards: { path: string }[] };
  const shards = m.shards.map((s) => s.path);
  const entries = shards.flatMap((s) =>
    fs
      .readFileSync(path.join(dir, s), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Entry),
  );
  return { shards, entries };
}

/** Every object a complete publish of a snapshot directory leaves: manifest entries, shards, manifest.json, by md5. */
function snapshotObjects(dir: string = out): Map<string, string> {
  const { shards, entries } = readManifest(dir);
  const objects = new Map<string, string>();
  for (const p of ['manifest.json', ...shards, ...entries.map((e) => e.path)]) objects.set(p, md5(fs.readFileSync(path.join(dir, p))));
  return objects;
}

/**
 * A snapshot of some of `out`'s files, with its own manifest (written as a build writes it): those
 * stored as they are outside the lists (the bulk copy, the answers under v1/, the discovery
 * documents). The killed first publish and the store without CopyObject are tested on it: it has the
 * bulk copy's large twins, and a thirtieth of the demo's objects.
 */
function partOfSnapshot(): string {
  const dir = snapshotTempDir('publish-s3-part-');
  const db = new Database(':memory:');
  db.exec(FILES_DDL);
  db.exec('BEGIN');
  const sink = new DirectorySink(dir, { db });
  for (const e of readManifest().entries) {
    if (e.path.startsWith('i/') || e.path.startsWith('c/') || e.path.startsWith('f/') || storedEncoding(e.path) !== null) continue;
    sink.put(e.path, fs.readFileSync(path.join(out, e.path)), e.content_type, e.cache_class);
  }
  writeManifest(sink, JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')).generated_at as string);
  db.close();
  return dir;
}

/**
 * Files of at least COPY_FROM_BYTES whose bytes an earlier file (in path order) of the snapshot has, by
 * that file: a bulk copy's `latest/` twins of its dated files.
 */
function largeTwins(dir: string = out): Map<string, string> {
  const large = readManifest(dir).entries.filter((e) => e.bytes >= COPY_FROM_BYTES);
  large.sort((a, b) => (a.path < b.path ? -1 : 1));
  const first = new Map<string, string>();
  const twins = new Map<string, string>();
  for (const e of large) {
    const f = first.get(e.sha256);
    if (f === undefined) first.set(e.sha256, e.path);
    else twins.set(e.path, f);
  }
  return twins;
}

/** The snapshot's entries (path -> sha256) and shards: what a publish compares. */
function manifestState(): { entries: Map<string, string>; shards: Set<string> } {
  const { shards, entries } = readManifest();
  return { entries: new Map(entries.map((e) => [e.path, e.sha256])), shards: new Set(shards) };
}

/** The bucket holds exactly the snapshot in `dir` (same bytes), plus publish's own state. */
async function expectBucketIsSnapshot(prefix: string, dir: string = out): Promise<void> {
  const want = snapshotObjects(dir);
  const have = s3.objects(BUCKET, prefix);
  // The S3 API agrees on a sample (ETag = md5 of a single-part upload).
  for (const key of ['manifest.json', 'snapshot.json', 'v1/network.json']) {
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: prefix + key }));
    expect(head.ETag?.replace(/"/g, ''), key).toBe(want.get(key));
    expect(head.ContentEncoding, key).toBeUndefined();
  }
  // A file stored gzip-encoded (docs/snapshot-format.md "Stored encoding") says so.
  const root = listRootPath('participants.list', ['name.asc']);
  if (dir === out) {
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: prefix + root }));
    expect(head.ETag?.replace(/"/g, ''), root).toBe(want.get(root));
    expect(head.ContentEncoding, root).toBe('gzip');
  }
  const extra = [...have.keys()].filter((k) => !want.has(k) && k !== '.publish/state.json');
  const missing = [...want.keys()].filter((k) => !have.has(k));
  const differ = [...want].filter(([k, v]) => have.has(k) && have.get(k) !== v).map(([k]) => k);
  expect({ missing: missing.slice(0, 5), differ: differ.slice(0, 5), extra: extra.slice(0, 5) }).toEqual({ missing: [], differ: [], extra: [] });
}

/** One demo cycle: the feeds of the next `minutes`, ingested and built (CLI). */
async function cycle(minutes: number): Promise<void> {
  const now = new Date(t0 + minutes * MINUTE).toISOString();
  const cfg = configFile('demo/');
  for (const args of [
    ['demo', '--feeds', feeds, '--scale', 'small', '--seed', '1', '--now', now],
    ['ingest', '--config', cfg],
    ['build', '--config', cfg, '--now', now],
  ]) {
    const r = await runCli(args, { env });
    expect(r.code, `${args[0]}: ${r.stderr}`).toBe(0);
  }
}

beforeAll(async () => {
  t0 = Date.parse(smallDemo().now);
  work = tempDir('publish-s3-');
  feeds = path.join(work, 'feeds');
  copyFeedDir(smallDemo().feeds, feeds);
  database = copyOfSmallDemoDb().path;
  // The fixture's database names the directory it was generated in: point it at the copy.
  const db = openDb(database);
  db.prepare('UPDATE sources SET url = ?').run(feeds);
  db.close();
  out = snapshotTempDir('publish-s3-out-');
  // s3rver keeps each object in files of its own: on the RAM disk when there is one with room to spare,
  // as test/edge-lambda.test.ts does (the demo's 29,000 objects are written to it several times here).
  s3 = await startS3rver([BUCKET], ramTempBase());
  proxy = await startFaultProxy(s3.endpoint, BUCKET, 7);
  client = new S3Client({
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: S3RVER_CREDENTIALS.AWS_SECRET_ACCESS_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const r = await runCli(['build', '--config', configFile('demo/'), '--now', smallDemo().now], { env });
  expect(r.code, r.stderr).toBe(0);
  part = partOfSnapshot();
  checkers.set('demo/', new ReferenceChecker('demo/'));
  checkers.set('fresh/', new ReferenceChecker('fresh/'));
}, 240_000);

afterAll(async () => {
  client?.destroy();
  await proxy?.close();
  await s3?.close();
});

describe('publish to an S3-compatible server', () => {
  it('the first publish uploads every object, manifest.json last', async () => {
    const objects = snapshotObjects();
    const from = proxy.ops.length;
    const s = await publish('demo/');
    expect(s.previous_generated_at).toBeNull();
    expect(s.uploaded.objects).toBe(objects.size);
    expect(s.uploaded.meta.objects).toBe(2); // snapshot.json and manifest.json
    // The bulk copy's large latest/ files are copied inside the store from their dated twins, after them.
    const twins = largeTwins();
    expect([...twins.keys()].some((p) => p.startsWith('bulk/latest/'))).toBe(true);
    const ops = proxy.ops.slice(from).filter((o) => o.kind === 'put' && o.key.startsWith('demo/'));
    const copies = new Map(ops.filter((o) => o.copyOf !== undefined).map((o) => [o.key.slice('demo/'.length), o]));
    expect(new Map([...copies].map(([k, o]) => [k, o.copyOf!.slice('demo/'.length)]))).toEqual(twins);
    for (const [key, source] of twins) {
      const put = ops.find((o) => o.key === `demo/${source}` && o.copyOf === undefined);
      expect(put!.end, key).toBeLessThanOrEqual(copies.get(key)!.start);
    }
    expect(s.copied.objects).toBe(twins.size);
    const large = [...twins.keys()][0]!;
    const [copied, original] = await Promise.all([large, twins.get(large)!].map((k) => client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `demo/${k}` }))));
    expect({ type: copied!.ContentType, cache: copied!.CacheControl, length: copied!.ContentLength }).toEqual({ type: original!.ContentType, cache: original!.CacheControl, length: original!.ContentLength });
    expectManifestLast(from, 'demo/');
    check();
    await expectBucketIsSnapshot('demo/');
  }, 180_000);

  it('a second publish with no change uploads nothing and reads two objects', async () => {
    const s = await publish('demo/');
    expect(s.uploaded.objects).toBe(0);
    expect(s.requests).toBe(2); // manifest.json and .publish/state.json
    check();
  });

  it('after one 15-minute demo cycle only the changed objects are uploaded, and the retired ones deleted', async () => {
    const before = manifestState();
    await cycle(15);
    const after = manifestState();
    const changed = [...after.entries].filter(([p, sha]) => before.entries.get(p) !== sha).length;
    const newShards = [...after.shards].filter((s) => !before.shards.has(s)).length;
    const retired = [...before.entries.keys()].filter((p) => !after.entries.has(p)).length + [...before.shards].filter((s) => !after.shards.has(s)).length;
    expect(changed).toBeGreaterThan(0);
    const from = proxy.ops.length;
    const s = await publish('demo/');
    expect(s.uploaded.objects).toBe(changed + newShards + 1);
    expectManifestLast(from, 'demo/');
    expect(s.retired).toBe(retired);
    expect(s.deleted.objects).toBe(retired); // retention 0
    check();
    await expectBucketIsSnapshot('demo/');
  }, 240_000);

  it('completes while the server fails a share of requests (500/503, lost answers, answers past the timeout)', async () => {
    await cycle(30);
    proxy.faults = { fail: 0.12, lostAck: 0.05, slow: 0.005, slowMs: 2_000 };
    const injected = proxy.injected;
    try {
      const s = await publish('demo/');
      expect(s.uploaded.objects).toBeGreaterThan(0);
      expect(s.retries).toBeGreaterThan(0);
      expect(proxy.injected).toBeGreaterThan(injected);
    } finally {
      proxy.faults = { ...NO_FAULTS };
    }
    check();
    await expectBucketIsSnapshot('demo/');
  }, 240_000);

  it('a publish killed at random points and run again leaves the bucket complete; without CopyObject (501) the large twins are uploaded as bytes', async () => {
    /** Starts a publish and kills it once `ready` says so (or it ended by itself). */
    const kill = async (prefix: string, dir: string, ready: () => boolean) => {
      const run = startCli(['publish', '--config', configFile(prefix, dir), '--json'], { env });
      let ended = false;
      void run.done.then(() => (ended = true));
      while (!ended && !ready()) await new Promise((ok) => setTimeout(ok, 5));
      run.child.kill('SIGKILL');
      return run.done;
    };
    // A first publish into an empty prefix, killed after a random number of the server's writes, then
    // finished (it resumes where it stopped), on a store without CopyObject (501): the large twins'
    // bytes are uploaded instead, and a copy is asked at most once in a run (501 is not retried, nor
    // asked again once answered). Of a smaller snapshot (partOfSnapshot): the demo's bulk copy and answers.
    const objects = snapshotObjects(part).size;
    const twins = largeTwins(part);
    expect(twins.size).toBeGreaterThan(0);
    proxy.refuseCopy = true;
    let refusedInResume = 0;
    try {
      const from = proxy.ops.length;
      // Within the first nine tenths of its writes: manifest.json, written last, is not there yet.
      const writes = 1 + Math.floor(Math.random() * objects * 0.9);
      await kill('fresh/', part, () => proxy.ops.length - from >= writes);
      expect(s3.objects(BUCKET, 'fresh/').has('manifest.json'), `killed after ${writes} writes`).toBe(false);
      const killedRefused = proxy.copiesRefused;
      const fresh = await runCli(['publish', '--config', configFile('fresh/', part), '--json'], { env });
      expect(fresh.code, fresh.stderr).toBe(0);
      expect((JSON.parse(fresh.stdout) as PublishSummary).copied.objects).toBe(0);
      refusedInResume = proxy.copiesRefused - killedRefused;
    } finally {
      proxy.refuseCopy = false;
    }
    expect(proxy.copiesRefused).toBeGreaterThanOrEqual(1);
    expect(refusedInResume).toBeLessThanOrEqual(twins.size);
    check();
    await expectBucketIsSnapshot('fresh/', part);
    // An incremental publish of the demo, killed after a random time, then finished.
    await cycle(45);
    const at = Date.now() + 300 + Math.random() * 1_500;
    await kill('demo/', out, () => Date.now() >= at);
    const done = await runCli(['publish', '--config', configFile('demo/'), '--json'], { env });
    expect(done.code, done.stderr).toBe(0);
    check();
    await expectBucketIsSnapshot('demo/');
  }, 300_000);

  it('--dry-run prints the plan and changes nothing', async () => {
    const from = proxy.ops.length;
    const r = await runCli(['publish', '--config', configFile('dry/'), '--dry-run', '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PublishSummary;
    expect(plan).toMatchObject({ dry_run: true, previous_generated_at: null, requests: 2 });
    expect(plan.uploaded.objects).toBe(snapshotObjects().size);
    const text = await runCli(['publish', '--config', configFile('demo/'), '--dry-run'], { env });
    expect(text.stderr).toMatch(/would upload 0 objects/);
    expect(proxy.ops.length).toBe(from); // nothing written or deleted
    expect(s3.objects(BUCKET, 'dry/').size).toBe(0);
    // Every check above saw the manifests and indexes it was meant to see.
    expect(checkers.get('demo/')!.checkedReferrers).toBeGreaterThan(1000);
    expect(checkers.get('fresh/')!.checkedReferrers).toBe(1); // its one manifest.json (partOfSnapshot has no index; the killed run wrote none)
  });
});
