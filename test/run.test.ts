// `run`, the cron entry: ingest, build and publish in one process with one summary line and the exit
// codes of docs/architecture.md §3; locks that keep a second process out and that a killed process leaves free.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openDb } from '../src/db/index.js';
import type { RunSummary } from '../src/publish/run.js';
import { runCli, startCli } from './helpers/cli.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { copyFeedDir, snapshotTempDir } from './helpers/snapshot.js';
import { listFiles } from './helpers/synthetic-snapshot.js';

let work: string;
/** The database: on the RAM disk when there is one, as the snapshot directories. */
let db: string;
let config: string;
let out: string;
let pub: string;
const MINUTE = 60_000;
const at = (minutes: number) => new Date(Date.parse(smallDemo().now) + minutes * MINUTE).toISOString();

beforeAll(() => {
  work = tempDir('run-');
  const feeds = path.join(work, 'feeds');
  copyFeedDir(smallDemo().feeds, feeds);
  db = copyOfSmallDemoDb().path;
  const d = openDb(db);
  d.prepare('UPDATE sources SET url = ?').run(feeds);
  d.close();
  out = snapshotTempDir('run-out-');
  pub = snapshotTempDir('run-pub-');
  config = path.join(work, 'config.json');
  // A second source that does not exist: the run goes on without it and says so with exit code 3.
  fs.writeFileSync(
    config,
    JSON.stringify({
      sources: [{ name: 'demo', url: feeds }, { name: 'gone', url: path.join(work, 'no-such-feed') }],
      database: db,
      out,
      publish: { target: { type: 'directory', path: pub }, retention_hours: 0 },
    }),
  );
});

/** Waits until `file` exists (a lock's holder file: the process holds the lock). */
async function until(file: string, ms = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!fs.existsSync(file)) {
    if (Date.now() - t0 > ms) throw new Error(`${file} did not appear`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

function expectPublishedEqualsOut(): void {
  const listed = listFiles(out);
  const inPub = listFiles(pub).filter((p) => !p.startsWith('.publish/'));
  expect(inPub).toEqual(listed);
  for (const p of ['manifest.json', 'snapshot.json', 'v1/network.json']) expect(fs.readFileSync(path.join(pub, p))).toEqual(fs.readFileSync(path.join(out, p)));
}

describe('run', () => {
  it('ingests, builds and publishes; one JSON summary line; exit 3 when a source failed but the rest was published', async () => {
    const r = await runCli(['run', '--config', config, '--now', at(0), '--json']);
    expect(r.code, r.stderr).toBe(3);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const s = JSON.parse(lines[0]!) as RunSummary;
    expect(s.exit_code).toBe(3);
    expect(s.generated_at).toBe(smallDemo().now.replace('.000Z', 'Z'));
    expect(s.ingest).toMatchObject({ failed_sources: ['gone'], records: 0 });
    expect(s.build!.files).toBeGreaterThan(10_000);
    expect(s.publish!.uploaded).toBe(s.build!.files + (JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as { shards: unknown[] }).shards.length + 1);
    for (const phase of [s.ingest!, s.build!, s.publish!]) expect(phase.seconds).toBeGreaterThanOrEqual(0);
    expect(s.errors.join('\n')).toMatch(/source gone: .*no-such-feed/);
    expectPublishedEqualsOut();
    // Without --json: one human line on stderr with each phase.
    const text = await runCli(['run', '--config', config, '--now', at(0)]);
    expect(text.code).toBe(3);
    expect(text.stderr).toMatch(/^run: ingest [\d.]+ s \(0 records.*failed: gone\); build [\d.]+ s \([\d,]+ files, 0 written\); publish [\d.]+ s \(0 objects uploaded, 0 deleted\); [\d.]+ s, exit 3/m);
  }, 180_000);

  it('a second run exits at once with exit code 4 naming the first; a lock left by a killed run is taken over', async () => {
    const first = startCli(['run', '--config', config, '--now', at(15), '--json']);
    const holder = `${db}.lock.json`;
    await until(holder);
    const t0 = Date.now();
    const second = await runCli(['run', '--config', config, '--now', at(15), '--json']);
    expect(second.code).toBe(4);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(second.stderr).toMatch(new RegExp(`small\\.sqlite\\.lock is held by peppol-snapshot run \\(pid ${first.child.pid} on .*, since .*\\); try again when it has finished`));
    expect(second.stdout).toBe('');
    // Killed in the middle of its work: the operating system frees the lock with the process.
    first.child.kill('SIGKILL');
    await first.done;
    const third = await runCli(['run', '--config', config, '--now', at(15), '--json']);
    expect(third.code, third.stderr).toBe(3);
    expect(third.stderr).toMatch(new RegExp(`took over .*small\\.sqlite\\.lock from peppol-snapshot run \\(pid ${first.child.pid} `));
    expect(fs.existsSync(holder)).toBe(false); // released at the end
    expectPublishedEqualsOut();
  }, 240_000);

  it('two builds on one database: the second exits with code 4 and a clear message, the first finishes', async () => {
    const a = startCli(['build', '--config', config, '--now', at(30)]);
    await until(`${db}.lock.json`);
    const b = await runCli(['build', '--config', config, '--now', at(30)]);
    expect(b.code).toBe(4);
    expect(b.stderr).toMatch(/^peppol-snapshot: .*small\.sqlite\.lock is held by peppol-snapshot build \(pid \d+/m);
    expect(b.stderr).not.toMatch(/SqliteError|\n\s+at /);
    expect((await a.done).code).toBe(0);
  }, 180_000);

  it('a run on a new UTC day starts the bulk writer and ends without waiting for it, holding no lock; the next run is not held up; a later run adopts and publishes the copy', async () => {
    const day = at(24 * 60).slice(0, 10);
    const staging = `${out}.bulk-staging`;
    const r = await runCli(['run', '--config', config, '--now', at(24 * 60), '--json']);
    expect(r.code, r.stderr).toBe(3);
    expect((JSON.parse(r.stdout) as RunSummary).build!.bulk).toBe('started');
    // run has ended; its writer works on, holding the staging directory's lock and neither of run's.
    const holder = JSON.parse(fs.readFileSync(`${staging}.lock.json`, 'utf8')) as { pid: number; command: string };
    expect(holder.command).toBe('peppol-snapshot bulk writer');
    expect(fs.existsSync(`${db}.lock.json`)).toBe(false);
    expect(fs.existsSync(`${out}.lock.json`)).toBe(false);
    process.kill(holder.pid, 'SIGSTOP'); // still writing, whatever the machine's speed
    try {
      const next = await runCli(['run', '--config', config, '--now', at(24 * 60 + 15), '--json']);
      expect(next.code, next.stderr).toBe(3);
      expect((JSON.parse(next.stdout) as RunSummary).build!.bulk).toBe('pending');
      expect(fs.existsSync(path.join(pub, 'bulk', day))).toBe(false);
      expect(fs.existsSync(path.join(pub, 'bulk', 'latest', 'datapackage.json'))).toBe(true);
    } finally {
      process.kill(holder.pid, 'SIGCONT');
    }
    await until(path.join(staging, 'done.json'), 300_000);
    const adopt = await runCli(['run', '--config', config, '--now', at(24 * 60 + 30)]);
    expect(adopt.code).toBe(3);
    expect(adopt.stderr).toMatch(/^run: .*; build [\d.]+ s \([\d,]+ files, [\d,]+ written; bulk adopted\); publish [\d.]+ s \([1-9][\d,]* objects uploaded/m);
    expect(fs.readdirSync(path.join(pub, 'bulk')).sort()).toEqual([smallDemo().now.slice(0, 10), day, 'latest']);
    expect(fs.readFileSync(path.join(pub, 'bulk', 'latest', 'datapackage.json'))).toEqual(fs.readFileSync(path.join(out, 'bulk', day, 'datapackage.json')));
    expect(fs.existsSync(staging)).toBe(false);
    expectPublishedEqualsOut();
  }, 600_000);

  it('a failed build publishes nothing and exits 1', async () => {
    const broken = path.join(work, 'broken.json');
    const blocked = path.join(work, 'a-file');
    fs.writeFileSync(blocked, 'not a directory');
    fs.writeFileSync(broken, JSON.stringify({ ...JSON.parse(fs.readFileSync(config, 'utf8')), sources: [path.join(work, 'feeds')], out: blocked }));
    const before = listFiles(pub);
    const r = await runCli(['run', '--config', broken, '--now', at(45), '--json']);
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as RunSummary;
    expect(s.build).toBeNull();
    expect(s.publish).toBeNull();
    expect(s.errors.join('\n')).toMatch(/^build: /m);
    expect(listFiles(pub)).toEqual(before);
  }, 120_000);
});
