// Helpers for tests over a whole built snapshot: what the oracle (the query functions over SQLite)
// answers for a request URL, exactly as the edge shim must answer it, and a cheap copy of a feed
// directory.
import fs from 'node:fs';
import path from 'node:path';
import { jsonText } from '../../src/api/json.js';
import { PROBLEM_CONTENT_TYPE } from '../../src/api/problems.js';
import { isDataRoute } from '../../src/api/handlers.js';
import { queryOf } from '../../src/api/query/index.js';
import { finishResult, paramErrorsOf, type ApiResult } from '../../src/api/result.js';
import { matchRoute } from '../../src/api/routes/match.js';
import { parseRequest } from '../../src/api/routes/request.js';
import type { AnyRoute } from '../../src/api/routes/types.js';
import type { Db } from '../../src/db/index.js';
import { ramTempDir } from './feeds.js';

/**
 * A new temporary directory for a built snapshot (tens of thousands of small files), removed after the
 * test file's tests. On a RAM disk (/dev/shm) when there is one with room to spare: writing and above
 * all deleting that many files on a real disk costs more than the test itself.
 */
export function snapshotTempDir(prefix: string): string {
  return ramTempDir(prefix);
}

export interface OracleAnswer {
  route: AnyRoute;
  status: number;
  contentType: string;
  /** The body text the shim must send, byte for byte (jsonBody of the finished result). */
  text: string;
}

/** `snapshot.json` of a built snapshot: the clock and the base URL the shim answers with. */
export function snapshotInfo(out: string): { generated_at: string; base_url: string; edge?: unknown; nowMs: number } {
  const info = JSON.parse(fs.readFileSync(path.join(out, 'snapshot.json'), 'utf8')) as { generated_at: string; base_url: string; edge?: unknown };
  return { ...info, nowMs: Date.parse(info.generated_at) };
}

/**
 * The oracle's answer to a request URL of a data route: matchRoute, parseRequest with the snapshot's
 * clock, the route's query function (or the parameter errors' problem), finishResult with the base URL
 * and the request path as instance. Throws for a path no route matches or a route without a query
 * function (health, discovery): those are checked otherwise.
 */
export function oracleAnswer(db: Db, url: URL, nowMs: number, baseUrl: string): OracleAnswer {
  const match = matchRoute(url.pathname);
  if (!match) throw new Error(`oracleAnswer: no route has the path ${url.pathname}`);
  const route = match.route;
  if (!isDataRoute(route.id)) throw new Error(`oracleAnswer: route ${route.id} has no query function`);
  const query = queryOf(route.id);
  const parsed = parseRequest(route, match.pathParams, url.searchParams, { now: nowMs });
  const result: ApiResult = parsed.ok ? query(db, parsed.params, nowMs) : paramErrorsOf(parsed.errors);
  const done = finishResult(result, { baseUrl, instance: url.pathname });
  return done.status === 200
    ? { route, status: 200, contentType: route.contentType, text: jsonText(done.body) }
    : { route, status: done.status, contentType: PROBLEM_CONTENT_TYPE, text: jsonText(done.problem) };
}

/** A FileReader over a snapshot directory (missing files read as null). */
export function snapshotReader(out: string): { read(p: string): Promise<Uint8Array | null> } {
  return {
    async read(p: string) {
      try {
        return new Uint8Array(await fs.promises.readFile(path.join(out, p)));
      } catch {
        return null;
      }
    },
  };
}

/**
 * Copies a demo feed directory. Segment files are hard-linked (falling back to a copy): a written
 * segment never changes and `demo` replaces files by renaming a temporary file into place, so the
 * source's segments are never modified through the copy. Every other file is copied.
 */
export function copyFeedDir(src: string, dst: string): void {
  const walk = (from: string, to: string, inSegments: boolean): void => {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
      const a = path.join(from, e.name);
      const b = path.join(to, e.name);
      if (e.isDirectory()) walk(a, b, inSegments || e.name === 'segments');
      else if (inSegments) {
        try {
          fs.linkSync(a, b);
        } catch {
          fs.copyFileSync(a, b);
        }
      } else fs.copyFileSync(a, b);
    }
  };
  walk(src, dst, false);
}
