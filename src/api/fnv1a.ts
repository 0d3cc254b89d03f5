// FNV-1a (32-bit) over a string's UTF-16 code units. Edge-safe: the renderer's content-defined
// boundaries (src/render/lists.ts), the record packs' hash (src/api/participants/record.ts) and the
// demo's random stream names (src/demo/prng.ts) use it.

/** murmur3 finaliser: a good 32-bit avalanche (unsigned). */
export function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a of `s` finished with murmur3's 32-bit mixer (its bits spread evenly: take the top ones), unsigned. */
export function fnv1aMixed(s: string): number {
  return mix32(fnv1a(s));
}

/** FNV-1a of `s`, as an unsigned 32-bit integer. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
