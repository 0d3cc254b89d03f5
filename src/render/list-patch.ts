// Updates a list of the previous build in place (docs/incremental.md, "Lists patched in place"): the
// items at some keys are removed or replaced, new ones inserted, and only the chunks around them are
// written again, with the index nodes above them and the root. The result is byte-identical to writing
// the whole new list with ListWriter (src/render/lists.ts), because chunk boundaries are
// content-defined:
//
// - A chunk starts with a fresh cutter. So when the cutter is empty at the start of an old chunk whose
//   items did not change, and the item after that chunk did not change either, the new list holds that
//   chunk as it was: it is copied without being read.
// - Otherwise the old chunk is read and its items, merged with the changes, go through the cutter; the
//   chunking falls back in step with the old boundaries at the first old chunk that starts where a new
//   one does.
// - A chunk's end depends on the item after it only when it was forced (the next item would exceed the
//   chunk's budget) or the list ended there. A chunk that ended by content (Cutter.endsByContent) never
//   needs reading because of a change after it; one that did not is read when the item after it changes.
//
// The index is rebuilt from the level-0 entries (content-defined nodes: unchanged groups give unchanged
// node files); the root's facet totals are the old totals with the removed and added items' values.
import type { SortKey } from '../api/sort-keys.js';
import { compareKeys } from '../api/sort-keys.js';
import { LIST_FORMAT, LIST_FORMAT_DERIVED, type FacetCounts, type IndexEntry, type IndexNode, type ListRoot } from '../edge/list-format.js';
import { keyOfRoot, withKeys, type KeyOf } from '../edge/derived-keys.js';
import { addCounts, buildIndex, cutOf, Cutter, pendingOf, rawOfParsed, rootOf, sortedCounts, writeChunk, type EarlierNode, type FileSink, type ListWriterOptions, type Pending, type RawChunk } from './lists.js';

/** One change of a list: the item at `key` becomes `json`, or goes (`json` undefined). */
export interface PatchOp {
  key: SortKey;
  keyJson: string;
  json?: string;
  facets?: Record<string, readonly string[]>;
}

export interface PatchInput {
  /** The list's root as the previous build wrote it. */
  root: ListRoot;
  /**
   * Reads a file of the previous build (chunks and index nodes, parsed). They are this renderer's own
   * files, so they are taken as the format they were written in (the casts to Chunk and IndexNode).
   */
  read: (rel: string) => unknown;
  /**
   * Reads a chunk of the previous build with its items as written (rawChunkOf; `keyOf` derives the keys
   * of a list@3 chunk); by default from `read`.
   */
  readChunk?: (rel: string, keyOf: KeyOf | null) => RawChunk;
  /** The changes, in list order, at most one per key. */
  ops: readonly PatchOp[];
  opts: Omit<ListWriterOptions, 'head'>;
  sink: FileSink;
  /** Facet values of a stored item (lists with facet fields): for the totals and new chunks' counts. */
  facetsOf?: (item: unknown) => Record<string, readonly string[]>;
  /** Paths the list already holds: index nodes among them are not put again. */
  holds: (path: string) => boolean;
}

export interface PatchResult {
  root: ListRoot;
  /** Every chunk and index node of the new list (not the root). */
  paths: string[];
  /** Chunks read. */
  reads: number;
  /** Inner index nodes taken over from the earlier list without being written again. */
  nodesKept: number;
}

/**
 * The level-0 entries (chunks) of a list, in list order (a list@2 root's head is not among them).
 * `nodes`, when given, receives each inner node read: its entry and its entries' paths, by the path of
 * its first entry (buildIndex's `earlier`).
 */
export function level0Of(root: ListRoot, read: (rel: string) => unknown, nodes?: Map<string, EarlierNode>): IndexEntry[] {
  const out: IndexEntry[] = [];
  const visit = (entries: readonly IndexEntry[], level: number): void => {
    if (level === 0) {
      out.push(...entries);
      return;
    }
    for (const e of entries) {
      const children = (read(e.path) as IndexNode).entries;
      if (nodes !== undefined && children.length > 0) nodes.set(children[0]!.path, { entry: e, children: children.map((c) => c.path) });
      visit(children, level - 1);
    }
  };
  visit(root.entries, root.level);
  return out;
}

/** Adds (sign 1) or takes away (sign -1) one item's facet values. */
function tally(into: FacetCounts, facets: Record<string, readonly string[]>, sign: 1 | -1): void {
  for (const [f, vs] of Object.entries(facets)) {
    const m = (into[f] ??= {});
    for (const v of new Set(vs)) m[v] = (m[v] ?? 0) + sign;
  }
}

export function patchList(input: PatchInput): PatchResult {
  const { root: oldRoot, ops, opts, sink } = input;
  const dirs = oldRoot.dirs;
  const cmp = (a: SortKey, b: SortKey): number => compareKeys(a, b, dirs);
  // A list is patched in the format it was written in: list@3 with the same key derivation, or list@1.
  const format = opts.derivedKey === undefined ? LIST_FORMAT : LIST_FORMAT_DERIVED;
  if (oldRoot.format !== format || oldRoot.key !== opts.derivedKey) throw new Error(`list-patch: a ${oldRoot.format} root (key ${oldRoot.key ?? 'stored'}) cannot be patched as ${format} (key ${opts.derivedKey ?? 'stored'})`);
  const keyOf = keyOfRoot(oldRoot);
  const earlierNodes = new Map<string, EarlierNode>();
  const old = level0Of(oldRoot, input.read, earlierNodes);
  const n = old.length;

  // The changes of each old chunk: ops[at[i], at[i + 1]) have keys after old[i - 1].last and at or
  // before old[i].last; ops[at[n]...] come after the last item.
  const at = new Array<number>(n + 1);
  let j = 0;
  for (let i = 0; i < n; i++) {
    at[i] = j;
    while (j < ops.length && cmp(ops[j]!.key, old[i]!.last) <= 0) j++;
  }
  at[n] = j;
  const changes = (i: number): boolean => at[i + 1]! > at[i]!;
  // Whether the item after old chunk i changes: a change at or before the next chunk's first key, or
  // an item added after the list's last.
  const nextChanges = (i: number): boolean => (i + 1 < n ? changes(i + 1) && cmp(ops[at[i + 1]!]!.key, old[i + 1]!.first) <= 0 : ops.length > at[n]!);
  const read = (i: number): RawChunk =>
    input.readChunk ? input.readChunk(old[i]!.path, keyOf) : rawOfParsed(withKeys(keyOf, input.read(old[i]!.path) as { keys?: SortKey[]; items: unknown[] }));

  const delta: FacetCounts = {};
  let count = oldRoot.count;
  const out: IndexEntry[] = [];
  const cutter = new Cutter(cutOf(opts), (items) => out.push(writeChunk(sink, items, opts).entry));
  const put = (op: PatchOp): void => {
    count++;
    if (op.facets) tally(delta, op.facets, 1);
    cutter.add(pendingOf(op.json!, op.key, op.facets));
  };
  // An item kept goes on as the JSON it was written as; only a list counting facets parses it.
  const oldItem = (c: RawChunk, k: number): Pending => {
    const json = c.items[k]!;
    return pendingOf(json, c.keys[k]!, opts.facetFields ? input.facetsOf?.(JSON.parse(json) as unknown) : undefined, c.keyJsons[k]);
  };
  let reads = 0;

  for (let i = 0; i < n; i++) {
    const e = old[i]!;
    const dirty = changes(i) || (nextChanges(i) && !Cutter.endsByContent(opts, JSON.stringify(e.last), e.count));
    if (!dirty && cutter.pending.length === 0) {
      out.push(e);
      continue;
    }
    const c = read(i);
    reads++;
    let k = 0;
    if (!dirty) {
      // In step again when the cutter ends its chunk right before this one's first item.
      const p0 = oldItem(c, 0);
      cutter.add(p0);
      if (cutter.pending.length === 1) {
        cutter.reset();
        out.push(e);
        continue;
      }
      k = 1;
    }
    let o = at[i]!;
    const end = at[i + 1]!;
    while (k < c.items.length || o < end) {
      const ord = k >= c.items.length ? 1 : o >= end ? -1 : cmp(c.keys[k]!, ops[o]!.key);
      if (ord < 0) {
        cutter.add(oldItem(c, k++));
        continue;
      }
      const op = ops[o++]!;
      if (ord === 0) {
        // The item at this key is replaced or removed.
        const was = oldItem(c, k++);
        count--;
        if (was.facets) tally(delta, was.facets, -1);
      }
      if (op.json !== undefined) put(op);
    }
  }
  for (let o = at[n]!; o < ops.length; o++) if (ops[o]!.json !== undefined) put(ops[o]!);
  cutter.flush();

  const paths = out.map((e) => e.path);
  let nodesKept = 0;
  const { level, entries } = buildIndex(
    out,
    { fields: opts.facetFields, entryCounts: opts.entryCounts, fanout: opts.indexFanout },
    (path, body) => {
      paths.push(path);
      if (!input.holds(path)) sink.put(path, body, 'application/json', 'immutable');
    },
    // The nodes above unchanged runs of chunks are the earlier ones: held already.
    {
      nodes: earlierNodes,
      kept: (path) => {
        paths.push(path);
        nodesKept++;
      },
    },
  );
  const root: ListRoot = rootOf(opts, count, level, entries);
  if (opts.facetFields) {
    const total: FacetCounts = {};
    if (count > 0) {
      // As a full write: every declared field appears once the list holds an item with facets.
      addCounts(total, oldRoot.counts ?? {});
      addCounts(total, delta);
      for (const f of Object.keys(total)) for (const v of Object.keys(total[f]!)) if (total[f]![v] === 0) delete total[f]![v];
    }
    root.counts = sortedCounts(total);
  }
  return { root, paths, reads, nodesKept };
}
