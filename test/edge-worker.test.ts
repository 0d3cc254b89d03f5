// The Cloudflare Worker: the bundle (dist/worker.mjs, built by the global setup) under workerd via
// miniflare, reading real built snapshots from a real R2 bucket binding, with real rate limiting
// bindings. The small demo's snapshot answers the same HTTP end-to-end checks as `serve`
// (test/helpers/e2e-suite.ts); small snapshots built from an empty database with other `edge` policies
// (keyed access, a low rate limit, deprecations) show that the Worker takes its policy from the
// snapshot it serves (snapshot.json), and what the rate limiting bindings decide.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Miniflare, type WorkerOptions } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { edgePolicyOf } from '../src/edge/policy.js';
import { runBuild } from '../src/render/build.js';
import { batchingBucket, BUCKET_LOADER_SCRIPT, fillBucket, type BucketWriter } from './helpers/bucket.js';
import { builtSmallDemo, copyOfDb, smallDemo } from './helpers/demo-fixture.js';
import { BULK_SAMPLE, describeE2e, type RequestInitLike, type ResponseLike } from './helpers/e2e-suite.js';
import { tempDir } from './helpers/feeds.js';
import { parseJsonc } from './helpers/jsonc.js';
import { snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';

const BUNDLE = 'dist/worker.mjs';
const TEMPLATE_PATH = 'templates/wrangler.jsonc';

/** The parts of templates/wrangler.jsonc the tests use (and check). */
interface WranglerTemplate {
  main: string;
  compatibility_date: string;
  no_bundle?: boolean;
  r2_buckets: { binding: string; bucket_name: string }[];
  vars: Record<string, string>;
  ratelimits: { name: string; namespace_id: string; simple: { limit: number; period: number } }[];
}
const template = parseJsonc(fs.readFileSync(TEMPLATE_PATH, 'utf8')) as WranglerTemplate;

const hash = (key: string) => createHash('sha256').update(key).digest('hex');
const NETWORK_KEY = 'pk_live_network';
const MARKET_KEY = 'pk_live_market';
const BURST_KEY = 'pk_live_burst';
const KEYS = [
  { sha256: hash(NETWORK_KEY), tiers: ['network'], label: 'network' },
  { sha256: hash(MARKET_KEY), tiers: ['network', 'market'], label: 'market' },
  { sha256: hash(BURST_KEY), tiers: ['network'], label: 'burst' },
];
/** Limits of the rate limiting bindings of the keyed Worker (the snapshot's policy says 60 and 600). */
const BINDING_LIMIT = 3;
const BINDING_KEYED_LIMIT = 5;
const DEPRECATION = { path: '/v1/hosts', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-06-01T00:00:00Z', link: 'https://example.org/deprecations' };
/** The Worker re-reads snapshot.json at most this often (src/edge/resolve.ts). */
const SNAPSHOT_INFO_TTL_MS = 10_000;

let mf: Miniflare;
let bucket: BucketWriter;
let db: Db;
let nowMs: number;
let demoOut: string;
let demoBase: string;
let keyedOut: string;
let limitedOut: string;
/** When the snapshot.json files the "follows the snapshot" test looks for were put. */
let changedAt = 0;
/** What the Workers wrote to their log (console.*), arriving a little after the answers. */
let workerLog = '';

/** A real build of a database without any data: a snapshot of every route, with the config's edge policy. */
function buildEmpty(config: Record<string, unknown>): string {
  const out = snapshotTempDir('worker-small-');
  runBuild({ config: parseConfig(config, tempDir('worker-config-')), dbPath: path.join(tempDir('worker-empty-db-'), 'empty.sqlite'), outDir: out, nowMs });
  return out;
}

/** A Worker running the bundle over the bucket under `prefix`, answering on http://<name>.edge.test. */
function edgeWorker(name: string, prefix: string, extra: Partial<WorkerOptions> & { vars?: Record<string, string> } = {}): WorkerOptions {
  const { vars, ...rest } = extra;
  return {
    name,
    modules: true,
    scriptPath: template.main,
    compatibilityDate: template.compatibility_date,
    routes: [`${name}.edge.test/*`],
    r2Buckets: { [template.r2_buckets[0]!.binding]: 'snapshot' },
    bindings: { SNAPSHOT_PREFIX: prefix, HEALTH_MAX_AGE_SECONDS: '3153600000', ...vars },
    ...rest,
  };
}

/** A rate limiting binding of the template, with the limit the test wants. */
function ratelimit(name: string, limit: number): Record<string, { simple: { limit: number; period: number } }> {
  const t = template.ratelimits.find((r) => r.name === name);
  if (!t) throw new Error(`${TEMPLATE_PATH} has no rate limiting binding ${name}`);
  return { [name]: { simple: { limit, period: t.simple.period } } };
}

function send(worker: string, ip: string) {
  return async (target: string, init: RequestInitLike = {}): Promise<ResponseLike> =>
    mf.dispatchFetch(`http://${worker}.edge.test${target}`, { method: init.method ?? 'GET', headers: { 'CF-Connecting-IP': ip, ...init.headers }, ...(init.body !== undefined ? { body: init.body } : {}) });
}

/** GET (or another method) and read the body: status, headers, text. */
async function call(worker: string, target: string, ip: string, init: RequestInitLike = {}) {
  const res = await send(worker, ip)(target, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** What the tests read of a served /openapi.json. */
interface OpenApiOperation {
  security?: unknown[];
  deprecated?: boolean;
  'x-access-tier'?: string;
  responses: Record<string, { content?: Record<string, { 'x-problem-types'?: string[] }> }>;
}
interface OpenApiDoc {
  servers: unknown;
  security: unknown[];
  paths: Record<string, { get: OpenApiOperation }>;
}
const problemTypes = (op: OpenApiOperation, status: string): string[] | undefined => op.responses[status]?.content?.['application/problem+json']?.['x-problem-types'];

/** snapshot.json of a built snapshot, edited, as bytes. */
function editedInfo(out: string, edit: (info: Record<string, unknown>) => void): Uint8Array {
  const info = JSON.parse(fs.readFileSync(path.join(out, 'snapshot.json'), 'utf8')) as Record<string, unknown>;
  edit(info);
  return new TextEncoder().encode(`${JSON.stringify(info)}\n`);
}

beforeAll(async () => {
  nowMs = Date.parse(smallDemo().now);
  // The small demo, built as e2e-serve builds it, but with the rate limit off: the end-to-end checks
  // send hundreds of requests from one client. Built once per run (test/helpers/demo-fixture.ts, shared
  // with test/edge-lambda.test.ts) and read in place; its database copied.
  const built = await builtSmallDemo('rate-limit-off');
  demoOut = built.out;
  db = copyOfDb(built.db).open();
  demoBase = snapshotInfo(demoOut).base_url;
  keyedOut = buildEmpty({ render: { base_url: 'https://keyed.example' }, edge: { access: { mode: 'keyed' } } });
  limitedOut = buildEmpty({ render: { base_url: 'https://limited.example' }, edge: { rate_limit: { requests: 4, window_seconds: 60 }, deprecations: [DEPRECATION] } });

  mf = new Miniflare({
    r2Persist: snapshotTempDir('worker-r2-'),
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.on('data', (d: Buffer) => (workerLog += d.toString()));
      stderr.on('data', (d: Buffer) => (workerLog += d.toString()));
    },
    workers: [
      edgeWorker('demo', 'demo/'),
      edgeWorker('keyed', 'keyed/', {
        vars: { API_KEYS: KEYS.map((k) => JSON.stringify(k)).join('\n') }, // JSON lines
        ratelimits: { ...ratelimit('RATE_LIMITER', BINDING_LIMIT), ...ratelimit('RATE_LIMITER_KEYED', BINDING_KEYED_LIMIT) },
      }),
      edgeWorker('limited', 'limited/', { vars: { API_KEYS: JSON.stringify(KEYS) } }), // a JSON array
      edgeWorker('old', 'old/'),
      edgeWorker('broken', 'broken/'),
      edgeWorker('live', 'live/'),
      edgeWorker('live2', 'live2/'),
      { name: 'loader', modules: true, script: BUCKET_LOADER_SCRIPT, compatibilityDate: template.compatibility_date, routes: ['loader.edge.test/*'], r2Buckets: { BUCKET: 'snapshot' } },
    ],
  });
  bucket = batchingBucket(async (method, body, key) => {
    const url = key === undefined ? 'http://loader.edge.test/' : `http://loader.edge.test/?key=${encodeURIComponent(key)}`;
    // Typed as the Fetch API's Response: miniflare's own Response class has the same surface.
    return (await mf.dispatchFetch(url, { method, ...(body !== null ? { body } : {}) })) as unknown as Response;
  });
  const filled = await fillBucket(bucket, demoOut, 'demo/');
  expect(filled.files).toBeGreaterThan(10_000);
  // every file of the manifest, its shards and manifest.json
  const shards = (JSON.parse(fs.readFileSync(path.join(demoOut, 'manifest.json'), 'utf8')) as { shards: unknown[] }).shards.length;
  expect(filled.uploaded.objects).toBe(filled.files + shards + 1);
  await fillBucket(bucket, keyedOut, 'keyed/');
  for (const prefix of ['limited/', 'old/', 'live/', 'live2/']) await fillBucket(bucket, limitedOut, prefix);
  // a snapshot of a build from before snapshot.json carried the policy
  await bucket.put('old/snapshot.json', editedInfo(limitedOut, (i) => delete i.edge));
  await bucket.put('outside.json', new TextEncoder().encode('{"secret":true}'));
  await bucket.put(`demo/${BULK_SAMPLE.path}`, BULK_SAMPLE.bytes);

  // "Follows the snapshot": both Workers read snapshot.json now (one counted request each), then a new
  // snapshot.json is published; the test near the end looks again once the Worker's 10 s have passed.
  expect((await call('live', '/v1/network', '192.0.2.70')).headers.get('ratelimit')).toBe('"anonymous";r=3;t=60');
  expect((await call('live2', '/v1/network', '192.0.2.71')).headers.get('ratelimit')).toBe('"anonymous";r=3;t=60');
  await bucket.put('live/snapshot.json', editedInfo(limitedOut, (i) => (i.base_url = 'https://v2.example')));
  await bucket.put('live2/snapshot.json', editedInfo(limitedOut, (i) => ((i.edge as { rate_limit: unknown }).rate_limit = { requests: 6, window_seconds: 60, keyed_multiplier: 10 })));
  changedAt = Date.now();
}, 180_000);

afterAll(async () => {
  db?.close();
  await mf?.dispose();
});

describe('the Worker bundle', () => {
  it('is a module Worker under 121,000 bytes minified, with no zod and no Node import in it', () => {
    const src = fs.readFileSync(BUNDLE, 'utf8');
    // The budget (docs/edge.md "Worker"): 100,000 until the participant list's full pages (cell runs, the walk's fallback) took it to 101,330;
    // 110,000 until the derived keys of list@3 and the trigram table took it to 110,220; 112,000 until the walks of the
    // counted posting lists in other orders took it to 112,076; 113,000 until the trigram lists in other orders and the merged
    // walk took it to 113,638; 115,000 until the binary facet cube and the weighing of a search's walk with filters took it to 115,938;
    // 117,000 until the grams index's reader (every name search counted) took it to 119,848.
    expect(Buffer.byteLength(src)).toBeLessThan(121_000);
    expect(src).toMatch(/export\s*\{[^}]*as default/);
    expect(src).not.toMatch(/from\s*["']node:|require\(["']node:|import\(["']node:/);
    // esbuild's metafile of the same build lists every input that went into the bundle
    const meta = JSON.parse(fs.readFileSync('dist/worker.meta.json', 'utf8')) as { inputs: Record<string, unknown>; outputs: Record<string, { bytes: number; inputs: Record<string, unknown> }> };
    const inputs = Object.keys(meta.outputs['dist/worker.mjs']!.inputs);
    expect(inputs).toContain('src/edge/worker.ts');
    expect(inputs.filter((f) => /(^|\/)node_modules\/zod\//.test(f) || f.startsWith('src/config/schema'))).toEqual([]);
    expect(meta.outputs['dist/worker.mjs']!.bytes).toBe(Buffer.byteLength(src));
    expect(src).not.toMatch(/ZodError|\$ZodType|_zod/);
  });

  it('templates/wrangler.jsonc configures it: entry, R2 binding, variables, rate limiting bindings; no EDGE_POLICY', () => {
    expect(template.main).toBe(BUNDLE);
    expect(template.no_bundle).toBe(true);
    expect(template.compatibility_date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(template.r2_buckets.map((b) => b.binding)).toEqual(['SNAPSHOT']);
    expect(Object.keys(template.vars).sort()).toEqual(['HEALTH_MAX_AGE_SECONDS', 'SNAPSHOT_PREFIX']);
    expect(template.ratelimits.map((r) => r.name)).toEqual(['RATE_LIMITER', 'RATE_LIMITER_KEYED']);
    for (const r of template.ratelimits) {
      expect(r.namespace_id).toMatch(/^\d+$/);
      expect([10, 60]).toContain(r.simple.period);
    }
    // the defaults of edge.rate_limit (60 per 60 s, keys x10)
    expect(template.ratelimits.map((r) => r.simple.limit)).toEqual([60, 600]);
    const text = fs.readFileSync(TEMPLATE_PATH, 'utf8');
    expect(text).not.toMatch(/"EDGE_POLICY"\s*:/);
    expect(text).not.toMatch(/"API_KEYS"\s*:/); // a secret, never a variable
  });
});

describeE2e('Worker (workerd, R2): every endpoint equals the oracle', () => ({
  send: send('demo', '198.51.100.10'),
  db,
  out: demoOut,
  nowMs,
  baseUrl: demoBase,
  origin: 'http://demo.edge.test',
  policy: edgePolicyOf(snapshotInfo(demoOut).edge),
  bulkSample: true,
}));

describe('Worker: the policy of the snapshot it serves', () => {
  it('build wrote the edge section of its configuration into snapshot.json', () => {
    const demo = JSON.parse(fs.readFileSync(path.join(demoOut, 'snapshot.json'), 'utf8')) as Record<string, unknown>;
    expect(Object.keys(demo)).toEqual(['generated_at', 'base_url', 'edge']);
    expect(demo.edge).toEqual(parseConfig({ edge: { rate_limit: 'off' } }, '/tmp').edge);
    expect(snapshotInfo(keyedOut)).toMatchObject({ edge: { access: { mode: 'keyed' } } });
  });

  it('keyed access (a snapshot built with access "keyed"): 403 without a key or below the tier; keyless endpoints open', async () => {
    let ip = 10;
    const get = (target: string, key?: string) => call('keyed', target, `192.0.2.${ip++}`, key ? { headers: { Authorization: `Bearer ${key}` } } : {});
    // the OpenAPI document (keyless) says what the Worker enforces, served from the Worker's origin
    const doc = await get('/openapi.json');
    expect(doc.status).toBe(200);
    const openapi = JSON.parse(doc.text) as OpenApiDoc;
    expect(openapi.servers).toEqual([{ url: 'http://keyed.edge.test' }]);
    expect(openapi.security).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }]); // required: no {} alternative
    expect(openapi.paths['/v1/hosts']!.get['x-access-tier']).toBe('network');
    expect(openapi.paths['/v1/participants']!.get['x-access-tier']).toBe('market');
    for (const [p, item] of Object.entries(openapi.paths)) {
      const keyless = ['/health', '/health/db', '/v1/network', '/v1/stats/participants', '/openapi.json', '/.well-known/api-catalog', '/problems/{name}'].includes(p);
      expect(problemTypes(item.get, '403'), p).toEqual(keyless ? undefined : ['https://keyed.example/problems/api-key-required', 'https://keyed.example/problems/insufficient-tier']);
      expect(item.get.security, p).toEqual(keyless ? [{}, { bearerAuth: [] }, { apiKeyHeader: [] }] : undefined);
      expect(problemTypes(item.get, '429'), p).toEqual(['https://iana.org/assignments/http-problem-types#quota-exceeded']); // 60 per 60 s
    }

    for (const target of ['/v1/hosts', '/v1/incidents?limit=5', '/v1/nope']) {
      const r = await get(target);
      expect(r.status, target).toBe(403);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(JSON.parse(r.text)).toMatchObject({ type: 'https://keyed.example/problems/api-key-required', status: 403, instance: target.split('?')[0] });
    }
    const unknown = await get('/v1/hosts', 'pk_live_unknown');
    expect(JSON.parse(unknown.text)).toMatchObject({ type: 'https://keyed.example/problems/api-key-required', detail: expect.stringContaining('not valid') });
    const low = await get('/v1/participants', NETWORK_KEY);
    expect(low.status).toBe(403);
    expect(JSON.parse(low.text)).toMatchObject({ type: 'https://keyed.example/problems/insufficient-tier', status: 403 });

    const hosts = await get('/v1/hosts', NETWORK_KEY);
    expect(hosts.status).toBe(200);
    expect(JSON.parse(hosts.text)).toMatchObject({ items: [] });
    expect(hosts.headers.get('cache-control')).toBe('private, max-age=60, stale-while-revalidate=300');
    expect(hosts.headers.get('vary')).toBe('Authorization, X-API-Key');
    expect(hosts.headers.get('ratelimit-policy')).toBe('"keyed";q=600;w=60');
    expect((await get('/v1/participants', MARKET_KEY)).status).toBe(200);
    for (const keyless of ['/v1/network', '/v1/stats/participants', '/health', '/.well-known/api-catalog', '/openapi.json', '/problems/insufficient-tier']) {
      const r = await get(keyless);
      expect(r.status, keyless).toBe(200);
      expect(r.headers.get('cache-control'), keyless).not.toMatch(/private/);
    }
    // the type of a 403 resolves, without a key, to its page
    for (const refused of [await get('/v1/hosts'), low]) {
      const type = (JSON.parse(refused.text) as { type: string }).type;
      const r = await get(new URL(type).pathname);
      expect(r.status, type).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.text).toContain(`<strong>403</strong>`);
      expect(r.text).toContain(`<code>${type}</code>`);
    }
    const unknown404 = await get('/problems/no-such-problem');
    expect(unknown404.status).toBe(404);
    expect(JSON.parse(unknown404.text)).toMatchObject({ type: 'https://keyed.example/problems/not-found', status: 404 });
  });

  it('the rate limiting bindings decide: 429 with Retry-After = the window, the quota-exceeded problem, per identity', async () => {
    // Miniflare's binding counts in fixed windows aligned to the clock: keep clear of a window's end.
    const period = template.ratelimits[0]!.simple.period * 1000;
    if (Date.now() % period > period - 2000) await sleep(period - (Date.now() % period) + 100);
    const ip = '203.0.113.50';
    for (let i = 0; i < BINDING_LIMIT; i++) {
      const r = await call('keyed', '/v1/network', ip);
      expect(r.status).toBe(200);
      // the headers come from the in-isolate counter of the snapshot's policy (60 per 60 s)
      expect(r.headers.get('ratelimit-policy')).toBe('"anonymous";q=60;w=60');
    }
    // the policy's counter would allow 60: the binding refuses the fourth
    const over = await call('keyed', '/v1/network', ip);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(over.headers.get('ratelimit')).toBe('"anonymous";r=0;t=60');
    expect(over.headers.get('access-control-allow-origin')).toBe('*');
    expect(over.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(over.text)).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', status: 429, 'violated-policies': ['anonymous'] });
    // an IPv6 client counts per /64
    for (let i = 0; i < BINDING_LIMIT; i++) expect((await call('keyed', '/health', `2001:db8:7:8::${i + 1}`)).status).toBe(200);
    expect((await call('keyed', '/health', '2001:db8:7:8:ffff::1')).status).toBe(429);
    expect((await call('keyed', '/health', '2001:db8:7:9::1')).status).toBe(200);
    // a valid key is its own identity, decided by RATE_LIMITER_KEYED, from any address
    const keyed = { headers: { 'X-API-Key': BURST_KEY } };
    for (let i = 0; i < BINDING_KEYED_LIMIT; i++) expect((await call('keyed', '/v1/network', `198.51.100.${100 + i}`, keyed)).status).toBe(200);
    const keyOver = await call('keyed', '/v1/network', '198.51.100.200', keyed);
    expect(keyOver.status).toBe(429);
    expect(keyOver.headers.get('ratelimit-policy')).toBe('"keyed";q=600;w=60');
    expect(JSON.parse(keyOver.text)).toMatchObject({ 'violated-policies': ['keyed'] });
    // a preflight is not counted
    const pre = await call('keyed', '/v1/network', ip, { method: 'OPTIONS' });
    expect(pre.status).toBe(204);
  });

  it('without a binding the in-isolate counter decides (a snapshot built with 4 requests per 60 s); deprecation headers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call('limited', '/v1/network', '203.0.113.9');
      statuses.push(r.status);
      if (i === 0) {
        expect(r.headers.get('ratelimit-policy')).toBe('"anonymous";q=4;w=60');
        expect(r.headers.get('ratelimit')).toMatch(/^"anonymous";r=3;t=(60|59)$/);
      }
      if (r.status === 429) {
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(JSON.parse(r.text)).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', 'violated-policies': ['anonymous'] });
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const keyed = await call('limited', '/v1/network', '203.0.113.9', { headers: { Authorization: `Bearer ${MARKET_KEY}` } });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('ratelimit-policy')).toBe('"keyed";q=40;w=60');
    const hosts = await call('limited', '/v1/hosts', '203.0.113.10');
    expect(hosts.status).toBe(200);
    expect(hosts.headers.get('deprecation')).toBe(`@${Date.parse(DEPRECATION.deprecation) / 1000}`);
    expect(hosts.headers.get('sunset')).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    expect(hosts.headers.get('link')).toBe(`<${DEPRECATION.link}>; rel="deprecation"; type="text/html"`);
    expect((await call('limited', '/v1/sml', '203.0.113.10')).headers.get('deprecation')).toBeNull();
    // the OpenAPI document says so: 429s, the deprecated operation, open access
    const openapi = JSON.parse((await call('limited', '/openapi.json', '203.0.113.13')).text) as OpenApiDoc;
    expect(openapi.servers).toEqual([{ url: 'http://limited.edge.test' }]);
    expect(openapi.security).toContainEqual({});
    expect(problemTypes(openapi.paths['/v1/sml']!.get, '429')).toEqual(['https://iana.org/assignments/http-problem-types#quota-exceeded']);
    expect(problemTypes(openapi.paths['/v1/sml']!.get, '403')).toBeUndefined();
    expect(openapi.paths['/v1/hosts']!.get.deprecated).toBe(true);
    expect(openapi.paths['/v1/sml']!.get.deprecated).toBeUndefined();
    // a snapshot built with the rate limit off: no 429 anywhere
    const demo = JSON.parse((await call('demo', '/openapi.json', '203.0.113.13')).text) as OpenApiDoc;
    for (const [p, item] of Object.entries(demo.paths)) expect(item.get.responses['429'], p).toBeUndefined();
  });

  it('a snapshot.json without edge (a build from before) is served with the default policy', async () => {
    const r = await call('old', '/v1/hosts', '203.0.113.11');
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-policy')).toBe('"anonymous";q=60;w=60');
    expect(r.headers.get('deprecation')).toBeNull();
    expect(r.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
  });

  it('answers 503 while no snapshot is published and 500 for a broken snapshot.json, with CORS; the reason goes to the log', async () => {
    const expectBare = (r: { status: number; headers: { get(n: string): string | null } }, status: number) => {
      expect(r.status).toBe(status);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.headers.get('access-control-expose-headers')).toContain('Retry-After');
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.headers.get('cache-control')).toBe('no-store');
    };
    for (const target of ['/v1/network', '/health', '/openapi.json']) {
      const r = await call('broken', target, '203.0.113.12');
      expectBare(r, 503);
      expect(r.headers.get('retry-after')).toBe('10');
      expect(JSON.parse(r.text)).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'No snapshot is published here yet; try again later.' });
    }
    const head = await call('broken', '/v1/network', '203.0.113.12', { method: 'HEAD' });
    expectBare(head, 503);
    expect(head.text).toBe('');
    await expect.poll(() => workerLog).toContain('no snapshot.json under the prefix "broken/"');

    await bucket.put('broken/snapshot.json', new TextEncoder().encode('{"generated_at":'));
    const notJson = await call('broken', '/v1/network', '203.0.113.12');
    expectBare(notJson, 500);
    expect(JSON.parse(notJson.text)).toMatchObject({ type: 'about:blank', status: 500, detail: 'The service is misconfigured; the operator has been told.' });
    await expect.poll(() => workerLog).toMatch(/configuration error: snapshot\.json: /);

    await bucket.put('broken/snapshot.json', editedInfo(limitedOut, (i) => ((i.edge as { access: { mode: string } }).access.mode = 'closed')));
    expectBare(await call('broken', '/v1/network', '203.0.113.12'), 500);
    await expect.poll(() => workerLog).toContain('edge.access: expected');
  });

  it('never reads outside the snapshot prefix for encoded traversal', async () => {
    for (const p of ['/%2e%2e/outside.json', '/v1/%2e%2e/%2e%2e/outside', '/v1/..%2foutside', '/v1/network%00', '/..%5coutside.json']) {
      const r = await call('demo', p, '198.51.100.6');
      expect(r.status, p).toBeGreaterThanOrEqual(400);
      expect(r.status, p).toBeLessThan(500);
      expect(r.text).not.toContain('secret');
    }
  });

  it('follows the snapshot: a new snapshot.json with the same policy keeps the counters, a new policy applies with fresh ones', async () => {
    const wait = changedAt + SNAPSHOT_INFO_TTL_MS + 500 - Date.now();
    if (wait > 0) await sleep(wait);
    // same policy, new base URL: the new snapshot.json is read, the handler (and its counters) kept
    const same = await call('live', '/v1/nope', '192.0.2.70');
    expect(same.status).toBe(404);
    expect(JSON.parse(same.text)).toMatchObject({ type: 'https://v2.example/problems/not-found' });
    expect(same.headers.get('ratelimit')).toMatch(/^"anonymous";r=2;t=\d+$/);
    // /openapi.json's problem types follow the base URL of the snapshot.json in force (the stored document's are the old one's)
    const openapi = JSON.parse((await call('live', '/openapi.json', '192.0.2.72')).text) as OpenApiDoc;
    expect(problemTypes(openapi.paths['/v1/hosts/{hostname}']!.get, '404')).toEqual(['https://v2.example/problems/host-not-found']);
    // a new policy (6 requests per window): a new handler, fresh counters
    const changed = await call('live2', '/v1/network', '192.0.2.71');
    expect(changed.status).toBe(200);
    expect(changed.headers.get('ratelimit-policy')).toBe('"anonymous";q=6;w=60');
    expect(changed.headers.get('ratelimit')).toBe('"anonymous";r=5;t=60');
  });
});
