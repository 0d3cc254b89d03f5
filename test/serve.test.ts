// `peppol-snapshot serve` end to end: the built CLI (dist/) on 127.0.0.1 with a free port, real HTTP.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../src/api/json.js';
import { openApiDocument } from '../src/api/openapi.js';
import { componentSchemas } from '../src/api/openapi-schemas.js';
import { defaultConfig } from '../src/config/index.js';
import { policyOptions } from '../src/edge/openapi.js';
import { runCli, startServe as startServeCli, type CliResult, type Served } from './helpers/cli.js';
import { tempDir } from './helpers/feeds.js';

const running: Served[] = [];
afterAll(async () => {
  for (const s of running) if (s.child.exitCode === null) s.child.kill('SIGKILL');
});

const BIG_BYTES = 16 * 1024 * 1024;
/** The file served as it is (verbatim) that the tests of streaming make large. */
const BIG_FILE = '.well-known/api-catalog';
const BIG_PATH = '/.well-known/api-catalog';
const BASE_URL = 'https://api.example';

/** openapi.json as build writes it for the default configuration (its policy and base URL). */
const STORED_OPENAPI = jsonBody(openApiDocument({ ...policyOptions(defaultConfig().edge), baseUrl: BASE_URL, serverUrl: BASE_URL, schemas: componentSchemas() }));

/** A hand-made snapshot: the files the composers of /v1/network, /v1/hosts and the discovery documents read. */
function snapshotDir(): string {
  const dir = tempDir('serve-');
  fs.mkdirSync(path.join(dir, 'v1/hosts'), { recursive: true });
  const json = (v: unknown) => `${JSON.stringify(v)}\n`;
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ generated_at: new Date().toISOString(), files: [] }));
  fs.writeFileSync(path.join(dir, 'snapshot.json'), json({ generated_at: new Date().toISOString(), base_url: BASE_URL }));
  fs.writeFileSync(path.join(dir, 'v1/network.json'), json({ hosts: { up: 2, down: 0, degraded: 0 }, open_incidents: 0 }));
  fs.writeFileSync(path.join(dir, 'v1/hosts.json'), json({ items: [] }));
  fs.writeFileSync(path.join(dir, 'openapi.json'), STORED_OPENAPI);
  // a large file served as it is, in one streamed response
  fs.mkdirSync(path.join(dir, '.well-known'));
  fs.writeFileSync(path.join(dir, BIG_FILE), Buffer.alloc(BIG_BYTES, 0x20));
  fs.writeFileSync(path.join(path.dirname(dir), `${path.basename(dir)}-secret.json`), '{"secret":true}');
  return dir;
}

/** Starts `serve` and resolves once it prints the URL it listens on. */
async function serve(args: string[]): Promise<Served> {
  const s = await startServeCli(['--port', '0', ...args]);
  running.push(s);
  return s;
}

/** A raw HTTP request (no URL normalisation by the client). */
function rawRequest(base: string, target: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const u = new URL(base);
  return new Promise((ok, fail) => {
    const req = http.request({ host: u.hostname, port: u.port, path: target, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => ok({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

async function stop(s: Served): Promise<CliResult> {
  s.child.kill('SIGTERM');
  return s.done;
}

describe('peppol-snapshot serve', () => {
  it('serves files with CORS everywhere, preflight, 405, HEAD, ETag/304, health and an access log', async () => {
    const dir = snapshotDir();
    const s = await serve(['--out', dir, '--rate-limit', 'off']);

    const ok = await fetch(`${s.url}/v1/network`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ hosts: { up: 2, down: 0, degraded: 0 }, open_incidents: 0 });
    expect(ok.headers.get('content-type')).toBe('application/json');
    const etag = ok.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);

    const notModified = await fetch(`${s.url}/v1/network`, { headers: { 'If-None-Match': etag } });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe('');

    const head = await rawRequest(s.url, '/v1/network', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(String(fs.statSync(path.join(dir, 'v1/network.json')).size));
    expect(head.headers.etag).toBe(etag);

    const preflight = await fetch(`${s.url}/v1/hosts`, { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'x-api-key' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('Authorization, X-API-Key, If-None-Match');
    expect(preflight.headers.get('access-control-max-age')).toBe('86400');

    const post = await fetch(`${s.url}/v1/network`, { method: 'POST', body: '{"x":1}' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(post.headers.get('content-type')).toBe('application/problem+json');
    expect(await post.json()).toMatchObject({ status: 405, title: 'Method not allowed', type: 'https://api.example/problems/method-not-allowed' });
    const trace = await rawRequest(s.url, '/v1/network', 'TRACE');
    expect(trace.status).toBe(405);

    const missing = await fetch(`${s.url}/v1/hosts/unknown.example`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');

    const health = await fetch(`${s.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok', service: 'peppol-snapshot' });
    expect(await (await fetch(`${s.url}/health/db`)).json()).toMatchObject({ status: 'ok', service: 'peppol-snapshot', db: true, fresh: true });

    for (const r of [ok, notModified, preflight, post, missing, health]) expect(r.headers.get('access-control-allow-origin')).toBe('*');
    for (const r of [head, trace]) expect(r.headers['access-control-allow-origin']).toBe('*');

    const result = await stop(s);
    expect(result.code).toBe(0);
    const size = fs.statSync(path.join(dir, 'v1/network.json')).size;
    expect(s.stderr()).toMatch(new RegExp(`^127\\.0\\.0\\.1 - - \\[\\d{2}/\\w{3}/\\d{4}:\\d{2}:\\d{2}:\\d{2} \\+0000\\] "GET /v1/network HTTP/1\\.1" 200 ${size} "[^"]*" \\d+\\.\\dms$`, 'm'));
    expect(s.stderr()).toMatch(/"POST \/v1\/network HTTP\/1\.1" 405 \d+ /);
  });

  it('rejects hostile paths with 400 and never serves a file outside the snapshot', async () => {
    const dir = snapshotDir();
    const s = await serve(['--out', dir, '--rate-limit', 'off']);
    const secret = `${path.basename(dir)}-secret.json`;
    for (const target of [`/../${secret}`, `/v1/../../${secret}`, `/%2e%2e/${secret}`, `/v1/%2E%2E/%2e%2e/${secret}`, '/v1/hosts/..%2f..%2fsecret', '/v1/hosts/a%5c..', '/v1/network%00', '/v1/%zz', '/v1/hosts/%c3%28', '/v1//network', '/v1/hosts?q=%00']) {
      const res = await rawRequest(s.url, target);
      expect(res.status, target).toBe(400);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.body).not.toContain('secret":true');
    }
    const long = await rawRequest(s.url, `/v1/hosts?q=${'x'.repeat(3000)}`);
    expect(long.status).toBe(414);
    expect((await stop(s)).code).toBe(0);
  });

  it('answers requests that Node rejects before the shim as problems with CORS (raw socket)', async () => {
    const s = await serve(['--out', snapshotDir(), '--rate-limit', 'off']);
    const u = new URL(s.url);
    /** Writes bytes as they are on one connection and reads the whole answer (the server closes it). */
    const raw = (bytes: Buffer): Promise<string> =>
      new Promise((resolve, reject) => {
        const sock = net.connect(Number(u.port), u.hostname, () => sock.end(bytes));
        const parts: Buffer[] = [];
        sock.on('data', (d: Buffer) => parts.push(d));
        sock.on('error', reject);
        sock.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
        sock.setTimeout(10_000, () => sock.destroy(new Error('no answer')));
      });
    const cases: Array<[string, Buffer, number]> = [
      ['a raw non-ASCII byte in the target', Buffer.concat([Buffer.from('GET /v1/net'), Buffer.from([0xff]), Buffer.from('work HTTP/1.1\r\nHost: x\r\n\r\n')]), 400],
      ['a control byte in a header value', Buffer.from('GET /v1/network HTTP/1.1\r\nHost: x\r\nX-Test: a\u0001b\r\n\r\n', 'latin1'), 400],
      ['a target over the header limit', Buffer.from(`GET /v1/hosts?q=${'x'.repeat(70 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431],
    ];
    for (const [what, bytes, status] of cases) {
      const answer = await raw(bytes);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head!.split('\r\n')[0], what).toBe(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`);
      expect(head!.toLowerCase(), what).toContain('content-type: application/problem+json');
      expect(head!.toLowerCase(), what).toContain('access-control-allow-origin: *');
      const doc = JSON.parse(body!) as { status: number; title: string; detail: string };
      expect(doc.status, what).toBe(status);
      expect(doc.detail.length, what).toBeGreaterThan(0);
    }
    // A target between the shim's limit and Node's now reaches the shim: 414 from the shim, not 431 from Node.
    const long = await rawRequest(s.url, `/v1/hosts?q=${'x'.repeat(20 * 1024)}`);
    expect(long.status).toBe(414);
    expect(long.headers['access-control-allow-origin']).toBe('*');
    expect((await stop(s)).code).toBe(0);
  });

  it('answers 429 with Retry-After once the window quota is used (--rate-limit 5/60 and the default 60/60)', async () => {
    const dir = snapshotDir();
    const s = await serve(['--out', dir, '--rate-limit', '5/60']);
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${s.url}/v1/network`);
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-policy')).toBe('"anonymous";q=5;w=60');
      remaining.push(r.headers.get('ratelimit-remaining')!);
      await r.arrayBuffer();
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const over = await fetch(`${s.url}/v1/network`);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('access-control-allow-origin')).toBe('*');
    expect(await over.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', status: 429 });
    // without --trust-proxy a forged X-Forwarded-For does not buy a new quota
    expect((await fetch(`${s.url}/v1/network`, { headers: { 'X-Forwarded-For': '203.0.113.50' } })).status).toBe(429);
    expect((await stop(s)).code).toBe(0);

    // behind a local proxy (--trust-proxy) each forwarded client has its own quota
    const p = await serve(['--out', dir, '--rate-limit', '2/60', '--trust-proxy']);
    const xff = (ip: string) => ({ headers: { 'X-Forwarded-For': `198.51.100.99, ${ip}` } });
    const seq = [];
    for (const ip of ['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.2']) seq.push((await fetch(`${p.url}/health`, xff(ip))).status);
    expect(seq).toEqual([200, 200, 429, 200]);
    expect((await stop(p)).code).toBe(0);
    expect(p.stderr()).toMatch(/^203\.0\.113\.2 - - /m);

    const d = await serve(['--out', dir]);
    for (let i = 0; i < 60; i++) expect((await fetch(`${d.url}/health`)).status).toBe(200);
    const r = await fetch(`${d.url}/health`);
    expect(r.status).toBe(429);
    expect(r.headers.get('ratelimit')).toMatch(/^"anonymous";r=0;t=\d+$/);
    expect((await stop(d)).code).toBe(0);
  });

  it('keyed access: 403 without a key, 200 with a valid key of the tier; keys are read as hashes', async () => {
    const dir = snapshotDir();
    const keyFile = path.join(tempDir('keys-'), 'keys.jsonl');
    const sha = (k: string) => createHash('sha256').update(k).digest('hex');
    fs.writeFileSync(keyFile, `# test keys\n{"sha256":"${sha('pk_live_ops')}","tiers":["network"],"label":"ops"}\n`);
    const s = await serve(['--out', dir, '--access', 'keyed', '--keys', keyFile]);
    expect(s.stderr()).toContain('access keyed, 1 key(s)');
    const denied = await fetch(`${s.url}/v1/hosts`);
    expect(denied.status).toBe(403);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(denied.headers.get('access-control-allow-origin')).toBe('*');
    expect((await fetch(`${s.url}/v1/hosts`, { headers: { Authorization: 'Bearer pk_live_ops' } })).status).toBe(200);
    expect((await fetch(`${s.url}/v1/hosts`, { headers: { 'X-API-Key': 'pk_live_ops' } })).status).toBe(200);
    expect((await fetch(`${s.url}/v1/hosts`, { headers: { 'X-API-Key': sha('pk_live_ops') } })).status).toBe(403);
    expect((await fetch(`${s.url}/v1/participants`, { headers: { 'X-API-Key': 'pk_live_ops' } })).status).toBe(403); // market tier
    expect((await fetch(`${s.url}/v1/network`)).status).toBe(200); // keyless
    // the type of the 403 resolves, without a key, to its page
    const type = ((await (await fetch(`${s.url}/v1/participants`, { headers: { 'X-API-Key': 'pk_live_ops' } })).json()) as { type: string }).type;
    expect(type).toBe('https://api.example/problems/insufficient-tier');
    const page = await fetch(`${s.url}${new URL(type).pathname}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    expect(await page.text()).toContain('<h1>API key tier too low</h1>');
    expect((await fetch(`${s.url}/problems/nope`)).status).toBe(404);
    const keyed = await fetch(`${s.url}/v1/network`, { headers: { 'X-API-Key': 'pk_live_ops' } });
    expect(keyed.headers.get('ratelimit-policy')).toBe('"keyed";q=600;w=60');
    expect((await stop(s)).code).toBe(0);
  });

  it('/openapi.json describes the policy in force (--access, --rate-limit) and the origin serving it', async () => {
    type Op = { security?: unknown[]; responses: Record<string, { content?: Record<string, { 'x-problem-types'?: string[] }> }>; 'x-access-tier'?: string };
    type Doc = { servers: unknown; security: unknown[]; info: { description: string }; paths: Record<string, { get: Op }> };
    const dir = snapshotDir();
    const keyFile = path.join(tempDir('keys-'), 'keys.jsonl');
    fs.writeFileSync(keyFile, `{"sha256":"${createHash('sha256').update('pk_live_ops').digest('hex')}","tiers":["network"]}\n`);
    const types = (op: Op, status: string) => op.responses[status]?.content?.['application/problem+json']?.['x-problem-types'];

    // keyed, 5 requests per 60 s: the snapshot's openapi.json says open and 60 per 60 s
    const k = await serve(['--out', dir, '--access', 'keyed', '--keys', keyFile, '--rate-limit', '5/60']);
    const res = await fetch(`${k.url}/openapi.json`); // keyless: no key needed
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    const text = await res.text();
    const keyed = JSON.parse(text) as Doc;
    expect(keyed.servers).toEqual([{ url: k.url }]);
    expect(k.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(keyed.security).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }]); // required: no {} alternative
    expect(keyed.info.description).toContain('Access mode "keyed"');
    expect(keyed.info.description).toContain('Rate limit: 5 requests per 60 seconds');
    for (const [p, tier] of [['/v1/hosts', 'network'], ['/v1/participants', 'market'], ['/v1/aps/{key}/churn', 'market']] as const) {
      const op = keyed.paths[p]!.get;
      expect(op['x-access-tier'], p).toBe(tier);
      expect(op.security, p).toBeUndefined();
      expect(types(op, '403'), p).toEqual([`${BASE_URL}/problems/api-key-required`, `${BASE_URL}/problems/insufficient-tier`]);
      expect(types(op, '429'), p).toEqual(['https://iana.org/assignments/http-problem-types#quota-exceeded']);
    }
    for (const p of ['/v1/network', '/health', '/openapi.json']) {
      const op = keyed.paths[p]!.get;
      expect(op.responses['403'], p).toBeUndefined();
      expect(op.security, p).toContainEqual({});
      expect(op['x-access-tier'], p).toBeUndefined();
    }
    const head = await rawRequest(k.url, '/openapi.json', 'HEAD');
    expect([head.status, head.body, head.headers['content-length'], head.headers.etag]).toEqual([200, '', String(Buffer.byteLength(text)), res.headers.get('etag')]);
    expect((await stop(k)).code).toBe(0);

    // open, no rate limit
    const o = await serve(['--out', dir, '--access', 'open', '--rate-limit', 'off']);
    const open = (await (await fetch(`${o.url}/openapi.json`)).json()) as Doc;
    expect(open.servers).toEqual([{ url: o.url }]);
    expect(open.security).toContainEqual({});
    expect(open.info.description).toContain('Access mode "open"');
    expect(open.info.description).not.toContain('Rate limit');
    for (const [p, item] of Object.entries(open.paths)) {
      expect(item.get.responses['403'], p).toBeUndefined();
      expect(item.get.responses['429'], p).toBeUndefined();
      expect(item.get['x-access-tier'], p).toBeUndefined();
    }
    // the same snapshot with its own policy: the stored document but for its servers
    expect((await stop(o)).code).toBe(0);
    const d = await serve(['--out', dir]);
    const own = (await (await fetch(`${d.url}/openapi.json`)).json()) as Record<string, unknown>;
    expect(own).toEqual({ ...(JSON.parse(new TextDecoder().decode(STORED_OPENAPI)) as Record<string, unknown>), servers: [{ url: d.url }] });
    expect((await stop(d)).code).toBe(0);
  });

  it('a stored openapi.json without components.schemas is a 500 internal-error problem, logged', async () => {
    for (const broken of ['{"openapi":"3.1.1","paths":{}}', '\u0000not json', '{"components":{"schemas":[]}}']) {
      const dir = snapshotDir();
      fs.writeFileSync(path.join(dir, 'openapi.json'), broken);
      const s = await serve(['--out', dir, '--rate-limit', 'off']);
      const r = await fetch(`${s.url}/openapi.json`);
      expect(r.status, broken).toBe(500);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(await r.json()).toMatchObject({ type: `${BASE_URL}/problems/internal-error`, status: 500, instance: '/openapi.json' });
      expect((await stop(s)).code).toBe(0);
      expect(s.stderr()).toMatch(/^error: GET http:\/\/127\.0\.0\.1:\d+\/openapi\.json: Error: openapi\.json (is not a JSON document|has no components\.schemas object)/m);
    }
  });

  it('shuts down gracefully on SIGTERM: the in-flight response completes, then exit 0', async () => {
    const dir = snapshotDir();
    const s = await serve(['--out', dir, '--rate-limit', 'off']);
    const u = new URL(s.url);
    const received = await new Promise<number>((ok, fail) => {
      const req = http.get({ host: u.hostname, port: u.port, path: BIG_PATH, agent: false }, (res) => {
        let n = 0;
        res.pause(); // a slow client: the server is mid-response when the signal arrives
        s.child.kill('SIGTERM');
        setTimeout(() => {
          res.on('data', (c: Buffer) => (n += c.length));
          res.on('end', () => ok(n));
          res.resume();
        }, 300);
      });
      req.on('error', fail);
    });
    expect(received).toBe(BIG_BYTES);
    const result = await s.done;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('SIGTERM: finishing in-flight requests');
    expect(result.stderr).toMatch(new RegExp(`"GET /\\.well-known/api-catalog HTTP/1\\.1" 200 ${BIG_BYTES} `));
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
  });

  it('a client that goes away mid-response is logged and does not hold the server', async () => {
    const dir = snapshotDir();
    const s = await serve(['--out', dir, '--rate-limit', 'off']);
    const u = new URL(s.url);
    await new Promise<void>((ok, fail) => {
      const req = http.get({ host: u.hostname, port: u.port, path: BIG_PATH, agent: false }, (res) => {
        res.pause();
        setTimeout(() => {
          req.destroy();
          ok();
        }, 100);
      });
      req.on('error', () => {});
      req.on('response', () => {});
      setTimeout(() => fail(new Error('no response')), 5000);
    });
    // the aborted response is logged with the bytes actually sent
    const logged = /"GET \/\.well-known\/api-catalog HTTP\/1\.1" 200 (\d+) /;
    await expect.poll(() => logged.exec(s.stderr())?.[1], { timeout: 5000 }).toBeDefined();
    const sent = Number(logged.exec(s.stderr())![1]);
    expect(sent).toBeLessThan(BIG_BYTES);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    const t0 = Date.now();
    expect((await stop(s)).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('exits 2 with a clear message on usage errors', async () => {
    const dir = snapshotDir();
    const badKeys = path.join(tempDir('keys-'), 'bad.jsonl');
    fs.writeFileSync(badKeys, '{"sha256":"pk_live_clear","tiers":["gold"]}\n');
    const cases: [string[], RegExp][] = [
      [['--out', dir, '--access', 'keyed'], /--keys: required with --access keyed/],
      [['--out', dir, '--rate-limit', '5'], /--rate-limit: expected N\/SECONDS/],
      [['--out', dir, '--rate-limit', '0/60'], /--rate-limit: expected N\/SECONDS/],
      [['--out', dir, '--access', 'closed'], /--access: expected "open" or "keyed"/],
      [['--out', dir, '--port', 'http'], /--port: expected an integer from 0 to 65535/],
      [['--out', path.join(dir, 'nope')], /snapshot directory not found/],
      [['--out', dir, '--keys', badKeys], /bad\.jsonl:1: sha256: expected 64 hex digits/],
      [['--out', dir, '--keys', path.join(dir, 'none.jsonl')], /cannot read key file/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(['serve', '--port', '0', ...args])));
    results.forEach((r, i) => {
      expect(r.code, cases[i]![0].join(' ')).toBe(2);
      expect(r.stderr).toMatch(cases[i]![1]);
    });
  });
});
