// The short name lists' case (docs/benchmarks.md "The short name lists"): over a derived database, per
// gram of one or two code points without a space (plan.ts shortSearchGramsOf), the named participants
// holding it and, in the default order and each of TRIGRAM_ORDERS, the longest stretch of the order's
// main list that holds `limit` + 1 consecutive matches (a page and the match after it, which a walk
// reads on to), in chunks of `chunkItems` participants: what a walk of the main list reads for such a
// search where its names cluster. Read-only.
import { DEFAULT_SORT, foldName, listOrder, shortSearchGramsOf, TRIGRAM_ORDERS, type ParticipantSort } from '../src/api/participants/plan.js';
import { orderSql } from '../src/api/participants/query.js';
import { openDb } from '../src/db/index.js';

export interface NameGramSpansResult {
  bench: 'name-gram-spans';
  db: string;
  limit: number;
  chunk_items: number;
  participants: number;
  named: number;
  /** Name-gram pairs (the short name lists' items in one order), by the gram's length in code points. */
  pairs: Record<string, number>;
  /** Every gram, most held first: its holders, their share of the named participants, and its longest span of `limit` + 1 matches per order (chunks). */
  grams: Array<{ gram: string; holders: number; share: number; span_chunks: Record<string, number> }>;
}

export function benchNameGramSpans(dbPath: string, limit: number, chunkItems: number, progress: (line: string) => void): NameGramSpansResult {
  const db = openDb(dbPath, { readonly: true });
  try {
    const participants = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    const holders = new Map<string, number>();
    let named = 0;
    for (const name of db.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().iterate() as IterableIterator<string>) {
      named++;
      for (const g of shortSearchGramsOf(foldName(name))) holders.set(g, (holders.get(g) ?? 0) + 1);
    }
    progress(`name-gram-spans: ${named} names, ${holders.size} grams`);
    const grams = [...holders.keys()];
    const index = new Map(grams.map((g, i) => [g, i]));
    const spans: Record<string, Int32Array> = {};
    for (const sort of [DEFAULT_SORT, ...TRIGRAM_ORDERS] as ParticipantSort[]) {
      // Per gram, the positions of its last `limit` matches (a ring) and the longest span of `limit` + 1 seen.
      const ring = new Int32Array(grams.length * limit);
      const seen = new Int32Array(grams.length);
      const worst = new Int32Array(grams.length);
      let pos = 0;
      for (const name of db.prepare(`SELECT name FROM participant_list ORDER BY ${orderSql(listOrder(sort))}`).pluck().iterate() as IterableIterator<string | null>) {
        if (name !== null) {
          for (const g of shortSearchGramsOf(foldName(name))) {
            const i = index.get(g)!;
            const at = i * limit + (seen[i]! % limit);
            if (seen[i]! >= limit) worst[i] = Math.max(worst[i]!, pos - ring[at]! + 1);
            ring[at] = pos;
            seen[i]!++;
          }
        }
        pos++;
      }
      // A gram of at most `limit` holders: the stretch from its first match to its last.
      for (let i = 0; i < grams.length; i++) if (seen[i]! <= limit && seen[i]! > 0) worst[i] = ring[i * limit + seen[i]! - 1]! - ring[i * limit]! + 1;
      spans[sort] = worst;
      progress(`name-gram-spans: ${sort} done`);
    }
    const pairs: Record<string, number> = {};
    for (const [g, n] of holders) pairs[String(Array.from(g).length)] = (pairs[String(Array.from(g).length)] ?? 0) + n;
    const out = grams
      .map((gram, i) => ({
        gram,
        holders: holders.get(gram)!,
        share: Math.round((holders.get(gram)! / named) * 10_000) / 10_000,
        span_chunks: Object.fromEntries(Object.entries(spans).map(([sort, w]) => [sort, Math.ceil(w[i]! / chunkItems)])),
      }))
      .sort((a, b) => b.holders - a.holders || (a.gram < b.gram ? -1 : 1));
    return { bench: 'name-gram-spans', db: dbPath, limit, chunk_items: chunkItems, participants, named, pairs, grams: out };
  } finally {
    db.close();
  }
}
