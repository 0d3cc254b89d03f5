// Writes one list (items in page order, each with its sort key) as content-addressed chunks plus a
// B-tree-like index (docs/snapshot-format.md). Streaming: memory holds one chunk and the level-0 index
// entries (about 200 bytes per chunk, so ~3 MB for 3 million participants).
//
// Chunk boundaries are content-defined so that a change to a few items rewrites only the chunks
// around them (cheap uploads): a chunk ends after an item whose key hash is 0 modulo BOUNDARY_MODULUS
// once the chunk holds at least a quarter of the byte budget (or `minBytes`, or `minItems` items, where
// the list sets it), and always before it would exceed `maxItems` or `maxBytes`.
//
// Index nodes are grouped content-defined too (an entry ends a node when a hash of its last key says so,
// once the node holds a quarter of the list's fanout; always at the fanout, INDEX_FANOUT unless the
// list sets one: indexShape), so that a list patched in place
// (src/render/list-patch.ts) rewrites only the nodes above the chunks it changed.
//
// A list with a `head` (docs/snapshot-format.md, "Head") is held in memory and chunked from its end
// (the oldest item) by the same rules; its first items stay inline in the root.
import { createHash } from 'node:crypto';
import type { Direction, SortKey } from '../api/sort-keys.js';
import { INDEX_FANOUT, LIST_FORMAT, LIST_FORMAT_DERIVED, LIST_FORMAT_HEAD, type FacetCounts, type HeadChunk, type IndexEntry, type IndexNode, type ListRoot } from '../edge/list-format.js';
import { keyDerivation, type KeyOf } from '../edge/derived-keys.js';
import { fnv1a } from '../api/fnv1a.js';

export interface FileSink {
  /** Stores a file of the snapshot (the sink skips rewriting identical bytes and records the manifest). */
  put(path: string, body: Uint8Array, contentType: string, cacheClass: 'mutable' | 'immutable' | 'meta'): void;
}

export interface HeadOptions {
  /**
   * True for the items that may still change (the items of the list's longest prefix where it holds,
   * e.g. the open buckets of newest-first buckets): they always stay in the head, so keep them few.
   */
  open?: (key: SortKey) => boolean;
  /** Most bytes of the head besides its open items: it is cut from the rest at a boundary of half this fill. */
  maxBytes: number;
}

export interface ListWriterOptions {
  dirs: Direction[];
  maxItems: number;
  maxBytes: number;
  /** Facet fields counted per chunk (small value sets: status, type, country, ...). */
  facetFields?: readonly string[];
  /**
   * A content-defined boundary needs this many items in the chunk (instead of a quarter of maxBytes):
   * lists whose pages read a window of items bound the chunks a window spans this way.
   */
  minItems?: number;
  /** A content-defined boundary needs this many bytes in the chunk (instead of a quarter of maxBytes). */
  minBytes?: number;
  /**
   * With facetFields: false keeps the facet counts in the root only (list totals), not per entry: for
   * lists whose readers never skip entries, where per-entry counts would only make the index larger.
   */
  entryCounts?: boolean;
  /**
   * For lists that grow and change at their front (newest first): chunk from the end and keep the
   * first items in the root (format list@2), so that a change of the newest items rewrites the root
   * only. The list is held in memory until finish(): for lists of one host or one partition, not for
   * millions of items.
   */
  head?: HeadOptions;
  /**
   * The name of a key derivation (src/edge/derived-keys.ts): the chunks store the items only and the
   * root (format list@3) names the derivation, which gives every item's key from the item (the keys
   * added must be those). Not with a head.
   */
  derivedKey?: string;
  /**
   * Most entries in one index node (default INDEX_FANOUT); a node ends by its content once it holds a
   * quarter of them, at an entry whose hash is 0 modulo half of them (indexShape).
   * A list of millions of items takes a wider one, so that its root and one level of nodes above its
   * chunks hold it (a page reads three files, not four): the participant lists (docs/snapshot-format.md).
   */
  indexFanout?: number;
}

/** A list's root (without its counts and head): list@3 with a derived key, else list@1 (list@2 with a head). */
export function rootOf(opts: Pick<ListWriterOptions, 'dirs' | 'derivedKey'>, count: number, level: number, entries: IndexEntry[], head?: HeadChunk): ListRoot {
  if (opts.derivedKey !== undefined) {
    if (head !== undefined) throw new Error('a list with a derived key has no head');
    return { format: LIST_FORMAT_DERIVED, key: opts.derivedKey, dirs: opts.dirs, count, level, entries };
  }
  return { format: head ? LIST_FORMAT_HEAD : LIST_FORMAT, dirs: opts.dirs, count, level, entries };
}

const BOUNDARY_MODULUS = 16;
const enc = new TextEncoder();

function sha256hex(b: Uint8Array | string): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Content-addressed path of an immutable file. */
export function contentPath(body: Uint8Array): string {
  const h = sha256hex(body);
  return `c/${h.slice(0, 2)}/${h.slice(2, 40)}.json`;
}

export function addCounts(into: FacetCounts, from: FacetCounts): void {
  for (const [f, m] of Object.entries(from)) {
    const t = (into[f] ??= {});
    for (const [v, n] of Object.entries(m)) t[v] = (t[v] ?? 0) + n;
  }
}

/** Sorts a facet-count map's values so equal content gives equal bytes. */
export function sortedCounts(c: FacetCounts): FacetCounts {
  const out: FacetCounts = {};
  for (const f of Object.keys(c).sort()) {
    const m = c[f]!;
    out[f] = Object.fromEntries(Object.keys(m).sort().map((v) => [v, m[v]!]));
  }
  return out;
}

/** One item as written: its key, both as JSON, the bytes it adds to a chunk, its facet values. */
export interface Pending {
  key: SortKey;
  keyJson: string;
  json: string;
  size: number;
  boundary: boolean;
  facets: Record<string, readonly string[]> | undefined;
}

/** An item ready to be chunked, from its JSON and its key (`keyJson`: the key's JSON, when known). */
export function pendingOf(json: string, key: SortKey, facets?: Record<string, readonly string[]>, keyJson: string = JSON.stringify(key)): Pending {
  return { key, keyJson, json, size: json.length + keyJson.length + 2, boundary: fnv1a(keyJson) % BOUNDARY_MODULUS === 0, facets };
}

/**
 * A chunk of an earlier write with its items as the JSON texts they were written as (writeChunk joins
 * them), and its keys parsed and as JSON: a list patched in place takes the items it keeps as they
 * are, without parsing and serialising them again.
 */
export interface RawChunk {
  keys: SortKey[];
  keyJsons: string[];
  items: string[];
}

const CHUNK_HEAD = '{"keys":[';
const CHUNK_MIDDLE = '],"items":[';
/** A chunk of a list with a derived key (list@3): its items only. */
const CHUNK_ITEMS = '{"items":[';

/** The elements of the JSON array whose first element begins at `i` (after its '['), and the index of its ']'. */
export function arrayElements(t: string, i: number): { parts: string[]; end: number } | null {
  const parts: string[] = [];
  if (t.charCodeAt(i) === 0x5d) return { parts, end: i };
  let start = i;
  let depth = 0;
  let inString = false;
  for (; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) {
      if (depth === 0) {
        parts.push(t.slice(start, i));
        return { parts, end: i };
      }
      depth--;
    } else if (c === 0x2c && depth === 0) {
      parts.push(t.slice(start, i));
      start = i + 1;
    }
  }
  return null;
}

/**
 * A chunk's text (writeChunk) split into its keys and its items' JSON texts; parsed when not in that
 * form. A chunk that stores no keys (list@3) takes them from `keyOf`, the list's derivation.
 */
export function rawChunkOf(text: string, keyOf: KeyOf | null = null): RawChunk {
  if (keyOf !== null) {
    const items = text.startsWith(CHUNK_ITEMS) ? arrayElements(text, CHUNK_ITEMS.length) : null;
    const parts = items !== null && items.end === text.length - 2 && text.endsWith(']}') ? items.parts : (JSON.parse(text) as { items: unknown[] }).items.map((x) => JSON.stringify(x));
    const keys = parts.map((j) => keyOf(JSON.parse(j) as unknown));
    return { keys, keyJsons: keys.map((k) => JSON.stringify(k)), items: parts };
  }
  const keys = text.startsWith(CHUNK_HEAD) ? arrayElements(text, CHUNK_HEAD.length) : null;
  const items = keys !== null && text.startsWith(CHUNK_MIDDLE, keys.end) ? arrayElements(text, keys.end + CHUNK_MIDDLE.length) : null;
  if (keys !== null && items !== null && items.end === text.length - 2 && text.endsWith(']}') && keys.parts.length === items.parts.length) {
    return { keys: keys.parts.map((k) => JSON.parse(k) as SortKey), keyJsons: keys.parts, items: items.parts };
  }
  // Not as writeChunk writes it: parsed (a chunk is this renderer's own file: its shape is Chunk's).
  return rawOfParsed(JSON.parse(text) as { keys: SortKey[]; items: unknown[] });
}

/** A parsed chunk (or a root's head) as a RawChunk: its keys and items serialised as writeChunk wrote them. */
export function rawOfParsed(c: { keys: SortKey[]; items: readonly unknown[] }): RawChunk {
  return { keys: c.keys, keyJsons: c.keys.map((k) => JSON.stringify(k)), items: c.items.map((x) => JSON.stringify(x)) };
}

export interface Cut {
  /** Whether the filled chunk may end after this item (content-defined). */
  full: (items: number, bytes: number) => boolean;
  maxItems: number;
  maxBytes: number;
}

/** The cut rules of a list's options. */
export function cutOf(opts: Pick<ListWriterOptions, 'maxItems' | 'maxBytes' | 'minItems' | 'minBytes'>): Cut {
  const full =
    opts.minItems === undefined
      ? (_items: number, bytes: number): boolean => bytes >= (opts.minBytes ?? opts.maxBytes / 4)
      : (items: number): boolean => items >= opts.minItems!;
  return { full, maxItems: opts.maxItems, maxBytes: opts.maxBytes };
}

/**
 * Front-to-back chunking: items go in in list order, each finished chunk comes out through `emit`. A
 * chunk ends before an item that would exceed maxItems or maxBytes, and after an item whose key hash is
 * a boundary once the chunk is full enough (Cut.full). State is only the unfinished chunk.
 */
export class Cutter {
  pending: Pending[] = [];
  private bytes = 0;
  constructor(
    private readonly cut: Cut,
    private readonly emit: (items: Pending[]) => void,
  ) {}

  add(p: Pending): void {
    const n = this.pending.length;
    if (n > 0 && (n >= this.cut.maxItems || this.bytes + p.size > this.cut.maxBytes)) this.flush();
    this.pending.push(p);
    this.bytes += p.size;
    if (p.boundary && this.cut.full(this.pending.length, this.bytes)) this.flush();
  }

  /** Ends the unfinished chunk (the list's end). */
  flush(): void {
    if (this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    this.bytes = 0;
    this.emit(items);
  }

  /** Forgets the unfinished chunk. */
  reset(): void {
    this.pending = [];
    this.bytes = 0;
  }

  /**
   * Whether a chunk that ends with `last` (a key, as JSON) and holds `items` items ended by content: its
   * end then depends on its own items only, not on the item after it. False when the rule needs the
   * chunk's bytes (lists cut by bytes), which an index entry does not record.
   */
  static endsByContent(opts: Pick<ListWriterOptions, 'minItems'>, lastKeyJson: string, items: number): boolean {
    return opts.minItems !== undefined && items >= opts.minItems && fnv1a(lastKeyJson) % BOUNDARY_MODULUS === 0;
  }
}

/**
 * The grouping of index entries into nodes: at most `fanout` entries; a node ends after an entry whose
 * key hash (other bits than a chunk's) is 0 modulo `modulus` once it holds `min` entries.
 */
interface IndexShape {
  fanout: number;
  min: number;
  modulus: number;
}
/** The shape of a list's index nodes (ListWriterOptions.indexFanout: a power of two from 8 to 512, for the 8 hash bits indexBoundary takes). */
function indexShape(fanout: number = INDEX_FANOUT): IndexShape {
  if (!Number.isInteger(Math.log2(fanout)) || fanout < 8 || fanout > 512) throw new Error(`index fanout ${fanout}: not a power of two from 8 to 512`);
  return { fanout, min: fanout / 4, modulus: fanout / 2 };
}

function indexBoundary(e: IndexEntry, shape: IndexShape): boolean {
  // Bits from 24 of the hash: a chunk's last key is often a chunk boundary (its low bits are 0).
  return ((fnv1a(JSON.stringify(e.last)) >>> 24) & (shape.modulus - 1)) === 0;
}
/** Whether a group of `n` entries ending with `last` ends by the rule (its content, or the fanout). */
const endsNode = (n: number, last: IndexEntry, shape: IndexShape): boolean => n >= shape.fanout || (n >= shape.min && indexBoundary(last, shape));

/** An inner node of an earlier write of a list: its entry in the level above, and its entries' paths. */
export interface EarlierNode {
  entry: IndexEntry;
  children: readonly string[];
}

/**
 * Builds the inner nodes above level-0 entries, level by level, until a level fits in a root
 * (INDEX_FANOUT entries). Nodes are content-defined (see the file comment); `put` receives each node's
 * path and bytes (content-addressed). Returns the root's level and entries.
 *
 * `earlier` (a list patched in place, src/render/list-patch.ts): the inner nodes of the list as it was,
 * by the path of their first entry. A node starts fresh and ends by its own entries only, so where a
 * node of this write would start with the same entries as an earlier node that ended by the rule (not
 * by the end of its level), it is that node: its entry is taken as it was, without serialising and
 * hashing it again, and `kept` receives its path instead of `put`.
 */
type IndexFacets = { fields?: readonly string[]; entryCounts?: boolean; fanout?: number };

/** Writes one inner node of `level` over a group of entries; returns its entry in the level above. */
function writeNode(level: number, group: IndexEntry[], facets: IndexFacets, put: (path: string, body: Uint8Array) => void): IndexEntry {
  const node: IndexNode = { level, entries: group };
  const body = enc.encode(JSON.stringify(node));
  const path = contentPath(body);
  put(path, body);
  const e: IndexEntry = { first: group[0]!.first, last: group[group.length - 1]!.last, count: group.reduce((n, g) => n + g.count, 0), path };
  if (facets.fields && facets.entryCounts !== false) {
    const c: FacetCounts = {};
    for (const g of group) if (g.counts) addCounts(c, g.counts);
    e.counts = sortedCounts(c);
  }
  return e;
}

export function buildIndex(
  level0: IndexEntry[],
  facets: IndexFacets,
  put: (path: string, body: Uint8Array) => void,
  earlier?: { nodes: ReadonlyMap<string, EarlierNode>; kept: (path: string) => void },
  /** The level of the entries given (0: chunks; StreamedIndex passes its level-1 entries). */
  startLevel = 0,
): { level: number; entries: IndexEntry[] } {
  const shape = indexShape(facets.fanout);
  let level = startLevel;
  let entries = level0;
  /** The earlier node the entries from `i` on are, or null. */
  const earlierAt = (i: number): EarlierNode | null => {
    const node = earlier?.nodes.get(entries[i]!.path);
    if (node === undefined) return null;
    const n = node.children.length;
    if (i + n > entries.length) return null;
    for (let k = 1; k < n; k++) if (entries[i + k]!.path !== node.children[k]) return null;
    // Ended by the rule: the same group closes there in this write too.
    return endsNode(n, entries[i + n - 1]!, shape) ? node : null;
  };
  while (entries.length > shape.fanout) {
    const up: IndexEntry[] = [];
    let group: IndexEntry[] = [];
    const close = (): void => {
      up.push(writeNode(level, group, facets, put));
      group = [];
    };
    for (let i = 0; i < entries.length; i++) {
      if (group.length === 0 && earlier !== undefined) {
        const node = earlierAt(i);
        if (node !== null) {
          up.push(node.entry);
          earlier.kept(node.entry.path);
          i += node.children.length - 1;
          continue;
        }
      }
      const e = entries[i]!;
      group.push(e);
      if (endsNode(group.length, e, shape)) close();
    }
    if (group.length > 0) close();
    entries = up;
    level++;
  }
  return { level, entries };
}

/**
 * Chunk boundaries of items[lo, hi) found from the end (hi − 1, the oldest item, first) with the rules
 * of add(): the start index of each chunk, the oldest chunk first. The items before the last start are
 * left over (an unfinished chunk). Every boundary depends on the items after it only, so items added at
 * the front never move one.
 */
function startsFromEnd(items: readonly Pending[], lo: number, hi: number, cut: Cut): number[] {
  const starts: number[] = [];
  let end = hi;
  let bytes = 0;
  for (let i = hi - 1; i >= lo; i--) {
    const p = items[i]!;
    const n = end - (i + 1);
    if (n > 0 && (n >= cut.maxItems || bytes + p.size > cut.maxBytes)) {
      starts.push(i + 1);
      end = i + 1;
      bytes = 0;
    }
    bytes += p.size;
    if (p.boundary && cut.full(end - i, bytes)) {
      starts.push(i);
      end = i;
      bytes = 0;
    }
  }
  return starts;
}

/** Item counts per declared facet value of some items. */
export function countsOf(items: readonly Pending[], fields: readonly string[]): FacetCounts {
  const c: FacetCounts = {};
  for (const p of items) {
    if (!p.facets) continue;
    for (const f of fields) {
      const m = (c[f] ??= {});
      const vs = p.facets[f];
      if (vs === undefined || vs.length === 0) continue;
      // One value (almost always): counted as it is, without a Set; several: each once.
      if (vs.length === 1) m[vs[0]!] = (m[vs[0]!] ?? 0) + 1;
      else for (const v of new Set(vs)) m[v] = (m[v] ?? 0) + 1;
    }
  }
  return c;
}

/** Writes one chunk of `items`; returns its index entry and its facet counts (with facet fields). */
export function writeChunk(sink: FileSink, items: readonly Pending[], opts: Pick<ListWriterOptions, 'facetFields' | 'entryCounts' | 'derivedKey'>): { entry: IndexEntry; counts?: FacetCounts } {
  const texts = items.map((p) => p.json).join(',');
  const body = enc.encode(opts.derivedKey === undefined ? `{"keys":[${items.map((p) => p.keyJson).join(',')}],"items":[${texts}]}` : `${CHUNK_ITEMS}${texts}]}`);
  const path = contentPath(body);
  sink.put(path, body, 'application/json', 'immutable');
  const entry: IndexEntry = { first: items[0]!.key, last: items[items.length - 1]!.key, count: items.length, path };
  if (!opts.facetFields) return { entry };
  const counts = countsOf(items, opts.facetFields);
  if (opts.entryCounts !== false) entry.counts = sortedCounts(counts);
  return { entry, counts };
}

/**
 * buildIndex over level-0 entries given one at a time, holding few of them: the level-1 nodes are
 * groups that end by their own entries (endsNode), so each is written as soon as it ends, once the
 * list is known to need nodes (more than a root's fanout of chunks); until then the entries are held,
 * as a root may hold them all. The same nodes and root as buildIndex over all the entries: a list of
 * millions of items (a participant list: a trigram's in a name order) keeps its few hundred level-1
 * entries, not its thousands of chunk entries, while thousands of lists are written side by side.
 */
class StreamedIndex {
  private readonly shape: IndexShape;
  /** Groups that have ended, not yet written: every one until more than a fanout of entries were seen. */
  private ended: IndexEntry[][] = [];
  /** The group being filled. */
  private group: IndexEntry[] = [];
  private seen = 0;
  private readonly up: IndexEntry[] = [];

  constructor(
    private readonly facets: IndexFacets,
    private readonly put: (path: string, body: Uint8Array) => void,
  ) {
    this.shape = indexShape(facets.fanout);
  }

  add(e: IndexEntry): void {
    this.group.push(e);
    this.seen++;
    if (endsNode(this.group.length, e, this.shape)) {
      this.ended.push(this.group);
      this.group = [];
    }
    if (this.seen > this.shape.fanout) this.writeEnded();
  }

  /** Writes the groups that have ended. */
  private writeEnded(): void {
    for (const g of this.ended) this.up.push(writeNode(0, g, this.facets, this.put));
    this.ended = [];
  }

  /** The root's level and entries (writing the last node and the levels above). */
  finish(): { level: number; entries: IndexEntry[] } {
    if (this.seen <= this.shape.fanout) return { level: 0, entries: [...this.ended.flat(), ...this.group] };
    this.writeEnded();
    if (this.group.length > 0) this.up.push(writeNode(0, this.group, this.facets, this.put));
    this.group = [];
    return buildIndex(this.up, this.facets, this.put, undefined, 1);
  }
}

export class ListWriter {
  /** Every item (with a head). */
  private pending: Pending[] = [];
  private readonly cut: Cut;
  /** Front-to-back chunking (without a head). */
  private readonly cutter: Cutter;
  private readonly index: StreamedIndex;
  /** Chunks already written that follow the items (addWritten). */
  private readonly tail: IndexEntry[] = [];
  private readonly total: FacetCounts = {};
  private count = 0;

  constructor(
    private readonly sink: FileSink,
    private readonly opts: ListWriterOptions,
  ) {
    if (opts.derivedKey !== undefined && keyDerivation(opts.derivedKey) === null) throw new Error(`ListWriter: no key derivation ${opts.derivedKey}`);
    this.cut = cutOf(opts);
    this.index = new StreamedIndex({ fields: opts.facetFields, entryCounts: opts.entryCounts, fanout: opts.indexFanout }, (path, body) => this.sink.put(path, body, 'application/json', 'immutable'));
    this.cutter = new Cutter(this.cut, (items) => this.index.add(this.chunk(items)));
  }

  private readonly full = (items: number, bytes: number): boolean => this.cut.full(items, bytes);

  /** Appends the next item (in list order). `facets` gives the item's value(s) per declared facet field. */
  add(item: unknown, key: SortKey, facets?: Record<string, readonly string[]>): void {
    this.addPending(pendingOf(JSON.stringify(item), key, facets));
  }

  /** Appends the next item, already as JSON. */
  addPending(p: Pending): void {
    this.count++;
    if (this.opts.head) this.pending.push(p);
    else this.cutter.add(p);
  }

  /**
   * Appends chunks already written, by their level-0 index entries, after the items (call it after the
   * last add): the chunks of an earlier write of this list whose items have not changed. The items
   * before them are chunked as if the list ended there, so the caller must know that a write of the
   * whole list starts a chunk at the first of them and gives these same chunks (for a list with a head,
   * chunked from its end: src/render/routes/host-uptime.ts). With facet fields, the entries must carry
   * their counts (entryCounts): the list's totals take them.
   */
  addWritten(entries: readonly IndexEntry[]): void {
    for (const e of entries) {
      if (this.opts.facetFields) {
        if (e.counts === undefined) throw new Error('ListWriter.addWritten: an entry without counts in a list with facet fields');
        addCounts(this.total, e.counts);
      }
      this.count += e.count;
      this.tail.push(e);
    }
  }

  /** Writes one chunk of `items` and returns its index entry (the list totals take its counts). */
  private chunk(items: readonly Pending[]): IndexEntry {
    const c = writeChunk(this.sink, items, this.opts);
    if (c.counts) addCounts(this.total, c.counts);
    return c.entry;
  }

  /**
   * With a head: the level-0 entries and the head from every item. Chunks are found from the end; of
   * the unfinished rest at the front (the open items excluded), the part up to its last boundary at
   * half of head.maxBytes is one more chunk, and what is left plus the open items is the head.
   */
  private splitHead(head: HeadOptions): HeadChunk {
    const all = this.pending;
    let open = 0;
    while (open < all.length && head.open?.(all[open]!.key)) open++;
    const starts = startsFromEnd(all, open, all.length, { full: this.full, maxItems: this.opts.maxItems, maxBytes: this.opts.maxBytes });
    const rest = starts.length === 0 ? all.length : starts[starts.length - 1]!;
    const sub = startsFromEnd(all, open, rest, { full: (_n, bytes) => bytes >= head.maxBytes / 2, maxItems: this.opts.maxItems, maxBytes: head.maxBytes });
    const headEnd = sub.length === 0 ? rest : sub[sub.length - 1]!;
    // List order: the head, the rest's chunk, then the chunks found from the end, newest first.
    const bounds = [headEnd, rest, ...starts.reverse(), all.length];
    for (let i = 0; i + 1 < bounds.length; i++) if (bounds[i]! < bounds[i + 1]!) this.index.add(this.chunk(all.slice(bounds[i], bounds[i + 1])));
    const items = all.slice(0, headEnd);
    const h: HeadChunk = { keys: items.map((p) => p.key), items: items.map((p) => JSON.parse(p.json) as unknown) };
    if (this.opts.facetFields) {
      const c = countsOf(items, this.opts.facetFields);
      if (this.opts.entryCounts !== false) h.counts = sortedCounts(c);
      addCounts(this.total, c);
    }
    this.pending = [];
    return h;
  }

  /** Writes the remaining chunk, the inner index nodes and the root at `rootPath`; returns the root. */
  finish(rootPath: string): ListRoot {
    const head = this.opts.head ? this.splitHead(this.opts.head) : undefined;
    this.cutter.flush();
    for (const e of this.tail) this.index.add(e);
    const { level, entries } = this.index.finish();
    const root = rootOf(this.opts, this.count, level, entries, head);
    if (this.opts.facetFields) root.counts = sortedCounts(this.total);
    if (head) root.head = head;
    this.sink.put(rootPath, enc.encode(JSON.stringify(root)), 'application/json', 'mutable');
    return root;
  }
}
