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

/** A chunk: items in list order, with their sort keys. */
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
  /** list@1: no head; list@2: `head` holds the list's first items (a reader of list@1 rejects it). */
  format: typeof LIST_FORMAT | typeof LIST_FORMAT_HEAD;
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
/** Most entries in one index node: keeps an index read under ~64 KB. */
export const INDEX_FANOUT = 128;

/** The count of `value` in a facet-count map; 0 when absent (own properties only: values are request input). */
export function facetCount(counts: FacetCounts | undefined, field: string, value: string): number {
  const m = counts !== undefined && Object.hasOwn(counts, field) ? counts[field] : undefined;
  const n = m !== undefined && Object.hasOwn(m, value) ? m[value] : undefined;
  return typeof n === 'number' ? n : 0;
}
