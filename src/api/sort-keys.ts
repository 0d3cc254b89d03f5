// Sort keys of list items (keyset pagination). Edge-safe: no Node imports.
//
// A key is a tuple of scalar fields; each field has a direction. Order rules, identical in SQLite (the
// query functions) and here (the renderer and the shim):
// - numbers compare numerically; strings compare by Unicode code point, which is the byte order of
//   UTF-8 and so SQLite's BINARY collation (JavaScript's `<` compares UTF-16 code units, which differs
//   above U+FFFF: not used);
// - null sorts after every value in both directions ("nulls last"): in SQL `ORDER BY x IS NULL, x DESC`;
// - the last field of every list's key is unique within the list, so the order is total and a key is
//   a position that survives regeneration (keyset, never an offset).

export type KeyField = string | number | null;
export type SortKey = readonly KeyField[];
export type Direction = 'asc' | 'desc';

/** Compares two strings by Unicode code point. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+D800–U+DFFF) encode code points above U+FFFF, which sort after every BMP code unit.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    // A surrogate is part of a code point above U+FFFF: greater than any BMP code point.
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

function compareField(a: KeyField, b: KeyField): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return compareCodePoints(a, b);
  throw new TypeError(`sort key fields of different types: ${typeof a} and ${typeof b}`);
}

/** Compares keys in list order: negative when `a` comes before `b`. */
export function compareKeys(a: SortKey, b: SortKey, dirs: readonly Direction[]): number {
  for (let i = 0; i < dirs.length; i++) {
    const x = a[i] ?? null;
    const y = b[i] ?? null;
    let c = compareField(x, y);
    // nulls last in both directions: only non-null comparisons flip.
    if (c !== 0 && dirs[i] === 'desc' && x !== null && y !== null) c = -c;
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * The keyset start after a position: true for the keys after `after` in list order, every key when
 * `after` is undefined (a first page). Monotone over a list, as ListReader.scan's `start` wants.
 */
export function keysAfter(dirs: readonly Direction[], after: SortKey | undefined): (k: SortKey) => boolean {
  return after === undefined ? () => true : (k) => compareKeys(k, after, dirs) > 0;
}

export function isSortKey(v: unknown, width: number): v is SortKey {
  return Array.isArray(v) && v.length === width && v.every((f) => f === null || typeof f === 'string' || (typeof f === 'number' && Number.isFinite(f)));
}
