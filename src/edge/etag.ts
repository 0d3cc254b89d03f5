// Strong validators of answer bodies (docs/edge.md, "ETag, 304 and caching"). Edge-safe: crypto.subtle only.

/** The first 128 bits of the body's SHA-256, in hex, quoted: a strong ETag. */
export async function sha256Etag(body: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', body));
  return `"${Array.from(d.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('')}"`;
}
