// The on-disk format of list chunks and list indexes in the snapshot (docs/snapshot-format.md).
// Shared by the renderer (writes) and the shim (reads). Edge-safe: no Node imports.
import type { Direction, SortKey } from '../api/keys.js';

/** Counts of items per value of a declared facet field: field -> value -> count. */
export type FacetCounts = Record<string, Record<string, number>>;

/** One entry of an index node: a chunk (level 0) or a child node (level > 0). */
export interface IndexEntry {
  /** Key of the first and last item below this entry, in list order. */
  first: SortKey;
  last: SortKey;
  /** Items below this entry. */
  count: number;
  /** Snapshot-relative path of the chunk or child node (content-addressed, immutable). */
  path: string;
  /** Item counts per declared facet value below this entry (absent when the list declares none). */
  counts?: FacetCounts;
}

/** A child node of a list index (immutable). */
export interface IndexNode {
  level: number;
  entries: IndexEntry[];
}

/** The root of a list index (one mutable file per list). */
export interface ListRoot {
  format: 'peppol-snapshot/list@1';
  /** Directions of the sort key fields. */
  dirs: Direction[];
  /** Items in the list. */
  count: number;
  /** Facet counts over the whole list. */
  counts?: FacetCounts;
  /** Level of the nodes the entries point at: 0 = entries are chunks. */
  level: number;
  entries: IndexEntry[];
}

/** A chunk: items in list order, with their sort keys. */
export interface Chunk {
  keys: SortKey[];
  items: unknown[];
}

export const LIST_FORMAT = 'peppol-snapshot/list@1';
/** Most entries in one index node: keeps an index read under ~64 KB. */
export const INDEX_FANOUT = 128;
