// Decoding the snapshot's stored files (docs/snapshot-format.md, "Stored encoding"). Edge-safe.
// The files the shim reads as parts (roots, chunks, facet files, participant records) are stored
// gzip-encoded; a read recognises gzip by its magic bytes, so the shim also reads a snapshot written
// before the encoding, and a body its transport already decoded (a fetch through a CDN).

/** Decodes a gzip body. The default is the Web-standard DecompressionStream; Node passes zlib's. */
export type Inflate = (gz: Uint8Array) => Uint8Array | Promise<Uint8Array>;

/** Whether bytes are a gzip member (RFC 1952 magic). A JSON text never begins with 0x1f. */
export function isGzip(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

/** Inflates gzip with DecompressionStream (Workers, browsers, Node). */
export async function inflateStream(gz: Uint8Array): Promise<Uint8Array> {
  const ds = new DecompressionStream('gzip');
  const writer = ds.writable.getWriter();
  // The write settles only as the readable is drained below; its rejection is the read's too.
  writer.write(gz).catch(() => {});
  writer.close().catch(() => {});
  const reader = ds.readable.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    n += value.length;
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
