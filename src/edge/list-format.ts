// The on-disk format of list chunks and list indexes in the snapshot (docs/snapshot-format.md).
// Shared by the renderer (writes) and the shim (reads). Edge-safe: no Node imports.
import type { Direction, SortKey } from '../api/sort-keys.js';

/** Counts of items per value of a declared facet field: field -> value -> count. */
export type FacetCounts = Record<string, Record<string, number>>;

/** One entry of an index node: a chunk (level 0) or a child node (level > 0). */
export interface IndexEntry {
  /** Key of the first and last item below this entry, in list order. */
  first: SortKey;
  last: SortKey;
  /** Items below this entry. */
  count: number;
  /** Snapshot-relative path of the chunk or child node (content-addressed, immutable); '' for a root's inline head. */
  path: string;
  /** Item counts per declared facet value below this entry (absent when the list declares none). */
  counts?: FacetCounts;
}

/** A child node of a list index (immutable). */
export interface IndexNode {
  level: number;
  entries: IndexEntry[];
}

/**
 * A chunk: items in list order, with their sort keys. A chunk of a list whose root names a `key`
 * derivation (format list@3) is stored without `keys`: a reader derives them from the items
 * (src/edge/derived-keys.ts withKeys) and sees this shape.
 */
export interface Chunk {
  keys: SortKey[];
  items: unknown[];
}

/** The first chunk of a list stored inside its root (format list@2; docs/snapshot-format.md, "Head"). */
export interface HeadChunk extends Chunk {
  /** Item counts per declared facet value, as an index entry's (absent without per-entry counts). */
  counts?: FacetCounts;
}

/** The root of a list index (one mutable file per list). */
export interface ListRoot {
  /**
   * list@1: no head; list@2: `head` holds the list's first items; list@3: no head, and the chunks hold
   * no keys, `key` names how to derive them from the items. A reader rejects a format it does not know.
   */
  format: typeof LIST_FORMAT | typeof LIST_FORMAT_HEAD | typeof LIST_FORMAT_DERIVED;
  /** list@3: the derivation of an item's sort key (src/edge/derived-keys.ts). */
  key?: string;
  /** Directions of the sort key fields. */
  dirs: Direction[];
  /** Items in the list, the head's included. */
  count: number;
  /** Facet counts over the whole list, the head's included. */
  counts?: FacetCounts;
  /** Level of the nodes the entries point at: 0 = entries are chunks. */
  level: number;
  /** The index of every item after the head. */
  entries: IndexEntry[];
  /** list@2: the items before the first entry's (possibly none). */
  head?: HeadChunk;
}

export const LIST_FORMAT = 'peppol-snapshot/list@1';
/** A root with an inline head chunk. */
export const LIST_FORMAT_HEAD = 'peppol-snapshot/list@2';
/** A root whose chunks hold no keys: they are derived from the items (`key`). */
export const LIST_FORMAT_DERIVED = 'peppol-snapshot/list@3';
/** Most entries in one index node: keeps an index read under ~64 KB. */
export const INDEX_FANOUT = 128;

/** The count of `value` in a facet-count map; 0 when absent (own properties only: values are request input). */
export function facetCount(counts: FacetCounts | undefined, field: string, value: string): number {
  const m = counts !== undefined && Object.hasOwn(counts, field) ? counts[field] : undefined;
  const n = m !== undefined && Object.hasOwn(m, value) ? m[value] : undefined;
  return typeof n === 'number' ? n : 0;
}
