// The AWS Lambda function: the bundle (dist/lambda.mjs, built by the global setup) loaded in this
// process and invoked with Lambda function URL events (payload format 2.0) built from requests, over a
// real S3-protocol server (s3rver on 127.0.0.1) that the real publish engine filled. The small demo's
// snapshot answers the same HTTP end-to-end checks as `serve` and the Worker
// (test/helpers/e2e-suite.ts); small snapshots built from an empty database check keyed access (403),
// base64 bodies, the client address, and the 503 of a prefix without a snapshot. What is not tested
// here: AWS itself (Lambda's function URL front end, CloudFront, IAM), see docs/edge.md "AWS Lambda".
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { ALLOWED_METHODS, CACHE_CONTROL } from '../src/edge/handler.js';
import { edgePolicyOf } from '../src/edge/policy.js';
import { runPublish, type PublishSummary } from '../src/publish/index.js';
import { runBuild } from '../src/render/build.js';
import type { FunctionUrlEvent, FunctionUrlHandler, FunctionUrlResult } from '../src/serve/lambda.js';
import { builtSmallDemo, copyOfDb, smallDemo } from './helpers/demo-fixture.js';
import { BULK_SAMPLE, describeE2e, type RequestInitLike, type ResponseLike, type SendFn } from './helpers/e2e-suite.js';
import { tempDir } from './helpers/feeds.js';
import { S3RVER_CREDENTIALS, startS3rver, type S3Server } from './helpers/s3.js';
import { oracleAnswer, snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';

const BUNDLE = 'dist/lambda.mjs';
const BUCKET = 'snapshots';
/** The bundle's exports (the module is the built src/serve/lambda.ts). */
type LambdaModule = typeof import('../src/serve/lambda.js');

const hash = (key: string) => createHash('sha256').update(key).digest('hex');
const NETWORK_KEY = 'pk_live_network';
const MARKET_KEY = 'pk_live_market';
const KEYS = [
  { sha256: hash(NETWORK_KEY), tiers: ['network'], label: 'network' },
  { sha256: hash(MARKET_KEY), tiers: ['network', 'market'], label: 'market' },
];
/** The host name of the function URL the events are sent to. */
const FUNCTION_URL_HOST = 'abcdefghij.lambda-url.eu-west-1.on.aws';
/** Bytes that are not UTF-8 (a lone continuation byte, an overlong form, 0xff), with a NUL and a BOM. */
const BINARY = Uint8Array.from([0xef, 0xbb, 0xbf, 0x80, 0x00, 0xc0, 0xaf, 0xff, 0x7b, 0x0a]);

let s3: S3Server;
let lambda: LambdaModule;
let db: Db;
let nowMs: number;
let demoOut: string;
let demoBase: string;
let smallOut: string;
let demoPublish: PublishSummary;
const savedEnv = { ...process.env };
/** What the handlers built here wrote to their log. */
const logged: string[] = [];
const log = { warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) };

/** The function's environment for the snapshot under `prefix` of the test bucket. */
function envFor(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return { SNAPSHOT_BUCKET: BUCKET, SNAPSHOT_PREFIX: prefix, SNAPSHOT_ENDPOINT: s3.endpoint, SNAPSHOT_FORCE_PATH_STYLE: 'true', HEALTH_MAX_AGE_SECONDS: '3153600000', ...extra };
}

/** Publishes a built snapshot to `prefix` of the bucket with the publish engine, as `publish` does. */
function publish(out: string, prefix: string): Promise<PublishSummary> {
  const config = parseConfig(
    { publish: { target: { type: 's3', bucket: BUCKET, prefix, endpoint: s3.endpoint, force_path_style: true, checksums: 'when_required' }, concurrency: 32, retention_hours: 0 } },
    tempDir('lambda-config-'),
  );
  return runPublish({ config, outDir: out });
}

/**
 * Runs `start` with the temporary directory on the RAM disk when there is one with room to spare (as
 * snapshotTempDir does): s3rver keeps each object in files there, and publishing the demo's 29,000
 * objects onto a real disk takes twice as long.
 */
async function onRamDisk<T>(start: () => Promise<T>): Promise<T> {
  const saved = process.env.TMPDIR;
  try {
    const st = fs.statfsSync('/dev/shm');
    if (st.bavail * st.bsize > 4 * 1024 ** 3) process.env.TMPDIR = '/dev/shm';
  } catch {
    // no /dev/shm: the ordinary temporary directory
  }
  try {
    return await start();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** A real build of a database without any data: a snapshot of every route, with the config's edge policy. */
function buildEmpty(config: Record<string, unknown>): string {
  const out = snapshotTempDir('lambda-small-');
  runBuild({ config: parseConfig(config, tempDir('lambda-config-')), dbPath: path.join(tempDir('lambda-empty-db-'), 'empty.sqlite'), outDir: out, nowMs });
  return out;
}

/**
 * The function URL event for a request target exactly as sent (path and query as written): the header
 * names in lower case, a header sent twice as one comma-separated value, cookies apart, a body in
 * base64, the client's address as sourceIp.
 */
function eventOf(target: string, init: RequestInitLike, sourceIp: string): FunctionUrlEvent {
  const q = target.indexOf('?');
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    if (name !== 'cookie') headers[name] = value;
  });
  headers.host = FUNCTION_URL_HOST;
  const cookie = new Headers(init.headers).get('cookie');
  return {
    version: '2.0',
    rawPath: q < 0 ? target : target.slice(0, q),
    rawQueryString: q < 0 ? '' : target.slice(q + 1),
    headers,
    ...(cookie !== null ? { cookies: cookie.split('; ') } : {}),
    ...(init.body !== undefined ? { body: Buffer.from(init.body).toString('base64') } : {}),
    isBase64Encoded: init.body !== undefined,
    requestContext: { domainName: headers.host, http: { method: init.method ?? 'GET', sourceIp } },
  };
}

/** What a client receives for a function URL response: the body decoded, no body where HTTP has none. */
function responseOf(result: FunctionUrlResult): Response {
  const bytes = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body, 'utf8');
  const nullBody = [204, 304].includes(result.statusCode) || bytes.length === 0;
  return new Response(nullBody ? null : bytes, { status: result.statusCode, headers: result.headers });
}

/**
 * The handler as a fetch-like function for request targets, from one client address. Like fetch (and
 * any HTTP client) it sends the target as the URL parser writes it: a raw space in a query becomes %20.
 */
function sender(handle: FunctionUrlHandler, sourceIp: string): SendFn {
  return async (target: string, init: RequestInitLike = {}): Promise<ResponseLike> => {
    const url = new URL(target, 'http://client.test');
    return responseOf(await handle(eventOf(url.pathname + url.search, init, sourceIp)));
  };
}

async function call(handle: FunctionUrlHandler, target: string, init: RequestInitLike = {}, sourceIp = '198.51.100.7') {
  const result = await handle(eventOf(target, init, sourceIp));
  const res = responseOf(result);
  return { result, status: res.status, headers: res.headers, text: await res.text() };
}

beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS); // the SDK's default chain, for publish and the function
  nowMs = Date.parse(smallDemo().now);
  // The small demo, built as e2e-serve builds it, but with the rate limit off: the end-to-end checks
  // send hundreds of requests from one client. Built once per run (test/helpers/demo-fixture.ts, shared
  // with test/edge-worker.test.ts) and read in place; its database copied.
  const built = await builtSmallDemo('rate-limit-off');
  demoOut = built.out;
  db = copyOfDb(built.db).open();
  demoBase = snapshotInfo(demoOut).base_url;
  smallOut = buildEmpty({ render: { base_url: 'https://keyed.example' }, edge: { access: { mode: 'keyed' } } });

  s3 = await onRamDisk(() => startS3rver([BUCKET]));
  demoPublish = await publish(demoOut, 'demo/');
  for (const prefix of ['keyed/', 'binary/']) await publish(smallOut, prefix);
  // An answer whose bytes are not UTF-8: the file served as it is of one prefix, replaced; and its
  // openapi.json, which the edge regenerates from its components.schemas, broken the same way.
  const client = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', requestChecksumCalculation: 'WHEN_REQUIRED' });
  for (const key of ['binary/.well-known/api-catalog', 'binary/openapi.json']) await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: BINARY }));
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `demo/${BULK_SAMPLE.path}`, Body: BULK_SAMPLE.bytes }));
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `demo/${LARGE_BULK}`, Body: LARGE_BYTES }));
  client.destroy();

  // The bundle, as Lambda loads it; its `handler` reads process.env on first use.
  lambda = (await import(pathToFileURL(path.resolve(BUNDLE)).href)) as LambdaModule; // a dynamic import is typed unknown
  Object.assign(process.env, envFor('demo/'));
}, 300_000);

afterAll(async () => {
  db?.close();
  await s3?.close();
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
});

describe('the Lambda bundle', () => {
  it('is one ES module under 700,000 bytes, the AWS SDK inside, exporting handler', () => {
    const src = fs.readFileSync(BUNDLE, 'utf8');
    expect(Buffer.byteLength(src)).toBeLessThan(700_000);
    expect(src).not.toMatch(/from\s*["']@aws-sdk|import\(["']@aws-sdk/); // nothing left to the runtime's SDK
    expect(src).toMatch(/sourceMappingURL=lambda\.mjs\.map/);
    const meta = JSON.parse(fs.readFileSync('dist/lambda.meta.json', 'utf8')) as { outputs: Record<string, { bytes: number; inputs: Record<string, unknown> }> };
    const inputs = Object.keys(meta.outputs[BUNDLE]!.inputs);
    expect(inputs).toEqual(expect.arrayContaining(['src/serve/lambda.ts', 'src/edge/snapshot-policy.ts', 'src/edge/handler.ts']));
    expect(inputs.some((f) => f.includes('node_modules/@aws-sdk/client-s3/'))).toBe(true);
    expect(inputs.filter((f) => /(^|\/)node_modules\/zod\//.test(f))).toEqual([]);
    expect(typeof lambda.handler).toBe('function');
    expect(typeof lambda.createLambdaHandler).toBe('function');
  });

  it('the snapshot was published whole by the publish engine', () => {
    expect(demoPublish.files).toBeGreaterThan(10_000);
    expect(demoPublish.uploaded.objects).toBeGreaterThan(demoPublish.files);
    expect(s3.objects(BUCKET, 'demo/').has('manifest.json')).toBe(true);
  });
});

describeE2e('Lambda (function URL events, S3 via s3rver): every endpoint equals the oracle', () => ({
  send: sender(lambda.handler, '198.51.100.10'),
  db,
  out: demoOut,
  nowMs,
  baseUrl: demoBase,
  origin: `https://${FUNCTION_URL_HOST}`,
  policy: edgePolicyOf(snapshotInfo(demoOut).edge),
  bulkSample: true,
}));

/** A bulk file over what a function URL returns (FUNCTION_URL_MAX_BODY). */
const LARGE_BULK = 'bulk/e2e/large.ndjson.gz';
const LARGE_BYTES = new Uint8Array(5 * 1024 * 1024).map((_, i) => (i * 7919) % 251);

describe('Lambda: the function URL adapter', () => {
  it('answers ranges of a bulk file over 4 MiB, and refuses its whole body (a function URL returns at most 6 MB) without reading it', async () => {
    const range = await call(lambda.handler, `/${LARGE_BULK}`, { headers: { Range: 'bytes=4194000-4194999' } });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 4194000-4194999/${LARGE_BYTES.length}`);
    expect(range.result.isBase64Encoded).toBe(true);
    expect(Buffer.from(range.result.body, 'base64').equals(Buffer.from(LARGE_BYTES.subarray(4194000, 4195000)))).toBe(true);
    const head = await call(lambda.handler, `/${LARGE_BULK}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(LARGE_BYTES.length));
    const whole = await call(lambda.handler, `/${LARGE_BULK}`);
    expect(whole.status).toBe(500);
    expect(whole.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(whole.text)).toMatchObject({ status: 500, detail: expect.stringContaining('Range: bytes=a-b') });
  });

  it('takes the raw target: encoded characters in the query and the path reach the resolver as sent', async () => {
    const hosts = JSON.parse((await call(lambda.handler, '/v1/hosts')).text) as { items: { hostname: string }[] };
    const host = hosts.items[0]!.hostname;
    const participants = JSON.parse((await call(lambda.handler, '/v1/participants?limit=3')).text) as { items: { id: string }[] };
    const pid = participants.items[0]!.id;
    const targets = [
      `/v1/hosts/${host}/uptime?from=2026-11-19T01%3A00%3A00%2B01%3A00&to=2026-11-19T06%3A00%3A00.5Z&limit=5`, // %3A, %2B
      `/v1/hosts/${host}/uptime?from=2026-11-19T01:00:00+01:00&limit=3`, // a raw "+" is a space, as for any client
      `/v1/participants/${encodeURIComponent(pid)}`, // "::" as %3A%3A in the path
      `/v1/participants?q=${encodeURIComponent('zz top')}&limit=2`,
      `/v1/participants?q=zz%20top&q=%C3%A9t%C3%A9&limit=2`, // UTF-8 escapes, a repeated parameter
      '/v1/events?type=%62ogus', // an escaped letter
    ];
    for (const target of targets) {
      const r = await call(lambda.handler, target);
      const want = oracleAnswer(db, new URL(target, 'http://e2e.test'), nowMs, demoBase);
      expect({ target, status: r.status, body: r.text }).toEqual({ target, status: want.status, body: want.text });
      expect(r.result.isBase64Encoded).toBe(false);
    }
    // Dot segments the URL parser would resolve away are refused on the raw target, before any read.
    for (const target of ['/v1/%2e%2e/openapi.json', '/v1/hosts/..%2f..%2fsnapshot.json', '/v1//hosts']) {
      const r = await call(lambda.handler, target);
      expect(r.status, target).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ status: 400 });
    }
  });

  it('multi-value headers: a repeated request header arrives joined; response headers are one value each', async () => {
    const first = await call(lambda.handler, '/v1/events?limit=2');
    const etag = first.headers.get('etag')!;
    // a client sending If-None-Match twice: the function URL joins the values with ", "
    const event = eventOf('/v1/events?limit=2', {}, '198.51.100.8');
    event.headers!['if-none-match'] = `"0000", ${etag}`;
    const notModified = await lambda.handler(event);
    expect(notModified.statusCode).toBe(304);
    expect(notModified.body).toBe('');
    expect(notModified.headers.etag).toBe(etag);
    for (const [name, value] of Object.entries(first.result.headers)) {
      expect(name, name).toBe(name.toLowerCase());
      expect(typeof value, name).toBe('string');
    }
    expect(first.result.headers['access-control-expose-headers']).toContain('RateLimit, RateLimit-Policy');
    expect(first.result.cookies).toBeUndefined();
  });

  it('bodies that are not UTF-8 go base64 (isBase64Encoded), byte for byte; HEAD has no body', async () => {
    const binary = lambda.createLambdaHandler(envFor('binary/'), { log });
    const r = await call(binary, '/.well-known/api-catalog');
    expect(r.status).toBe(200);
    expect(r.result.isBase64Encoded).toBe(true);
    expect(new Uint8Array(Buffer.from(r.result.body, 'base64'))).toEqual(BINARY);
    expect(r.result.headers['content-length']).toBe(String(BINARY.length));
    const head = await binary(eventOf('/.well-known/api-catalog', { method: 'HEAD' }, '198.51.100.9'));
    expect(head.statusCode).toBe(200);
    expect([head.body, head.isBase64Encoded]).toEqual(['', false]);
    expect(head.headers['content-length']).toBe(String(BINARY.length));
    // a UTF-8 answer goes as text, its bytes unchanged
    const text = await call(binary, '/v1/network');
    expect(text.result.isBase64Encoded).toBe(false);
    expect(Buffer.from(text.result.body, 'utf8').equals(fs.readFileSync(path.join(smallOut, 'v1/network.json')))).toBe(true);
    // a request body (function URLs pass binary bodies in base64) is read by nobody: 405 all the same
    const post = await call(binary, '/v1/network', { method: 'POST', body: '\u00ff\u0000' });
    expect(post.status).toBe(405);
  });

  it('keyed access (a snapshot built with access "keyed", published under another prefix): 403 without a key or below the tier', async () => {
    const keyed = lambda.createLambdaHandler(envFor('keyed/', { API_KEYS: KEYS.map((k) => JSON.stringify(k)).join('\n') }), { log });
    for (const target of ['/v1/hosts', '/v1/incidents?limit=5']) {
      const r = await call(keyed, target);
      expect(r.status, target).toBe(403);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(JSON.parse(r.text)).toMatchObject({ type: 'https://keyed.example/problems/api-key-required', status: 403, instance: target.split('?')[0] });
    }
    const low = await call(keyed, '/v1/participants', { headers: { 'X-API-Key': NETWORK_KEY } });
    expect(JSON.parse(low.text)).toMatchObject({ type: 'https://keyed.example/problems/insufficient-tier', status: 403 });
    const hosts = await call(keyed, '/v1/hosts', { headers: { 'X-API-Key': NETWORK_KEY } });
    expect(hosts.status).toBe(200);
    expect(hosts.headers.get('cache-control')).toBe(CACHE_CONTROL.mutable.replace(/^public/, 'private'));
    expect(hosts.headers.get('ratelimit-policy')).toBe('"keyed";q=600;w=60');
    expect((await call(keyed, '/v1/participants', { headers: { Authorization: `Bearer ${MARKET_KEY}` } })).status).toBe(200);
    const open = await call(keyed, '/v1/network');
    expect(open.status).toBe(200);
    expect(open.headers.get('cache-control')).toBe(CACHE_CONTROL.mutable);

    // /openapi.json (keyless) says what the function enforces, served from the function URL's origin
    const doc = await call(keyed, '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.headers.get('cache-control')).toBe(CACHE_CONTROL.mutable);
    const openapi = JSON.parse(doc.text) as { servers: unknown; security: unknown[]; paths: Record<string, { get: { 'x-access-tier'?: string; responses: Record<string, unknown> } }> };
    expect(openapi.servers).toEqual([{ url: `https://${FUNCTION_URL_HOST}` }]);
    expect(openapi.security).not.toContainEqual({});
    expect(openapi.paths['/v1/participants']!.get).toMatchObject({
      'x-access-tier': 'market',
      responses: { '403': { content: { 'application/problem+json': { 'x-problem-types': ['https://keyed.example/problems/api-key-required', 'https://keyed.example/problems/insufficient-tier'] } } } },
    });
    expect(openapi.paths['/v1/network']!.get.responses['403']).toBeUndefined();
    // the type of a 403 resolves to its page without a key
    const page = await call(keyed, new URL((JSON.parse(low.text) as { type: string }).type).pathname);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('<h1>API key tier too low</h1>');
    expect(page.result.isBase64Encoded).toBe(false);
  });

  it('a stored openapi.json that is not JSON is a 500 internal-error problem, and the reason goes to the log', async () => {
    const binary = lambda.createLambdaHandler(envFor('binary/'), { log });
    const r = await call(binary, '/openapi.json');
    expect(r.status).toBe(500);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(JSON.parse(r.text)).toMatchObject({ type: 'https://keyed.example/problems/internal-error', status: 500, instance: '/openapi.json' });
    expect(logged.join('\n')).toContain(`GET https://${FUNCTION_URL_HOST}/openapi.json: openapi.json is not a JSON document`);
  });

  it('the client address: sourceIp, or with CLIENT_ADDRESS=cloudfront-viewer-address the CloudFront-Viewer-Address header', async () => {
    const remaining = (r: { headers: { get(n: string): string | null } }) => r.headers.get('ratelimit-remaining');
    const direct = lambda.createLambdaHandler(envFor('keyed/'), { log });
    // two viewers behind one CloudFront edge address: one client to the function
    expect(remaining(await call(direct, '/health', { headers: { 'CloudFront-Viewer-Address': '192.0.2.1:5000' } }, '203.0.113.1'))).toBe('59');
    expect(remaining(await call(direct, '/health', { headers: { 'CloudFront-Viewer-Address': '192.0.2.2:5001' } }, '203.0.113.1'))).toBe('58');
    const behind = lambda.createLambdaHandler(envFor('keyed/', { CLIENT_ADDRESS: 'cloudfront-viewer-address' }), { log });
    expect(remaining(await call(behind, '/health', { headers: { 'CloudFront-Viewer-Address': '192.0.2.1:5000' } }, '203.0.113.1'))).toBe('59');
    expect(remaining(await call(behind, '/health', { headers: { 'CloudFront-Viewer-Address': '192.0.2.2:5001' } }, '203.0.113.1'))).toBe('59');
    expect(remaining(await call(behind, '/health', { headers: { 'CloudFront-Viewer-Address': '192.0.2.1:6000' } }, '203.0.113.2'))).toBe('58');
    // IPv6 viewers count per /64, the port dropped
    expect(remaining(await call(behind, '/health', { headers: { 'CloudFront-Viewer-Address': '2001:db8:1:2::1:443' } }, '203.0.113.1'))).toBe('59');
    expect(remaining(await call(behind, '/health', { headers: { 'CloudFront-Viewer-Address': '2001:0db8:0001:0002:ffff:0:0:9:443' } }, '203.0.113.1'))).toBe('58');
    // without the header (a request that did not come through CloudFront): sourceIp
    expect(remaining(await call(behind, '/health', {}, '203.0.113.9'))).toBe('59');
  });

  it('answers 503 with CORS while no snapshot is published under the prefix, and 500 when misconfigured; the reason goes to the log', async () => {
    const empty = lambda.createLambdaHandler(envFor('nothing-here/'), { log });
    for (const target of ['/v1/network', '/health', '/openapi.json']) {
      const r = await call(empty, target);
      expect(r.status, target).toBe(503);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.headers.get('retry-after')).toBe('10');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(JSON.parse(r.text)).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'No snapshot is published here yet; try again later.' });
    }
    const head = await empty(eventOf('/v1/network', { method: 'HEAD' }, '198.51.100.9'));
    expect([head.statusCode, head.body]).toEqual([503, '']);
    expect(logged.join('\n')).toContain('no snapshot.json under the prefix "nothing-here/"');

    const broken = lambda.createLambdaHandler({ SNAPSHOT_PREFIX: '/x', CLIENT_ADDRESS: 'xff' }, { log });
    const r = await call(broken, '/v1/network');
    expect(r.status).toBe(500);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(JSON.parse(r.text)).toMatchObject({ type: 'about:blank', status: 500, detail: 'The service is misconfigured; the operator has been told.' });
    expect(logged.join('\n')).toMatch(/configuration error: SNAPSHOT_BUCKET: .*; SNAPSHOT_PREFIX: .*; CLIENT_ADDRESS: /);
    const badKeys = lambda.createLambdaHandler(envFor('keyed/', { API_KEYS: '{"sha256":"nope"}' }), { log });
    expect((await call(badKeys, '/health')).status).toBe(500);
  });
});

describe('templates/aws: what an operator deploys matches the code', () => {
  const read = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join('templates/aws', file), 'utf8')) as T; // the shapes are checked below
  interface Statement {
    Effect: string;
    Action: string | string[];
    Resource: string;
    Condition?: unknown;
  }
  const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
  const env = read<{ Variables: Record<string, string> }>('lambda-env.json').Variables;
  const target = parseConfig(read('publish.config.json'), 'templates/aws').publish.target;

  it('the function environment names only variables src/serve/lambda.ts reads, and points where publish.config.json publishes', () => {
    const source = fs.readFileSync('src/serve/lambda.ts', 'utf8');
    for (const name of Object.keys(env)) if (name !== 'NODE_OPTIONS') expect(source, name).toContain(`env.${name}`);
    const settings = lambda.lambdaSettings(env);
    expect(settings.clientAddress).toBe('cloudfront-viewer-address');
    expect(target.type).toBe('s3');
    if (target.type !== 's3') return;
    expect([settings.bucket, settings.prefix]).toEqual([target.bucket, target.prefix]);
    expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
  });

  it('the function reads the prefix and nothing else; the publisher reads, writes and deletes there; both may list (404, not 403)', () => {
    if (target.type !== 's3') throw new Error('publish.config.json: an s3 target');
    const objects = `arn:aws:s3:::${target.bucket}/${target.prefix}*`;
    const bucket = `arn:aws:s3:::${target.bucket}`;
    const grants = (file: string) =>
      read<{ Statement: Statement[] }>(file)
        .Statement.map((s) => ({ effect: s.Effect, actions: actions(s).sort(), resource: s.Resource }))
        .sort((a, b) => a.resource.localeCompare(b.resource));
    expect(grants('lambda-policy.json')).toEqual([
      { effect: 'Allow', actions: ['s3:ListBucket'], resource: bucket },
      { effect: 'Allow', actions: ['s3:GetObject'], resource: objects },
    ]);
    expect(grants('publisher-policy.json')).toEqual([
      { effect: 'Allow', actions: ['s3:ListBucket'], resource: bucket },
      { effect: 'Allow', actions: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'], resource: objects },
    ]);
    expect(read<{ Statement: { Principal: unknown; Action: string }[] }>('lambda-trust.json').Statement).toEqual([
      { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
    ]);
  });

  it('CloudFront honours the origin Cache-Control, keys on the whole query string, forwards the viewer address and X-API-Key, never Host or Authorization', () => {
    interface CachePolicy {
      MinTTL: number;
      DefaultTTL: number;
      MaxTTL: number;
      ParametersInCacheKeyAndForwardedToOrigin: { HeadersConfig: { HeaderBehavior: string }; CookiesConfig: { CookieBehavior: string }; QueryStringsConfig: { QueryStringBehavior: string } };
    }
    const cache = read<CachePolicy>('cache-policy.json');
    expect([cache.MinTTL, cache.DefaultTTL]).toEqual([0, 0]);
    expect(cache.MaxTTL).toBeGreaterThanOrEqual(31_536_000); // the immutable class's max-age
    const key = cache.ParametersInCacheKeyAndForwardedToOrigin;
    expect([key.HeadersConfig.HeaderBehavior, key.CookiesConfig.CookieBehavior, key.QueryStringsConfig.QueryStringBehavior]).toEqual(['none', 'none', 'all']);
    const origin = read<{ HeadersConfig: { HeaderBehavior: string; Headers: { Quantity: number; Items: string[] } }; QueryStringsConfig: { QueryStringBehavior: string } }>('origin-request-policy.json');
    expect(origin.HeadersConfig.HeaderBehavior).toBe('whitelist');
    expect(origin.HeadersConfig.Headers.Items.sort()).toEqual(['CloudFront-Viewer-Address', 'X-API-Key']);
    expect(origin.HeadersConfig.Headers.Quantity).toBe(origin.HeadersConfig.Headers.Items.length);
    expect(read<{ SigningBehavior: string; OriginAccessControlOriginType: string }>('origin-access-control.json')).toMatchObject({ SigningBehavior: 'always', OriginAccessControlOriginType: 'lambda' });
  });

  it('the distribution: the function URL as origin over HTTPS, the shim\'s methods, and no caching of the no-store errors CloudFront would otherwise keep 10 s', () => {
    interface Distribution {
      Origins: { Quantity: number; Items: { DomainName: string; OriginAccessControlId: string; CustomOriginConfig: { OriginProtocolPolicy: string } }[] };
      DefaultCacheBehavior: { CachePolicyId: string; OriginRequestPolicyId: string; ViewerProtocolPolicy: string; AllowedMethods: { Quantity: number; Items: string[]; CachedMethods: { Items: string[] } } };
      CustomErrorResponses: { Quantity: number; Items: { ErrorCode: number; ErrorCachingMinTTL: number }[] };
    }
    const d = read<Distribution>('distribution.json');
    expect(d.Origins.Quantity).toBe(1);
    expect(d.Origins.Items[0]).toMatchObject({ DomainName: 'FUNCTION_URL_HOST', OriginAccessControlId: 'ORIGIN_ACCESS_CONTROL_ID', CustomOriginConfig: { OriginProtocolPolicy: 'https-only' } });
    expect(d.DefaultCacheBehavior).toMatchObject({ CachePolicyId: 'CACHE_POLICY_ID', OriginRequestPolicyId: 'ORIGIN_REQUEST_POLICY_ID', ViewerProtocolPolicy: 'https-only' });
    expect(d.DefaultCacheBehavior.AllowedMethods.Items.join(', ')).toBe(ALLOWED_METHODS);
    expect(d.DefaultCacheBehavior.AllowedMethods.Quantity).toBe(3);
    expect(d.DefaultCacheBehavior.AllowedMethods.CachedMethods.Items).toEqual(['GET', 'HEAD']);
    // CloudFront keeps 400, 403, 405, 500 and 503 answers for the error caching minimum TTL whatever
    // their Cache-Control says; the shim's are no-store (a 403 of one client must not reach another).
    expect(d.CustomErrorResponses.Items.map((e) => [e.ErrorCode, e.ErrorCachingMinTTL])).toEqual([400, 403, 405, 500, 503].map((c) => [c, 0]));
    expect(d.CustomErrorResponses.Quantity).toBe(d.CustomErrorResponses.Items.length);
  });
});
