// A segment is recognised by its content wherever it is served from: a source moved to another
// directory or URL (or renamed) ingests nothing again, and raw probe samples pruned by `build` never
// come back, not even in a segment that is new (repackaged) but carries the old records.
import { copyFileSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { pruneRawProbes } from '../src/derive/hosts/step.js';
import { runIngest, type IngestSummary } from '../src/feeds/ingest.js';
import type { FeedIndex } from '../src/feeds/schema.js';
import { count, dump } from './helpers/db-dump.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { lines, sampleRecords, segmentBytes, tempDir, writeFeedDir, writeFeedDirBytes } from './helpers/feeds.js';
import { startFeedServer, type FeedServer } from './helpers/http-feed-server.js';

const http = { timeout_ms: 30_000, retries: 2, retry_base_ms: 20 };

function ingest(dbPath: string, name: string, url: string): Promise<IngestSummary> {
  return runIngest({ dbPath, sources: [{ name, url }], http });
}

const servers: FeedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

describe('segments are known by their content', () => {
  it('a source moved to another directory and URL, and renamed, ingests nothing again', async () => {
    const specs = [
      { path: 'a.ndjson', lines: lines(sampleRecords(100)) },
      { path: 'b.ndjson.gz', lines: [...lines(sampleRecords(100, 100)), 'not json'] },
    ];
    const first = tempDir();
    writeFeedDir(first, specs);
    const dbPath = join(tempDir(), 'db.sqlite');
    expect((await ingest(dbPath, 'feeds', first)).segments).toBe(2);
    const before = dump(dbPath);
    // The same bytes under other paths, in another directory, served under another URL.
    const moved = tempDir();
    writeFeedDirBytes(moved, [
      { path: '2026/10/a.ndjson', bytes: segmentBytes(specs[0]!) },
      { path: '2026/10/b.ndjson.gz', bytes: segmentBytes(specs[1]!) },
    ]);
    const server = await startFeedServer(moved);
    servers.push(server);
    for (const [name, url] of [
      ['feeds-moved', moved],
      ['feeds-http', server.url],
    ] as const) {
      const s = await ingest(dbPath, name, url);
      expect(s.failed_sources).toEqual([]);
      expect(s.segments).toBe(0);
      expect(s.segments_skipped).toBe(2);
      expect(s.records_total).toBe(0);
    }
    expect(server.requests.get('2026/10/a.ndjson')).toBeUndefined(); // not even fetched
    expect(dump(dbPath)).toEqual(before); // no second rejects row either
  });

  it('a segment listed twice under two paths is ingested once; the same bytes read another way (.gz or not) are other content', async () => {
    const dir = tempDir();
    const text = segmentBytes({ path: 'x.ndjson', lines: lines(sampleRecords(30)) });
    const gz = gzipSync(text);
    writeFeedDirBytes(dir, [
      { path: 'one.ndjson', bytes: text },
      { path: 'two.ndjson', bytes: text },
      // gzip bytes listed as plain text first (every line a reject), then as what they are
      { path: 'three.ndjson', bytes: gz },
      { path: 'three-again.ndjson.gz', bytes: gz },
    ]);
    const dbPath = join(tempDir(), 'db.sqlite');
    const s = await ingest(dbPath, 'src', dir);
    expect(s.segments).toBe(3);
    expect(s.segments_skipped).toBe(1);
    expect(count(dbPath, "SELECT count(*) FROM segments WHERE path = 'two.ndjson'")).toBe(0);
    // Its records are those of one.ndjson, so all duplicates.
    expect(count(dbPath, "SELECT records FROM segments WHERE path = 'three-again.ndjson.gz'")).toBe(30);
    expect(count(dbPath, "SELECT duplicates FROM segments WHERE path = 'three-again.ndjson.gz'")).toBe(30);
    expect(count(dbPath, "SELECT rejects FROM segments WHERE path = 'three.ndjson'")).toBeGreaterThan(0);
  });
});

describe('on the small demo, after build pruned raw probe samples', () => {
  it('moved feeds (another directory, another URL) and repackaged old segments bring no raw probe back', async () => {
    const demo = smallDemo();
    const probesIngested = count(demo.db, 'SELECT count(*) FROM probe_obs');
    // What `build` does before rendering: derive (the ingested demo derived once per run,
    // test/helpers/demo-fixture.ts, copied), then prune raw probes past retention (14 days).
    const db = copyOfDb((await derivedSmallDemo()).db);
    const nowMs = Date.parse(demo.now);
    {
      const h = db.open();
      const pruned = h.transaction(() => pruneRawProbes(h, nowMs - 14 * 86_400_000))();
      h.close();
      expect(pruned.deleted).toBeGreaterThan(100_000);
      expect(pruned.horizon).not.toBeNull();
    }
    const kept = count(db.path, 'SELECT count(*) FROM probe_obs');
    expect(kept).toBeLessThan(probesIngested);
    const segments = count(db.path, 'SELECT count(*) FROM segments');

    // The feeds move: another directory (the segments themselves linked, not copied), then HTTP.
    const moved = tempDir('demo-moved-');
    copyFileSync(join(demo.feeds, 'feeds.json'), join(moved, 'feeds.json'));
    symlinkSync(join(demo.feeds, 'segments'), join(moved, 'segments'));
    const server = await startFeedServer(moved);
    servers.push(server);
    for (const [name, url] of [
      ['demo-moved', moved],
      ['demo-http', server.url],
    ] as const) {
      const s = await ingest(db.path, name, url);
      expect(s.failed_sources).toEqual([]);
      expect(s.segments).toBe(0);
      expect(s.segments_skipped).toBe(segments);
      expect(count(db.path, 'SELECT count(*) FROM probe_obs')).toBe(kept);
    }

    // New segments (other bytes: gzipped) carrying the demo's probe records: those older than the
    // pruning horizon are dropped and counted, the others are duplicates.
    const index = JSON.parse(readFileSync(join(demo.feeds, 'feeds.json'), 'utf8')) as FeedIndex;
    const probeSegs = index.segments.filter((s) => s.path.includes('/probe-'));
    const oldest = probeSegs[0]!;
    const newest = probeSegs[probeSegs.length - 1]!;
    const repackaged = tempDir('demo-repackaged-');
    writeFeedDirBytes(
      repackaged,
      [oldest, newest].map((s) => ({ path: `${s.path}.gz`, bytes: gzipSync(readFileSync(join(demo.feeds, s.path))) })),
    );
    const oldLines = readFileSync(join(demo.feeds, oldest.path), 'utf8').split('\n').filter((l) => l.length > 0).length;
    const newLines = readFileSync(join(demo.feeds, newest.path), 'utf8').split('\n').filter((l) => l.length > 0).length;
    const s = await ingest(db.path, 'repackaged', repackaged);
    expect(s.failed_sources).toEqual([]);
    expect(s.segments).toBe(2);
    expect(count(db.path, 'SELECT count(*) FROM probe_obs')).toBe(kept);
    expect(s.probes_past_horizon).toBe(oldLines);
    expect(s.records.probe).toBe(newLines);
    expect(s.duplicates).toBe(newLines);
    // The dropped records do not stretch the segment's time span (derive reads new rows through it).
    expect(count(db.path, `SELECT count(*) FROM segments WHERE path = '${oldest.path}.gz' AND min_at IS NULL`)).toBe(1);
  }, 300_000);
});
