// Feed sources: a directory or an http(s) URL holding feeds.json and the segments it lists.
// HTTP uses undici with connect/header/body timeouts; transient failures (connection errors,
// timeouts, 5xx, 429) are retried with exponential backoff by the caller through `isTransient`.
//
// `readSegments` reads segments one after the other, ahead of the writer: it verifies each one's
// size and sha256 and cuts its (gunzipped) bytes into chunks of whole lines. It runs on a reader
// thread (parse-worker.ts) so that reading, hashing and gunzip cost the writer's thread nothing, or
// on the ingesting thread itself with `workers: 0`. An HTTP source's segments are fetched ahead of
// the one being read, several at once (`FetchAhead`): waiting on the network, and on retries, then
// overlaps, while the bytes are still read, verified and applied strictly in order.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Agent } from 'undici';
import { MAX_LINE_BYTES, MAX_REJECT_RAW_CHARS } from './chunk.js';
import { FeedIndex, formatIssues } from './schema.js';
import { retrying } from '../util/retry.js';

export interface HttpOptions {
  timeout_ms: number;
  retries: number;
  retry_base_ms: number;
  /** Segment requests of an HTTP source in flight at once (default DEFAULT_CONCURRENCY). */
  concurrency?: number;
}

/** Default of `ingest.concurrency`. */
export const DEFAULT_CONCURRENCY = 8;

export interface FeedSource {
  readonly url: string;
  /** Whether segments are worth fetching ahead, several at once (a network source). */
  readonly fetchAhead?: boolean;
  /** Reads and validates feeds.json. */
  readIndex(): Promise<FeedIndex>;
  /** Opens one segment as a byte stream (the bytes as stored: gzip bytes for .gz); `bytes` is its listed size. */
  openSegment(path: string, bytes: number): Promise<Readable>;
  close(): Promise<void>;
}

/** A failure worth retrying: the same request may well succeed a moment later. */
export class TransientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransientError';
  }
}

export class SourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceError';
  }
}

/** Bytes that are not what feeds.json promised: never retried, the segment is refused whole. */
export class IntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IntegrityError';
  }
}

const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
]);

// undici is loaded on first use of an HTTP source: a directory source (and every parse worker, which
// shares this bundle's imports) does without its start-up cost.
let undici: typeof import('undici') | null = null;
async function loadUndici(): Promise<typeof import('undici')> {
  undici ??= await import('undici');
  return undici;
}

export function isTransient(e: unknown): boolean {
  if (e instanceof TransientError) return true;
  // Without undici loaded there are no undici errors.
  if (undici && e instanceof undici.errors.UndiciError) return true;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_CODES.has(code);
}

export function isHttpUrl(s: string): boolean {
  return /^https?:\/\//i.test(s);
}

export function openSource(url: string, http: HttpOptions): FeedSource {
  return isHttpUrl(url) ? new HttpSource(url, http) : new DirSource(url);
}

function parseIndex(text: string, where: string): FeedIndex {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new SourceError(`${where}: feeds.json is not JSON (${(e as Error).message})`);
  }
  const r = FeedIndex.safeParse(value);
  if (!r.success) throw new SourceError(`${where}: feeds.json does not match the feed index format: ${formatIssues(r.error.issues)}`);
  const seen = new Set<string>();
  for (const s of r.data.segments) {
    if (seen.has(s.path)) throw new SourceError(`${where}: feeds.json lists segment ${s.path} twice`);
    seen.add(s.path);
  }
  return r.data;
}

class DirSource implements FeedSource {
  private readonly root: string;
  constructor(readonly url: string) {
    this.root = resolve(url);
  }
  async readIndex(): Promise<FeedIndex> {
    let text: string;
    try {
      text = await readFile(resolve(this.root, 'feeds.json'), 'utf8');
    } catch (e) {
      throw new SourceError(`${this.url}: cannot read feeds.json (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    return parseIndex(text, this.url);
  }
  async openSegment(path: string, bytes: number): Promise<Readable> {
    const file = resolve(this.root, path);
    if (!file.startsWith(this.root + sep)) throw new SourceError(`${this.url}: segment path ${path} leaves the source directory`);
    // Read buffers sized to the segment (a read stream allocates a whole buffer per read): small
    // segments are common, and 1 MiB buffers for each would be mostly garbage.
    const stream = createReadStream(file, { highWaterMark: Math.min(1 << 20, Math.max(16 * 1024, bytes + 1)) });
    // Surface a missing file as an error of this call, not of the first read.
    await new Promise<void>((ok, fail) => {
      stream.once('open', () => ok());
      stream.once('error', (e) => fail(new SourceError(`${this.url}: cannot open segment ${path} (${(e as NodeJS.ErrnoException).code ?? e.message})`)));
    });
    return stream;
  }
  async close(): Promise<void> {}
}

class HttpSource implements FeedSource {
  readonly fetchAhead = true;
  private readonly base: URL;
  private agent: Agent | null = null;
  constructor(
    readonly url: string,
    private readonly http: HttpOptions,
  ) {
    this.base = new URL(url.endsWith('/') ? url : `${url}/`);
  }

  private resolve(path: string): URL {
    return new URL(path.split('/').map(encodeURIComponent).join('/'), this.base);
  }

  private async get(path: string, highWaterMark?: number) {
    const target = this.resolve(path);
    const { Agent, request } = await loadUndici();
    const timeout = this.http.timeout_ms;
    this.agent ??= new Agent({ connect: { timeout }, headersTimeout: timeout, bodyTimeout: timeout, keepAliveTimeout: 4_000 });
    const res = await request(target, {
      method: 'GET',
      dispatcher: this.agent,
      // The hash is over the bytes as stored: ask for no transfer compression.
      headers: { 'accept-encoding': 'identity', 'user-agent': 'peppol-snapshot ingest' },
      ...(highWaterMark === undefined ? {} : { highWaterMark }),
    });
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    res.body.resume(); // drain so the connection can be reused
    const what = `${target.href}: HTTP ${res.statusCode}`;
    if (res.statusCode >= 500 || res.statusCode === 429 || res.statusCode === 408) throw new TransientError(what);
    throw new SourceError(what);
  }

  async readIndex(): Promise<FeedIndex> {
    const res = await this.get('feeds.json');
    return parseIndex(await res.body.text(), this.url);
  }

  /**
   * The body is buffered up to the segment's size, at most AHEAD_SEGMENT_BYTES, while nobody reads
   * it (a segment fetched ahead); beyond that undici stops reading the connection until it is read.
   */
  async openSegment(path: string, bytes: number): Promise<Readable> {
    const res = await this.get(path, Math.max(16 * 1024, Math.min(bytes, AHEAD_SEGMENT_BYTES)));
    return res.body;
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }
}

export { retryDelay } from '../util/retry.js';

/** Retries `fn` on transient errors with exponential backoff and jitter: base, 2×base, 4×base, ... */
export function withRetries<T>(
  what: string,
  http: HttpOptions,
  fn: (attempt: number) => Promise<T>,
  onRetry?: (attempt: number, error: unknown, delayMs: number) => void,
): Promise<T> {
  return retrying(http, isTransient, fn, {
    ...(onRetry ? { onRetry } : {}),
    // With retries configured, say that they were spent; with none, the error is the first failure's.
    giveUp: (e, attempts) => (http.retries > 0 ? new SourceError(`${what}: still failing after ${attempts} attempts: ${(e as Error).message}`) : (e as Error)),
  });
}

// ---------------------------------------------------------------------------------------------
// Reading segments ahead of the writer.

export type SegmentRef = FeedIndex['segments'][number];

/** A reader's failure, as it crosses threads: the kind decides whether the segment is retried. */
export interface ReadError {
  kind: 'integrity' | 'transient' | 'source' | 'other';
  message: string;
}

export function toReadError(e: unknown): ReadError {
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof IntegrityError) return { kind: 'integrity', message };
  if (isTransient(e)) return { kind: 'transient', message };
  if (e instanceof SourceError) return { kind: 'source', message };
  return { kind: 'other', message };
}

export function fromReadError(e: ReadError): Error {
  switch (e.kind) {
    case 'integrity':
      return new IntegrityError(e.message);
    case 'transient':
      return new TransientError(e.message);
    case 'source':
      return new SourceError(e.message);
    default:
      return new Error(e.message);
  }
}

/**
 * Where a reader's output goes, in order. For each segment: `start`, then its chunks (and the starts
 * of over-long lines) in order, then `end` once size and sha256 are verified, or `error` (after
 * which the reader stops). `chunk` resolves when the reader may go on (back pressure). `retry`
 * says that fetching a segment (maybe one ahead) failed and is retried, for the log.
 */
export interface SegmentSink {
  start(index: number): void;
  chunk(index: number, bytes: Uint8Array): Promise<void> | void;
  tooLong(index: number, start: string): void;
  end(index: number, bytes: number): void;
  error(index: number, error: ReadError): void;
  retry?(index: number, message: string): void;
}

/** Thrown inside a read that was asked to stop; never reported. */
class Stopped extends Error {}

/** The UTF-8 byte order mark. */
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Bytes handed on at a time: whole lines, about this many. */
export const CHUNK_BYTES = 512 * 1024;

/**
 * Reads `segments` from index `first` on, in order, until the end, an error, or `stopped()`.
 * Memory stays flat: bytes are streamed, and an over-long line is skipped to its end once its start
 * has been reported. A source that fetches ahead (HTTP) has its segments fetched by a FetchAhead
 * with `http` (concurrency and retries); the others are opened one by one as they are reached.
 */
export async function readSegments(
  source: FeedSource,
  segments: readonly SegmentRef[],
  first: number,
  sink: SegmentSink,
  stopped: () => boolean,
  http?: HttpOptions,
): Promise<void> {
  const ahead = source.fetchAhead && http ? new FetchAhead(source, segments, first, http, (i, message) => sink.retry?.(i, message)) : null;
  try {
    for (let i = first; i < segments.length && !stopped(); i++) {
      sink.start(i);
      const seg = segments[i]!;
      const open = ahead ? () => ahead.open(i) : () => source.openSegment(seg.path, seg.bytes);
      try {
        sink.end(i, await readSegment(open, seg, (bytes) => sink.chunk(i, bytes), (start) => sink.tooLong(i, start), stopped));
      } catch (e) {
        if (!(e instanceof Stopped)) sink.error(i, toReadError(e));
        return;
      }
    }
  } finally {
    ahead?.close();
  }
}

/**
 * A segment fetched ahead holds at most this much of its body in memory until it is read; beyond
 * that the connection stops being read (TCP flow control holds the rest at the server).
 */
export const AHEAD_SEGMENT_BYTES = 1024 * 1024;
/**
 * What is fetched ahead of the segment being read: at most AHEAD_BYTES (each segment counted with
 * its listed size, at most AHEAD_SEGMENT_BYTES) and at most AHEAD_SEGMENTS segments. This bounds
 * memory (and connections) whatever the size or number of segments; the second bound keeps the
 * bookkeeping of many tiny segments small. 16 MiB of the small demo's segments (about 105 KB each)
 * is 160 segments: enough that waiting for retries overlaps (see docs/ingest.md).
 */
export const AHEAD_BYTES = 16 * 1024 * 1024;
export const AHEAD_SEGMENTS = 256;

/** One segment's fetch: its response (once headers arrived, retries spent), and how it went since. */
interface Fetch {
  /** Resolves with the body stream, or rejects with the last error once retries are spent. */
  readonly response: Promise<Readable>;
  /** Its share of AHEAD_BYTES. */
  readonly cost: number;
  /** The body failed while it waited to be read (it is then retried from the ingesting side). */
  error: Error | null;
}

/**
 * Fetches the segments of a source ahead of the one being read, at most `concurrency` requests in
 * flight (p-limit), within AHEAD_BYTES / AHEAD_SEGMENTS. Each segment's request is retried on its
 * own (connection errors, timeouts, 408, 429, 5xx; `retries`, exponential backoff); a request
 * waiting for its retry holds no slot, so one failing segment does not stall the others. The
 * segments are still read in order: `open(i)` hands over segment i's response when it is the next.
 */
export class FetchAhead {
  private readonly limit: LimitFunction;
  private readonly fetches = new Map<number, Fetch>();
  /** The next segment to start fetching. */
  private next: number;
  /** The segment being read (not counted in aheadBytes). */
  private head: number;
  private aheadBytes = 0;
  private closed = false;

  constructor(
    private readonly source: FeedSource,
    private readonly segments: readonly SegmentRef[],
    first: number,
    private readonly http: HttpOptions,
    private readonly onRetry: (index: number, message: string) => void,
  ) {
    this.limit = pLimit({ concurrency: Math.max(1, http.concurrency ?? DEFAULT_CONCURRENCY), rejectOnClear: true });
    this.next = first;
    this.head = first;
  }

  /** Segment `index`'s body, once fetched; `index` is the segment after the one opened before. */
  async open(index: number): Promise<Readable> {
    this.head = index;
    this.fill();
    const f = this.fetches.get(index);
    if (!f) throw new Error(`internal: segment ${index} was not fetched`);
    this.fetches.delete(index);
    this.aheadBytes -= f.cost;
    this.fill();
    const body = await f.response;
    if (f.error) {
      body.destroy();
      throw f.error;
    }
    return body;
  }

  /** Starts fetching the segments after the head, within the bounds. */
  private fill(): void {
    while (!this.closed && this.next < this.segments.length) {
      const i = this.next;
      const cost = Math.min(this.segments[i]!.bytes, AHEAD_SEGMENT_BYTES);
      if (i > this.head && (this.fetches.size >= AHEAD_SEGMENTS || this.aheadBytes + cost > AHEAD_BYTES)) return;
      this.next++;
      this.aheadBytes += cost;
      this.fetches.set(i, this.start(i, cost));
    }
  }

  private start(index: number, cost: number): Fetch {
    const seg = this.segments[index]!;
    const response = withRetries(
      seg.path,
      this.http,
      () =>
        this.limit(() => {
          if (this.closed) throw new Stopped();
          return this.source.openSegment(seg.path, seg.bytes);
        }),
      (attempt, e, delay) => {
        if (!this.closed) this.onRetry(index, `${(e as Error).message}; retry ${attempt} in ${Math.round(delay)} ms`);
      },
    );
    const f: Fetch = { response, cost, error: null };
    response.then(
      (body) => {
        // Until it is read, an error of the body (connection reset, timeout) is kept, not thrown.
        body.on('error', (e) => (f.error ??= e));
        if (this.closed && this.fetches.get(index) === f) body.destroy();
      },
      () => {}, // seen by open(), or by nobody once closed
    );
    return f;
  }

  /** Stops fetching: queued requests are dropped, responses fetched ahead (and those still to come) discarded. */
  close(): void {
    this.closed = true;
    this.limit.clearQueue();
    // (A body destroyed unread reports an abort: its error listener, set above, takes it.)
    for (const f of this.fetches.values()) f.response.then((body) => body.destroy(), () => {});
  }
}

/** Reads one segment; returns its size once size and sha256 match feeds.json, else throws. */
async function readSegment(
  open: () => Promise<Readable>,
  seg: SegmentRef,
  chunk: (bytes: Uint8Array) => Promise<void> | void,
  tooLong: (start: string) => void,
  stopped: () => boolean,
): Promise<number> {
  const raw = await open();
  const hash = createHash('sha256');
  const expected = seg.bytes;
  let size = 0;
  const tap = async function* (src: AsyncIterable<Buffer>) {
    for await (const c of src) {
      if (stopped()) throw new Stopped();
      size += c.length;
      if (size > expected) throw new IntegrityError(`more than the ${expected} bytes listed in feeds.json`);
      hash.update(c);
      yield c;
    }
  };
  const consume = async (src: AsyncIterable<Buffer>) => {
    // Whole lines, about CHUNK_BYTES at a time, copied once into a buffer of their own that the
    // parse worker receives without a further copy.
    let parts: Buffer[] = []; // bytes not yet handed on
    let held = 0;
    let whole = 0; // of which whole lines (up to and including the last '\n')
    let skipping = false; // inside an over-long line (already reported), discarding until its end
    const handOn = async (n: number) => {
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
      held -= n;
      whole = 0;
      await chunk(out);
    };
    // A UTF-8 byte order mark at the very start of the segment is dropped (RFC 8259 lets a parser
    // ignore one there); anywhere else it is part of its line, which is then not JSON.
    let head: Buffer | null = Buffer.alloc(0);
    for await (const c0 of src) {
      let c: Buffer = c0;
      if (head !== null) {
        c = head.length > 0 ? Buffer.concat([head, c]) : c;
        if (c.length < BOM.length && BOM.subarray(0, c.length).equals(c)) {
          head = c; // too short to tell yet
          continue;
        }
        head = null;
        if (c.subarray(0, BOM.length).equals(BOM)) c = c.subarray(BOM.length);
      }
      if (skipping) {
        const nl = c.indexOf(10);
        if (nl < 0) continue;
        c = c.subarray(nl + 1);
        skipping = false;
      }
      parts.push(c);
      held += c.length;
      const nl = c.lastIndexOf(10);
      if (nl >= 0) whole = held - c.length + nl + 1;
      if (held - whole > MAX_LINE_BYTES) {
        // The line being read is already too long: report it now, keep only its start.
        if (whole > 0) await handOn(whole);
        tooLong(Buffer.concat(parts).subarray(0, MAX_REJECT_RAW_CHARS * 4).toString('utf8'));
        parts = [];
        held = 0;
        skipping = true;
      } else if (whole >= CHUNK_BYTES) {
        await handOn(whole);
      }
    }
    if (head !== null && head.length > 0) {
      // The whole segment is a prefix of a byte order mark (one or two bytes): a line of its own.
      parts.push(head);
      held += head.length;
    }
    if (!skipping && held > 0) {
      const last = parts[parts.length - 1]!;
      if (last[last.length - 1] !== 10) {
        parts.push(Buffer.from('\n'));
        held++;
      }
      await handOn(held);
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
  if (size !== expected) throw new IntegrityError(`${size} bytes, feeds.json lists ${expected}`);
  if (digest !== seg.sha256) throw new IntegrityError(`sha256 ${digest}, feeds.json lists ${seg.sha256}`);
  return size;
}
