// Where each answer lives in the snapshot (docs/snapshot-format.md). Edge-safe: no Node imports.
//
// - Exact files: the URL path with each segment encoded, plus `.json`:
//   `/v1/hosts/smp.example.com/incidents` -> `v1/hosts/smp.example.com/incidents.json`.
// - List indexes: `i/<route id>/<encoded partition>.json` (mutable); chunks and inner index nodes
//   `c/<2 hex>/<38 hex>.json` (content-addressed, immutable).
// - Problem documents: `p/<status>/<name>.json`.
//
// Segment encoding: A–Z, a–z, 0–9, `-` and `.` (not leading) are kept; every other UTF-8 byte is
// written `_` + two lower-case hex digits. So `0208::0123` -> `0208_3a_3a0123`; the encoding is
// injective and never yields `.`, `..` or a path separator. An encoding longer than SEGMENT_MAX
// characters is replaced by `~` and the first 32 hex digits of the segment's SHA-256 (`~` is never kept
// by the encoding, so the two forms cannot meet): a file name stays under the file systems' 255 bytes
// and a whole path under S3's and R2's 1,024-byte object keys, whatever a participant id (up to 200
// characters, each up to 4 bytes of UTF-8) or a filter value holds.

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
