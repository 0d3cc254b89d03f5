// The site: the snapshot's files for people and for open-data tools, served as they are stored (docs/edge.md,
// "Site files"): the status page at `/` (index.html) and its pages and stylesheet under /status/, the
// readable API description (api.html), the Atom feed (feed.atom) and the bulk downloads under /bulk/.
// They are not API endpoints (no parameters, no composer, no oracle): a request path names its file,
// `/` names index.html. Which paths are site paths is SITE_PATHS (src/config/patterns.ts), keyless.
// Edge-safe: no Node imports.
import { SITE_PATHS, matchPathPattern } from '../config/patterns.js';
import type { CacheClass } from './types.js';

/** The files `build` writes for the site (src/render/site/), by path in the snapshot. */
export const SITE_FILES = {
  index: 'index.html',
  style: 'status/style.css',
  apiPage: 'api.html',
  feed: 'feed.atom',
} as const;

/** The page of hosts number `n` (1-based) of the status page. */
export function hostsPagePath(n: number): string {
  return `status/hosts-${n}.html`;
}

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  atom: 'application/atom+xml',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  gz: 'application/gzip',
  zst: 'application/zstd',
  parquet: 'application/vnd.apache.parquet',
  sqlite: 'application/vnd.sqlite3',
  svg: 'image/svg+xml',
};

/** The content type of a site file, from its extension; checksum lists (`SHA256SUMS`) are text. */
export function siteContentType(file: string): string {
  const name = file.slice(file.lastIndexOf('/') + 1);
  if (/^(SHA256SUMS|SHA512SUMS|MD5SUMS)$/.test(name)) return TYPES.txt!;
  const dot = name.lastIndexOf('.');
  return (dot > 0 ? TYPES[name.slice(dot + 1).toLowerCase()] : undefined) ?? 'application/octet-stream';
}

/** The snapshot file a request path names when it is a site path, else null. */
export function siteFileOf(pathname: string): string | null {
  if (!SITE_PATHS.some((p) => matchPathPattern(p, pathname))) return null;
  if (pathname === '/') return SITE_FILES.index;
  return pathname.endsWith('/') ? null : decodeURIComponent(pathname.slice(1));
}

/** Every site file changes when the snapshot is rebuilt (bulk/latest/ included): a minute in caches. */
export const SITE_CACHE_CLASS: CacheClass = 'mutable';

/** A byte range of a file, resolved against its size: [start, start + length). */
export interface ByteRange {
  start: number;
  length: number;
}

/**
 * The range a `Range` header asks of a file of `size` bytes (RFC 9110 §14.1.2; one range only): null
 * to answer the whole file (no header, another unit, several ranges, a malformed header: all ignored,
 * as §14.2 allows), 'unsatisfiable' for a well-formed range that holds no byte of the file (416).
 */
export function requestedRange(header: string | null, size: number): ByteRange | 'unsatisfiable' | null {
  if (header === null) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    const length = Math.min(suffix, size);
    return length === 0 ? 'unsatisfiable' : { start: size - length, length };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null; // last < first: invalid, ignored (§14.1.1)
  if (start >= size) return 'unsatisfiable';
  return { start, length: last - start + 1 };
}
