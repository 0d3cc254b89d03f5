// `peppol-snapshot serve`: the edge shim on Node, a local CDN over a snapshot directory
// (docs/architecture.md §3, §5; docs/edge.md). Converts Node requests into Web Requests, runs the
// shim, streams the Response back, writes one access-log line per request on stderr and shuts down
// gracefully on SIGINT/SIGTERM.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { EdgeConfig, RateLimitConfig } from '../config/index.js';
import { matchRoute } from '../api/routes/match.js';
import { createResolve, snapshotInfoReader } from '../edge/resolve.js';
import { inflateSync } from './inflate.js';
import { createHandler, EXPOSED_HEADERS } from '../edge/handler.js';
import { problemDoc, type ProblemDoc } from '../edge/problem.js';
import { KeyFileError, createKeyStore, parseKeyFile } from '../edge/api-keys.js';
import { isSafeFilePath } from '../edge/target.js';
import type { FileReader, FileStat, KeyStore, Resolve } from '../edge/types.js';
import { UsageError } from '../util/errors.js';

export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = '127.0.0.1';
/** In-flight requests get this long to finish after SIGINT/SIGTERM before connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;
/** Largest request header section Node reads (Node's default is 16 KiB): longer targets reach the shim's 414. */
export const MAX_HEADER_BYTES = 64 * 1024;

/** A FileReader over a directory. Paths are checked again here: nothing outside `root` is read. */
export function directoryReader(root: string): FileReader {
  const base = path.resolve(root);
  const inside = (rel: string): string | null => {
    if (!isSafeFilePath(rel)) return null;
    const abs = path.resolve(base, rel);
    return abs.startsWith(base + path.sep) ? abs : null;
  };
  const missing = (e: unknown): boolean => {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG';
  };
  return {
    async read(rel: string): Promise<Uint8Array | null> {
      const abs = inside(rel);
      if (abs === null) return null;
      try {
        return await fs.promises.readFile(abs);
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      }
    },
    async stat(rel: string): Promise<FileStat | null> {
      const abs = inside(rel);
      if (abs === null) return null;
      try {
        const st = await fs.promises.stat(abs);
        return st.isFile() ? { size: st.size, etag: statEtag(st) } : null;
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      }
    },
    async readRange(rel: string, start: number, length: number, etag: string): Promise<ReadableStream<Uint8Array> | null> {
      const abs = inside(rel);
      if (abs === null) return null;
      let fh: fs.promises.FileHandle;
      try {
        fh = await fs.promises.open(abs, 'r');
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      }
      // The open file is the version `stat` saw, or it was replaced since (build renames files into place).
      if (statEtag(await fh.stat()) !== etag) {
        await fh.close();
        return null;
      }
      const stream = fh.createReadStream({ start, end: start + length - 1, highWaterMark: 64 * 1024 }); // closes fh at its end
      // Node's web stream type and the lib's are the same object at run time.
      return Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
    },
    async readPrefix(rel: string, length: number): Promise<Uint8Array | null> {
      const abs = inside(rel);
      if (abs === null) return null;
      let fh: fs.promises.FileHandle | undefined;
      try {
        fh = await fs.promises.open(abs, 'r');
        const buf = new Uint8Array(length);
        const { bytesRead } = await fh.read(buf, 0, length, 0);
        return buf.subarray(0, bytesRead);
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      } finally {
        await fh?.close();
      }
    },
  };
}

/** A file's validator from its inode, size and modification time: build writes a new file and renames it into place. */
function statEtag(st: fs.Stats): string {
  return `"${st.ino.toString(16)}-${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
}

/** Parses `--rate-limit N/SECONDS` or `off`; keyed_multiplier is kept from the config. */
export function parseRateLimit(text: string, base: EdgeConfig['rate_limit']): EdgeConfig['rate_limit'] {
  if (text === 'off') return 'off';
  const m = /^(\d+)\/(\d+)$/.exec(text);
  const n = m ? Number(m[1]) : NaN;
  const s = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(n) || n < 1 || !Number.isSafeInteger(s) || s < 1 || s > 86_400) {
    throw new UsageError(`invalid --rate-limit: ${JSON.stringify(text)}`, [
      '--rate-limit: expected N/SECONDS (N >= 1 requests per SECONDS from 1 to 86400, e.g. 60/60) or "off"',
    ]);
  }
  const multiplier = base === 'off' ? 10 : base.keyed_multiplier;
  const rl: RateLimitConfig = { requests: n, window_seconds: s, keyed_multiplier: multiplier };
  return rl;
}

export function parsePort(text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new UsageError(`invalid --port: ${JSON.stringify(text)}`, ['--port: expected an integer from 0 to 65535 (0: any free port)']);
  }
  return n;
}

/** Loads a key file (format: src/edge/api-keys.ts, docs/edge.md); problems are a usage error. */
export function loadKeyFile(file: string): KeyStore {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read key file ${file}`, [`${path.resolve(file)}: ${(e as Error).message}`]);
  }
  try {
    return createKeyStore(parseKeyFile(text, file));
  } catch (e) {
    if (e instanceof KeyFileError) throw new UsageError(`invalid key file ${file}`, e.problems);
    throw e;
  }
}

export interface ServeOptions {
  /** Snapshot directory (must exist). */
  out: string;
  host: string;
  port: number;
  policy: EdgeConfig;
  keys?: KeyStore;
  resolve?: Resolve;
  routeOf?: (pathname: string) => string | null;
  healthMaxAgeSeconds?: number;
  /**
   * Behind a reverse proxy on the same host: take the client address from the last X-Forwarded-For
   * entry when the connection comes from a loopback address (the proxy), else from the socket.
   */
  trustProxy?: boolean;
  /** Access-log and diagnostics sink (one line, no newline); default stderr. */
  log?: (line: string) => void;
}

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:8787 */
  url: string;
  /** Stops accepting connections and resolves when in-flight requests have finished. */
  close(): Promise<void>;
}

/** Escapes what must not reach a log line raw (controls, quotes, non-ASCII): no log injection. */
function logSafe(s: string): string {
  return s.replace(/[^\x21-\x7e]|["\\]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function clf(d: Date): string {
  const mon = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${mon}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

function isLoopback(addr: string): boolean {
  return addr === '::1' || /^(::ffff:)?127\./.test(addr);
}

/** The client address: the socket peer, or the proxy's last X-Forwarded-For entry (see trustProxy). */
export function clientAddress(req: http.IncomingMessage, trustProxy: boolean): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (!trustProxy || !isLoopback(peer)) return peer;
  const xff = req.headers['x-forwarded-for'];
  const last = (Array.isArray(xff) ? xff.join(',') : (xff ?? '')).split(',').pop()?.trim();
  return last ? last : peer;
}

const WRITE_SLICE = 64 * 1024;

/** Waits until the socket can take more data, or has closed (a vanished client never drains). */
function drainOrClose(res: http.ServerResponse): Promise<void> {
  return new Promise((ok) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      ok();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** The origin-form part of a request target (absolute-form is reduced to its path). */
function originForm(target: string): string {
  const abs = /^https?:\/\/[^/?#]*/i.exec(target);
  const t = abs ? target.slice(abs[0].length) || '/' : target;
  return t.startsWith('/') ? t : '/';
}

export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const info = snapshotInfoReader();
  const handler = createHandler({
    files: directoryReader(opts.out),
    resolve: opts.resolve ?? createResolve({ snapshotInfo: info, inflate: inflateSync }),
    problemBaseUrl: async (files) => (await info(files))?.base_url ?? null,
    policy: opts.policy,
    ...(opts.keys ? { keys: opts.keys } : {}),
    routeOf: opts.routeOf ?? ((pathname: string) => matchRoute(pathname)?.route.id ?? null),
    ...(opts.healthMaxAgeSeconds !== undefined ? { healthMaxAgeSeconds: opts.healthMaxAgeSeconds } : {}),
    onError: (e, request) => log(`error: ${request.method} ${logSafe(request.url)}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
  });
  let origin = '';

  // Request targets up to MAX_HEADER_BYTES reach the shim, which answers a long one itself (414).
  const server = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, async (req, res) => {
    const started = performance.now();
    const raw = req.url ?? '/';
    const method = req.method ?? 'GET';
    const ip = clientAddress(req, opts.trustProxy ?? false);
    let status = 500;
    let bytes = 0;
    req.resume(); // the API takes no request bodies: drain and ignore them
    try {
      const headers = new Headers();
      for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
      // Web Requests refuse CONNECT/TRACE/TRACK: such a request is built as GET and given its real
      // method back, so the shim answers it (405) like any other.
      let request: Request;
      try {
        request = new Request(origin + originForm(raw), { method, headers });
      } catch {
        request = new Request(origin + originForm(raw), { method: 'GET', headers });
        Object.defineProperty(request, 'method', { value: method });
      }
      const response = await handler(request, ip, raw);
      status = response.status;
      const out: Record<string, string | string[]> = {};
      response.headers.forEach((v, k) => (out[k] = v));
      res.writeHead(response.status, out);
      if (response.body && method !== 'HEAD') {
        // Written in slices with backpressure, so a slow client does not make Node buffer a whole
        // body twice and the log counts the bytes really handed to the socket.
        stream: for await (const chunk of response.body) {
          for (let off = 0; off < chunk.length; off += WRITE_SLICE) {
            if (res.destroyed) break stream; // the client went away: stop (cancels the body stream)
            const slice = chunk.subarray(off, off + WRITE_SLICE);
            bytes += slice.length;
            if (!res.write(slice)) await drainOrClose(res);
          }
        }
      }
      if (!res.destroyed) res.end();
    } catch (e) {
      // Headers the Web API refuses (invalid bytes), or the client went away mid-stream.
      if (!res.headersSent) {
        status = 400;
        const body = JSON.stringify({ type: 'about:blank', title: 'Bad Request', status: 400, detail: 'The request could not be read.' });
        res.writeHead(400, { 'content-type': 'application/problem+json', 'access-control-allow-origin': '*', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        bytes = Buffer.byteLength(body);
      } else {
        res.destroy(e instanceof Error ? e : undefined);
      }
    } finally {
      const ms = (performance.now() - started).toFixed(1);
      const ua = req.headers['user-agent'] ?? '-';
      log(`${logSafe(ip)} - - [${clf(new Date())}] "${logSafe(method)} ${logSafe(raw)} HTTP/${req.httpVersion}" ${status} ${bytes} "${logSafe(ua)}" ${ms}ms`);
    }
  });
  server.keepAliveTimeout = 5_000;
  // A request Node's parser refuses never reaches the shim: it is answered here as a problem, with the
  // same CORS and safety headers, so a browser client can read why.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const doc = clientErrorProblem(err.code);
    const body = JSON.stringify(doc);
    const head = [
      `HTTP/1.1 ${doc.status} ${doc.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
      'Content-Type: application/problem+json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `Access-Control-Allow-Origin: ${opts.policy.cors.allow_origin}`,
      `Access-Control-Expose-Headers: ${EXPOSED_HEADERS}`,
      'X-Content-Type-Options: nosniff',
      'Cache-Control: no-store',
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
    log(`- - - [${clf(new Date())}] "-" ${doc.status} ${Buffer.byteLength(body)} "-" client error ${logSafe(err.code ?? 'unknown')}`);
  });

  await new Promise<void>((ok, fail) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') fail(new UsageError(`port ${opts.port} on ${opts.host} is in use`, ['choose another with --port (0: any free port)']));
      else if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND') fail(new UsageError(`cannot listen on ${opts.host}`, ['--host: expected a local address such as 127.0.0.1, ::1 or 0.0.0.0']));
      else fail(e);
    });
    server.listen(opts.port, opts.host, () => ok());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  origin = `http://${host}:${addr.port}`;

  let closing: Promise<void> | null = null;
  return {
    url: origin,
    close() {
      closing ??= new Promise<void>((ok) => {
        server.close(() => ok()); // stop accepting; resolves once every connection has ended
        server.closeIdleConnections(); // idle keep-alive connections would otherwise hold close()
        const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        timer.unref();
      });
      return closing;
    },
  };
}

/**
 * The problem of a request Node's HTTP parser refused: its header section over MAX_HEADER_BYTES (431),
 * or bytes HTTP/1.1 does not allow (a control byte in a header, a raw non-ASCII byte in the target,
 * a malformed line: 400).
 */
export function clientErrorProblem(code: string | undefined): ProblemDoc {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { type: 'about:blank', title: 'Request Header Fields Too Large', status: 431, detail: `The request's header section, target included, exceeds ${MAX_HEADER_BYTES} bytes.` };
  }
  return problemDoc('invalid-request', 'The request could not be read as HTTP/1.1: a control byte in a header, a raw non-ASCII byte in the target, or a malformed line.', null);
}

export interface ServeCommandOptions {
  out: string;
  host?: string;
  port?: string;
  rateLimit?: string;
  access?: string;
  keys?: string;
  healthMaxAge?: string;
  trustProxy?: boolean;
}

/** Runs `peppol-snapshot serve` until SIGINT/SIGTERM; resolves after a graceful shutdown. */
export async function runServe(flags: ServeCommandOptions, config: EdgeConfig, log: (line: string) => void): Promise<void> {
  const policy: EdgeConfig = structuredClone(config);
  if (flags.rateLimit !== undefined) policy.rate_limit = parseRateLimit(flags.rateLimit, policy.rate_limit);
  if (flags.access !== undefined) {
    if (flags.access !== 'open' && flags.access !== 'keyed') throw new UsageError(`invalid --access: ${JSON.stringify(flags.access)}`, ['--access: expected "open" or "keyed"']);
    policy.access.mode = flags.access;
  }
  if (policy.access.mode === 'keyed' && flags.keys === undefined) {
    throw new UsageError('keyed access needs API keys', ['--keys: required with --access keyed (or edge.access.mode "keyed"): a file of key hashes, see docs/edge.md']);
  }
  const keys = flags.keys !== undefined ? loadKeyFile(flags.keys) : undefined;
  let healthMaxAgeSeconds: number | undefined;
  if (flags.healthMaxAge !== undefined) {
    healthMaxAgeSeconds = Number(flags.healthMaxAge);
    if (!/^\d+$/.test(flags.healthMaxAge) || healthMaxAgeSeconds < 1) throw new UsageError(`invalid --health-max-age: ${JSON.stringify(flags.healthMaxAge)}`, ['--health-max-age: expected a positive number of seconds']);
  }
  const out = path.resolve(flags.out);
  if (!fs.existsSync(out) || !fs.statSync(out).isDirectory()) {
    throw new UsageError(`snapshot directory not found: ${flags.out}`, [`${out} is not a directory; run "peppol-snapshot build" first or pass --out DIR`]);
  }

  const server = await startServer({
    out,
    host: flags.host ?? DEFAULT_HOST,
    port: flags.port !== undefined ? parsePort(flags.port) : DEFAULT_PORT,
    policy,
    ...(keys ? { keys } : {}),
    ...(healthMaxAgeSeconds !== undefined ? { healthMaxAgeSeconds } : {}),
    trustProxy: flags.trustProxy ?? false,
    log,
  });
  const rl = policy.rate_limit === 'off' ? 'off' : `${policy.rate_limit.requests}/${policy.rate_limit.window_seconds}s`;
  log(`peppol-snapshot serve: listening on ${server.url} (snapshot ${out}; access ${policy.access.mode}${keys ? `, ${keys.size} key(s)` : ''}; rate limit ${rl})`);
  log(`  status page: ${server.url}/`);
  log(`  try: ${server.url}/v1/network  ${server.url}/v1/hosts  ${server.url}/v1/incidents?status=open  ${server.url}/v1/events?limit=5  ${server.url}/v1/participants?country=BE&limit=3  ${server.url}/v1/sml  ${server.url}/openapi.json`);

  await new Promise<void>((ok) => {
    const stop = (signal: string) => {
      log(`peppol-snapshot serve: ${signal}: finishing in-flight requests`);
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      void server.close().then(ok);
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
  log('peppol-snapshot serve: stopped');
}
