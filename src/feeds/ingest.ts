// `peppol-snapshot ingest`: pulls every source's feeds.json, ingests the segments not yet ingested.
//
// Guarantees:
// - A segment is ingested in one transaction together with its `segments` row: a run killed in the
//   middle of a segment leaves nothing of it, and the next run ingests it again from the start.
// - sha256 and size are verified over the bytes as stored while streaming, before COMMIT; a segment
//   whose bytes do not match is refused whole, and the source stops there (segments are ordered).
// - Memory does not grow with segment size: bytes are streamed, lines are handled as they arrive, and
//   an over-long line is rejected without being held whole.
// - A line that is not JSON or fails its schema becomes a `rejects` row and never aborts the segment.
// - A source that stays unreachable after retries is reported; the other sources still ingest.
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import { openDb, type Db } from '../db/index.js';
import { silentProgress, type Progress } from '../util/progress.js';
import { FEED_KINDS, parseFeedLine, type FeedIndex, type FeedKind } from './schema.js';
import { isHttpUrl, openSource, SourceError, withRetries, type FeedSource, type HttpOptions } from './source.js';
import { FeedWriter } from './store.js';

/** Longest line accepted; a longer one is rejected (and only its first bytes are kept). */
export const MAX_LINE_CHARS = 1 << 20;
/** How much of a rejected line's raw text is stored. */
export const MAX_REJECT_RAW_CHARS = 64 * 1024;

export interface IngestOptions {
  dbPath: string;
  sources: { name: string; url: string }[];
  http: HttpOptions;
  progress?: Progress;
  log?: (line: string) => void;
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
  const ingester = new SegmentIngester(db, now);
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
        const refused = await ingestSource(db, ingester, source, src.name, sourceId, index, opts.http, summary, progress, log);
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

class SegmentIngester {
  private readonly writer: FeedWriter;
  private readonly insertSegment;
  private readonly finishSegment;
  private readonly insertReject;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {
    this.writer = new FeedWriter(db);
    this.insertSegment = db.prepare(
      'INSERT INTO segments (source_id, path, sha256, bytes, lines, records, duplicates, rejects, ingested_at) VALUES (?, ?, ?, ?, 0, 0, 0, 0, ?)',
    );
    this.finishSegment = db.prepare('UPDATE segments SET lines = ?, records = ?, duplicates = ?, rejects = ?, min_at = ?, max_at = ? WHERE id = ?');
    this.insertReject = db.prepare('INSERT INTO rejects (source_id, segment_id, line, error, raw, raw_truncated) VALUES (?, ?, ?, ?, ?, ?)');
  }

  /** One attempt at one segment, all in one transaction. */
  async ingest(source: FeedSource, sourceId: number, seg: FeedIndex['segments'][number], onProgress: (c: SegmentCounts) => void): Promise<SegmentCounts> {
    const counts: SegmentCounts = { lines: 0, records: zeroRecords(), duplicates: 0, rejects: 0, bytes: 0 };
    const db = this.db;
    db.exec('BEGIN IMMEDIATE');
    this.writer.resetSpan();
    try {
      const segmentId = Number(this.insertSegment.run(sourceId, seg.path, seg.sha256, seg.bytes, this.now()).lastInsertRowid);
      const raw = await source.openSegment(seg.path);
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
      const reject = (line: number, error: string, text: string) => {
        counts.rejects++;
        const truncated = text.length > MAX_REJECT_RAW_CHARS;
        this.insertReject.run(sourceId, segmentId, line, error, truncated ? text.slice(0, MAX_REJECT_RAW_CHARS) : text, truncated ? 1 : 0);
      };
      const handleLine = (text: string, line: number) => {
        if (text.length === 0 || text.trim().length === 0) return; // blank lines carry nothing
        const r = parseFeedLine(text);
        if (!r.ok) return reject(line, r.error, text);
        counts.records[r.record.kind]++;
        if (this.writer.write(r.record, segmentId) === 'duplicate') counts.duplicates++;
      };
      const consume = async (src: AsyncIterable<Buffer>) => {
        const decoder = new StringDecoder('utf8');
        let rest = '';
        let skipping = false; // inside an over-long line, discarding until its end
        let lastProgress = 0;
        const feed = (text: string) => {
          let start = 0;
          for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
            counts.lines++;
            if (skipping) skipping = false;
            else {
              const line = rest + text.slice(start, nl);
              if (line.length > MAX_LINE_CHARS) reject(counts.lines, `line longer than ${MAX_LINE_CHARS} characters`, line);
              else handleLine(stripCr(line), counts.lines);
            }
            rest = '';
            start = nl + 1;
          }
          if (skipping) return;
          rest += text.slice(start);
          if (rest.length > MAX_LINE_CHARS) {
            reject(counts.lines + 1, `line longer than ${MAX_LINE_CHARS} characters`, rest);
            rest = '';
            skipping = true;
          }
        };
        for await (const chunk of src) {
          feed(decoder.write(chunk));
          if (counts.lines - lastProgress >= 50_000) {
            lastProgress = counts.lines;
            onProgress(counts);
          }
        }
        feed(decoder.end());
        if (rest.length > 0 || skipping) {
          counts.lines++;
          if (!skipping) handleLine(stripCr(rest), counts.lines);
        }
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
      const records = FEED_KINDS.reduce((n, k) => n + counts.records[k], 0);
      this.finishSegment.run(counts.lines, records, counts.duplicates, counts.rejects, this.writer.minAt, this.writer.maxAt, segmentId);
      db.exec('COMMIT');
      return counts;
    } catch (e) {
      if (db.inTransaction) db.exec('ROLLBACK');
      this.writer.reset();
      throw e;
    }
  }
}

function stripCr(s: string): string {
  return s.endsWith('\r') ? s.slice(0, -1) : s;
}

