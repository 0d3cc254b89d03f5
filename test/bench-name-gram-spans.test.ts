// The short name lists' benchmark (bench/name-gram-spans.ts) over the small demo: every gram of one or
// two code points without a space with its holders, and in each order the longest stretch holding
// `limit` + 1 of its matches, against a direct count over the names in each order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchNameGramSpans } from '../bench/name-gram-spans.js';
import { DEFAULT_SORT, foldName, listOrder, TRIGRAM_ORDERS } from '../src/api/participants/plan.js';
import { orderSql } from '../src/api/participants/query.js';
import type { Db } from '../src/db/index.js';
import { runDerive } from '../src/derive/index.js';
import { copyOfSmallDemoDb } from './helpers/demo-fixture.js';

let db: Db;
let dbPath: string;
beforeAll(() => {
  const c = copyOfSmallDemoDb();
  dbPath = c.path;
  db = c.open();
  runDerive(db, { only: ['providers', 'participants', 'stats'] });
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
});
afterAll(() => db?.close());

describe('the short name lists benchmark', () => {
  it('counts each gram\'s holders and its longest span of `limit` matches in each order (and the match after them) as a scan of the names does', () => {
    const limit = 7;
    const r = benchNameGramSpans(dbPath, limit, 10, () => {});
    const names = db.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().all() as string[];
    expect(r.named).toBe(names.length);
    const folded = names.map(foldName);
    // Every gram of one or two code points without a space that some name holds, and no other.
    const want = new Set(folded.flatMap((f) => [...Array.from(f), ...Array.from(f).slice(1).map((c, i) => Array.from(f)[i]! + c)]).filter((g) => !g.includes(' ')));
    expect(new Set(r.grams.map((g) => g.gram))).toEqual(want);
    expect(r.grams.map((g) => g.holders)).toEqual([...r.grams.map((g) => g.holders)].sort((a, b) => b - a));
    expect(Object.values(r.pairs).reduce((a, b) => a + b, 0)).toBe(r.grams.reduce((a, g) => a + g.holders, 0));
    for (const sort of [DEFAULT_SORT, ...TRIGRAM_ORDERS]) {
      const inOrder = (db.prepare(`SELECT name FROM participant_list ORDER BY ${orderSql(listOrder(sort))}`).pluck().all() as Array<string | null>).map((n) => (n === null ? null : foldName(n)));
      for (const g of r.grams.filter((_, i) => i % 11 === 0)) {
        const at = inOrder.flatMap((f, i) => (f !== null && f.includes(g.gram) ? [i] : []));
        expect(at.length, g.gram).toBe(g.holders);
        // A page's matches and the one after it.
        let span = at.length <= limit ? at[at.length - 1]! - at[0]! + 1 : 0;
        for (let i = limit; i < at.length; i++) span = Math.max(span, at[i]! - at[i - limit]! + 1);
        expect(g.span_chunks[sort], `${g.gram} ${sort}`).toBe(Math.ceil(span / 10));
      }
    }
  }, 120_000);
});
