// Name search grams benchmark (docs/benchmarks.md "Counting name searches: the grams of the names"):
// over a derived database, the sizes of an index that would count every name search exactly
// (issue 14; docs/snapshot-format.md "Decision: a name search past a small set is not counted").
//
// A name search matches the folded names that contain its text. Call a gram (a run of at least 3 code
// points) frequent when more than `threshold` names contain it. A search whose text is frequent has
// many matches, and its count under any filters is a sum over its matches' facet cells: the index
// would store each frequent gram's count per cell. A search whose text is not frequent has at most
// `threshold` matches, all among the names holding one of its minimal infrequent grams (an infrequent
// gram whose grams one code point shorter are all frequent; a text that is not frequent holds one):
// the index would store each minimal infrequent gram's names, a small set read whole. This counts both
// (frequent grams are closed under taking grams, so they are mined level by level, as Apriori does,
// over a trie of code points). Read-only.
import { foldName } from '../src/api/participants/plan.js';
import { openDb } from '../src/db/index.js';

export interface GramsBenchResult {
  bench: 'grams';
  db: string;
  threshold: number;
  participants: number;
  /** Participants with a name (the others match no name search). */
  named: number;
  mean_name_code_points: number;
  /** Distinct facet cells (country, scheme, registered, provenance, SMP, serving seat) of the named participants. */
  cells: number;
  /** Per gram length: frequent grams, and minimal infrequent grams with their names (postings). */
  levels: Array<{ length: number; frequent: number; minimal_infrequent: number; postings: number }>;
  frequent: { grams: number; over_cap: number; by_matches: Record<string, number>; cell_pairs: number; cells_max: number; cells_mean: number };
  minimal_infrequent: { grams: number; postings: number; longer_than_3: { grams: number; postings: number } };
  seconds: { load: number; mine: number; cells: number };
}

/** A node of the trie: a gram (its code points from the root); `gram` its index among the frequent ones, or -1. */
interface Node {
  children: Map<number, Node>;
  gram: number;
  /** While it is a candidate: names that hold it, and the last name counted. */
  count: number;
  seen: number;
}

const node = (): Node => ({ children: new Map(), gram: -1, count: 0, seen: -1 });

/**
 * Mines the frequent grams (held by more than `threshold` of `names`, each an array of code points)
 * and the minimal infrequent ones. Returns the trie of the frequent grams (prefix-closed: every node at
 * depth 3 or more is a frequent gram; depths 1 and 2 are their prefixes), and per length the counts.
 */
export function mineGrams(names: readonly Uint32Array[], threshold: number): { root: Node; frequent: number; levels: GramsBenchResult['levels'] } {
  const root = node();
  const levels: GramsBenchResult['levels'] = [];
  let frequent = 0;
  // Per name still in play: the node of the gram one shorter than the level at each start (null where
  // that gram is not frequent), stepped one code point deeper at each level.
  let active: Array<{ k: number; at: Array<Node | null> }> = [];
  for (let length = 3; ; length++) {
    const candidates: Node[] = [];
    const step = (k: number, cps: Uint32Array, at: Array<Node | null>): void => {
      const n = cps.length;
      for (let i = 0; i + length <= n; i++) {
        const prefix = at[i];
        // The prefix and the suffix one shorter are frequent (or, at length 3, any).
        if (prefix === null || prefix === undefined || at[i + 1] === null || at[i + 1] === undefined) continue;
        const cp = cps[i + length - 1]!;
        let c = prefix.children.get(cp);
        if (c === undefined) {
          c = node();
          prefix.children.set(cp, c);
          candidates.push(c);
        }
        if (c.seen !== k) {
          c.seen = k;
          c.count++;
        }
      }
    };
    if (length === 3) {
      names.forEach((cps, k) => {
        if (cps.length < 3) return;
        // The first two code points at each start, made as needed: every trigram is a candidate.
        const at: Array<Node | null> = [];
        for (let i = 0; i + 2 <= cps.length; i++) {
          let a = root.children.get(cps[i]!);
          if (a === undefined) root.children.set(cps[i]!, (a = node()));
          let b = a.children.get(cps[i + 1]!);
          if (b === undefined) a.children.set(cps[i + 1]!, (b = node()));
          at.push(b);
        }
        step(k, cps, at);
        active.push({ k, at });
      });
    } else {
      const next: typeof active = [];
      for (const { k, at: before } of active) {
        const cps = names[k]!;
        if (cps.length < length) continue;
        // One code point deeper: the gram of length - 1 at each start, if it is frequent.
        const at: Array<Node | null> = [];
        let any = false;
        for (let i = 0; i + length - 1 <= cps.length; i++) {
          const c = before[i]?.children.get(cps[i + length - 2]!);
          const x = c !== undefined && c.gram >= 0 ? c : null;
          at.push(x);
          if (x !== null) any = true;
        }
        if (!any) continue;
        step(k, cps, at);
        next.push({ k, at });
      }
      active = next;
    }
    let levelFrequent = 0;
    let infrequent = 0;
    let postings = 0;
    for (const c of candidates) {
      if (c.count > threshold) {
        c.gram = frequent++;
        levelFrequent++;
      } else {
        infrequent++;
        postings += c.count;
      }
    }
    // The infrequent candidates leave the trie (no frequent gram extends them), and at length 3 the
    // one- and two-code-point prefixes that lead to no frequent trigram.
    const prune = (x: Node, depth: number): boolean => {
      for (const [cp, c] of x.children) {
        const keep = depth + 1 === length ? c.gram >= 0 : prune(c, depth + 1) || depth + 1 >= 3;
        if (!keep) x.children.delete(cp);
      }
      return x.children.size > 0;
    };
    prune(root, 0);
    levels.push({ length, frequent: levelFrequent, minimal_infrequent: infrequent, postings });
    if (levelFrequent === 0) break;
  }
  return { root, frequent, levels };
}

/** The code points of a folded name. */
export function codePoints(s: string): Uint32Array {
  const out = new Uint32Array(s.length);
  let n = 0;
  for (const ch of s) out[n++] = ch.codePointAt(0)!;
  return out.subarray(0, n);
}

export function benchGrams(dbPath: string, threshold: number, cap: number, progress: (line: string) => void): GramsBenchResult {
  const db = openDb(dbPath, { readonly: true });
  const t0 = performance.now();
  const names: Uint32Array[] = [];
  const cellOf: number[] = [];
  const cellIds = new Map<string, number>();
  let participants = 0;
  let cps = 0;
  try {
    participants = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    const rows = db.prepare('SELECT name, country, scheme, registered, provenance, smp, ap_seat_id FROM participant_list WHERE name IS NOT NULL').raw().iterate() as IterableIterator<unknown[]>;
    for (const r of rows) {
      const name = codePoints(foldName(String(r[0])));
      names.push(name);
      cps += name.length;
      const key = JSON.stringify(r.slice(1));
      let id = cellIds.get(key);
      if (id === undefined) cellIds.set(key, (id = cellIds.size));
      cellOf.push(id);
      if (names.length % 500_000 === 0) progress(`${names.length} names read`);
    }
  } finally {
    db.close();
  }
  const load = (performance.now() - t0) / 1000;
  progress(`${names.length} named of ${participants} participants, ${cellIds.size} cells (${load.toFixed(1)} s)`);
  let t = performance.now();
  const { root, frequent, levels } = mineGrams(names, threshold);
  const mine = (performance.now() - t) / 1000;
  progress(`${frequent} frequent grams (${mine.toFixed(1)} s)`);

  // Each frequent gram's matches and distinct cells: from each start, down the trie while it holds a gram.
  t = performance.now();
  const matches = new Uint32Array(frequent);
  const cells = new Uint32Array(frequent);
  const lastName = new Int32Array(frequent).fill(-1);
  // Names grouped by cell, so that a gram's distinct cells are counted as its matches are: a gram is
  // counted once per cell, at the first name of the cell that holds it.
  const order = names.map((_, k) => k).sort((a, b) => cellOf[a]! - cellOf[b]!);
  const lastCell = new Int32Array(frequent).fill(-1);
  for (const k of order) {
    const s = names[k]!;
    const cell = cellOf[k]!;
    for (let i = 0; i + 3 <= s.length; i++) {
      let x: Node | undefined = root;
      for (let j = i; j < s.length; j++) {
        x = x.children.get(s[j]!);
        if (x === undefined) break;
        if (j - i + 1 < 3) continue;
        if (x.gram < 0) break;
        if (lastName[x.gram] === k) continue;
        lastName[x.gram] = k;
        matches[x.gram]!++;
        if (lastCell[x.gram] !== cell) {
          lastCell[x.gram] = cell;
          cells[x.gram]!++;
        }
      }
    }
  }
  const cellSeconds = (performance.now() - t) / 1000;
  let pairs = 0;
  let cellsMax = 0;
  let overCap = 0;
  const byMatches: Record<string, number> = {};
  for (let g = 0; g < frequent; g++) {
    pairs += cells[g]!;
    cellsMax = Math.max(cellsMax, cells[g]!);
    if (matches[g]! > cap) overCap++;
    const band = `1e${Math.floor(Math.log10(matches[g]!))}`;
    byMatches[band] = (byMatches[band] ?? 0) + 1;
  }
  const mig = levels.reduce((a, l) => a + l.minimal_infrequent, 0);
  const migPostings = levels.reduce((a, l) => a + l.postings, 0);
  const longer = levels.filter((l) => l.length > 3);
  return {
    bench: 'grams',
    db: dbPath,
    threshold,
    participants,
    named: names.length,
    mean_name_code_points: Math.round((cps / Math.max(1, names.length)) * 10) / 10,
    cells: cellIds.size,
    levels,
    frequent: { grams: frequent, over_cap: overCap, by_matches: byMatches, cell_pairs: pairs, cells_max: cellsMax, cells_mean: frequent === 0 ? 0 : Math.round(pairs / frequent) },
    minimal_infrequent: {
      grams: mig,
      postings: migPostings,
      longer_than_3: { grams: longer.reduce((a, l) => a + l.minimal_infrequent, 0), postings: longer.reduce((a, l) => a + l.postings, 0) },
    },
    seconds: { load: Math.round(load * 10) / 10, mine: Math.round(mine * 10) / 10, cells: Math.round(cellSeconds * 10) / 10 },
  };
}
