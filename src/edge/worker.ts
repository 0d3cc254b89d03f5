// The edge shim as a Cloudflare Worker (module syntax), bundled to dist/worker.mjs by
// scripts/build.mjs; deployment: templates/wrangler.toml and docs/edge.md. No Node APIs.
//
// Bindings and variables (env):
//   SNAPSHOT                R2 bucket holding the published snapshot (required)
//   SNAPSHOT_PREFIX         key prefix of the snapshot in the bucket (publish.target.prefix), default ""
//   EDGE_POLICY             JSON of the `edge` section of publish.config.json; default: the defaults
//   API_KEYS                key hashes (secret): JSON lines or a JSON array, format in src/edge/keys.ts
//   HEALTH_MAX_AGE_SECONDS  /health/db reports db=false when manifest.json is older (default 7200)
// The client address is CF-Connecting-IP. Rate-limit counters live in the isolate (docs/edge.md).
import { matchRoute } from '../api/routes.js';
import { createResolve, snapshotInfoReader } from './resolve.js';
import { createHandler, type EdgeHandler } from './handler.js';
import { createKeyStore, parseKeyFile } from './keys.js';
import { parseEdgePolicy } from './policy.js';
import { PROBLEM_CONTENT_TYPE, problemDoc } from './problem.js';
import type { FileReader } from './types.js';

/** The part of Cloudflare's R2Bucket binding the shim uses. */
export interface R2BucketLike {
  get(key: string, options?: { range?: { offset: number; length: number } }): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

export interface Env {
  SNAPSHOT: R2BucketLike;
  SNAPSHOT_PREFIX?: string;
  EDGE_POLICY?: string;
  API_KEYS?: string;
  HEALTH_MAX_AGE_SECONDS?: string;
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
  };
}

// One handler per isolate (its rate-limit counters live as long as the isolate); rebuilt when the
// configuration strings change.
let cached: { signature: string; handler: EdgeHandler } | null = null;

function handlerFor(env: Env): EdgeHandler {
  const signature = JSON.stringify([env.SNAPSHOT_PREFIX, env.EDGE_POLICY, env.API_KEYS, env.HEALTH_MAX_AGE_SECONDS]);
  if (cached && cached.signature === signature) return cached.handler;
  const maxAge = env.HEALTH_MAX_AGE_SECONDS === undefined ? undefined : Number(env.HEALTH_MAX_AGE_SECONDS);
  if (maxAge !== undefined && !(Number.isFinite(maxAge) && maxAge > 0)) throw new Error('HEALTH_MAX_AGE_SECONDS: expected a positive number of seconds');
  const info = snapshotInfoReader();
  const handler = createHandler({
    files: r2Reader(env.SNAPSHOT, env.SNAPSHOT_PREFIX ?? ''),
    resolve: createResolve({ snapshotInfo: info }),
    problemBaseUrl: async (files) => (await info(files))?.base_url ?? null,
    routeOf: (pathname) => matchRoute(pathname)?.route.id ?? null,
    policy: parseEdgePolicy(env.EDGE_POLICY ?? ''),
    keys: createKeyStore(env.API_KEYS ? parseKeyFile(env.API_KEYS, 'API_KEYS') : []),
    ...(maxAge !== undefined ? { healthMaxAgeSeconds: maxAge } : {}),
    onError: (e, request) => console.error(`peppol-snapshot edge: ${request.method} ${request.url}: ${e instanceof Error ? e.message : String(e)}`),
  });
  cached = { signature, handler };
  return handler;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    let handler: EdgeHandler;
    try {
      handler = handlerFor(env);
    } catch (e) {
      // A misconfigured Worker answers 500 with CORS, and says why in the log (never to the client).
      const problems = (e as { problems?: unknown }).problems;
      const why = Array.isArray(problems) ? problems.join('; ') : e instanceof Error ? e.message : String(e);
      console.error(`peppol-snapshot edge: configuration error: ${why}`);
      const body = JSON.stringify(problemDoc('internal-error', 'The service is misconfigured; the operator has been told.', null));
      return new Response(body, {
        status: 500,
        headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store' },
      });
    }
    return handler(request, request.headers.get('CF-Connecting-IP') ?? 'unknown');
  },
};
