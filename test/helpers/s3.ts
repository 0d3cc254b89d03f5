// A real S3-protocol server for the tests (s3rver on 127.0.0.1), a fault-injecting proxy in front of it,
// and a record of every write the server carried out, with server-side times, for the checker in
// test/helpers/publish-checker.ts.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { Rng } from '../../src/demo/prng.js';
import type { WriteOp } from './publish-checker.js';

export interface S3Server {
  endpoint: string;
  /**
   * Every object under `prefix` (relative key -> md5 hex), read from the server's storage directory.
   * s3rver cannot list more than 1,000 keys correctly: it pages in the order of its directory walk, not
   * in key order, and its v2 continuation tokens use DES, which OpenSSL 3 refuses.
   */
  objects(bucket: string, prefix: string): Map<string, string>;
  close(): Promise<void>;
}

const OBJECT_SUFFIX = '._S3rver_object';

/** Credentials s3rver accepts; the tests put them in the environment (the SDK's default chain). */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

/** `base`: where its storage directory goes (default the temporary directory). */
export async function startS3rver(buckets: string[], base: string = os.tmpdir()): Promise<S3Server> {
  const dir = fs.mkdtempSync(path.join(base, 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: buckets.map((name) => ({ name })) });
  const info = await server.run();
  return {
    endpoint: `http://127.0.0.1:${info.port}`,
    objects(bucket, prefix) {
      const out = new Map<string, string>();
      const base = path.join(dir, bucket);
      const walk = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          const abs = path.join(d, e.name);
          if (e.isDirectory()) walk(abs);
          else if (e.name.endsWith(OBJECT_SUFFIX)) {
            const key = path.relative(base, abs).split(path.sep).join('/').slice(0, -OBJECT_SUFFIX.length);
            if (key.startsWith(prefix)) out.set(key.slice(prefix.length), createHash('md5').update(fs.readFileSync(abs)).digest('hex'));
          }
        }
      };
      if (fs.existsSync(base)) walk(base);
      return out;
    },
    async close() {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Faults {
  /** Share of requests answered 500/503 without reaching the server. */
  fail: number;
  /** Share of requests the server carries out but whose answer is lost (500 to the client). */
  lostAck: number;
  /** Share of requests the server carries out, answered only after `slowMs` (past the client's timeout). */
  slow: number;
  slowMs: number;
}

export const NO_FAULTS: Faults = { fail: 0, lostAck: 0, slow: 0, slowMs: 0 };

export interface FaultProxy {
  endpoint: string;
  /** Writes the server carried out (successful PUTs and deleted keys), in the order they finished. */
  readonly ops: WriteOp[];
  faults: Faults;
  /** Requests that got an injected fault. */
  injected: number;
  /** Answer CopyObject with 501 NotImplemented, as a store without it does; counts the copies refused. */
  refuseCopy: boolean;
  copiesRefused: number;
  close(): Promise<void>;
}

/** Bodies the checker needs (manifests, shards, index roots and nodes); other bodies are not kept. */
function keepsBody(key: string, body: Buffer): boolean {
  const base = key.slice(key.lastIndexOf('/') + 1);
  if (base === 'manifest.json' || key.includes('/m/') || key.startsWith('m/')) return true;
  if (key.includes('/i/') || key.startsWith('i/')) return true;
  return body.subarray(0, 9).toString() === '{"level":';
}

const xmlUnescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

function errorXml(code: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>injected by the test proxy</Message></Error>`;
}

/**
 * A proxy on 127.0.0.1 in front of `upstream` (path-style requests to `bucket`). It forwards a request
 * only once its whole body has arrived, so a client killed mid-upload writes nothing; faults are drawn
 * from a seeded generator.
 */
export async function startFaultProxy(upstream: string, bucket: string, seed = 1): Promise<FaultProxy> {
  const rng = new Rng(seed);
  const rand = () => rng.float();
  const up = new URL(upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const proxy: FaultProxy = { endpoint: '', ops: [], faults: { ...NO_FAULTS }, injected: 0, refuseCopy: false, copiesRefused: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('error', () => {});
    req.on('end', () => {
      const body = Buffer.concat(parts);
      if (proxy.refuseCopy && req.method === 'PUT' && req.headers['x-amz-copy-source'] !== undefined) {
        proxy.copiesRefused++;
        res.writeHead(501, { 'content-type': 'application/xml' });
        res.end(errorXml('NotImplemented'));
        return;
      }
      const f = proxy.faults;
      const r = rand();
      let fault: 'fail' | 'lost' | 'slow' | null = null;
      if (r < f.fail) fault = 'fail';
      else if (r < f.fail + f.lostAck) fault = 'lost';
      else if (r < f.fail + f.lostAck + f.slow) fault = 'slow';
      if (fault) proxy.injected++;
      if (fault === 'fail') {
        const code = rand() < 0.5 ? 503 : 500;
        res.writeHead(code, { 'content-type': 'application/xml' });
        res.end(errorXml(code === 503 ? 'SlowDown' : 'InternalError'));
        return;
      }
      const start = performance.now();
      const headers = { ...req.headers, host: up.host };
      const upReq = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers, agent }, (upRes) => {
        const out: Buffer[] = [];
        upRes.on('data', (c: Buffer) => out.push(c));
        upRes.on('end', () => {
          const end = performance.now();
          const status = upRes.statusCode ?? 0;
          const copySource = req.headers['x-amz-copy-source'];
          record(req.method ?? 'GET', req.url ?? '/', body, Buffer.concat(out), status, start, end, typeof copySource === 'string' ? copySource : undefined);
          const send = () => {
            if (res.destroyed) return;
            if (fault === 'lost') {
              res.writeHead(500, { 'content-type': 'application/xml' });
              res.end(errorXml('InternalError'));
              return;
            }
            res.writeHead(status, upRes.headers);
            res.end(Buffer.concat(out));
          };
          if (fault === 'slow') setTimeout(send, f.slowMs).unref();
          else send();
        });
      });
      upReq.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      upReq.end(body);
    });
  });

  function record(method: string, url: string, body: Buffer, response: Buffer, status: number, start: number, end: number, copySource?: string): void {
    if (status < 200 || status >= 300) return;
    const u = new URL(url, 'http://proxy');
    const prefix = `/${bucket}/`;
    if (!u.pathname.startsWith(prefix)) return;
    const key = decodeURIComponent(u.pathname.slice(prefix.length));
    if (method === 'PUT' && key !== '' && copySource !== undefined) {
      // CopyObject: the source is "bucket/key", URL-encoded.
      const from = decodeURIComponent(copySource.replace(/^\//, '')).slice(bucket.length + 1);
      proxy.ops.push({ kind: 'put', key, start, end, copyOf: from });
    } else if (method === 'PUT' && key !== '') {
      proxy.ops.push({ kind: 'put', key, start, end, ...(keepsBody(key, body) ? { body: new Uint8Array(body) } : {}) });
    } else if (method === 'DELETE' && key !== '') {
      proxy.ops.push({ kind: 'delete', key, start, end });
    } else if (method === 'POST' && u.searchParams.has('delete')) {
      // DeleteObjects: the keys the server reports deleted (Quiet mode reports only errors, so every
      // requested key that is not listed as an error).
      const requested = [...body.toString('utf8').matchAll(/<Key>([\s\S]*?)<\/Key>/g)].map((m) => xmlUnescape(m[1]!));
      const errors = new Set([...response.toString('utf8').matchAll(/<Error>[\s\S]*?<Key>([\s\S]*?)<\/Key>/g)].map((m) => xmlUnescape(m[1]!)));
      for (const k of requested) if (!errors.has(k)) proxy.ops.push({ kind: 'delete', key: k, start, end });
    }
  }

  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('proxy address');
  proxy.endpoint = `http://127.0.0.1:${addr.port}`;
  proxy.close = () =>
    new Promise<void>((ok) => {
      agent.destroy();
      server.closeAllConnections();
      server.close(() => ok());
    });
  return proxy;
}
