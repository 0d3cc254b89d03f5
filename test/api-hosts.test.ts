// Network, hosts, incidents, uptime and SML endpoints (docs/api-hosts.md): the shim's answer composed
// from the rendered snapshot files is byte-identical to the oracle's answer from SQLite, for random
// valid and invalid requests; whole pagination walks give every item once, in order; every body
// matches its response schema; the 400 and 404 cases give the catalogued problems.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/api/cursor.js';
import { TIMESTAMP_MAX_MS, TIMESTAMP_MIN_MS } from '../src/api/params.js';
import { jsonBody, jsonText } from '../src/api/json.js';
import { compareKeys, type Direction, type SortKey } from '../src/api/sort-keys.js';
import { runQuery } from '../src/api/query/index.js';
import { finishResult, paramErrorsOf } from '../src/api/result.js';
import { matchRoute } from '../src/api/routes/match.js';
import { parseRequest } from '../src/api/routes/request.js';
import { routeById } from '../src/api/routes/table.js';
import { RESOURCE_SCHEMAS, type ResourceName } from '../src/api/schemas/index.js';
import type { Db } from '../src/db/index.js';
import { hostView } from '../src/derive/hosts/read.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { createResolve, SNAPSHOT_INFO_PATH } from '../src/edge/resolve.js';
import type { Resolve } from '../src/edge/types.js';
import { RenderContext } from '../src/render/context.js';
import { HOSTS_RENDERERS } from '../src/render/routes/hosts.js';
import { DirectorySink } from '../src/render/sink.js';
import { directoryReader } from '../src/serve/index.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

const BASE = 'https://api.example.test';
const HOUR = 3_600_000;
const DAY = 86_400_000;

let db: Db;
let nowMs: number;
let resolve: Resolve;
let reader: ReturnType<typeof directoryReader>;
let hosts: string[];
let hostsWithIncidents: string[];
let incidentKeys: SortKey[];
let locations: string[];
let stateStarts: number[];
let dataStart: number;
const maxStats = new Map<string, ReadStats>();
let renderSeconds = 0;

beforeAll(async () => {
  // The small demo derived once per run (test/helpers/demo-fixture.ts), copied.
  db = copyOfDb((await derivedSmallDemo()).db).open();
  nowMs = Date.parse(smallDemo().now);
  const out = tempDir('api-hosts-');
  const sink = new DirectorySink(out);
  // Few items per chunk (default byte budget): lists span many chunks, and the long uptime lists
  // (5,880 hourly buckets per host) get an inner index level.
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 40, chunkMaxBytes: 65_536 }, jsonBody);
  const t0 = performance.now();
  for (const render of Object.values(HOSTS_RENDERERS)) render(ctx);
  renderSeconds = (performance.now() - t0) / 1000;
  fs.writeFileSync(path.join(out, SNAPSHOT_INFO_PATH), jsonText({ generated_at: new Date(nowMs).toISOString(), base_url: BASE }));
  sink.close();
  reader = directoryReader(out);
  resolve = createResolve({
    onStats: (routeId, s) => {
      const m = maxStats.get(routeId) ?? { files: 0, bytes: 0, decoded: 0, chunks: 0 };
      maxStats.set(routeId, { files: Math.max(m.files, s.files), bytes: Math.max(m.bytes, s.bytes), decoded: Math.max(m.decoded, s.decoded), chunks: Math.max(m.chunks, s.chunks) });
    },
  });
  hosts = db.prepare('SELECT hostname FROM hosts ORDER BY hostname').pluck().all() as string[];
  hostsWithIncidents = db.prepare('SELECT DISTINCT h.hostname FROM host_incidents i JOIN hosts h ON h.id = i.host_id ORDER BY 1').pluck().all() as string[];
  incidentKeys = (db.prepare('SELECT started_at, id FROM host_incidents ORDER BY started_at DESC, id DESC').raw().all() as [number, number][]).map((r) => [r[0], r[1]]);
  locations = db.prepare('SELECT name FROM locations ORDER BY name').pluck().all() as string[];
  stateStarts = db.prepare('SELECT DISTINCT valid_from FROM host_state ORDER BY 1').pluck().all() as number[];
  dataStart = db.prepare('SELECT min(bucket_start) FROM uptime_hourly').pluck().get() as number;
}, 120_000);

afterAll(() => {
  // The read cost of one composed answer (files and bytes), per route, on the small demo.
  console.log(`render ${renderSeconds.toFixed(1)} s; max reads per answer:`, JSON.stringify(Object.fromEntries(maxStats)));
  db?.close();
});

interface Served {
  status: number;
  text: string;
}

async function viaShim(target: string): Promise<Served> {
  const a = await resolve({ url: new URL(BASE + target), routeId: null }, reader);
  return { status: a.status, text: new TextDecoder().decode(a.body) };
}

function viaOracle(target: string): Served {
  const url = new URL(BASE + target);
  const m = matchRoute(url.pathname);
  if (!m) throw new Error(`no route for ${target}`);
  const parsed = parseRequest(m.route, m.pathParams, url.searchParams, { now: nowMs });
  const r = parsed.ok ? runQuery(m.route.id, db, parsed.params, nowMs) : paramErrorsOf(parsed.errors);
  const done = finishResult(r, { baseUrl: BASE, instance: url.pathname });
  return done.status === 200 ? { status: 200, text: jsonText(done.body) } : { status: done.status, text: jsonText(done.problem) };
}

/** Asks both, checks byte identity and the schema of the body; returns the parsed body. */
async function same(target: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const o = viaOracle(target);
  const s = await viaShim(target);
  expect({ target, status: s.status, text: s.text }).toEqual({ target, status: o.status, text: o.text });
  const body = JSON.parse(o.text) as Record<string, unknown>;
  const route = matchRoute(new URL(BASE + target).pathname)!.route;
  const schema = o.status === 200 ? RESOURCE_SCHEMAS[route.response as ResourceName] : RESOURCE_SCHEMAS.Problem;
  const check = schema.safeParse(body);
  if (!check.success) throw new Error(`${target}: ${o.status} body does not match its schema: ${check.error.message}`);
  return { status: o.status, body };
}

function q(pathname: string, params: Record<string, string | number | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) sp.set(k, String(v));
  const s = sp.toString();
  return s === '' ? pathname : `${pathname}?${s}`;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const hostPath = (h: string): string => `/v1/hosts/${encodeURIComponent(h)}`;

const hostArb = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...hosts) },
    { weight: 2, arbitrary: fc.constantFrom(...hostsWithIncidents) },
    // Folded to a known host (case, trailing dot) or unknown.
    { weight: 1, arbitrary: fc.constantFrom(...hosts).map((h) => `${h.toUpperCase()}.`) },
    { weight: 1, arbitrary: fc.constantFrom('unknown-host.example.org', 'smp.nowhere.test') },
  );
const limitArb = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.constantFrom(1, 2, 50));

/** Walks every page of a list through both sides; returns the items. */
async function walk(target: string, keyOf: (item: Record<string, unknown>) => SortKey, dirs: Direction[]): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let next: string | null = null;
  for (let pages = 0; ; pages++) {
    expect(pages).toBeLessThan(20_000);
    const url = next === null ? target : `${target}${target.includes('?') ? '&' : '?'}cursor=${next}`;
    const { status, body } = await same(url);
    expect(status).toBe(200);
    const page = body.items as Record<string, unknown>[];
    items.push(...page);
    next = body.next_cursor as string | null;
    if (next === null) break;
    expect(page.length).toBeGreaterThan(0);
  }
  for (let i = 1; i < items.length; i++) expect(compareKeys(keyOf(items[i - 1]!), keyOf(items[i]!), dirs)).toBeLessThan(0);
  return items;
}

const incidentKey = (i: Record<string, unknown>): SortKey => [Date.parse(i.started_at as string), i.id as number];
const uptimeKey = (b: Record<string, unknown>): SortKey => [Date.parse(b.bucket_start as string), b.location as string];

describe('single resources', () => {
  it('network, hosts and sml answer the same from files as from the database', async () => {
    const net = await same('/v1/network');
    expect(net.status).toBe(200);
    const counts = net.body.hosts as { up: number; down: number; degraded: number };
    const list = await same('/v1/hosts');
    const items = list.body.items as { verdict: string | null }[];
    // The network summary counts the hosts list's verdicts (unknown ones are not counted).
    for (const v of ['up', 'down', 'degraded'] as const) expect(counts[v]).toBe(items.filter((i) => i.verdict === v).length);
    expect(net.body.open_incidents).toBe(db.prepare("SELECT count(*) FROM host_incidents WHERE status = 'open'").pluck().get());
    expect(net.body.anomalies_24h).toBe(db.prepare('SELECT count(*) FROM anomalies WHERE observed_at > ? AND observed_at <= ?').pluck().get(nowMs - DAY, nowMs));
    expect(net.body.generated_at).toBe(iso(nowMs));
    const sml = await same('/v1/sml');
    expect((sml.body.zones as unknown[]).length).toBe(db.prepare('SELECT count(*) FROM zone_list').pluck().get());
  });

  it('a host as of any instant equals hostView(db, host, at, now), for random hosts and instants', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostArb(),
        fc.oneof(
          fc.constant(undefined),
          fc.integer({ min: dataStart - 2 * DAY, max: nowMs + 2 * DAY }),
          // the first and last instants the API accepts (years 0000 and 9999)
          fc.constantFrom(TIMESTAMP_MIN_MS, TIMESTAMP_MAX_MS),
          // exactly at, and just before, an interval boundary
          fc.constantFrom(...stateStarts).chain((t) => fc.constantFrom(t, t - 1, t + 1)),
        ),
        async (h, at) => {
          const r = await same(q(hostPath(h), { at: at === undefined ? undefined : iso(at) }));
          const canon = h.toLowerCase().replace(/\.$/, '');
          const expected = hostView(db, canon, at ?? null, nowMs);
          if (expected === null) expect(r.status).toBe(404);
          else {
            expect(r.status).toBe(200);
            expect(r.body.verdict).toBe(expected.verdict);
            expect((r.body.cert as { fingerprint: string } | null)?.fingerprint ?? null).toBe(expected.cert?.fingerprint ?? null);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('at with an offset names the same instant as in UTC', async () => {
    const h = hosts[0]!;
    const t = stateStarts[Math.floor(stateStarts.length / 2)]!;
    const utc = await viaShim(q(hostPath(h), { at: iso(t) }));
    const offset = await viaShim(q(hostPath(h), { at: new Date(t + HOUR).toISOString().replace('Z', '+01:00').replace('.000', '') }));
    expect(offset).toEqual(utc);
  });
});

describe('incidents', () => {
  it('random /v1/incidents requests are byte-identical', async () => {
    await fc.assert(
      fc.asyncProperty(
        // The host filter never rejects: odd values match nothing.
        fc.option(fc.oneof({ weight: 4, arbitrary: hostArb() }, { weight: 1, arbitrary: fc.oneof(fc.constantFrom('../x', 'a b', '.', '%2F'), fc.string()) }), { nil: undefined }),
        fc.option(fc.constantFrom('open', 'closed', 'OPEN'), { nil: undefined }),
        fc.option(fc.integer({ min: dataStart - DAY, max: nowMs + DAY }), { nil: undefined }),
        fc.option(limitArb, { nil: undefined }),
        fc.option(fc.constantFrom(...incidentKeys), { nil: undefined }),
        async (host, status, since, limit, after) => {
          const cursor = after ? encodeCursor({ route: 'incidents.list', partition: [], key: after, hint: '', dir: 'next' }) : undefined;
          const r = await same(q('/v1/incidents', { host, status, since: since === undefined ? undefined : iso(since), limit, cursor }));
          expect(r.status).toBe(200);
          for (const i of r.body.items as { status: string; started_at: string; hostname: string }[]) {
            if (status) expect(i.status).toBe(status.toLowerCase());
            if (since !== undefined) expect(Date.parse(i.started_at)).toBeGreaterThanOrEqual(since);
            if (host?.trim()) expect(i.hostname).toBe(host.trim().toLowerCase().replace(/\.$/, ''));
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('random /v1/hosts/{h}/incidents requests are byte-identical', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostArb(),
        fc.option(fc.constantFrom('open', 'closed'), { nil: undefined }),
        fc.option(fc.integer({ min: dataStart - DAY, max: nowMs + DAY }), { nil: undefined }),
        fc.option(limitArb, { nil: undefined }),
        fc.option(fc.constantFrom(...incidentKeys), { nil: undefined }),
        async (h, status, since, limit, after) => {
          const canon = h.toLowerCase().replace(/\.$/, '');
          const cursor = after ? encodeCursor({ route: 'hosts.incidents', partition: [canon], key: after, hint: '', dir: 'next' }) : undefined;
          const r = await same(q(`${hostPath(h)}/incidents`, { status, since: since === undefined ? undefined : iso(since), limit, cursor }));
          expect(r.status).toBe(hosts.includes(canon) ? 200 : 404);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('walks at limits 1, 7, 50, 200 give every incident once, newest first', async () => {
    const total = db.prepare('SELECT count(*) FROM host_incidents').pluck().get() as number;
    const closed = db.prepare("SELECT count(*) FROM host_incidents WHERE status = 'closed'").pluck().get() as number;
    expect(total).toBeGreaterThan(5);
    for (const limit of [1, 7, 50, 200]) {
      const all = await walk(q('/v1/incidents', { limit }), incidentKey, ['desc', 'desc']);
      expect(new Set(all.map((i) => i.id)).size).toBe(total);
      expect(all.length).toBe(total);
      const onlyClosed = await walk(q('/v1/incidents', { limit, status: 'closed' }), incidentKey, ['desc', 'desc']);
      expect(onlyClosed.length).toBe(closed);
      for (const h of hostsWithIncidents.slice(0, 3)) {
        const mine = await walk(q(`${hostPath(h)}/incidents`, { limit }), incidentKey, ['desc', 'desc']);
        expect(mine.map((i) => i.id)).toEqual(all.filter((i) => i.hostname === h).map((i) => i.id));
      }
    }
  });
});

describe('uptime', () => {
  const resolutionStep = { hourly: HOUR, daily: DAY, monthly: 31 * DAY } as const;

  it('random /v1/hosts/{h}/uptime requests are byte-identical', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostArb(),
        fc.option(fc.constantFrom('hourly', 'daily', 'monthly', 'Daily'), { nil: undefined }),
        fc.option(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: dataStart - 2 * DAY, max: nowMs + DAY }) }, { weight: 1, arbitrary: fc.constant(TIMESTAMP_MIN_MS) }), { nil: undefined }),
        fc.option(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1, max: 40 * DAY }) }, { weight: 1, arbitrary: fc.constant(TIMESTAMP_MAX_MS - nowMs - DAY) }), { nil: undefined }),
        fc.option(fc.oneof(fc.constantFrom(...locations, '__all__', 'FRA'), fc.constant('nowhere')), { nil: undefined }),
        fc.option(limitArb, { nil: undefined }),
        fc.option(fc.tuple(fc.integer({ min: dataStart - DAY, max: nowMs + DAY }), fc.constantFrom(...locations, '__all__', 'a', 'zzz'), fc.boolean()), { nil: undefined }),
        async (h, resolution, from, span, location, limit, pos) => {
          const canon = h.toLowerCase().replace(/\.$/, '');
          const res = (resolution ?? 'hourly').toLowerCase() as keyof typeof resolutionStep;
          // Cursor positions: bucket starts of the resolution (aligned) or any instant (still a legal keyset position).
          const at = pos === undefined ? undefined : pos[2] ? Math.floor(pos[0] / resolutionStep[res]) * resolutionStep[res] : pos[0];
          const cursor = pos === undefined ? undefined : encodeCursor({ route: 'hosts.uptime', partition: [canon, res], key: [at!, pos[1]], hint: '', dir: 'next' });
          const to = from !== undefined && span !== undefined ? from + span : undefined;
          const r = await same(q(`${hostPath(h)}/uptime`, { resolution, from: from === undefined ? undefined : iso(from), to: to === undefined ? undefined : iso(to), location, limit, cursor }));
          expect(r.status).toBe(hosts.includes(canon) ? 200 : 404);
          if (r.status !== 200) return;
          for (const b of r.body.items as { bucket_start: string; location: string; resolution: string }[]) {
            expect(b.resolution).toBe(res);
            if (location !== undefined) expect(b.location).toBe(location.toLowerCase());
            if (from !== undefined) expect(Date.parse(b.bucket_start)).toBeGreaterThanOrEqual(from);
            if (to !== undefined) expect(Date.parse(b.bucket_start)).toBeLessThan(to);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('walks at limits 1, 7, 50, 200 give every bucket once, newest first, locations in code-point order', async () => {
    const h = hostsWithIncidents[0] ?? hosts[0]!;
    const hostId = db.prepare('SELECT id FROM hosts WHERE hostname = ?').pluck().get(h) as number;
    const count = (table: string, where = '', ...args: unknown[]): number =>
      db.prepare(`SELECT count(*) FROM ${table} WHERE host_id = ? ${where}`).pluck().get(hostId, ...args) as number;
    const day0 = Math.floor((nowMs - 3 * DAY) / DAY) * DAY;
    for (const limit of [1, 7, 50, 200]) {
      const daily = await walk(q(`${hostPath(h)}/uptime`, { resolution: 'daily', limit }), uptimeKey, ['desc', 'asc']);
      expect(new Set(daily.map((b) => JSON.stringify(uptimeKey(b)))).size).toBe(count('uptime_daily'));
      expect(daily.length).toBe(count('uptime_daily'));
      const window = await walk(q(`${hostPath(h)}/uptime`, { from: iso(day0), to: iso(day0 + DAY), limit }), uptimeKey, ['desc', 'asc']);
      expect(window.length).toBe(count('uptime_hourly', 'AND bucket_start >= ? AND bucket_start < ?', day0, day0 + DAY));
      const rollup = await walk(q(`${hostPath(h)}/uptime`, { resolution: 'daily', location: '__all__', limit }), uptimeKey, ['desc', 'asc']);
      expect(rollup.length).toBe(count('uptime_daily', "AND location = ''"));
      if (limit >= 50) {
        const hourly = await walk(q(`${hostPath(h)}/uptime`, { limit }), uptimeKey, ['desc', 'asc']);
        expect(hourly.length).toBe(count('uptime_hourly'));
      }
    }
  });
});

describe('problems', () => {
  const cases: Array<[string, number, string, string]> = [
    ['/v1/hosts/nope.example.org', 404, 'host-not-found', 'Unknown host'],
    ['/v1/hosts/not_a..host', 404, 'host-not-found', 'Unknown host'],
    ['/v1/hosts/nope.example.org/incidents', 404, 'host-not-found', 'Unknown host'],
    ['/v1/hosts/nope.example.org/uptime?resolution=daily', 404, 'host-not-found', 'Unknown host'],
    ['/v1/hosts/nope.example.org/uptime?location=fra', 404, 'host-not-found', 'Unknown host'],
    ['/v1/hosts/HOST?at=yesterday', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST?at=2026-11-20T10:00:00', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/incidents?status=resolved', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/incidents?since=2026-11-20', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/incidents?limit=ten', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/incidents?cursor=abc', 400, 'invalid-cursor', 'Invalid cursor'],
    ['/v1/hosts/HOST/uptime?resolution=weekly', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/uptime?from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/uptime?from=now', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/uptime?limit=1.5', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/hosts/HOST/uptime?cursor=CURSOR_OTHER_LIST', 400, 'invalid-cursor', 'Invalid cursor'],
    ['/v1/hosts/HOST/uptime?resolution=daily&cursor=CURSOR_HOURLY', 400, 'invalid-cursor', 'Invalid cursor'],
    ['/v1/incidents?status=maybe', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/incidents?since=1999', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/incidents?limit=-', 400, 'invalid-parameter', 'Invalid query parameter'],
    ['/v1/incidents?cursor=CURSOR_OTHER_LIST', 400, 'invalid-cursor', 'Invalid cursor'],
  ];

  it('each 400 and 404 case gives the catalogued problem, the same from both sides', async () => {
    const h = hosts[0]!;
    const hourly = encodeCursor({ route: 'hosts.uptime', partition: [h, 'hourly'], key: [nowMs, 'fra'], hint: '', dir: 'next' });
    const other = encodeCursor({ route: 'events.list', partition: [], key: [nowMs, 'x'], hint: '', dir: 'next' });
    for (const [raw, status, name, title] of cases) {
      const target = raw.replace('HOST', h).replace('CURSOR_OTHER_LIST', other).replace('CURSOR_HOURLY', hourly);
      const r = await same(target);
      expect({ target, status: r.status, type: r.body.type, title: r.body.title }).toEqual({ target, status, type: `${BASE}/problems/${name}`, title });
      expect(r.body.instance).toBe(new URL(BASE + target).pathname);
    }
    // A known host with an unknown location is no error: nothing matches.
    const none = await same(`${hostPath(h)}/uptime?location=nowhere`);
    expect(none.body).toEqual({ items: [], next_cursor: null });
    expect(routeById('hosts.uptime')?.list?.partition).toEqual(['hostname', 'resolution']);
  });
});

describe('read cost', () => {
  it('every answer above stayed within the shim read budget (256 KiB, docs/config.md)', () => {
    expect(maxStats.size).toBe(7);
    for (const [route, s] of maxStats) expect({ route, within: s.bytes <= 262_144 }).toEqual({ route, within: true });
    // Single resources and default first pages are one exact file.
    for (const route of ['network', 'hosts.list', 'sml']) expect(maxStats.get(route)!.files).toBe(1);
  });
});
