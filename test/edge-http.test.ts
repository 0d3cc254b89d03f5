// The edge shim's HTTP layer (src/edge/handler.ts) driven with Web Requests, no server: CORS, methods,
// hostile input, rate limit, access modes and keys, ETag/304, caching, deprecation, health.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultConfig, parseConfig } from '../src/config/index.js';
import { exactFilePath, exactFileResolve } from './helpers/exact-files.js';
import { PROBLEM_CATALOGUE, problemTypeUri, type ProblemName } from '../src/api/problems.js';
import { RESOURCE_SCHEMAS } from '../src/api/schemas/index.js';
import { CACHE_CONTROL, createHandler, EXPOSED_HEADERS, type HandlerOptions } from '../src/edge/handler.js';
import { createKeyStore, hashKey, KeyFileError, parseKeyFile } from '../src/edge/api-keys.js';
import { EdgePolicyError, edgePolicyOf } from '../src/edge/policy.js';
import { FixedWindowLimiter, ipIdentity } from '../src/edge/ratelimit.js';
import { checkTarget, isSafeFilePath, MAX_TARGET_BYTES } from '../src/edge/target.js';
import type { Answer, CacheClass, EdgePolicy, FileReader, Resolve } from '../src/edge/types.js';

const T0 = Date.parse('2026-11-22T12:00:00Z');
const enc = new TextEncoder();

/** An in-memory snapshot that records every path it is asked for. */
function memoryFiles(files: Record<string, string>): FileReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(p: string) {
      reads.push(p);
      return p in files ? enc.encode(files[p]) : null;
    },
  };
}

/**
 * The test resolver: `/a/b` is served from file `a/b.json`; the cache class comes from the first path
 * segment when it names one (`/immutable/x` -> immutable), else mutable. Unknown: a 404 problem.
 */
const testResolve: Resolve = async ({ url }, files) => {
  const rel = url.pathname.slice(1).split('/').map(decodeURIComponent).join('/');
  const body = await files.read(`${rel}.json`);
  if (!body) return { status: 404, body: enc.encode('{"type":"about:blank","title":"Not Found","status":404}'), contentType: 'application/problem+json', cacheClass: 'none' };
  const first = rel.split('/')[0] as CacheClass;
  const cacheClass: CacheClass = ['immutable', 'meta', 'none'].includes(first) ? first : 'mutable';
  const answer: Answer = { status: 200, body, contentType: 'application/json', cacheClass };
  if (rel === 'v1/paged') answer.headers = { Link: '<https://api.example/v1/paged?cursor=abc>; rel="next"' };
  return answer;
};

const SNAPSHOT = {
  'manifest.json': JSON.stringify({ generated_at: '2026-11-22T11:30:00Z', files: [] }),
  'v1/network.json': '{"hosts":{"up":3,"down":0,"degraded":1}}',
  'v1/hosts.json': '{"items":[]}',
  'v1/sml.json': '{"zones":[]}',
  'v1/paged.json': '{"items":[1]}',
  'v1/participants.json': '{"items":[]}',
  'v1/stats/participants.json': '{"total_count":0}',
  'immutable/c1.json': '{"chunk":1}',
  'meta/m.json': '{"meta":1}',
  'none/n.json': '{"none":1}',
};

function policy(edit: (p: EdgePolicy) => void = () => {}): EdgePolicy {
  const p = structuredClone(defaultConfig('/tmp').edge);
  edit(p);
  return p;
}

function setup(over: Partial<HandlerOptions> = {}, files = memoryFiles(SNAPSHOT)) {
  let clock = T0;
  const handler = createHandler({ files, resolve: testResolve, policy: policy(), now: () => clock, ...over });
  const call = (pathOrTarget: string, init: RequestInit & { ip?: string; raw?: boolean } = {}) => {
    const req = new Request(`http://edge.test${pathOrTarget}`, init);
    return handler(req, init.ip ?? '192.0.2.1', init.raw ? pathOrTarget : undefined);
  };
  return { files, call, advance: (ms: number) => (clock += ms) };
}

function expectCors(res: Response): void {
  expect(res.headers.get('access-control-allow-origin')).toBe('*');
  const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(',').map((s) => s.trim().toLowerCase());
  for (const h of ['ratelimit', 'ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after', 'etag', 'link', 'deprecation', 'sunset']) {
    expect(exposed).toContain(h);
  }
}

describe('CORS and methods', () => {
  it('every kind of response carries Access-Control-Allow-Origin: * and the exposed headers', async () => {
    const { call } = setup({
      policy: policy((p) => (p.rate_limit = { requests: 6, window_seconds: 60, keyed_multiplier: 10 })),
      resolve: async (req, files) => {
        if (req.url.pathname === '/boom') throw new Error('resolver failure');
        return testResolve(req, files);
      },
    });
    const ok = await call('/v1/network');
    const etag = ok.headers.get('etag')!;
    const responses = [
      ok,
      await call('/v1/network', { headers: { 'If-None-Match': etag } }), // 304
      await call('/v1/nope'), // 404 from the resolver
      await call('/v1/%2e%2e/x', { raw: true }), // 400
      await call('/v1/network', { method: 'DELETE' }), // 405
      await call('/boom'), // 500
      await call('/v1/network', { method: 'OPTIONS' }), // 204
    ];
    responses.push(await call('/v1/network')); // the 7th counted request: 429
    expect(responses.map((r) => r.status)).toEqual([200, 304, 404, 400, 405, 500, 204, 429]);
    for (const r of responses) expectCors(r);
    expect(EXPOSED_HEADERS).toContain('RateLimit');
  });

  it('answers the CORS preflight at the edge without counting it against the quota', async () => {
    const { call, files } = setup({ policy: policy((p) => (p.cors.max_age_seconds = 600)) });
    const res = await call('/v1/hosts', { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, X-API-Key, If-None-Match');
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(await res.text()).toBe('');
    for (let i = 0; i < 5; i++) await call('/v1/hosts', { method: 'OPTIONS' });
    expect((await call('/v1/hosts', { method: 'OPTIONS' })).headers.get('ratelimit-remaining')).toBe('60');
    expect(files.reads).toEqual([]);
  });

  it('refuses other methods with 405, Allow and a problem body, without touching files', async () => {
    const { call, files } = setup();
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'PROPFIND']) {
      const res = await call('/v1/network', { method, body: method === 'POST' ? '{}' : null });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const body = (await res.json()) as { status: number; title: string; type: string };
      expect(body).toMatchObject({ status: 405, title: 'Method Not Allowed', type: 'about:blank' });
    }
    expect(files.reads).toEqual([]);
  });

  it("the edge's own problems carry the catalogue's types under the snapshot's base URL when it is known", async () => {
    const base = 'https://api.example';
    const keyed = policy((p) => (p.access.mode = 'keyed'));
    const { call } = setup({ policy: keyed, problemBaseUrl: async () => base });
    const cases: [string, RequestInit & { raw?: boolean }, string, number][] = [
      ['/v1/network', { method: 'DELETE' }, 'method-not-allowed', 405],
      ['/v1/hosts', { headers: { Authorization: `Bearer ${'x'.repeat(12)}` } }, 'api-key-required', 403],
      ['/v1/hosts', {}, 'api-key-required', 403],
      ['/v1/%2e%2e/x', { raw: true }, 'invalid-request', 400],
      [`/v1/${'a'.repeat(MAX_TARGET_BYTES + 10)}`, { raw: true }, 'uri-too-long', 414],
    ];
    for (const [target, init, name, status] of cases) {
      const res = await call(target, init);
      expect(res.status, name).toBe(status);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body, name).toMatchObject({ type: problemTypeUri(name as ProblemName, base), title: PROBLEM_CATALOGUE[name as ProblemName].title, status });
    }
    // a base URL that cannot be read leaves the RFC 9457 default, never a 500
    const broken = setup({ problemBaseUrl: () => Promise.reject(new Error('no snapshot')) });
    const res = await broken.call('/v1/network', { method: 'PUT' });
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ type: 'about:blank', title: 'Method Not Allowed' });
  });

  it('HEAD answers the headers of GET without a body', async () => {
    const { call } = setup();
    const get = await call('/v1/network');
    const head = await call('/v1/network', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
    for (const h of ['content-type', 'content-length', 'etag', 'cache-control']) expect(head.headers.get(h)).toBe(get.headers.get(h));
    expect(Number(head.headers.get('content-length'))).toBe(SNAPSHOT['v1/network.json'].length);
  });
});

describe('ETag, caching and deprecation', () => {
  it('answers If-None-Match with 304 and no body; a changed file gets a new ETag', async () => {
    const snap = { ...SNAPSHOT };
    const files: FileReader = { read: async (p) => (p in snap ? enc.encode(snap[p as keyof typeof snap]) : null) };
    const { call } = setup({}, files as FileReader & { reads: string[] });
    const first = await call('/v1/network');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await call('/v1/network', { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    expect((await call('/v1/network', { headers: { 'If-None-Match': `"x", W/${etag}` } })).status).toBe(304);
    expect((await call('/v1/network', { headers: { 'If-None-Match': '*' } })).status).toBe(304);
    expect((await call('/v1/network', { headers: { 'If-None-Match': '"other"' } })).status).toBe(200);
    snap['v1/network.json'] = '{"hosts":{"up":4,"down":0,"degraded":0}}';
    const changed = await call('/v1/network', { headers: { 'If-None-Match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('sets Cache-Control by the cache class of the answer', async () => {
    const { call } = setup();
    expect((await call('/immutable/c1')).headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await call('/v1/hosts')).headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    expect((await call('/meta/m')).headers.get('cache-control')).toBe(CACHE_CONTROL.meta);
    expect((await call('/none/n')).headers.get('cache-control')).toBe('no-store');
    expect((await call('/health')).headers.get('cache-control')).toBe('no-store');
  });

  it('sends Deprecation, Sunset and Link for deprecated paths only, and keeps the resolver Link', async () => {
    const { call } = setup({
      policy: policy((p) => {
        p.deprecations = [{ path: '/v1/paged', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-07-01T00:00:00Z', link: 'https://docs.example/deprecations' }];
      }),
    });
    const res = await call('/v1/paged');
    expect(res.headers.get('deprecation')).toBe(`@${Date.parse('2027-01-01T00:00:00Z') / 1000}`);
    expect(res.headers.get('sunset')).toBe('Thu, 01 Jul 2027 00:00:00 GMT');
    const link = res.headers.get('link')!;
    expect(link).toContain('<https://api.example/v1/paged?cursor=abc>; rel="next"');
    expect(link).toContain('<https://docs.example/deprecations>; rel="deprecation"');
    const other = await call('/v1/network');
    expect(other.headers.get('deprecation')).toBeNull();
    expect(other.headers.get('sunset')).toBeNull();
  });
});

describe('health', () => {
  it('/health is static and reads no file', async () => {
    const { call, files } = setup();
    const res = await call('/health');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', service: 'peppol-snapshot' });
    expect(files.reads).toEqual([]);
  });

  it('/health/db reports db=true for a readable manifest, with its age and freshness beside it', async () => {
    const fresh = setup({ healthMaxAgeSeconds: 3600 });
    const ok = (await (await fresh.call('/health/db')).json()) as Record<string, unknown>;
    expect(ok).toMatchObject({ status: 'ok', service: 'peppol-snapshot', db: true, fresh: true });
    expect(RESOURCE_SCHEMAS.HealthDb.safeParse(ok).success).toBe(true);
    const age = ok.age_seconds as number;
    fresh.advance(3600 * 1000); // manifest now an hour older
    const stale = await fresh.call('/health/db');
    expect(stale.status).toBe(200);
    // Stale but readable: db stays true; the staleness is in status, fresh and age_seconds.
    expect(await stale.json()).toEqual({ status: 'degraded', service: 'peppol-snapshot', db: true, generated_at: ok.generated_at, age_seconds: age + 3600, fresh: false });
    const missing = setup({}, memoryFiles({}));
    expect(await (await missing.call('/health/db')).json()).toEqual({ status: 'degraded', service: 'peppol-snapshot', db: false, generated_at: null, age_seconds: null, fresh: false });
    const broken = setup({}, memoryFiles({ 'manifest.json': '{"generated_at": 12' }));
    expect(await (await broken.call('/health/db')).json()).toMatchObject({ db: false, fresh: false });
  });

  it('/health/db reads only the head of a large manifest, and at most every 10 s', async () => {
    const files = ['{"generated_at":"2026-11-22T11:30:00Z","files":['];
    for (let i = 0; i < 20_000; i++) files.push(`${i ? ',' : ''}{"path":"v1/participants/0208::${i}.json"}`);
    const manifest = `${files.join('')}]}`;
    const base = memoryFiles({ 'manifest.json': manifest });
    const prefixReads: number[] = [];
    const reader = Object.assign(base, {
      async readPrefix(p: string, n: number) {
        prefixReads.push(n);
        return p in { 'manifest.json': 1 } ? enc.encode(manifest.slice(0, n)) : null;
      },
    });
    const { call, advance } = setup({}, reader);
    expect(await (await call('/health/db')).json()).toMatchObject({ db: true });
    expect(await (await call('/health/db')).json()).toMatchObject({ db: true });
    expect(prefixReads).toEqual([4096]); // once: the second probe used the cached time
    expect(reader.reads).toEqual([]); // never the whole file
    advance(10_000);
    await call('/health/db');
    expect(prefixReads).toHaveLength(2);
    // a manifest whose generated_at is not first is read whole (still correct)
    const late = JSON.stringify({ files: [], generated_at: '2026-11-22T11:59:00Z' });
    const other = Object.assign(memoryFiles({ 'manifest.json': late }), { readPrefix: async () => enc.encode(late.slice(0, 10)) });
    expect(await (await setup({}, other).call('/health/db')).json()).toMatchObject({ db: true });
    expect(other.reads).toEqual(['manifest.json']);
  });
});

describe('hostile input', () => {
  const hostile = [
    '/v1/../etc/passwd',
    '/v1/%2e%2e/%2e%2e/etc/passwd',
    '/v1/%2E%2e/x',
    '/v1/.%2e/x',
    '/v1/hosts/a%2fb',
    '/v1/hosts/a%2Fb',
    '/v1/hosts/a%5cb',
    '/v1/hosts/a\\b',
    '/v1/hosts/a%00',
    '/v1/hosts/%',
    '/v1/hosts/%zz',
    '/v1/hosts/%c3%28',
    '/v1/hosts/a%0aSet-Cookie:x',
    '/v1/hosts/%7f',
    '/v1//hosts',
    '/v1/hosts?limit=%00',
    '/v1/hosts?q=%e0%80',
    '/v1/hosts?%',
    '/./v1/hosts',
  ];

  it.each(hostile)('rejects %s with a 400 problem before any file is read', async (target) => {
    const { call, files } = setup();
    const res = await call(target, { raw: true });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { status: number }).status).toBe(400);
    expect(files.reads).toEqual([]);
  });

  it.each(hostile)('given only the parsed URL of %s, never reads outside the snapshot', async (target) => {
    // Without the raw target (a Worker), the URL parser has already resolved dot segments and turned
    // "\\" into "/"; what is left must still be rejected or be a harmless path inside the snapshot.
    const { call, files } = setup();
    const res = await call(target);
    expect(res.status).toBeLessThan(500);
    for (const p of files.reads) expect(isSafeFilePath(p)).toBe(true);
    if (/%(00|2f|2F|5c|0a|7f|c3%28|zz|e0%80)|%$|\/\/|\?%$/.test(target)) expect(res.status).toBe(400);
  });

  it('rejects a request target longer than 2048 bytes with 414', async () => {
    const { call, files } = setup();
    const long = `/v1/hosts?q=${'a'.repeat(MAX_TARGET_BYTES)}`;
    const res = await call(long, { raw: true });
    expect(res.status).toBe(414);
    expect(((await res.json()) as { status: number }).status).toBe(414);
    expect(files.reads).toEqual([]);
    const exactly = `/v1/hosts?q=${'a'.repeat(MAX_TARGET_BYTES - '/v1/hosts?q='.length)}`;
    expect(checkTarget(exactly).ok).toBe(true);
    expect(checkTarget(`https://api.example.org${exactly}`).ok).toBe(true); // scheme and host do not count
    expect(checkTarget(`${exactly}a`)).toMatchObject({ ok: false, status: 414 });
    // without the raw target (a Worker) the parsed URL is measured the same way
    expect((await call(`${exactly}a`)).status).toBe(414);
  });

  it('property: random hostile targets never give a 5xx nor read outside the snapshot', async () => {
    const piece = fc.oneof(
      fc.constantFrom('..', '.', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%2f', '%2F', '%5c', '\\', '%00', '%', '%g1', '%c3', '%c3%28', '%ff', '%0d%0a', '\t', ' ', '~', 'v1', 'hosts', 'manifest.json', '%252e%252e', '..%2f', '%u002e', '*', ':', '@', '//'),
      fc.string({ maxLength: 6 }),
      fc.string({ unit: 'binary', maxLength: 4 }),
    );
    const targetArb = fc
      .tuple(fc.array(piece, { minLength: 1, maxLength: 6 }), fc.option(fc.array(piece, { maxLength: 3 }), { nil: undefined }))
      .map(([segs, q]) => `/${segs.join('/')}${q ? `?${q.join('&')}` : ''}`);
    const { call, files } = setup({ policy: policy((p) => (p.rate_limit = 'off')) });
    await fc.assert(
      fc.asyncProperty(targetArb, fc.boolean(), async (target, raw) => {
        let res: Response;
        try {
          res = await call(target, { raw });
        } catch {
          return; // the Request constructor itself refused the URL: nothing reached the shim
        }
        expect(res.status).toBeLessThan(500);
        for (const p of files.reads) {
          expect(p.startsWith('/')).toBe(false);
          expect(p.split('/')).not.toContain('..');
          expect(isSafeFilePath(p)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('rate limit', () => {
  const small = () => policy((p) => (p.rate_limit = { requests: 3, window_seconds: 60, keyed_multiplier: 2 }));

  it('sends draft-10 RateLimit-Policy / RateLimit and the older three fields; 429 with Retry-After over the limit', async () => {
    const { call, advance } = setup({ policy: small() });
    const first = await call('/v1/network');
    expect(first.headers.get('ratelimit-policy')).toBe('"anonymous";q=3;w=60');
    expect(first.headers.get('ratelimit')).toBe('"anonymous";r=2;t=60');
    expect([first.headers.get('ratelimit-limit'), first.headers.get('ratelimit-remaining'), first.headers.get('ratelimit-reset')]).toEqual(['3', '2', '60']);
    advance(15_000);
    expect((await call('/v1/network')).headers.get('ratelimit')).toBe('"anonymous";r=1;t=45');
    await call('/v1/network');
    const over = await call('/v1/network');
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('45');
    expect(over.headers.get('ratelimit')).toBe('"anonymous";r=0;t=45');
    expect(over.headers.get('content-type')).toBe('application/problem+json');
    const body = (await over.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', status: 429, 'violated-policies': ['anonymous'] });
    // another client is not affected; the window ends and the client is served again
    expect((await call('/v1/network', { ip: '192.0.2.2' })).status).toBe(200);
    advance(45_000);
    expect((await call('/v1/network')).status).toBe(200);
  });

  it('the default policy allows 60 requests per 60 s per client', async () => {
    const { call } = setup();
    for (let i = 0; i < 60; i++) expect((await call('/health')).status).toBe(200);
    const res = await call('/health');
    expect(res.status).toBe(429);
    expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=60;w=60');
  });

  it('counts per identity: an IPv6 /64 is one client, a valid key has its own raised quota', async () => {
    const key = 'pk_live_abc123';
    const keys = createKeyStore([{ sha256: await hashKey(key), tiers: [] }]);
    const { call } = setup({ policy: small(), keys });
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002:0:0:0:3']) expect((await call('/health', { ip })).status).toBe(200);
    expect((await call('/health', { ip: '2001:db8:1:2::77' })).status).toBe(429);
    expect((await call('/health', { ip: '2001:db8:1:3::1' })).status).toBe(200);
    // six requests (3 x keyed_multiplier 2) with the key, from an address already over its quota
    for (let i = 0; i < 6; i++) {
      const res = await call('/health', { ip: '2001:db8:1:2::1', headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"keyed";q=6;w=60');
    }
    expect((await call('/health', { headers: { 'X-API-Key': key } })).status).toBe(429);
    // an unknown key counts against the address (open mode: accepted and ignored)
    expect((await call('/health', { ip: '198.51.100.7', headers: { Authorization: 'Bearer nope' } })).headers.get('ratelimit-policy')).toBe('"anonymous";q=3;w=60');
  });

  it('an outside limiter (the Worker binding) decides over the counter; the headers stay the counter\'s', async () => {
    const asked: string[] = [];
    const errors: unknown[] = [];
    let verdict: boolean | null | 'throw' = false;
    const key = 'pk_live_outside';
    const keys = createKeyStore([{ sha256: await hashKey(key), tiers: [] }]);
    const { call } = setup({
      policy: small(),
      keys,
      onError: (e) => errors.push(e),
      rateLimit: async (identity, name) => {
        asked.push(`${name} ${identity}`);
        if (verdict === 'throw') throw new Error('binding down');
        return verdict;
      },
    });
    // refused by the outside limiter while the counter (3 per 60 s) still has room
    const over = await call('/v1/network', { ip: '2001:db8:5:6::1' });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(over.headers.get('ratelimit')).toBe('"anonymous";r=0;t=60');
    expect(await over.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', 'violated-policies': ['anonymous'] });
    expect((await call('/v1/network', { headers: { 'X-API-Key': key } })).status).toBe(429);
    expect(asked).toEqual(['anonymous ip:2001:db8:5:6::/64', `keyed key:${await hashKey(key)}`]);
    // allowed past the counter's quota; the headers still count
    verdict = true;
    for (let i = 0; i < 4; i++) expect((await call('/v1/network', { ip: '198.51.100.20' })).status).toBe(200);
    expect((await call('/v1/network', { ip: '198.51.100.20' })).headers.get('ratelimit')).toBe('"anonymous";r=0;t=60');
    // no say (null), or a failing limiter (reported): the counter decides
    for (const v of [null, 'throw'] as const) {
      verdict = v;
      expect((await call('/v1/network', { ip: '198.51.100.20' })).status).toBe(429);
      expect((await call('/v1/network', { ip: `198.51.100.${v === null ? 21 : 22}` })).status).toBe(200);
    }
    expect(errors.map(String)).toEqual(['Error: binding down', 'Error: binding down']);
    // a preflight is never counted, so never asked
    const n = asked.length;
    expect((await call('/v1/network', { method: 'OPTIONS' })).status).toBe(204);
    expect(asked.length).toBe(n);
  });

  it('"off" sends no rate-limit headers and never answers 429', async () => {
    const { call } = setup({ policy: policy((p) => (p.rate_limit = 'off')) });
    for (let i = 0; i < 100; i++) await call('/health');
    const res = await call('/health');
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit')).toBeNull();
    expect(res.headers.get('ratelimit-policy')).toBeNull();
  });

  it('the limiter keeps bounded memory: expired windows are swept, the oldest live one is dropped when full', () => {
    const l = new FixedWindowLimiter(60_000, 100);
    for (let i = 0; i < 1000; i++) l.take(`ip:${i}`, 5, T0 + i);
    expect(l.size).toBeLessThanOrEqual(100);
    expect(l.peek('ip:999', 5, T0 + 1000).remaining).toBe(4);
    // Later requests sweep the expired windows, 8 per request: after 13 requests only their windows remain.
    for (let i = 0; i < 13; i++) l.take(`late:${i}`, 5, T0 + 120_000);
    expect(l.size).toBe(13);
  });

  it('normalises client addresses', () => {
    expect(ipIdentity('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipIdentity('192.0.2.1')).toBe('192.0.2.1');
    expect(ipIdentity('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(ipIdentity('[2001:DB8:0:0:1::1]')).toBe('2001:db8:0:0::/64');
    expect(ipIdentity('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(ipIdentity('unknown')).toBe('unknown');
  });
});

describe('access and keys', () => {
  const NETWORK_KEY = 'pk_live_network';
  const BOTH_KEY = 'pk_live_both';
  async function keyedSetup(routeOf?: (p: string) => string | null) {
    const keys = createKeyStore([
      { sha256: await hashKey(NETWORK_KEY), tiers: ['network'], label: 'ops' },
      { sha256: await hashKey(BOTH_KEY), tiers: ['network', 'market'] },
    ]);
    return setup({
      keys,
      policy: policy((p) => {
        p.access.mode = 'keyed';
        if (routeOf) p.access.tiers.market = ['stats.participants'];
      }),
      ...(routeOf ? { routeOf } : {}),
    });
  }

  it('keyed mode: 403 without a valid key, keyless endpoints stay open', async () => {
    const { call, files } = await keyedSetup();
    for (const target of ['/v1/hosts', '/v1/participants', '/v1/anything']) {
      const res = await call(target);
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(((await res.json()) as { status: number }).status).toBe(403);
    }
    expect((await call('/v1/hosts', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(403);
    expect(files.reads).toEqual([]);
    for (const target of ['/health', '/v1/network', '/v1/stats/participants']) expect((await call(target)).status).toBe(200);
    // the problem type pages are keyless (/problems/*): the resolver answers, here with its 404
    for (const target of ['/problems/api-key-required', '/problems/anything/else']) expect((await call(target)).status, target).toBe(404);
    expect((await call('/problemsx')).status).toBe(403);
  });

  it('keyed mode: a key opens the tiers it holds, from Authorization: Bearer or X-API-Key', async () => {
    const { call } = await keyedSetup();
    const net = await call('/v1/hosts', { headers: { Authorization: `Bearer ${NETWORK_KEY}` } });
    expect(net.status).toBe(200);
    expect(net.headers.get('cache-control')).toBe('private, max-age=60, stale-while-revalidate=300');
    expect(net.headers.get('vary')).toBe('Authorization, X-API-Key');
    expect((await call('/v1/hosts', { headers: { 'X-API-Key': NETWORK_KEY } })).status).toBe(200);
    const below = await call('/v1/participants', { headers: { 'X-API-Key': NETWORK_KEY } });
    expect(below.status).toBe(403);
    expect(((await below.json()) as { detail: string }).detail).toContain('market');
    expect((await call('/v1/participants', { headers: { Authorization: `bearer ${BOTH_KEY}` } })).status).toBe(200);
  });

  it('keyed mode: tiers are ordered (a market key opens network endpoints); a key without a tier opens nothing', async () => {
    const keys = createKeyStore([
      { sha256: await hashKey('pk_market'), tiers: ['market'] },
      { sha256: await hashKey('pk_none'), tiers: [] },
    ]);
    const { call } = setup({ keys, policy: policy((p) => (p.access.mode = 'keyed')) });
    for (const target of ['/v1/hosts', '/v1/participants', '/v1/unlisted']) {
      expect((await call(target, { headers: { 'X-API-Key': 'pk_market' } })).status, target).not.toBe(403);
      const none = await call(target, { headers: { 'X-API-Key': 'pk_none' } });
      expect(none.status).toBe(403);
      expect(((await none.json()) as { detail: string }).detail).toContain('holds no tier');
    }
    expect((await call('/v1/network', { headers: { 'X-API-Key': 'pk_none' } })).status).toBe(200);
  });

  it('keyed mode: tiers may name route ids', async () => {
    const { call } = await keyedSetup((p) => (p === '/v1/sml' ? 'stats.participants' : null));
    expect((await call('/v1/sml', { headers: { 'X-API-Key': NETWORK_KEY } })).status).toBe(403);
    expect((await call('/v1/sml', { headers: { 'X-API-Key': BOTH_KEY } })).status).toBe(200);
  });

  it('open mode: a key is optional, a wrong one is ignored', async () => {
    const { call } = setup();
    expect((await call('/v1/participants')).status).toBe(200);
    const res = await call('/v1/participants', { headers: { Authorization: 'Bearer whatever' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
  });

  it('parses key files (JSON lines or array) and reports every problem', async () => {
    const sha = createHash('sha256').update('pk_test_1').digest('hex');
    expect(await hashKey('pk_test_1')).toBe(sha);
    const lines = `# keys\n{"sha256":"${sha}","tiers":["market"],"label":"acme"}\n\n{"sha256":"${'a'.repeat(64)}","tiers":[]}\n`;
    expect(parseKeyFile(lines)).toEqual([{ sha256: sha, tiers: ['market'], label: 'acme' }, { sha256: 'a'.repeat(64), tiers: [] }]);
    expect(parseKeyFile(JSON.stringify([{ sha256: sha.toUpperCase(), tiers: ['network'] }]))).toEqual([{ sha256: sha, tiers: ['network'] }]);
    let err: unknown;
    try {
      parseKeyFile(`{"sha256":"pk_live_secret","tiers":["gold"]}\n{"sha256":"${sha}","tiers":[]}\n{"sha256":"${sha}","tiers":[],"x":1}\nnot json`, 'k.jsonl');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KeyFileError);
    const problems = (err as KeyFileError).problems.join('\n');
    expect(problems).toContain('k.jsonl:1: sha256');
    expect(problems).toContain('k.jsonl:1: tiers');
    expect(problems).toContain('k.jsonl:3: unknown key "x"');
    expect(problems).toContain('k.jsonl:4: invalid JSON');
    const store = createKeyStore(parseKeyFile(lines));
    expect(await store.lookup('pk_test_1')).toMatchObject({ label: 'acme' });
    expect(await store.lookup(sha)).toBeNull(); // the hash itself is not a key
  });
});

describe('resolver contract and policy', () => {
  it('a resolver failure is a 500 problem and is reported', async () => {
    const errors: unknown[] = [];
    const { call } = setup({ resolve: async () => Promise.reject(new Error('disk on fire')), onError: (e) => errors.push(e) });
    const res = await call('/v1/hosts');
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(errors).toHaveLength(1);
  });

  it('a resolver asking for an unsafe path is refused by the reader guard', async () => {
    const errors: unknown[] = [];
    const { call, files } = setup({ resolve: async (r, f) => {
        await f.read('../secret.json');
        return testResolve(r, f);
      },
      onError: (e) => errors.push(e) });
    expect((await call('/v1/hosts')).status).toBe(500);
    expect(files.reads).toEqual([]);
    expect(String(errors[0])).toContain('unsafe snapshot path');
  });

  it("the Worker's policy is snapshot.json's edge member as build wrote it, the config schema's defaults when absent", () => {
    expect(edgePolicyOf(undefined)).toEqual(defaultConfig('/tmp').edge);
    const keyed = parseConfig({ edge: { rate_limit: 'off', access: { mode: 'keyed' }, deprecations: [{ path: '/v1/sml', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-06-01T00:00:00Z' }] } }, '/tmp').edge;
    const written = JSON.parse(JSON.stringify(keyed)) as unknown;
    expect(edgePolicyOf(written)).toEqual(keyed);
    expect(() => edgePolicyOf({ ...keyed, rate_limit: { requests: 0, window_seconds: 60, keyed_multiplier: 1 } })).toThrow(/edge\.rate_limit/);
    expect(() => edgePolicyOf({ ...keyed, access: { mode: 'closed', tiers: keyed.access.tiers } })).toThrow(EdgePolicyError);
    expect(() => edgePolicyOf({ ...keyed, deprecations: [{ path: '/v1/sml' }] })).toThrow(/edge\.deprecations/);
    expect(() => edgePolicyOf('{}')).toThrow(/expected an object/);
  });

  it('the interim exact-file resolver maps paths onto <path>.json and nothing else', async () => {
    expect(exactFilePath('/v1/hosts/smp.example.com')).toBe('v1/hosts/smp.example.com.json');
    expect(exactFilePath('/v1/participants/0208%3A%3A123')).toBe('v1/participants/0208::123.json');
    expect(exactFilePath('/manifest.json')).toBe('manifest.json');
    expect(exactFilePath('/v1/hosts/')).toBeNull();
    const files = memoryFiles(SNAPSHOT);
    const hit = await exactFileResolve({ url: new URL('http://x/v1/network'), routeId: null }, files);
    expect([hit.status, new TextDecoder().decode(hit.body)]).toEqual([200, SNAPSHOT['v1/network.json']]);
    expect((await exactFileResolve({ url: new URL('http://x/v1/network?limit=5'), routeId: null }, files)).status).toBe(404);
    expect((await exactFileResolve({ url: new URL('http://x/v1/missing'), routeId: null }, files)).status).toBe(404);
  });
});

describe('edge modules stay free of Node', () => {
  it('src/edge/** and every module it imports import nothing from Node', () => {
    const NODE_BUILTINS = /^(node:|fs$|fs\/|path$|os$|crypto$|http$|https$|net$|stream|buffer$|child_process$|worker_threads$|zlib$|url$|util$|process$|events$|tls$|dns$|readline$|module$|v8$|vm$)/;
    const start = fs
      .readdirSync('src/edge', { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.resolve('src/edge', f));
    const seen = new Set<string>();
    const queue = [...start];
    const problems: string[] = [];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const src = fs.readFileSync(file, 'utf8');
      // value imports and re-exports (type-only imports are erased by the compiler)
      for (const m of src.matchAll(/^\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) {
        const spec = m[3]!;
        if (m[2]) continue;
        if (NODE_BUILTINS.test(spec)) problems.push(`${path.relative('.', file)} imports ${spec}`);
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
          const rel = path.relative('src', target);
          // any module of src/ may be shared with the edge as long as it, too, stays free of Node
          if (rel.startsWith('..')) problems.push(`${path.relative('.', file)} imports ${spec} outside src/`);
          else if (fs.existsSync(target)) queue.push(target);
        }
      }
      for (const m of src.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) if (NODE_BUILTINS.test(m[1]!)) problems.push(`${path.relative('.', file)} imports ${m[1]} dynamically`);
      const code = src.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
      if (/\b(process|Buffer|require|__dirname)\b\s*[.(]/.test(code)) problems.push(`${path.relative('.', file)} uses a Node global`);
    }
    expect([...seen].some((f) => f.endsWith(path.join('config', 'edge-defaults.ts')))).toBe(true); // the walk follows imports
    expect(problems).toEqual([]);
  });
});
