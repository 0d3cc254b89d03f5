// Reads a list written by src/render/lists.ts: seeks a position through the index, then walks items
// forward across chunks. Edge-safe: no Node imports. Counts the files and bytes it reads (the cost
// budget of a composed page: docs/snapshot-format.md). A root's inline head (list@2) is the list's
// first chunk: every method below reads it before the entries.
import { compareKeys, type Direction, type SortKey } from '../api/sort-keys.js';
import type { Chunk, HeadChunk, IndexEntry, IndexNode, ListRoot } from './list-format.js';
import { LIST_FORMAT, LIST_FORMAT_DERIVED, LIST_FORMAT_HEAD } from './list-format.js';
import { keyDerivation, withKeys, type KeyOf } from './derived-keys.js';

export type ReadFile = (path: string) => Promise<Uint8Array | null>;

/** What an answer read (docs/snapshot-format.md, "Read cost"). */
export interface ReadStats {
  files: number;
  /** Bytes as stored (what the store transfers: gzip for the parts, docs/snapshot-format.md "Stored encoding"). */
  bytes: number;
  /** The same files' bytes after decoding (what the shim parses). */
  decoded: number;
  chunks: number;
}

export interface ScanOptions {
  /** Monotone over the list (false … false, true … true): true at and after the first wanted item. */
  start?: (key: SortKey) => boolean;
  /** True when no wanted item can lie below this entry (e.g. its facet counts rule the filter out). */
  skip?: (entry: IndexEntry) => boolean;
}

export class SnapshotFormatError extends Error {}

const dec = new TextDecoder();

/** The first index in [0, n) where pred is true (n when none), for a predicate monotone over indexes. */
export function firstTrue(n: number, pred: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Most recently read chunks and index nodes a reader keeps, so that a page reads each file once. */
const RECENT_FILES = 4;

/** The index entry standing for an inline head (path ''), or null when the root has no head items. */
function headEntryOf(head: HeadChunk | undefined): IndexEntry | null {
  if (head === undefined || head.keys.length === 0) return null;
  const e: IndexEntry = { first: head.keys[0]!, last: head.keys[head.keys.length - 1]!, count: head.keys.length, path: '' };
  if (head.counts !== undefined) e.counts = head.counts;
  return e;
}

export class ListReader {
  readonly stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  private readonly recent = new Map<string, unknown>();
  /** Paths counted in `stats` (each once). */
  private readonly counted = new Set<string>();
  /** The root's inline head as the list's first chunk, and its index entry (null: no head items). */
  readonly head: HeadChunk | null;
  readonly headEntry: IndexEntry | null;
  private constructor(
    private readonly read: ReadFile,
    readonly root: ListRoot,
    /** list@3: derives the keys its chunks do not store. */
    private readonly keyOf: KeyOf | null,
  ) {
    this.headEntry = headEntryOf(root.head);
    this.head = this.headEntry === null ? null : root.head!;
  }

  /** Opens the list whose root index is at `rootPath`; null when there is no such list. */
  static async open(read: ReadFile, rootPath: string): Promise<ListReader | null> {
    const body = await read(rootPath);
    if (body === null) return null;
    const root = JSON.parse(dec.decode(body)) as ListRoot;
    if (root.format !== LIST_FORMAT && root.format !== LIST_FORMAT_HEAD && root.format !== LIST_FORMAT_DERIVED) throw new SnapshotFormatError(`${rootPath}: not a list index`);
    if (root.format === LIST_FORMAT_HEAD && root.head === undefined) throw new SnapshotFormatError(`${rootPath}: a list@2 index without its head`);
    let keyOf: KeyOf | null = null;
    if (root.format === LIST_FORMAT_DERIVED) {
      keyOf = root.key === undefined ? null : keyDerivation(root.key);
      if (keyOf === null || root.head !== undefined) throw new SnapshotFormatError(`${rootPath}: a list@3 index with key ${root.key}`);
    }
    const r = new ListReader(read, root, keyOf);
    r.stats.files++;
    r.stats.bytes += body.length;
    return r;
  }

  /** A chunk or index node, from the few most recently read ones or from the snapshot. */
  private async load<T>(path: string, chunk: boolean): Promise<T> {
    const hit = this.recent.get(path);
    if (hit !== undefined) {
      this.recent.delete(path);
      this.recent.set(path, hit);
      return hit as T;
    }
    const body = await this.read(path);
    if (body === null) throw new SnapshotFormatError(`missing snapshot file ${path}`);
    // A file parsed again after the small cache below dropped it is counted once: the request's
    // Source holds its bytes, so it is not read again (what the stats measure is what a page reads).
    if (!this.counted.has(path)) {
      this.counted.add(path);
      this.stats.files++;
      this.stats.bytes += body.length;
      if (chunk) this.stats.chunks++;
    }
    const parsed = JSON.parse(dec.decode(body)) as T;
    // A list@3 chunk holds no keys: derived here, once per read (docs/snapshot-format.md "Lists").
    const value = chunk && this.keyOf !== null ? (withKeys(this.keyOf, parsed as { items: unknown[] }) as T) : parsed;
    this.recent.set(path, value);
    if (this.recent.size > RECENT_FILES) this.recent.delete(this.recent.keys().next().value!);
    return value;
  }

  /** Items from the first one where `start` holds, in list order, skipping entries `skip` rules out. */
  async *scan(opts: ScanOptions = {}): AsyncGenerator<{ key: SortKey; item: unknown }> {
    const start = opts.start ?? (() => true);
    const skip = opts.skip ?? (() => false);
    const self = this;
    async function* walk(entries: readonly IndexEntry[], level: number, seeking: boolean): AsyncGenerator<{ key: SortKey; item: unknown }> {
      const from = seeking ? firstTrue(entries.length, (i) => start(entries[i]!.last)) : 0;
      let first = seeking;
      for (let i = from; i < entries.length; i++) {
        const e = entries[i]!;
        if (skip(e)) {
          first = false;
          continue;
        }
        if (level === 0) {
          const chunk = await self.load<Chunk>(e.path, true);
          const j0 = first ? firstTrue(chunk.keys.length, (j) => start(chunk.keys[j]!)) : 0;
          for (let j = j0; j < chunk.keys.length; j++) yield { key: chunk.keys[j]!, item: chunk.items[j] };
        } else {
          const node = await self.load<IndexNode>(e.path, false);
          yield* walk(node.entries, level - 1, first);
        }
        first = false;
      }
    }
    // The head comes first: when the start lies in it, every entry lies after the start.
    const head = this.head;
    const he = this.headEntry;
    if (head !== null && he !== null && start(he.last)) {
      if (!skip(he)) for (let j = firstTrue(head.keys.length, (x) => start(head.keys[x]!)); j < head.keys.length; j++) yield { key: head.keys[j]!, item: head.items[j] };
      yield* walk(this.root.entries, this.root.level, false);
    } else yield* walk(this.root.entries, this.root.level, true);
  }

  /**
   * The items before the first one where `start` holds, walked backward (the nearest first): the
   * reverse of `scan`. `skip` as in `scan`.
   */
  async *scanBackward(opts: ScanOptions = {}): AsyncGenerator<{ key: SortKey; item: unknown }> {
    const start = opts.start ?? (() => false);
    const skip = opts.skip ?? (() => false);
    const self = this;
    async function* walk(entries: readonly IndexEntry[], level: number): AsyncGenerator<{ key: SortKey; item: unknown }> {
      // Entries whose first item lies before the start position, the nearest first.
      for (let i = firstTrue(entries.length, (x) => start(entries[x]!.first)) - 1; i >= 0; i--) {
        const e = entries[i]!;
        if (skip(e)) continue;
        if (level === 0) {
          const chunk = await self.load<Chunk>(e.path, true);
          for (let j = firstTrue(chunk.keys.length, (x) => start(chunk.keys[x]!)) - 1; j >= 0; j--) yield { key: chunk.keys[j]!, item: chunk.items[j] };
        } else {
          const node = await self.load<IndexNode>(e.path, false);
          yield* walk(node.entries, level - 1);
        }
      }
    }
    yield* walk(this.root.entries, this.root.level);
    const head = this.head;
    const he = this.headEntry;
    if (head !== null && he !== null && !skip(he)) {
      for (let j = firstTrue(head.keys.length, (x) => start(head.keys[x]!)) - 1; j >= 0; j--) yield { key: head.keys[j]!, item: head.items[j] };
    }
  }

  /**
   * Per value of the facet `field`, the items before the first one where `start` holds: summed from
   * the index entries' facet counts, with one chunk read (the one holding that position, unless it
   * starts a chunk). `valueOf` gives an item's value in that chunk.
   */
  async countBefore(start: (key: SortKey) => boolean, field: string, valueOf: (item: unknown) => string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const head = this.head;
    if (head !== null) {
      // Inline: counted item by item, no file read.
      for (let j = 0; j < head.keys.length; j++) {
        if (start(head.keys[j]!)) return out;
        const v = valueOf(head.items[j]);
        out.set(v, (out.get(v) ?? 0) + 1);
      }
    }
    let entries = this.root.entries;
    for (let level = this.root.level; ; level--) {
      const i = firstTrue(entries.length, (x) => start(entries[x]!.last));
      for (let x = 0; x < i; x++) {
        const counts = entries[x]!.counts?.[field];
        if (counts === undefined) throw new SnapshotFormatError(`${entries[x]!.path}: the index holds no per-entry counts of ${field}`);
        for (const [v, n] of Object.entries(counts)) out.set(v, (out.get(v) ?? 0) + n);
      }
      const e = entries[i];
      if (e === undefined || start(e.first)) return out;
      if (level === 0) {
        const chunk = await this.load<Chunk>(e.path, true);
        for (let j = 0; j < chunk.keys.length && !start(chunk.keys[j]!); j++) {
          const v = valueOf(chunk.items[j]);
          out.set(v, (out.get(v) ?? 0) + 1);
        }
        return out;
      }
      entries = (await this.load<IndexNode>(e.path, false)).entries;
    }
  }

  /** The key of the item right after `key` in list order (`key` need not be in the list); null at the end. */
  async keyAfter(key: SortKey): Promise<SortKey | null> {
    const after = (k: SortKey): boolean => compareKeys(k, key, this.root.dirs) > 0;
    const head = this.head;
    if (head !== null && after(head.keys[head.keys.length - 1]!)) return head.keys[firstTrue(head.keys.length, (x) => after(head.keys[x]!))]!;
    let entries = this.root.entries;
    for (let level = this.root.level; ; level--) {
      const i = firstTrue(entries.length, (x) => after(entries[x]!.last));
      const e = entries[i];
      if (e === undefined) return null;
      // The whole entry lies after `key`: its first key answers without reading below it.
      if (after(e.first)) return e.first;
      if (level === 0) {
        const chunk = await this.load<Chunk>(e.path, true);
        return chunk.keys[firstTrue(chunk.keys.length, (x) => after(chunk.keys[x]!))] ?? null;
      }
      entries = (await this.load<IndexNode>(e.path, false)).entries;
    }
  }
}

export interface PageRequest {
  start?: (key: SortKey) => boolean;
  /** True for the first item past the wanted range (monotone): the walk stops there. */
  stop?: (key: SortKey) => boolean;
  /** Item filter. */
  match?: (item: unknown, key: SortKey) => boolean;
  skip?: (entry: IndexEntry) => boolean;
  limit: number;
}

export interface ComposedPage {
  items: unknown[];
  keys: SortKey[];
  /** True when another matching item follows the page. */
  more: boolean;
}

/** The first `limit` matching items from the start position, and whether more follow. */
export async function composePage(list: ListReader, req: PageRequest): Promise<ComposedPage> {
  const items: unknown[] = [];
  const keys: SortKey[] = [];
  const match = req.match ?? (() => true);
  for await (const { key, item } of list.scan({ start: req.start, skip: req.skip })) {
    if (req.stop && req.stop(key)) break;
    if (!match(item, key)) continue;
    if (items.length === req.limit) return { items, keys, more: true };
    items.push(item);
    keys.push(key);
  }
  return { items, keys, more: false };
}

export interface ReverseOptions {
  /** Per key field, whether it may be null (the list's order: null after every value). */
  nullable: readonly boolean[];
  /** Only the items whose key begins with these values (a range of the list). */
  prefix?: SortKey;
  /** The position to continue after, in the reversed order: a key (with the prefix) of that order. */
  after?: SortKey;
  /** As in ListReader.scan. */
  skip?: (entry: IndexEntry) => boolean;
}

/**
 * The items of a list in its reversed order: every key field in the other direction, nulls still
 * after every value (sort-keys.ts), so `name.desc` reads the `name.asc` list and `country.desc` the
 * `country.asc` one (docs/snapshot-format.md "Participants"). Without nullable fields this is the
 * list read backward. With them, the list read backward would give each group's null block (the
 * items of one prefix whose next nullable field is null) before that group's values instead of
 * after them: those blocks are read in their place by seeking, only where one exists, so a walk
 * through groups without nulls reads what a backward scan reads. A group's null block is found as
 * the backward walk enters the group (nulls last in the list: a group's last items), and a walk
 * that resumes inside a group reads that group's rest and then its null block.
 */
export async function* scanReverse(list: ListReader, opts: ReverseOptions): AsyncGenerator<{ key: SortKey; item: unknown }> {
  const dirs = list.root.dirs;
  const userSkip = opts.skip ?? (() => false);
  // Fields [0, m) may be null; every field from m on is never null, and a group of fixed values of the
  // first m fields reads backward as it is.
  let m = 0;
  for (let i = 0; i < dirs.length; i++) if (opts.nullable[i] === true) m = i + 1;
  const prefixDirs = (n: number) => dirs.slice(0, n);
  /** Where key k lies against the group `g` (-1 before it in list order, 0 in it, 1 after it). */
  const against = (k: SortKey, g: SortKey, gDirs: readonly Direction[]): number => Math.sign(compareKeys(k, g, gDirs));
  /**
   * Where key k lies against the part of group `g` selected by `part` on its next field (`value`:
   * non-null, `null`: null, `all`: the whole group).
   */
  const partAgainst = (k: SortKey, g: SortKey, gDirs: readonly Direction[], part: 'value' | 'null' | 'all'): number => {
    const c = against(k, g, gDirs);
    if (c !== 0 || part === 'all') return c;
    const isNull = (k[g.length] ?? null) === null;
    return part === 'value' ? (isNull ? 1 : 0) : isNull ? 0 : -1;
  };
  /** The first field after `from` that is null among the nullable ones (m when none). */
  const firstNull = (k: SortKey, from: number): number => {
    for (let j = from; j < m; j++) if ((k[j] ?? null) === null) return j;
    return m;
  };

  /**
   * One part of group `g` read backward from the first key where `start` holds (default: from the
   * part's end) to the part's start. With `lazy`, a group below it whose null block the walk enters
   * (a key with a null in a deeper nullable field: nulls last, so a group's last keys) is read in the
   * reversed order by `group`, and the walk resumes before that group.
   */
  async function* part(g: SortKey, which: 'value' | 'null' | 'all', from: ((k: SortKey) => boolean) | undefined, lazy: boolean): AsyncGenerator<{ key: SortKey; item: unknown }> {
    const gDirs = prefixDirs(g.length);
    const skip = (e: IndexEntry): boolean => partAgainst(e.last, g, gDirs, which) < 0 || userSkip(e);
    let start = from ?? ((k: SortKey) => partAgainst(k, g, gDirs, which) > 0);
    for (;;) {
      let deferred: SortKey | null = null;
      for await (const r of list.scanBackward({ start, skip })) {
        if (partAgainst(r.key, g, gDirs, which) < 0) return;
        const j = lazy ? firstNull(r.key, g.length + 1) : m;
        if (j < m) {
          deferred = r.key.slice(0, j);
          break;
        }
        yield r;
      }
      if (deferred === null) return;
      yield* group(deferred, undefined);
      start = before(deferred);
    }
  }

  /** The start of a backward walk that resumes before group `d` (true at and after its first key). */
  const before = (d: SortKey): ((k: SortKey) => boolean) => {
    const dDirs = prefixDirs(d.length);
    return (k) => against(k, d, dDirs) >= 0;
  };

  /** The items of group `g` (a prefix of fixed values) in the reversed order, after key `from` if given. */
  async function* group(g: SortKey, from: SortKey | undefined): AsyncGenerator<{ key: SortKey; item: unknown }> {
    const i = g.length;
    const at = from === undefined ? undefined : (k: SortKey) => compareKeys(k, from, dirs) >= 0;
    if (i >= m) {
      yield* part(g, 'all', at, false);
      return;
    }
    const fromValue = from === undefined ? undefined : (from[i] ?? null);
    const deeper = i < m - 1;
    if (fromValue === undefined) yield* part(g, 'value', undefined, deeper);
    else if (fromValue !== null) {
      if (deeper) {
        // Resuming inside the subgroup of from's value: its rest (null blocks included), then the
        // values before it.
        const sub = [...g, fromValue];
        yield* group(sub, from);
        yield* part(g, 'value', before(sub), true);
      } else yield* part(g, 'value', at, false);
    }
    yield* group([...g, null], fromValue === null ? from : undefined);
  }

  yield* group(opts.prefix ?? [], opts.after);
}
