// The participant lists written in full (src/render/routes/participant-lists.ts): one pass in the
// default order writes the main list of that order, the posting lists and the trigram lists side by
// side; the trigrams met after TRIGRAM_WRITERS_MAX lists are open are written afterwards from a sorted
// temporary table. Both ways give the same files.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../src/api/json.js';
import { foldName, isTrigramCounts, LIST_ROUTE, trigramCountsOf, TRIGRAMS_PATH, type TrigramCounts } from '../src/api/participants/plan.js';
import { encodeSegment } from '../src/api/paths.js';
import { readStoredJson } from '../src/render/stored.js';
import type { Db } from '../src/db/index.js';
import { runDerive } from '../src/derive/index.js';
import { RenderContext } from '../src/render/context.js';
import { trigramCountsFromNames } from '../src/render/routes/participant-lists.js';
import { participantRenderers } from '../src/render/routes/participants.js';
import { DirectorySink } from '../src/render/sink.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { tree } from './helpers/tree.js';

let db: Db;
let nowMs: number;
const dirs: string[] = [];

beforeAll(() => {
  db = copyOfSmallDemoDb().open();
  runDerive(db, { only: ['providers', 'participants', 'stats'] });
  nowMs = Date.parse(smallDemo().now);
});
afterAll(() => {
  db.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** The participant lists rendered with at most `max` trigram lists open: the directory and how many lists. */
function render(max: number): { dir: string; lists: number } {
  const dir = tempDir('participant-lists-');
  dirs.push(dir);
  const sink = new DirectorySink(dir);
  // Small chunks: lists of several chunks and inner index nodes.
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 40, chunkMaxBytes: 16_384 }, jsonBody);
  db.exec('BEGIN');
  try {
    participantRenderers({ trigramWritersMax: max })[LIST_ROUTE]!(ctx);
  } finally {
    db.exec('COMMIT');
  }
  sink.close();
  return { dir, lists: ctx.listsReport!.lists };
}

describe('participant lists written in full', () => {
  it('the trigram lists left over by the default-order pass equal those it writes', () => {
    const all = render(1_000_000);
    const few = render(7);
    const trigramRoots = [...fs.readdirSync(path.join(all.dir, 'i', 'participants.list', '_5fnames'))];
    // Far more trigram lists than the 7 written in the pass: most come from the temporary table.
    expect(trigramRoots.length).toBeGreaterThan(500);
    expect(few.lists).toBe(all.lists);
    const a = tree(all.dir);
    const b = tree(few.dir);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    const differ = [...a].filter(([p, bytes]) => !b.get(p)!.equals(bytes)).map(([p]) => p);
    expect(differ).toEqual([]);
  });

  it('the trigram table names every trigram list with its size, sorted by trigram; counted from the names it is the same', () => {
    const { dir } = render(1_000_000);
    const table = readStoredJson(path.join(dir, TRIGRAMS_PATH));
    expect(isTrigramCounts(table)).toBe(true);
    const rootsDir = path.join(dir, 'i', 'participants.list', '_5fnames');
    const sizes = new Map<string, number>();
    for (const f of fs.readdirSync(rootsDir)) {
      const root = readStoredJson(path.join(rootsDir, f)) as { count: number };
      // The root's file name is the trigram's path segment (encodeSegment).
      sizes.set(f.slice(0, -'.json'.length), root.count);
    }
    const pairs = (table as TrigramCounts).counts;
    expect(pairs.length).toBe(sizes.size);
    for (const [t, n] of pairs) {
      expect(n, t).toBeGreaterThan(0);
      expect(sizes.get(encodeSegment(t)), t).toBe(n);
    }
    // Each trigram with the number of named participants whose folded name holds it.
    const some = pairs.filter((_, i) => i % 97 === 0);
    for (const [t, n] of some) {
      const holders = (db.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().all() as string[]).filter((name) => foldName(name).includes(t)).length;
      expect(holders, t).toBe(n);
    }
    const scratch = tempDir('participant-lists-');
    dirs.push(scratch);
    const sink = new DirectorySink(scratch);
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 40, chunkMaxBytes: 16_384 }, jsonBody);
    expect(trigramCountsOf(trigramCountsFromNames(ctx))).toEqual(table);
    sink.close();
  });
});
