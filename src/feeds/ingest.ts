// `peppol-snapshot ingest`: pulls every source's feeds.json, ingests the segments not yet ingested.
//
// Guarantees:
// - A segment is ingested atomically together with its `segments` row (a savepoint; segments are
//   grouped into transactions for throughput): a run killed in the middle of a segment leaves nothing
//   of it, and the next run ingests it again from the start.
// - sha256 and size are verified over the bytes as stored while streaming, before COMMIT; a segment
//   whose bytes do not match is refused whole, and the source stops there (segments are ordered).
// - Memory does not grow with segment size: bytes are streamed, lines are handled as they arrive, and
//   an over-long line is rejected without being held whole. HTTP segments are fetched ahead several at
//   once, within a bound in bytes and segments, and applied in feed order.
// - Any line that is not a valid record becomes a `rejects` row and never aborts the segment.
// - A segment whose content (sha256) was ingested before, from any source or path, is skipped.
// - A source that stays unreachable after retries is reported; the other sources still ingest.
import { resolve } from 'node:path';
import { emptyWal, openDb, type Db } from '../db/index.js';
import { silentProgress, type Progress } from '../util/progress.js';
import { rejectOf, rejectsOnly, TOO_LONG } from './chunk.js';
import { defaultWorkers, ParserPool, ReaderThread } from './parser-pool.js';
import { FEED_KINDS, type FeedIndex, type FeedKind } from './schema.js';
import {
  fromReadError,
  IntegrityError,
  isHttpUrl,
  isTransient,
  openSource,
  readSegments,
  retryDelay,
  SourceError,
  withRetries,
  CHUNK_BYTES,
  DEFAULT_CONCURRENCY,
  type HttpOptions,
  type ReadError,
  type SegmentRef,
  type SegmentSink,
} from './source.js';
import { FeedWriter } from './store.js';

export { IntegrityError } from './source.js';

export interface IngestOptions {
  dbPath: string;
  sources: { name: string; url: string }[];
  http: HttpOptions;
  progress?: Progress;
  log?: (line: string) => void;
  /** Parse worker threads (default: one per CPU core); 0 reads and parses on this thread. */
  workers?: number;
  /**
   * A source with less than this much new data (bytes, gzip counted eightfold) is read and parsed on
   * this thread whatever `workers` says: starting threads costs more than they save (default 16 MiB).
   */
  inlineBelowBytes?: number;
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
  /** Probe records older than the raw-probe pruning horizon, dropped (see FeedWriter.pastHorizon). */
  probes_past_horizon: number;
}

interface SegmentCounts {
  lines: number;
  records: Record<FeedKind, number>;
  duplicates: number;
  rejects: number;
  bytes: number;
  pastHorizon: number;
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
    probes_past_horizon: 0,
  };
  const ingester = new SegmentIngester(db, now, opts.workers ?? defaultWorkers(), opts.inlineBelowBytes ?? INLINE_BELOW_BYTES);
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
        const refused = await ingestSource(db, ingester, url, src.name, sourceId, index, opts.http, summary, progress, log).finally(() =>
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
    emptyWal(db);
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
  if (s.probes_past_horizon > 0) lines.push(`${s.probes_past_horizon} probe record(s) older than the raw-probe pruning horizon dropped`);
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
  url: string,
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
  for (const s of index.segments) {
    const had = done.get(s.path);
    if (had !== undefined && had !== s.sha256) {
      const error = `segment ${s.path} was ingested with sha256 ${had} but feeds.json now lists ${s.sha256}; segments are immutable, refusing the source from here`;
      summary.refused_segments.push({ source: name, path: s.path, error });
      log(`${name}: ${error}`);
      return error;
    }
  }
  // A segment is known by its content: one whose bytes were ingested before, from any source under
  // any path (or listed twice here), is not ingested again. A source moved to a new directory or
  // URL, or renamed, thus brings back nothing (not even raw probes pruned since). The same bytes
  // read another way (listed with .gz once and without once) are not the same content.
  const ingested = db.prepare("SELECT 1 FROM segments WHERE sha256 = ? AND (substr(path, -3) = '.gz') = ? LIMIT 1").pluck();
  const listed = new Set<string>();
  const todo = index.segments.filter((s) => {
    const gz = s.path.endsWith('.gz');
    const key = `${s.sha256}${gz ? '.gz' : ''}`;
    const fresh = !done.has(s.path) && !listed.has(key) && ingested.get(s.sha256, gz ? 1 : 0) === undefined;
    listed.add(key);
    return fresh;
  });
  summary.segments_skipped += index.segments.length - todo.length;
  const onSegment = (i: number, counts: SegmentCounts | null) => {
    const seg = todo[i]!;
    if (counts === null) {
      progress.update(`${name}: segment ${i + 1}/${todo.length} ${seg.path}`);
      return;
    }
    summary.segments++;
    summary.bytes += counts.bytes;
    summary.duplicates += counts.duplicates;
    summary.rejects += counts.rejects;
    summary.probes_past_horizon += counts.pastHorizon;
    for (const k of FEED_KINDS) summary.records[k] += counts.records[k];
    if (counts.rejects > 0) log(`${name}: ${seg.path}: ${counts.rejects} rejected line(s) kept in the rejects table`);
    if (counts.pastHorizon > 0) log(`${name}: ${seg.path}: ${counts.pastHorizon} probe record(s) older than the raw-probe pruning horizon dropped (that period is rolled up)`);
  };
  // Segments are read ahead; a failed one stops the reading there. An HTTP segment's request is
  // retried on its own while fetched ahead (FetchAhead in source.ts); a transient failure that reaches
  // here (a body cut off while read) retries from that segment with exponential backoff (the count
  // starts over once a later segment is reached).
  let next = 0;
  let attempt = 0;
  while (next < todo.length) {
    const r = await ingester.ingest(
      url,
      http,
      sourceId,
      todo,
      next,
      onSegment,
      (i, lines) => progress.update(`${name}: segment ${i + 1}/${todo.length} ${todo[i]!.path}: ${lines} lines`),
      (i, message) => log(`${name}: ${todo[i]!.path}: ${message}`),
    );
    if (r.failure === null) return null;
    const { index: failed, error: e } = r.failure;
    if (failed > next) attempt = 0;
    next = failed;
    const seg = todo[failed]!;
    if (e instanceof IntegrityError) {
      const error = `segment ${seg.path} refused: ${e.message}`;
      summary.refused_segments.push({ source: name, path: seg.path, error });
      log(`${name}: ${error}`);
      return error;
    }
    if (isTransient(e) && attempt < http.retries) {
      const delay = retryDelay(http, attempt);
      attempt++;
      log(`${name}: ${seg.path}: ${e.message}; retry ${attempt} in ${Math.round(delay)} ms`);
      await new Promise((ok) => setTimeout(ok, delay));
      continue;
    }
    if (isTransient(e) && http.retries > 0) throw new SourceError(`${name}: ${seg.path}: still failing after ${attempt + 1} attempts: ${e.message}`);
    throw e instanceof SourceError ? e : new SourceError(`${seg.path}: ${e.message}`);
  }
  return null;
}

const INLINE_BELOW_BYTES = 16 * 1024 * 1024;

/**
 * Chunks read ahead of the writer, per parse worker, in bytes (the reader's credits). This thread
 * stops handing chunks to the workers while it writes a buffer of rows into SQLite (a few tenths of
 * a second at the end of each segment); the workers go on parsing what they were handed before, and
 * with too little of it they would sit idle until the writer is done. With three chunks per worker
 * the benchmark's main thread was busy 62% of the time; with 16 MiB per worker (more than a worker
 * parses during such a write) 81%, and the run took 9.2 s instead of 10.2 s. It bounds memory
 * (about 64 chunks for two workers), whatever the segment size.
 */
const READ_AHEAD_BYTES = 16 * 1024 * 1024;

/** A transaction commits after this many records or this long (see SegmentIngester). */
const GROUP_RECORDS = 1_000_000;
const GROUP_MS = 10_000;

/** The ordered stream's markers besides parsed chunks: a segment starts, ends (verified) or failed. */
type Marker = { start: number } | { end: number; bytes: number } | { failed: number; error: ReadError };

/** What one run over a source's segments came to: the first failure, if any. */
interface IngestRun {
  failure: { index: number; error: Error } | null;
}

class SegmentIngester {
  private readonly writer: FeedWriter;
  /** Started when first needed: a run with nothing new (or little) starts no threads. */
  private workerPool: ParserPool<Marker> | null = null;
  private reader: ReaderThread | null = null;
  /** Parses on this thread; one for the whole run, since the writer keeps its encoder's dictionary. */
  private inlinePool = new ParserPool<Marker>(0);
  private readonly insertSegment;
  private readonly finishSegment;
  private readonly insertReject;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
    private readonly workers: number,
    private readonly inlineBelowBytes: number,
  ) {
    this.writer = new FeedWriter(db);
    this.insertSegment = db.prepare(
      'INSERT INTO segments (source_id, path, sha256, bytes, lines, records, duplicates, rejects, ingested_at) VALUES (?, ?, ?, ?, 0, 0, 0, 0, ?)',
    );
    this.finishSegment = db.prepare('UPDATE segments SET lines = ?, records = ?, duplicates = ?, rejects = ?, min_at = ?, max_at = ? WHERE id = ?');
    this.insertReject = db.prepare('INSERT INTO rejects (source_id, segment_id, line, error, raw, raw_truncated) VALUES (?, ?, ?, ?, ?, ?)');
  }

  /** The threads for `segs` from `first` on, or the inline pool when there is little to do. */
  private poolFor(segs: SegmentRef[], first: number): ParserPool<Marker> {
    let bytes = 0;
    for (let i = first; i < segs.length; i++) bytes += segs[i]!.bytes * (segs[i]!.path.endsWith('.gz') ? 8 : 1);
    if (this.workers === 0 || bytes < this.inlineBelowBytes) {
      if (this.inlinePool.failure) {
        // It failed (and its dictionary with it): start over, as with dead workers.
        this.inlinePool = new ParserPool<Marker>(0);
        this.writer.forgetEncoder(0);
      }
      return this.inlinePool;
    }
    this.workerPool ??= new ParserPool<Marker>(this.workers);
    return this.workerPool;
  }

  async close(): Promise<void> {
    await this.workerPool?.close();
    this.workerPool = null;
    await this.reader?.close();
    this.reader = null;
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

  /**
   * Ingests `segs` from index `first` on, each as a savepoint in the open transaction, until the
   * end or the first failure. Reading runs ahead (the reader verifies each segment's size and sha256
   * before its end marker), parsing runs on the workers, and this thread applies the results in
   * order: segment after segment, chunk after chunk.
   */
  async ingest(
    url: string,
    http: HttpOptions,
    sourceId: number,
    segs: SegmentRef[],
    first: number,
    onSegment: (index: number, counts: SegmentCounts | null) => void,
    onProgress: (index: number, lines: number) => void,
    onRetry: (index: number, message: string) => void,
  ): Promise<IngestRun> {
    const { db, writer } = this;
    const pool = this.poolFor(segs, first);
    let failure: IngestRun['failure'] = null;
    // The segment being applied (-1: none) and its counts.
    let current = -1;
    let segmentId = 0;
    let counts: SegmentCounts = newCounts();
    let lastProgress = 0;
    const reader = pool.threads > 0 ? (this.reader ??= new ReaderThread()) : null;

    const rollback = () => {
      if (current >= 0 && db.inTransaction) {
        db.exec('ROLLBACK TO segment');
        db.exec('RELEASE segment');
      }
      current = -1;
      writer.rolledBack();
    };
    const fail = (index: number, error: Error) => {
      rollback();
      failure = { index, error };
      reader?.stop();
    };

    // Applied strictly in order. After a failure, results only update the dictionaries (so they
    // stay in step with the workers) and are otherwise dropped.
    pool.onDeliver((d) => {
      if (d.result) {
        if (reader && d.encoder !== 0) reader.credit();
        writer.register(d.encoder, d.result.dict);
        if (failure !== null || current < 0) return;
        try {
          const res = d.result;
          writer.writeBatch(res.batch, d.encoder, segmentId, counts.records);
          for (const [index, error, raw, cut] of res.rejects) {
            counts.rejects++;
            this.insertReject.run(sourceId, segmentId, counts.lines + index + 1, error, raw, cut);
          }
          counts.lines += res.lines;
          if (counts.lines - lastProgress >= 50_000) {
            lastProgress = counts.lines;
            onProgress(current, counts.lines);
          }
        } catch (e) {
          fail(current, e as Error);
        }
        return;
      }
      if (failure !== null) return;
      const m = d.marker;
      try {
        if ('start' in m) {
          if (!db.inTransaction) {
            db.exec('BEGIN IMMEDIATE');
            this.groupStarted = Date.now();
            this.groupRecords = 0;
          }
          db.exec('SAVEPOINT segment');
          current = m.start;
          const seg = segs[current]!;
          counts = newCounts();
          lastProgress = 0;
          writer.startSegment();
          segmentId = Number(this.insertSegment.run(sourceId, seg.path, seg.sha256, seg.bytes, this.now()).lastInsertRowid);
          onSegment(current, null);
        } else if ('end' in m) {
          counts.bytes = m.bytes;
          writer.flush();
          counts.duplicates = writer.duplicates;
          counts.pastHorizon = writer.pastHorizon;
          const records = FEED_KINDS.reduce((n, k) => n + counts.records[k], 0);
          this.finishSegment.run(counts.lines, records, counts.duplicates, counts.rejects, writer.minAt, writer.maxAt, segmentId);
          db.exec('RELEASE segment');
          const done = current;
          current = -1;
          this.groupRecords += records;
          if (this.groupRecords >= GROUP_RECORDS || Date.now() - this.groupStarted >= GROUP_MS) this.commit();
          onSegment(done, counts);
        } else {
          fail(m.failed, fromReadError(m.error));
        }
      } catch (e) {
        fail(current >= 0 ? current : 'start' in m ? m.start : first, e as Error);
      }
    });

    const sink: SegmentSink = {
      start: (index) => pool.submitMarker({ start: index }),
      chunk: (_index, bytes) => {
        if (failure === null && pool.failure === null) pool.submit(bytes);
      },
      tooLong: (_index, start) => {
        if (failure === null) pool.submitResult(rejectsOnly(1, [rejectOf(0, TOO_LONG, start)]));
      },
      end: (index, bytes) => pool.submitMarker({ end: index, bytes }),
      error: (index, error) => pool.submitMarker({ failed: index, error }),
      retry: (index, message) => {
        if (failure === null) onRetry(index, message);
      },
    };
    try {
      if (reader) {
        // Read ahead by READ_AHEAD_BYTES per worker (see there).
        const options: HttpOptions = { timeout_ms: http.timeout_ms, retries: http.retries, retry_base_ms: http.retry_base_ms, concurrency: http.concurrency ?? DEFAULT_CONCURRENCY };
        const credits = Math.max(4, Math.round((pool.threads * READ_AHEAD_BYTES) / CHUNK_BYTES));
        await Promise.race([reader.read(url, options, segs, first, credits, sink), pool.failed]);
      } else {
        const source = openSource(url, http);
        try {
          await readSegments(source, segs, first, sink, () => failure !== null, http);
        } finally {
          await source.close();
        }
      }
      await pool.drain();
    } catch (e) {
      // A worker or the reader died: its dictionary is gone. Start over with fresh threads.
      await pool.drain().catch(() => {});
      const at = current >= 0 ? current : first;
      if (failure === null) fail(at, e as Error);
      await this.close();
      writer.forgetWorkerEncoders();
    }
    return { failure };
  }
}

function newCounts(): SegmentCounts {
  return { lines: 0, records: zeroRecords(), duplicates: 0, rejects: 0, bytes: 0, pastHorizon: 0 };
}
