// The edge shim as a Cloudflare Worker (module syntax), bundled to dist/worker.mjs by
// `npm run build:worker` (scripts/build.mjs); deployment: templates/wrangler.jsonc and docs/edge.md.
// No Node APIs, no zod.
//
// Bindings and variables (env):
//   SNAPSHOT                R2 bucket holding the published snapshot (required)
//   SNAPSHOT_PREFIX         key prefix of the snapshot in the bucket (publish.target.prefix), default ""
//   API_KEYS                key hashes (secret): JSON lines or a JSON array, format in src/edge/keys.ts
//   HEALTH_MAX_AGE_SECONDS  /health/db reports db=false when manifest.json is older (default 7200)
//   RATE_LIMITER            optional Workers rate limiting binding: decides the quota of clients without a key
//   RATE_LIMITER_KEYED      optional Workers rate limiting binding: decides the quota of clients with a valid key
// The edge policy (CORS, rate limit, access mode and tiers, deprecations) is the `edge` member of the
// served snapshot's snapshot.json, written by `build` from publish.config.json: the policy in force is
// always the one the snapshot and its openapi.json were built with. The client address is
// CF-Connecting-IP. Rate-limit counters live in the isolate unless a binding decides (docs/edge.md).
import { matchRoute } from '../api/routes.js';
import { createHandler, EXPOSED_HEADERS, type EdgeHandler, type RateLimitPolicyName } from './handler.js';
import { createKeyStore, parseKeyFile } from './keys.js';
import { edgePolicyOf } from './policy.js';
import { PROBLEM_CONTENT_TYPE, problemDoc, type ProblemDoc } from './problem.js';
import { createResolve, snapshotInfoReader, SNAPSHOT_INFO_PATH, type SnapshotInfo, type SnapshotInfoReader } from './resolve.js';
import type { FileReader, KeyStore } from './types.js';

/** The part of Cloudflare's R2Bucket binding the shim uses. */
export interface R2BucketLike {
  get(key: string, options?: { range?: { offset: number; length: number } }): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

/** Cloudflare's rate limiting binding (`ratelimits` in the wrangler configuration). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

export interface Env {
  SNAPSHOT: R2BucketLike;
  SNAPSHOT_PREFIX?: string;
  API_KEYS?: string;
  HEALTH_MAX_AGE_SECONDS?: string;
  RATE_LIMITER?: RateLimitBinding;
  RATE_LIMITER_KEYED?: RateLimitBinding;
  /** No longer read (the policy comes from snapshot.json); its presence is logged once. */
  EDGE_POLICY?: string;
}

/** Retry-After of a 503 while snapshot.json cannot be read: it is looked up again after this long. */
const SNAPSHOT_RETRY_SECONDS = 10;

export function r2Reader(bucket: R2BucketLike, prefix = ''): FileReader {
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  return {
    async read(path: string): Promise<Uint8Array | null> {
      const obj = await bucket.get(p + path);
      return obj ? new Uint8Array(await obj.arrayBuffer()) : null;
    },
    async readPrefix(path: string, length: number): Promise<Uint8Array | null> {
      const obj = await bucket.get(p + path, { range: { offset: 0, length } });
      return obj ? new Uint8Array(await obj.arrayBuffer()) : null;
    },
  };
}

/** What the env decides, built once per isolate and again when a variable or binding changes. */
interface Site {
  signature: string;
  env: Env;
  files: FileReader;
  info: SnapshotInfoReader;
  keys: KeyStore;
  healthMaxAgeSeconds: number | undefined;
  /** The handler of the current policy; its rate-limit counters live as long as the policy. */
  current: { edge: unknown; policy: string; handle: EdgeHandler } | null;
}

let site: Site | null = null;

function siteFor(env: Env): Site {
  const signature = JSON.stringify([env.SNAPSHOT_PREFIX, env.API_KEYS, env.HEALTH_MAX_AGE_SECONDS, env.RATE_LIMITER !== undefined, env.RATE_LIMITER_KEYED !== undefined]);
  if (site && site.signature === signature) return site;
  const maxAge = env.HEALTH_MAX_AGE_SECONDS === undefined ? undefined : Number(env.HEALTH_MAX_AGE_SECONDS);
  if (maxAge !== undefined && !(Number.isFinite(maxAge) && maxAge > 0)) throw new Error('HEALTH_MAX_AGE_SECONDS: expected a positive number of seconds');
  if (env.EDGE_POLICY !== undefined) console.warn('peppol-snapshot edge: EDGE_POLICY is ignored: the edge policy comes from the snapshot (snapshot.json, written by build from publish.config.json)');
  site = {
    signature,
    env,
    files: r2Reader(env.SNAPSHOT, env.SNAPSHOT_PREFIX ?? ''),
    info: snapshotInfoReader(),
    keys: createKeyStore(env.API_KEYS ? parseKeyFile(env.API_KEYS, 'API_KEYS') : []),
    healthMaxAgeSeconds: maxAge,
    current: null,
  };
  return site;
}

/** The rate limiting bindings as the handler's outside limiter: each decides for its class of client. */
function bindingLimiter(env: Env): ((identity: string, policy: RateLimitPolicyName) => Promise<boolean | null>) | undefined {
  const anonymous = env.RATE_LIMITER;
  const keyed = env.RATE_LIMITER_KEYED;
  if (!anonymous && !keyed) return undefined;
  return async (identity, policy) => {
    const binding = policy === 'keyed' ? keyed : anonymous;
    return binding ? (await binding.limit({ key: identity })).success : null;
  };
}

/**
 * The handler for the snapshot's policy. It is rebuilt only when the policy changes (a new snapshot
 * with another `edge`): snapshot.json is re-read at most every 10 s and compared by value.
 */
function handlerFor(s: Site, info: SnapshotInfo): EdgeHandler {
  if (s.current && s.current.edge === info.edge) return s.current.handle;
  const policy = edgePolicyOf(info.edge);
  const text = JSON.stringify(policy);
  if (s.current && s.current.policy === text) {
    s.current.edge = info.edge;
    return s.current.handle;
  }
  if (policy.access.mode === 'keyed' && s.keys.size === 0) console.warn('peppol-snapshot edge: the snapshot says access "keyed" but API_KEYS holds no key: every endpoint outside the keyless ones answers 403');
  const rateLimit = bindingLimiter(s.env);
  const handle = createHandler({
    files: s.files,
    resolve: createResolve({ snapshotInfo: s.info }),
    problemBaseUrl: async (files) => (await s.info(files))?.base_url ?? null,
    routeOf: (pathname) => matchRoute(pathname)?.route.id ?? null,
    policy,
    keys: s.keys,
    ...(rateLimit ? { rateLimit } : {}),
    ...(s.healthMaxAgeSeconds !== undefined ? { healthMaxAgeSeconds: s.healthMaxAgeSeconds } : {}),
    onError: (e, request) => console.error(`peppol-snapshot edge: ${request.method} ${request.url}: ${e instanceof Error ? e.message : String(e)}`),
  });
  s.current = { edge: info.edge, policy: text, handle };
  return handle;
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

function misconfigured(request: Request, e: unknown): Response {
  // The reason goes to the Worker log only, never to the client.
  console.error(`peppol-snapshot edge: configuration error: ${why(e)}`);
  return bareProblem(request, problemDoc('internal-error', 'The service is misconfigured; the operator has been told.', null));
}

function unavailable(request: Request, detail: string): Response {
  return bareProblem(request, { type: 'about:blank', title: 'Service Unavailable', status: 503, detail }, SNAPSHOT_RETRY_SECONDS);
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    let s: Site;
    try {
      s = siteFor(env);
    } catch (e) {
      return misconfigured(request, e);
    }
    let info: SnapshotInfo | null;
    try {
      info = await s.info(s.files);
    } catch (e) {
      // Not JSON: a broken snapshot (500). Anything else is the bucket failing to answer (503, retry).
      if (e instanceof SyntaxError) return misconfigured(request, new Error(`${SNAPSHOT_INFO_PATH}: ${e.message}`));
      console.error(`peppol-snapshot edge: ${SNAPSHOT_INFO_PATH} cannot be read: ${why(e)}`);
      return unavailable(request, 'The snapshot cannot be read right now; try again later.');
    }
    if (!info) {
      console.error(`peppol-snapshot edge: no ${SNAPSHOT_INFO_PATH} under the prefix ${JSON.stringify(env.SNAPSHOT_PREFIX ?? '')}: publish a snapshot`);
      return unavailable(request, 'No snapshot is published here yet; try again later.');
    }
    let handle: EdgeHandler;
    try {
      handle = handlerFor(s, info);
    } catch (e) {
      return misconfigured(request, e);
    }
    return handle(request, request.headers.get('CF-Connecting-IP') ?? 'unknown');
  },
};
