// Where each answer lives in the snapshot: exact files and list roots, and
// the injective encoding of path segments (long ones hashed). Edge-safe. The rules are stated once in
// docs/snapshot-format.md ("The snapshot format", "Path segments").
import { sha256Hex } from './sha256.js';

const KEEP = /^[A-Za-z0-9-]$/;
const enc = new TextEncoder();

/** Longest encoded segment kept as it is. */
export const SEGMENT_MAX = 150;

export function encodeSegment(s: string): string {
  let out = '';
  let i = 0;
  for (const ch of s) {
    if (KEEP.test(ch) || (ch === '.' && i > 0)) out += ch;
    else for (const b of enc.encode(ch)) out += `_${b.toString(16).padStart(2, '0')}`;
    i++;
  }
  if (out.length > SEGMENT_MAX) return `~${sha256Hex(enc.encode(s)).slice(0, 32)}`;
  return out.length === 0 ? '_' : out;
}

/** The exact file of a URL path (already validated and canonical), e.g. `/v1/network` -> `v1/network.json`. */
export function exactFilePath(segments: readonly string[]): string {
  return `${segments.map(encodeSegment).join('/')}.json`;
}

/** The root index of one list: route id plus the partition's canonical values. */
export function listRootPath(routeId: string, partition: readonly string[]): string {
  return `i/${encodeSegment(routeId)}/${partition.length === 0 ? '_all' : partition.map(encodeSegment).join('/')}.json`;
}

/** What the root path of every list of a route whose partition starts with `partitionPrefix` begins with. */
export function listRootPrefix(routeId: string, partitionPrefix: readonly string[] = []): string {
  return `i/${encodeSegment(routeId)}/${partitionPrefix.map((p) => `${encodeSegment(p)}/`).join('')}`;
}

/** How a file is stored when it is not stored as it is (docs/snapshot-format.md, "Stored encoding"). */
export type StoredEncoding = 'gzip';

/**
 * The encoding a snapshot file is stored with: gzip for the files the shim reads and never serves as
 * they are (list roots `i/`, chunks and index nodes `c/`, the participants' facet files and record
 * packs `f/`); null for every other file (answers served as they are, the manifest and its shards,
 * discovery documents, snapshot.json).
 */
export function storedEncoding(path: string): StoredEncoding | null {
  if (path.startsWith('c/') || path.startsWith('i/') || path.startsWith('f/')) return 'gzip';
  return null;
}
