// The OpenAPI 3.1 document (src/api/openapi.ts, with the component schemas of src/api/openapi-schemas.ts),
// the RFC 9727 API catalog, and the body serialiser (src/api/json.ts): every route is an operation with
// its parameters, 200 schema and problem responses; every $ref resolves; the component schemas accept
// what the zod schemas accept and reject the same structural mistakes; access mode and rate limit
// change security, 403 and 429 as configured; servers and problem type URIs have bases of their own.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBody, jsonText } from '../src/api/json.js';
import { openApiDocument, operationId, type OpenApiOptions } from '../src/api/openapi.js';
import { apiCatalog, componentSchemas } from '../src/api/openapi-schemas.js';
import { PROBLEM_NAMES, problemTypeUri } from '../src/api/problems.js';
import { badRequestParams, notFoundProblems } from '../src/api/routes/request.js';
import { ROUTE_LIST } from '../src/api/routes/table.js';
import { EXAMPLES } from '../src/api/schemas/examples.js';
import { ApiCatalog, OpenApiDocument, RESOURCE_SCHEMAS, type ResourceName } from '../src/api/schemas/index.js';
import { DEFAULT_MARKET_TIER, DEFAULT_NETWORK_TIER } from '../src/config/schema.js';

type Json = Record<string, unknown>;
const BASE = 'https://api.example.org';
const SERVER = 'http://127.0.0.1:8787';

const OPEN: OpenApiOptions = { baseUrl: `${BASE}/`, serverUrl: SERVER, schemas: componentSchemas(), access: { mode: 'open', tiers: { network: DEFAULT_NETWORK_TIER, market: DEFAULT_MARKET_TIER } }, rateLimit: { requests: 60, window_seconds: 60 } };
const KEYED: OpenApiOptions = { ...OPEN, access: { mode: 'keyed', tiers: OPEN.access.tiers } };

function resolvePointer(doc: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`external ref ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Json)[k] : undefined), doc);
}

function allRefs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) v.forEach((x) => allRefs(x, out));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else allRefs(x, out);
    }
  }
  return out;
}

/**
 * A small JSON Schema 2020-12 validator for the keywords the generated components use (no ajv in the
 * project). Unknown keywords fail loudly, so a schema this cannot judge is not silently accepted.
 */
function validates(doc: Json, schema: Json, v: unknown): boolean {
  const known = new Set([
    '$ref', 'type', 'enum', 'const', 'anyOf', 'properties', 'required', 'additionalProperties', 'items', 'pattern', 'minimum',
    'maximum', 'exclusiveMinimum', 'minLength', 'maxLength', 'maxItems', 'minItems', 'format', 'multipleOf', 'propertyNames', 'description', 'examples', 'default',
  ]);
  for (const k of Object.keys(schema)) if (!known.has(k)) throw new Error(`validator: unsupported keyword ${k}`);
  if (schema.$ref) return validates(doc, resolvePointer(doc, schema.$ref as string) as Json, v);
  if (schema.anyOf && !(schema.anyOf as Json[]).some((s) => validates(doc, s, v))) return false;
  if ('const' in schema && v !== schema.const) return false;
  if (schema.enum && !(schema.enum as unknown[]).includes(v)) return false;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    const actual = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
    if (!types.some((t) => (t === 'integer' ? typeof v === 'number' && Number.isInteger(v) : t === actual))) return false;
  }
  if (typeof v === 'string') {
    if (schema.pattern && !new RegExp(schema.pattern as string, 'u').test(v)) return false;
    if (typeof schema.minLength === 'number' && v.length < schema.minLength) return false;
    if (typeof schema.maxLength === 'number' && v.length > schema.maxLength) return false;
  }
  if (typeof v === 'number') {
    if (typeof schema.minimum === 'number' && v < schema.minimum) return false;
    if (typeof schema.maximum === 'number' && v > schema.maximum) return false;
    if (typeof schema.exclusiveMinimum === 'number' && v <= schema.exclusiveMinimum) return false;
    if (typeof schema.multipleOf === 'number' && v % schema.multipleOf !== 0) return false;
  }
  if (Array.isArray(v)) {
    if (typeof schema.maxItems === 'number' && v.length > schema.maxItems) return false;
    if (typeof schema.minItems === 'number' && v.length < schema.minItems) return false;
    if (schema.items && !v.every((x) => validates(doc, schema.items as Json, x))) return false;
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Json;
    for (const r of (schema.required as string[] | undefined) ?? []) if (!(r in o)) return false;
    const props = (schema.properties as Record<string, Json> | undefined) ?? {};
    for (const [k, x] of Object.entries(o)) {
      if (k in props) {
        if (!validates(doc, props[k]!, x)) return false;
      } else if (schema.additionalProperties === false) return false;
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object' && !validates(doc, schema.additionalProperties as Json, x)) return false;
    }
  }
  return true;
}

const open = openApiDocument(OPEN);
const keyed = openApiDocument(KEYED);
const op = (doc: Json, path: string) => ((doc.paths as Json)[path] as Json).get as Json;

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with the given server and one GET operation per route', () => {
    expect(OpenApiDocument.safeParse(open).success).toBe(true);
    expect(open.openapi).toMatch(/^3\.1\./);
    expect(open.servers).toEqual([{ url: SERVER }]);
    expect(openApiDocument({ ...OPEN, serverUrl: `${BASE}/` }).servers).toEqual([{ url: BASE }]); // a trailing "/" goes
    expect(Object.keys(open.paths as Json).sort()).toEqual(ROUTE_LIST.map((r) => r.path).sort());
    const ids = ROUTE_LIST.map((r) => op(open, r.path).operationId);
    expect(new Set(ids).size).toBe(ROUTE_LIST.length);
    for (const r of ROUTE_LIST) {
      expect(Object.keys((open.paths as Json)[r.path] as Json)).toEqual(['get']);
      expect(op(open, r.path)).toMatchObject({ operationId: operationId(r.id), 'x-route-id': r.id });
    }
  });

  it('every $ref resolves', () => {
    for (const doc of [open, keyed]) {
      const refs = allRefs(doc);
      expect(refs.length).toBeGreaterThan(100);
      for (const ref of refs) expect(resolvePointer(doc, ref), ref).toBeDefined();
    }
  });

  it('every operation has its 200 schema and content type, and the problems it can return', () => {
    for (const r of ROUTE_LIST) {
      const responses = op(open, r.path).responses as Record<string, Json>;
      expect((responses['200']!.content as Json)[r.contentType]).toEqual({ schema: { $ref: `#/components/schemas/${r.response}` } });
      expect('400' in responses, `${r.id} 400`).toBe(badRequestParams(r).length > 0);
      expect('404' in responses, `${r.id} 404`).toBe(notFoundProblems(r).length > 0);
      expect('403' in responses).toBe(false); // open mode
      expect('429' in responses).toBe(true);
      for (const [status, res] of Object.entries(responses)) {
        if (status === '200') continue;
        const c = (res.content as Json)['application/problem+json'] as Json;
        expect(c.schema).toEqual({ $ref: '#/components/schemas/Problem' });
        for (const t of c['x-problem-types'] as string[]) expect(t.startsWith(`${BASE}/problems/`) || t.includes('#quota-exceeded')).toBe(true);
      }
      if (responses['400']) {
        const types = ((responses['400'].content as Json)['application/problem+json'] as Json)['x-problem-types'] as string[];
        expect(types.includes(`${BASE}/problems/invalid-cursor`), r.id).toBe(r.paginated);
        expect(types.includes(`${BASE}/problems/invalid-identifier`), r.id).toBe(r.path.startsWith('/v1/participants/'));
        expect(types.includes(`${BASE}/problems/missing-parameter`), r.id).toBe(r.id === 'aps.churn_participants');
      }
      if (responses['404']) expect((responses['404'].content as Json)['application/problem+json']).toMatchObject({ 'x-problem-types': notFoundProblems(r).map((n) => problemTypeUri(n as 'not-found', BASE)) });
    }
    expect((op(open, '/.well-known/api-catalog').responses as Json)['200']).toMatchObject({ content: { 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"': {} } });
    // the one HTML answer: the problem type page, a string schema; its name is the catalogue's enumeration
    expect(op(open, '/problems/{name}')).toMatchObject({
      operationId: 'discoveryProblemType',
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string', enum: PROBLEM_NAMES } }],
      responses: {
        '200': { content: { 'text/html; charset=utf-8': { schema: { $ref: '#/components/schemas/ProblemTypePage' } } } },
        '404': { content: { 'application/problem+json': { 'x-problem-types': [`${BASE}/problems/not-found`] } } },
      },
      security: [{}, { bearerAuth: [] }, { apiKeyHeader: [] }],
    });
    expect(((open.components as Json).schemas as Json).ProblemTypePage).toMatchObject({ type: 'string', minLength: 1 });
    expect('403' in (op(keyed, '/problems/{name}').responses as Json)).toBe(false);
  });

  it('declares every parameter with its location, requiredness and schema', () => {
    for (const r of ROUTE_LIST) {
      const ps = op(open, r.path).parameters as Json[];
      expect(ps.map((p) => p.name)).toEqual(Object.keys(r.params));
      for (const p of ps) {
        const def = r.params[p.name as string]!;
        expect(p.in).toBe(def.in);
        expect(p.required).toBe(def.in === 'path' || def.required);
        if (def.type.list) expect(p).toMatchObject({ style: 'form', explode: false, schema: { type: 'array' } });
      }
    }
    const events = op(open, '/v1/events').parameters as Json[];
    expect((events.find((p) => p.name === 'type')!.schema as Json).items).toMatchObject({ enum: expect.arrayContaining(['host_cert_rotated', 'directory_card_changed']) });
    const churn = op(open, '/v1/aps/{key}/churn/participants').parameters as Json[];
    expect(churn.find((p) => p.name === 'category')).toMatchObject({ required: true, schema: { enum: ['joiner', 'mover_in', 'mover_out', 'leaver'] } });
    const limit = (op(open, '/v1/incidents').parameters as Json[]).find((p) => p.name === 'limit')!;
    expect(limit.schema).toEqual({ type: 'integer', minimum: 1, maximum: 200, default: 50 });
  });

  it('open mode: keys optional everywhere; keyed mode: required outside the keyless endpoints, 403 and the tier', () => {
    expect(open.security).toContainEqual({});
    expect(keyed.security).not.toContainEqual({});
    for (const r of ROUTE_LIST) {
      const o = op(keyed, r.path);
      const responses = o.responses as Json;
      expect('403' in responses, r.id).toBe(!r.keyless);
      if (r.keyless) expect(o.security).toContainEqual({});
      else expect(o.security).toBeUndefined();
    }
    expect(op(keyed, '/v1/participants/{id}')['x-access-tier']).toBe('market');
    expect(op(keyed, '/v1/hosts/{hostname}/uptime')['x-access-tier']).toBe('network');
    const routeIdTier = openApiDocument({ ...KEYED, access: { mode: 'keyed', tiers: { network: [], market: ['sml'] } } });
    expect(op(routeIdTier, '/v1/sml')['x-access-tier']).toBe('market');
    expect(op(routeIdTier, '/v1/hosts')['x-access-tier']).toBe('any');
    expect((keyed.components as Json).securitySchemes).toMatchObject({ bearerAuth: { type: 'http', scheme: 'bearer' }, apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' } });
  });

  it('no 429 without a rate limit; deprecated endpoints are marked', () => {
    const doc = openApiDocument({ ...OPEN, rateLimit: 'off', deprecations: [{ path: '/v1/aps/*' }] });
    for (const r of ROUTE_LIST) expect('429' in (op(doc, r.path).responses as Json)).toBe(false);
    expect(op(doc, '/v1/aps/{key}/churn').deprecated).toBe(true);
    expect(op(doc, '/v1/aps').deprecated).toBeUndefined();
  });

  it('is deterministic: the same options give the same bytes', () => {
    expect(jsonText(openApiDocument(OPEN))).toBe(jsonText(open));
  });
});

describe('component schemas', () => {
  const schemas = (open.components as Json).schemas as Record<string, Json>;

  it('one per resource, each accepting its example', () => {
    expect(Object.keys(schemas)).toEqual(Object.keys(RESOURCE_SCHEMAS));
    for (const name of Object.keys(RESOURCE_SCHEMAS)) expect(validates(open, schemas[name]!, EXAMPLES[name as ResourceName]), name).toBe(true);
  });

  it('agree with the zod schemas on missing keys, unknown keys and nulls (zod may add rules JSON Schema cannot say)', () => {
    const names = (Object.keys(RESOURCE_SCHEMAS) as ResourceName[]).filter((n) => typeof EXAMPLES[n] === 'object' && !['OpenApiDocument', 'ApiCatalog'].includes(n));
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.nat(), fc.constantFrom('delete', 'null', 'extra'), (name, pick, how) => {
        const v = structuredClone(EXAMPLES[name]) as Json;
        const keys = Object.keys(v);
        const key = keys[pick % keys.length]!;
        if (how === 'delete') delete v[key];
        else if (how === 'null') v[key] = null;
        else v.unexpected_key = true;
        const zodOk = RESOURCE_SCHEMAS[name].safeParse(v).success;
        const jsonOk = validates(open, schemas[name]!, v);
        if (zodOk) expect(jsonOk, `${name} ${how} ${key}`).toBe(true);
        if (how !== 'null') expect(jsonOk, `${name} ${how} ${key}`).toBe(zodOk);
      }),
      { numRuns: 600 },
    );
  });
});

describe('API catalog (RFC 9727)', () => {
  it('is a linkset pointing at the OpenAPI document and the health endpoint', () => {
    const cat = apiCatalog(`${BASE}/`);
    expect(ApiCatalog.safeParse(cat).success).toBe(true);
    const ctx = cat.linkset[0]!;
    expect(ctx.anchor).toBe(`${BASE}/v1`);
    expect(ctx['service-desc']).toEqual([{ href: `${BASE}/openapi.json`, type: 'application/vnd.oai.openapi+json;version=3.1' }]);
    expect(ctx.status).toEqual([{ href: `${BASE}/health`, type: 'application/json' }]);
    // Every href is a path of the route table.
    for (const links of Object.entries(ctx).filter(([k]) => k !== 'anchor').map(([, v]) => v as Array<{ href: string }>)) {
      for (const l of links) expect(ROUTE_LIST.map((r) => `${BASE}${r.path}`)).toContain(l.href);
    }
  });

  it('links the newest bulk copy\'s data package when the snapshot carries bulk downloads, as openapi.json does', () => {
    const cat = apiCatalog(`${BASE}/`, { bulk: true });
    expect(ApiCatalog.safeParse(cat).success).toBe(true);
    expect(cat.linkset[0]!.describedby).toEqual([{ href: `${BASE}/bulk/latest/datapackage.json`, type: 'application/json', title: expect.stringContaining('Frictionless') }]);
    expect(apiCatalog(BASE).linkset[0]).not.toHaveProperty('describedby');
    expect(openApiDocument(OPEN).externalDocs).toEqual({ description: expect.stringContaining('Data Package'), url: `${BASE}/bulk/latest/datapackage.json` });
    expect(openApiDocument({ ...OPEN, bulk: false })).not.toHaveProperty('externalDocs');
  });
});

describe('json bodies', () => {
  it('are compact JSON plus one newline, UTF-8, and parse back to the value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = jsonText(v);
        expect(text.endsWith('\n')).toBe(true);
        expect(text.slice(0, -1)).toBe(JSON.stringify(v));
        expect(new TextDecoder().decode(jsonBody(v))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 200 },
    );
    expect(() => jsonText(undefined)).toThrow(TypeError);
  });
});
