// Writes one list (items in page order, each with its sort key) as content-addressed chunks plus a
// B-tree-like index (docs/snapshot-format.md). Streaming: memory holds one chunk and the level-0 index
// entries (about 200 bytes per chunk, so ~3 MB for 3 million participants).
//
// Chunk boundaries are content-defined so that a change to a few items rewrites only the chunks
// around them (cheap uploads): a chunk ends after an item whose key hash is 0 modulo BOUNDARY_MODULUS
// once the chunk holds at least a quarter of the byte budget (or `minItems` items, where the list sets
// it), and always before it would exceed `maxItems` or `maxBytes`.
import { createHash } from 'node:crypto';
import type { Direction, SortKey } from '../api/keys.js';
import { INDEX_FANOUT, LIST_FORMAT, type Chunk, type FacetCounts, type IndexEntry, type IndexNode, type ListRoot } from '../edge/list-format.js';

export interface FileSink {
  /** Stores a file of the snapshot (the sink skips rewriting identical bytes and records the manifest). */
  put(path: string, body: Uint8Array, contentType: string, cacheClass: 'mutable' | 'immutable' | 'meta'): void;
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
  /**
   * With facetFields: false keeps the facet counts in the root only (list totals), not per entry: for
   * lists whose readers never skip entries, where per-entry counts would only make the index larger.
   */
  entryCounts?: boolean;
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

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function addCounts(into: FacetCounts, from: FacetCounts): void {
  for (const [f, m] of Object.entries(from)) {
    const t = (into[f] ??= {});
    for (const [v, n] of Object.entries(m)) t[v] = (t[v] ?? 0) + n;
  }
}

/** Sorts a facet-count map's values so equal content gives equal bytes. */
function sortedCounts(c: FacetCounts): FacetCounts {
  const out: FacetCounts = {};
  for (const f of Object.keys(c).sort()) {
    const m = c[f]!;
    out[f] = Object.fromEntries(Object.keys(m).sort().map((v) => [v, m[v]!]));
  }
  return out;
}

export class ListWriter {
  private keys: SortKey[] = [];
  private itemsJson: string[] = [];
  private bytes = 0;
  private chunkCounts: FacetCounts = {};
  private readonly level0: IndexEntry[] = [];
  private readonly total: FacetCounts = {};
  private count = 0;

  constructor(
    private readonly sink: FileSink,
    private readonly opts: ListWriterOptions,
  ) {}

  /** Appends the next item (in list order). `facets` gives the item's value(s) per declared facet field. */
  add(item: unknown, key: SortKey, facets?: Record<string, readonly string[]>): void {
    const json = JSON.stringify(item);
    const keyJson = JSON.stringify(key);
    const size = json.length + keyJson.length + 2;
    if (this.keys.length > 0 && (this.keys.length >= this.opts.maxItems || this.bytes + size > this.opts.maxBytes)) this.flush();
    this.keys.push(key);
    this.itemsJson.push(json);
    this.bytes += size;
    this.count++;
    if (facets && this.opts.facetFields) {
      for (const f of this.opts.facetFields) {
        const m = (this.chunkCounts[f] ??= {});
        for (const v of new Set(facets[f] ?? [])) m[v] = (m[v] ?? 0) + 1;
      }
    }
    const full = this.opts.minItems === undefined ? this.bytes >= this.opts.maxBytes / 4 : this.keys.length >= this.opts.minItems;
    if (full && fnv1a(keyJson) % BOUNDARY_MODULUS === 0) this.flush();
  }

  private flush(): void {
    if (this.keys.length === 0) return;
    const body = enc.encode(`{"keys":${JSON.stringify(this.keys)},"items":[${this.itemsJson.join(',')}]}`);
    const path = contentPath(body);
    this.sink.put(path, body, 'application/json', 'immutable');
    const entry: IndexEntry = { first: this.keys[0]!, last: this.keys[this.keys.length - 1]!, count: this.keys.length, path };
    if (this.opts.facetFields) {
      if (this.opts.entryCounts !== false) entry.counts = sortedCounts(this.chunkCounts);
      addCounts(this.total, this.chunkCounts);
    }
    this.level0.push(entry);
    this.keys = [];
    this.itemsJson = [];
    this.bytes = 0;
    this.chunkCounts = {};
  }

  /** Writes the remaining chunk, the inner index nodes and the root at `rootPath`; returns the root. */
  finish(rootPath: string): ListRoot {
    this.flush();
    let level = 0;
    let entries = this.level0;
    while (entries.length > INDEX_FANOUT) {
      const up: IndexEntry[] = [];
      for (let i = 0; i < entries.length; i += INDEX_FANOUT) {
        const group = entries.slice(i, i + INDEX_FANOUT);
        const node: IndexNode = { level, entries: group };
        const body = enc.encode(JSON.stringify(node));
        const path = contentPath(body);
        this.sink.put(path, body, 'application/json', 'immutable');
        const e: IndexEntry = { first: group[0]!.first, last: group[group.length - 1]!.last, count: group.reduce((n, g) => n + g.count, 0), path };
        if (this.opts.facetFields && this.opts.entryCounts !== false) {
          const c: FacetCounts = {};
          for (const g of group) if (g.counts) addCounts(c, g.counts);
          e.counts = sortedCounts(c);
        }
        up.push(e);
      }
      entries = up;
      level++;
    }
    const root: ListRoot = { format: LIST_FORMAT, dirs: this.opts.dirs, count: this.count, level, entries };
    if (this.opts.facetFields) root.counts = sortedCounts(this.total);
    this.sink.put(rootPath, enc.encode(JSON.stringify(root)), 'application/json', 'mutable');
    return root;
  }
}
