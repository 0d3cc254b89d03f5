// Interim resolver: a pure URL rewrite onto exact files (DESIGN §5 "Exact files"), used by
// `peppol-snapshot serve` and the Worker until the render/compose work delivers src/edge/resolve.ts
// (which also composes pages from list chunks and validates parameters). Edge-safe: no Node imports.
//
// Rules: a request without a query string is answered from `<path>.json` (a path that already ends in
// `.json`, such as /manifest.json or /openapi.json, is served as is); the file's bytes are the body,
// `application/json`, cache class `mutable`. Anything else is a 404 problem.
import { PROBLEM_CONTENT_TYPE, problemDoc } from './problem.js';
import type { Answer, Resolve } from './types.js';

const enc = new TextEncoder();

function notFound(pathname: string, detail: string): Answer {
  return {
    status: 404,
    body: enc.encode(JSON.stringify(problemDoc(404, detail, pathname))),
    contentType: PROBLEM_CONTENT_TYPE,
    cacheClass: 'none',
  };
}

/** The snapshot file of a request path, or null when the path has no exact file (trailing slash, root). */
export function exactFilePath(pathname: string): string | null {
  if (pathname === '/' || pathname.endsWith('/')) return null;
  // The handler has checked every segment (no "." / "..", no encoded "/" or "\"), so decoding is safe.
  const rel = pathname
    .slice(1)
    .split('/')
    .map((s) => decodeURIComponent(s))
    .join('/');
  return rel.endsWith('.json') ? rel : `${rel}.json`;
}

export const exactFileResolve: Resolve = async ({ url }, files) => {
  const path = exactFilePath(url.pathname);
  if (url.search !== '' || path === null) return notFound(url.pathname, 'This snapshot holds no answer for this request.');
  const body = await files.read(path);
  if (!body) return notFound(url.pathname, 'No such resource in this snapshot.');
  return { status: 200, body, contentType: 'application/json', cacheClass: 'mutable' };
};
