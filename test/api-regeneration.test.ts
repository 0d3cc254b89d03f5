// Cursors survive a regeneration: a cursor taken from snapshot A (the small demo at its `now`) still
// works after new data was generated, ingested and built into the same output directory (snapshot B,
// one day later). The old cursor gives a 200 (not a 400), the page equals what the oracle answers on
// the new database at the new clock, byte for byte, and its items come strictly after the cursor's key
// in the list's order (for the event feed's prev_cursor: strictly before it, i.e. newer).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../src/api/cursor.js';
import { compareKeys } from '../src/api/sort-keys.js';
import { matchRoute } from '../src/api/routes/match.js';
import { orderOf, parseRequest, sortKeyOf } from '../src/api/routes/request.js';
import { ROUTE_LIST, routeById } from '../src/api/routes/table.js';
import type { Config } from '../src/config/index.js';
import { openDb, type Db } from '../src/db/index.js';
import { runBuild } from '../src/render/build.js';
import { createResolve } from '../src/edge/resolve.js';
import { directoryReader } from '../src/serve/index.js';
import { testConfig } from './helpers/config.js';
import { runCli } from './helpers/cli.js';
import { builtSmallDemo, copyOfDb, copyOfSnapshot, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { copyFeedDir, oracleAnswer, snapshotInfo } from './helpers/snapshot.js';

type Item = Record<string, unknown>;
interface Page {
  items: Item[];
  next_cursor: string | null;
  prev_cursor?: string | null;
  meta?: { total_count: number };
}
interface Answered {
  status: number;
  contentType: string;
  text: string;
  page: Page;
}

const DAY_MS = 86_400_000;
const dec = new TextDecoder();

let dbPath: string;
let out: string;
let feeds: string;
let config: Config;
let configFile: string;
let nowA: number;
let nowB: number;

/** One cursor taken from snapshot A: the request it continues and the page it came from. */
interface Taken {
  label: string;
  /** The list request (filters included), without the cursor. */
  target: string;
  param: 'cursor' | 'prev_cursor';
  cursor: string;
  /** Snapshot A's page after the cursor (items), to compare with B's where the older part cannot change. */
  nextOnA: Item[];
  /** False for a cursor minted at the list's last item: nothing follows it. */
  more: boolean;
}
const taken: Taken[] = [];
/** Facts of snapshot A the checks after the regeneration compare with. */
const before = { events: 0, newestEvent: '', newestHourly: '', segments: [] as unknown[] };

/** GET through the shim (createResolve over the snapshot directory) and through the oracle; both must agree. */
async function both(resolve: ReturnType<typeof createResolve>, db: Db, nowMs: number, target: string): Promise<Answered> {
  const url = new URL(target, 'http://snapshot.test');
  const answer = await resolve({ url, routeId: matchRoute(url.pathname)?.route.id ?? null }, directoryReader(out));
  const want = oracleAnswer(db, url, nowMs, snapshotInfo(out).base_url);
  const got = { status: answer.status, contentType: answer.contentType, text: dec.decode(answer.body) };
  expect(got.status, target).toBe(want.status);
  expect(got.contentType, target).toBe(want.contentType);
  expect(got.text, target).toBe(want.text);
  return { ...got, page: JSON.parse(got.text) as Page };
}

function withQuery(target: string, params: Record<string, string>): string {
  const u = new URL(target, 'http://x');
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return `${u.pathname}${u.search}`;
}

beforeAll(async () => {
  nowA = Date.parse(smallDemo().now);
  nowB = nowA + DAY_MS;
  feeds = path.join(tempDir('regen-feeds-'), 'feeds');
  copyFeedDir(smallDemo().feeds, feeds);
  // Snapshot A: the small demo built with testConfig() at its now, the first build made once per run
  // (test/helpers/demo-fixture.ts), its database, tree and state copied (snapshot B is built on them).
  const built = await builtSmallDemo();
  dbPath = copyOfDb(built.db).path;
  out = copyOfSnapshot(built.out, 'regen-out-');
  configFile = path.join(tempDir('regen-config-'), 'config.json');
  fs.writeFileSync(configFile, '{}\n');
  config = testConfig();
  // The database has ingested this feed directory: the fixture's database names the directory it was
  // generated in, and ingest recognises a source by its location, so point it at the copy (otherwise
  // the next ingest would read every segment again instead of the new ones only).
  const fixture = openDb(dbPath);
  try {
    expect(fixture.prepare('SELECT count(*) FROM sources').pluck().get()).toBe(1);
    fixture.prepare('UPDATE sources SET url = ?').run(path.resolve(feeds));
  } finally {
    fixture.close();
  }
  before.segments = (JSON.parse(fs.readFileSync(path.join(feeds, 'feeds.json'), 'utf8')) as { segments: unknown[] }).segments;

  const db = openDb(dbPath);
  try {
    const resolve = createResolve();
    /** Requests `target` (plus `at`, e.g. a cursor reaching a deeper page) on A and keeps its next or prev cursor. */
    const take = async (label: string, target: string, opts: { at?: Record<string, string>; from?: 'next' | 'prev' } = {}): Promise<Page> => {
      const a = await both(resolve, db, nowA, withQuery(target, opts.at ?? {}));
      expect(a.status, target).toBe(200);
      const c = opts.from === 'prev' ? a.page.prev_cursor : a.page.next_cursor;
      expect(c, `${label}: ${target} gives a cursor`).toEqual(expect.any(String));
      const param = opts.from === 'prev' ? 'prev_cursor' : 'cursor';
      const nextOnA = (await both(resolve, db, nowA, withQuery(target, { [param]: c! }))).page.items;
      taken.push({ label, target, param, cursor: c!, nextOnA, more: true });
      return a.page;
    };
    const col = <T = string>(sql: string): T[] => db.prepare(sql).pluck().all() as T[];

    // The event feed: cursors of the first and of a deeper page, both directions, with and without filters.
    const events = await take('events page 1 next', '/v1/events?limit=20');
    before.events = events.meta!.total_count;
    before.newestEvent = events.items[0]!.observed_at as string;
    const page2 = await take('events page 2 next', '/v1/events?limit=20', { at: { cursor: events.next_cursor! } });
    await take('events page 1 prev (the live watermark)', '/v1/events?limit=20', { from: 'prev' });
    await take('events page 2 prev', '/v1/events?limit=20', { at: { cursor: events.next_cursor! }, from: 'prev' });
    expect(page2.items.length).toBe(20);
    await take('events since', `/v1/events?since=${new Date(nowA - 20 * DAY_MS).toISOString()}&limit=10`);
    await take('events of one type', `/v1/events?type=${events.items[0]!.type as string}&limit=3`);
    await take('events of one type, prev', `/v1/events?type=${events.items[0]!.type as string}&limit=3`, { from: 'prev' });

    // Participants in several orders (the cursor is bound to its order).
    await take('participants first_seen.desc', '/v1/participants?limit=50');
    await take('participants name.asc', '/v1/participants?sort=name.asc&limit=50');
    await take('participants country.desc', '/v1/participants?sort=country.desc&limit=25');
    await take('participants first_seen.asc BE', '/v1/participants?sort=first_seen.asc&country=BE&limit=10');
    const pid = col('SELECT p.pid FROM events e JOIN participant_list p ON p.participant_id = e.participant_id GROUP BY p.pid HAVING count(*) > 1 ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    await take('one participant\'s events', `/v1/participants/${pid}/events?limit=1`);
    const hpid = col('SELECT p.pid FROM participant_history h JOIN participant_list p ON p.participant_id = h.participant_id GROUP BY p.pid ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    await take('one participant\'s history', `/v1/participants/${hpid}/history?limit=2`);

    // One host's incidents: the demo has at most one incident per host, so no next_cursor is issued; a
    // cursor minted at a host's incident (every keyset position is a legal request) stands in for one.
    const incident = (await both(resolve, db, nowA, '/v1/incidents?limit=1')).page.items[0]!;
    const incidentsRoute = routeById('hosts.incidents')!;
    const minted = encodeCursor({ route: incidentsRoute.id, partition: [incident.hostname as string], key: sortKeyOf(orderOf(incidentsRoute.list!, {}), incident), hint: '', dir: 'next' });
    const incidentsTarget = `/v1/hosts/${incident.hostname as string}/incidents`;
    expect((await both(resolve, db, nowA, `${incidentsTarget}?cursor=${minted}`)).status).toBe(200);
    taken.push({ label: 'one host\'s incidents (minted)', target: incidentsTarget, param: 'cursor', cursor: minted, nextOnA: [], more: false });

    // Incidents and anomalies.
    await take('incidents', '/v1/incidents?limit=3');
    await take('closed incidents', '/v1/incidents?status=closed&limit=2');
    await take('anomalies', '/v1/anomalies?limit=2');

    // One host's uptime, hourly and daily.
    const host = (await both(resolve, db, nowA, '/v1/hosts')).page.items[0]!.hostname as string;
    const hourly = await take('uptime hourly', `/v1/hosts/${host}/uptime?limit=50`);
    before.newestHourly = hourly.items[0]!.bucket_start as string;
    await take('uptime hourly page 2', `/v1/hosts/${host}/uptime?limit=50`, { at: { cursor: hourly.next_cursor! } });
    await take('uptime daily', `/v1/hosts/${host}/uptime?resolution=daily&limit=14`);
    await take('uptime daily in a window', `/v1/hosts/${host}/uptime?resolution=daily&from=2026-10-20T00:00:00Z&to=2026-11-20T00:00:00Z&limit=5`);
    await take('uptime hourly __all__', `/v1/hosts/${host}/uptime?location=__all__&limit=24`);

    // The churn participants list is never paginated (spec: at most 500 rows, next_cursor null): there is
    // no cursor to take. Checked here so that a change of that rule is noticed.
    const key = col('SELECT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id GROUP BY s.key ORDER BY sum(d.n) DESC, 1 LIMIT 1')[0]!;
    const churn = await both(resolve, db, nowA, `/v1/aps/${key}/churn/participants?category=joiner&from=2026-10-01`);
    expect(churn.status).toBe(200);
    expect(churn.page.items.length).toBeGreaterThan(0);
    expect(churn.page.next_cursor).toBeNull();
  } finally {
    db.close();
  }

  // New data: one more day of the same scenario, ingested, and snapshot B built into the same directory.
  const demo = await runCli(['demo', '--feeds', feeds, '--scale', 'small', '--seed', '1', '--now', new Date(nowB).toISOString(), '--json']);
  expect(demo.code, demo.stderr).toBe(0);
  const ingest = await runCli(['ingest', '--config', configFile, '--db', dbPath, '--source', feeds, '--json']);
  expect(ingest.code, ingest.stderr).toBe(0);
  const summary = JSON.parse(ingest.stdout) as { segments: number; segments_skipped: number; rejects: number; failed_sources: unknown[] };
  expect(summary.failed_sources).toEqual([]);
  expect(summary.rejects).toBe(0);
  // only the appended segments were read
  expect(summary.segments_skipped).toBe(before.segments.length);
  expect(summary.segments).toBeGreaterThan(0);
  runBuild({ config, dbPath, outDir: out, nowMs: nowB });
}, 240_000);

let dbB: Db;
afterAll(() => dbB?.close());

describe('cursors across a regeneration', () => {
  it('the regeneration appended to the same scenario and changed the data', async () => {
    dbB = openDb(dbPath);
    expect(snapshotInfo(out).nowMs).toBe(nowB);
    // The demo reproduced every earlier segment (same path, size and hash) and only appended.
    const after = (JSON.parse(fs.readFileSync(path.join(feeds, 'feeds.json'), 'utf8')) as { segments: unknown[] }).segments;
    expect(after.length).toBeGreaterThan(before.segments.length);
    expect(after.slice(0, before.segments.length)).toEqual(before.segments);
    // Snapshot B has more events, a newer newest event and newer uptime buckets than snapshot A.
    const resolve = createResolve();
    const events = (await both(resolve, dbB, nowB, '/v1/events?limit=20')).page;
    expect(events.meta!.total_count).toBeGreaterThan(before.events);
    expect(Date.parse(events.items[0]!.observed_at as string)).toBeGreaterThan(Date.parse(before.newestEvent));
    const host = new URL(taken.find((t) => t.label === 'uptime hourly')!.target, 'http://x').pathname;
    const hourly = (await both(resolve, dbB, nowB, `${host}?limit=1`)).page;
    expect(Date.parse(hourly.items[0]!.bucket_start as string)).toBeGreaterThan(Date.parse(before.newestHourly));
  });

  it('took cursors of every cursor-paginated list of the route table, and of both directions', () => {
    const families = new Set(taken.map((t) => matchRoute(new URL(t.target, 'http://x').pathname)!.route.id));
    const paginated = ROUTE_LIST.filter((r) => r.list?.pagination === 'cursor').map((r) => r.id);
    expect([...families].sort()).toEqual(paginated.sort());
    for (const r of ROUTE_LIST.filter((r) => r.list?.newer)) {
      expect(taken.some((t) => t.param === r.list!.newer!.param && t.target.startsWith(r.path))).toBe(true);
    }
  });

  it('every cursor of snapshot A works on snapshot B: 200, equal to the oracle on the new data, in keyset order after the cursor', async () => {
    const resolve = createResolve(); // a fresh shim: it reads snapshot B's clock
    let newer = 0;
    for (const t of taken) {
      const target = withQuery(t.target, { [t.param]: t.cursor });
      const b = await both(resolve, dbB, nowB, target);
      expect(b.status, `${t.label}: ${target}`).toBe(200);

      const url = new URL(target, 'http://x');
      const m = matchRoute(url.pathname)!;
      const route = routeById(m.route.id)!;
      const parsed = parseRequest(route, m.pathParams, url.searchParams, { now: nowB });
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) continue;
      const order = orderOf(route.list!, parsed.params as Record<string, unknown>);
      const dirs = order.fields.map((f) => f.dir);
      const decoded = decodeCursor(t.cursor);
      expect(decoded.ok).toBe(true);
      if (!decoded.ok) continue;
      const key = decoded.cursor.key;
      const keys = b.page.items.map((i) => sortKeyOf(order, i));
      for (let i = 1; i < keys.length; i++) expect(compareKeys(keys[i - 1]!, keys[i]!, dirs), `${t.label}: items ${i - 1}, ${i}`).toBeLessThan(0);
      for (const k of keys) {
        if (t.param === 'cursor') expect(compareKeys(key, k, dirs), `${t.label}: item after the cursor`).toBeLessThan(0);
        else expect(compareKeys(k, key, dirs), `${t.label}: item newer than the prev_cursor`).toBeLessThan(0);
      }
      if (t.param === 'cursor' && t.more) expect(b.page.items.length, `${t.label}: the list goes on after the cursor`).toBeGreaterThan(0);
      if (t.param === 'prev_cursor') newer += b.page.items.length;
      // Lists that only grow at the top (new events, new hourly buckets): after an old cursor, B gives
      // exactly the items A gave after it.
      if (t.param === 'cursor' && (route.id === 'events.list' || (route.id === 'hosts.uptime' && !url.searchParams.has('resolution')))) {
        expect(b.page.items, `${t.label}: the page after the cursor is unchanged`).toEqual(t.nextOnA);
      }
    }
    // The watermark of snapshot A's first page sees the events that arrived since.
    expect(newer).toBeGreaterThan(0);
    const watermark = taken.find((t) => t.label === 'events page 1 prev (the live watermark)')!;
    const live = (await both(resolve, dbB, nowB, `/v1/events?limit=200&prev_cursor=${watermark.cursor}`)).page;
    expect(live.items.length).toBeGreaterThan(0);
    for (const e of live.items) expect(Date.parse(e.observed_at as string)).toBeGreaterThanOrEqual(Date.parse(before.newestEvent));
  });
});
