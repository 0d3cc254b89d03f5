// The bundled Worker (dist/worker.mjs, built by the global setup) under workerd via miniflare, reading
// the snapshot from an R2 bucket binding.
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { Miniflare } from 'miniflare';
import { parseEdgePolicy } from '../src/edge/policy.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BUNDLE = 'dist/worker.mjs';
const KEY = 'pk_live_worker';
let mf: Miniflare;

const json = (v: unknown) => `${JSON.stringify(v)}\n`;
/** A hand-made snapshot: the files the composers of these routes read. */
const FILES: Record<string, string> = {
  'manifest.json': JSON.stringify({ generated_at: new Date().toISOString(), files: [] }),
  'snapshot.json': json({ generated_at: new Date().toISOString(), base_url: 'https://api.example' }),
  'v1/network.json': json({ hosts: { up: 5, down: 1, degraded: 0 }, open_incidents: 1 }),
  'v1/hosts.json': json({ items: [], rollup: { hosts: 0 } }),
};

beforeAll(async () => {
  const sha = createHash('sha256').update(KEY).digest('hex');
  mf = new Miniflare({
    modules: true,
    scriptPath: BUNDLE,
    compatibilityDate: '2026-04-01',
    r2Buckets: ['SNAPSHOT'],
    bindings: {
      SNAPSHOT_PREFIX: 'snap/',
      EDGE_POLICY: JSON.stringify({ rate_limit: { requests: 4, window_seconds: 60 }, deprecations: [{ path: '/v1/hosts', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-06-01T00:00:00Z' }] }),
      API_KEYS: JSON.stringify([{ sha256: sha, tiers: ['network', 'market'], label: 'test' }]),
    },
  });
  // Typed as unknown: miniflare's R2 types come from @cloudflare/workers-types, which is not installed.
  const bucket = (await mf.getR2Bucket('SNAPSHOT')) as unknown as { put(key: string, value: string): Promise<unknown> };
  for (const [k, v] of Object.entries(FILES)) await bucket.put(`snap/${k}`, v);
  await bucket.put('outside.json', '{"secret":true}');
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
});

/** Each test uses its own client address so the 4-per-minute limit of one test does not leak. */
function get(path: string, ip: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  return mf.dispatchFetch(`http://edge.test${path}`, { method: init.method ?? 'GET', headers: { 'CF-Connecting-IP': ip, ...init.headers } });
}

describe('Cloudflare Worker bundle', () => {
  it('is an ES module with no Node imports', () => {
    const src = fs.readFileSync(BUNDLE, 'utf8');
    expect(src).not.toMatch(/from\s*["']node:|require\(["']node:|import\(["']node:/);
    expect(src).toMatch(/export\s*\{[^}]*as default/);
  });

  it('answers /health without reading the bucket, and /health/db from the manifest', async () => {
    const res = await get('/health', '198.51.100.1');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', service: 'peppol-snapshot' });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await (await get('/health/db', '198.51.100.1')).json()).toEqual({ status: 'ok', service: 'peppol-snapshot', db: true });
  });

  it('serves a file of the snapshot from R2 with ETag, caching, rate-limit and deprecation headers', async () => {
    const res = await get('/v1/network', '198.51.100.2');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(FILES['v1/network.json']);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('public, max-age=60');
    expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=4;w=60');
    expect(res.headers.get('ratelimit')).toBe('"anonymous";r=3;t=60');
    const etag = res.headers.get('etag')!;
    const again = await get('/v1/network', '198.51.100.2', { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    await again.arrayBuffer();
    const participant = await get('/v1/participants/0208%3A%3A0123456789', '198.51.100.2');
    // a participant the snapshot does not hold: the route's problem document, typed under base_url
    expect(participant.status).toBe(404);
    expect(await participant.json()).toMatchObject({ type: 'https://api.example/problems/participant-not-found', status: 404, instance: '/v1/participants/0208%3A%3A0123456789' });
    const hosts = await get('/v1/hosts', '198.51.100.3');
    expect(hosts.headers.get('deprecation')).toBe(`@${Date.parse('2027-01-01T00:00:00Z') / 1000}`);
    expect(hosts.headers.get('sunset')).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    await hosts.arrayBuffer();
    const missing = await get('/v1/hosts/none.example', '198.51.100.3');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    await missing.arrayBuffer();
  });

  it('refuses other methods with 405 and Allow, and answers the preflight', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await get('/v1/network', '198.51.100.4', { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.json()).toMatchObject({ status: 405 });
    }
    const pre = await get('/v1/network', '198.51.100.5', { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
    expect(pre.headers.get('access-control-allow-headers')).toBe('Authorization, X-API-Key, If-None-Match');
    const head = await get('/v1/network', '198.51.100.5', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('rate-limits per client address with 429 and Retry-After; a valid key has its own quota', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await get('/v1/network', '203.0.113.9');
      statuses.push(r.status);
      if (r.status === 429) {
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
        expect(await r.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded' });
      } else await r.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const keyed = await get('/v1/network', '203.0.113.9', { headers: { Authorization: `Bearer ${KEY}` } });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('ratelimit-policy')).toBe('"keyed";q=40;w=60');
    await keyed.arrayBuffer();
  });

  it('templates/wrangler.toml matches the bundle: entry, R2 binding, and a valid EDGE_POLICY', () => {
    const toml = fs.readFileSync('templates/wrangler.toml', 'utf8');
    const main = /^main\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
    expect(main).toBe(BUNDLE);
    expect(fs.existsSync(main!)).toBe(true);
    expect(toml).toMatch(/\[\[r2_buckets\]\]\s*\nbinding\s*=\s*"SNAPSHOT"/);
    const policy = /^EDGE_POLICY\s*=\s*'''([\s\S]*?)'''/m.exec(toml)?.[1];
    expect(policy).toBeDefined();
    expect(parseEdgePolicy(policy!)).toMatchObject({ rate_limit: { requests: 60, window_seconds: 60 }, access: { mode: 'open' } });
    for (const v of ['SNAPSHOT_PREFIX', 'HEALTH_MAX_AGE_SECONDS']) expect(toml).toMatch(new RegExp(`^${v}\\s*=`, 'm'));
  });

  it('never reads outside the snapshot prefix for encoded traversal', async () => {
    for (const p of ['/%2e%2e/outside', '/v1/%2e%2e/%2e%2e/outside', '/v1/..%2foutside', '/v1/network%00']) {
      const res = await get(p, '198.51.100.6');
      expect(res.status, p).toBeGreaterThanOrEqual(400);
      expect(res.status, p).toBeLessThan(500);
      expect(await res.text()).not.toContain('secret');
    }
  });
});
