// The participant lists written in full (src/render/routes/participant-lists.ts): one pass in the
// default order writes the main list of that order, the posting lists and the trigram lists side by
// side; the trigrams met after TRIGRAM_WRITERS_MAX lists are open are written afterwards from a sorted
// temporary table. Both ways give the same files.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../src/api/json.js';
import { foldName, gramCountTableOf, isGramCountTable, LIST_ROUTE, shortGramsOf, shortSearchGramsOf, trigramsOf, TRIGRAMS_FORMAT, TRIGRAMS_PATH, UNREGISTERED_GRAMS_FORMAT, UNREGISTERED_GRAMS_PATH, type GramCountTable } from '../src/api/participants/plan.js';
import { encodeSegment } from '../src/api/paths.js';
import { readStoredJson } from '../src/render/stored.js';
import type { Db } from '../src/db/index.js';
import { runDerive } from '../src/derive/index.js';
import { RenderContext } from '../src/render/context.js';
import { trigramCountsFromNames, unregisteredGramCountsFromNames } from '../src/render/routes/participant-lists.js';
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
  }, 180_000);

  it('the trigram table names every trigram list with its size, and the unregistered name lists\' table every one of theirs, sorted by gram; counted from the names they are the same; every gram of one or two code points has a short name list', () => {
    const { dir } = render(1_000_000);
    const rootsDir = path.join(dir, 'i', 'participants.list', '_5fnames');
    const names = db.prepare('SELECT name, registered FROM participant_list WHERE name IS NOT NULL').all() as Array<{ name: string; registered: number }>;
    const kinds = [
      {
        path: TRIGRAMS_PATH,
        format: TRIGRAMS_FORMAT,
        // The root's file name is the trigram's path segment (encodeSegment).
        root: (t: string) => path.join(rootsDir, `${encodeSegment(t)}.json`),
        roots: null,
        holders: (t: string) => names.filter((r) => foldName(r.name).includes(t)).length,
        fromNames: trigramCountsFromNames,
        grams: (folded: string) => trigramsOf(folded),
      },
      {
        path: UNREGISTERED_GRAMS_PATH,
        format: UNREGISTERED_GRAMS_FORMAT,
        root: (g: string) => path.join(rootsDir, encodeSegment(g), 'registered', 'false.json'),
        roots: fs.readdirSync(rootsDir).filter((f) => fs.existsSync(path.join(rootsDir, f, 'registered', 'false.json'))).length,
        holders: (g: string) => names.filter((r) => r.registered === 0 && foldName(r.name).includes(g)).length,
        fromNames: unregisteredGramCountsFromNames,
        grams: (folded: string) => shortGramsOf(folded),
      },
    ];
    const scratch = tempDir('participant-lists-');
    dirs.push(scratch);
    const sink = new DirectorySink(scratch);
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 40, chunkMaxBytes: 16_384 }, jsonBody);
    for (const kind of kinds) {
      const table = readStoredJson(path.join(dir, kind.path));
      expect(isGramCountTable(table, kind.format)).toBe(true);
      const pairs = (table as GramCountTable<string>).counts;
      if (kind.roots !== null) expect(pairs.length, kind.path).toBe(kind.roots);
      expect(pairs.map(([g]) => g)).toEqual(pairs.map(([g]) => g).sort((a, b) => (a < b ? -1 : 1)));
      for (const [g, n] of pairs) {
        expect(n, g).toBeGreaterThan(0);
        expect((readStoredJson(kind.root(g)) as { count: number }).count, g).toBe(n);
      }
      // Each gram with the number of named (unregistered) participants whose folded name holds it.
      for (const [g, n] of pairs.filter((_, i) => i % 97 === 0)) expect(kind.holders(g), g).toBe(n);
      // And every gram some name holds has a list.
      const held = new Set(names.filter((r) => kind.path === TRIGRAMS_PATH || r.registered === 0).flatMap((r) => kind.grams(foldName(r.name))));
      expect(held.size, kind.path).toBe(pairs.length);
      expect(gramCountTableOf(kind.format, kind.fromNames(ctx))).toEqual(table);
    }
    // The default-order name lists of every named participant are the trigram lists and the short
    // name lists: one per trigram and per gram of one or two code points without a space some name
    // holds, and no other.
    const heldTrigrams = new Set(names.flatMap((r) => trigramsOf(foldName(r.name))));
    const heldShort = new Set(names.flatMap((r) => shortSearchGramsOf(foldName(r.name))));
    expect(fs.readdirSync(rootsDir).filter((f) => f.endsWith('.json')).sort()).toEqual([...heldTrigrams, ...heldShort].map((g) => `${encodeSegment(g)}.json`).sort());
    expect(new Set([...heldShort].map((g) => Array.from(g).length))).toEqual(new Set([1, 2]));
    expect([...heldShort].filter((g) => g.includes(' '))).toEqual([]);
    // A short name list holds the named participants whose folded name holds its gram.
    for (const g of [...heldShort].sort().filter((_, i) => i % 7 === 0)) {
      expect((readStoredJson(path.join(rootsDir, `${encodeSegment(g)}.json`)) as { count: number }).count, g).toBe(names.filter((r) => foldName(r.name).includes(g)).length);
    }
    // The unregistered lists hold grams of one to three code points, and there are some of each.
    const lengths = new Set((readStoredJson(path.join(dir, UNREGISTERED_GRAMS_PATH)) as GramCountTable<string>).counts.map(([g]) => Array.from(g).length));
    expect([...lengths].sort()).toEqual([1, 2, 3]);
    sink.close();
  }, 180_000);
});
