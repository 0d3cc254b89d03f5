// A minimal resolver for tests of the HTTP layer alone (test/edge-http.test.ts): a pure URL rewrite
// onto exact files, so those tests need no rendered snapshot. Production resolves through
// src/edge/resolve.ts (route table, parameters, composers).
//
// Rules: a request without a query string is answered from `<path>.json` (a path that already ends in
// `.json`, such as /manifest.json or /openapi.json, is served as is); the file's bytes are the body,
// `application/json`, cache class `mutable`. Anything else is a 404 problem.
import { PROBLEM_CONTENT_TYPE } from '../../src/edge/problem.js';
import type { Answer, Resolve } from '../../src/edge/types.js';

const enc = new TextEncoder();

function notFound(pathname: string, detail: string): Answer {
  return {
    status: 404,
    body: enc.encode(JSON.stringify({ type: 'about:blank', title: 'Not Found', status: 404, detail, instance: pathname })),
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
