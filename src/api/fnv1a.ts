// FNV-1a (32-bit) over a string's UTF-16 code units. Edge-safe: the renderer's content-defined
// boundaries (src/render/lists.ts), the record packs' hash (src/api/participants/record.ts) and the
// demo's random stream names (src/demo/prng.ts) use it.

/** FNV-1a of `s`, as an unsigned 32-bit integer. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
