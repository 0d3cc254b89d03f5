// The OpenAPI 3.1 document, generated from the route table and the component schemas (docs/api.md,
// "Discovery"). Edge-safe and zod-free: the component schemas come in as data (JSON Schema), made from
// the zod response schemas by `componentSchemas()` (src/api/openapi-schemas.ts) at build time, and read
// back from the stored openapi.json by the edge, which regenerates the document for the policy in force
// and the origin serving it (src/edge/openapi.ts).
//
// - components.schemas: as given (one per RESOURCE_SCHEMAS entry, nested resources as $refs);
// - one GET operation per route; operationId = the route id in camelCase, `x-route-id` = the route id;
//   parameters from the route's ParamDefs (comma lists as style=form, explode=false arrays);
// - responses: 200 with the route's schema and content type, 400 when the route has a parameter or
//   rule that can fail, 404 for the route's not-found kinds, 403 in access mode "keyed" outside the
//   keyless endpoints, 429 when a rate limit is configured; all errors application/problem+json;
// - security: bearer (`Authorization: Bearer <key>`) and `X-API-Key`; optional in mode "open" and on
//   keyless endpoints, required otherwise; `x-access-tier` names the tier an endpoint needs in "keyed".
import { matchPathPattern } from '../config/patterns.js';
import { PROBLEM_CATALOGUE, PROBLEM_CONTENT_TYPE, problemTypeUri, type ProblemName } from './problems.js';
import { badRequestParams, notFoundProblems, ruleSentence } from './routes/request.js';
import { ROUTE_LIST } from './routes/table.js';
import type { AnyRoute, ParamDef } from './routes/types.js';
import type { JsonSchema } from './params.js';

export const OPENAPI_VERSION = '3.1.1';
export const API_TITLE = 'Peppol Network Monitoring API';
export const OPENAPI_MEDIA_TYPE = 'application/vnd.oai.openapi+json;version=3.1';

export type Tier = 'network' | 'market';

export interface OpenApiOptions {
  /** The snapshot's render.base_url: the base of the problem type URIs (`{baseUrl}/problems/<name>`). */
  baseUrl: string;
  /** servers[0].url: the origin serving the document (the edge: the request's; build: render.base_url). */
  serverUrl: string;
  /** edge.access */
  access: { mode: 'open' | 'keyed'; tiers: { network: readonly string[]; market: readonly string[] } };
  /** edge.rate_limit */
  rateLimit: { requests: number; window_seconds: number } | 'off';
  /** edge.deprecations: matching operations are marked deprecated. */
  deprecations?: ReadonlyArray<{ path: string }>;
  /** info.version (default "1"). */
  version?: string;
  /** components.schemas: JSON Schema 2020-12 per resource name (componentSchemas() at build time). */
  schemas: Readonly<Record<string, Json>>;
  /**
   * The snapshot carries bulk downloads (config bulk.enabled; docs/bulk.md): externalDocs links the
   * newest copy's datapackage.json. Default true (the edge regenerates the document without knowing).
   */
  bulk?: boolean;
}

/** The newest bulk copy's Frictionless data package under a base URL (docs/bulk.md). */
export function bulkPackageUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/bulk/latest/datapackage.json`;
}

export type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

function stripBase(url: string): string {
  return url.replace(/\/+$/, '');
}

/** operationId: the route id in camelCase (`hosts.detail` -> `hostsDetail`). */
export function operationId(routeId: string): string {
  return routeId.replace(/[._]([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** The tier an endpoint needs in keyed mode: the highest tier listing it (by route id or path pattern), else any key. */
export function requiredTier(route: AnyRoute, tiers: OpenApiOptions['access']['tiers']): Tier | 'any' {
  const listed = (entries: readonly string[]) => entries.some((e) => e === route.id || (e.startsWith('/') && matchPathPattern(e, route.path)));
  if (listed(tiers.market)) return 'market';
  if (listed(tiers.network)) return 'network';
  return 'any';
}

function parameterObject(name: string, def: ParamDef): Json {
  const base: JsonSchema = { ...def.type.schema };
  const schema: JsonSchema = def.type.list ? { type: 'array', items: base } : base;
  if (def.default !== undefined) schema.default = def.type.list ? def.type.print(def.default).split(',') : def.default;
  const p: Json = { name, in: def.in, required: def.in === 'path' || def.required, description: def.description, schema };
  if (def.type.list) {
    p.style = 'form';
    p.explode = false;
  }
  return p;
}

function problemResponse(description: string, names: readonly ProblemName[], baseUrl: string, headers: Json): Json {
  return {
    description,
    headers,
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: ref('Problem'),
        'x-problem-types': names.map((n) => problemTypeUri(n, baseUrl)),
      },
    },
  };
}

const quote = (names: readonly string[]): string =>
  names.length <= 1 ? names.map((n) => `\`${n}\``).join('') : `${names.slice(0, -1).map((n) => `\`${n}\``).join(', ')} or \`${names[names.length - 1]}\``;

/** The OpenAPI 3.1 document of the API for a configuration. */
export function openApiDocument(opts: OpenApiOptions): Json {
  const base = stripBase(opts.baseUrl);
  const keyed = opts.access.mode === 'keyed';
  const limited = opts.rateLimit !== 'off';
  const commonHeaders: Json = { 'Access-Control-Allow-Origin': { $ref: '#/components/headers/Access-Control-Allow-Origin' } };
  if (limited) {
    for (const h of ['RateLimit-Policy', 'RateLimit', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
      commonHeaders[h] = { $ref: `#/components/headers/${h}` };
    }
  }
  const okHeaders: Json = { ...commonHeaders, ETag: { $ref: '#/components/headers/ETag' } };
  const optionalAuth = [{}, { bearerAuth: [] }, { apiKeyHeader: [] }];

  const paths: Record<string, Json> = {};
  for (const route of ROUTE_LIST) {
    const responses: Json = {
      '200': { description: route.summary, headers: okHeaders, content: { [route.contentType]: { schema: ref(route.response) } } },
    };
    const bad = badRequestParams(route);
    if (bad.length > 0) {
      const defs = Object.values(route.params);
      const names: ProblemName[] = [];
      if (defs.some((d) => d.in === 'query' && d.type.strict && d.invalid === 'invalid-parameter') || (route.rules ?? []).length > 0) names.push('invalid-parameter');
      if (defs.some((d) => d.invalid === 'invalid-cursor')) names.push('invalid-cursor');
      if (defs.some((d) => d.in === 'query' && d.required)) names.push('missing-parameter');
      if (defs.some((d) => d.in === 'path' && d.invalid === 'invalid-identifier')) names.push('invalid-identifier');
      responses['400'] = problemResponse(`Invalid ${quote(bad)}.`, names, base, commonHeaders);
    }
    const tier = requiredTier(route, opts.access.tiers);
    if (keyed && !route.keyless) {
      const what = tier === 'any' ? 'a paid key (either tier)' : `a key of the ${tier} tier`;
      responses['403'] = problemResponse(`No valid API key, or a key below the endpoint's tier: needs ${what}.`, ['api-key-required', 'insufficient-tier'], base, commonHeaders);
    }
    const nf = notFoundProblems(route);
    if (nf.length > 0) responses['404'] = problemResponse(nf.map((n) => PROBLEM_CATALOGUE[n].title).join('; '), nf, base, commonHeaders);
    if (limited) {
      responses['429'] = problemResponse('Rate limit exceeded.', ['quota-exceeded'], base, { ...commonHeaders, 'Retry-After': { $ref: '#/components/headers/Retry-After' } });
    }
    const op: Json = {
      operationId: operationId(route.id),
      'x-route-id': route.id,
      tags: [route.tag],
      summary: route.summary,
      description: [route.description, ...(route.rules ?? []).map(ruleSentence)].join(' '),
      parameters: Object.entries(route.params).map(([name, def]) => parameterObject(name, def)),
      responses,
    };
    if (route.keyless) op.security = optionalAuth;
    else if (keyed) op['x-access-tier'] = tier;
    if ((opts.deprecations ?? []).some((d) => matchPathPattern(d.path, route.path))) op.deprecated = true;
    paths[route.path] = { get: op };
  }

  const rl = opts.rateLimit;
  const doc: Json = {
    openapi: OPENAPI_VERSION,
    info: {
      title: API_TITLE,
      version: opts.version ?? '1',
      description:
        'Read-only open data about the Peppol e-invoicing network: host liveness, incidents, participants, providers, seats, change events, anomalies, SML/SMK zones. ' +
        'All successful responses are JSON; all errors are RFC 9457 application/problem+json. Lists return { items, next_cursor } with opaque cursors.' +
        (keyed
          ? ' Access mode "keyed": endpoints other than the keyless ones need a paid API key (Authorization: Bearer or X-API-Key).'
          : ' Access mode "open": every endpoint is public; an API key is optional and only raises the rate limit.') +
        (rl !== 'off' ? ` Rate limit: ${rl.requests} requests per ${rl.window_seconds} seconds per client identity.` : ''),
    },
    ...(opts.bulk === false
      ? {}
      : { externalDocs: { description: 'Bulk downloads of the same data, once a day: a Frictionless Data Package of NDJSON, Parquet, CSV and SQLite files (with SHA256SUMS beside it).', url: bulkPackageUrl(base) } }),
    servers: [{ url: stripBase(opts.serverUrl) }],
    tags: [...new Set(ROUTE_LIST.map((r) => r.tag))].map((name) => ({ name })),
    security: keyed ? [{ bearerAuth: [] }, { apiKeyHeader: [] }] : optionalAuth,
    paths,
    components: {
      schemas: { ...opts.schemas },
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'X-API-Key: <API_KEY>' },
      },
      headers: {
        'Access-Control-Allow-Origin': { description: 'Always "*".', schema: { type: 'string', const: '*' } },
        ETag: { description: 'Strong validator of the body.', schema: { type: 'string' } },
        'RateLimit-Policy': { description: 'Quota policy (IETF draft-ietf-httpapi-ratelimit-headers).', schema: { type: 'string' } },
        RateLimit: { description: 'Remaining quota and reset (IETF draft-ietf-httpapi-ratelimit-headers).', schema: { type: 'string' } },
        'RateLimit-Limit': { description: 'Requests allowed in the window.', schema: { type: 'integer' } },
        'RateLimit-Remaining': { description: 'Requests left in the window.', schema: { type: 'integer' } },
        'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
        'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
      },
    },
  };
  return doc;
}
