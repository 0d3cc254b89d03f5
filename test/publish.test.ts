// publish: diff by manifest, upload order, retention, recovery after a run is cut off.
// Synthetic snapshots (written by the real renderer parts) published to a real directory target, many
// versions per property run; the S3 protocol end to end is in test/publish-s3.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig, type Config } from '../src/config/index.js';
import { Rng } from '../src/demo/prng.js';
import { COPY_FROM_BYTES, runPublish } from '../src/publish/index.js';
import { DirectoryTarget } from '../src/publish/directory.js';
import { STATE_PATH, type PublishState } from '../src/publish/ledger.js';
import { RecordingTarget, ReferenceChecker, type WriteOp } from './helpers/publish-checker.js';
import { ramTempBase } from './helpers/feeds.js';
import { listFiles, renderSynthetic, type SyntheticVersion } from './helpers/synthetic-snapshot.js';

// On the RAM disk when there is one: every version published here is hundreds of files.
const root = fs.mkdtempSync(path.join(ramTempBase(), 'publish-test-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const newDir = () => path.join(root, `d${dirs++}`);

const HOUR = 3_600_000;

function configFor(retentionHours: number): Config {
  const c = defaultConfig(root);
  return { ...c, publish: { ...c.publish, retention_hours: retentionHours, concurrency: 4 } };
}

function firstVersion(rand: () => number): SyntheticVersion {
  const lists: Record<string, number[]> = {};
  for (const name of ['a', 'b', 'c']) lists[name] = Array.from({ length: 20 + Math.floor(rand() * 300) }, (_, i) => i * 3);
  // more than 128 chunks of 16: this list has inner index nodes
  lists.big = Array.from({ length: 2600 }, (_, i) => i);
  const pages: Record<string, string> = {};
  for (let i = 0; i < 12; i++) pages[`p${i}`] = JSON.stringify({ page: i, v: 0 });
  return { lists, pages, generatedAt: '2026-11-01T00:00:00Z' };
}

/** A next version: items added and removed here and there, lists and pages appearing and vanishing. */
function nextVersion(v: SyntheticVersion, rand: () => number, step: number): SyntheticVersion {
  const lists: Record<string, number[]> = {};
  for (const [name, items] of Object.entries(v.lists)) {
    if (name !== 'big' && rand() < 0.1) continue; // the list goes
    const set = new Set(items);
    const edits = Math.floor(rand() * 6);
    for (let e = 0; e < edits; e++) {
      const x = Math.floor(rand() * (items.length * 3 + 10));
      if (set.has(x)) set.delete(x);
      else set.add(x);
    }
    lists[name] = [...set].sort((a, b) => a - b);
  }
  if (rand() < 0.3) lists[`n${step}`] = Array.from({ length: 10 + Math.floor(rand() * 100) }, (_, i) => i);
  const pages: Record<string, string> = {};
  for (const [name, text] of Object.entries(v.pages)) {
    const r = rand();
    if (r < 0.1) continue;
    pages[name] = r < 0.4 ? JSON.stringify({ page: name, v: step }) : text;
  }
  if (rand() < 0.5) pages[`q${step}`] = JSON.stringify({ new: step });
  // Two large files with the same bytes: the second is copied inside the target from the first.
  if (rand() < 0.4) pages['big-a'] = pages['big-b'] = JSON.stringify({ big: step, fill: 'x'.repeat(COPY_FROM_BYTES) });
  // An earlier state coming back (a list returning to old chunks) is the case retention must survive.
  if (rand() < 0.2 && v.lists.a) lists.a = Array.from({ length: 20 + Math.floor(rand() * 300) }, (_, i) => i * 3);
  return { lists, pages, generatedAt: new Date(Date.parse(v.generatedAt) + 15 * 60_000).toISOString() };
}

function readManifestPaths(dir: string): string[] {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { shards: { path: string }[] };
  const out: string[] = [];
  for (const s of m.shards) {
    out.push(s.path);
    for (const line of fs.readFileSync(path.join(dir, s.path), 'utf8').split('\n')) if (line) out.push((JSON.parse(line) as { path: string }).path);
  }
  return out;
}

/** Every file of the snapshot `out` is in `pub` with the same bytes. */
function expectPublished(out: string, pub: string): void {
  for (const p of [...readManifestPaths(out), 'manifest.json']) {
    const a = fs.readFileSync(path.join(out, p));
    let b: Buffer;
    try {
      b = fs.readFileSync(path.join(pub, p));
    } catch {
      throw new Error(`${p} is missing from the target`);
    }
    if (!a.equals(b)) throw new Error(`${p} differs in the target`);
  }
}

describe('publish to a directory: random versions, cut-off runs and retention', () => {
  it('property: the target always holds what its manifest names, ends equal to the snapshot, and keeps nothing past retention', async () => {
    let resumedRuns = 0;
    let copiedRuns = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.constantFrom(0, 2, 6), async (seed, retentionHours) => {
        // The run's changes follow from the fast-check seed.
        const rng = new Rng(seed);
        const rand = () => rng.float();
        const out = newDir();
        const pub = newDir();
        const config = configFor(retentionHours);
        const ops: WriteOp[] = [];
        const checker = new ReferenceChecker();
        let replayed = 0;
        let clock = Date.parse('2026-11-01T00:00:00Z');
        const target = () => new RecordingTarget(new DirectoryTarget(pub), ops);
        // Progress is recorded every 16 uploads, so a cut-off run stops between records too.
        const publish = (t: RecordingTarget) => runPublish({ config, outDir: out, target: t, now: () => clock, checkpointEvery: 16 });
        let v = firstVersion(rand);
        let previous: SyntheticVersion | null = null;
        const steps = 3 + Math.floor(rand() * 3);
        for (let step = 0; step < steps; step++) {
          if (step > 0) {
            previous = v;
            v = nextVersion(v, rand, step);
          }
          renderSynthetic(out, v);
          if (rand() < 0.6) {
            // A run that dies after some writes (in flight writes still finish, as at a real server).
            // Anywhere in the publish: before, among and after its writes (the dry run counts them).
            const planned = await runPublish({ config, outDir: out, target: target(), now: () => clock, dryRun: true });
            const t = target();
            t.dieAfter = Math.floor(rand() * (planned.uploaded.objects + 6));
            await publish(t).catch((e: Error) => expect(e.message).toMatch(/killed/));
            if (fs.existsSync(path.join(pub, 'manifest.json'))) {
              // what the target's (old) manifest names is all there
              for (const p of readManifestPaths(pub)) expect(fs.existsSync(path.join(pub, p)), `${p} named by the target's manifest after a cut-off run`).toBe(true);
            }
            if (previous && rand() < 0.5) {
              // The operator publishes the previous snapshot again: files the cut-off run overwrote
              // in place must be put back although the manifests say they are unchanged.
              renderSynthetic(out, previous);
              await publish(target());
              expectPublished(out, pub);
              renderSynthetic(out, v);
            }
          }
          clock += Math.floor(rand() * 4) * HOUR;
          const clean = await publish(target());
          if (clean.resumed > 0) resumedRuns++;
          if (clean.copied.objects > 0) copiedRuns++;
          checker.replay(ops.slice(replayed));
          replayed = ops.length;
          expectPublished(out, pub);
          // Mutable files the manifest no longer lists are gone at once.
          const listed = new Set([...readManifestPaths(out), 'manifest.json']);
          const stray = listFiles(pub).filter((p) => !listed.has(p) && !p.startsWith('.publish/') && !p.startsWith('c/') && !p.startsWith('m/'));
          expect(stray).toEqual([]);
        }
        // Past the retention period, a publish with no change deletes every doomed object and ledger.
        clock += (retentionHours + 1) * HOUR;
        const size = (p: string) => fs.statSync(path.join(pub, p)).size;
        const objects = () => new Map(listFiles(pub).filter((p) => !p.startsWith('.publish/')).map((p) => [p, size(p)]));
        const before = objects();
        const plan = await runPublish({ config, outDir: out, target: target(), now: () => clock, dryRun: true });
        const last = await publish(target());
        checker.replay(ops.slice(replayed));
        expect(last.uploaded.objects).toBe(0);
        // What it deleted, in objects and bytes, is what the dry run said it would delete.
        const after = objects();
        const gone = [...before].filter(([p]) => !after.has(p));
        expect({ objects: last.deleted.objects, bytes: last.deleted.bytes }).toEqual({ objects: gone.length, bytes: gone.reduce((n, [, b]) => n + b, 0) });
        expect(plan.deleted).toEqual(last.deleted);
        expect(last.waiting).toEqual({ objects: 0, bytes: 0 });
        const expected = [...readManifestPaths(out), 'manifest.json', STATE_PATH].sort();
        expect(listFiles(pub)).toEqual(expected);
        const state = JSON.parse(fs.readFileSync(path.join(pub, STATE_PATH), 'utf8')) as PublishState;
        expect(state).toMatchObject({ pending: null, ledgers: [] });
        expect(checker.violations).toEqual([]);
        expect(checker.checkedReferrers).toBeGreaterThan(0);
      }),
      { numRuns: 25 },
    );
    // Some reruns resumed where a cut-off publish of the same snapshot stopped (and still ended equal).
    expect(resumedRuns).toBeGreaterThan(0);
    expect(copiedRuns).toBeGreaterThan(0);
  }, 300_000);
});
