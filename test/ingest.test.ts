import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDb } from '../src/db/index.js';
import { SCHEMA_VERSION } from '../src/db/schema.js';
import { MAX_LINE_BYTES, parseChunk } from '../src/feeds/chunk.js';
import { runIngest, type IngestSummary } from '../src/feeds/ingest.js';
import { RowEncoder } from '../src/feeds/rows.js';
import { FEED_KINDS, type FeedKind } from '../src/feeds/schema.js';
import { FeedWriter } from '../src/feeds/store.js';
import { startCli, runCli } from './helpers/cli.js';
import { count, dump } from './helpers/db-dump.js';
import { lines, sampleRecords, segmentBytes, tempDir, writeFeedDir, writeIndex } from './helpers/feeds.js';
import { startFeedServer, type FeedServer } from './helpers/http-feed-server.js';

const http = { timeout_ms: 5_000, retries: 3, retry_base_ms: 20 };

function ingest(dbPath: string, ...urls: string[]): Promise<IngestSummary> {
  return runIngest({ dbPath, sources: urls.map((url, i) => ({ name: `src${i}`, url })), http });
}

/** With `workers` threads however small the feed (by default a small feed is parsed inline). */
function ingestWith(workers: number, dbPath: string, url: string): Promise<IngestSummary> {
  return runIngest({ dbPath, sources: [{ name: 'src', url }], http, workers, inlineBelowBytes: 0 });
}

const servers: FeedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

describe('database', () => {
  it('migrates a new database to the current schema version with WAL and foreign keys', () => {
    const dbPath = join(tempDir(), 'x.sqlite');
    const db = openDb(dbPath);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.close();
    // Re-opening applies nothing twice.
    const again = openDb(dbPath);
    expect(again.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    again.close();
  });

  it('refuses a database from a newer version', () => {
    const dbPath = join(tempDir(), 'x.sqlite');
    const raw = new Database(dbPath);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => openDb(dbPath)).toThrow(/newer than this build/);
  });
});

describe('ingest from a directory', () => {
  it('ingests every kind, normalising ids, and counts records by kind', async () => {
    const dir = tempDir();
    const records = sampleRecords(320);
    writeFeedDir(dir, [
      { path: 'seg/a.ndjson', lines: lines(records.slice(0, 160)) },
      { path: 'seg/b.ndjson.gz', lines: lines(records.slice(160)) },
    ]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, dir);
    expect(s.failed_sources).toEqual([]);
    expect(s.segments).toBe(2);
    expect(s.records_total).toBe(320);
    expect(s.rejects).toBe(0);
    const byKind = Object.fromEntries(['probe', 'directory', 'sml', 'smp', 'member', 'curation', 'zone', 'ack'].map((k) => [k, records.filter((r) => r.kind === k).length]));
    expect(s.records).toEqual(byKind);
    expect(count(dbPath, 'SELECT count(*) FROM probe_obs')).toBe(byKind.probe);
    expect(count(dbPath, 'SELECT count(*) FROM directory_obs')).toBe(byKind.directory);
    expect(count(dbPath, 'SELECT count(*) FROM smp_obs')).toBe(byKind.smp);
    expect(count(dbPath, 'SELECT count(*) FROM zone_obs')).toBe(byKind.zone);
    expect(count(dbPath, 'SELECT count(*) FROM ack_obs')).toBe(byKind.ack);
    // Dimensions are shared, not repeated per observation.
    expect(count(dbPath, 'SELECT count(*) FROM hosts')).toBe(14); // 13 probed + the SMP named by sml/smp
    expect(count(dbPath, 'SELECT count(*) FROM certs')).toBe(13);
    expect(count(dbPath, "SELECT count(*) FROM participants WHERE pid NOT GLOB '0208::[0-9]*'")).toBe(0);
  });

  it('gives the same database whether lines are parsed on 0, 1 or 3 worker threads', async () => {
    const dir = tempDir();
    // Many chunks per segment, so dictionary entries made by one worker are used across chunks,
    // plus bad lines and duplicates in between.
    const records = lines(sampleRecords(12_000));
    writeFeedDir(dir, [
      { path: 'a.ndjson', lines: [...records.slice(0, 6000), 'garbage', ...records.slice(0, 50)] },
      { path: 'b.ndjson.gz', lines: [...records.slice(6000), '{"kind":"probe"}'] },
    ]);
    const dumps = [];
    for (const workers of [0, 1, 3]) {
      const dbPath = join(tempDir(), 'db.sqlite');
      const s = await ingestWith(workers, dbPath, dir);
      expect(s.records_total).toBe(12_050);
      expect(s.duplicates).toBe(50);
      expect(s.rejects).toBe(2);
      dumps.push(dump(dbPath));
    }
    expect(dumps[1]).toEqual(dumps[0]);
    expect(dumps[2]).toEqual(dumps[0]);
  });

  it('reads many small segments ahead and still gives the same database on 0, 1 or 3 worker threads', async () => {
    const dir = tempDir();
    const records = lines(sampleRecords(3_000));
    // 40 segments of 75 lines: far more segments than the reader runs ahead by, some gzipped, one
    // with a bad line, one empty, and duplicates of earlier segments' records.
    writeFeedDir(dir, [
      ...Array.from({ length: 40 }, (_, i) => ({
        path: `s/${String(i).padStart(2, '0')}.ndjson${i % 3 === 0 ? '.gz' : ''}`,
        lines: i === 7 ? [...records.slice(i * 75, (i + 1) * 75), 'garbage'] : records.slice(i * 75, (i + 1) * 75),
      })),
      { path: 's/empty.ndjson', lines: [] },
      { path: 's/dups.ndjson', lines: records.slice(0, 20) },
    ]);
    const dumps = [];
    for (const workers of [0, 1, 3]) {
      const dbPath = join(tempDir(), 'db.sqlite');
      const s = await ingestWith(workers, dbPath, dir);
      expect(s.segments).toBe(42);
      expect(s.records_total).toBe(3_020);
      expect(s.duplicates).toBe(20);
      expect(s.rejects).toBe(1);
      const d = dump(dbPath);
      // Segments are applied in listed order: ids follow the list, and each segment's rows carry its id.
      expect((d.segments as { path: string }[]).map((r) => r.path)).toEqual([...Array.from({ length: 40 }, (_, i) => `s/${String(i).padStart(2, '0')}.ndjson${i % 3 === 0 ? '.gz' : ''}`), 's/empty.ndjson', 's/dups.ndjson']);
      expect((d.rejects as { segment_id: number; line: number }[]).map((r) => [r.segment_id, r.line])).toEqual([[8, 76]]);
      dumps.push(d);
    }
    expect(dumps[1]).toEqual(dumps[0]);
    expect(dumps[2]).toEqual(dumps[0]);
  });

  it('stops at a refused segment although later ones were already read ahead, keeping nothing of them', async () => {
    const dir = tempDir();
    const specs = Array.from({ length: 30 }, (_, i) => ({ path: `s${String(i).padStart(2, '0')}.ndjson`, lines: lines(sampleRecords(40, i * 40)) }));
    writeFeedDir(dir, specs);
    const file = join(dir, 's12.ndjson');
    const bytes = readFileSync(file);
    bytes[5] = bytes[5] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file, bytes);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingestWith(3, dbPath, dir);
    expect(s.segments).toBe(12);
    expect(s.refused_segments.map((r) => r.path)).toEqual(['s12.ndjson']);
    expect(count(dbPath, 'SELECT max(path) FROM segments') as unknown).toBe('s11.ndjson');
    expect(count(dbPath, 'SELECT count(*) FROM probe_obs')).toBe(sampleRecords(12 * 40).filter((r) => r.kind === 'probe').length);
    // Repaired, the next run ingests the rest: the same database as one run over the good feed.
    writeFeedDir(dir, specs);
    const again = await ingestWith(3, dbPath, dir);
    expect(again.segments).toBe(18);
    const once = join(tempDir(), 'db.sqlite');
    await ingestWith(3, once, dir);
    expect(dump(dbPath)).toEqual(dump(once));
  });

  it('restarts full dictionaries only between chunks, so every row resolves to the right dimension', () => {
    // Chunks of 50 records with an encoder that may hold only 5 entries: it restarts at almost
    // every chunk, and the rows must still come out as with an encoder that never restarts.
    const text = lines(sampleRecords(1_000)).map((l) => `${l}\n`);
    const write = (encoder: RowEncoder) => {
      const dbPath = join(tempDir(), 'db.sqlite');
      const db = openDb(dbPath);
      db.prepare("INSERT INTO sources (url, name) VALUES ('x', 'x')").run();
      const seg = Number(db.prepare("INSERT INTO segments (source_id, path, sha256, bytes, lines, records, duplicates, rejects, ingested_at) VALUES (1, 'p', 's', 0, 0, 0, 0, 0, 0)").run().lastInsertRowid);
      const writer = new FeedWriter(db);
      const counts = Object.fromEntries(FEED_KINDS.map((k) => [k, 0])) as Record<FeedKind, number>;
      writer.startSegment();
      let resets = 0;
      for (let i = 0; i < text.length; i += 50) {
        const r = parseChunk(Buffer.from(text.slice(i, i + 50).join('')), encoder);
        resets += r.dict.filter((e) => e[0] === 0).length;
        writer.register(1, r.dict);
        writer.writeBatch(r.batch, 1, seg, counts);
      }
      writer.flush();
      db.close();
      return { dump: dump(dbPath), resets, counts };
    };
    const small = write(new RowEncoder(5));
    const large = write(new RowEncoder());
    expect(small.resets).toBeGreaterThan(10);
    expect(large.resets).toBe(0);
    expect(small.counts).toEqual(large.counts);
    expect(small.dump).toEqual(large.dump);
  });

  it('normalises the full Peppol participant id form to the canonical id', async () => {
    const dir = tempDir();
    writeFeedDir(dir, [
      {
        path: 's.ndjson',
        lines: [
          JSON.stringify({ kind: 'sml', at: '2026-10-01T00:00:00Z', participant: 'iso6523-actorid-upis::9925:BE0123456789', registered: true, smp: 'SMP.Example.NET' }),
          JSON.stringify({ kind: 'sml', at: '2026-10-02T00:00:00+02:00', participant: '9925::be0123456789', registered: true, smp: 'smp.example.net' }),
        ],
      },
    ]);
    const dbPath = join(tempDir(), 'db.sqlite');
    await ingest(dbPath, dir);
    const db = new Database(dbPath, { readonly: true });
    expect(db.prepare('SELECT pid, scheme, value FROM participants').all()).toEqual([{ pid: '9925::be0123456789', scheme: '9925', value: 'be0123456789' }]);
    expect(db.prepare('SELECT at FROM sml_obs ORDER BY at').pluck().all()).toEqual([Date.parse('2026-10-01T00:00:00Z'), Date.parse('2026-10-01T22:00:00Z')]);
    expect(db.prepare('SELECT hostname FROM hosts').pluck().all()).toEqual(['smp.example.net']);
    db.close();
  });

  it('is idempotent: a second run ingests nothing and changes nothing', async () => {
    const dir = tempDir();
    writeFeedDir(dir, [
      { path: 'a.ndjson', lines: lines(sampleRecords(200)) },
      { path: 'b.ndjson', lines: [...lines(sampleRecords(50, 200)), 'not json'] },
    ]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const first = await ingest(dbPath, dir);
    expect(first.segments).toBe(2);
    const before = dump(dbPath);
    const second = await ingest(dbPath, dir);
    expect(second.segments).toBe(0);
    expect(second.segments_skipped).toBe(2);
    expect(second.records_total).toBe(0);
    expect(dump(dbPath)).toEqual(before);
  });

  it('ingests only segments added since the last run', async () => {
    const dir = tempDir();
    const a = { path: 'a.ndjson', lines: lines(sampleRecords(100)) };
    writeFeedDir(dir, [a]);
    const dbPath = join(tempDir(), 'db.sqlite');
    await ingest(dbPath, dir);
    writeFeedDir(dir, [a, { path: 'b.ndjson', lines: lines(sampleRecords(100, 100)) }]);
    const s = await ingest(dbPath, dir);
    expect(s.segments).toBe(1);
    expect(s.segments_skipped).toBe(1);
    expect(s.records_total).toBe(100);
    // Same data as ingesting both at once.
    const once = join(tempDir(), 'db.sqlite');
    await ingest(once, dir);
    expect(dump(dbPath)).toEqual(dump(once));
  });

  it('keeps bad lines as rejects with source, segment, line number, error and raw text, and ingests the rest', async () => {
    const dir = tempDir();
    const good = lines(sampleRecords(10));
    const bad = [
      '{"kind":"probe","at":"yesterday"}',
      'this is not json',
      '{"kind":"teleport","at":"2026-10-01T00:00:00Z"}',
      JSON.stringify({ ...sampleRecords(1)[0], hostname: 'not a host name' }),
    ];
    writeFeedDir(dir, [{ path: 'mixed.ndjson', lines: [good[0]!, bad[0]!, good[1]!, bad[1]!, '', bad[2]!, ...good.slice(2), bad[3]!] }]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, dir);
    expect(s.rejects).toBe(4);
    expect(s.records_total).toBe(10);
    expect(s.failed_sources).toEqual([]);
    const db = new Database(dbPath, { readonly: true });
    const rows = db
      .prepare('SELECT s.url, g.path, r.line, r.error, r.raw FROM rejects r JOIN segments g ON g.id = r.segment_id JOIN sources s ON s.id = r.source_id ORDER BY r.line')
      .all() as { url: string; path: string; line: number; error: string; raw: string }[];
    db.close();
    expect(rows.map((r) => r.line)).toEqual([2, 4, 6, 15]);
    expect(rows.map((r) => r.raw)).toEqual(bad);
    expect(rows.every((r) => r.url === dir && r.path === 'mixed.ndjson')).toBe(true);
    expect(rows[0]!.error).toMatch(/^at: /);
    expect(rows[1]!.error).toMatch(/^not JSON/);
    expect(rows[2]!.error).toMatch(/^kind: expected one of/);
    expect(rows[3]!.error).toMatch(/^hostname: expected a fully-qualified hostname/);
  });

  it('rejects an over-long line without holding it whole, and keeps its start', async () => {
    const dir = tempDir();
    const huge = `{"kind":"ack","reason":"${'x'.repeat(MAX_LINE_BYTES + 10)}"}`;
    writeFeedDir(dir, [{ path: 'long.ndjson', lines: [lines(sampleRecords(1))[0]!, huge, lines(sampleRecords(1, 1))[0]!] }]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, dir);
    expect(s.records_total).toBe(2);
    expect(s.rejects).toBe(1);
    const db = new Database(dbPath, { readonly: true });
    const r = db.prepare('SELECT line, error, length(raw) AS len, raw_truncated FROM rejects').get() as { line: number; error: string; len: number; raw_truncated: number };
    db.close();
    expect(r.line).toBe(2);
    expect(r.error).toMatch(/longer than/);
    expect(r.raw_truncated).toBe(1);
    expect(r.len).toBe(64 * 1024);
  });

  it('refuses a segment whose bytes do not match its sha256, naming it, and ingests nothing of it', async () => {
    const dir = tempDir();
    const segs = writeFeedDir(dir, [
      { path: 'ok.ndjson', lines: lines(sampleRecords(20)) },
      { path: 'tampered.ndjson', lines: lines(sampleRecords(20, 20)) },
      { path: 'after.ndjson', lines: lines(sampleRecords(20, 40)) },
    ]);
    // Same size, different bytes.
    const file = join(dir, 'tampered.ndjson');
    const bytes = readFileSync(file);
    bytes[10] = bytes[10] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file, bytes);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, dir);
    expect(s.segments).toBe(1);
    expect(s.failed_sources).toHaveLength(1);
    expect(s.refused_segments).toHaveLength(1);
    expect(s.refused_segments[0]!.path).toBe('tampered.ndjson');
    expect(s.refused_segments[0]!.error).toMatch(/tampered\.ndjson refused: sha256 [0-9a-f]{64}, feeds.json lists/);
    expect(count(dbPath, "SELECT count(*) FROM segments WHERE path != 'ok.ndjson'")).toBe(0);
    expect(count(dbPath, 'SELECT count(*) FROM probe_obs')).toBe(sampleRecords(20).filter((r) => r.kind === 'probe').length);
    // The producer repairs the segment: the next run completes the source.
    writeFeedDir(dir, [
      { path: 'ok.ndjson', lines: lines(sampleRecords(20)) },
      { path: 'tampered.ndjson', lines: lines(sampleRecords(20, 20)) },
      { path: 'after.ndjson', lines: lines(sampleRecords(20, 40)) },
    ]);
    expect(segs[1]!.sha256).toBe(JSON.parse(readFileSync(join(dir, 'feeds.json'), 'utf8')).segments[1].sha256);
    const again = await ingest(dbPath, dir);
    expect(again.failed_sources).toEqual([]);
    expect(again.segments).toBe(2);
  });

  it('refuses a segment whose size does not match, and a gzip segment that is not gzip', async () => {
    const dir = tempDir();
    const a = { path: 'a.ndjson', lines: lines(sampleRecords(5)) };
    const bytes = segmentBytes(a);
    writeFileSync(join(dir, 'a.ndjson'), bytes);
    writeFileSync(join(dir, 'b.ndjson.gz'), Buffer.from('plain text, not gzip\n'));
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    writeIndex(dir, [{ path: 'a.ndjson', sha256: sha(bytes), bytes: bytes.length - 1 }]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s1 = await ingest(dbPath, dir);
    expect(s1.refused_segments[0]!.error).toMatch(/a\.ndjson refused: more than the \d+ bytes/);
    const gz = readFileSync(join(dir, 'b.ndjson.gz'));
    writeIndex(dir, [{ path: 'b.ndjson.gz', sha256: sha(gz), bytes: gz.length }]);
    const s2 = await ingest(dbPath, dir);
    expect(s2.refused_segments[0]!.error).toMatch(/b\.ndjson\.gz refused: not valid gzip/);
    expect(count(dbPath, 'SELECT count(*) FROM segments')).toBe(0);
  });

  it('refuses a source whose already-ingested segment changed (segments are immutable)', async () => {
    const dir = tempDir();
    writeFeedDir(dir, [{ path: 'a.ndjson', lines: lines(sampleRecords(5)) }]);
    const dbPath = join(tempDir(), 'db.sqlite');
    await ingest(dbPath, dir);
    writeFeedDir(dir, [{ path: 'a.ndjson', lines: lines(sampleRecords(6)) }]);
    const s = await ingest(dbPath, dir);
    expect(s.failed_sources).toHaveLength(1);
    expect(s.failed_sources[0]!.error).toMatch(/a\.ndjson was ingested with sha256 .* immutable/);
  });

  it('reports a source without a valid feeds.json and still ingests the others', async () => {
    const good = tempDir();
    writeFeedDir(good, [{ path: 'a.ndjson', lines: lines(sampleRecords(5)) }]);
    const missing = tempDir();
    const broken = tempDir();
    writeFileSync(join(broken, 'feeds.json'), '{"segments":[{"path":"../etc/passwd","sha256":"x","bytes":-1}]}');
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, missing, broken, good);
    expect(s.segments).toBe(1);
    expect(s.failed_sources.map((f) => f.url)).toEqual([missing, broken]);
    expect(s.failed_sources[0]!.error).toMatch(/cannot read feeds\.json \(ENOENT\)/);
    expect(s.failed_sources[1]!.error).toMatch(/segments\.0\.path: expected a relative path/);
  });
});

describe('ingest over HTTP', () => {
  it('retries a 503 on the first request of every file and ingests everything', async () => {
    const dir = tempDir();
    writeFeedDir(dir, [
      { path: 'seg/a.ndjson', lines: lines(sampleRecords(50)) },
      { path: 'seg/b.ndjson.gz', lines: lines(sampleRecords(50, 50)) },
    ]);
    const server = await startFeedServer(dir, { failFirstWith: 503 });
    servers.push(server);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, server.url);
    expect(s.failed_sources).toEqual([]);
    expect(s.segments).toBe(2);
    expect(s.records_total).toBe(100);
    expect(Object.fromEntries(server.requests)).toEqual({ 'feeds.json': 2, 'seg/a.ndjson': 2, 'seg/b.ndjson.gz': 2 });
    // Same data as from the directory itself.
    const fromDir = join(tempDir(), 'db.sqlite');
    await ingest(fromDir, dir);
    const a = dump(dbPath);
    const b = dump(fromDir);
    expect(a).toEqual(b);
  });

  it('gives up on a source that stays down, exits 3, and still ingests the other sources', async () => {
    const goodDir = tempDir();
    writeFeedDir(goodDir, [{ path: 'a.ndjson', lines: lines(sampleRecords(30)) }]);
    const good = await startFeedServer(goodDir);
    const down = await startFeedServer(goodDir, { alwaysStatus: 503 });
    servers.push(good, down);
    const dbPath = join(tempDir(), 'db.sqlite');
    const cfgDir = tempDir();
    const cfg = join(cfgDir, 'publish.config.json');
    writeFileSync(cfg, JSON.stringify({ ingest: { retries: 2, retry_base_ms: 10, timeout_ms: 2000 } }));
    const r = await runCli(['ingest', '--config', cfg, '--db', dbPath, '--source', down.url, good.url, '--json']);
    expect(r.code).toBe(3);
    const summary = JSON.parse(r.stdout.trim()) as IngestSummary;
    expect(summary.segments).toBe(1);
    expect(summary.records_total).toBe(30);
    expect(summary.failed_sources).toHaveLength(1);
    expect(summary.failed_sources[0]!.url).toBe(down.url);
    expect(summary.failed_sources[0]!.error).toMatch(/still failing after 3 attempts: .*HTTP 503/);
    expect(down.requests.get('feeds.json')).toBe(3);
    expect(r.stderr).toMatch(/retry 1 in/);
    // Per-source state is kept.
    const db = new Database(dbPath, { readonly: true });
    const states = db.prepare('SELECT url, last_error IS NOT NULL AS failed, consecutive_failures, last_success_at IS NOT NULL AS ok FROM sources ORDER BY id').all();
    db.close();
    expect(states).toEqual([
      { url: down.url, failed: 1, consecutive_failures: 1, ok: 0 },
      { url: good.url, failed: 0, consecutive_failures: 0, ok: 1 },
    ]);
  });

  it('resumes after a run killed in the middle of a segment: nothing partial is kept, the next run completes it', async () => {
    const dir = tempDir();
    const segs = writeFeedDir(dir, [
      { path: 'first.ndjson', lines: lines(sampleRecords(500)) },
      { path: 'big.ndjson', lines: lines(sampleRecords(20_000, 500)) },
    ]);
    const server = await startFeedServer(dir, { stall: { path: 'big.ndjson', bytes: Math.floor(segs[1]!.bytes / 2) } });
    servers.push(server);
    const dbPath = join(tempDir(), 'db.sqlite');
    const cfg = join(tempDir(), 'publish.config.json');
    writeFileSync(cfg, JSON.stringify({ ingest: { timeout_ms: 60_000 } }));
    const run = startCli(['ingest', '--config', cfg, '--db', dbPath, '--source', server.url]);
    // Wait until the stalled segment has been requested and half of it delivered and processed.
    const deadline = Date.now() + 20_000;
    while (!server.requests.get('big.ndjson') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 700));
    run.child.kill('SIGKILL');
    const killed = await run.done;
    expect(killed.code).toBeNull();
    expect(existsSync(dbPath)).toBe(true);
    // Nothing of the half-read segment; every stored observation belongs to a complete segment.
    expect(count(dbPath, "SELECT count(*) FROM segments WHERE path = 'big.ndjson'")).toBe(0);
    for (const t of ['probe_obs', 'directory_obs', 'sml_obs', 'smp_obs', 'member_obs', 'curation_obs', 'zone_obs', 'ack_obs', 'rejects']) {
      expect(count(dbPath, `SELECT count(*) FROM ${t} WHERE segment_id NOT IN (SELECT id FROM segments)`)).toBe(0);
    }
    // The feed comes back: the next run ingests the segment whole.
    server.options.stall = undefined;
    const s = await ingest(dbPath, server.url);
    expect(s.segments).toBeGreaterThanOrEqual(1); // first.ndjson may not have been committed yet
    expect(count(dbPath, 'SELECT count(*) FROM segments')).toBe(2);
    const once = join(tempDir(), 'db.sqlite');
    await ingest(once, dir);
    const a = dump(dbPath);
    const b = dump(once);
    expect(a.probe_obs!.length).toBe(b.probe_obs!.length);
    expect(a).toEqual(b);
  });
});

describe('ingest CLI', () => {
  it('prints one JSON summary line with records by kind, rejects, segments, bytes and seconds', async () => {
    const dir = tempDir();
    writeFeedDir(dir, [{ path: 'a.ndjson', lines: [...lines(sampleRecords(32)), '{"kind":"ack"}'] }]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const r = await runCli(['ingest', '--config', join(tempDir(), 'absent-default.json'), '--db', dbPath, '--source', dir, '--json']);
    expect(r.stderr).toMatch(/absent-default\.json/);
    expect(r.code).toBe(2); // an explicitly named config that does not exist is a usage error
    const ok = await runCli(['ingest', '--db', dbPath, '--source', dir, '--json'], { cwd: tempDir() });
    expect(ok.code).toBe(0);
    const out = ok.stdout.trim().split('\n');
    expect(out).toHaveLength(1);
    const s = JSON.parse(out[0]!) as IngestSummary;
    expect(s.records).toEqual({ probe: 16, directory: 4, sml: 2, smp: 2, member: 2, curation: 2, zone: 2, ack: 2 });
    expect(s.rejects).toBe(1);
    expect(s.segments).toBe(1);
    expect(s.bytes).toBeGreaterThan(1000);
    expect(typeof s.seconds).toBe('number');
  });

  it('exits 2 on an unknown flag', async () => {
    const r = await runCli(['ingest', '--frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown option/);
  });
});
