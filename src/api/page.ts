// The page envelope `{ items, next_cursor }` of every list answer, one definition. Edge-safe.
import { encodeCursor } from './cursor.js';
import type { SortKey } from './sort-keys.js';

export interface PageBody<T> {
  items: T[];
  next_cursor: string | null;
}

/**
 * The next-cursor on `key` of a list (route id and canonical partition values: listPartition). The
 * hint is always '': the oracle cannot know chunk names (docs/snapshot-format.md "Cursors name keys").
 */
export function nextCursor(route: string, partition: readonly string[], key: SortKey): string {
  return encodeCursor({ route, partition, key, hint: '', dir: 'next' });
}

/** A page of a keyset list: `next_cursor` stands on the last item when another matching item follows. */
export function pageBody<T>(route: string, partition: readonly string[], items: T[], keys: readonly SortKey[], more: boolean): PageBody<T> {
  const last = keys[keys.length - 1];
  return { items, next_cursor: more && last !== undefined ? nextCursor(route, partition, last) : null };
}

/** `{ items, next_cursor: null }`: the envelope of an unpaginated list (providers, aps, churn participants). */
export function unpaginatedPage<T>(items: T[]): { items: T[]; next_cursor: null } {
  return { items, next_cursor: null };
}
