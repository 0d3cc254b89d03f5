// The participant lists written in full (src/render/routes/participant-lists.ts): one pass in the
// default order writes the main list of that order, the posting lists and the trigram lists side by
// side; the trigrams met after TRIGRAM_WRITERS_MAX lists are open are written afterwards from a sorted
// temporary table. Both ways give the same files.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../src/api/json.js';
import { LIST_ROUTE } from '../src/api/participants/plan.js';
import type { Db } from '../src/db/index.js';
import { runDerive } from '../src/derive/index.js';
import { RenderContext } from '../src/render/context.js';
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
});
