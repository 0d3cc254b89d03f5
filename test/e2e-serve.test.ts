// End to end: build a full snapshot of the small demo, start the built CLI `serve` on 127.0.0.1 and run
// the shared HTTP end-to-end checks over real HTTP (test/helpers/e2e-suite.ts: every endpoint of the
// route table equals the oracle, every 400 and 404 case, random requests, 405, HEAD, ETag -> 304, the
// CORS preflight); then serve stops on SIGTERM. test/edge-worker.test.ts runs the same checks against
// the Cloudflare Worker.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { runPublish } from '../src/publish/index.js';
import { readStoredJson } from '../src/render/stored.js';
import { urlPathOfExact } from '../src/render/verify.js';
import { startServe as startServeCli, type Served } from './helpers/cli.js';
import { builtSmallDemo, copyOfDb, copyOfSnapshot, smallDemo } from './helpers/demo-fixture.js';
import { BULK_SAMPLE, describeE2e } from './helpers/e2e-suite.js';
import { tempDir } from './helpers/feeds.js';
import { snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';

/** Every path the snapshot's manifest lists. */
function readManifest(dir: string): string[] {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { shards: { path: string }[] };
  return m.shards.flatMap((s) =>
    fs
      .readFileSync(path.join(dir, s.path), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { path: string }).path),
  );
}

let db: Db;
let out: string;
let nowMs: number;
let baseUrl: string;
let server: Served | null = null;
/** serve over a directory that `publish` filled (directory target) from `out`. */
let published: Served | null = null;

/** Starts the built CLI's serve over `dir` on a free port; resolves once it listens. */
async function startServe(dir: string): Promise<Served> {
  // An empty config file: the built-in edge defaults, whatever publish.config.json of the checkout says.
  const config = path.join(tempDir('e2e-config-'), 'config.json');
  fs.writeFileSync(config, '{}\n');
  // The manifest is dated at the fixture's clock: a generous --health-max-age keeps /health/db fresh.
  return startServeCli(['--config', config, '--out', dir, '--port', '0', '--rate-limit', 'off', '--access', 'open', '--health-max-age', '3153600000']);
}

beforeAll(async () => {
  // The small demo built once per run (test/helpers/demo-fixture.ts), copied: a bulk file is added.
  const built = await builtSmallDemo();
  nowMs = Date.parse(smallDemo().now);
  out = copyOfSnapshot(built.out, 'e2e-serve-');
  const copy = copyOfDb(built.db);
  fs.mkdirSync(path.dirname(path.join(out, BULK_SAMPLE.path)), { recursive: true });
  fs.writeFileSync(path.join(out, BULK_SAMPLE.path), BULK_SAMPLE.bytes);
  db = copy.open();
  baseUrl = snapshotInfo(out).base_url;
  server = await startServe(out);
}, 180_000);

afterAll(async () => {
  db?.close();
  if (published && published.child.exitCode === null) {
    published.child.kill('SIGTERM');
    await published.done;
  }
  // The last test stops the server with SIGTERM; when it did not run (a filtered run, a failure), stop it
  // here the same way, and kill it should it not finish in time.
  const s = server;
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
  const r = await s.done;
  clearTimeout(timer);
  expect(r.code).toBe(0);
});

describeE2e('serve: every endpoint over real HTTP equals the oracle', () => ({
  send: (target, init) => fetch(`${server!.url}${target}`, init),
  db,
  out,
  nowMs,
  baseUrl,
  origin: server!.url,
  // startServe's flags over the built-in defaults
  policy: { ...defaultConfig().edge, rate_limit: 'off', access: { ...defaultConfig().edge.access, mode: 'open' } },
  bulkSample: true,
}));

describe('serve over a directory filled by publish', () => {
  it('answers every request as serve over the snapshot directory does', async () => {
    const pub = snapshotTempDir('e2e-published-');
    const config = defaultConfig();
    const summary = await runPublish({ config: { ...config, publish: { ...config.publish, target: { type: 'directory', path: pub } } }, outDir: out });
    expect(summary.uploaded.objects).toBeGreaterThan(summary.files);
    published = await startServe(pub);
    // Every exact file's URL, a sample of the participants (from their record packs), and list pages
    // after real cursors.
    const files = readManifest(out);
    const exact = files.filter((p) => p.startsWith('v1/') && p.endsWith('.json')).map(urlPathOfExact);
    const participants = files
      .filter((p) => p.startsWith('f/participants/records/'))
      .flatMap((p) => Object.keys((readStoredJson(path.join(out, p)) as { records: Record<string, unknown> }).records))
      .filter((_, i) => i % 7 === 0)
      .map((id) => `/v1/participants/${encodeURIComponent(id)}`);
    expect(participants.length).toBeGreaterThan(700);
    const targets = [...exact, ...participants, '/openapi.json', '/.well-known/api-catalog', '/health/db', '/v1/nowhere'];
    for (const list of ['/v1/participants?limit=7&country=BE', '/v1/events?limit=5', '/v1/incidents?limit=3', '/v1/anomalies?limit=2', '/v1/participants?sort=name.desc&limit=30']) {
      let target: string | null = list;
      for (let page = 0; target && page < 4; page++) {
        targets.push(target);
        const body = (await (await fetch(`${server!.url}${target}`)).json()) as { next_cursor?: string | null };
        target = body.next_cursor ? `${list}&cursor=${encodeURIComponent(body.next_cursor)}` : null;
      }
    }
    expect(targets.length).toBeGreaterThan(1000);
    for (let i = 0; i < targets.length; i += 16) {
      await Promise.all(
        targets.slice(i, i + 16).map(async (t) => {
          const [a, b] = await Promise.all([fetch(`${server!.url}${t}`), fetch(`${published!.url}${t}`)]);
          const [ta, tb] = await Promise.all([a.text(), b.text()]);
          // /openapi.json names the origin serving it (servers), and /health/db the snapshot's age in
          // seconds (a second may tick between the two requests): the only differences between the two
          const same = (text: string, origin: string) =>
            t === '/openapi.json' ? text.replace(JSON.stringify([{ url: origin }]), '[]') : t === '/health/db' ? text.replace(/"age_seconds":\d+/, '"age_seconds":0') : text;
          const etag = (r: Response) => (t === '/openapi.json' || t === '/health/db' ? null : r.headers.get('etag'));
          expect({ t, status: b.status, etag: etag(b), type: b.headers.get('content-type'), body: same(tb, published!.url) }).toEqual({
            t,
            status: a.status,
            etag: etag(a),
            type: a.headers.get('content-type'),
            body: same(ta, server!.url),
          });
        }),
      );
    }
  }, 180_000);
});

describe('serve: shutdown', () => {
  it('stops on SIGTERM with exit code 0', async () => {
    const s = server!;
    s.child.kill('SIGTERM');
    const r = await s.done;
    expect(r.code).toBe(0);
    expect(s.stderr()).toContain('stopped');
    expect(s.stderr()).not.toMatch(/^error: /m);
  });
});
