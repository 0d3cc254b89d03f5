// HTTP sources fetch segments ahead, several at once, and still apply them strictly in feed order:
// waiting for retries overlaps, what is fetched ahead is bounded, a refused segment still stops the
// source there.
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runIngest, type IngestSummary } from '../src/feeds/ingest.js';
import type { FeedIndex } from '../src/feeds/schema.js';
import { AHEAD_BYTES, AHEAD_SEGMENT_BYTES, AHEAD_SEGMENTS, type HttpOptions } from '../src/feeds/source.js';
import { count, digest, dump } from './helpers/db-dump.js';
import { smallDemo } from './helpers/demo-fixture.js';
import { lines, sampleRecords, tempDir, writeFeedDir } from './helpers/feeds.js';
import { startFeedServer, type FeedServer } from './helpers/http-feed-server.js';

const servers: FeedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function serve(dir: string, options: Parameters<typeof startFeedServer>[1] = {}): Promise<FeedServer> {
  const s = await startFeedServer(dir, options);
  servers.push(s);
  return s;
}

function ingest(dbPath: string, url: string, http: HttpOptions, workers?: number): Promise<IngestSummary> {
  return runIngest({ dbPath, sources: [{ name: 'src', url }], http, ...(workers === undefined ? {} : { workers, inlineBelowBytes: 0 }) });
}

const until = async (what: string, cond: () => boolean): Promise<void> => {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** Segments of the small demo (7,207 in all) the 503 comparison ingests. */
const PREFIX = 2_000;

describe('fetching HTTP segments ahead', () => {
  it('the small demo from a source that answers every first request with 503 takes less than twice as long as from a healthy one, and gives the same database', async () => {
    // The demo's first PREFIX segments (its first days, the feed as it stood then): the segments are
    // the feed's, the index cut after them, so the run is the demo's ingest at a quarter of the time.
    const demo = smallDemo();
    const index = JSON.parse(readFileSync(join(demo.feeds, 'feeds.json'), 'utf8')) as FeedIndex;
    const segments = Math.min(PREFIX, index.segments.length);
    const feeds = tempDir();
    symlinkSync(join(demo.feeds, 'segments'), join(feeds, 'segments'));
    writeFileSync(join(feeds, 'feeds.json'), JSON.stringify({ ...index, segments: index.segments.slice(0, segments) }));
    // A small backoff, as an operator would configure for a flaky server; default concurrency.
    const http = { timeout_ms: 30_000, retries: 3, retry_base_ms: 80 };
    const healthy = await serve(feeds);
    const healthyDb = join(tempDir(), 'healthy.sqlite');
    let t0 = performance.now();
    const a = await ingest(healthyDb, healthy.url, http);
    const healthySeconds = (performance.now() - t0) / 1000;
    expect(a.failed_sources).toEqual([]);
    expect(a.segments).toBe(segments);

    const flaky = await serve(feeds, { failFirstWith: 503 });
    const flakyDb = join(tempDir(), 'flaky.sqlite');
    t0 = performance.now();
    const b = await ingest(flakyDb, flaky.url, http);
    const flakySeconds = (performance.now() - t0) / 1000;
    expect(b.failed_sources).toEqual([]);
    expect(b.segments).toBe(segments);
    // Every file answered 503 once, then was fetched once: retried on its own, never from scratch.
    expect(flaky.requests.size).toBe(segments + 1);
    expect([...flaky.requests.values()].every((n) => n === 2)).toBe(true);
    // One after the other, the retries alone (segments × 80 ms on average) would take ~3 minutes.
    console.log(`small demo over HTTP: healthy ${healthySeconds.toFixed(1)} s, 503 on every first request ${flakySeconds.toFixed(1)} s`);
    expect(flakySeconds).toBeLessThan(2 * healthySeconds);
    expect(b.records).toEqual(a.records);
    expect(digest(flakyDb)).toEqual(digest(healthyDb));
  }, 600_000);

  it('keeps at most `concurrency` requests waiting and at most AHEAD_SEGMENTS segments ahead of one that stalls; nothing after it is applied', async () => {
    const dir = tempDir();
    // Many tiny segments: the segment bound binds before the byte bound.
    const specs = Array.from({ length: AHEAD_SEGMENTS + 60 }, (_, i) => ({ path: `s/${String(i).padStart(4, '0')}.ndjson`, lines: lines(sampleRecords(2, i * 2)) }));
    writeFeedDir(dir, specs);
    const stalled = specs[10]!.path;
    const server = await serve(dir, { delayMs: 5, stall: { path: stalled, bytes: 50 } });
    const dbPath = join(tempDir(), 'db.sqlite');
    const run = ingest(dbPath, server.url, { timeout_ms: 60_000, retries: 0, retry_base_ms: 10, concurrency: 3 }, 1);
    const last = specs[10 + AHEAD_SEGMENTS]!.path;
    await until(`${last} to be requested`, () => server.requests.has(last));
    await new Promise((r) => setTimeout(r, 300)); // time for any request beyond the bound to show
    const requested = [...server.requests.keys()].filter((p) => p.startsWith('s/')).sort();
    expect(requested).toEqual(specs.slice(0, 11 + AHEAD_SEGMENTS).map((s) => s.path));
    expect(server.maxWaiting).toBe(3);
    // The stalled segment's connection goes away: the source fails there, after the 10 before it.
    await server.close();
    const s = await run;
    expect(s.failed_sources).toHaveLength(1);
    expect(s.segments).toBe(10);
    expect(count(dbPath, 'SELECT count(*) FROM segments')).toBe(10);
    expect(count(dbPath, `SELECT count(*) FROM segments WHERE path >= '${stalled}'`)).toBe(0);
  });

  it('fetches ahead at most AHEAD_BYTES of segments (each counted up to AHEAD_SEGMENT_BYTES)', async () => {
    const dir = tempDir();
    // Segments of about 300 KB: the byte bound binds first.
    const specs = Array.from({ length: 80 }, (_, i) => ({ path: `s/${String(i).padStart(3, '0')}.ndjson`, lines: lines(sampleRecords(600, i * 600)) }));
    const index = writeFeedDir(dir, specs);
    const server = await serve(dir, { stall: { path: specs[3]!.path, bytes: 50 } });
    const dbPath = join(tempDir(), 'db.sqlite');
    const run = ingest(dbPath, server.url, { timeout_ms: 60_000, retries: 0, retry_base_ms: 10 }, 1);
    await until('requests to stop', () => server.requests.size > 4);
    let seen = -1;
    while (server.requests.size !== seen) {
      seen = server.requests.size;
      await new Promise((r) => setTimeout(r, 300));
    }
    const ahead = index.slice(4, server.requests.size - 1); // after the stalled one (and feeds.json)
    const bytes = ahead.reduce((n, s) => n + Math.min(s.bytes, AHEAD_SEGMENT_BYTES), 0);
    expect(ahead.length).toBeGreaterThan(10);
    expect(bytes).toBeLessThanOrEqual(AHEAD_BYTES);
    expect(bytes + index[4 + ahead.length]!.bytes).toBeGreaterThan(AHEAD_BYTES); // the next one did not fit
    await server.close();
    const s = await run;
    expect(s.segments).toBe(3);
  });

  it('a segment that fails verification refuses the source from there although later ones were fetched; repaired, the next run completes it', async () => {
    const dir = tempDir();
    const specs = Array.from({ length: 30 }, (_, i) => ({ path: `s${String(i).padStart(2, '0')}.ndjson${i % 4 === 1 ? '.gz' : ''}`, lines: lines(sampleRecords(40, i * 40)) }));
    writeFeedDir(dir, specs);
    const file = join(dir, 's12.ndjson');
    const bytes = readFileSync(file);
    bytes[5] = bytes[5] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file, bytes);
    const server = await serve(dir, { failFirstWith: 503 });
    const http = { timeout_ms: 5_000, retries: 2, retry_base_ms: 10 };
    const dbs = [];
    for (const workers of [0, 2]) {
      const db = join(tempDir(), 'db.sqlite');
      const s = await ingest(db, server.url, http, workers);
      expect(s.refused_segments.map((r) => r.path)).toEqual(['s12.ndjson']);
      expect(s.segments).toBe(12);
      expect(count(db, "SELECT count(*) FROM segments WHERE path >= 's12'")).toBe(0);
      expect(server.requests.get('s21.ndjson.gz')).toBeGreaterThan(0); // fetched ahead, never applied
      dbs.push(db);
    }
    writeFeedDir(dir, specs);
    const fromDir = join(tempDir(), 'db.sqlite');
    await ingest(fromDir, dir, http, 2);
    for (const [i, db] of dbs.entries()) {
      const again = await ingest(db, server.url, http, 2 * i);
      expect(again.segments).toBe(18);
      expect(dump(db)).toEqual(dump(fromDir));
    }
  });
});
