// Feed sources: a directory or an http(s) URL holding feeds.json and the segments it lists.
// HTTP uses undici with connect/header/body timeouts; transient failures (connection errors,
// timeouts, 5xx, 429) are retried with exponential backoff by the caller through `isTransient`.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { Agent, errors as undiciErrors, request } from 'undici';
import { FeedIndex, formatIssues } from './schema.js';

export interface HttpOptions {
  timeout_ms: number;
  retries: number;
  retry_base_ms: number;
}

export interface FeedSource {
  readonly url: string;
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

export function isTransient(e: unknown): boolean {
  if (e instanceof TransientError) return true;
  if (e instanceof undiciErrors.UndiciError) return true;
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
  private readonly base: URL;
  private readonly agent: Agent;
  constructor(
    readonly url: string,
    private readonly http: HttpOptions,
  ) {
    this.base = new URL(url.endsWith('/') ? url : `${url}/`);
    this.agent = new Agent({
      connect: { timeout: http.timeout_ms },
      headersTimeout: http.timeout_ms,
      bodyTimeout: http.timeout_ms,
      keepAliveTimeout: 4_000,
    });
  }

  private resolve(path: string): URL {
    return new URL(path.split('/').map(encodeURIComponent).join('/'), this.base);
  }

  private async get(path: string) {
    const target = this.resolve(path);
    const res = await request(target, {
      method: 'GET',
      dispatcher: this.agent,
      // The hash is over the bytes as stored: ask for no transfer compression.
      headers: { 'accept-encoding': 'identity', 'user-agent': 'peppol-snapshot ingest' },
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

  async openSegment(path: string): Promise<Readable> {
    const res = await this.get(path);
    return res.body;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Retries `fn` on transient errors with exponential backoff and jitter: base, 2×base, 4×base, ... */
export async function withRetries<T>(
  what: string,
  http: HttpOptions,
  fn: (attempt: number) => Promise<T>,
  onRetry?: (attempt: number, error: unknown, delayMs: number) => void,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!isTransient(e) || attempt >= http.retries) {
        if (isTransient(e) && http.retries > 0) {
          throw new SourceError(`${what}: still failing after ${attempt + 1} attempts: ${(e as Error).message}`);
        }
        throw e;
      }
      const delay = http.retry_base_ms * 2 ** attempt * (0.75 + Math.random() * 0.5);
      onRetry?.(attempt + 1, e, delay);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
