// How the renderer stores a snapshot file and reads one back (docs/snapshot-format.md, "Stored
// encoding"): the files of src/api/paths.ts storedEncoding are written gzip-encoded, every other file
// as it is. Readers recognise gzip by its magic bytes, so they also read a snapshot written before
// the encoding (and a body a transport already decoded).
import fs from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { storedEncoding } from '../api/paths.js';
import { isGzip } from '../edge/stored.js';

export { isGzip };

/**
 * zlib level of stored files that have a path of their own (participant records, list roots, facet
 * files): 5.7 times smaller than JSON for list chunks at `peppol`, at 180 MB/s on the machine of the
 * first measurement (level 6: 5.9 times, 105 MB/s; level 1: 5.2 times, 240 MB/s; docs/benchmarks.md).
 * A level change rewrites each such file once, in the first build after it.
 */
export const STORED_GZIP_LEVEL = 4;

/**
 * zlib level of content-addressed files (`c/`: list chunks and index nodes). A first build at `peppol`
 * gzips about 13 GB of chunks' JSON, 206 of its render's 1,760 CPU-seconds: level 1 takes 30% less time for 7%
 * more bytes (docs/benchmarks.md "Rows read as arrays; chunks at zlib level 1"). A chunk's name is the hash of its content,
 * not of its bytes, and a chunk already on disk is kept as it is (src/render/sink.ts putKept): the
 * change rewrites no file of an existing snapshot, and the chunks written since are level 1.
 */
export const CHUNK_GZIP_LEVEL = 1;

/** The zlib level a stored file is written at (CHUNK_GZIP_LEVEL for content-addressed files). */
export const storedGzipLevel = (rel: string): number => (rel.startsWith('c/') ? CHUNK_GZIP_LEVEL : STORED_GZIP_LEVEL);

/**
 * The smallest deflate window (windowBits) that holds the whole body: zlib sets up, and clears, a
 * window of 2^windowBits bytes for every call, which was a fifth of the time of gzipping a 2 KB
 * participant record. A match reaches back at most 2^windowBits − 262 bytes, so a body no longer than
 * that is compressed to the same bytes as with the default 32 KiB window (memLevel, which sets the
 * hash table and the block size, stays the default).
 */
export function fittingWindowBits(bytes: number): number {
  let bits = 9;
  while (bits < 15 && (1 << bits) - 262 < bytes) bits++;
  return bits;
}

/** The bytes a file is stored as: gzip for the paths storedEncoding names, else the body itself. */
export function encodeStored(rel: string, body: Uint8Array): Uint8Array {
  return storedEncoding(rel) === 'gzip' ? gzipSync(body, { level: storedGzipLevel(rel), windowBits: fittingWindowBits(body.length) }) : body;
}

/** A stored file's content: gzip decoded, anything else as it is. */
export function decodeStored(b: Buffer): Buffer {
  return isGzip(b) ? gunzipSync(b) : b;
}

/** Reads a snapshot file and decodes it (decodeStored). */
export function readStored(abs: string): Buffer {
  return decodeStored(fs.readFileSync(abs));
}

/** Reads a snapshot file as JSON (readStored). */
export function readStoredJson(abs: string): unknown {
  return JSON.parse(readStored(abs).toString('utf8'));
}
