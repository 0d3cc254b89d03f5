// The HTTP end-to-end checks of the API, run against every way the edge shim is served: `serve`
// (test/e2e-serve.test.ts, the built CLI over real HTTP) and the Cloudflare Worker (test/edge-worker.test.ts,
// dist/worker.mjs in workerd over an R2 bucket). A suite gets a `fetch`-like function for request
// targets and the snapshot's database, and walks every endpoint of the route table: each answer (status,
// content type, body bytes) must equal what the oracle (the query functions over the same SQLite
// database) answers for the same URL; the API catalog equals the built file, /openapi.json the built
// document regenerated for the policy in force and the origin serving it, the health endpoints their
// documented bodies. Also: every 400 and 404 case of the route table, random requests,
// 405 with Allow, HEAD without a body, ETag -> 304, the CORS preflight, and CORS on every answer.
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../src/api/cursor.js';
import { compareKeys } from '../../src/api/sort-keys.js';
import { matchRoute } from '../../src/api/routes/match.js';
import { badRequestParams, notFoundProblems, orderOf, parseRequest, sortKeyOf } from '../../src/api/routes/request.js';
import { ROUTE_LIST, routeById } from '../../src/api/routes/table.js';
import type { AnyRoute } from '../../src/api/routes/types.js';
import { CHURN_CATEGORIES, DETECTORS, EVENT_TYPES, GRADES, INCIDENT_STATUSES, PARTICIPANT_SORTS, PROVENANCES, RESOLUTIONS, RESOURCE_SCHEMAS } from '../../src/api/schemas/index.js';
import type { Db } from '../../src/db/index.js';
import { jsonText } from '../../src/api/json.js';
import { openApiDocument } from '../../src/api/openapi.js';
import { policyOptions, storedParts } from '../../src/edge/openapi.js';
import type { EdgePolicy } from '../../src/edge/types.js';
import { oracleAnswer, snapshotInfo } from './snapshot.js';
import { isDataRoute } from '../../src/api/handlers.js';
import { escapeHtml } from '../../src/api/problem-pages.js';
import { isProblemName, PROBLEM_CATALOGUE, PROBLEM_NAMES, problemTypeUri, type ProblemName } from '../../src/api/problems.js';

/** What a client sees of a response (the Fetch API's Response, undici's or miniflare's). */
export interface HeadersLike {
  get(name: string): string | null;
}
export interface ResponseLike {
  status: number;
  headers: HeadersLike;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
}
export interface RequestInitLike {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}
/** Sends a request for a target (path and query, as a client writes it) to the server under test. */
export type SendFn = (target: string, init?: RequestInitLike) => Promise<ResponseLike>;

export interface E2eTarget {
  send: SendFn;
  /** The database the snapshot was built from (the oracle's). */
  db: Db;
  /** The built snapshot directory (the discovery documents are compared with its files). */
  out: string;
  /** snapshot.json's clock and base URL. */
  nowMs: number;
  baseUrl: string;
  /** The origin the server sees requests at (the `servers` of /openapi.json). */
  origin: string;
  /** The edge policy in force (serve's flags may override the snapshot's). */
  policy: EdgePolicy;
  /** The test placed BULK_SAMPLE in the served snapshot (it is no file of a build). */
  bulkSample?: boolean;
}

/**
 * A bulk download as the open-data tools read it, by byte ranges: placed by each test in the served
 * snapshot (a file `build` does not write), 300,000 bytes of a fixed pseudo-random sequence.
 */
export const BULK_SAMPLE = {
  path: 'bulk/e2e/sample.parquet',
  bytes: (() => {
    const b = new Uint8Array(300_000);
    let x = 0x2545f491;
    for (let i = 0; i < b.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      b[i] = x & 0xff;
    }
    return b;
  })(),
};

/** The origin request targets are resolved against for the oracle (only the path and query matter). */
const ORIGIN = 'http://e2e.test';

type Item = Record<string, unknown>;
interface Page {
  items: Item[];
  next_cursor: string | null;
  prev_cursor?: string | null;
  meta?: unknown;
}
interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
}
interface Got {
  status: number;
  headers: HeadersLike;
  text: string;
  json: unknown;
}

// ---------------------------------------------------------------------------------------------
// What was requested, per route: for the coverage checks at the end.

interface Seen {
  ok: number;
  /** Parameters named by the detail of a 400 answer. */
  bad: Set<string>;
  /** Problem names of 404 answers. */
  notFound: Set<string>;
}
/**
 * Registers the end-to-end checks as a describe block named `title`. `target` is called once, before
 * the block's first test (after the file's beforeAll hooks): start the server there.
 */
export function describeE2e(title: string, target: () => E2eTarget): void {
  describe(title, () => {
    let db: Db;
    let out: string;
    let nowMs: number;
    let baseUrl: string;
    let origin: string;
    let policy: EdgePolicy;
    let send: SendFn;
    let bulkSample = false;
    beforeAll(() => {
      let t: E2eTarget;
      ({ db, out, nowMs, baseUrl, origin, policy, send } = t = target());
      bulkSample = t.bulkSample === true;
    });

    const seen = new Map<string, Seen>();
    function seenOf(id: string): Seen {
      let s = seen.get(id);
      if (!s) seen.set(id, (s = { ok: 0, bad: new Set(), notFound: new Set() }));
      return s;
    }

    const PROBLEM_CONTENT_TYPE = 'application/problem+json';
    /** Every cursor any answer gave (for the random requests: real cursors of every list, used anywhere). */
    const cursorPool = new Set<string>();

    async function fetchRaw(target: string, init: RequestInitLike = {}): Promise<Got> {
      const res = await send(target, init);
      const text = await res.text();
      let json: unknown = null;
      // every answer is JSON but a problem type page (HTML)
      if (text !== '' && !(res.headers.get('content-type') ?? '').startsWith('text/html')) json = JSON.parse(text) as unknown;
      return { status: res.status, headers: res.headers, text, json };
    }

    function expectProblem(got: Got, status: number): Problem {
      expect(got.status).toBe(status);
      expect(got.headers.get('content-type')).toBe(PROBLEM_CONTENT_TYPE);
      const p = got.json as Problem;
      expect(typeof p.type).toBe('string');
      expect(typeof p.title).toBe('string');
      expect(p.status).toBe(status);
      return p;
    }

    /** The sort order of a list request (the `sort` value, or the list's single order). */
    function orderFor(route: AnyRoute, url: URL) {
      const m = matchRoute(url.pathname)!;
      const parsed = parseRequest(route, m.pathParams, url.searchParams, { now: nowMs });
      if (!parsed.ok) throw new Error(`orderFor: ${url.href} does not parse`);
      return orderOf(route.list!, parsed.params as Record<string, unknown>);
    }

    /** A list page's items are in strict list order, and after `cursor` (or, for prev_cursor, before it). */
    function expectKeysetOrder(route: AnyRoute, url: URL, page: Page): void {
      const order = orderFor(route, url);
      const dirs = order.fields.map((f) => f.dir);
      const keys = page.items.map((i) => sortKeyOf(order, i));
      for (let i = 1; i < keys.length; i++) expect(compareKeys(keys[i - 1]!, keys[i]!, dirs), `${url.pathname}${url.search}: items ${i - 1} and ${i}`).toBeLessThan(0);
      const next = url.searchParams.get('cursor');
      if (next && keys.length > 0) {
        const c = decodeCursor(next);
        expect(c.ok).toBe(true);
        if (c.ok) expect(compareKeys(c.cursor.key, keys[0]!, dirs)).toBeLessThan(0);
      }
      const prev = url.searchParams.get('prev_cursor');
      if (prev && keys.length > 0) {
        const c = decodeCursor(prev);
        expect(c.ok).toBe(true);
        if (c.ok) expect(compareKeys(keys[keys.length - 1]!, c.cursor.key, dirs)).toBeLessThan(0);
      }
    }

    /**
     * GET over real HTTP, compared with the oracle: status, content type and the body byte for byte. With
     * `status`, the answer must also have that status (the test's own expectation of the case).
     */
    async function get(target: string, status?: number): Promise<Got> {
      const got = await fetchRaw(target);
      const url = new URL(target, ORIGIN);
      const want = oracleAnswer(db, url, nowMs, baseUrl);
      const where = `GET ${target}`;
      expect(got.status, where).toBe(want.status);
      expect(got.headers.get('content-type'), where).toBe(want.contentType);
      expect(got.headers.get('access-control-allow-origin'), where).toBe('*');
      expect(got.text, where).toBe(want.text);
      if (status !== undefined) expect(got.status, where).toBe(status);
      const s = seenOf(want.route.id);
      if (got.status === 200) {
        s.ok++;
        const j = got.json as Partial<Page>;
        for (const c of [j.next_cursor, j.prev_cursor]) if (typeof c === 'string') cursorPool.add(c);
        const valid = RESOURCE_SCHEMAS[want.route.response].safeParse(got.json);
        expect(valid.success, `${where}: the body is a valid ${want.route.response}: ${valid.success ? '' : valid.error.message}`).toBe(true);
        if (want.route.list && want.route.paginated) expectKeysetOrder(want.route, url, got.json as Page);
      } else {
        const p = expectProblem(got, got.status);
        expect(RESOURCE_SCHEMAS.Problem.safeParse(p).success).toBe(true);
        expect(p.instance).toBe(url.pathname);
        if (got.status === 400) for (const m of (p.detail ?? '').matchAll(/(?:Query|Path) parameter "([^"]+)"/g)) s.bad.add(m[1]!);
        if (got.status === 404) s.notFound.add(p.type.slice(p.type.lastIndexOf('/') + 1));
      }
      return got;
    }

    const page = async (target: string, status = 200): Promise<Page> => (await get(target, status)).json as Page;
    const problemOf = async (target: string, status: 400 | 404): Promise<Problem> => (await get(target, status)).json as Problem;

    /** `target` with query parameters set (replacing any of the same name). */
    function withQuery(target: string, params: Record<string, string>): string {
      const u = new URL(target, 'http://x');
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      return `${u.pathname}${u.search}`;
    }

    /** Walks up to `pages` pages of a list through next_cursor; returns the pages. */
    async function walk(target: string, pages: number): Promise<Page[]> {
      const got: Page[] = [await page(target)];
      while (got.length < pages) {
        const c = got[got.length - 1]!.next_cursor;
        if (c === null) break;
        got.push(await page(withQuery(target, { cursor: c })));
      }
      return got;
    }

    /** Changes one character of a cursor: a damaged cursor (must be a 400). */
    function damaged(cursor: string): string {
      const i = Math.floor(cursor.length / 2);
      return cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
    }

    /** HTTP semantics on a 200 target: HEAD (same headers, no body), ETag -> If-None-Match -> 304, POST -> 405. */
    async function httpSemantics(target: string): Promise<void> {
      // /health/db reports the snapshot's age in seconds: its body and ETag change when a second ticks
      // between two requests. Its exchanges are taken again (up to three times) until they fall within
      // one second, i.e. until every response carries the first GET's ETag.
      for (let attempt = 1; ; attempt++) {
        const getRes = await fetchRaw(target);
        const head = await send(target, { method: 'HEAD' });
        const etag = getRes.headers.get('etag');
        const notModified = await fetchRaw(target, { headers: { 'If-None-Match': etag ?? '' } });
        // another validator: the full body again
        const other = await fetchRaw(target, { headers: { 'If-None-Match': '"0000"' } });
        const ticked = [head.headers.get('etag'), notModified.headers.get('etag'), other.headers.get('etag')].some((e) => e !== etag);
        if (target === '/health/db' && ticked && attempt < 3) continue;

        expect(getRes.status).toBe(200);
        expect(etag, target).toMatch(/^"[0-9a-f]+"$/);
        expect(head.status).toBe(200);
        expect(new Uint8Array(await head.arrayBuffer()).length, `HEAD ${target}`).toBe(0);
        expect(head.headers.get('content-type')).toBe(getRes.headers.get('content-type'));
        expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(getRes.text)));
        expect(head.headers.get('etag')).toBe(etag);
        expect(notModified.status, `If-None-Match ${target}`).toBe(304);
        expect(notModified.text).toBe('');
        expect(notModified.headers.get('etag')).toBe(etag);
        expect(other.status).toBe(200);
        expect(other.text).toBe(getRes.text);
        break;
      }

      const post = await fetchRaw(target, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      const p = expectProblem(post, 405);
      expect(p.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    }

    const col = <T = string>(sql: string, ...args: unknown[]): T[] => db.prepare(sql).pluck().all(...args) as T[];
    const enc = encodeURIComponent;

    // ---------------------------------------------------------------------------------------------
    // The requests, per route id. A route of ROUTE_LIST without an entry here fails its test.

    const CASES: Record<string, () => Promise<void>> = {
      async health() {
        const r = await fetchRaw('/health');
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toBe('application/json');
        expect(r.json).toEqual({ status: 'ok', service: 'peppol-snapshot' });
        seenOf('health').ok++;
        await httpSemantics('/health');
      },

      async 'health.db'() {
        const r = await fetchRaw('/health/db');
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toBe('application/json');
        expect(r.json).toMatchObject({ status: 'ok', service: 'peppol-snapshot', db: true, fresh: true });
        expect(RESOURCE_SCHEMAS.HealthDb.safeParse(r.json).success).toBe(true);
        seenOf('health.db').ok++;
        await httpSemantics('/health/db');
      },

      async 'discovery.openapi'() {
        const r = await fetchRaw('/openapi.json');
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toBe(routeById('discovery.openapi')!.contentType);
        // The built document's component schemas, the rest generated for the policy in force, served from the origin.
        const storedBytes = fs.readFileSync(path.join(out, 'openapi.json'));
        const stored = JSON.parse(storedBytes.toString('utf8')) as Record<string, unknown>;
        const { schemas, bulk } = storedParts(storedBytes);
        expect(r.text).toBe(jsonText(openApiDocument({ ...policyOptions(policy), baseUrl, serverUrl: origin, schemas, bulk })));
        const doc = r.json as { openapi: string; servers: unknown; paths: Record<string, unknown>; components: Record<string, unknown>; externalDocs?: unknown };
        // The bulk downloads are linked when the snapshot carries them (the stored document says so).
        expect(doc.externalDocs).toEqual(stored.externalDocs);
        expect(doc.servers).toEqual([{ url: origin }]);
        expect(doc.components.schemas).toEqual(schemas);
        expect(doc.openapi).toMatch(/^3\.1/);
        for (const route of ROUTE_LIST) expect(Object.keys(doc.paths)).toContain(route.path);
        // Served under the snapshot's own policy, it is the stored document but for its servers.
        if (isDeepStrictEqual(policy, snapshotInfo(out).edge)) {
          expect(r.text).toBe(jsonText({ ...stored, servers: [{ url: origin }] }));
        }
        seenOf('discovery.openapi').ok++;
        await httpSemantics('/openapi.json');
      },

      async 'discovery.api_catalog'() {
        const r = await fetchRaw('/.well-known/api-catalog');
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toBe('application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"');
        expect(r.text).toBe(fs.readFileSync(path.join(out, '.well-known/api-catalog'), 'utf8'));
        seenOf('discovery.api_catalog').ok++;
        await httpSemantics('/.well-known/api-catalog');
      },

      async 'discovery.problem_type'() {
        const base = baseUrl.replace(/\/+$/, '');
        const page = async (target: string, name: ProblemName) => {
          const r = await fetchRaw(target);
          const info = PROBLEM_CATALOGUE[name];
          expect(r.status, target).toBe(200);
          expect(r.headers.get('content-type'), target).toBe('text/html; charset=utf-8');
          expect(r.headers.get('access-control-allow-origin'), target).toBe('*');
          expect(r.headers.get('cache-control'), target).toBe('public, max-age=60, stale-while-revalidate=300');
          expect(r.text, target).toContain(`<h1>${escapeHtml(info.title)}</h1>`);
          expect(r.text, target).toContain(`<strong>${info.status}</strong>`);
          expect(r.text, target).toContain('href="../openapi.json"');
          expect(RESOURCE_SCHEMAS.ProblemTypePage.safeParse(r.text).success).toBe(true);
          seenOf('discovery.problem_type').ok++;
        };
        // the type of real problems the server answers resolves to its page
        for (const [target, status] of [['/v1/events?limit=many', 400], ['/v1/hosts/no-such-host.example', 404], ['/v1/nope', 404], ['/v1/events', 405]] as const) {
          const p = expectProblem(await fetchRaw(target, status === 405 ? { method: 'DELETE' } : {}), status);
          expect(p.type.startsWith(`${base}/problems/`), p.type).toBe(true);
          const name = p.type.slice(base.length + '/problems/'.length);
          expect(isProblemName(name), name).toBe(true);
          if (isProblemName(name)) await page(p.type.slice(base.length), name); // the type URI's path under the base URL
        }
        // every name of the catalogue, quota-exceeded (an IANA type URI) included
        for (const name of PROBLEM_NAMES) {
          const uri = problemTypeUri(name, baseUrl);
          await page(name === 'quota-exceeded' ? '/problems/quota-exceeded' : uri.slice(base.length), name);
        }
        // an unknown name, or one spelt otherwise, is the plain 404
        for (const target of ['/problems/no-such-problem', '/problems/NOT-FOUND', '/problems/']) {
          const p = expectProblem(await fetchRaw(target), 404);
          expect(p.type).toBe(`${base}/problems/not-found`);
          seenOf('discovery.problem_type').notFound.add('not-found');
        }
        await httpSemantics('/problems/invalid-cursor');
      },

      async network() {
        await get('/v1/network', 200);
        await get('/v1/network?utm_source=e2e', 200); // unknown parameters are ignored
        await httpSemantics('/v1/network');
      },

      async 'hosts.list'() {
        const hosts = await page('/v1/hosts');
        expect(hosts.items.length).toBeGreaterThan(0);
        await httpSemantics('/v1/hosts');
      },

      async 'hosts.detail'() {
        const hosts = (await page('/v1/hosts')).items.map((h) => h.hostname as string);
        const picks = [hosts[0]!, hosts[Math.floor(hosts.length / 2)]!, hosts[hosts.length - 1]!];
        for (const h of picks) await get(`/v1/hosts/${h}`, 200);
        await get(`/v1/hosts/${picks[0]!.toUpperCase()}.`, 200); // case-insensitive, trailing dot ignored
        for (const at of [nowMs - 3 * 86_400_000, nowMs - 20 * 86_400_000, Date.parse('2026-01-01T00:00:00Z')]) {
          await get(`/v1/hosts/${picks[1]}?at=${new Date(at).toISOString()}`, 200);
        }
        await get(`/v1/hosts/${picks[1]}?at=${enc('2026-11-10T12:00:00+01:00')}`, 200);
        await problemOf(`/v1/hosts/${picks[0]}?at=yesterday`, 400);
        await problemOf(`/v1/hosts/${picks[0]}?at=2026-02-30T00:00:00Z`, 400);
        await problemOf('/v1/hosts/no-such-host.example', 404);
        await problemOf('/v1/hosts/not_a_hostname', 404);
        await httpSemantics(`/v1/hosts/${picks[0]}`);
      },

      async 'hosts.incidents'() {
        const incidents = (await page('/v1/incidents?limit=200')).items;
        expect(incidents.length).toBeGreaterThan(0);
        const host = incidents[0]!.hostname as string;
        const withIncidents = new Set(incidents.map((i) => i.hostname as string));
        const quiet = (await page('/v1/hosts')).items.map((h) => h.hostname as string).find((h) => !withIncidents.has(h))!;
        const base = `/v1/hosts/${host}/incidents`;
        const first = await page(base);
        expect(first.items.length).toBeGreaterThan(0);
        await get(`${base}?limit=1`, 200);
        await get(`${base}?status=closed&limit=1`, 200);
        await get(`${base}?status=OPEN`, 200);
        await get(`${base}?since=${first.items[0]!.started_at as string}`, 200);
        await get(`${base}?since=${new Date(Date.parse(first.items[0]!.started_at as string) + 1).toISOString()}`, 200);
        // The demo has at most one incident per host, so no next_cursor is issued here: a cursor minted at
        // the last item's key (any keyset position is a legal request) must give the empty rest of the list.
        const route = routeById('hosts.incidents')!;
        const last = first.items[first.items.length - 1]!;
        const minted = encodeCursor({ route: route.id, partition: [host], key: sortKeyOf(orderOf(route.list!, {}), last), hint: '', dir: 'next' });
        expect((await page(`${base}?cursor=${minted}`)).items).toEqual([]);
        await get(`${base}?status=closed&cursor=${minted}`, 200);
        expect((await page(`/v1/hosts/${quiet}/incidents`)).items).toEqual([]);
        await problemOf(`${base}?status=ongoing`, 400);
        await problemOf(`${base}?since=2026-11-01`, 400);
        await problemOf(`${base}?limit=ten`, 400);
        await problemOf(`${base}?cursor=${damaged(minted)}`, 400);
        await problemOf(`/v1/hosts/${quiet}/incidents?cursor=${minted}`, 400); // another host's cursor
        await problemOf(`${base}?cursor=${(await page('/v1/incidents?limit=1')).next_cursor}`, 400); // the global list's cursor
        await problemOf('/v1/hosts/no-such-host.example/incidents', 404);
        await httpSemantics(base);
      },

      async 'hosts.uptime'() {
        const hosts = (await page('/v1/hosts')).items.map((h) => h.hostname as string);
        const host = hosts[0]!;
        const base = `/v1/hosts/${host}/uptime`;
        const first = await walk(`${base}?limit=20`, 3);
        expect(first.length).toBe(3);
        const locations = [...new Set(first[0]!.items.map((i) => i.location as string))];
        expect(locations).toContain('__all__');
        const probe = locations.find((l) => l !== '__all__')!;
        await get(base, 200);
        await walk(`${base}?resolution=daily&limit=10`, 2);
        await get(`${base}?resolution=monthly`, 200);
        await walk(`${base}?location=__all__&limit=24`, 2);
        await get(`${base}?location=${probe}&resolution=daily`, 200);
        await get(`${base}?location=nowhere`, 200); // lenient: matches nothing
        const to = new Date(nowMs - 2 * 86_400_000).toISOString();
        const from = new Date(nowMs - 3 * 86_400_000).toISOString();
        await walk(`${base}?from=${from}&to=${to}&limit=50`, 3);
        await get(`${base}?from=${from}&to=${from}`, 200); // an empty window [from, from)
        await get(`${base}?from=${from}&limit=5`, 200);
        await get(`${base}?to=${to}&resolution=daily&limit=5`, 200);
        await get(`${base}?from=${enc('2026-11-19T01:00:00+01:00')}&to=${'2026-11-19T06:00:00.5Z'}&location=${probe}`, 200);
        await get(`${base}?from=2026-11-19T01:00:00 01:00&limit=3`, 200); // an unencoded "+" arrives as a space
        await get(`/v1/hosts/${hosts[hosts.length - 1]}/uptime?resolution=daily`, 200);
        await problemOf(`${base}?resolution=weekly`, 400);
        await problemOf(`${base}?from=${to}&to=${from}`, 400); // from after to
        await problemOf(`${base}?from=last-week`, 400);
        await problemOf(`${base}?to=2026-13-01T00:00:00Z`, 400);
        await problemOf(`${base}?limit=1.5`, 400);
        await problemOf(`${base}?cursor=${damaged(first[0]!.next_cursor!)}`, 400);
        // a cursor of the hourly list used on the daily list of the same host
        await problemOf(`${base}?resolution=daily&cursor=${first[0]!.next_cursor}`, 400);
        await problemOf('/v1/hosts/no-such-host.example/uptime', 404);
        await httpSemantics(base);
      },

      async 'incidents.list'() {
        const pages = await walk('/v1/incidents?limit=3', 3);
        expect(pages.length).toBe(3);
        await get('/v1/incidents', 200);
        await walk('/v1/incidents?status=closed&limit=5', 2);
        await get('/v1/incidents?status=open', 200);
        const host = pages[0]!.items[0]!.hostname as string;
        await walk(`/v1/incidents?host=${host.toUpperCase()}&limit=1`, 2);
        await get(`/v1/incidents?since=${new Date(nowMs - 7 * 86_400_000).toISOString()}`, 200);
        await get('/v1/incidents?host=no-such-host.example', 200); // lenient: empty page
        await problemOf('/v1/incidents?status=ongoing', 400);
        await problemOf('/v1/incidents?since=2026-11-01', 400);
        await get('/v1/incidents?limit=', 200); // empty: the default
        for (const limit of ['0', '-5', '500', '%205%20', '99999999999999999999']) await get(`/v1/incidents?limit=${limit}`, 200); // clamped
        await get('/v1/incidents?status=closed&status=open&limit=2', 200); // a repeated scalar: the first one
        await problemOf('/v1/incidents?limit=0x10', 400);
        await problemOf(`/v1/incidents?cursor=${damaged(pages[0]!.next_cursor!)}`, 400);
        await problemOf('/v1/incidents?cursor=not-a-cursor', 400);
        await httpSemantics('/v1/incidents?status=closed');
      },

      async 'participants.list'() {
        const first = await walk('/v1/participants?limit=5', 3);
        expect(first.length).toBe(3);
        expect(first[0]!.meta).toBeDefined();
        expect(first[1]!.meta).toBeUndefined();
        await get('/v1/participants', 200);
        for (const sort of ['first_seen.asc', 'name.asc', 'name.desc', 'country.asc', 'country.desc']) await walk(`/v1/participants?sort=${sort}&limit=7`, 2);
        const items = (await page('/v1/participants?limit=200')).items;
        const named = items.find((i) => typeof i.name === 'string' && (i.name as string).length > 6)!;
        const smp = items.find((i) => i.smp !== null)!.smp as string;
        const seat = items.find((i) => i.ap_seat_id !== null)!.ap_seat_id as string;
        await walk('/v1/participants?country=BE&limit=10', 2);
        await get('/v1/participants?country=be,NO&sort=name.asc', 200);
        await walk('/v1/participants?scheme=0208&registered=true&limit=4', 2);
        await get('/v1/participants?provenance=discovered&limit=3', 200);
        await get('/v1/participants?registered=FALSE', 200);
        await get(`/v1/participants?smp=${smp}&limit=3`, 200);
        await get(`/v1/participants?ap=${seat}&sort=country.asc&limit=3`, 200);
        await get(`/v1/participants?q=${enc((named.name as string).slice(1, 6))}`, 200);
        await get(`/v1/participants?q=${enc(named.id as string)}`, 200);
        await get(`/v1/participants?q=${enc(named.value as string)}`, 200);
        await get('/v1/participants?country=Belgium', 200); // lenient: matches nothing
        await get('/v1/participants?country=BE&country=NO&scheme=0208,0192&limit=5', 200); // repeated lists merge
        await get(`/v1/participants?q=${enc('  ' + (named.name as string).toUpperCase() + '  ')}`, 200);
        await get(`/v1/participants?q=${enc('zzz-no-such-name-\u00e9')}`, 200);
        await get('/v1/participants?provenance=directory&registered=false&sort=name.desc&limit=3', 200);
        await problemOf('/v1/participants?sort=popularity', 400);
        await problemOf('/v1/participants?registered=yes', 400);
        await problemOf('/v1/participants?provenance=imported', 400);
        await problemOf('/v1/participants?limit=abc', 400);
        await problemOf(`/v1/participants?cursor=${damaged(first[0]!.next_cursor!)}`, 400);
        // a cursor of another ordering
        await problemOf(`/v1/participants?sort=name.asc&cursor=${first[0]!.next_cursor}`, 400);
        await httpSemantics('/v1/participants?country=BE&limit=3');
      },

      async 'participants.detail'() {
        const items = (await page('/v1/participants?limit=50')).items;
        const ids = [items[0]!.id as string, items.find((i) => i.provenance === 'discovered')?.id as string | undefined, items[items.length - 1]!.id as string].filter((x): x is string => x !== undefined);
        const withEvents = col('SELECT p.pid FROM events e JOIN participant_list p ON p.participant_id = e.participant_id GROUP BY p.pid ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
        for (const id of [...ids, withEvents]) await get(`/v1/participants/${id}`, 200);
        const [scheme, value] = withEvents.split('::') as [string, string];
        await get(`/v1/participants/iso6523-actorid-upis::${scheme}:${value.toUpperCase()}`, 200);
        await get(`/v1/participants/${enc(withEvents)}`, 200);
        await problemOf('/v1/participants/not-an-id', 400);
        await problemOf('/v1/participants/0208::0000000097', 404);
        await httpSemantics(`/v1/participants/${withEvents}`);
      },

      async 'participants.events'() {
        const pid = col('SELECT p.pid FROM events e JOIN participant_list p ON p.participant_id = e.participant_id GROUP BY p.pid HAVING count(*) > 1 ORDER BY count(*) DESC, p.pid LIMIT 1')[0]!;
        const base = `/v1/participants/${pid}/events`;
        const pages = await walk(`${base}?limit=1`, 3);
        expect(pages.length).toBeGreaterThan(1);
        await get(base, 200);
        const quiet = col('SELECT pid FROM participant_list p WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.participant_id = p.participant_id) ORDER BY 1 LIMIT 1')[0]!;
        expect((await page(`/v1/participants/${quiet}/events`)).items).toEqual([]);
        await problemOf('/v1/participants/not-an-id/events', 400);
        await problemOf(`${base}?limit=many`, 400);
        await problemOf(`${base}?cursor=${damaged(pages[0]!.next_cursor!)}`, 400);
        await problemOf(`/v1/participants/${quiet}/events?cursor=${pages[0]!.next_cursor}`, 400); // another participant's cursor
        await problemOf('/v1/participants/0208::0000000097/events', 404);
        await httpSemantics(base);
      },

      async 'participants.history'() {
        const pid = col('SELECT p.pid FROM participant_history h JOIN participant_list p ON p.participant_id = h.participant_id GROUP BY p.pid ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
        const base = `/v1/participants/${pid}/history`;
        const pages = await walk(`${base}?limit=2`, 3);
        expect(pages.length).toBeGreaterThan(1);
        await get(base, 200);
        await problemOf('/v1/participants/0208/history', 400);
        await problemOf(`${base}?limit=-`, 400);
        await problemOf(`${base}?cursor=${damaged(pages[0]!.next_cursor!)}`, 400);
        await problemOf('/v1/participants/0208::0000000097/history', 404);
        await httpSemantics(base);
      },

      async 'stats.participants'() {
        await get('/v1/stats/participants', 200);
        await httpSemantics('/v1/stats/participants');
      },

      async 'providers.list'() {
        const p = await page('/v1/providers');
        expect(p.items.length).toBeGreaterThan(0);
        expect(p.next_cursor).toBeNull();
        await httpSemantics('/v1/providers');
      },

      async 'providers.detail'() {
        const slugs = (await page('/v1/providers')).items.map((p) => p.slug).filter((s): s is string => typeof s === 'string');
        expect(slugs.length).toBeGreaterThan(0);
        for (const slug of slugs.slice(0, 4)) await get(`/v1/providers/${slug}`, 200);
        await get(`/v1/providers/${slugs[0]!.toUpperCase()}`, 200);
        await problemOf('/v1/providers/no-such-provider', 404);
        await problemOf('/v1/providers/Not%20A%20Slug', 404);
        await httpSemantics(`/v1/providers/${slugs[0]}`);
      },

      async 'aps.list'() {
        const p = await page('/v1/aps');
        expect(p.items.length).toBeGreaterThan(0);
        expect(p.next_cursor).toBeNull();
        await httpSemantics('/v1/aps');
      },

      async 'aps.detail'() {
        const keys = (await page('/v1/aps')).items.map((a) => a.key as string);
        for (const key of [keys[0]!, keys[Math.floor(keys.length / 2)]!, keys[keys.length - 1]!, ...keys.filter((k) => k.startsWith('s-')).slice(0, 1), ...keys.filter((k) => k.startsWith('o-')).slice(0, 1)]) {
          await get(`/v1/aps/${key}`, 200);
        }
        const alias = col('SELECT alias FROM ap_key_aliases ORDER BY 1 LIMIT 1')[0];
        if (alias) await get(`/v1/aps/${alias}`, 200); // a stale key resolves to the current provider
        await problemOf('/v1/aps/c-nobody', 404);
        await problemOf('/v1/aps/not-a-key', 404);
        await httpSemantics(`/v1/aps/${keys[0]}`);
      },

      async 'aps.churn'() {
        const keys = col('SELECT DISTINCT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id ORDER BY 1');
        expect(keys.length).toBeGreaterThan(0);
        for (const key of keys.slice(0, 3)) await get(`/v1/aps/${key}/churn`, 200);
        await get(`/v1/aps/${keys[0]}/churn?from=2026-10-01&to=2026-11-21`, 200);
        await get(`/v1/aps/${keys[0]}/churn?to=2026-11-10`, 200);
        await problemOf(`/v1/aps/${keys[0]}/churn?from=2026-11-21&to=2026-11-01`, 400);
        await problemOf(`/v1/aps/${keys[0]}/churn?from=2026-02-30`, 400);
        await problemOf(`/v1/aps/${keys[0]}/churn?to=yesterday`, 400);
        await problemOf('/v1/aps/c-nobody/churn', 404);
        await httpSemantics(`/v1/aps/${keys[0]}/churn`);
      },

      async 'aps.churn_participants'() {
        const key = col('SELECT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id GROUP BY s.key ORDER BY sum(d.n) DESC, s.key LIMIT 1')[0]!;
        const base = `/v1/aps/${key}/churn/participants`;
        let rows = 0;
        for (const category of ['joiner', 'mover_in', 'mover_out', 'leaver']) {
          const p = await page(`${base}?category=${category}&from=2026-10-01`);
          expect(p.next_cursor).toBeNull();
          rows += p.items.length;
          await get(`${base}?category=${category.toUpperCase()}`, 200);
        }
        expect(rows).toBeGreaterThan(0);
        await get(`${base}?category=joiner&from=2026-11-01&to=2026-11-15`, 200);
        await problemOf(base, 400);
        await problemOf(`${base}?category=`, 400);
        await problemOf(`${base}?category=stayer`, 400);
        await problemOf(`${base}?category=joiner&from=2026-11-20&to=2026-11-10`, 400);
        await problemOf(`${base}?category=joiner&to=2026-11-31`, 400);
        await problemOf('/v1/aps/c-nobody/churn/participants?category=joiner', 404);
        await httpSemantics(`${base}?category=joiner`);
      },

      async 'seats.detail'() {
        const seats = (await page('/v1/aps')).items.flatMap((a) => a.seats as string[]);
        expect(seats.length).toBeGreaterThan(0);
        for (const s of seats.slice(0, 3)) await get(`/v1/seats/${s}`, 200);
        await get(`/v1/seats/${seats[0]!.toLowerCase()}`, 200);
        await problemOf('/v1/seats/PZZ999999', 404);
        await problemOf('/v1/seats/not-a-seat', 404);
        await httpSemantics(`/v1/seats/${seats[0]}`);
      },

      async 'events.list'() {
        const pages = await walk('/v1/events?limit=5', 3);
        expect(pages.length).toBe(3);
        expect(pages[0]!.meta).toBeDefined();
        await get('/v1/events', 200);
        // prev_cursor: from the second page, the events just newer than its newest row (the first page's)
        const newer = await page(`/v1/events?limit=5&prev_cursor=${pages[1]!.prev_cursor}`);
        expect(newer.items.map((i) => i.id)).toEqual(pages[0]!.items.map((i) => i.id));
        // at the newest edge nothing is newer, and the poll keeps its watermark
        const edge = await page(`/v1/events?prev_cursor=${pages[0]!.prev_cursor}`);
        expect(edge.items).toEqual([]);
        expect(edge.prev_cursor).toBe(pages[0]!.prev_cursor);
        const types = [...new Set(pages.flatMap((p) => p.items.map((i) => i.type as string)))];
        await walk(`/v1/events?type=${types[0]}&limit=3`, 2);
        await get(`/v1/events?type=${types.join(',')}&limit=4`, 200);
        await get(`/v1/events?type=${types[0]}&type=HOST_CERT_ROTATED`, 200);
        const host = col('SELECT hostname FROM event_hosts GROUP BY hostname ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
        const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
        const pid = col('SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id GROUP BY p.pid ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
        await walk(`/v1/events?host=${host}&limit=2`, 2);
        await walk(`/v1/events?seat=${seat.toLowerCase()}&limit=2`, 2);
        await get(`/v1/events?participant=${pid}`, 200);
        const since = new Date(nowMs - 10 * 86_400_000).toISOString();
        const until = new Date(nowMs - 3 * 86_400_000).toISOString();
        await walk(`/v1/events?since=${since}&until=${until}&limit=20`, 2);
        await get(`/v1/events?since=${since}&until=${since}`, 200);
        await get('/v1/events?host=no-such-host.example', 200);
        await get(`/v1/events?until=${until}&limit=3`, 200);
        await get(`/v1/events?since=${since}&type=${types[0]}`, 200);
        await get(`/v1/events?participant=iso6523-actorid-upis::${pid.replace('::', ':')}`, 200);
        await get(`/v1/events?since=${since}&limit=4&prev_cursor=${pages[2]!.prev_cursor}`, 200);
        await problemOf('/v1/events?type=bogus_type', 400);
        await problemOf('/v1/events?participant=not-an-id', 400);
        await problemOf('/v1/events?since=yesterday', 400);
        await problemOf('/v1/events?until=2026-11-31T00:00:00Z', 400);
        await problemOf(`/v1/events?since=${until}&until=${since}`, 400);
        await problemOf('/v1/events?limit=1e2', 400);
        await problemOf(`/v1/events?cursor=${damaged(pages[0]!.next_cursor!)}`, 400);
        await problemOf(`/v1/events?prev_cursor=${damaged(pages[0]!.prev_cursor!)}`, 400);
        await problemOf(`/v1/events?cursor=${pages[1]!.next_cursor}&prev_cursor=${pages[1]!.prev_cursor}`, 400);
        await problemOf(`/v1/events?cursor=${pages[1]!.prev_cursor}`, 400); // a prev_cursor as cursor
        await problemOf(`/v1/events?prev_cursor=${pages[1]!.next_cursor}`, 400); // a next_cursor as prev_cursor
        await httpSemantics('/v1/events?limit=5');
      },

      async 'anomalies.list'() {
        const pages = await walk('/v1/anomalies?limit=2', 3);
        expect(pages.length).toBeGreaterThan(1);
        await get('/v1/anomalies', 200);
        const all = (await page('/v1/anomalies?limit=200')).items;
        const detector = all[0]!.detector as string;
        await get(`/v1/anomalies?detector=${detector}`, 200);
        await get(`/v1/anomalies?grade=warning&limit=3`, 200);
        await get(`/v1/anomalies?grade=NOTICE`, 200);
        await get('/v1/anomalies?acknowledged=true', 200);
        await get('/v1/anomalies?acknowledged=false&limit=2', 200);
        const host = col('SELECT hostname FROM anomaly_hosts ORDER BY 1 LIMIT 1')[0];
        if (host) await get(`/v1/anomalies?host=${host}`, 200);
        const seat = col('SELECT seat_id FROM anomaly_seats ORDER BY 1 LIMIT 1')[0];
        if (seat) await get(`/v1/anomalies?seat=${seat}`, 200);
        await get(`/v1/anomalies?since=${new Date(nowMs - 14 * 86_400_000).toISOString()}&limit=1`, 200);
        await problemOf('/v1/anomalies?detector=bogus', 400);
        await problemOf('/v1/anomalies?grade=critical', 400);
        await problemOf('/v1/anomalies?acknowledged=1', 400);
        await problemOf('/v1/anomalies?since=2026-11-01T25:00:00Z', 400);
        await problemOf('/v1/anomalies?limit=x', 400);
        await problemOf(`/v1/anomalies?cursor=${damaged(pages[0]!.next_cursor!)}`, 400);
        await problemOf(`/v1/anomalies?cursor=${(await page('/v1/events?limit=1')).next_cursor}`, 400); // another endpoint's cursor
        await httpSemantics('/v1/anomalies');
      },

      async 'anomalies.detail'() {
        const ids = (await page('/v1/anomalies?limit=200')).items.map((a) => a.id as string);
        expect(ids.length).toBeGreaterThan(0);
        for (const id of [ids[0]!, ids[Math.floor(ids.length / 2)]!, ids[ids.length - 1]!]) await get(`/v1/anomalies/${id}`, 200);
        await get(`/v1/anomalies/${ids[0]!.toUpperCase()}`, 200);
        await problemOf('/v1/anomalies/cis-0000000000000000', 404);
        await problemOf('/v1/anomalies/Not%20an%20id', 404);
        await httpSemantics(`/v1/anomalies/${ids[0]}`);
      },

      async sml() {
        await get('/v1/sml', 200);
        await httpSemantics('/v1/sml');
      },
    };

    for (const route of ROUTE_LIST) {
      it(`${route.id} ${route.path}`, async () => {
        const run = CASES[route.id];
        expect(run, `no requests for route ${route.id}: add them to CASES`).toBeDefined();
        await run!();
      });
    }

    it('every route was answered 200, and every 400 and 404 case of the route table was requested', () => {
      for (const route of ROUTE_LIST) {
        const s = seenOf(route.id);
        expect(s.ok, `${route.id}: no 200 answer`).toBeGreaterThan(0);
        expect([...s.bad].sort(), `${route.id}: 400 cases`).toEqual(expect.arrayContaining(badRequestParams(route)));
        expect([...s.notFound].sort(), `${route.id}: 404 cases`).toEqual(expect.arrayContaining(notFoundProblems(route)));
      }
    });

    it('random requests on every data route (valid and invalid values, real cursors of any list) equal the oracle', async () => {
      const hosts = (await page('/v1/hosts')).items.map((h) => h.hostname as string);
      const parts = (await page('/v1/participants?limit=100')).items;
      const aps = (await page('/v1/aps')).items;
      const anomalies = (await page('/v1/anomalies?limit=200')).items.map((a) => a.id as string);
      const slugs = (await page('/v1/providers')).items.map((p) => p.slug).filter((x): x is string => typeof x === 'string');
      const seats = aps.flatMap((a) => a.seats as string[]);
      const pids = [...parts.slice(0, 5).map((p) => p.id as string), ...col('SELECT p.pid FROM events e JOIN participant_list p ON p.participant_id = e.participant_id GROUP BY p.pid ORDER BY count(*) DESC, 1 LIMIT 3')];
      const iso = (days: number) => new Date(nowMs + days * 86_400_000).toISOString();
      const ts = [iso(-1), iso(-3.5), iso(-12), iso(-40), iso(1), '2026-11-20T10:00:00+02:00', '2026-11-20T10:00:00.123456Z', 'yesterday', '2026-02-30T00:00:00Z'];
      const days = ['2026-10-20', '2026-11-01', '2026-11-15', '2026-11-21', '2026-11-22', '2026-02-30', 'today'];
      const withBad = (values: readonly string[], ...bad: string[]) => [...values, ...values.map((v) => v.toUpperCase()), ...bad];
      const samples: Record<string, string[]> = {
        hostname: [...hosts.slice(0, 4), `${hosts[0]!.toUpperCase()}.`, 'no-such-host.example', 'bad'],
        'participants:id': [...pids, `iso6523-actorid-upis::${pids[0]!.replace('::', ':')}`, '0208::0000000097', 'not-an-id'],
        'anomalies:id': [...anomalies.slice(0, 3), 'cis-0000000000000000', 'Not An Id'],
        slug: [...slugs.slice(0, 3), 'no-such-provider'],
        key: [...aps.slice(0, 4).map((a) => a.key as string), ...col('SELECT alias FROM ap_key_aliases ORDER BY 1 LIMIT 2'), 'c-nobody', 'nokey'],
        seatId: [...seats.slice(0, 3), seats[0]!.toLowerCase(), 'PZZ999999', 'x'],
        at: ts,
        since: ts,
        until: ts,
        'hosts:from': ts,
        'hosts:to': ts,
        'aps:from': days,
        'aps:to': days,
        limit: ['1', '2', '5', '50', '0', '250', 'ten'],
        cursor: ['garbage'],
        prev_cursor: ['garbage'],
        status: withBad(INCIDENT_STATUSES, 'ongoing'),
        resolution: withBad(RESOLUTIONS, 'weekly'),
        location: ['__all__', 'nowhere', ...col('SELECT name FROM locations ORDER BY 1 LIMIT 2')],
        sort: withBad(PARTICIPANT_SORTS, 'popularity'),
        country: ['BE', 'be,NO', 'SE,DK,FI', 'Belgium'],
        scheme: ['0208', '0192,9925', '9999'],
        smp: [...new Set(parts.map((p) => p.smp).filter((x): x is string => typeof x === 'string'))].slice(0, 2),
        ap: [seats[0]!, `${seats[0]},${seats[1]}`, 'PZZ999999'],
        registered: ['true', 'false', 'TRUE', 'yes'],
        provenance: withBad(PROVENANCES, 'imported'),
        q: [(parts.find((p) => typeof p.name === 'string')!.name as string).slice(0, 5), pids[0]!, pids[0]!.split('::')[1]!, 'zz top'],
        type: [EVENT_TYPES[0], `${EVENT_TYPES[1]},${EVENT_TYPES[6]}`, EVENT_TYPES.join(','), 'bogus'],
        host: [...hosts.slice(0, 3), 'no-such-host.example'],
        seat: [...seats.slice(0, 2), 'PZZ999999'],
        participant: [...pids.slice(0, 3), 'not-an-id'],
        detector: withBad(DETECTORS, 'bogus'),
        grade: withBad(GRADES, 'critical'),
        acknowledged: ['true', 'false', '1'],
        category: withBad(CHURN_CATEGORIES, 'stayer'),
      };
      const routes = ROUTE_LIST.filter((r) => isDataRoute(r.id));
      const valuesOf = (route: AnyRoute, name: string): fc.Arbitrary<string> => {
        const family = route.id.split('.')[0]!;
        const list = samples[`${family}:${name}`] ?? samples[name];
        if (!list || list.length === 0) throw new Error(`no sample values for parameter ${name} of ${route.id}: add them`);
        return name === 'cursor' || name === 'prev_cursor' ? fc.constantFrom(...list, ...cursorPool) : fc.constantFrom(...list);
      };
      const statuses: Record<number, number> = {};
      const request = fc.constantFrom(...routes).chain((route) => {
        const entries = Object.entries(route.params);
        // query parameters: absent 3 times out of 5
        const optional = (a: fc.Arbitrary<string>) => fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: a });
        return fc.tuple(fc.constant(route), fc.tuple(...entries.map(([name, def]) => (def.in === 'path' ? valuesOf(route, name) : optional(valuesOf(route, name))))));
      });
      await fc.assert(
        fc.asyncProperty(request, async ([route, values]) => {
          const names = Object.keys(route.params);
          let target = route.path;
          const query: string[] = [];
          names.forEach((name, i) => {
            const v = values[i];
            if (v === null || v === undefined) return;
            if (route.params[name]!.in === 'path') target = target.replace(`{${name}}`, enc(v));
            else query.push(`${name}=${enc(v)}`);
          });
          const got = await get(query.length > 0 ? `${target}?${query.join('&')}` : target);
          statuses[got.status] = (statuses[got.status] ?? 0) + 1;
        }),
        { numRuns: Number(process.env.E2E_FC_RUNS ?? 300) },
      );
      // the mix is meaningful: mostly answers, and problems of both kinds
      expect(statuses[200] ?? 0).toBeGreaterThan(100);
      expect(statuses[400] ?? 0).toBeGreaterThan(10);
      expect(statuses[404] ?? 0).toBeGreaterThan(10);
    });

    it('answers 404 not-found for a path no endpoint has, and 405 for other methods', async () => {
      for (const target of ['/v1/nope', '/v1/hosts/', '/V1/network', '/v2/network']) {
        const r = await fetchRaw(target);
        const p = expectProblem(r, 404);
        expect(p.type).toBe(`${baseUrl.replace(/\/+$/, '')}/problems/not-found`);
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
      }
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const r = await fetchRaw('/v1/events', { method, ...(method === 'DELETE' ? {} : { body: 'x' }) });
        expectProblem(r, 405);
        expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
      const head = await send('/v1/hosts/no-such-host.example', { method: 'HEAD' });
      expect(head.status).toBe(404);
      expect(new Uint8Array(await head.arrayBuffer()).length).toBe(0);
    });

    it('serves the site as built: the status page at /, its pages, the stylesheet, the API page and the feed', async () => {
      const site: [target: string, file: string, type: string][] = [
        ['/', 'index.html', 'text/html; charset=utf-8'],
        ['/status/hosts-1.html', 'status/hosts-1.html', 'text/html; charset=utf-8'],
        ['/status/style.css', 'status/style.css', 'text/css; charset=utf-8'],
        ['/api.html', 'api.html', 'text/html; charset=utf-8'],
        ['/feed.atom', 'feed.atom', 'application/atom+xml'],
      ];
      for (const [target, file, type] of site) {
        const res = await send(target);
        const body = new Uint8Array(await res.arrayBuffer());
        expect(res.status, target).toBe(200);
        expect(res.headers.get('content-type'), target).toBe(type);
        expect(Buffer.from(body).equals(fs.readFileSync(path.join(out, file))), `${target}: the bytes of ${file}`).toBe(true);
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
        expect(res.headers.get('accept-ranges')).toBe('bytes');
        expect(res.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
        const etag = res.headers.get('etag');
        expect(etag, target).toMatch(/^"[^"]+"$/);
        const head = await send(target, { method: 'HEAD' });
        expect(head.status).toBe(200);
        expect(new Uint8Array(await head.arrayBuffer()).length).toBe(0);
        expect(head.headers.get('content-length')).toBe(String(body.length));
        expect(head.headers.get('etag')).toBe(etag);
        const again = await send(target, { headers: { 'If-None-Match': etag! } });
        expect(again.status, `If-None-Match ${target}`).toBe(304);
      }
      expect((await fetchRaw('/status/')).status).toBe(404);
      expect((await fetchRaw('/bulk/none/such.parquet')).status).toBe(404);
    });

    it('answers byte ranges of site files (206, 416, If-Range) as DuckDB and Polars read bulk files over HTTP', async () => {
      const { target, bytes } = bulkSample
        ? { target: `/${BULK_SAMPLE.path}`, bytes: BULK_SAMPLE.bytes }
        : { target: '/api.html', bytes: new Uint8Array(fs.readFileSync(path.join(out, 'api.html'))) };
      const size = bytes.length;
      const whole = await send(target);
      expect(whole.status).toBe(200);
      expect(Buffer.from(await whole.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
      if (bulkSample) expect(whole.headers.get('content-type')).toBe('application/vnd.apache.parquet');
      const etag = whole.headers.get('etag')!;
      const cases: [range: string, start: number, end: number][] = [
        ['bytes=0-1', 0, 1], // (not bytes=0-0: s3rver, the Lambda test's S3, reads a last byte of 0 as none)
        ['bytes=1000-1999', 1000, 1999],
        [`bytes=${size - 10}-${size + 1000}`, size - 10, size - 1], // the end past the file is clamped
        ['bytes=250-', 250, size - 1],
        ['bytes=-8', size - 8, size - 1], // a footer, as a Parquet reader asks first
        [`bytes=-${size * 2}`, 0, size - 1],
      ];
      for (const [range, start, end] of cases) {
        const r = await send(target, { headers: { Range: range } });
        expect(r.status, range).toBe(206);
        expect(r.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${size}`);
        expect(r.headers.get('content-length'), range).toBe(String(end - start + 1));
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
        expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(bytes.subarray(start, end + 1))), range).toBe(true);
        const head = await send(target, { method: 'HEAD', headers: { Range: range } });
        expect(head.status).toBe(206);
        expect(head.headers.get('content-length')).toBe(String(end - start + 1));
      }
      for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 9}`, 'bytes=-0']) {
        const r = await fetchRaw(target, { headers: { Range: range } });
        expectProblem(r, 416);
        expect(r.headers.get('content-range'), range).toBe(`bytes */${size}`);
      }
      // Ignored (RFC 9110 §14.2): another unit, several ranges, a range whose last byte is before its first.
      for (const range of ['items=0-5', 'bytes=0-1,5-6', 'bytes=9-2']) {
        const r = await send(target, { headers: { Range: range } });
        expect(r.status, range).toBe(200);
        expect(Number(r.headers.get('content-length'))).toBe(size);
        await r.arrayBuffer();
      }
      const current = await send(target, { headers: { Range: 'bytes=10-19', 'If-Range': etag } });
      expect(current.status).toBe(206);
      await current.arrayBuffer();
      const stale = await send(target, { headers: { Range: 'bytes=10-19', 'If-Range': '"an-older-version"' } });
      expect(stale.status).toBe(200);
      expect((await stale.arrayBuffer()).byteLength).toBe(size);
    });

    it('answers the CORS preflight with 204 and the allow headers, on any path', async () => {
      for (const target of ['/v1/events', '/v1/participants?limit=5', '/v1/nope']) {
        const r = await send(target, { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' } });
        expect(r.status, target).toBe(204);
        expect(await r.text()).toBe('');
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
        expect(r.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
        expect(r.headers.get('access-control-allow-headers')).toBe('Authorization, X-API-Key, If-None-Match');
        expect(Number(r.headers.get('access-control-max-age'))).toBeGreaterThan(0);
        expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
    });
  });
}
