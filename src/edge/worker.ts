// The edge shim as a Cloudflare Worker (module syntax), bundled to dist/worker.mjs by
// `npm run build:worker` (scripts/build.mjs); deployment: templates/wrangler.jsonc and docs/edge.md.
// No Node APIs, no zod.
//
// Bindings and variables (env):
//   SNAPSHOT                R2 bucket holding the published snapshot (required)
//   SNAPSHOT_PREFIX         key prefix of the snapshot in the bucket (publish.target.prefix), default ""
//   API_KEYS                key hashes (secret): JSON lines or a JSON array, format in src/edge/api-keys.ts
//   HEALTH_MAX_AGE_SECONDS  /health/db reports db=false when manifest.json is older (default 7200)
//   RATE_LIMITER            optional Workers rate limiting binding: decides the quota of clients without a key
//   RATE_LIMITER_KEYED      optional Workers rate limiting binding: decides the quota of clients with a valid key
// The edge policy (CORS, rate limit, access mode and tiers, deprecations) is the `edge` member of the
// served snapshot's snapshot.json, written by `build` from publish.config.json: the policy in force is
// always the one the snapshot and its openapi.json were built with (src/edge/snapshot-policy.ts, shared
// with the AWS Lambda function). The client address is CF-Connecting-IP. Rate-limit counters live in
// the isolate unless a binding decides (docs/edge.md).
import type { RateLimitPolicyName } from './handler.js';
import { createSnapshotEdge, type SnapshotEdge } from './snapshot-policy.js';
import type { FileReader, FileStat } from './types.js';

/** The part of Cloudflare's R2Bucket binding the shim uses. */
export interface R2BucketLike {
  get(
    key: string,
    options?: { range?: { offset: number; length: number }; onlyIf?: { etagMatches: string } },
  ): Promise<{ arrayBuffer(): Promise<ArrayBuffer>; body?: ReadableStream<Uint8Array> } | null>;
  head(key: string): Promise<{ size: number; httpEtag: string } | null>;
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
    async stat(path: string): Promise<FileStat | null> {
      const head = await bucket.head(p + path);
      return head ? { size: head.size, etag: head.httpEtag } : null;
    },
    async readRange(path: string, start: number, length: number, etag: string): Promise<ReadableStream<Uint8Array> | null> {
      // R2 answers a failed precondition with the object's metadata and no body.
      const obj = await bucket.get(p + path, { range: { offset: start, length }, onlyIf: { etagMatches: etag.replace(/^"|"$/g, '') } });
      return obj?.body ?? null;
    },
  };
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
 * The shim for the env, built once per isolate and again when a variable or binding changes; the
 * policy and the handler for it come from the served snapshot (src/edge/snapshot-policy.ts).
 */
let site: { signature: string; edge: SnapshotEdge } | null = null;

function edgeFor(env: Env): SnapshotEdge {
  const signature = JSON.stringify([env.SNAPSHOT_PREFIX, env.API_KEYS, env.HEALTH_MAX_AGE_SECONDS, env.RATE_LIMITER !== undefined, env.RATE_LIMITER_KEYED !== undefined]);
  if (site && site.signature === signature) return site.edge;
  if (env.EDGE_POLICY !== undefined) console.warn('peppol-snapshot edge: EDGE_POLICY is ignored: the edge policy comes from the snapshot (snapshot.json, written by build from publish.config.json)');
  const prefix = env.SNAPSHOT_PREFIX ?? '';
  const rateLimit = bindingLimiter(env);
  const edge = createSnapshotEdge({
    files: r2Reader(env.SNAPSHOT, prefix),
    prefix,
    apiKeys: env.API_KEYS,
    healthMaxAgeSeconds: env.HEALTH_MAX_AGE_SECONDS,
    ...(rateLimit ? { rateLimit } : {}),
  });
  site = { signature, edge };
  return edge;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return edgeFor(env)(request, request.headers.get('CF-Connecting-IP') ?? 'unknown');
  },
};
