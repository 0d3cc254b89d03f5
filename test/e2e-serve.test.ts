// End to end: build a full snapshot of the small demo, start the built CLI `serve` on 127.0.0.1 and run
// the shared HTTP end-to-end checks over real HTTP (test/helpers/e2e-suite.ts: every endpoint of the
// route table equals the oracle, every 400 and 404 case, random requests, 405, HEAD, ETag -> 304, the
// CORS preflight); then serve stops on SIGTERM. test/edge-worker.test.ts runs the same checks against
// the Cloudflare Worker.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { runBuild } from '../src/render/build.js';
import { startCli, type CliResult } from './helpers/cli.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { describeE2e } from './helpers/e2e-suite.js';
import { tempDir } from './helpers/feeds.js';
import { snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';

let db: Db;
let out: string;
let nowMs: number;
let baseUrl: string;
let server: { url: string; child: ChildProcess; done: Promise<CliResult>; stderr: () => string } | null = null;

beforeAll(async () => {
  const copy = copyOfSmallDemoDb();
  nowMs = Date.parse(smallDemo().now);
  out = snapshotTempDir('e2e-serve-');
  runBuild({ config: defaultConfig(), dbPath: copy.path, outDir: out, nowMs });
  db = copy.open();
  baseUrl = snapshotInfo(out).base_url;
  // An empty config file: the built-in edge defaults, whatever publish.config.json of the checkout says.
  const config = path.join(tempDir('e2e-config-'), 'config.json');
  fs.writeFileSync(config, '{}\n');
  // The manifest is dated at the fixture's clock: a generous --health-max-age keeps /health/db fresh.
  const { child, done } = startCli(['serve', '--config', config, '--out', out, '--port', '0', '--rate-limit', 'off', '--access', 'open', '--health-max-age', '3153600000']);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  server = { url: '', child, done, stderr: () => err }; // stopped by afterAll whatever happens next
  server.url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`serve did not start: ${err}`)), 30_000);
    const onData = () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        ok(m[1]!);
      }
    };
    child.stderr!.on('data', onData);
    void done.then((r) => {
      clearTimeout(timer);
      fail(new Error(`serve exited ${r.code}: ${r.stderr}`));
    });
  });
}, 180_000);

afterAll(async () => {
  db?.close();
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
}));

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
