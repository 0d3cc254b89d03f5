// The edge shim over a published snapshot whose edge policy is the snapshot's own: the `edge` member of
// the served snapshot.json (src/edge/policy.ts), read at most every 10 s, and the handler for it,
// rebuilt only when the policy changes (docs/edge.md, "Worker" and "AWS Lambda"). Shared by the
// Cloudflare Worker (src/edge/worker.ts, over R2) and the AWS Lambda function (src/serve/lambda.ts,
// over S3), which differ only in how they read the bucket, find the client address and limit rates.
// Edge-safe: no Node APIs, no zod.
//
// What the shim answers before it has a policy (its own problems, typed about:blank since the
// snapshot's base URL is unknown, with CORS and no-store; the reason goes to the log only):
//   no snapshot.json under the prefix, or the bucket failing to answer   503, Retry-After: 10
//   snapshot.json not JSON, its edge of a bad shape, a bad API_KEYS or
//   HEALTH_MAX_AGE_SECONDS (or another bad setting of the platform)      500 internal-error
import { matchRoute } from '../api/routes/match.js';
import { createHandler, EXPOSED_HEADERS, type EdgeHandler, type RateLimitPolicyName } from './handler.js';
import { createKeyStore, parseKeyFile } from './api-keys.js';
import { edgePolicyOf } from './policy.js';
import { PROBLEM_CONTENT_TYPE, problemDoc, type ProblemDoc } from './problem.js';
import { createResolve, snapshotInfoReader, SNAPSHOT_INFO_PATH, type SnapshotInfo, type SnapshotInfoReader } from './resolve.js';
import type { Inflate } from './stored.js';
import type { FileReader, KeyStore } from './types.js';

/** Retry-After of a 503 while snapshot.json cannot be read: it is looked up again after this long. */
export const SNAPSHOT_RETRY_SECONDS = 10;

/** Where the shim's diagnostics go (the platform's log: Workers logs, CloudWatch). */
export interface EdgeLog {
  warn(message: string): void;
  error(message: string): void;
}

export interface SnapshotEdgeOptions {
  /** The published snapshot (keys under the prefix already stripped). */
  files: FileReader;
  /** The key prefix of the snapshot in its bucket, for the log only. */
  prefix: string;
  /** API_KEYS: the key hashes, JSON lines or a JSON array (src/edge/api-keys.ts); none when absent. */
  apiKeys?: string | undefined;
  /** HEALTH_MAX_AGE_SECONDS as set (a positive number of seconds); the handler's default when absent. */
  healthMaxAgeSeconds?: string | undefined;
  /** An outside limiter deciding the quota (the Worker's rate limiting bindings); see HandlerOptions. */
  rateLimit?: (identity: string, policy: RateLimitPolicyName) => Promise<boolean | null>;
  log?: EdgeLog;
  /** Decodes the files stored gzip-encoded; default DecompressionStream (the Lambda passes zlib's). */
  inflate?: Inflate;
}

/** Answers a request: (request, client address, raw target when the platform has it). */
export type SnapshotEdge = (request: Request, clientIp: string, rawTarget?: string) => Promise<Response>;

const consoleLog: EdgeLog = { warn: (m) => console.warn(m), error: (m) => console.error(m) };

/** What the settings decide, checked once. */
interface Settings {
  keys: KeyStore;
  healthMaxAgeSeconds: number | undefined;
}

function settingsOf(opts: SnapshotEdgeOptions): Settings {
  const maxAge = opts.healthMaxAgeSeconds === undefined ? undefined : Number(opts.healthMaxAgeSeconds);
  if (maxAge !== undefined && !(Number.isFinite(maxAge) && maxAge > 0)) throw new Error('HEALTH_MAX_AGE_SECONDS: expected a positive number of seconds');
  return { keys: createKeyStore(opts.apiKeys ? parseKeyFile(opts.apiKeys, 'API_KEYS') : []), healthMaxAgeSeconds: maxAge };
}

/**
 * A problem answered before any policy is known (no snapshot, or a broken configuration): CORS and
 * no-store like every answer of the edge, typed about:blank (the snapshot's base URL is unknown).
 */
function bareProblem(request: Request, doc: ProblemDoc, retryAfterSeconds?: number): Response {
  const body = JSON.stringify(doc);
  const headers = new Headers({
    'Content-Type': PROBLEM_CONTENT_TYPE,
    'Content-Length': String(new TextEncoder().encode(body).length),
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Expose-Headers': EXPOSED_HEADERS,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
  });
  if (retryAfterSeconds !== undefined) headers.set('Retry-After', String(retryAfterSeconds));
  return new Response(request.method.toUpperCase() === 'HEAD' ? null : body, { status: doc.status, headers });
}

const why = (e: unknown): string => {
  const problems = (e as { problems?: unknown }).problems; // KeyFileError and EdgePolicyError list their problems
  return Array.isArray(problems) ? problems.join('; ') : e instanceof Error ? e.message : String(e);
};

/** 500 for a broken configuration or snapshot; the reason goes to the log only, never to the client. */
export function misconfigured(request: Request, e: unknown, log: EdgeLog = consoleLog): Response {
  log.error(`peppol-snapshot edge: configuration error: ${why(e)}`);
  return bareProblem(request, problemDoc('internal-error', 'The service is misconfigured; the operator has been told.', null));
}

function unavailable(request: Request, detail: string): Response {
  return bareProblem(request, { type: 'about:blank', title: 'Service Unavailable', status: 503, detail }, SNAPSHOT_RETRY_SECONDS);
}

/**
 * The shim over a published snapshot, with the policy of its snapshot.json. The handler, and with it
 * the in-process rate-limit counters, lives as long as the policy: a newly read snapshot.json whose
 * `edge` differs by value gets a new one; a new snapshot with the same policy keeps the counters.
 * Never throws: every failure is an answer (above).
 */
export function createSnapshotEdge(opts: SnapshotEdgeOptions): SnapshotEdge {
  const log = opts.log ?? consoleLog;
  let settings: Settings | Error;
  try {
    settings = settingsOf(opts);
  } catch (e) {
    settings = e instanceof Error ? e : new Error(String(e));
  }
  const info: SnapshotInfoReader = snapshotInfoReader();
  let current: { edge: unknown; policy: string; handle: EdgeHandler } | null = null;

  function handlerFor(s: Settings, snapshot: SnapshotInfo): EdgeHandler {
    if (current && current.edge === snapshot.edge) return current.handle;
    const policy = edgePolicyOf(snapshot.edge);
    const text = JSON.stringify(policy);
    if (current && current.policy === text) {
      current.edge = snapshot.edge;
      return current.handle;
    }
    if (policy.access.mode === 'keyed' && s.keys.size === 0) log.warn('peppol-snapshot edge: the snapshot says access "keyed" but API_KEYS holds no key: every endpoint outside the keyless ones answers 403');
    const handle = createHandler({
      files: opts.files,
      resolve: createResolve({ snapshotInfo: info, ...(opts.inflate ? { inflate: opts.inflate } : {}) }),
      problemBaseUrl: async (files) => (await info(files))?.base_url ?? null,
      routeOf: (pathname) => matchRoute(pathname)?.route.id ?? null,
      policy,
      keys: s.keys,
      ...(opts.rateLimit ? { rateLimit: opts.rateLimit } : {}),
      ...(s.healthMaxAgeSeconds !== undefined ? { healthMaxAgeSeconds: s.healthMaxAgeSeconds } : {}),
      onError: (e, request) => log.error(`peppol-snapshot edge: ${request.method} ${request.url}: ${e instanceof Error ? e.message : String(e)}`),
    });
    current = { edge: snapshot.edge, policy: text, handle };
    return handle;
  }

  return async (request, clientIp, rawTarget) => {
    if (settings instanceof Error) return misconfigured(request, settings, log);
    let snapshot: SnapshotInfo | null;
    try {
      snapshot = await info(opts.files);
    } catch (e) {
      // Not JSON: a broken snapshot (500). Anything else is the bucket failing to answer (503, retry).
      if (e instanceof SyntaxError) return misconfigured(request, new Error(`${SNAPSHOT_INFO_PATH}: ${e.message}`), log);
      log.error(`peppol-snapshot edge: ${SNAPSHOT_INFO_PATH} cannot be read: ${why(e)}`);
      return unavailable(request, 'The snapshot cannot be read right now; try again later.');
    }
    if (!snapshot) {
      log.error(`peppol-snapshot edge: no ${SNAPSHOT_INFO_PATH} under the prefix ${JSON.stringify(opts.prefix)}: publish a snapshot`);
      return unavailable(request, 'No snapshot is published here yet; try again later.');
    }
    let handle: EdgeHandler;
    try {
      handle = handlerFor(settings, snapshot);
    } catch (e) {
      return misconfigured(request, e, log);
    }
    return handle(request, clientIp, rawTarget);
  };
}
