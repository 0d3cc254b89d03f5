// The route table (src/api/routes/table.ts) and problems (src/api/problems.ts): one route per endpoint of the
// spec with its parameters, 400 and 404 cases, keyless flag and list descriptor; matchRoute tells "no
// such path" from "bad identifier"; parseRequest canonicalises (idempotently), applies defaults and
// rules, and binds cursors to their list; problems are RFC 9457 documents naming the parameter.
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KEYLESS_PATHS, matchPathPattern, SITE_PATHS } from '../src/config/patterns.js';
import { encodeCursor } from '../src/api/cursor.js';
import { compareKeys } from '../src/api/sort-keys.js';
import {
  PROBLEM_CATALOGUE,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_NAMES,
  problemTypeUri,
  QUOTA_EXCEEDED_TYPE,
  insufficientTierProblem,
  keyRequiredProblem,
  methodNotAllowedProblem,
  noRouteProblem,
  notFoundProblem,
  problemForParamErrors,
  quotaExceededProblem,
} from '../src/api/problems.js';
import { escapeHtml, problemTypePage } from '../src/api/problem-pages.js';
import { matchRoute } from '../src/api/routes/match.js';
import { badRequestParams, notFoundProblems, buildPath, canonicalQuery, canonicalTarget, isFirstPage, listPartition, orderOf, parseRequest, sortKeyOf } from '../src/api/routes/request.js';
import { ROUTES, ROUTE_LIST } from '../src/api/routes/table.js';
import type { AnyRoute } from '../src/api/routes/types.js';
import { EXAMPLES } from '../src/api/schemas/examples.js';
import { Problem, RESOURCE_SCHEMAS } from '../src/api/schemas/index.js';

const NOW = Date.parse('2026-11-22T10:30:00Z');
const BASE = 'https://api.example.org';

/**
 * Every endpoint of docs/api-reference.md: path, keyless, paginated (limit/cursor), the parameters it answers
 * with 400 (the spec's list under the endpoint), and its 404 cases. Decisions beyond the spec's lists
 * (docs/api.md) are marked.
 */
const SPEC_ENDPOINTS: Array<{ path: string; keyless: boolean; paginated: boolean; bad: string[]; notFound: string[] }> = [
  { path: '/health', keyless: true, paginated: false, bad: [], notFound: [] },
  { path: '/health/db', keyless: true, paginated: false, bad: [], notFound: [] },
  { path: '/v1/network', keyless: true, paginated: false, bad: [], notFound: [] },
  { path: '/v1/hosts', keyless: false, paginated: false, bad: [], notFound: [] },
  { path: '/v1/hosts/{hostname}', keyless: false, paginated: false, bad: ['at'], notFound: ['host-not-found'] },
  // 404 for an unknown host on the sub-resources: spec "Errors" 3 (decision).
  { path: '/v1/hosts/{hostname}/incidents', keyless: false, paginated: true, bad: ['status', 'since', 'limit', 'cursor'], notFound: ['host-not-found'] },
  { path: '/v1/hosts/{hostname}/uptime', keyless: false, paginated: true, bad: ['resolution', 'from', 'to', 'limit', 'cursor'], notFound: ['host-not-found'] },
  { path: '/v1/incidents', keyless: false, paginated: true, bad: ['status', 'since', 'limit', 'cursor'], notFound: [] },
  { path: '/v1/participants', keyless: false, paginated: true, bad: ['sort', 'registered', 'provenance', 'limit', 'cursor'], notFound: [] },
  { path: '/v1/participants/{id}', keyless: false, paginated: false, bad: ['id'], notFound: ['participant-not-found'] },
  { path: '/v1/participants/{id}/events', keyless: false, paginated: true, bad: ['id', 'limit', 'cursor'], notFound: ['participant-not-found'] },
  { path: '/v1/participants/{id}/history', keyless: false, paginated: true, bad: ['id', 'limit', 'cursor'], notFound: ['participant-not-found'] },
  { path: '/v1/stats/participants', keyless: true, paginated: false, bad: [], notFound: [] },
  { path: '/v1/providers', keyless: false, paginated: false, bad: [], notFound: [] },
  { path: '/v1/providers/{slug}', keyless: false, paginated: false, bad: [], notFound: ['provider-not-found'] },
  { path: '/v1/aps', keyless: false, paginated: false, bad: [], notFound: [] },
  { path: '/v1/aps/{key}', keyless: false, paginated: false, bad: [], notFound: ['access-point-not-found'] },
  // from/to: an invalid date or from after to is a 400 (decision: spec "Errors" 2).
  { path: '/v1/aps/{key}/churn', keyless: false, paginated: false, bad: ['from', 'to'], notFound: ['churn-not-found'] },
  { path: '/v1/aps/{key}/churn/participants', keyless: false, paginated: false, bad: ['category', 'from', 'to'], notFound: ['access-point-not-found'] },
  { path: '/v1/seats/{seatId}', keyless: false, paginated: false, bad: [], notFound: ['seat-not-found'] },
  { path: '/v1/events', keyless: false, paginated: true, bad: ['type', 'participant', 'since', 'until', 'prev_cursor', 'limit', 'cursor'], notFound: [] },
  { path: '/v1/anomalies', keyless: false, paginated: true, bad: ['detector', 'grade', 'acknowledged', 'since', 'limit', 'cursor'], notFound: [] },
  { path: '/v1/anomalies/{id}', keyless: false, paginated: false, bad: [], notFound: ['anomaly-not-found'] },
  { path: '/v1/sml', keyless: false, paginated: false, bad: [], notFound: [] },
  { path: '/openapi.json', keyless: true, paginated: false, bad: [], notFound: [] },
  { path: '/.well-known/api-catalog', keyless: true, paginated: false, bad: [], notFound: [] },
  // The pages problem type URIs resolve to (a discovery endpoint, keyless); an unknown name is the plain 404.
  { path: '/problems/{name}', keyless: true, paginated: false, bad: [], notFound: ['not-found'] },
];

/** A valid value for each path parameter name. */
const SAMPLE_PATH: Record<string, string> = {
  hostname: 'ap1.acme.example',
  id: '0208::0123456789',
  slug: 'acme',
  key: 'c-acme',
  seatId: 'PBE000123',
  name: 'invalid-cursor',
};
function samplePath(route: AnyRoute, over: Record<string, string> = {}): string {
  return route.path.replace(/\{([^}]+)\}/g, (_m, n: string) => encodeURIComponent(over[n] ?? (route.id === 'anomalies.detail' ? 'cis-0123456789abcdef' : SAMPLE_PATH[n]!)));
}

function request(target: string, now = NOW) {
  const url = new URL(target, BASE);
  const m = matchRoute(url.pathname);
  if (!m) return null;
  return { route: m.route, result: parseRequest(m.route, m.pathParams, url.searchParams, { now }) };
}
function params(target: string): Record<string, unknown> {
  const r = request(target);
  if (!r || !r.result.ok) throw new Error(`${target}: ${JSON.stringify(r?.result)}`);
  return r.result.params as Record<string, unknown>;
}
function errors(target: string) {
  const r = request(target);
  if (!r || r.result.ok) throw new Error(`${target}: expected errors`);
  return r.result;
}

describe('route table', () => {
  it('has exactly one route per endpoint of the spec, with unique ids equal to their keys', () => {
    expect(ROUTE_LIST.map((r) => r.path).sort()).toEqual(SPEC_ENDPOINTS.map((e) => e.path).sort());
    for (const [id, r] of Object.entries(ROUTES)) expect(r.id).toBe(id);
    expect(new Set(ROUTE_LIST.map((r) => r.id)).size).toBe(ROUTE_LIST.length);
    for (const r of ROUTE_LIST) expect(r.method).toBe('GET');
  });

  it.each(SPEC_ENDPOINTS)('$path: keyless, pagination, 400 and 404 cases as the spec lists them', (e) => {
    const r = ROUTE_LIST.find((x) => x.path === e.path)!;
    expect(r.keyless).toBe(e.keyless);
    expect(r.paginated).toBe(e.paginated);
    expect('limit' in r.params && 'cursor' in r.params).toBe(e.paginated);
    expect(badRequestParams(r).sort()).toEqual([...e.bad].sort());
    expect(notFoundProblems(r).sort()).toEqual([...e.notFound].sort());
    expect(Object.keys(RESOURCE_SCHEMAS)).toContain(r.response);
  });

  it('keyless routes are exactly those the config KEYLESS_PATHS patterns match, each pattern one route but the site paths, which match none', () => {
    const keyless = ROUTE_LIST.filter((r) => r.keyless);
    for (const r of ROUTE_LIST) expect(r.keyless, r.path).toBe(KEYLESS_PATHS.some((k) => matchPathPattern(k, r.path)));
    for (const k of KEYLESS_PATHS) expect(keyless.filter((r) => matchPathPattern(k, r.path)).length, k).toBe(SITE_PATHS.includes(k) ? 0 : 1);
    expect(KEYLESS_PATHS).toEqual(expect.arrayContaining([...SITE_PATHS]));
    expect(keyless.map((r) => r.path)).toContain('/problems/{name}');
  });

  it('declares every path parameter of the pattern, and only those, as path parameters', () => {
    for (const r of ROUTE_LIST) {
      const inPath = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(Object.entries(r.params).filter(([, d]) => d.in === 'path').map(([n]) => n)).toEqual(inPath);
    }
  });

  it('list descriptors name declared parameters and fields of the items, with a unique last key field', () => {
    for (const r of ROUTE_LIST) {
      const l = r.list;
      if (!l) continue;
      expect(l.pagination === 'cursor').toBe(r.paginated);
      for (const p of [...l.partition, ...l.filters.map((f) => f.param), ...l.bounds.map((b) => b.param)]) expect(Object.keys(r.params), `${r.id} ${p}`).toContain(p);
      if (l.orderParam) {
        const type = r.params[l.orderParam]!.type.schema as { enum: string[] };
        expect(Object.keys(l.orders).sort()).toEqual([...type.enum].sort());
        expect(l.partition).toContain(l.orderParam);
      } else expect(Object.keys(l.orders)).toEqual(['default']);
      // Items are the example page's items: every key field exists on them.
      const item = (EXAMPLES[r.response] as { items: Array<Record<string, unknown>> }).items[0]!;
      for (const o of Object.values(l.orders)) {
        for (const f of o.fields) expect(Object.keys(item), `${r.id} ${f.field}`).toContain(f.field);
        expect(o.fields.at(-1)!.nullable).not.toBe(true);
        expect(() => sortKeyOf(o, item)).not.toThrow();
      }
      for (const b of l.bounds) expect(Object.values(l.orders)[0]!.fields[0]!.field).toBe(b.field);
      if (l.newer) expect(r.params[l.newer.param]).toBeDefined();
    }
  });

  it('a sort key orders items as the list promises (newest first for events)', () => {
    const order = orderOf(ROUTES['events.list'].list!, {});
    const mk = (observed_at: string, id: string) => ({ observed_at, id });
    const items = [mk('2026-11-20T00:00:00.000Z', 'ev-b'), mk('2026-11-21T00:00:00.000Z', 'ev-a'), mk('2026-11-20T00:00:00.000Z', 'ev-c')];
    const dirs = order.fields.map((f) => f.dir);
    const sorted = [...items].sort((a, b) => compareKeys(sortKeyOf(order, a), sortKeyOf(order, b), dirs));
    expect(sorted.map((i) => i.id)).toEqual(['ev-a', 'ev-c', 'ev-b']);
    // Discovered participants have no name: they sort last in both name orders.
    for (const sort of ['name.asc', 'name.desc']) {
      const o = orderOf(ROUTES['participants.list'].list!, { sort });
      const ps = [{ name: null, id: '0208::a' }, { name: 'Zed', id: '0208::b' }, { name: 'Acme', id: '0208::c' }];
      const s = [...ps].sort((a, b) => compareKeys(sortKeyOf(o, a), sortKeyOf(o, b), o.fields.map((f) => f.dir)));
      expect(s.at(-1)!.name).toBeNull();
    }
  });
});

describe('matchRoute', () => {
  it('matches every route on its own path, decoding path segments', () => {
    for (const r of ROUTE_LIST) {
      const m = matchRoute(samplePath(r));
      expect(m?.route.id, r.path).toBe(r.id);
    }
    expect(matchRoute('/v1/participants/0208%3A%3A0123456789/events')?.pathParams).toEqual({ id: '0208::0123456789' });
  });

  it('returns null for paths no endpoint has (a 404), including trailing slashes and other cases', () => {
    for (const p of ['/', '/v1', '/v2/hosts', '/v1/hostz', '/v1/hosts/', '/v1/hosts//incidents', '/V1/hosts', '/v1/hosts/a.example/incidents/1', '/health/', '/v1/stats', 'v1/hosts']) {
      expect(matchRoute(p), p).toBeNull();
    }
  });

  it('prefers literal segments over parameters', () => {
    expect(matchRoute('/v1/aps/c-acme/churn/participants')?.route.id).toBe('aps.churn_participants');
    expect(matchRoute('/health/db')?.route.id).toBe('health.db');
  });

  it('tells a bad identifier (400) from an unknown resource (404) as the spec asks', () => {
    const bad = errors('/v1/participants/not-an-id');
    expect(bad.status).toBe(400);
    expect(bad.errors[0]).toMatchObject({ param: 'id', in: 'path', problem: 'invalid-identifier', got: 'not-an-id' });
    expect(errors('/v1/participants/not-an-id/events?limit=5').status).toBe(400);
    // Identifiers the spec answers only with 404: a malformed one is an unknown one.
    expect(errors('/v1/hosts/not_a_host!').errors[0]!.problem).toBe('host-not-found');
    expect(errors('/v1/seats/XYZ').errors[0]!.problem).toBe('seat-not-found');
    expect(errors('/v1/aps/nope').errors[0]!.problem).toBe('access-point-not-found');
    expect(errors('/v1/aps/nope/churn').errors[0]!.problem).toBe('churn-not-found');
    expect(errors('/v1/seats/XYZ').status).toBe(404);
    // A problem type page of a name the catalogue lacks: the plain not-found, exact spelling only.
    for (const p of ['/problems/no-such-problem', '/problems/NOT-FOUND', '/problems/%20not-found']) {
      expect(errors(p).errors[0], p).toMatchObject({ param: 'name', in: 'path', status: 404, problem: 'not-found' });
    }
    expect(params('/problems/quota-exceeded')).toEqual({ name: 'quota-exceeded' });
    // Bad percent-encoding in an identifier segment.
    expect(errors('/v1/participants/0208::%E0%A4%A').errors[0]!.problem).toBe('invalid-identifier');
    // 400 wins over 404 when both occur.
    expect(errors('/v1/hosts/bad!/incidents?status=ongoing').status).toBe(400);
  });
});

describe('parseRequest', () => {
  it('canonicalises path identifiers: case, full Peppol participant form, trailing dot', () => {
    expect(params('/v1/participants/iso6523-actorid-upis::0208:ABC123')).toEqual({ id: '0208::abc123' });
    expect(params('/v1/hosts/AP1.Acme.Example.')).toEqual({ hostname: 'ap1.acme.example', at: undefined });
    expect(params('/v1/seats/pbe000123')).toEqual({ seatId: 'PBE000123' });
    expect(params('/v1/anomalies/CIS-0123456789ABCDEF')).toEqual({ id: 'cis-0123456789abcdef' });
  });

  it('gives typed canonical parameters', () => {
    const m = matchRoute('/v1/hosts/a.example/incidents')!;
    const r = parseRequest(ROUTES['hosts.incidents'], m.pathParams, new URLSearchParams('status=open'));
    expect(r.ok).toBe(true);
    if (r.ok) {
      // Compile-time: defaulted parameters are never undefined, optional ones may be.
      const limit: number = r.params.limit;
      const status: 'open' | 'closed' | undefined = r.params.status;
      const hostname: string = r.params.hostname;
      expect([limit, status, hostname]).toEqual([50, 'open', 'a.example']);
    }
  });

  it('applies defaults, clamps limit, ignores unknown parameters, treats empty values as absent', () => {
    expect(params('/v1/incidents')).toEqual({ host: undefined, status: undefined, since: undefined, limit: 50, cursor: undefined });
    expect(params('/v1/incidents?limit=0').limit).toBe(1);
    expect(params('/v1/incidents?limit=500').limit).toBe(200);
    expect(params('/v1/incidents?limit=-3').limit).toBe(1);
    expect(params('/v1/incidents?utm_source=x&foo=bar&limit=')).toEqual(params('/v1/incidents'));
    expect(params('/v1/hosts/a.example/uptime').resolution).toBe('hourly');
    expect(params('/v1/participants').sort).toBe('first_seen.desc');
    expect(params('/v1/network?limit=abc')).toEqual({});
  });

  it('repeated parameters: lists merge, scalars take the first non-empty value', () => {
    expect(params('/v1/events?type=hosting_changed&type=host_cert_rotated,hosting_changed').type).toEqual(['host_cert_rotated', 'hosting_changed']);
    expect(params('/v1/participants?country=nl&country=BE').country).toEqual(['BE', 'NL']);
    expect(params('/v1/incidents?status=&status=closed&status=open').status).toBe('closed');
  });

  it('requires category on churn participants', () => {
    const e = errors('/v1/aps/c-acme/churn/participants?category=');
    expect(e.errors).toEqual([expect.objectContaining({ param: 'category', problem: 'missing-parameter' })]);
    expect(errors('/v1/aps/c-acme/churn/participants?category=joiners').errors[0]).toMatchObject({ param: 'category', problem: 'invalid-parameter' });
    expect(params('/v1/aps/c-acme/churn/participants?category=MOVER_IN').category).toBe('mover_in');
  });

  it('churn windows default to the trailing 30 days ending today (UTC) and must not run backwards', () => {
    expect(params('/v1/aps/c-acme/churn')).toMatchObject({ from: '2026-10-24', to: '2026-11-22' });
    expect(params('/v1/aps/c-acme/churn?to=2024-03-01')).toMatchObject({ from: '2024-02-01', to: '2024-03-01' }); // 2024 is a leap year
    expect(params('/v1/aps/c-acme/churn?from=2026-11-01')).toMatchObject({ from: '2026-11-01', to: '2026-11-22' });
    expect(errors('/v1/aps/c-acme/churn?from=2026-11-23').errors[0]).toMatchObject({ param: 'from', problem: 'invalid-parameter' });
    expect(params('/v1/aps/c-acme/churn/participants?category=leaver')).toMatchObject({ from: '2026-10-24', to: '2026-11-22' });
  });

  it('churn windows span at most 400 days, both ends included, on both churn routes', () => {
    // 2025-10-19 .. 2026-11-22 is 400 days (2026 is no leap year); a day more is a 400 naming both parameters and the limit.
    expect(params('/v1/aps/c-acme/churn?from=2025-10-19')).toMatchObject({ from: '2025-10-19', to: '2026-11-22' });
    for (const path of ['/v1/aps/c-acme/churn?from=2025-10-18', '/v1/aps/c-acme/churn/participants?category=joiner&from=2025-10-18']) {
      const e = errors(path);
      expect(e.status).toBe(400);
      expect(e.errors).toEqual([expect.objectContaining({ param: 'from', problem: 'invalid-parameter' })]);
      expect(problemForParamErrors(e.errors, { baseUrl: BASE }).detail).toBe('Query parameters "from" and "to" span 401 days (2025-10-18 to 2026-11-22); at most 400 are allowed.');
    }
    const wide = problemForParamErrors(errors('/v1/aps/c-acme/churn?from=0001-01-01&to=9999-12-31').errors, { baseUrl: BASE });
    expect(wide).toMatchObject({ status: 400, type: `${BASE}/problems/invalid-parameter` });
    expect(wide.detail).toBe('Query parameters "from" and "to" span 3,652,059 days (0001-01-01 to 9999-12-31); at most 400 are allowed.');
    // A backwards window is reported as such, not as a span.
    expect(errors('/v1/aps/c-acme/churn?from=2026-11-23&to=2020-01-01').errors).toHaveLength(1);
    // The edges of the calendar: year 0001 (the default from then falls in year 0000) and 9999.
    expect(params('/v1/aps/c-acme/churn?to=0001-01-05')).toMatchObject({ from: '0000-12-07', to: '0001-01-05' });
    expect(params('/v1/aps/c-acme/churn?from=9999-12-01&to=9999-12-31')).toMatchObject({ from: '9999-12-01', to: '9999-12-31' });
    expect(errors('/v1/aps/c-acme/churn?to=0000-01-05').errors[0]).toMatchObject({ param: 'to', problem: 'invalid-parameter' });
  });

  it('ranges: uptime from must not be after to; event since must not be after until', () => {
    expect(params('/v1/hosts/a.example/uptime?from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z').from).toBe(Date.parse('2026-11-01T00:00:00Z'));
    expect(errors('/v1/hosts/a.example/uptime?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z').errors[0]!.param).toBe('from');
    // An offset counts: 00:30+01:00 is 23:30Z of the day before, so not after 2026-11-01T00:00Z.
    expect(request('/v1/events?since=2026-11-01T00:30:00%2B01:00&until=2026-11-01T00:00:00Z')!.result.ok).toBe(true);
    expect(errors('/v1/events?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z').errors[0]!.param).toBe('since');
  });

  it('canonicalisation is idempotent: parse(canonicalTarget(parse(x))) equals parse(x)', () => {
    const value = fc.oneof(
      fc.constantFrom('', ' ', 'open', 'CLOSED', 'true', 'False', 'name.asc', 'DAILY', 'BE,nl,be', '0208', 'x', 'PBE000123', 'pnl000001', 'Smp.Acme.Example.', '__ALL__', 'eu-west'),
      fc.constantFrom('2026-11-01T00:00:00+02:00', '2026-11-01T00:00:00.1234Z', '2026-11-30', '2026-02-30', '-5', '7', '999'),
      fc.constantFrom('iso6523-actorid-upis::0208:ABC', '0208::abc', 'host_cert_rotated,HOSTING_CHANGED', '  Acme   Corp '),
      fc.string({ maxLength: 12 }),
    );
    const routes = ROUTE_LIST.filter((r) => Object.values(r.params).some((d) => d.in === 'query' && d.type.kind !== 'cursor'));
    fc.assert(
      fc.property(fc.constantFrom(...routes), fc.array(fc.tuple(fc.nat(), value), { maxLength: 6 }), (route, pairs) => {
        const names = Object.keys(route.params).filter((n) => route.params[n]!.in === 'query');
        const search = new URLSearchParams(pairs.map(([i, v]): [string, string] => [names[i % names.length]!, v]));
        const first = request(`${samplePath(route)}?${search}`)!;
        if (!first.result.ok) return;
        const target = canonicalTarget(route, first.result.params as Record<string, unknown>, { now: NOW });
        const again = request(target)!;
        expect(again.route.id).toBe(route.id);
        expect(again.result).toEqual(first.result);
        expect(canonicalTarget(route, (again.result as { params: Record<string, unknown> }).params, { now: NOW })).toBe(target);
      }),
      { numRuns: 500 },
    );
  });

  it('canonical targets: defaults left out, declared order, readable encoding', () => {
    const t = (x: string) => {
      const r = request(x)!;
      return canonicalTarget(r.route, (r.result as { params: Record<string, unknown> }).params, { now: NOW });
    };
    expect(t('/v1/incidents?limit=50&status=OPEN')).toBe('/v1/incidents?status=open');
    expect(t('/v1/participants?q=ACME%20corp&country=nl,BE&sort=first_seen.desc')).toBe('/v1/participants?country=BE,NL&q=acme%20corp');
    expect(t('/v1/events?since=2026-11-01T01:00:00%2B01:00')).toBe('/v1/events?since=2026-11-01T00:00:00.000Z');
    expect(t('/v1/participants/ISO6523-ACTORID-UPIS::0208:X/history')).toBe('/v1/participants/0208::x/history');
    expect(t('/v1/aps/c-acme/churn?to=2026-11-22')).toBe('/v1/aps/c-acme/churn');
    expect(t('/v1/aps/c-acme/churn?to=2026-11-21')).toBe('/v1/aps/c-acme/churn?to=2026-11-21');
    expect(t('/v1/aps/c-acme/churn?from=2026-11-01&to=2026-11-21')).toBe('/v1/aps/c-acme/churn?from=2026-11-01&to=2026-11-21');
    const r = ROUTES['hosts.uptime'];
    expect(buildPath(r, { hostname: 'a.example' })).toBe('/v1/hosts/a.example/uptime');
    expect(canonicalQuery(r, params('/v1/hosts/a.example/uptime?resolution=hourly'))).toBe('');
  });
});

describe('cursors bound to their list', () => {
  const incidentsCursor = (over: Partial<Parameters<typeof encodeCursor>[0]> = {}) =>
    encodeCursor({ route: 'hosts.incidents', partition: ['ap1.acme.example'], key: [Date.parse('2026-11-01T00:00:00Z'), 7], hint: 'c/ab/cdef.json', dir: 'next', ...over });

  it('a cursor of the same list is accepted and decoded', () => {
    const p = params(`/v1/hosts/AP1.acme.example/incidents?cursor=${incidentsCursor()}&status=open`);
    expect(p.cursor).toEqual({ route: 'hosts.incidents', partition: ['ap1.acme.example'], key: [Date.parse('2026-11-01T00:00:00Z'), 7], hint: 'c/ab/cdef.json', dir: 'next' });
    expect(isFirstPage(ROUTES['hosts.incidents'], p)).toBe(false);
    expect(isFirstPage(ROUTES['hosts.incidents'], params('/v1/hosts/a.example/incidents?since=2026-01-01T00:00:00Z'))).toBe(true);
  });

  it('a cursor of another endpoint, partition, ordering, direction or key shape is a 400 invalid-cursor', () => {
    const cases = [
      `/v1/incidents?cursor=${incidentsCursor()}`,
      `/v1/hosts/other.example/incidents?cursor=${incidentsCursor()}`,
      `/v1/hosts/ap1.acme.example/incidents?cursor=${incidentsCursor({ dir: 'prev' })}`,
      `/v1/hosts/ap1.acme.example/incidents?cursor=${incidentsCursor({ key: [1, 2, 3] })}`,
      `/v1/hosts/ap1.acme.example/incidents?cursor=${incidentsCursor({ key: ['2026-11-01', 7] })}`,
      `/v1/hosts/ap1.acme.example/incidents?cursor=${incidentsCursor().slice(0, -1)}`,
      `/v1/participants?sort=name.asc&cursor=${encodeCursor({ route: 'participants.list', partition: ['first_seen.desc'], key: [1, '0208::a'], hint: '', dir: 'next' })}`,
    ];
    for (const c of cases) {
      const e = errors(c);
      expect(e.status, c).toBe(400);
      expect(e.errors.map((x) => [x.param, x.problem]), c).toEqual([['cursor', 'invalid-cursor']]);
    }
  });

  it('the event feed: prev_cursor walks newer, and is exclusive with cursor', () => {
    const key = [Date.parse('2026-11-21T00:00:00Z'), 'ev-0123456789abcdef'];
    const prev = encodeCursor({ route: 'events.list', partition: [], key, hint: '', dir: 'prev' });
    const next = encodeCursor({ route: 'events.list', partition: [], key, hint: '', dir: 'next' });
    const p = params(`/v1/events?prev_cursor=${prev}&type=hosting_changed`);
    expect((p.prev_cursor as { dir: string }).dir).toBe('prev');
    expect(isFirstPage(ROUTES['events.list'], p)).toBe(false);
    expect(errors(`/v1/events?prev_cursor=${next}`).errors[0]).toMatchObject({ param: 'prev_cursor', problem: 'invalid-cursor' });
    expect(errors(`/v1/events?cursor=${prev}`).errors[0]).toMatchObject({ param: 'cursor', problem: 'invalid-cursor' });
    expect(errors(`/v1/events?cursor=${next}&prev_cursor=${prev}`).errors[0]).toMatchObject({ param: 'prev_cursor', problem: 'invalid-parameter' });
    expect(listPartition(ROUTES['events.list'], p)).toEqual([]);
    expect(listPartition(ROUTES['hosts.uptime'], params('/v1/hosts/A.example/uptime?resolution=daily'))).toEqual(['a.example', 'daily']);
  });
});

describe('problems', () => {
  const ctx = { baseUrl: `${BASE}/`, instance: '/v1/incidents' };

  it('a 400 names the parameter, what was expected and what was given, as an RFC 9457 document', () => {
    const e = errors('/v1/incidents?limit=ten&status=ongoing');
    const doc = problemForParamErrors(e.errors, ctx);
    expect(Problem.safeParse(doc).success).toBe(true);
    expect(doc).toMatchObject({ type: `${BASE}/problems/invalid-parameter`, title: 'Invalid query parameter', status: 400, instance: '/v1/incidents' });
    expect(doc.detail).toContain('"status"');
    expect(doc.detail).toContain('"ongoing"');
    expect(doc.detail).toContain('"limit"');
    expect(doc.detail).toContain('"ten"');
    expect(doc.detail).toContain('"open", "closed"');
  });

  it('cursor, missing-parameter and identifier problems have their own types', () => {
    expect(problemForParamErrors(errors('/v1/incidents?cursor=nope').errors, ctx).type).toBe(`${BASE}/problems/invalid-cursor`);
    expect(problemForParamErrors(errors('/v1/aps/c-x/churn/participants').errors, ctx).type).toBe(`${BASE}/problems/missing-parameter`);
    const id = problemForParamErrors(errors('/v1/participants/abc').errors, { baseUrl: BASE, instance: '/v1/participants/abc' });
    expect(id).toMatchObject({ status: 400, type: `${BASE}/problems/invalid-identifier` });
    expect(id.detail).toContain('"id"');
  });

  it('an unknown problem type name is the plain 404 not-found, naming the name', () => {
    const p = problemForParamErrors(errors('/problems/nope').errors, { baseUrl: BASE, instance: '/problems/nope' });
    expect(p).toEqual({ type: `${BASE}/problems/not-found`, title: 'Not found', status: 404, detail: 'There is no problem type named "nope".', instance: '/problems/nope' });
  });

  it('404s name the resource kind and the identifier', () => {
    const p = problemForParamErrors(errors('/v1/seats/nope').errors, { baseUrl: BASE, instance: '/v1/seats/nope' });
    expect(p).toMatchObject({ status: 404, type: `${BASE}/problems/seat-not-found`, title: 'Unknown seat' });
    expect(p.detail).toContain('"nope"');
    const q = notFoundProblem('participant', '0208::0123', { baseUrl: BASE, instance: '/v1/participants/0208::0123' });
    expect(q).toMatchObject({ status: 404, type: `${BASE}/problems/participant-not-found` });
    expect(q.detail).toContain('0208::0123');
    expect(noRouteProblem({ baseUrl: BASE, instance: '/v9' })).toMatchObject({ status: 404, type: `${BASE}/problems/not-found`, instance: '/v9' });
  });

  it('403, 405 and 429 documents; 429 uses the IANA quota-exceeded type', () => {
    const docs = [
      keyRequiredProblem(ctx),
      insufficientTierProblem('market', ctx),
      methodNotAllowedProblem('DELETE', ctx),
      quotaExceededProblem(60, 60, 17, ctx),
    ];
    expect(docs.map((d) => d.status)).toEqual([403, 403, 405, 429]);
    for (const d of docs) expect(Problem.safeParse(d).success).toBe(true);
    expect(docs[3]!.type).toBe(QUOTA_EXCEEDED_TYPE);
    expect(QUOTA_EXCEEDED_TYPE).toBe('https://iana.org/assignments/http-problem-types#quota-exceeded');
    expect(docs[3]!.detail).toContain('17 seconds');
    expect(docs[2]!.detail).toContain('"DELETE"');
    expect(PROBLEM_CONTENT_TYPE).toBe('application/problem+json');
  });

  it('every problem type has a page: title, status, when, what to do, the OpenAPI link, all HTML-escaped', () => {
    for (const name of PROBLEM_NAMES) {
      const info = PROBLEM_CATALOGUE[name];
      const html = problemTypePage(name, `${BASE}/`);
      expect(html.startsWith('<!DOCTYPE html>\n<html lang="en">'), name).toBe(true);
      expect(html).toContain(`<h1>${escapeHtml(info.title)}</h1>`);
      expect(html).toContain(`<strong>${info.status}</strong>`);
      expect(html).toContain(`<code>${escapeHtml(problemTypeUri(name, BASE))}</code>`);
      expect(html).toContain(escapeHtml(info.when.slice(1)));
      expect(html).toContain(escapeHtml(info.advice.split('`')[0]!));
      expect(html).toContain('<a href="../openapi.json">');
      expect(info.advice.length, name).toBeGreaterThan(20);
      // no markup but the page's own: the text between tags holds no raw "<", ">" or quote
      for (const text of html.replace(/<style>[^<]*<\/style>/, '').split(/<[^>]+>/)) expect(text, name).not.toMatch(/[<>"]/);
    }
    expect(problemTypePage('api-key-required', BASE)).toContain('<code>Authorization: Bearer &lt;key&gt;</code>');
    expect(problemTypePage('quota-exceeded', BASE)).toContain(`<code>${QUOTA_EXCEEDED_TYPE}</code>, registered by IANA`);
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    // a base URL is escaped too
    expect(problemTypePage('not-found', 'https://x.example/a"<b>')).toContain('<code>https://x.example/a&quot;&lt;b&gt;/problems/not-found</code>');
  });

  it('the catalogue in docs/api.md lists every problem type with its status and title', () => {
    const doc = fs.readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    for (const [name, info] of Object.entries(PROBLEM_CATALOGUE)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${name}\``));
      expect(row, name).toBeDefined();
      expect(row).toContain(`| ${info.status} |`);
      expect(row).toContain(info.title);
    }
  });
});

describe('docs/api.md route table', () => {
  it('lists every route id with its path, keyless and paginated flags, and nothing else', () => {
    const doc = fs.readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    const start = doc.indexOf('\n## Routes');
    const end = doc.indexOf('\n## ', start + 1);
    const section = doc.slice(start, end === -1 ? undefined : end);
    const rows = section
      .split('\n')
      .filter((l) => /^\| `[a-z]/.test(l))
      .map((l) => l.split('|').map((c) => c.trim()));
    const table = rows.map((c) => ({ id: c[1]!.replace(/`/g, ''), path: c[2]!.replace(/`/g, ''), keyless: c[3] === 'yes', paginated: c[4] === 'yes' }));
    expect(table).toEqual(ROUTE_LIST.map((r) => ({ id: r.id, path: r.path, keyless: r.keyless, paginated: r.paginated })));
  });
});
