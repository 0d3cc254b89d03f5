// /openapi.json as the edge serves it (docs/edge.md, "OpenAPI document"): regenerated for the policy in
// force and the origin serving it. `build` stores a complete openapi.json for the snapshot's own policy
// and base URL, but `serve --access/--rate-limit` override the policy and the document is served from
// origins other than render.base_url; so the edge takes only the stored `components.schemas` (what needs
// zod to make) and generates the rest again (src/api/openapi.ts, zod-free). Edge-safe.
import { jsonBody, JSON_CONTENT_TYPE } from '../api/json.js';
import { openApiDocument, type Json, type OpenApiOptions } from '../api/openapi.js';
import { sha256Etag } from './etag.js';
import type { Answer, EdgePolicy } from './types.js';

/** The stored document, relative to the snapshot root. */
export const OPENAPI_FILE = 'openapi.json';
/** The request path the edge answers with the regenerated document. */
export const OPENAPI_PATH = '/openapi.json';

const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What the edge takes from a stored openapi.json: `components.schemas`, and whether the snapshot
 * carries bulk downloads (the stored document links them as `externalDocs`: bulk.enabled at build
 * time). Throws when the bytes are not a JSON document with an object of schemas there.
 */
export function storedParts(bytes: Uint8Array): { schemas: Record<string, Json>; bulk: boolean } {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new Error(`${OPENAPI_FILE} is not a JSON document: ${e instanceof Error ? e.message : String(e)}`);
  }
  const components = isJsonObject(doc) ? doc.components : undefined;
  const schemas = isJsonObject(components) ? components.schemas : undefined;
  if (!isJsonObject(schemas)) throw new Error(`${OPENAPI_FILE} has no components.schemas object`);
  const out: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    if (!isJsonObject(schema)) throw new Error(`${OPENAPI_FILE}: components.schemas.${name} is not a schema object`);
    out[name] = schema;
  }
  return { schemas: out, bulk: isJsonObject(doc) && doc.externalDocs !== undefined };
}

/** The document options of a policy (the `edge` section): access, rate limit, deprecations. */
export function policyOptions(policy: EdgePolicy): Pick<OpenApiOptions, 'access' | 'rateLimit' | 'deprecations'> {
  const rl = policy.rate_limit;
  return {
    access: policy.access,
    rateLimit: rl === 'off' ? 'off' : { requests: rl.requests, window_seconds: rl.window_seconds },
    deprecations: policy.deprecations,
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Where the document is served from: servers[0].url and the base of the problem type URIs. */
export interface OpenApiServing {
  /** The request's origin as the shim sees it. */
  serverUrl: string;
  /** The snapshot's base_url (snapshot.json), as the problems the edge answers use it. */
  baseUrl: string;
}

export type OpenApiResponder = (stored: Uint8Array, serving: OpenApiServing) => Promise<Answer>;

/**
 * Answers /openapi.json for a policy from the stored document's bytes. The last answer is kept: the
 * same stored bytes served from the same origin under the same base URL are not generated again (a
 * byte comparison of the stored file instead of parsing it, generating and hashing).
 */
export function openApiResponder(policy: EdgePolicy): OpenApiResponder {
  const options = policyOptions(policy);
  let last: { stored: Uint8Array; serverUrl: string; baseUrl: string; answer: Answer } | null = null;
  return async (stored, { serverUrl, baseUrl }) => {
    if (last && last.serverUrl === serverUrl && last.baseUrl === baseUrl && sameBytes(last.stored, stored)) return last.answer;
    const body = jsonBody(openApiDocument({ ...options, baseUrl, serverUrl, ...storedParts(stored) }));
    const answer: Answer = { status: 200, body, contentType: JSON_CONTENT_TYPE, cacheClass: 'mutable', etag: await sha256Etag(body) };
    last = { stored, serverUrl, baseUrl, answer };
    return answer;
  };
}
