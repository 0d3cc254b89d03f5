// The grams index of the participant list's name searches (src/api/participants/grams.ts;
// docs/snapshot-format.md "Counting name searches: the grams index"): mined from the named
// participants' folded names by a full build, updated from the changed participants by an incremental
// one (src/render/grams-model.ts: updateGrams below); the files whose bytes did not change are not
// written again.
//
// The miner works level by level (Apriori): a gram of ℓ + 1 code points can be frequent only if its
// two grams of ℓ are, so each level counts, at each position whose gram of ℓ code points and the next
// position's are frequent, the gram one code point longer. Per position it keeps the frequent gram
// starting there (an id, or -1) and, per end position, the length of the longest frequent gram ending
// there: the shortest infrequent gram ending at a position is one code point longer. Names are visited
// grouped by facet cell, so each frequent gram's participants per cell are counted as they come.
import { allGramCells, codePointsOf, encodeGramCells, GRAM_CELL_SHARDS, GRAM_CELLS_FORMAT, GRAM_DICT_FORMAT, GRAM_DICT_SHARDS, GRAM_LIST_FORMAT, GRAM_THRESHOLD, gramCellShard, gramCellsPath, gramDictPath, gramDictShard, gramListPath, GRAMS_PREFIX, isGramDict, isGramList, type GramDict } from '../api/participants/grams.js';
import { cubeOf, FACET_DIMENSIONS, type FacetTuple } from '../api/participants/facets.js';
import { DEFAULT_SORT, expandParticipant, foldName, listKey, listOrder, storeParticipant, type StoredParticipant } from '../api/participants/plan.js';
import { orderDirs } from '../api/routes/request.js';
import { curatedSeatNames, facetTupleRows, LIST_COLUMNS, listItemOf, orderSql, type ListRow } from '../api/participants/query.js';
import { compareCodePoints, compareKeys, type SortKey } from '../api/sort-keys.js';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { GRAMS_UNIT, type RenderContext } from './context.js';
import { loadGramsState, minedOfModel, modelOfMined, NameTable, saveGramsState, updateModel, type GramName, type GramNameChange } from './grams-model.js';
import { readStored } from './stored.js';
import { arrayElements } from './lists.js';
import { changedListRows } from './state.js';
import type { ParticipantListItem } from '../api/schemas/index.js';

/** Not a route: the part of participants.list that writes the grams index (a worker's, where there is one). */
export const GRAMS_PART = 'participants.list:grams';

/** The named participants' folded names, concatenated, and their facet cells. */
export interface GramNames {
  /** Every name's code points, name after name. */
  cps: Int32Array;
  /** Name k is cps[starts[k]] up to cps[starts[k + 1]]. */
  starts: Int32Array;
  /** Each name's cell (any numbering; the cell counts use it). */
  cellOf: Int32Array;
}

export interface MinedGrams {
  /** The frequent grams (held by more than the threshold of names), by id. */
  frequent: string[];
  /** How many names hold each frequent gram. */
  df: Int32Array;
  /** Each frequent gram's cells, ascending, and its names in each: gram g's are at cellStart[g] up to cellStart[g + 1]. */
  cellStart: Int32Array;
  cell: Int32Array;
  cellCount: Int32Array;
  /**
   * Per frequent gram of three code points or more, the code points after it that make an infrequent
   * gram held by some name, each with the length of the shortest infrequent gram ending there.
   */
  ext: Map<number, Map<number, number>>;
  /** Each infrequent gram of one or two code points held by some name, and the gram whose list holds its names. */
  shortInfrequent: Map<string, string>;
  /** Each minimal infrequent gram of one, two, four or more code points, with its names (ascending). */
  lists: Array<{ gram: string; names: Int32Array }>;
  /** Each minimal infrequent gram of three code points (not listed: its trigram list holds it), with its names. */
  minimalTrigrams: Array<{ gram: string; names: Int32Array }>;
  /**
   * The names holding each infrequent gram the grams model tracks (src/render/grams-model.ts): those
   * of one or two code points, the minimal ones and the extensions of the frequent ones.
   */
  tracked: Map<string, number>;
}

/** What the index's files are written from (gramFiles): the miner's findings but what only the grams model keeps. */
export type IndexGrams = Omit<MinedGrams, 'minimalTrigrams' | 'tracked'>;

/** A growable Int32Array. */
class Ints {
  a: Int32Array;
  n = 0;
  constructor(size = 1024) {
    this.a = new Int32Array(size);
  }
  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Int32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
  get(i: number): number {
    return this.a[i]!;
  }
  set(i: number, v: number): void {
    this.a[i] = v;
  }
}

/**
 * The candidates of a level, by (parent gram + 1, code point): an open-addressing hash table over
 * typed arrays (a Map keyed by numbers past 2^31 hashed heap numbers: most of the miner's time).
 */
class Candidates {
  private mask = (1 << 16) - 1;
  private keyA = new Int32Array(1 << 16).fill(-1);
  private keyB = new Int32Array(1 << 16);
  private slot = new Int32Array(1 << 16);
  /** Per candidate: parent gram (-1: none), code point, names holding it, the last name counted and the last listed. */
  readonly parent = new Ints();
  readonly cp = new Ints();
  readonly count = new Ints();
  readonly seen = new Ints();
  readonly posted = new Ints();

  get size(): number {
    return this.parent.n;
  }

  private index(a: number, b: number): number {
    let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca6b);
    h ^= h >>> 15;
    let i = h & this.mask;
    while (this.keyA[i] !== -1 && (this.keyA[i] !== a || this.keyB[i] !== b)) i = (i + 1) & this.mask;
    return i;
  }

  /** The candidate of `parent` and `cp`, -1 when none. */
  find(parent: number, cp: number): number {
    const i = this.index(parent + 1, cp);
    return this.keyA[i] === -1 ? -1 : this.slot[i]!;
  }

  /** Counts name `k` for the candidate of `parent` and `cp` (made when new); returns the candidate. */
  enter(parent: number, cp: number, k: number): number {
    let i = this.index(parent + 1, cp);
    let c: number;
    if (this.keyA[i] === -1) {
      c = this.parent.n;
      this.keyA[i] = parent + 1;
      this.keyB[i] = cp;
      this.slot[i] = c;
      this.parent.push(parent);
      this.cp.push(cp);
      this.count.push(0);
      this.seen.push(-1);
      this.posted.push(-1);
      if (this.parent.n * 2 > this.mask) {
        this.grow();
        i = -1;
      }
    } else c = this.slot[i]!;
    if (this.seen.get(c) !== k) {
      this.seen.set(c, k);
      this.count.set(c, this.count.get(c) + 1);
    }
    return c;
  }

  private grow(): void {
    const size = (this.mask + 1) * 2;
    const [a, b, sl] = [this.keyA, this.keyB, this.slot];
    this.mask = size - 1;
    this.keyA = new Int32Array(size).fill(-1);
    this.keyB = new Int32Array(size);
    this.slot = new Int32Array(size);
    for (let i = 0; i < a.length; i++) {
      if (a[i] === -1) continue;
      const j = this.index(a[i]!, b[i]!);
      this.keyA[j] = a[i]!;
      this.keyB[j] = b[i]!;
      this.slot[j] = sl[i]!;
    }
  }

  clear(): void {
    this.mask = (1 << 16) - 1;
    this.keyA = new Int32Array(1 << 16).fill(-1);
    this.keyB = new Int32Array(1 << 16);
    this.slot = new Int32Array(1 << 16);
    this.parent.n = this.cp.n = this.count.n = this.seen.n = this.posted.n = 0;
  }
}

/**
 * Mines the grams index of `names` (src/api/participants/grams.ts) with frequent meaning held by more
 * than `threshold` names.
 */
export function mineGrams(names: GramNames, threshold: number): MinedGrams {
  const { cps, starts, cellOf } = names;
  const nNames = starts.length - 1;
  // Names grouped by cell, ascending (counting sort), so a gram's cells come in order.
  let maxCell = -1;
  for (let k = 0; k < nNames; k++) maxCell = Math.max(maxCell, cellOf[k]!);
  const byCell = new Int32Array(maxCell + 2);
  for (let k = 0; k < nNames; k++) byCell[cellOf[k]! + 1]!++;
  for (let c = 0; c <= maxCell; c++) byCell[c + 1]! += byCell[c]!;
  const visit = new Int32Array(nNames);
  for (let k = 0; k < nNames; k++) visit[byCell[cellOf[k]!]!++] = k;

  // Frequent grams: parent (-1 for one code point), last code point, text; df.
  const gramText: string[] = [];
  const df = new Ints();
  // Counting per gram: the last name counted, the cell of the run being counted and its names.
  const lastName = new Ints();
  const runCell = new Ints();
  const runCount = new Ints();
  const triples = { gram: new Ints(1 << 16), cell: new Ints(1 << 16), count: new Ints(1 << 16) };
  const newGram = (text: string, count: number): number => {
    const id = gramText.length;
    gramText.push(text);
    df.push(count);
    lastName.push(-1);
    runCell.push(-1);
    runCount.push(0);
    return id;
  };
  const countIn = (g: number, k: number, cell: number): void => {
    if (lastName.get(g) === k) return;
    lastName.set(g, k);
    if (runCell.get(g) !== cell) {
      if (runCount.get(g) > 0) {
        triples.gram.push(g);
        triples.cell.push(runCell.get(g));
        triples.count.push(runCount.get(g));
      }
      runCell.set(g, cell);
      runCount.set(g, 1);
    } else runCount.set(g, runCount.get(g) + 1);
  };
  const flushRuns = (from: number, to: number): void => {
    for (let g = from; g < to; g++) {
      if (runCount.get(g) > 0) {
        triples.gram.push(g);
        triples.cell.push(runCell.get(g));
        triples.count.push(runCount.get(g));
      }
      runCount.set(g, 0);
    }
  };

  // The frequent gram starting at each position (of the current length), -1 where none; the length of
  // the longest frequent gram ending at each position (end exclusive).
  const cur = new Int32Array(cps.length).fill(-1);
  const lam = new Uint16Array(cps.length + 1);
  const ext = new Map<number, Map<number, number>>();
  const shortInfrequent = new Map<string, string>();
  const lists: Array<{ gram: string; names: Int32Array }> = [];
  const minimalTrigrams: Array<{ gram: string; names: Int32Array }> = [];
  const tracked = new Map<string, number>();
  /** The infrequent candidates of a level, with their counts (tracked). */
  const trackInfrequent = (): void => {
    for (let c = 0; c < cand.size; c++) if (freqOf[c]! < 0 && candCount.get(c) > 0) tracked.set(candText(c), candCount.get(c));
  };

  // Candidates of a level; their frequent id (-1 infrequent).
  const cand = new Candidates();
  const candText = (c: number): string => (cand.parent.get(c) < 0 ? '' : gramText[cand.parent.get(c)]!) + String.fromCodePoint(cand.cp.get(c));
  const candCount = cand.count;
  const candPosted = cand.posted;
  // Postings of the minimal infrequent candidates of a level: (candidate, name).
  const posts = { cand: new Ints(), name: new Ints() };
  const collectLists = (): void => {
    const nC = cand.size;
    const start = new Int32Array(nC + 1);
    for (let i = 0; i < posts.cand.n; i++) start[posts.cand.get(i) + 1]!++;
    for (let c = 0; c < nC; c++) start[c + 1]! += start[c]!;
    const at = start.slice(0, nC);
    const flat = new Int32Array(posts.cand.n);
    for (let i = 0; i < posts.cand.n; i++) flat[at[posts.cand.get(i)]!++] = posts.name.get(i);
    for (let c = 0; c < nC; c++) {
      if (start[c + 1] === start[c]) continue;
      const gram = candText(c);
      (Array.from(gram).length === 3 ? minimalTrigrams : lists).push({ gram, names: flat.slice(start[c]!, start[c + 1]!).sort() });
    }
    posts.cand.n = posts.name.n = 0;
  };

  // Length 1: every code point is a candidate.
  for (let k = 0; k < nNames; k++) for (let i = starts[k]!; i < starts[k + 1]!; i++) cand.enter(-1, cps[i]!, k);
  let freqOf = new Int32Array(cand.size).fill(-1);
  let levelFrom = gramText.length;
  for (let c = 0; c < cand.size; c++) if (candCount.get(c) > threshold) freqOf[c] = newGram(candText(c), candCount.get(c));
  trackInfrequent();
  // The grams of two code points with an infrequent one, which no level counts: counted here.
  {
    const infrequent = new Uint8Array(0x110000);
    for (let c = 0; c < cand.size; c++) if (freqOf[c]! < 0) infrequent[cand.cp.get(c)] = 1;
    const infrequentCp = (cp: number): boolean => infrequent[cp] === 1;
    const seen = new Set<string>();
    for (let k = 0; k < nNames; k++) {
      seen.clear();
      for (let i = starts[k]!; i + 1 < starts[k + 1]!; i++) {
        if (!infrequentCp(cps[i]!) && !infrequentCp(cps[i + 1]!)) continue;
        const two = String.fromCodePoint(cps[i]!, cps[i + 1]!);
        if (seen.has(two)) continue;
        seen.add(two);
        tracked.set(two, (tracked.get(two) ?? 0) + 1);
      }
    }
  }
  let active: Int32Array;
  {
    const keep = new Ints();
    for (const k of visit) {
      const cell = cellOf[k]!;
      let any = false;
      for (let i = starts[k]!; i < starts[k + 1]!; i++) {
        const c = cand.find(-1, cps[i]!);
        const g = freqOf[c]!;
        if (g >= 0) {
          cur[i] = g;
          lam[i + 1] = 1;
          countIn(g, k, cell);
          any = true;
        } else {
          const one = String.fromCodePoint(cps[i]!);
          shortInfrequent.set(one, one);
          // A gram of two code points whose first is infrequent: that code point's list holds it.
          if (i + 1 < starts[k + 1]!) shortInfrequent.set(String.fromCodePoint(cps[i]!, cps[i + 1]!), one);
          if (candPosted.get(c) !== k) {
            candPosted.set(c, k);
            posts.cand.push(c);
            posts.name.push(k);
          }
        }
      }
      if (any) keep.push(k);
    }
    active = keep.a.slice(0, keep.n);
    flushRuns(levelFrom, gramText.length);
    collectLists();
  }

  // The extensions met, by (frequent gram, code point), with the length of the gram they name.
  const exts = new Candidates();
  const extLen = new Ints();
  for (let len = 1; active.length > 0; len++) {
    // Count the candidates of len + 1 code points. A position whose gram and the next position's are
    // frequent holds its candidate afterwards, as -2 - candidate (the assign pass needs no lookup);
    // one whose gram is frequent but cannot be extended keeps its gram; the others hold -1.
    cand.clear();
    for (const k of active) {
      const end = starts[k + 1]!;
      for (let i = starts[k]!; i + len < end; i++) {
        const a = cur[i]!;
        if (a < 0 || cur[i + 1]! < 0) continue;
        cur[i] = -2 - cand.enter(a, cps[i + len]!, k);
      }
    }
    levelFrom = gramText.length;
    freqOf = new Int32Array(cand.size).fill(-1);
    for (let c = 0; c < cand.size; c++) if (candCount.get(c) > threshold) freqOf[c] = newGram(candText(c), candCount.get(c));
    trackInfrequent();
    // Assign: the frequent grams of len + 1 at each position, their cells; the infrequent ones' lists
    // (not trigrams: their trigram lists hold them), extensions and short grams.
    const keep = new Ints();
    for (const k of active) {
      const end = starts[k + 1]!;
      const cell = cellOf[k]!;
      let any = false;
      for (let i = starts[k]!; i < end; i++) {
        const v = cur[i]!;
        if (v === -1) continue;
        if (i + len >= end) {
          cur[i] = -1;
          continue;
        }
        const cp = cps[i + len]!;
        let a: number;
        let mlen: number;
        if (v <= -2) {
          const c = -2 - v;
          const g = freqOf[c]!;
          if (g >= 0) {
            cur[i] = g;
            lam[i + len + 1] = len + 1;
            countIn(g, k, cell);
            any = true;
            continue;
          }
          a = cand.parent.get(c);
          mlen = len + 1;
          // Trigrams too (minimalTrigrams: the grams model keeps their names; their trigram lists are the index's).
          if (candPosted.get(c) !== k) {
            candPosted.set(c, k);
            posts.cand.push(c);
            posts.name.push(k);
          }
        } else {
          a = v;
          mlen = lam[i + len + 1]! + 1;
        }
        cur[i] = -1;
        if (len >= 3) {
          const e = exts.enter(a, cp, k);
          if (e === extLen.n) extLen.push(mlen);
        } else if (len === 1) {
          const two = String.fromCodePoint(cps[i]!, cp);
          shortInfrequent.set(two, mlen === 1 ? String.fromCodePoint(cp) : two);
        }
      }
      if (any) keep.push(k);
    }
    // The names still holding a frequent gram, in cell order (visit order).
    active = keep.a.slice(0, keep.n);
    flushRuns(levelFrom, gramText.length);
    collectLists();
  }
  for (let e = 0; e < exts.size; e++) {
    const a = exts.parent.get(e);
    tracked.set(gramText[a]! + String.fromCodePoint(exts.cp.get(e)), exts.count.get(e));
    let m = ext.get(a);
    if (m === undefined) ext.set(a, (m = new Map()));
    m.set(exts.cp.get(e), extLen.get(e));
  }

  // The cells per gram: the runs grouped by gram (each gram's in ascending cell order already).
  const nG = gramText.length;
  const cellStart = new Int32Array(nG + 1);
  for (let i = 0; i < triples.gram.n; i++) cellStart[triples.gram.get(i) + 1]!++;
  for (let g = 0; g < nG; g++) cellStart[g + 1]! += cellStart[g]!;
  const at = cellStart.slice(0, nG);
  const cell = new Int32Array(triples.gram.n);
  const cellCount = new Int32Array(triples.gram.n);
  for (let i = 0; i < triples.gram.n; i++) {
    const j = at[triples.gram.get(i)]!++;
    cell[j] = triples.cell.get(i);
    cellCount[j] = triples.count.get(i);
  }
  return { frequent: gramText, df: df.a.slice(0, df.n), cellStart, cell, cellCount, ext, shortInfrequent, lists, minimalTrigrams, tracked };
}

/** A JSON object's text from pairs, keys in code-point order (whatever they look like). */
function objectText(pairs: Array<[string, string]>): string {
  pairs.sort((a, b) => compareCodePoints(a[0], b[0]));
  return `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The stored list items of the names, as UTF-8 JSON, one after another. */
export class ItemArena {
  private bytes = new Uint8Array(1 << 20);
  private used = 0;
  private readonly ends = new Ints(1 << 16);

  get size(): number {
    return this.ends.n;
  }

  add(json: string): void {
    // At most three bytes per UTF-16 code unit.
    if (this.used + json.length * 3 > this.bytes.length) {
      const b = new Uint8Array(Math.max(this.bytes.length * 2, this.used + json.length * 3));
      b.set(this.bytes.subarray(0, this.used));
      this.bytes = b;
    }
    this.used += enc.encodeInto(json, this.bytes.subarray(this.used)).written;
    this.ends.push(this.used);
  }

  /** Item k's bytes. */
  item(k: number): Uint8Array {
    return this.bytes.subarray(k === 0 ? 0 : this.ends.get(k - 1), this.ends.get(k));
  }
}

/** A gram list file's text up to its first item. */
const GRAM_LIST_HEAD = `{"format":${JSON.stringify(GRAM_LIST_FORMAT)},"items":[`;
const gramListHead = enc.encode(GRAM_LIST_HEAD);
const gramListTail = enc.encode(']}');

/** A gram list file's bytes from its items' JSON texts (UTF-8), in order. */
function gramListBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(gramListHead.length + gramListTail.length + parts.reduce((n, b) => n + b.length, 0) + Math.max(0, parts.length - 1));
  out.set(gramListHead);
  let at = gramListHead.length;
  parts.forEach((b, i) => {
    if (i > 0) out[at++] = 0x2c; // ','
    out.set(b, at);
    at += b.length;
  });
  out.set(gramListTail, at);
  return out;
}

/** The files of the grams index (path → bytes) from what was mined, `items` the names' stored list items (JSON texts, or an arena of them). */
export function gramFiles(mined: IndexGrams, items: readonly string[] | ItemArena, put: (path: string, bytes: Uint8Array, type: string) => void): { dict: number; cells: number; lists: number } {
  const frequentOf: Array<Array<[string, string]>> = Array.from({ length: GRAM_DICT_SHARDS }, () => []);
  const infrequentOf: Array<Array<[string, string]>> = Array.from({ length: GRAM_DICT_SHARDS }, () => []);
  mined.frequent.forEach((gram, g) => {
    const ext = mined.ext.get(g);
    const pairs: Array<[string, string]> = ext === undefined ? [] : [...ext].map(([cp, len]) => [String.fromCodePoint(cp), String(len)]);
    frequentOf[gramDictShard(gram)]!.push([gram, objectText(pairs)]);
  });
  for (const [gram, m] of mined.shortInfrequent) infrequentOf[gramDictShard(gram)]!.push([gram, JSON.stringify(m)]);
  for (let s = 0; s < GRAM_DICT_SHARDS; s++) {
    put(gramDictPath(s), enc.encode(`{"format":${JSON.stringify(GRAM_DICT_FORMAT)},"frequent":${objectText(frequentOf[s]!)},"infrequent":${objectText(infrequentOf[s]!)}}`), 'application/json');
  }
  const cellsOf: Array<Array<{ gram: string; cells: Int32Array; counts: Int32Array }>> = Array.from({ length: GRAM_CELL_SHARDS }, () => []);
  mined.frequent.forEach((gram, g) => {
    const from = mined.cellStart[g]!;
    const to = mined.cellStart[g + 1]!;
    cellsOf[gramCellShard(gram)]!.push({ gram, cells: mined.cell.subarray(from, to), counts: mined.cellCount.subarray(from, to) });
  });
  for (let s = 0; s < GRAM_CELL_SHARDS; s++) put(gramCellsPath(s), encodeGramCells(cellsOf[s]!), 'application/octet-stream');
  for (const { gram, names } of mined.lists) {
    put(gramListPath(gram), gramListBytes(Array.from(names, (k) => (items instanceof ItemArena ? items.item(k) : enc.encode(items[k]!)))), 'application/json');
  }
  return { dict: GRAM_DICT_SHARDS, cells: GRAM_CELL_SHARDS, lists: mined.lists.length };
}

/**
 * Writes the grams index. A full build (or one without the previous build's state) reads the named
 * participants in the default order (their list items and folded names), numbers their facet cells as
 * the facet cube does (every participant's tuples, the unnamed ones' too), mines and writes, and saves
 * the state (src/render/grams-model.ts); an incremental one updates that state from the changed
 * participants and writes what it changed (updateGrams).
 */
export function renderGrams(ctx: RenderContext, threshold = GRAM_THRESHOLD): void {
  // No list item may differ since the previous build: its files (their unit not retired) are the index.
  if (!ctx.gramsDue) {
    ctx.gramsReport = 'kept';
    return;
  }
  let updated = false;
  ctx.inUnit(GRAMS_UNIT, () => {
    updated = ctx.participants === 'changed' && updateGrams(ctx, threshold);
    if (!updated) writeGrams(ctx, threshold);
  });
  ctx.gramsReport = updated ? 'updated' : 'written';
}

/** The gram lists' path prefix (each list is a kept list of its own: ListStore). */
const GRAM_LISTS_PREFIX = `${GRAMS_PREFIX}list/`;

/** The digest of a grams index's dictionary and cell shards (their bytes, shard by shard): what its state is the model of. */
function gramFilesDigest(bytesOf: (rel: string) => Uint8Array | null): string | null {
  const h = createHash('sha256');
  for (let s = 0; s < GRAM_DICT_SHARDS; s++) {
    const b = bytesOf(gramDictPath(s));
    if (b === null) return null;
    h.update(b);
  }
  for (let s = 0; s < GRAM_CELL_SHARDS; s++) {
    const b = bytesOf(gramCellsPath(s));
    if (b === null) return null;
    h.update(b);
  }
  return h.digest('hex');
}

/**
 * A sink for the grams index's files: a gram list under a unit of its own (a kept list, so that an
 * incremental build writes only the lists that changed), the shards under the current unit; it keeps
 * the shards' bytes for the state's digest.
 */
function gramsSink(ctx: RenderContext): { put: (rel: string, bytes: Uint8Array, type: string) => void; shards: Map<string, Uint8Array>; lists: Set<string> } {
  const shards = new Map<string, Uint8Array>();
  const lists = new Set<string>();
  return {
    shards,
    lists,
    put: (rel, bytes, type) => {
      if (rel.startsWith(GRAM_LISTS_PREFIX) && ctx.lists !== undefined) {
        lists.add(rel);
        ctx.unitSink(ctx.lists.unit(rel)).put(rel, bytes, type, 'mutable');
        return;
      }
      if (!rel.startsWith(GRAM_LISTS_PREFIX)) shards.set(rel, bytes);
      ctx.sink.put(rel, bytes, type, 'mutable');
    },
  };
}

/** A participant's facet tuple as the grams index keys it. */
const tupleKey = (t: ReadonlyArray<string | null>): string => JSON.stringify(t);

/** The facet cube's cell of each tuple (cubeOf's canonical order over every participant's tuple, with its count). */
function cubeCellsOf(tuples: ReadonlyArray<{ tuple: FacetTuple; count: number }>): Map<string, number> {
  const cube = cubeOf(tuples, { scheme: () => null, ap: () => null });
  const cellIndex = new Map<string, number>();
  const n = cube.cells.length / (FACET_DIMENSIONS.length + 1);
  for (let c = 0; c < n; c++) {
    const tuple = FACET_DIMENSIONS.map((dim, d) => {
      const code = cube.cells[c * (FACET_DIMENSIONS.length + 1) + d]!;
      return code < 0 ? null : cube.values[dim][code]!;
    });
    cellIndex.set(tupleKey(tuple), c);
  }
  return cellIndex;
}

const itemTuple = (item: ParticipantListItem): FacetTuple => [item.country, item.scheme, item.registered ? 'true' : 'false', item.provenance, item.smp, item.ap_seat_id];

function writeGrams(ctx: RenderContext, threshold: number): void {
  const { db } = ctx;
  const seatNames = curatedSeatNames(db);
  // Each name's stored list item, as UTF-8 JSON in one growing buffer (not a string each: 2.3 million
  // strings kept at once made the old generation's collections most of the time at `peppol`).
  const items = new ItemArena();
  const cpsOut = new Ints(1 << 20);
  const starts = new Ints(1 << 16);
  const ids = new Ints(1 << 16);
  const folded: string[] = [];
  const tupleIds = new Map<string, number>();
  const tuples: Array<{ tuple: FacetTuple; count: number }> = [];
  const tupleOf = new Ints(1 << 16);
  const rows = db.prepare(`SELECT participant_id, ${LIST_COLUMNS} FROM participant_list WHERE name IS NOT NULL ORDER BY ${orderSql(listOrder(DEFAULT_SORT))}`).iterate() as IterableIterator<ListRow & { participant_id: number }>;
  for (const r of rows) {
    const item = listItemOf(r, seatNames);
    items.add(JSON.stringify(storeParticipant(item)));
    starts.push(cpsOut.n);
    ids.push(r.participant_id);
    const name = foldName(r.name!);
    folded.push(name);
    for (let i = 0; i < name.length; i++) {
      const cp = name.codePointAt(i)!;
      cpsOut.push(cp);
      if (cp > 0xffff) i++;
    }
    const tuple = itemTuple(item);
    const key = tupleKey(tuple);
    let t = tupleIds.get(key);
    if (t === undefined) {
      tupleIds.set(key, (t = tuples.length));
      tuples.push({ tuple, count: 0 });
    }
    tuples[t]!.count++;
    tupleOf.push(t);
    if (items.size % 500_000 === 0) ctx.progress(`render: ${GRAMS_PART}: ${items.size} names read`);
  }
  starts.push(cpsOut.n);
  // The facet cube's cell order over every participant's tuple: the unnamed participants' tuples too,
  // grouped apart (counted with the named ones': a tuple is one cell).
  const every = tuples.map((t) => ({ ...t }));
  for (const r of facetTupleRows(db, ['name IS NULL'])) {
    const t = tupleIds.get(tupleKey(r.tuple));
    if (t === undefined) every.push(r);
    else every[t]!.count += r.count;
  }
  const cellIndex = cubeCellsOf(every);
  const cellOfTuple = tuples.map((t) => cellIndex.get(tupleKey(t.tuple))!);
  const cellOf = new Int32Array(items.size);
  for (let k = 0; k < items.size; k++) cellOf[k] = cellOfTuple[tupleOf.get(k)]!;
  const mined = mineGrams({ cps: cpsOut.a.subarray(0, cpsOut.n), starts: starts.a.slice(0, starts.n), cellOf }, threshold);
  ctx.progress(`render: ${GRAMS_PART}: ${mined.frequent.length} frequent grams, ${mined.lists.length} gram lists`);
  const sink = gramsSink(ctx);
  gramFiles(mined, items, sink.put);
  // An incremental build that wrote the index whole: the lists it did not write again are gone.
  if (ctx.lists?.patchable === true) for (const root of ctx.lists.roots(GRAM_LISTS_PREFIX)) if (!sink.lists.has(root)) ctx.lists.drop(root);
  if (ctx.gramsStatePath !== null) {
    // The state: the names by participant (cells numbered by tuple), and the model of them.
    const names = NameTable.fromArrays(ids.a.subarray(0, ids.n), tupleOf.a.subarray(0, tupleOf.n), folded);
    folded.length = 0;
    // The model from what the miner counted, its cells numbered by tuple.
    const tupleOfCell = new Map(cellOfTuple.map((c, t) => [c, t]));
    const model = modelOfMined(mined, threshold, ids.a, (c) => tupleOfCell.get(c)!);
    const digest = gramFilesDigest((rel) => sink.shards.get(rel) ?? null)!;
    saveGramsState(ctx.gramsStatePath, { threshold, digest, tuples: tuples.map((t) => t.tuple), names, model });
  }
}

/** A stored item's text up to its value and the comma after it: `["<scheme>","<value>",`. */
function idPrefixOf(text: string): string {
  let strings = 0;
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: to its closing quote.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      if (++strings === 2) return text.slice(0, i + 2);
    }
  }
  return text;
}

/** The items of a gram list's text (gramListBytes' layout), each as written; null when it is not laid out so. */
function gramListItems(text: string): string[] | null {
  if (!text.startsWith(GRAM_LIST_HEAD)) return null;
  const items = arrayElements(text, GRAM_LIST_HEAD.length);
  return items !== null && items.end === text.length - 2 && text.endsWith(']}') ? items.parts : null;
}

/**
 * Updates the grams index from the previous build's state and the changed participants
 * (`temp.render_list_participants`): the model (src/render/grams-model.ts updateModel), then every
 * dictionary and cell shard (unchanged ones are not written again) and the gram lists whose
 * participants changed; saves the state. False (nothing written) when there is no usable state: no
 * state file, another threshold, or shards that are not the ones it was saved with.
 */
function updateGrams(ctx: RenderContext, threshold: number): boolean {
  const file = ctx.gramsStatePath;
  if (file === null || ctx.lists?.patchable !== true) return false;
  const st = loadGramsState(file);
  if (st === null || st.threshold !== threshold) return false;
  const outDir = ctx.sink.outDir;
  const readOut = (rel: string): Uint8Array | null => {
    try {
      return readStored(path.join(outDir, rel));
    } catch {
      return null;
    }
  };
  if (gramFilesDigest(readOut) !== st.digest) return false;
  const { db } = ctx;
  const seatNames = curatedSeatNames(db);
  const rows = changedListRows(db);
  const tupleIds = new Map(st.tuples.map((t, i) => [tupleKey(t), i]));
  const order = listOrder(DEFAULT_SORT);
  const dirs = orderDirs(order);
  /** The changed participants' items now (named ones), their keys, and how their stored items begin. */
  const now = new Map<number, { text: string; key: SortKey }>();
  const prefixes = new Set<string>();
  const changes: GramNameChange[] = [];
  for (const r of rows) {
    const sep = r.id_pid.indexOf('::');
    prefixes.add(`[${JSON.stringify(r.id_pid.slice(0, sep))},${JSON.stringify(r.id_pid.slice(sep + 2))},`);
    let after: GramName | null = null;
    if (r.present !== null && r.name !== null) {
      // Present: the row's fields are its list row's (ChangedListRow).
      const item = listItemOf(r as ListRow, seatNames);
      const key = tupleKey(itemTuple(item));
      let t = tupleIds.get(key);
      if (t === undefined) {
        tupleIds.set(key, (t = st.tuples.length));
        st.tuples.push(itemTuple(item));
      }
      after = { name: foldName(r.name), cell: t };
      now.set(r.id, { text: JSON.stringify(storeParticipant(item)), key: listKey(order, item) });
    }
    changes.push({ id: r.id, before: st.names.get(r.id) ?? null, after });
  }
  const wasMinimal = new Set(st.model.holders.keys());
  const update = updateModel(st.model, st.names, changes);
  ctx.progress(`render: ${GRAMS_PART}: ${changes.length} names changed, ${update.changedLists.size} gram lists changed, ${update.droppedLists.size} dropped${update.scanned > 0 ? `, ${update.scanned} names scanned` : ''}`);

  // The shards: every frequent gram's cells numbered as this build's cube numbers them.
  const cellIndex = cubeCellsOf(facetTupleRows(db));
  const cubeCell = (t: number): number => {
    const c = cellIndex.get(tupleKey(st.tuples[t]!));
    if (c === undefined) throw new Error(`the grams state counts participants in a cell the facet cube does not have: ${tupleKey(st.tuples[t]!)}`);
    return c;
  };
  const sink = gramsSink(ctx);
  gramFiles(minedOfModel(st.model, null, cubeCell), [], sink.put);

  // The gram lists (not trigrams: their trigram lists hold them).
  const store = ctx.lists!;
  const missing: number[] = [];
  const lists: Array<{ gram: string; items: Array<{ text: string; key?: SortKey }> | null }> = [];
  for (const gram of update.changedLists) {
    if (codePointsOf(gram).length === 3) continue;
    const root = gramListPath(gram);
    const holders = st.model.holders.get(gram)!;
    // A list minimal before keeps its items but the changed participants'; a new one is read whole.
    const prev = wasMinimal.has(gram) && store.has(root) ? readOut(root) : null;
    const kept = prev === null ? null : gramListItems(dec.decode(prev));
    if (kept === null) {
      for (const id of holders) if (!now.has(id)) missing.push(id);
      lists.push({ gram, items: null });
      continue;
    }
    const items: Array<{ text: string; key?: SortKey }> = kept.filter((t) => !prefixes.has(idPrefixOf(t))).map((text) => ({ text }));
    lists.push({ gram, items });
  }
  // The items of participants that did not change, for lists new to this build.
  const others = new Map<number, { text: string; key: SortKey }>();
  const byId = db.prepare(`SELECT participant_id, ${LIST_COLUMNS} FROM participant_list WHERE participant_id = ?`);
  for (const id of new Set(missing)) {
    const r = byId.get(id) as (ListRow & { participant_id: number }) | undefined;
    if (r === undefined) throw new Error(`the grams state lists participant ${id}, which the database does not have`);
    const item = listItemOf(r, seatNames);
    others.set(id, { text: JSON.stringify(storeParticipant(item)), key: listKey(order, item) });
  }
  const keyOf = (x: { text: string; key?: SortKey }): SortKey => (x.key ??= listKey(order, expandParticipant(JSON.parse(x.text) as StoredParticipant)));
  for (const { gram, items } of lists) {
    const holders = st.model.holders.get(gram)!;
    let out: Array<{ text: string; key?: SortKey }>;
    if (items === null) {
      out = [...holders].map((id) => now.get(id) ?? others.get(id)!);
      out.sort((a, b) => compareKeys(keyOf(a), keyOf(b), dirs));
    } else {
      out = items;
      // The changed participants holding the gram now, each at its place among the others (sorted).
      for (const id of holders) {
        const n = now.get(id);
        if (n === undefined) continue;
        let lo = 0;
        let hi = out.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (compareKeys(keyOf(out[mid]!), n.key, dirs) < 0) lo = mid + 1;
          else hi = mid;
        }
        out.splice(lo, 0, n);
      }
      if (out.length !== holders.size) throw new Error(`the gram list of ${JSON.stringify(gram)} holds ${out.length} participants, the grams state ${holders.size}`);
    }
    sink.put(gramListPath(gram), gramListBytes(out.map((x) => enc.encode(x.text))), 'application/json');
  }
  for (const gram of update.droppedLists) {
    const root = gramListPath(gram);
    if (codePointsOf(gram).length !== 3 && store.has(root)) store.drop(root);
  }
  const digest = gramFilesDigest((rel) => sink.shards.get(rel) ?? null)!;
  saveGramsState(file, { threshold, digest, tuples: st.tuples, names: st.names.compact(), model: st.model });
  return true;
}

/**
 * Checks the grams index of a snapshot (verify): every dictionary and cell shard there and well
 * formed, each gram in its shard; the same frequent grams in both, each counted by more than
 * GRAM_THRESHOLD participants in cells of the facet cube (`cubeCells` of them); every gram a
 * dictionary names listed (a trigram: a trigram list of at most GRAM_THRESHOLD, `trigramCounts`), and
 * every gram list named, holding at most GRAM_THRESHOLD participants whose names hold the gram, in the
 * default order. Returns how many references it checked.
 */
export function verifyGramFiles(
  listed: ReadonlySet<string>,
  bytesOf: (rel: string) => Uint8Array,
  cubeCells: number,
  trigramCounts: ReadonlyMap<string, number>,
  fail: (rel: string, message: string) => void,
  threshold = GRAM_THRESHOLD,
): number {
  let refs = 0;
  const frequent = new Set<string>();
  /** Gram lists the dictionaries name: path → gram. */
  const named = new Map<string, string>();
  const name = (from: string, gram: string): void => {
    refs++;
    if (Array.from(gram).length === 3) {
      const n = trigramCounts.get(gram);
      if (n === undefined) fail(from, `names the trigram ${JSON.stringify(gram)}, which has no trigram list`);
      else if (n > threshold) fail(from, `names the trigram ${JSON.stringify(gram)}, whose list holds ${n} participants`);
      return;
    }
    const rel = gramListPath(gram);
    named.set(rel, gram);
    if (!listed.has(rel)) fail(from, `names the gram ${JSON.stringify(gram)}, whose list ${rel} is missing`);
  };
  const parse = (rel: string): unknown => {
    try {
      return JSON.parse(new TextDecoder().decode(bytesOf(rel)));
    } catch {
      return undefined;
    }
  };
  for (let s = 0; s < GRAM_DICT_SHARDS; s++) {
    const rel = gramDictPath(s);
    if (!listed.has(rel)) {
      fail(rel, 'missing from the manifest (every dictionary shard of the grams index is written)');
      continue;
    }
    const dict = parse(rel);
    if (!isGramDictShape(dict)) {
      fail(rel, `is not a ${GRAM_DICT_FORMAT}`);
      continue;
    }
    for (const [gram, ext] of Object.entries(dict.frequent)) {
      if (gramDictShard(gram) !== s) fail(rel, `holds ${JSON.stringify(gram)}, of shard ${gramDictShard(gram)}`);
      frequent.add(gram);
      const cps = codePointsOf(gram);
      for (const [c, len] of Object.entries(ext)) {
        if (cps.length < 3 || codePointsOf(c).length !== 1 || !Number.isInteger(len) || len < 1 || len > cps.length + 1) {
          fail(rel, `extension ${JSON.stringify(c)} of ${JSON.stringify(gram)} is not a code point with a gram length`);
          continue;
        }
        name(rel, [...cps, c].slice(cps.length + 1 - len).join(''));
      }
    }
    for (const [gram, m] of Object.entries(dict.infrequent)) {
      const cps = codePointsOf(gram);
      if (gramDictShard(gram) !== s) fail(rel, `holds ${JSON.stringify(gram)}, of shard ${gramDictShard(gram)}`);
      if (cps.length > 2 || typeof m !== 'string' || !(m === gram || (codePointsOf(m).length === 1 && cps.includes(m)))) fail(rel, `infrequent ${JSON.stringify(gram)} names ${JSON.stringify(m)}`);
      else name(rel, m);
    }
  }
  const counted = new Set<string>();
  for (let s = 0; s < GRAM_CELL_SHARDS; s++) {
    const rel = gramCellsPath(s);
    if (!listed.has(rel)) {
      fail(rel, 'missing from the manifest (every cell shard of the grams index is written)');
      continue;
    }
    const all = allGramCells(bytesOf(rel));
    if (all === null) {
      fail(rel, `is not a ${GRAM_CELLS_FORMAT}`);
      continue;
    }
    for (const { gram, cells } of all) {
      refs++;
      counted.add(gram);
      if (gramCellShard(gram) !== s) fail(rel, `holds ${JSON.stringify(gram)}, of shard ${gramCellShard(gram)}`);
      if (!frequent.has(gram)) fail(rel, `counts ${JSON.stringify(gram)}, which no dictionary shard holds as frequent`);
      let sum = 0;
      for (let i = 0; i < cells.cells.length; i++) {
        if ((i > 0 && cells.cells[i]! <= cells.cells[i - 1]!) || cells.cells[i]! >= cubeCells || cells.counts[i]! === 0) {
          fail(rel, `the cells of ${JSON.stringify(gram)} are not ascending cells of the cube (${cubeCells}) with participants`);
          break;
        }
        sum += cells.counts[i]!;
      }
      if (sum !== cells.count || sum <= threshold) fail(rel, `${JSON.stringify(gram)} counts ${cells.count} participants, its cells ${sum} (more than ${threshold} for a frequent gram)`);
    }
  }
  for (const gram of frequent) if (!counted.has(gram)) fail(gramCellsPath(gramCellShard(gram)), `does not count the frequent gram ${JSON.stringify(gram)}`);
  const order = listOrder(DEFAULT_SORT);
  const dirs = orderDirs(order);
  for (const rel of listed) {
    if (!rel.startsWith(`${GRAMS_PREFIX}list/`)) {
      if (rel.startsWith(GRAMS_PREFIX) && !rel.startsWith(`${GRAMS_PREFIX}dict/`) && !rel.startsWith(`${GRAMS_PREFIX}cells/`)) fail(rel, 'is no file of the grams index');
      continue;
    }
    const gram = named.get(rel);
    if (gram === undefined) {
      fail(rel, 'is a gram list no dictionary shard names');
      continue;
    }
    const list = parse(rel);
    if (!isGramList(list)) {
      fail(rel, `is not a ${GRAM_LIST_FORMAT}`);
      continue;
    }
    refs++;
    if (list.items.length === 0 || list.items.length > threshold) fail(rel, `holds ${list.items.length} participants (1 to ${threshold})`);
    let prev: SortKey | null = null;
    for (const stored of list.items) {
      const item = expandParticipant(stored);
      if (item.name === null || !foldName(item.name).includes(gram)) {
        fail(rel, `holds ${item.id}, whose name does not hold ${JSON.stringify(gram)}`);
        break;
      }
      const key = listKey(order, item);
      if (prev !== null && compareKeys(prev, key, dirs) >= 0) {
        fail(rel, `is not in the default order at ${item.id}`);
        break;
      }
      prev = key;
    }
  }
  return refs;
}

/** A parsed dictionary shard, its members' shapes checked. */
function isGramDictShape(v: unknown): v is GramDict {
  if (!isGramDict(v)) return false;
  const obj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  return obj(v.frequent) && obj(v.infrequent) && Object.values(v.frequent).every(obj);
}
