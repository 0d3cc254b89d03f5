// The small demo scenario, generated and ingested once per test run by test/global-setup.ts; and what
// several test files made of it each on their own before: the demo derived, and built. Those are made
// once per test run, by the first test file that asks (the others wait for it), and shared read-only:
// a test that writes copies first (copyOfDb, copyOfSnapshot).
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import type { GroundTruth } from '../../src/demo/index.js';
import { openDb, type Db } from '../../src/db/index.js';
import { runDerive, type DeriveSummary } from '../../src/derive/index.js';
import { runBuild, type BuildSummary } from '../../src/render/build.js';
import { statePath } from '../../src/render/state.js';
import { testConfig } from './config.js';
import { ramTempDir } from './feeds.js';

export function smallDemo(): { feeds: string; db: string; now: string; groundTruth: () => GroundTruth } {
  const f = inject('smallDemo');
  return { ...f, groundTruth: () => JSON.parse(fs.readFileSync(path.join(f.feeds, 'ground-truth.json'), 'utf8')) as GroundTruth };
}

/** A private writable copy of a SQLite database that no process writes (the file and its WAL), removed after the file's tests. */
export function copyOfDb(from: string, prefix = 'demo-db-'): { path: string; open: () => Db } {
  const p = path.join(ramTempDir(prefix), path.basename(from));
  fs.copyFileSync(from, p);
  if (fs.existsSync(`${from}-wal`)) fs.copyFileSync(`${from}-wal`, `${p}-wal`);
  return { path: p, open: () => openDb(p) };
}

/** A private writable copy of the ingested small demo database (removed after the file's tests). */
export function copyOfSmallDemoDb(): { path: string; open: () => Db } {
  const f = inject('smallDemo');
  const p = path.join(ramTempDir('demo-db-'), 'small.sqlite');
  fs.copyFileSync(f.db, p);
  return { path: p, open: () => openDb(p) };
}

/**
 * A private copy of a built snapshot directory with the render state beside it (src/render/state.ts),
 * as its build left them: the next build of the copy goes on from there. Removed after the file's tests.
 */
export function copyOfSnapshot(out: string, prefix = 'snapshot-copy-'): string {
  const to = path.join(ramTempDir(prefix), 'out');
  fs.cpSync(out, to, { recursive: true });
  for (const ext of ['', '-wal']) if (fs.existsSync(statePath(out) + ext)) fs.copyFileSync(statePath(out) + ext, statePath(to) + ext);
  return to;
}

const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/** Whether the process `pid` is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The fixture `name` of this test run: made by `make` into `<fixtureRoot>/<name>` by the first test file
 * that asks for it, under a lock directory; the files that ask meanwhile wait for its `done.json` (what
 * `make` returned). A maker that failed or died leaves no `done.json`: the next file that asks makes it
 * again.
 */
async function once<T>(name: string, make: (dir: string) => T): Promise<{ dir: string; info: T }> {
  const root = inject('fixtureRoot');
  const dir = path.join(root, name);
  const done = path.join(dir, 'done.json');
  const lock = path.join(root, `${name}.lock`);
  const read = (): { dir: string; info: T } => ({ dir, info: JSON.parse(fs.readFileSync(done, 'utf8')) as T });
  const deadline = Date.now() + 900_000;
  for (;;) {
    if (fs.existsSync(done)) return read();
    let mine = false;
    try {
      fs.mkdirSync(lock);
      mine = true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    if (mine) {
      try {
        fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
        if (fs.existsSync(done)) return read(); // made between the check above and the lock
        fs.rmSync(dir, { recursive: true, force: true }); // what a maker that died left
        fs.mkdirSync(dir);
        const info = make(dir);
        fs.writeFileSync(`${done}.tmp`, JSON.stringify(info));
        fs.renameSync(`${done}.tmp`, done);
        return { dir, info };
      } finally {
        fs.rmSync(lock, { recursive: true, force: true });
      }
    }
    // Another test file makes it. Its process gone without a result: the lock is free to take.
    let pid = NaN;
    try {
      pid = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
    } catch {
      // the lock was just taken (no pid yet) or just released
    }
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) fs.rmSync(lock, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`fixture ${name}: not made after ${(900_000 / 1000).toFixed(0)} s`);
    await sleep(200);
  }
}

export interface DerivedDemo {
  /** The small demo database, derived (runDerive with the registered pipeline), not built. Read-only: copy it to write. */
  db: string;
  /** What that derive returned. */
  summary: DeriveSummary;
}

/** The small demo database derived with the registered pipeline (`runDerive(db)` on a copy of the ingested demo). */
export async function derivedSmallDemo(): Promise<DerivedDemo> {
  const { dir, info } = await once('derived', (d) => {
    const p = path.join(d, 'small.sqlite');
    fs.copyFileSync(inject('smallDemo').db, p);
    const db = openDb(p);
    try {
      return { summary: runDerive(db) };
    } finally {
      db.close();
    }
  });
  return { db: path.join(dir, 'small.sqlite'), summary: info.summary };
}

export interface BuiltDemo {
  /** The snapshot directory (the render state beside it). Read-only: copy it (copyOfSnapshot) to write. */
  out: string;
  /** The database as the build left it (derived, raw probes pruned). Read-only: copy it (copyOfDb). */
  db: string;
  /** What the build returned. */
  summary: BuildSummary;
  /** The size of the database's write-ahead log as the render began (the first `render: ` progress message). */
  walAtRender: number[];
}

/**
 * The small demo built at its `now` from a copy of the ingested database (a first build: the derive in a
 * process of its own), with testConfig() (`plain`) or with the edge's rate limit off as well
 * (`rate-limit-off`, the end-to-end checks of the edge tests send hundreds of requests from one client).
 */
export async function builtSmallDemo(variant: 'plain' | 'rate-limit-off' = 'plain'): Promise<BuiltDemo> {
  const { dir, info } = await once(`built-${variant}`, (d) => {
    const db = path.join(d, 'small.sqlite');
    fs.copyFileSync(inject('smallDemo').db, db);
    const config = variant === 'plain' ? testConfig() : testConfig({ edge: { rate_limit: 'off' } }, d);
    const walAtRender: number[] = [];
    const progress = (m: string): void => void (m.startsWith('render: ') && walAtRender.length === 0 && walAtRender.push(fs.statSync(`${db}-wal`, { throwIfNoEntry: false })?.size ?? 0));
    const summary = runBuild({ config, dbPath: db, outDir: path.join(d, 'out'), nowMs: Date.parse(inject('smallDemo').now), progress });
    return { summary, walAtRender };
  });
  return { out: path.join(dir, 'out'), db: path.join(dir, 'small.sqlite'), summary: info.summary, walAtRender: info.walAtRender };
}
