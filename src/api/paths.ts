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
// injective and never yields `.`, `..` or a path separator.

const KEEP = /^[A-Za-z0-9-]$/;
const enc = new TextEncoder();

export function encodeSegment(s: string): string {
  let out = '';
  let i = 0;
  for (const ch of s) {
    if (KEEP.test(ch) || (ch === '.' && i > 0)) out += ch;
    else for (const b of enc.encode(ch)) out += `_${b.toString(16).padStart(2, '0')}`;
    i++;
  }
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

