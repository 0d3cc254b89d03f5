// `peppol-snapshot ingest`: pulls every source's feeds.json, ingests the segments not yet ingested.
//
// Guarantees:
// - A segment is ingested atomically together with its `segments` row (a savepoint; segments are
//   grouped into transactions for throughput): a run killed in the middle of a segment leaves nothing
//   of it, and the next run ingests it again from the start.
// - sha256 and size are verified over the bytes as stored while streaming, before COMMIT; a segment
//   whose bytes do not match is refused whole, and the source stops there (segments are ordered).
// - Memory does not grow with segment size: bytes are streamed, lines are handled as they arrive, and
//   an over-long line is rejected without being held whole.
// - A line that is not JSON or fails its schema becomes a `rejects` row and never aborts the segment.
// - A source that stays unreachable after retries is reported; the other sources still ingest.
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { openDb, type Db } from '../db/index.js';
import { silentProgress, type Progress } from '../util/progress.js';
import { MAX_LINE_BYTES, MAX_REJECT_RAW_CHARS, rejectOf, rejectsOnly, TOO_LONG } from './chunk.js';
import { defaultWorkers, ParserPool } from './parser-pool.js';
import { FEED_KINDS, type FeedIndex, type FeedKind } from './schema.js';
import { isHttpUrl, openSource, SourceError, withRetries, type FeedSource, type HttpOptions } from './source.js';
import { FeedWriter } from './store.js';

export interface IngestOptions {
  dbPath: string;
  sources: { name: string; url: string }[];
  http: HttpOptions;
  progress?: Progress;
  log?: (line: string) => void;
  /** Parse worker threads (default: one per CPU core); 0 parses on this thread. */
  workers?: number;
  /** Injected clock for `ingested_at` (tests). */
  now?: () => number;
}

export interface IngestSummary {
  sources: number;
  segments: number;
  segments_skipped: number;
  records: Record<FeedKind, number>;
  records_total: number;
  duplicates: number;
  rejects: number;
  bytes: number;
  seconds: number;
  records_per_second: number;
  failed_sources: { name: string; url: string; error: string }[];
  refused_segments: { source: string; path: string; error: string }[];
}

/** Bytes that are not what feeds.json promised: never retried, the segment is refused whole. */
export class IntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IntegrityError';
  }
}

interface SegmentCounts {
  lines: number;
  records: Record<FeedKind, number>;
  duplicates: number;
  rejects: number;
  bytes: number;
}

const zeroRecords = (): Record<FeedKind, number> => Object.fromEntries(FEED_KINDS.map((k) => [k, 0])) as Record<FeedKind, number>;

export async function runIngest(opts: IngestOptions): Promise<IngestSummary> {
  const started = performance.now();
  const progress = opts.progress ?? silentProgress;
  const log = opts.log ?? (() => {});
  const now = opts.now ?? Date.now;
  const db = openDb(opts.dbPath);
  // Commits are large (a group of segments). With the default threshold (1,000 pages) every commit
  // would be followed by a checkpoint; checkpointing every 256 MiB of WAL instead copies a page that
  // several commits touch once, and the WAL is truncated when the run ends.
  db.pragma('wal_autocheckpoint = 65536');
  const summary: IngestSummary = {
    sources: opts.sources.length,
    segments: 0,
    segments_skipped: 0,
    records: zeroRecords(),
    records_total: 0,
    duplicates: 0,
    rejects: 0,
    bytes: 0,
    seconds: 0,
    records_per_second: 0,
    failed_sources: [],
    refused_segments: [],
  };
  const ingester = new SegmentIngester(db, now, opts.workers ?? defaultWorkers());
  try {
    for (const src of opts.sources) {
      const url = isHttpUrl(src.url) ? src.url : resolve(src.url);
      const sourceId = upsertSource(db, url, src.name, now());
      const source = openSource(url, opts.http);
      try {
        const index = await withRetries(`${src.name}: feeds.json`, opts.http, () => source.readIndex(), (n, e, d) =>
          log(`${src.name}: feeds.json: ${(e as Error).message}; retry ${n} in ${Math.round(d)} ms`),
        );
        db.prepare('UPDATE sources SET segments_listed = ? WHERE id = ?').run(index.segments.length, sourceId);
        const refused = await ingestSource(db, ingester, source, src.name, sourceId, index, opts.http, summary, progress, log).finally(() =>
          ingester.commit(),
        );
        if (refused) {
          markSource(db, sourceId, now(), refused);
          summary.failed_sources.push({ name: src.name, url, error: refused });
        } else {
          markSource(db, sourceId, now(), null);
        }
      } catch (e) {
        const error = (e as Error).message;
        log(`${src.name}: failed: ${error}`);
        markSource(db, sourceId, now(), error);
        summary.failed_sources.push({ name: src.name, url, error });
      } finally {
        await source.close();
      }
    }
  } finally {
    progress.done();
    ingester.commit();
    await ingester.close();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  summary.records_total = FEED_KINDS.reduce((n, k) => n + summary.records[k], 0);
  summary.seconds = Math.round((performance.now() - started) / 10) / 100;
  summary.records_per_second = summary.seconds > 0 ? Math.round(summary.records_total / summary.seconds) : summary.records_total;
  return summary;
}

export function formatIngestSummary(s: IngestSummary): string {
  const kinds = FEED_KINDS.filter((k) => s.records[k] > 0)
    .map((k) => `${k} ${s.records[k]}`)
    .join(', ');
  const lines = [
    `ingested ${s.segments} segment(s) (${s.segments_skipped} already ingested) from ${s.sources} source(s): ` +
      `${s.records_total} records${kinds ? ` (${kinds})` : ''}, ${s.duplicates} duplicates, ${s.rejects} rejects, ` +
      `${(s.bytes / 1e6).toFixed(1)} MB in ${s.seconds} s (${s.records_per_second} records/s)`,
  ];
  for (const f of s.failed_sources) lines.push(`source failed: ${f.name}: ${f.error}`);
  return lines.join('\n');
}

function upsertSource(db: Db, url: string, name: string, at: number): number {
  db.prepare(
    `INSERT INTO sources (url, name, last_attempt_at) VALUES (?, ?, ?)
     ON CONFLICT (url) DO UPDATE SET name = excluded.name, last_attempt_at = excluded.last_attempt_at`,
  ).run(url, name, at);
  return (db.prepare('SELECT id FROM sources WHERE url = ?').get(url) as { id: number }).id;
}

function markSource(db: Db, id: number, at: number, error: string | null): void {
  if (error === null) {
    db.prepare('UPDATE sources SET last_success_at = ?, last_error = NULL, consecutive_failures = 0 WHERE id = ?').run(at, id);
  } else {
    db.prepare('UPDATE sources SET last_error = ?, consecutive_failures = consecutive_failures + 1 WHERE id = ?').run(error, id);
  }
}

/** Ingests the segments of one source in listed order. Returns an error text when a segment was refused. */
async function ingestSource(
  db: Db,
  ingester: SegmentIngester,
  source: FeedSource,
  name: string,
  sourceId: number,
  index: FeedIndex,
  http: HttpOptions,
  summary: IngestSummary,
  progress: Progress,
  log: (line: string) => void,
): Promise<string | null> {
  const done = new Map<string, string>();
  for (const row of db.prepare('SELECT path, sha256 FROM segments WHERE source_id = ?').iterate(sourceId) as Iterable<{ path: string; sha256: string }>) {
    done.set(row.path, row.sha256);
  }
  const todo = index.segments.filter((s) => !done.has(s.path));
  summary.segments_skipped += index.segments.length - todo.length;
  for (const s of index.segments) {
    const had = done.get(s.path);
    if (had !== undefined && had !== s.sha256) {
      const error = `segment ${s.path} was ingested with sha256 ${had} but feeds.json now lists ${s.sha256}; segments are immutable, refusing the source from here`;
      summary.refused_segments.push({ source: name, path: s.path, error });
      log(`${name}: ${error}`);
      return error;
    }
  }
  let n = 0;
  for (const seg of todo) {
    n++;
    const label = `${name}: segment ${n}/${todo.length} ${seg.path}`;
    try {
      const counts = await withRetries(
        `${name}: ${seg.path}`,
        http,
        () => ingester.ingest(source, sourceId, seg, (c) => progress.update(`${label}: ${c.lines} lines, ${(c.bytes / 1e6).toFixed(1)} MB`)),
        (attempt, e, d) => log(`${name}: ${seg.path}: ${(e as Error).message}; retry ${attempt} in ${Math.round(d)} ms`),
      );
      summary.segments++;
      summary.bytes += counts.bytes;
      summary.duplicates += counts.duplicates;
      summary.rejects += counts.rejects;
      for (const k of FEED_KINDS) summary.records[k] += counts.records[k];
      if (counts.rejects > 0) log(`${name}: ${seg.path}: ${counts.rejects} rejected line(s) kept in the rejects table`);
    } catch (e) {
      if (e instanceof IntegrityError) {
        const error = `segment ${seg.path} refused: ${e.message}`;
        summary.refused_segments.push({ source: name, path: seg.path, error });
        log(`${name}: ${error}`);
        return error;
      }
      throw e instanceof SourceError ? e : new SourceError(`${seg.path}: ${(e as Error).message}`);
    }
  }
  return null;
}

/** A transaction commits after this many records or this long (see SegmentIngester). */
const GROUP_RECORDS = 250_000;
const GROUP_MS = 2_000;

/** Bytes handed to a parse worker at a time: whole lines, about this many. */
const CHUNK_BYTES = 512 * 1024;

class SegmentIngester {
  private readonly writer: FeedWriter;
  /** Started with the first segment to ingest: a run with nothing new starts no threads. */
  private workerPool: ParserPool | null = null;
  private readonly insertSegment;
  private readonly finishSegment;
  private readonly insertReject;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    private readonly workers: number,
  ) {
    this.writer = new FeedWriter(db);
    this.insertSegment = db.prepare(
      'INSERT INTO segments (source_id, path, sha256, bytes, lines, records, duplicates, rejects, ingested_at) VALUES (?, ?, ?, ?, 0, 0, 0, 0, ?)',
    );
    this.finishSegment = db.prepare('UPDATE segments SET lines = ?, records = ?, duplicates = ?, rejects = ?, min_at = ?, max_at = ? WHERE id = ?');
    this.insertReject = db.prepare('INSERT INTO rejects (source_id, segment_id, line, error, raw, raw_truncated) VALUES (?, ?, ?, ?, ?, ?)');
  }

  private get pool(): ParserPool {
    this.workerPool ??= new ParserPool(this.workers);
    return this.workerPool;
  }

  async close(): Promise<void> {
    await this.workerPool?.close();
    this.workerPool = null;
  }

  // Segments are grouped into transactions: each segment is a savepoint (all or nothing), and the
  // group commits once it holds GROUP_RECORDS records or is GROUP_MS old, and at the end of each
  // source. Feeds often come as many small segments (an hour of one location, say); a commit per
  // segment would rewrite the same B-tree pages over and over.
  private groupStarted = 0;
  private groupRecords = 0;

  /** Commits the segments ingested so far. */
  commit(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
  }

  /** One attempt at one segment, as a savepoint in the open transaction. */
  async ingest(source: FeedSource, sourceId: number, seg: FeedIndex['segments'][number], onProgress: (c: SegmentCounts) => void): Promise<SegmentCounts> {
    const counts: SegmentCounts = { lines: 0, records: zeroRecords(), duplicates: 0, rejects: 0, bytes: 0 };
    const { db, writer, pool } = this;
    if (!db.inTransaction) {
      db.exec('BEGIN IMMEDIATE');
      this.groupStarted = Date.now();
      this.groupRecords = 0;
    }
    db.exec('SAVEPOINT segment');
    writer.startSegment();
    // Results are applied in order as they arrive. After a failure, later results only update the
    // dictionaries (so they stay in step with the workers) and are otherwise dropped.
    let segmentId = 0;
    let stopped = false;
    let applyError: unknown = null;
    let lastProgress = 0;
    pool.onResult((res, encoder) => {
      writer.register(encoder, res.dict);
      if (stopped || applyError !== null) return;
      try {
        writer.writeBatch(res.batch, encoder, segmentId, counts.records);
        for (const [index, error, raw, cut] of res.rejects) {
          counts.rejects++;
          this.insertReject.run(sourceId, segmentId, counts.lines + index + 1, error, raw, cut);
        }
      } catch (e) {
        applyError = e;
      }
      counts.lines += res.lines;
      if (counts.lines - lastProgress >= 50_000) {
        lastProgress = counts.lines;
        onProgress(counts);
      }
    });
    try {
      segmentId = Number(this.insertSegment.run(sourceId, seg.path, seg.sha256, seg.bytes, this.now()).lastInsertRowid);
      const raw = await source.openSegment(seg.path, seg.bytes);
      const hash = createHash('sha256');
      const expected = seg.bytes;
      const tap = async function* (src: AsyncIterable<Buffer>) {
        for await (const chunk of src) {
          counts.bytes += chunk.length;
          if (counts.bytes > expected) throw new IntegrityError(`more than the ${expected} bytes listed in feeds.json`);
          hash.update(chunk);
          yield chunk;
        }
      };
      const consume = async (src: AsyncIterable<Buffer>) => {
        // Bytes are handed on as they are (the workers decode them): whole lines, about CHUNK_BYTES at
        // a time, copied once into a buffer of their own that is transferred, not copied again.
        let parts: Buffer[] = []; // bytes not yet handed on
        let size = 0;
        let whole = 0; // of which whole lines (up to and including the last '\n')
        let skipping = false; // inside an over-long line (already rejected), discarding until its end
        let handedOn = 0;
        const handOn = async (n: number, last = false) => {
          const out = Buffer.allocUnsafeSlow(n);
          let at = 0;
          const rest: Buffer[] = [];
          for (const p of parts) {
            const take = Math.min(p.length, n - at);
            if (take > 0) p.copy(out, at, 0, take);
            at += take;
            if (take < p.length) rest.push(p.subarray(take));
          }
          parts = rest;
          size -= n;
          whole = 0;
          // A segment that fits in one chunk is parsed here: no worker round trip for small segments.
          await pool.submit(out, last && handedOn === 0);
          handedOn++;
        };
        for await (const chunk of src) {
          let c = chunk;
          if (skipping) {
            const nl = c.indexOf(10);
            if (nl < 0) continue;
            c = c.subarray(nl + 1);
            skipping = false;
          }
          parts.push(c);
          size += c.length;
          const nl = c.lastIndexOf(10);
          if (nl >= 0) whole = size - c.length + nl + 1;
          if (size - whole > MAX_LINE_BYTES) {
            // The line being read is already too long: reject it now, keep only its start.
            if (whole > 0) await handOn(whole);
            const start = Buffer.concat(parts).subarray(0, MAX_REJECT_RAW_CHARS * 4).toString('utf8');
            pool.submitResult(rejectsOnly(1, [rejectOf(0, TOO_LONG, start)]));
            parts = [];
            size = 0;
            skipping = true;
          } else if (whole >= CHUNK_BYTES) {
            await handOn(whole);
          }
          if (applyError !== null) throw applyError;
        }
        if (!skipping && size > 0) {
          if (parts[parts.length - 1]![parts[parts.length - 1]!.length - 1] !== 10) {
            parts.push(Buffer.from('\n'));
            size++;
          }
          await handOn(size, true);
        }
        await pool.drain();
        if (applyError !== null) throw applyError;
      };
      try {
        if (seg.path.endsWith('.gz')) await pipeline(raw, tap, createGunzip(), consume);
        else await pipeline(raw, tap, consume);
      } catch (e) {
        // zlib format errors mean the bytes are not what was promised: refuse, do not retry.
        const code = (e as NodeJS.ErrnoException).code;
        if (typeof code === 'string' && code.startsWith('Z_')) throw new IntegrityError(`not valid gzip (${(e as Error).message})`);
        throw e;
      }
      const digest = hash.digest('hex');
      if (counts.bytes !== expected) throw new IntegrityError(`${counts.bytes} bytes, feeds.json lists ${expected}`);
      if (digest !== seg.sha256) throw new IntegrityError(`sha256 ${digest}, feeds.json lists ${seg.sha256}`);
      writer.flush();
      counts.duplicates = writer.duplicates;
      const records = FEED_KINDS.reduce((n, k) => n + counts.records[k], 0);
      this.finishSegment.run(counts.lines, records, counts.duplicates, counts.rejects, writer.minAt, writer.maxAt, segmentId);
      db.exec('RELEASE segment');
      this.groupRecords += records;
      if (this.groupRecords >= GROUP_RECORDS || Date.now() - this.groupStarted >= GROUP_MS) this.commit();
      return counts;
    } catch (e) {
      stopped = true;
      // Let chunks still in the workers come back, so the dictionaries stay in step.
      await pool.drain().catch(() => {});
      if (db.inTransaction) {
        db.exec('ROLLBACK TO segment');
        db.exec('RELEASE segment');
      }
      writer.rolledBack();
      if (pool.failure) {
        // A worker died: its dictionary is gone. Start over with fresh workers.
        await this.close();
        writer.forgetEncoders();
      }
      throw e;
    }
  }
}
