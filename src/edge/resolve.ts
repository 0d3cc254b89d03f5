// The shim's resolver: request URL -> route (src/api/routes/table.ts) -> canonical parameters -> the route's
// composer (src/edge/compose) over the snapshot's files -> body bytes (src/api/json.ts). Edge-safe.
// The problem type pages (`/problems/{name}`) are the one route answered from code: generated from the
// problem catalogue (src/api/problem-pages.ts) under the snapshot's base URL.
//
// The snapshot's clock and base URL come from `snapshot.json` ({generated_at, base_url, edge}, written
// by `build`), read at most every SNAPSHOT_INFO_TTL_MS: "today", "the last 24 hours" and staleness are
// those of the snapshot, exactly as the oracle computed them at build time.
import { HTML_CONTENT_TYPE, jsonBody, JSON_CONTENT_TYPE } from '../api/json.js';
import { PROBLEM_PAGE_HEADERS, problemTypePage } from '../api/problem-pages.js';
import { isProblemName, PROBLEM_CONTENT_TYPE } from '../api/problems.js';
import { finishResult, paramErrorsOf, problemOf, type ApiResult } from '../api/result.js';
import { matchRoute } from '../api/routes/match.js';
import { parseRequest } from '../api/routes/request.js';
import type { RouteId } from '../api/routes/table.js';
import { compose } from './compose/index.js';
import type { ReadStats } from './list-reader.js';
import type { Inflate } from './stored.js';
import type { Answer, EdgePolicy, FileReader, Resolve } from './types.js';

export const SNAPSHOT_INFO_PATH = 'snapshot.json';
const SNAPSHOT_INFO_TTL_MS = 10_000;

export interface SnapshotInfo {
  generated_at: string;
  base_url: string;
  /**
   * The `edge` section of the configuration the snapshot was built with (validated there): the
   * Worker's policy (src/edge/policy.ts). Absent in snapshots built before build wrote it.
   */
  edge?: EdgePolicy;
}

const dec = new TextDecoder();

/**
 * Files served as they are, by request path: the API catalog. (/openapi.json is the HTTP layer's: it is
 * regenerated for the policy in force, src/edge/openapi.ts.)
 */
const STATIC_FILES: Record<string, { path: string; contentType: string }> = {
  '/.well-known/api-catalog': { path: '.well-known/api-catalog', contentType: 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"' },
};

/** The route whose answers are generated from the problem catalogue, not read (src/api/problem-pages.ts). */
const PROBLEM_TYPE_ROUTE: RouteId = 'discovery.problem_type';

/** The page of a problem type; `name` is the route's parsed parameter, one of the catalogue's names. */
function problemTypeAnswer(name: unknown, baseUrl: string): Answer {
  if (!isProblemName(name)) throw new Error(`${PROBLEM_TYPE_ROUTE}: ${JSON.stringify(name)} is not a problem type name`);
  return {
    status: 200,
    body: new TextEncoder().encode(problemTypePage(name, baseUrl)),
    contentType: HTML_CONTENT_TYPE,
    cacheClass: 'mutable',
    headers: { ...PROBLEM_PAGE_HEADERS },
  };
}

export type SnapshotInfoReader = (files: FileReader) => Promise<SnapshotInfo | null>;

/** Reads `snapshot.json`, at most every SNAPSHOT_INFO_TTL_MS; null while the snapshot has none. */
export function snapshotInfoReader(ttlMs = SNAPSHOT_INFO_TTL_MS): SnapshotInfoReader {
  let info: { value: SnapshotInfo; at: number } | null = null;
  return async (files) => {
    const t = Date.now();
    if (info && t - info.at < ttlMs && t >= info.at) return info.value;
    const bytes = await files.read(SNAPSHOT_INFO_PATH);
    if (!bytes) return null;
    const value = JSON.parse(dec.decode(bytes)) as SnapshotInfo;
    info = { value, at: t };
    return value;
  };
}

export interface ResolverOptions {
  /** Receives the read cost of every composed answer (benchmarks, tests). */
  onStats?: (routeId: string, stats: ReadStats) => void;
  /** Shared with the HTTP layer (its problems' type URIs), so snapshot.json is read once per TTL. */
  snapshotInfo?: SnapshotInfoReader;
  /** Decodes the files stored gzip-encoded; default DecompressionStream (Node passes zlib's: src/serve). */
  inflate?: Inflate;
}

export function createResolve(opts: ResolverOptions = {}): Resolve {
  const snapshotInfo = opts.snapshotInfo ?? snapshotInfoReader();

  return async ({ url }, files) => {
    const stat = STATIC_FILES[url.pathname];
    if (stat) {
      const body = await files.read(stat.path);
      if (body) return { status: 200, body, contentType: stat.contentType, cacheClass: 'mutable' };
    }
    const snap = await snapshotInfo(files);
    if (!snap) throw new Error(`the snapshot has no ${SNAPSHOT_INFO_PATH}: run peppol-snapshot build`);
    const nowMs = Date.parse(snap.generated_at);
    const match = matchRoute(url.pathname);
    let result: ApiResult;
    let contentType = JSON_CONTENT_TYPE;
    if (!match) result = problemOf('not-found', 'No endpoint of this API has this path; see /openapi.json for the list.');
    else {
      const parsed = parseRequest(match.route, match.pathParams, url.searchParams, { now: nowMs });
      if (!parsed.ok) result = paramErrorsOf(parsed.errors);
      else if (match.route.id === PROBLEM_TYPE_ROUTE) return problemTypeAnswer(parsed.params.name, snap.base_url);
      else {
        const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
        result = await compose(match.route, parsed.params, { read: (p) => files.read(p), nowMs, stats, ...(opts.inflate ? { inflate: opts.inflate } : {}) });
        opts.onStats?.(match.route.id, stats);
      }
      contentType = match.route.contentType;
    }
    const done = finishResult(result, { baseUrl: snap.base_url, instance: url.pathname });
    if (done.status === 200) return { status: 200, body: jsonBody(done.body), contentType, cacheClass: 'mutable' } satisfies Answer;
    return { status: done.status, body: jsonBody(done.problem), contentType: PROBLEM_CONTENT_TYPE, cacheClass: 'mutable' } satisfies Answer;
  };
}
