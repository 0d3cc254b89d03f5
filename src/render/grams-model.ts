// The grams index kept up to date across builds (docs/snapshot-format.md "Counting name searches: the
// grams index"): what the miner (src/render/grams.ts mineGrams) finds from every name, updated from
// the names that changed instead, so that a cycle which changes a few thousand participants does not
// mine three million names again.
//
// Let F be the frequent grams (held by more than the threshold of names). Everything the index holds
// is a function of the names through a few sets around F's border:
// - F itself, with each gram's names per cell;
// - the extensions: per g in F of three code points or more, each code point c such that some name
//   holds g·c and g·c is not in F, with the length of the shortest suffix of g·c not in F;
// - the infrequent grams of one or two code points held by some name (shortInfrequent);
// - the minimal infrequent grams (not in F, both grams a code point shorter in F; of one code point:
//   not in F), with their names (listed but for those of three code points, whose trigram lists hold
//   them).
// The model keeps the number of names holding every *tracked* gram: those of one or two code points,
// and those whose prefix a code point shorter is in F (of three code points: whose suffix is too).
// Every gram of F, every extension and every minimal infrequent gram is tracked, and whether a gram is
// tracked depends on F alone, so a change of names updates exactly the tracked grams its names hold.
// It keeps the names per cell of F's grams and the names holding each minimal infrequent gram.
//
// A change may move grams across the threshold. A gram that rises into F was minimal infrequent (its
// names are kept) or has a gram a code point shorter that rose too (whose names hold all of its): its
// names are found among those, level by level, and so are the grams it makes tracked (its extensions).
// A gram that falls out of F and becomes minimal infrequent needs its names, which nothing kept: they
// are found by scanning the names (the store holds every named participant's folded name and cell).

import fs from 'node:fs';
import type { IndexGrams, MinedGrams } from './grams.js';

/** A named participant as the grams index sees it: its folded name and its cell (any numbering). */
export interface GramName {
  name: string;
  cell: number;
}

/** A participant's name before and after a change (null: not named then). */
export interface GramNameChange {
  id: number;
  before: GramName | null;
  after: GramName | null;
}

/** A frequent gram's names per cell (a Map, or PackedCounts). */
export interface CellCounts extends Iterable<[number, number]> {
  get(cell: number): number | undefined;
  set(cell: number, n: number): void;
  delete(cell: number): void;
}

/** A minimal gram's names (a Set, or PackedIds). */
export interface IdSet extends Iterable<number> {
  readonly size: number;
  has(id: number): boolean;
  add(id: number): void;
  delete(id: number): void;
}

export interface GramModel {
  threshold: number;
  /** The names holding each tracked gram (absent: none). */
  df: Map<string, number>;
  /** Each frequent gram's names per cell. */
  cells: Map<string, CellCounts>;
  /** Each minimal infrequent gram's names (participant ids). */
  holders: Map<string, IdSet>;
}

/** The index of `v` in ascending `a`, or -1. */
function search(a: Int32Array, v: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const x = a[mid]!;
    if (x === v) return mid;
    if (x < v) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Cell counts as two typed arrays (cells ascending), a Map once changed: at `peppol` the frequent
 * grams' cells are 16.4 million pairs, of which a cycle changes a few.
 */
export class PackedCounts implements CellCounts {
  private map: Map<number, number> | null = null;
  constructor(
    private readonly cells: Int32Array,
    private readonly counts: Int32Array,
  ) {}
  private changed(): Map<number, number> {
    return (this.map ??= new Map(Array.from(this.cells, (c, i) => [c, this.counts[i]!])));
  }
  get(cell: number): number | undefined {
    if (this.map !== null) return this.map.get(cell);
    const i = search(this.cells, cell);
    return i < 0 ? undefined : this.counts[i];
  }
  set(cell: number, n: number): void {
    this.changed().set(cell, n);
  }
  delete(cell: number): void {
    this.changed().delete(cell);
  }
  *[Symbol.iterator](): Iterator<[number, number]> {
    if (this.map !== null) yield* this.map;
    else for (let i = 0; i < this.cells.length; i++) yield [this.cells[i]!, this.counts[i]!];
  }
}

/** Ids as a typed array (ascending), a Set once changed: the minimal grams' 5.9 million ids at `peppol`. */
export class PackedIds implements IdSet {
  private set: Set<number> | null = null;
  constructor(private readonly ids: Int32Array) {}
  private changed(): Set<number> {
    return (this.set ??= new Set(this.ids));
  }
  get size(): number {
    return this.set?.size ?? this.ids.length;
  }
  has(id: number): boolean {
    return this.set !== null ? this.set.has(id) : search(this.ids, id) >= 0;
  }
  add(id: number): void {
    this.changed().add(id);
  }
  delete(id: number): void {
    this.changed().delete(id);
  }
  [Symbol.iterator](): Iterator<number> {
    return this.set !== null ? this.set.values() : this.ids.values();
  }
}

/** The named participants by id (a Map, or a NameTable). */
export interface GramNameStore {
  get(id: number): GramName | undefined;
  set(id: number, name: GramName): void;
  delete(id: number): void;
  [Symbol.iterator](): Iterator<[number, GramName]>;
}

const cpLength = (s: string): number => {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    n++;
    if (s.charCodeAt(i) >= 0xd800 && s.charCodeAt(i) < 0xdc00) i++;
  }
  return n;
};

/** The gram less its last code point. */
const prefixOf = (s: string): string => (s.length >= 2 && s.charCodeAt(s.length - 1) >= 0xdc00 && s.charCodeAt(s.length - 1) < 0xe000 && s.charCodeAt(s.length - 2) >= 0xd800 && s.charCodeAt(s.length - 2) < 0xdc00 ? s.slice(0, -2) : s.slice(0, -1));
/** The gram less its first code point. */
const suffixOf = (s: string): string => (s.charCodeAt(0) >= 0xd800 && s.charCodeAt(0) < 0xdc00 && s.length >= 2 ? s.slice(2) : s.slice(1));

/** Whether gram `s` is tracked when `frequent` says which grams are in F. */
export function isTracked(s: string, frequent: (g: string) => boolean): boolean {
  const n = cpLength(s);
  if (n <= 2) return true;
  if (!frequent(prefixOf(s))) return false;
  return n !== 3 || frequent(suffixOf(s));
}

/** Whether `s` is minimal infrequent (held or not) when `frequent` says which grams are in F. */
export function isMinimal(s: string, frequent: (g: string) => boolean): boolean {
  if (frequent(s)) return false;
  return cpLength(s) === 1 || (frequent(prefixOf(s)) && frequent(suffixOf(s)));
}

/** The distinct tracked grams of a name. */
export function trackedGramsOf(name: string, frequent: (g: string) => boolean): Set<string> {
  const cps = Array.from(name);
  const out = new Set<string>();
  for (let i = 0; i < cps.length; i++) {
    let s = '';
    for (let j = i; j < cps.length; j++) {
      s += cps[j]!;
      const len = j - i + 1;
      // Longer grams are tracked only where this one is in F (one code point: its gram of two is).
      if (len >= 3 && !isTracked(s, frequent)) break;
      out.add(s);
      if (len >= 2 && !frequent(s)) break;
    }
  }
  return out;
}

const frequentIn = (m: GramModel) => (g: string): boolean => (m.df.get(g) ?? 0) > m.threshold;

/**
 * The model of `names` from scratch, `frequent` being their frequent grams, by a pass over every name:
 * the model's definition (a full build takes it from the miner instead: modelOfMined).
 */
export function modelOf(names: GramNameStore, threshold: number, frequent: Iterable<string>): GramModel {
  const freq = new Set(frequent);
  const isFreq = (g: string): boolean => freq.has(g);
  const m: GramModel = { threshold, df: new Map(), cells: new Map(), holders: new Map() };
  const holders = new Map<string, number[]>();
  for (const [id, { name, cell }] of names) {
    for (const s of trackedGramsOf(name, isFreq)) {
      m.df.set(s, (m.df.get(s) ?? 0) + 1);
      if (isFreq(s)) {
        let c = m.cells.get(s);
        if (c === undefined) m.cells.set(s, (c = new Map()));
        c.set(cell, (c.get(cell) ?? 0) + 1);
      } else if (isMinimal(s, isFreq)) {
        let h = holders.get(s);
        if (h === undefined) holders.set(s, (h = []));
        h.push(id);
      }
    }
  }
  for (const [s, ids] of holders) m.holders.set(s, new PackedIds(Int32Array.from(ids).sort()));
  return m;
}

/**
 * The model from what the miner counted (no pass over the names): `ids` gives each name's participant
 * (by the miner's name index), `cellId` each of the miner's cells as the names' cells number it.
 */
export function modelOfMined(mined: MinedGrams, threshold: number, ids: ArrayLike<number>, cellId: (cell: number) => number): GramModel {
  const m: GramModel = { threshold, df: new Map(mined.tracked), cells: new Map(), holders: new Map() };
  mined.frequent.forEach((g, i) => {
    m.df.set(g, mined.df[i]!);
    const pairs: Array<[number, number]> = [];
    for (let j = mined.cellStart[i]!; j < mined.cellStart[i + 1]!; j++) pairs.push([cellId(mined.cell[j]!), mined.cellCount[j]!]);
    pairs.sort((a, b) => a[0] - b[0]);
    m.cells.set(g, new PackedCounts(Int32Array.from(pairs, (p) => p[0]), Int32Array.from(pairs, (p) => p[1])));
  });
  for (const { gram, names } of [...mined.lists, ...mined.minimalTrigrams]) m.holders.set(gram, new PackedIds(Int32Array.from(names, (k) => ids[k]!).sort()));
  return m;
}

/** Each occurrence of `g` in `name`: the code point before it and the one after it (undefined at an end). */
function* aroundOf(name: string, g: string): Generator<{ before: string | undefined; after: string | undefined }> {
  const cps = Array.from(name);
  const gcps = Array.from(g);
  for (let i = 0; i + gcps.length <= cps.length; i++) {
    let ok = true;
    for (let j = 0; j < gcps.length && ok; j++) if (cps[i + j] !== gcps[j]) ok = false;
    if (ok) yield { before: i > 0 ? cps[i - 1] : undefined, after: i + gcps.length < cps.length ? cps[i + gcps.length] : undefined };
  }
}

export interface GramUpdate {
  /** The minimal infrequent grams whose names, or a name's participant, changed (new ones too). */
  changedLists: Set<string>;
  /** Grams minimal infrequent before and no longer. */
  droppedLists: Set<string>;
  /** How many names the scan for falling grams went through (0: no scan). */
  scanned: number;
}

/**
 * Updates the model and the store with `changes` (each participant once). The names of grams that fell
 * out of F and are minimal now are found by a scan of the store.
 */
export function updateModel(m: GramModel, store: GramNameStore, changes: readonly GramNameChange[]): GramUpdate {
  const oldFreq = new Set<string>();
  for (const g of m.cells.keys()) oldFreq.add(g);
  const wasFrequent = (g: string): boolean => oldFreq.has(g);
  const oldMinimal = new Set(m.holders.keys());
  const changedLists = new Set<string>();
  /** Grams whose count changed (the only ones that can cross the threshold). */
  const dirty = new Set<string>();
  const bump = (s: string, by: number): void => {
    const n = (m.df.get(s) ?? 0) + by;
    if (n < 0) throw new Error(`the grams model counts ${JSON.stringify(s)} below zero`);
    if (n === 0) m.df.delete(s);
    else m.df.set(s, n);
    dirty.add(s);
  };
  // Removals first, then additions: a participant whose name did not change nets out.
  for (const ch of changes) {
    if (ch.before === null) continue;
    const { name, cell } = ch.before;
    for (const s of trackedGramsOf(name, wasFrequent)) {
      bump(s, -1);
      if (wasFrequent(s)) {
        const c = m.cells.get(s)!;
        const n = (c.get(cell) ?? 0) - 1;
        if (n < 0) throw new Error(`the grams model counts ${JSON.stringify(s)} below zero in cell ${cell}`);
        if (n === 0) c.delete(cell);
        else c.set(cell, n);
      } else if (isMinimal(s, wasFrequent)) {
        m.holders.get(s)?.delete(ch.id);
        changedLists.add(s);
      }
    }
    store.delete(ch.id);
  }
  for (const ch of changes) {
    if (ch.after === null) continue;
    const { name, cell } = ch.after;
    for (const s of trackedGramsOf(name, wasFrequent)) {
      bump(s, 1);
      if (wasFrequent(s)) {
        const c = m.cells.get(s)!;
        c.set(cell, (c.get(cell) ?? 0) + 1);
      } else if (isMinimal(s, wasFrequent)) {
        let h = m.holders.get(s);
        if (h === undefined) m.holders.set(s, (h = new Set()));
        h.add(ch.id);
        changedLists.add(s);
      }
    }
    store.set(ch.id, ch.after);
  }

  // Crossings, by length: F after the change is every tracked gram counted over the threshold, and a
  // gram that rose makes its extensions tracked (their names among its own).
  const isFrequent = frequentIn(m);
  /** The names of grams that rose, and of the grams they made tracked (minimal ones among them). */
  const found = new Map<string, IdSet>();
  const namesOf = (s: string): IdSet | undefined => found.get(s) ?? m.holders.get(s);
  const byLength = new Map<number, Set<string>>();
  const queue = (s: string): void => {
    const n = cpLength(s);
    let q = byLength.get(n);
    if (q === undefined) byLength.set(n, (q = new Set()));
    q.add(s);
  };
  for (const s of dirty) queue(s);
  const fell: string[] = [];
  for (let len = 1; len <= Math.max(0, ...byLength.keys()); len++) {
    for (const s of byLength.get(len) ?? []) {
      const now = isFrequent(s);
      if (now === wasFrequent(s)) continue;
      if (!now) {
        m.cells.delete(s);
        fell.push(s);
        continue;
      }
      // Rose: its names are kept (it was minimal) or found among a shorter risen gram's.
      let names = namesOf(s);
      if (names === undefined) {
        for (const sub of [prefixOf(s), suffixOf(s)]) {
          const from = sub.length > 0 ? namesOf(sub) : undefined;
          if (from === undefined || wasFrequent(sub)) continue;
          names = new Set([...from].filter((id) => store.get(id)!.name.includes(s)));
          break;
        }
      }
      if (names === undefined) throw new Error(`the grams model lost the names of ${JSON.stringify(s)}, which rose into F`);
      found.set(s, names);
      const cells = new Map<number, number>();
      for (const id of names) {
        const { cell } = store.get(id)!;
        cells.set(cell, (cells.get(cell) ?? 0) + 1);
      }
      m.cells.set(s, cells);
      // Its extensions, now tracked (and their names, for those that rise or are minimal).
      const ext = new Map<string, Set<number>>();
      // Both sides: a gram whose suffix rose may be minimal now (its names among this one's).
      for (const id of names) {
        for (const { before, after } of aroundOf(store.get(id)!.name, s)) {
          for (const t of [after === undefined ? undefined : s + after, before === undefined ? undefined : before + s]) {
            if (t === undefined) continue;
            let e = ext.get(t);
            if (e === undefined) ext.set(t, (e = new Set()));
            e.add(id);
          }
        }
      }
      for (const [t, ids] of ext) {
        // A gram tracked before is counted; any other takes its count from its names (forgotten below
        // unless tracked now).
        if (!isTracked(t, wasFrequent)) {
          m.df.set(t, ids.size);
        } else if (m.df.get(t) !== ids.size) throw new Error(`the grams model counts ${JSON.stringify(t)} ${m.df.get(t)} times, its names ${ids.size}`);
        if (!found.has(t)) found.set(t, ids);
        queue(t);
      }
    }
  }

  // Tracking and the minimal grams after the change: a gram no longer tracked is forgotten; a minimal
  // gram keeps or takes its names (those of a gram that fell, from a scan).
  for (const s of [...m.df.keys()]) if (!isTracked(s, isFrequent)) m.df.delete(s);
  for (const s of [...m.holders.keys()]) if ((m.df.get(s) ?? 0) === 0 || !isMinimal(s, isFrequent)) m.holders.delete(s);
  const missing: string[] = [];
  const consider = (s: string): void => {
    if (m.holders.has(s) || (m.df.get(s) ?? 0) === 0 || !isMinimal(s, isFrequent)) return;
    const names = found.get(s);
    if (names !== undefined) m.holders.set(s, names);
    else missing.push(s);
    changedLists.add(s);
  };
  for (const s of found.keys()) consider(s);
  for (const s of fell) consider(s);
  // A gram whose longer neighbour fell may be minimal now too: only grams that fell or were found
  // can be, as a gram minimal now and not before has a gram a code point shorter that rose (found) or
  // is itself one that fell.
  let scanned = 0;
  if (missing.length > 0) {
    const want = new Map(missing.map((s) => [s, new Set<number>()]));
    for (const [id, { name }] of store) {
      scanned++;
      for (const [s, ids] of want) if (name.includes(s)) ids.add(id);
    }
    for (const [s, ids] of want) {
      if (ids.size !== m.df.get(s)) throw new Error(`the grams model counts ${JSON.stringify(s)} ${m.df.get(s)} times, the names ${ids.size}`);
      m.holders.set(s, ids);
    }
  }
  const droppedLists = new Set([...oldMinimal].filter((s) => !m.holders.has(s)));
  for (const s of changedLists) if (!m.holders.has(s)) changedLists.delete(s);
  return { changedLists, droppedLists, scanned };
}

/** A gram's code points as numbers. */
const codePoints = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0)!);

/**
 * What the miner gives for the model's names (src/render/grams.ts MinedGrams), each list's names as
 * their positions in `order` (the participants in the default order; null: no lists), each cell as
 * `cellOf` numbers it.
 */
export function minedOfModel(m: GramModel, order: readonly number[] | null, cellOf: (cell: number) => number = (c) => c): IndexGrams {
  const isFrequent = frequentIn(m);
  const frequent = [...m.cells.keys()];
  const ids = new Map(frequent.map((g, i) => [g, i]));
  const df = Int32Array.from(frequent, (g) => m.df.get(g)!);
  const cellStart = new Int32Array(frequent.length + 1);
  const cell: number[] = [];
  const cellCount: number[] = [];
  frequent.forEach((g, i) => {
    for (const [c, n] of [...m.cells.get(g)!].map(([c, n]) => [cellOf(c), n] as const).sort((a, b) => a[0] - b[0])) {
      cell.push(c);
      cellCount.push(n);
    }
    cellStart[i + 1] = cell.length;
  });
  const ext = new Map<number, Map<number, number>>();
  const shortInfrequent = new Map<string, string>();
  for (const [t, n] of m.df) {
    if (n === 0 || isFrequent(t)) continue;
    const cps = codePoints(t);
    if (cps.length === 1) shortInfrequent.set(t, t);
    else if (cps.length === 2) {
      const [a, b] = [String.fromCodePoint(cps[0]!), String.fromCodePoint(cps[1]!)];
      shortInfrequent.set(t, !isFrequent(a) ? a : !isFrequent(b) ? b : t);
    } else if (cps.length >= 4) {
      const g = ids.get(prefixOf(t));
      if (g === undefined) continue;
      // The shortest suffix of t not in F (t is not).
      let len = 1;
      while (isFrequent(String.fromCodePoint(...cps.slice(cps.length - len)))) len++;
      let e = ext.get(g);
      if (e === undefined) ext.set(g, (e = new Map()));
      e.set(cps[cps.length - 1]!, len);
    }
  }
  const lists: IndexGrams['lists'] = [];
  const position = new Map((order ?? []).map((id, i) => [id, i]));
  // Without an order, no lists (their items are written apart).
  for (const [gram, names] of order === null ? [] : m.holders) {
    if (cpLength(gram) === 3) continue;
    lists.push({ gram, names: Int32Array.from(names, (id) => position.get(id)!).sort() });
  }
  return { frequent, df, cellStart, cell: Int32Array.from(cell), cellCount: Int32Array.from(cellCount), ext, shortInfrequent, lists };
}

/**
 * The named participants of a build as compact arrays (ids ascending, their cells, their folded names
 * in one string), with the changes of an update kept beside them until the next `compact`: about 2.3
 * million names at `peppol` would be as many objects in a Map.
 */
export class NameTable implements GramNameStore {
  private changed = new Map<number, GramName | null>();
  constructor(
    private ids: Int32Array,
    private cells: Int32Array,
    /** Name k is text.slice(ends[k - 1] ?? 0, ends[k]). */
    private ends: Uint32Array,
    private text: string,
  ) {}

  /** From parallel arrays in any order of ids. */
  static fromArrays(ids: Int32Array, cells: Int32Array, names: readonly string[]): NameTable {
    const by = Uint32Array.from(ids.keys()).sort((a, b) => ids[a]! - ids[b]!);
    const ends = new Uint32Array(by.length);
    let at = 0;
    const parts: string[] = [];
    by.forEach((k, i) => {
      parts.push(names[k]!);
      ends[i] = at += names[k]!.length;
    });
    return new NameTable(Int32Array.from(by, (k) => ids[k]!), Int32Array.from(by, (k) => cells[k]!), ends, parts.join(''));
  }

  get size(): number {
    let n = this.ids.length;
    for (const [id, v] of this.changed) n += (this.baseIndex(id) >= 0 ? -1 : 0) + (v === null ? 0 : 1);
    return n;
  }

  private baseIndex(id: number): number {
    let lo = 0;
    let hi = this.ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.ids[mid]!;
      if (v === id) return mid;
      if (v < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private base(k: number): GramName {
    return { name: this.text.slice(k === 0 ? 0 : this.ends[k - 1]!, this.ends[k]!), cell: this.cells[k]! };
  }

  get(id: number): GramName | undefined {
    const c = this.changed.get(id);
    if (c !== undefined) return c ?? undefined;
    const k = this.baseIndex(id);
    return k < 0 ? undefined : this.base(k);
  }

  set(id: number, name: GramName): void {
    this.changed.set(id, name);
  }

  delete(id: number): void {
    this.changed.set(id, null);
  }

  *[Symbol.iterator](): Iterator<[number, GramName]> {
    for (let k = 0; k < this.ids.length; k++) {
      const id = this.ids[k]!;
      if (this.changed.has(id)) continue;
      yield [id, this.base(k)];
    }
    for (const [id, v] of this.changed) if (v !== null) yield [id, v];
  }

  /** The table with its changes merged in (a merge of the sorted arrays and the sorted changes). */
  compact(): NameTable {
    if (this.changed.size === 0) return this;
    const changes = [...this.changed].sort((a, b) => a[0] - b[0]);
    const n = this.size;
    const ids = new Int32Array(n);
    const cells = new Int32Array(n);
    const ends = new Uint32Array(n);
    const parts: string[] = [];
    let at = 0;
    let out = 0;
    const push = (id: number, name: string, cell: number): void => {
      ids[out] = id;
      cells[out] = cell;
      parts.push(name);
      ends[out++] = at += name.length;
    };
    let k = 0;
    for (const [id, v] of changes) {
      // The unchanged names before it, a run of the text at a time.
      let run = k;
      while (run < this.ids.length && this.ids[run]! < id) run++;
      if (run > k) {
        const from = k === 0 ? 0 : this.ends[k - 1]!;
        parts.push(this.text.slice(from, this.ends[run - 1]!));
        for (let j = k; j < run; j++) {
          ids[out] = this.ids[j]!;
          cells[out] = this.cells[j]!;
          ends[out++] = at += this.ends[j]! - (j === 0 ? 0 : this.ends[j - 1]!);
        }
        k = run;
      }
      if (k < this.ids.length && this.ids[k] === id) k++;
      if (v !== null) push(id, v.name, v.cell);
    }
    if (k < this.ids.length) {
      parts.push(this.text.slice(k === 0 ? 0 : this.ends[k - 1]!));
      for (let j = k; j < this.ids.length; j++) {
        ids[out] = this.ids[j]!;
        cells[out] = this.cells[j]!;
        ends[out++] = at += this.ends[j]! - (j === 0 ? 0 : this.ends[j - 1]!);
      }
    }
    return new NameTable(ids, cells, ends, parts.join(''));
  }

  /** Its arrays, for saving (compact first). */
  parts(): { ids: Int32Array; cells: Int32Array; ends: Uint32Array; text: string } {
    if (this.changed.size > 0) throw new Error('NameTable.parts: compact the table first');
    return { ids: this.ids, cells: this.cells, ends: this.ends, text: this.text };
  }
}

/** The grams index's state between builds (not published): the model, the names and the cells' tuples. */
export interface GramsState {
  threshold: number;
  /** The sha256 of the dictionary and cell shards written with it (gramFilesDigest): it is their model. */
  digest: string;
  /** Each cell id's facet values (the names' cells are ids into it). */
  tuples: Array<ReadonlyArray<string | null>>;
  names: NameTable;
  model: GramModel;
}

export const GRAMS_STATE_FORMAT = 'peppol-snapshot/grams-state@1';

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** Strings as one UTF-8 text and their UTF-16 end offsets. */
function packStrings(strings: readonly string[]): { text: Uint8Array; ends: Uint32Array } {
  const ends = new Uint32Array(strings.length);
  let at = 0;
  strings.forEach((s, i) => (ends[i] = at += s.length));
  return { text: utf8.encode(strings.join('')), ends };
}

function unpackStrings(text: Uint8Array, ends: Uint32Array): string[] {
  const all = fromUtf8.decode(text);
  return Array.from(ends, (e, i) => all.slice(i === 0 ? 0 : ends[i - 1]!, e));
}

/**
 * Writes the state to `file` (through a temporary file and a rename): a u32 header length, a JSON
 * header (format, threshold, digest, tuples, section sizes), then the sections as typed arrays, each
 * at a multiple of 4 bytes.
 */
export function saveGramsState(file: string, st: GramsState): void {
  const { ids, cells, ends, text } = st.names.parts();
  const grams = [...st.model.df.keys()];
  const index = new Map(grams.map((g, i) => [g, i]));
  const gramText = packStrings(grams);
  const counts = Int32Array.from(grams, (g) => st.model.df.get(g)!);
  const freq = [...st.model.cells.keys()];
  const cellStart = new Uint32Array(freq.length + 1);
  const cellIds: number[] = [];
  const cellCounts: number[] = [];
  freq.forEach((g, i) => {
    // Ascending (PackedCounts searches them).
    for (const [c, n] of [...st.model.cells.get(g)!].sort((a, b) => a[0] - b[0])) {
      cellIds.push(c);
      cellCounts.push(n);
    }
    cellStart[i + 1] = cellIds.length;
  });
  const minimal = [...st.model.holders.keys()];
  const holderStart = new Uint32Array(minimal.length + 1);
  const holderIds: number[] = [];
  minimal.forEach((g, i) => {
    for (const id of Int32Array.from(st.model.holders.get(g)!).sort()) holderIds.push(id);
    holderStart[i + 1] = holderIds.length;
  });
  const nameText = utf8.encode(text);
  const sections: Array<[string, ArrayBufferView]> = [
    ['ids', ids],
    ['cells', cells],
    ['ends', ends],
    ['nameText', nameText],
    ['gramEnds', gramText.ends],
    ['gramText', gramText.text],
    ['counts', counts],
    ['frequent', Int32Array.from(freq, (g) => index.get(g)!)],
    ['cellStart', cellStart],
    ['cellIds', Int32Array.from(cellIds)],
    ['cellCounts', Int32Array.from(cellCounts)],
    ['minimal', Int32Array.from(minimal, (g) => index.get(g)!)],
    ['holderStart', holderStart],
    ['holderIds', Int32Array.from(holderIds)],
  ];
  const header = utf8.encode(JSON.stringify({ format: GRAMS_STATE_FORMAT, threshold: st.threshold, digest: st.digest, tuples: st.tuples, sections: sections.map(([name, v]) => [name, v.byteLength]) }));
  const pad = (n: number): number => (4 - (n % 4)) % 4;
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, header.length, true);
    fs.writeSync(fd, len);
    fs.writeSync(fd, header);
    fs.writeSync(fd, new Uint8Array(pad(header.length)));
    for (const [, v] of sections) {
      fs.writeSync(fd, new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      fs.writeSync(fd, new Uint8Array(pad(v.byteLength)));
    }
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/** The state saved in `file`, or null when there is none or it is not one. */
export function loadGramsState(file: string): GramsState | null {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return null;
  }
  try {
    const hl = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.toString('utf8', 4, 4 + hl)) as { format: string; threshold: number; digest: string; tuples: Array<Array<string | null>>; sections: Array<[string, number]> };
    if (header.format !== GRAMS_STATE_FORMAT) return null;
    let at = 4 + hl + ((4 - (hl % 4)) % 4);
    const sec = new Map<string, Uint8Array>();
    for (const [name, n] of header.sections) {
      // A copy aligned for the typed arrays.
      sec.set(name, new Uint8Array(bytes.subarray(at, at + n)));
      at += n + ((4 - (n % 4)) % 4);
    }
    const i32 = (name: string): Int32Array => {
      const b = sec.get(name)!;
      return new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    };
    const u32 = (name: string): Uint32Array => {
      const b = sec.get(name)!;
      return new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    };
    const names = new NameTable(i32('ids'), i32('cells'), u32('ends'), fromUtf8.decode(sec.get('nameText')!));
    const grams = unpackStrings(sec.get('gramText')!, u32('gramEnds'));
    const counts = i32('counts');
    const model: GramModel = { threshold: header.threshold, df: new Map(), cells: new Map(), holders: new Map() };
    grams.forEach((g, i) => model.df.set(g, counts[i]!));
    const [freq, cellStart, cellIds, cellCounts] = [i32('frequent'), u32('cellStart'), i32('cellIds'), i32('cellCounts')];
    freq.forEach((g, i) => model.cells.set(grams[g]!, new PackedCounts(cellIds.subarray(cellStart[i]!, cellStart[i + 1]!), cellCounts.subarray(cellStart[i]!, cellStart[i + 1]!))));
    const [minimal, holderStart, holderIds] = [i32('minimal'), u32('holderStart'), i32('holderIds')];
    minimal.forEach((g, i) => model.holders.set(grams[g]!, new PackedIds(holderIds.subarray(holderStart[i]!, holderStart[i + 1]!))));
    return { threshold: header.threshold, digest: header.digest, tuples: header.tuples, names, model };
  } catch {
    return null;
  }
}
