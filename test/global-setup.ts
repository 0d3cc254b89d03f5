// Runs once before the tests:
// - builds dist/, so tests that run the CLI run the code under test;
// - generates the small demo scenario and ingests it into a SQLite file, shared read-only by the
//   derivation and API tests (`inject('smallDemo')`, see test/helpers/demo-fixture.ts). Tests that
//   write to the database copy it first;
// - makes an empty directory for the fixtures made from it during this run (`inject('fixtureRoot')`:
//   the small demo derived, and built), each by the first test file that needs it, removed at the end.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import type { TestProject } from 'vitest/node';
import { runDemo } from '../src/demo/index.js';
import { runIngest } from '../src/feeds/ingest.js';

export interface SmallDemoFixture {
  /** The demo feed directory (feeds.json, segments, ground-truth.json). */
  feeds: string;
  /** A database holding every segment of `feeds`, not yet derived. */
  db: string;
  /** The `--now` the scenario was generated with. */
  now: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    smallDemo: SmallDemoFixture;
    /** An empty directory of this run for the fixtures of test/helpers/demo-fixture.ts (once()). */
    fixtureRoot: string;
  }
}

export const FIXTURE_NOW = '2026-11-22T00:00:00Z';
const FIXTURE_VERSION = '1';

/**
 * Hash of what decides the fixture's content: the generator and the database schema. Ingest code is
 * left out on purpose (its changes must not change what it stores, which test/ingest.test.ts and
 * test/demo.test.ts check); bump FIXTURE_VERSION when they do.
 */
function fixtureKey(): string {
  const h = createHash('sha256');
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else {
        h.update(p);
        h.update(fs.readFileSync(p));
      }
    }
  };
  h.update(FIXTURE_VERSION);
  for (const d of ['src/demo', 'src/db/schema.ts', 'src/derive/anomaly-id.ts']) {
    if (fs.statSync(d).isDirectory()) walk(d);
    else h.update(fs.readFileSync(d));
  }
  h.update(FIXTURE_NOW);
  return h.digest('hex').slice(0, 16);
}

/**
 * The fixture is kept under node_modules/.cache keyed by the hash of its inputs, so repeated test runs
 * (and parallel ones) reuse it; it is built in a temporary directory and renamed into place.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  const cache = path.resolve('node_modules/.cache/peppol-snapshot');
  fs.mkdirSync(cache, { recursive: true });
  const key = fixtureKey();
  const root = path.join(cache, `small-${key}`);
  if (!fs.existsSync(path.join(root, 'done'))) {
    const tmp = fs.mkdtempSync(path.join(cache, 'tmp-'));
    await runDemo({ feeds: path.join(tmp, 'feeds'), scale: 'small', seed: 1, now: FIXTURE_NOW });
    const s = await runIngest({ dbPath: path.join(tmp, 'small.sqlite'), sources: [{ name: 'demo', url: path.join(tmp, 'feeds') }], http: { timeout_ms: 30_000, retries: 0, retry_base_ms: 100 } });
    if (s.failed_sources.length > 0 || s.rejects > 0) throw new Error(`fixture ingest failed: ${JSON.stringify(s)}`);
    fs.writeFileSync(path.join(tmp, 'done'), key);
    try {
      fs.renameSync(tmp, root);
    } catch {
      fs.rmSync(tmp, { recursive: true, force: true }); // another run finished first: use its copy
    }
    // Fixtures of other keys are removed once an hour old (a parallel run may still be using one).
    for (const e of fs.readdirSync(cache)) {
      const p = path.join(cache, e);
      if ((e.startsWith('small-') || e.startsWith('tmp-')) && e !== `small-${key}` && Date.now() - fs.statSync(p).mtimeMs > 3_600_000) fs.rmSync(p, { recursive: true, force: true });
    }
  }
  project.provide('smallDemo', { feeds: path.join(root, 'feeds'), db: path.join(root, 'small.sqlite'), now: FIXTURE_NOW });
  // On the RAM disk when it has room to spare, as test/helpers/feeds.ts ramTempBase() (the fixtures hold
  // built snapshots and databases the tests copy).
  let base = tmpdir();
  try {
    const st = fs.statfsSync('/dev/shm');
    if (st.bavail * st.bsize > 4 * 1024 ** 3) base = '/dev/shm';
  } catch {
    // no /dev/shm: the ordinary temporary directory
  }
  // Those of runs that did not end (killed) are removed once a day old.
  for (const e of fs.readdirSync(base)) {
    const p = path.join(base, e);
    if (e.startsWith('peppol-fixtures-') && Date.now() - (fs.statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 86_400_000) fs.rmSync(p, { recursive: true, force: true });
  }
  const fixtures = fs.mkdtempSync(path.join(base, 'peppol-fixtures-'));
  project.provide('fixtureRoot', fixtures);
  return () => fs.rmSync(fixtures, { recursive: true, force: true });
}
