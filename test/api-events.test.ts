// The event feed and the anomalies: the shim's composers over the rendered snapshot answer
// byte-identically to the oracle over SQLite (docs/architecture.md §5) for random filters, windows, limits and cursors
// (both directions); pages are full (only the last of a walk is short, none is empty with a cursor) and
// whole walks give every match once; meta counts agree with the items; bodies validate against the
// response schemas; 400/404 problems per the spec.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anomalyCursor, anomalyEntryMayMatch, anomalyPlan, eventCursor, eventMeta, eventPlan, EVENT_CHUNK_MIN_ITEMS, META_SCAN_MAX, type EventFeedMetaOut } from '../src/api/events/feed.js';
import { TIMESTAMP_MAX_MS, TIMESTAMP_MIN_MS } from '../src/api/params.js';
import { listRootPath } from '../src/api/paths.js';
import type { ListRoot } from '../src/edge/list-format.js';
import { jsonBody, jsonText } from '../src/api/json.js';
import { queryOf, runQuery } from '../src/api/query/index.js';
import { EVENTS_QUERIES } from '../src/api/events/query.js';
import { finishResult, paramErrorsOf, type ApiResult } from '../src/api/result.js';
import { parseRequest } from '../src/api/routes/request.js';
import { ROUTES, type RouteId } from '../src/api/routes/table.js';
import { DETECTORS, EVENT_TYPES, RESOURCE_SCHEMAS } from '../src/api/schemas/index.js';
import type { Db } from '../src/db/index.js';
import { compose, composerOf } from '../src/edge/compose/index.js';
import { EVENTS_COMPOSERS } from '../src/edge/compose/events.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { RenderContext } from '../src/render/context.js';
import { RENDERERS } from '../src/render/routes/index.js';
import { EVENTS_RENDERERS } from '../src/render/routes/events.js';
import { DirectorySink } from '../src/render/sink.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { readStoredJson } from '../src/render/stored.js';

const ROUTE_IDS = ['events.list', 'anomalies.list', 'anomalies.detail'] as const;

let db: Db;
let out: string;
let nowMs: number;
const maxStats: Record<string, ReadStats> = {};

beforeAll(async () => {
  // The small demo derived once per run (test/helpers/demo-fixture.ts), copied.
  db = copyOfDb((await derivedSmallDemo()).db).open();
  nowMs = Date.parse(smallDemo().now);
  out = tempDir('api-events-');
  const sink = new DirectorySink(out);
  // Small chunks: lists span many chunks and two index levels on the small demo.
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 16, chunkMaxBytes: 8192 }, jsonBody);
  for (const id of ROUTE_IDS) EVENTS_RENDERERS[id]!(ctx);
  sink.close();
});

afterAll(() => {
  db?.close();
  console.log(`api-events: most snapshot reads for one answer on the small demo: ${JSON.stringify(maxStats)}`);
  console.log(`api-events: most chunks read by one page of the full-page walks and polls (chunks of 16 events): ${JSON.stringify(walkReads)}`);
});

const read = async (p: string): Promise<Uint8Array | null> => {
  try {
    return new Uint8Array(fs.readFileSync(path.join(out, p)));
  } catch {
    return null;
  }
};

const finished = (r: ApiResult, instance: string): unknown => {
  const f = finishResult(r, { baseUrl: 'https://api.example.org', instance });
  return f.status === 200 ? f.body : f.problem;
};

interface Both {
  status: number;
  oracle: string;
  composed: string;
  body: unknown;
  stats: ReadStats;
}

async function both(id: RouteId, pathParams: Record<string, string>, query: string | URLSearchParams = ''): Promise<Both> {
  const route = ROUTES[id];
  const instance = route.path.replace(/\{([^}]+)\}/g, (_m, n: string) => pathParams[n] ?? '');
  const parsed = parseRequest(route, pathParams, new URLSearchParams(query), { now: nowMs });
  const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  let oracle: ApiResult;
  let composed: ApiResult;
  if (!parsed.ok) oracle = composed = paramErrorsOf(parsed.errors);
  else {
    const params = parsed.params as Record<string, unknown>;
    oracle = runQuery(id, db, params, nowMs);
    composed = await compose(ROUTES[id], params, { read, nowMs, stats });
  }
  const m = maxStats[id] ?? { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  maxStats[id] = { files: Math.max(m.files, stats.files), bytes: Math.max(m.bytes, stats.bytes), decoded: Math.max(m.decoded, stats.decoded), chunks: Math.max(m.chunks, stats.chunks) };
  const body = finished(oracle, instance);
  const schema = oracle.status === 200 ? RESOURCE_SCHEMAS[route.response] : RESOURCE_SCHEMAS.Problem;
  const v = schema.safeParse(body);
  if (!v.success) throw new Error(`${id} ${String(query)}: body fails ${oracle.status === 200 ? route.response : 'Problem'}: ${v.error.message}`);
  return { status: oracle.status, oracle: jsonText(body), composed: jsonText(finished(composed, instance)), body, stats };
}

const col = <T = string>(sql: string): T[] => db.prepare(sql).pluck().all() as T[];

interface FeedPage {
  items: Array<{ id: string; type: string; observed_at: string }>;
  next_cursor: string | null;
  prev_cursor: string | null;
  meta?: EventFeedMetaOut;
}

/** The filters of an event request as a client sets them (`type`: the list of types). */
interface EventQuery {
  type?: readonly string[];
  host?: string;
  seat?: string;
  participant?: string;
  since?: number;
  until?: number;
}
type FeedKeyT = [number, string];

const keyOf = (e: { id: string; observed_at: string }): FeedKeyT => [Date.parse(e.observed_at), e.id];
/** True when `a` comes after `b` in the feed's order (newest first): `a` is older. */
const olderThan = (a: FeedKeyT, b: FeedKeyT): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

function eventQuery(f: EventQuery, limit: number): URLSearchParams {
  const q = new URLSearchParams();
  if (f.type !== undefined) q.set('type', f.type.join(','));
  if (f.host !== undefined) q.set('host', f.host);
  if (f.seat !== undefined) q.set('seat', f.seat);
  if (f.participant !== undefined) q.set('participant', f.participant);
  if (f.since !== undefined) q.set('since', new Date(f.since).toISOString());
  if (f.until !== undefined) q.set('until', new Date(f.until).toISOString());
  q.set('limit', String(limit));
  return q;
}

/** The keys of the events matching `f`, newest first: straight SQL over the tables (not the oracle's query). */
function eventMatchKeys(f: EventQuery): FeedKeyT[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.type !== undefined) (where.push(`e.type IN (${f.type.map(() => '?').join(', ')})`), args.push(...f.type));
  if (f.host !== undefined) (where.push('EXISTS (SELECT 1 FROM event_hosts h WHERE h.event_id = e.id AND h.hostname = ?)'), args.push(f.host));
  if (f.seat !== undefined) (where.push('EXISTS (SELECT 1 FROM event_seats s WHERE s.event_id = e.id AND s.seat_id = ?)'), args.push(f.seat));
  if (f.participant !== undefined) (where.push('e.participant_id = (SELECT id FROM participants WHERE pid = ?)'), args.push(f.participant));
  if (f.since !== undefined) (where.push('e.observed_at >= ?'), args.push(f.since));
  if (f.until !== undefined) (where.push('e.observed_at <= ?'), args.push(f.until));
  // Raw rows of the two selected columns: sort keys.
  return db
    .prepare(`SELECT e.observed_at, e.id FROM events e ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.observed_at DESC, e.id DESC`)
    .raw()
    .all(...args) as FeedKeyT[];
}

/**
 * What is left to match item by item on the list a request reads (eventPlan): nothing (`plain`), only
 * the type (`type`: the index's per-entry type counts pass over chunks without a wanted type), or a
 * seat or host (`entity`: not counted by the index).
 */
function planKind(f: EventQuery): 'plain' | 'type' | 'entity' {
  const plan = eventPlan({ types: f.type, host: f.host, seat: f.seat, participant: f.participant });
  return plan.seat !== undefined || plan.host !== undefined ? 'entity' : plan.types !== null ? 'type' : 'plain';
}

/** Most chunks read by one page after the first (no meta) of the walks and polls, per plan kind and direction. */
const walkReads: Record<string, { chunks: number; overLimit: number; target: string }> = {};
function noteReads(f: EventQuery, dir: 'older' | 'newer', limit: number, target: string, stats: ReadStats): void {
  const kind = planKind(f);
  const w = (walkReads[`${kind} ${dir}`] ??= { chunks: 0, overLimit: -Infinity, target: '' });
  if (stats.chunks > w.chunks) Object.assign(w, { chunks: stats.chunks, target: target.slice(0, 200) });
  w.overLimit = Math.max(w.overLimit, stats.chunks - limit);
  // Only the type left to match: the chunk where the page starts, chunks holding a match, and the
  // one ending the range; toward newer events up to 3 more to tell whether an older match follows.
  if (kind === 'type') expect(stats.chunks, `${target}: chunks read`).toBeLessThanOrEqual(limit + 2 + (dir === 'newer' ? 3 : 0));
}

/**
 * Follows next_cursor from the first page to the end; returns the number of pages. Every page:
 * composed = oracle; at most `limit` items; a page with a next_cursor is full and the page it leads to
 * is not empty; prev_cursor on its newest item (null when empty); meta on the first page only. The
 * pages together give every match once, in feed order (straight SQL), and a non-null
 * `meta.filter_count` is the walk's length.
 */
async function walkEvents(f: EventQuery, limit: number): Promise<number> {
  const expected = eventMatchKeys(f);
  let cursor: string | null = null;
  const seen: FeedKeyT[] = [];
  let pages = 0;
  let filterCount: number | null = null;
  for (;;) {
    const q = eventQuery(f, limit);
    if (cursor !== null) q.set('cursor', cursor);
    const target = `/v1/events?${q}`;
    const r = await both('events.list', {}, q);
    expect(r.status, target).toBe(200);
    expect(r.composed, target).toBe(r.oracle);
    const page = r.body as FeedPage;
    const keys = page.items.map(keyOf);
    if (cursor === null) {
      expect(page.meta, target).toBeDefined();
      filterCount = page.meta!.filter_count;
    } else expect(page.meta, target).toBeUndefined();
    expect(keys.length, target).toBeLessThanOrEqual(limit);
    if (cursor !== null) expect(keys.length, `${target}: a next_cursor led to an empty page`).toBeGreaterThan(0);
    if (page.next_cursor !== null) {
      expect(keys.length, `${target}: a page with a next_cursor is full`).toBe(limit);
      expect(page.next_cursor, target).toBe(eventCursor(keys[keys.length - 1]!, 'next'));
    }
    expect(page.prev_cursor, target).toBe(keys.length === 0 ? null : eventCursor(keys[0]!, 'prev'));
    if (cursor !== null) noteReads(f, 'older', limit, target, r.stats);
    pages++;
    seen.push(...keys);
    if (page.next_cursor === null) break;
    cursor = page.next_cursor;
    expect(pages, `${target}: more pages than matches`).toBeLessThanOrEqual(expected.length);
  }
  expect(seen, `${JSON.stringify(f)} limit=${limit}`).toEqual(expected);
  if (filterCount !== null) expect(filterCount, `${JSON.stringify(f)}: meta.filter_count`).toBe(seen.length);
  return pages;
}

/**
 * Live polling from the watermark `from`: follows prev_cursor until a page is empty. Every page:
 * composed = oracle; exactly the `limit` matches nearest to the watermark among those newer than it
 * (so full while that many are newer), newest first; prev_cursor on its newest item, or, on the empty
 * page that ends the poll, the watermark polled, unchanged; next_cursor on its oldest item exactly
 * when an older match follows. The pages together give every match newer than `from` once.
 */
async function pollEvents(f: EventQuery, limit: number, from: FeedKeyT): Promise<number> {
  const all = eventMatchKeys(f);
  let watermark = from;
  let prev = eventCursor(from, 'prev');
  const got: FeedKeyT[] = [];
  let pages = 0;
  for (;;) {
    const q = eventQuery(f, limit);
    q.set('prev_cursor', prev);
    const target = `/v1/events?${q}`;
    const r = await both('events.list', {}, q);
    expect(r.status, target).toBe(200);
    expect(r.composed, target).toBe(r.oracle);
    const page = r.body as FeedPage;
    expect(page.meta, target).toBeUndefined();
    noteReads(f, 'newer', limit, target, r.stats);
    const keys = page.items.map(keyOf);
    const newer = all.filter((k) => olderThan(watermark, k));
    expect(keys, `${target}: the nearest matches newer than the watermark`).toEqual(newer.slice(Math.max(0, newer.length - limit)));
    pages++;
    if (keys.length === 0) {
      expect(page.prev_cursor, `${target}: nothing newer keeps the watermark`).toBe(prev);
      expect(page.next_cursor, target).toBeNull();
      break;
    }
    expect(page.prev_cursor, target).toBe(eventCursor(keys[0]!, 'prev'));
    const oldest = keys[keys.length - 1]!;
    expect(page.next_cursor, `${target}: next_cursor exactly when an older match follows`).toBe(all.some((k) => olderThan(k, oldest)) ? eventCursor(oldest, 'next') : null);
    got.unshift(...keys);
    watermark = keys[0]!;
    prev = page.prev_cursor!;
  }
  expect(got, `${JSON.stringify(f)} limit=${limit} from ${JSON.stringify(from)}`).toEqual(all.filter((k) => olderThan(from, k)));
  return pages;
}

const WALK_LIMITS = [1, 7, 50, 200] as const;

describe('event feed', () => {
  it('every route of the family is registered with its oracle, renderer and composer', () => {
    for (const id of ROUTE_IDS) {
      expect(queryOf(id)).toBe(EVENTS_QUERIES[id]);
      expect(RENDERERS[id]).toBe(EVENTS_RENDERERS[id]);
      // A route whose every answer is its exact file (anomalies.detail) has no composer.
      if (id === 'anomalies.detail') expect(() => composerOf(id)).toThrow();
      else expect(composerOf(id)).toBe(EVENTS_COMPOSERS[id]);
    }
  });

  it('the default first page is one exact file equal to the oracle, with meta over the whole feed', async () => {
    const r = await both('events.list', {});
    expect(r.status).toBe(200);
    expect(r.composed).toBe(r.oracle);
    expect(r.stats.files).toBe(1);
    const page = r.body as FeedPage;
    const total = col<number>('SELECT count(*) FROM events')[0]!;
    expect(total).toBeGreaterThan(100);
    expect(page.items).toHaveLength(50);
    expect(page.meta!.total_count).toBe(total);
    expect(page.meta!.filter_count).toBeNull();
    expect(page.meta!.facets.type!.reduce((n, b) => n + b.count, 0)).toBe(total);
    expect(page.meta!.chart_data.reduce((n, b) => n + b.count, 0)).toBe(total);
  });

  it('random filters, windows, limits and cursors (both directions): composed = oracle, byte for byte', async () => {
    const t0 = col<number>('SELECT min(observed_at) FROM events')[0]!;
    const hosts = col('SELECT DISTINCT hostname FROM event_hosts ORDER BY hostname');
    const seats = col('SELECT DISTINCT seat_id FROM event_seats ORDER BY seat_id');
    const pids = col('SELECT DISTINCT p.pid FROM events e JOIN participants p ON p.id = e.participant_id ORDER BY 1');
    const keys = db.prepare('SELECT observed_at, id FROM events ORDER BY observed_at, id').raw().all() as Array<[number, string]>;
    // Instants around the feed, sometimes the first and last of the years 0000–9999 the API accepts.
    const tsArb = fc.oneof(
      { weight: 19, arbitrary: fc.integer({ min: t0 - 86_400_000, max: nowMs + 86_400_000 }) },
      { weight: 1, arbitrary: fc.constantFrom(TIMESTAMP_MIN_MS, TIMESTAMP_MAX_MS) },
    );
    const keyArb = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: fc.tuple(tsArb, fc.constantFrom('ev-0', 'ev-8', 'ev-g')) });
    const seen = { ok: 0, items: 0, prevItems: 0, meta: 0, bad: 0 };
    /** `arb` in `tenths` of the runs, else null (absent parameter). */
    const opt = <T>(arb: fc.Arbitrary<T>, tenths: number): fc.Arbitrary<T | null> =>
      fc.oneof({ weight: 10 - tenths, arbitrary: fc.constant(null) }, { weight: tenths, arbitrary: arb });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // Mostly valid values (rarely an invalid one: the 400 must match too).
          type: opt(fc.oneof({ weight: 9, arbitrary: fc.subarray([...EVENT_TYPES], { minLength: 1, maxLength: 3 }).map((a) => a.join(',')) }, { weight: 1, arbitrary: fc.constant('ap_seat_changed,bogus') }), 4),
          host: opt(fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...hosts) }, { weight: 1, arbitrary: fc.constant('nowhere.example.com') }), 3),
          seat: opt(fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...seats) }, { weight: 1, arbitrary: fc.constant('PZZ000000') }), 2),
          participant: opt(fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...pids) }, { weight: 1, arbitrary: fc.constant('9999::nobody') }, { weight: 1, arbitrary: fc.constant('not-an-id') }), 2),
          window: fc.tuple(opt(tsArb, 4), opt(tsArb, 3)),
          limit: opt(fc.integer({ min: 1, max: 200 }), 7),
          mode: fc.constantFrom('first', 'first', 'cursor', 'prev', 'prev', 'both'),
          key: keyArb,
        }),
        async (r) => {
          const q = new URLSearchParams();
          if (r.type !== null) q.set('type', r.type);
          if (r.host !== null) q.set('host', r.host);
          if (r.seat !== null) q.set('seat', r.seat);
          if (r.participant !== null) q.set('participant', r.participant);
          // since <= until mostly; one in ten reversed (a 400).
          const [a, b] = r.window;
          const [since, until] = a !== null && b !== null && a > b && r.key[0] % 10 !== 0 ? [b, a] : [a, b];
          if (since !== null) q.set('since', new Date(since).toISOString());
          if (until !== null) q.set('until', new Date(until).toISOString());
          if (r.limit !== null) q.set('limit', String(r.limit));
          if (r.mode === 'cursor' || r.mode === 'both') q.set('cursor', eventCursor(r.key, 'next'));
          if (r.mode === 'prev' || r.mode === 'both') q.set('prev_cursor', eventCursor(r.key, 'prev'));
          const res = await both('events.list', {}, q);
          expect(res.composed).toBe(res.oracle);
          if (r.mode === 'both') expect(res.status).toBe(400);
          if (res.status !== 200) seen.bad++;
          else {
            const page = res.body as FeedPage;
            seen.ok++;
            if (page.items.length > 0) seen[r.mode === 'prev' ? 'prevItems' : 'items']++;
            if (page.meta) seen.meta++;
          }
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 200) },
    );
    // The runs exercised answers with items in both directions, first pages with meta, and problems.
    console.log(`events.list random runs: ${JSON.stringify(seen)}`);
    expect(Math.min(seen.items, seen.prevItems, seen.meta, seen.bad)).toBeGreaterThan(5);
  });

  it('full pages: whole walks at limits 1, 7, 50 and 200 under filters left to match item by item give every match once, and only the last page is short', async () => {
    // Combinations whose source list holds events that do not match: two or more types (rare ones
    // too), an entity with types, two or three entities, each with since/until.
    const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    // The host sharing the fewest events with that seat (a sparse second entity), and the one sharing the most.
    const sparseHost = col(`SELECT h.hostname FROM event_seats s JOIN event_hosts h USING (event_id) WHERE s.seat_id = '${seat}' GROUP BY 1 HAVING count(*) >= 3 ORDER BY count(*), 1 LIMIT 1`)[0]!;
    const denseHost = col(`SELECT h.hostname FROM event_seats s JOIN event_hosts h USING (event_id) WHERE s.seat_id = '${seat}' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)[0]!;
    const host = col('SELECT hostname FROM event_hosts GROUP BY hostname ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    // A participant with an event related to a host and a seat.
    const [pid, pHost, pSeat, pType] = db
      .prepare('SELECT p.pid, h.hostname, s.seat_id, e.type FROM events e JOIN participants p ON p.id = e.participant_id JOIN event_hosts h ON h.event_id = e.id JOIN event_seats s ON s.event_id = e.id ORDER BY e.observed_at DESC, 1, 2, 3 LIMIT 1')
      .raw()
      .get() as [string, string, string, string];
    const day = (n: number): number => nowMs - n * 86_400_000 + 777;
    const combos: EventQuery[] = [
      { type: ['ap_seat_changed', 'participant_smp_changed'] },
      { type: ['host_cert_rotated', 'hosting_changed'] },
      { type: ['hosting_changed', 'participant_registered', 'endpoint_changed'], since: day(40), until: day(5) },
      { host, type: ['participant_smp_changed', 'endpoint_changed'] },
      { seat, type: ['ap_seat_changed'] },
      { seat, host: sparseHost },
      { seat, host: denseHost, type: ['ap_seat_changed', 'participant_registered'] },
      { seat, host: denseHost, since: day(30) },
      { participant: pid, host: pHost },
      { participant: pid, seat: pSeat, host: pHost, type: [...new Set([pType, 'hosting_changed', 'participant_deregistered'])] },
      { host, type: ['participant_smp_changed', 'hosting_changed'], until: day(10) },
      { type: [...EVENT_TYPES], since: day(20) },
    ];
    const counts: number[] = [];
    for (const f of combos) {
      counts.push(eventMatchKeys(f).length);
      for (const limit of WALK_LIMITS) {
        await walkEvents(f, limit);
        // From the oldest match, polling toward newer events gives them all back (limit 1: the whole set one by one is slow, covered by the random walks).
        const oldest = eventMatchKeys(f).at(-1);
        if (oldest !== undefined && limit > 1) await pollEvents(f, limit, oldest);
      }
    }
    console.log(`events.list full-page walks: matches per combination ${JSON.stringify(counts)}`);
    expect(counts.every((n) => n > 0), JSON.stringify(counts)).toBe(true);
  }, 120_000);

  it('full pages: random filter combinations, whole walks toward older events and polls toward newer ones at limits 1, 7, 50 and 200', async () => {
    // Filter values mostly from one anchor event (its type, host, seat, participant), so that
    // combinations of two or three match some events but far from all of the source list.
    const anchors = db
      .prepare('SELECT e.id, e.type, e.observed_at, p.pid FROM events e LEFT JOIN participants p ON p.id = e.participant_id ORDER BY e.observed_at DESC, e.id DESC')
      .raw()
      .all() as Array<[string, string, number, string | null]>;
    const hostsOf = db.prepare('SELECT hostname FROM event_hosts WHERE event_id = ? ORDER BY hostname').pluck();
    const seatsOf = db.prepare('SELECT seat_id FROM event_seats WHERE event_id = ? ORDER BY seat_id').pluck();
    const hosts = col('SELECT DISTINCT hostname FROM event_hosts ORDER BY 1');
    const seats = col('SELECT DISTINCT seat_id FROM event_seats ORDER BY 1');
    const topHosts = col('SELECT hostname FROM event_hosts GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 4');
    const topSeats = col('SELECT seat_id FROM event_seats GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 4');
    const pick = <T>(xs: readonly T[], i: number): T | undefined => (xs.length === 0 ? undefined : xs[i % xs.length]);
    const seen = { walks: 0, multiFilter: 0, multiPage: 0, pages: 0, polls: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          anchor: fc.nat({ max: anchors.length - 1 }),
          // none; the anchor's type with others; other types (two or more, the anchor's or not)
          type: fc.oneof(
            { weight: 1, arbitrary: fc.constant(null) },
            { weight: 3, arbitrary: fc.subarray([...EVENT_TYPES], { minLength: 1, maxLength: 3 }).map((a) => ({ withAnchor: true, more: a })) },
            { weight: 1, arbitrary: fc.subarray([...EVENT_TYPES], { minLength: 2, maxLength: 4 }).map((a) => ({ withAnchor: false, more: a })) },
          ),
          host: fc.constantFrom('none', 'none', 'anchor', 'anchor', 'anchor', 'top', 'other'),
          seat: fc.constantFrom('none', 'none', 'none', 'anchor', 'anchor', 'top'),
          participant: fc.constantFrom('none', 'none', 'none', 'none', 'anchor'),
          pickAt: fc.nat(),
          // since, until, both or neither, around the anchor (up to 40 days away)
          since: fc.option(fc.integer({ min: 0, max: 40 * 86_400_000 }), { nil: undefined }),
          until: fc.option(fc.integer({ min: 0, max: 40 * 86_400_000 }), { nil: undefined }),
          // Which of the limits below the number of matches (so that the walk has several pages), if any.
          limitAt: fc.nat(),
          from: fc.nat({ max: anchors.length - 1 }),
        }),
        async (r) => {
          const [id, type, , pid] = anchors[r.anchor]!;
          const f: EventQuery = {};
          if (r.type !== null) f.type = [...new Set(r.type.withAnchor ? [type, ...r.type.more] : r.type.more)].sort();
          const entity = (mode: string, own: readonly string[], top: readonly string[], every: readonly string[]): string | undefined =>
            mode === 'anchor' ? pick(own, r.pickAt) : mode === 'top' ? pick(top, r.pickAt) : mode === 'other' ? pick(every, r.pickAt) : undefined;
          f.host = entity(r.host, hostsOf.all(id) as string[], topHosts, hosts);
          f.seat = entity(r.seat, seatsOf.all(id) as string[], topSeats, seats);
          f.participant = r.participant === 'anchor' && pid !== null ? pid : undefined;
          for (const k of ['host', 'seat', 'participant'] as const) if (f[k] === undefined) delete f[k];
          if (r.since !== undefined) f.since = anchors[r.anchor]![2] - r.since;
          if (r.until !== undefined) f.until = anchors[r.anchor]![2] + r.until;
          const n = eventMatchKeys(f).length;
          const below = WALK_LIMITS.filter((l) => l < n);
          const chosen = pick(below.length > 0 ? below : WALK_LIMITS, r.limitAt)!;
          // A limit-1 walk over hundreds of matches is slow: a limit of 7 does it.
          const limit = chosen === 1 && n > 60 ? 7 : chosen;
          const pages = await walkEvents(f, limit);
          seen.walks++;
          seen.pages += pages;
          const multi = (f.type !== undefined && f.type.length > 1) || [f.host, f.seat, f.participant].filter((v) => v !== undefined).length + (f.type ? 1 : 0) >= 2;
          if (multi) seen.multiFilter++;
          if (multi && pages > 1) seen.multiPage++;
          // Poll from a random event (a watermark; matches newer than it come back, nearest first).
          const wm = anchors[r.from]!;
          seen.polls += await pollEvents(f, limit === 1 && eventMatchKeys(f).filter((k) => olderThan([wm[2], wm[0]], k)).length > 60 ? 7 : limit, [wm[2], wm[0]]);
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 100) },
    );
    console.log(`events.list full-page walks: ${JSON.stringify(seen)}`);
    // Most runs combine filters left to match item by item, and many of those walk several pages.
    expect(seen.multiFilter).toBeGreaterThan(seen.walks / 3);
    expect(seen.multiPage).toBeGreaterThan(seen.walks / 6);
  }, 240_000);

  it('events name whose they are: participant (scheme::value or null) and related_hosts, which the host filter matches', async () => {
    const r = await both('events.list', {}, 'limit=200');
    expect(r.composed).toBe(r.oracle);
    const items = (r.body as { items: Array<{ id: string; hostname: string | null; participant: string | null; related_hosts: string[] }> }).items;
    const pidOf = db.prepare('SELECT p.pid FROM events e LEFT JOIN participants p ON p.id = e.participant_id WHERE e.id = ?').pluck();
    const hostsOf = db.prepare('SELECT hostname FROM event_hosts WHERE event_id = ? ORDER BY hostname').pluck();
    let named = 0;
    for (const e of items) {
      expect(e.participant).toBe(pidOf.get(e.id) ?? null);
      expect(e.related_hosts).toEqual(hostsOf.all(e.id));
      if (e.participant !== null) named++;
      if (e.hostname !== null) expect(e.related_hosts).toContain(e.hostname);
    }
    expect(named).toBeGreaterThan(100);
    // The host filter's answer is exactly the events whose related_hosts hold the host.
    const host = col('SELECT hostname FROM event_hosts GROUP BY hostname ORDER BY count(*) DESC LIMIT 1')[0]!;
    const filtered = await both('events.list', {}, `host=${host}&limit=200`);
    const got = (filtered.body as { items: Array<{ related_hosts: string[] }> }).items;
    expect(got.length).toBeGreaterThan(0);
    for (const e of got) expect(e.related_hosts).toContain(host);
  });

  it('a live poll with nothing newer keeps its watermark: an empty page whose prev_cursor is the one polled', async () => {
    const newest = db.prepare('SELECT observed_at, id FROM events ORDER BY observed_at DESC, id DESC LIMIT 1').raw().get() as [number, string];
    const type = col('SELECT type FROM events ORDER BY observed_at DESC, id DESC LIMIT 1')[0]!;
    const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    const host = col(`SELECT h.hostname FROM event_seats s JOIN event_hosts h USING (event_id) WHERE s.seat_id = '${seat}' GROUP BY 1 ORDER BY count(*), 1 LIMIT 1`)[0]!;
    // The newest event, and a watermark newer than every event (a poller ahead of the snapshot).
    for (const key of [newest, [nowMs + 3_600_000, 'ev-zzz'] as [number, string]]) {
      for (const f of ['', `type=${type}`, `type=${type},participant_registered`, `seat=${seat}&host=${host}`, `seat=${seat}&type=hosting_changed,host_cert_rotated`, `until=${new Date(newest[0] - 86_400_000).toISOString()}`]) {
        const watermark = eventCursor(key, 'prev');
        const r = await both('events.list', {}, `${f}&prev_cursor=${watermark}`);
        expect(r.composed).toBe(r.oracle);
        const page = r.body as FeedPage;
        expect(page.items, f).toEqual([]);
        expect(page.prev_cursor, f).toBe(watermark);
        expect(page.next_cursor, f).toBeNull();
        // Polling again with it gives the same answer: a poller that keeps the last prev_cursor never starts over.
        const again = await both('events.list', {}, `${f}&prev_cursor=${page.prev_cursor}`);
        expect(again.oracle).toBe(r.oracle);
      }
    }
  });

  it('a live poll after the watermark returns the newer matches in full pages, nearest first, then keeps its place', async () => {
    const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC, 1 LIMIT 1')[0]!;
    const host = col(`SELECT h.hostname FROM event_seats s JOIN event_hosts h USING (event_id) WHERE s.seat_id = '${seat}' GROUP BY 1 HAVING count(*) >= 3 ORDER BY count(*), 1 LIMIT 1`)[0]!;
    for (const f of [{}, { type: ['host_cert_rotated', 'participant_deregistered'] }, { seat, host }, { seat, type: ['ap_seat_changed', 'endpoint_changed'] }] satisfies EventQuery[]) {
      const matches = eventMatchKeys(f);
      expect(matches.length, JSON.stringify(f)).toBeGreaterThan(1);
      // Watermarks: just before the newest match (one newer), in the middle, and before every event.
      const keys = db.prepare('SELECT observed_at, id FROM events ORDER BY observed_at, id').raw().all() as FeedKeyT[];
      const before = (k: FeedKeyT): FeedKeyT => keys.filter((x) => olderThan(x, k)).at(-1) ?? [k[0] - 1, k[1]];
      for (const from of [before(matches[0]!), matches[Math.floor(matches.length / 2)]!, [keys[0]![0] - 1, 'ev-0'] as FeedKeyT]) {
        for (const limit of [1, 2, 7, 200]) {
          const pages = await pollEvents(f, limit, from);
          const newer = matches.filter((k) => olderThan(from, k)).length;
          // Full pages: as few as the newer matches allow, and the empty page that ends the poll.
          expect(pages, `${JSON.stringify(f)} limit=${limit}`).toBe(Math.ceil(newer / limit) + 1);
        }
      }
    }
  });

  it('meta counts equal the items: filter_count, per-type facets under the other filters, chart totals', async () => {
    const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC LIMIT 1')[0]!;
    const since = new Date(nowMs - 10 * 86_400_000 + 1234).toISOString();
    const r = await both('events.list', {}, `seat=${seat}&since=${since}&type=ap_seat_changed`);
    expect(r.composed).toBe(r.oracle);
    const page = r.body as FeedPage;
    const direct = col<number>(
      `SELECT count(*) FROM events e WHERE e.id IN (SELECT event_id FROM event_seats WHERE seat_id = '${seat}') AND e.observed_at >= ${Date.parse(since)} AND e.type = 'ap_seat_changed'`,
    )[0]!;
    expect(page.meta!.filter_count).toBe(direct);
    expect(page.meta!.chart_bucket).toBe('day');
    expect(page.meta!.chart_data.reduce((n, b) => n + b.count, 0)).toBe(direct);
    const apSeat = page.meta!.facets.type!.find((b) => b.value === 'ap_seat_changed');
    expect(apSeat?.count ?? 0).toBe(direct);
    const hourly = (await both('events.list', {}, `since=${new Date(nowMs - 36 * 3_600_000).toISOString()}`)).body as FeedPage;
    expect(hourly.meta!.chart_bucket).toBe('hour');
  });

  it('two entity filters: counted when one is a participant; a seat and a host over 200 events say their counts were omitted', async () => {
    // The participant with the most events, and a host related to them.
    const [pid, host] = db
      .prepare(`SELECT p.pid, h.hostname FROM events e JOIN participants p ON p.id = e.participant_id JOIN event_hosts h ON h.event_id = e.id GROUP BY p.id, h.hostname ORDER BY count(*) DESC, 1, 2 LIMIT 1`)
      .raw()
      .get() as [string, string];
    const r = await both('events.list', {}, `participant=${encodeURIComponent(pid)}&host=${host}`);
    expect(r.composed).toBe(r.oracle);
    const meta = (r.body as FeedPage).meta!;
    const direct = col<number>(`SELECT count(*) FROM events e JOIN participants p ON p.id = e.participant_id WHERE p.pid = '${pid}' AND e.id IN (SELECT event_id FROM event_hosts WHERE hostname = '${host}')`)[0]!;
    expect(direct).toBeGreaterThan(0);
    expect(meta.filter_count).toBe(direct);
    expect(meta.chart_data.reduce((n, b) => n + b.count, 0)).toBe(direct);
    expect(meta).not.toHaveProperty('counts_omitted');
    // A seat and a host over more than META_SCAN_MAX events of the seat (none in the small demo): the
    // counts are omitted, and the meta says so instead of looking like zero counts.
    const omitted = eventMeta({ total: 1000, filterActive: true, types: undefined, hours: null, bucket: 'day' });
    expect(omitted).toMatchObject({ filter_count: null, facets: {}, chart_data: [], counts_omitted: true });
    expect(RESOURCE_SCHEMAS.EventFeedMeta.safeParse(omitted).success).toBe(true);
    expect(col<number>(`SELECT count(*) FROM event_seats GROUP BY seat_id ORDER BY 1 DESC LIMIT 1`)[0]!).toBeLessThanOrEqual(META_SCAN_MAX);
  });

  it('400 problems of the event feed', async () => {
    const cases: Array<[string, string]> = [
      ['type=bogus', 'Invalid query parameter'],
      ['participant=not-an-id', 'Invalid query parameter'],
      ['since=yesterday', 'Invalid query parameter'],
      ['until=2026-13-01T00:00:00Z', 'Invalid query parameter'],
      ['limit=ten', 'Invalid query parameter'],
      ['cursor=abc', 'Invalid cursor'],
      ['prev_cursor=abc', 'Invalid cursor'],
      [`cursor=${eventCursor([nowMs, 'ev-x'], 'prev')}`, 'Invalid cursor'],
      [`cursor=${anomalyCursor([nowMs, 'x'])}`, 'Invalid cursor'],
      [`cursor=${eventCursor([nowMs, 'ev-x'], 'next')}&prev_cursor=${eventCursor([nowMs, 'ev-x'], 'prev')}`, 'Invalid query parameter'],
      ['since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z', 'Invalid query parameter'],
    ];
    for (const [q, title] of cases) {
      const r = await both('events.list', {}, q);
      expect([q, r.status, (r.body as { title: string }).title]).toEqual([q, 400, title]);
    }
  });
});

describe('read cost at the default chunk sizes (1000 items, 64 KB)', () => {
  it('representative requests compose from few files and equal the oracle', async () => {
    const dir = tempDir('api-events-default-');
    const sink = new DirectorySink(dir);
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 1000, chunkMaxBytes: 65_536 }, jsonBody);
    for (const id of ROUTE_IDS) EVENTS_RENDERERS[id]!(ctx);
    sink.close();
    const readDefault = async (p: string): Promise<Uint8Array | null> => {
      try {
        return new Uint8Array(fs.readFileSync(path.join(dir, p)));
      } catch {
        return null;
      }
    };
    const host = col('SELECT hostname FROM event_hosts GROUP BY hostname ORDER BY count(*) DESC LIMIT 1')[0]!;
    const seat = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC LIMIT 1')[0]!;
    const pid = col('SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id LIMIT 1')[0]!;
    const mid = db.prepare('SELECT observed_at, id FROM events ORDER BY observed_at DESC, id DESC LIMIT 1 OFFSET 300').raw().get() as [number, string];
    const day = (n: number): string => new Date(nowMs - n * 86_400_000 + 777).toISOString();
    const requests: Array<[RouteId, string]> = [
      ['events.list', 'type=endpoint_changed'],
      ['events.list', `host=${host}`],
      ['events.list', `seat=${seat}&type=ap_seat_changed`],
      ['events.list', `participant=${pid}`],
      ['events.list', `since=${day(7)}&until=${day(2)}`],
      ['events.list', `limit=200&cursor=${eventCursor(mid, 'next')}`],
      ['events.list', `prev_cursor=${eventCursor(mid, 'prev')}`],
      ['anomalies.list', 'detector=mass_change_burst'],
      ['anomalies.list', `seat=${col('SELECT seat_id FROM anomaly_seats LIMIT 1')[0]!}`],
      ['anomalies.list', 'detector=moved_to_unverified_seat&grade=notice&acknowledged=false&limit=1'],
      ['anomalies.list', `host=${col('SELECT hostname FROM anomaly_hosts h JOIN anomaly_seats s USING (anomaly_id) LIMIT 1')[0]!}&seat=${col('SELECT seat_id FROM anomaly_hosts h JOIN anomaly_seats s USING (anomaly_id) LIMIT 1')[0]!}&grade=warning`],
    ];
    const worst: Record<string, ReadStats> = {};
    for (const [id, q] of requests) {
      const parsed = parseRequest(ROUTES[id], {}, new URLSearchParams(q), { now: nowMs });
      if (!parsed.ok) throw new Error(q);
      const params = parsed.params as Record<string, unknown>;
      const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
      const composed = await compose(ROUTES[id], params, { read: readDefault, nowMs, stats });
      expect(jsonText(finished(composed, '/'))).toBe(jsonText(finished(runQuery(id, db, params, nowMs), '/')));
      if (process.env.DEBUG_COST) console.log(q, JSON.stringify(stats));
      const w = worst[id];
      if (!w || stats.bytes > w.bytes) worst[id] = stats;
    }
    console.log(`api-events: most reads for one answer at the default chunk sizes: ${JSON.stringify(worst)}`);
    expect(worst['anomalies.list']!.files).toBeLessThanOrEqual(3);
  });
});

describe('what an event page reads at the default chunk sizes: 3 chunks when every item of its source list matches, else only chunks holding a wanted type (meta adds at most four)', () => {
  it('random filters, windows, limits and cursors (both directions): composed = oracle; chunks read within the bound of the page\'s plan', async () => {
    const dir = tempDir('api-events-bound-');
    const sink = new DirectorySink(dir);
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 1000, chunkMaxBytes: 65_536 }, jsonBody);
    EVENTS_RENDERERS['events.list']!(ctx);
    sink.close();
    /** A list root as the renderer writes it (src/edge/list-format.ts); null when the partition has no list. */
    const rootOf = (partition: string[]): ListRoot | null => {
      const p = path.join(dir, listRootPath('events.list', partition));
      return fs.existsSync(p) ? (readStoredJson(p) as ListRoot) : null;
    };
    const root = rootOf(['all'])!;
    // The feed spans several chunks (else the bound would hold trivially); chunks hold at least
    // EVENT_CHUNK_MIN_ITEMS events except the last.
    console.log(`events.list/all at the default chunk sizes: ${root.count} events, chunks of ${root.entries.map((e) => e.count).join(', ')}`);
    expect(root.level).toBe(0);
    expect(root.entries.length).toBeGreaterThanOrEqual(4);
    for (const e of root.entries.slice(0, -1)) expect(e.count).toBeGreaterThanOrEqual(EVENT_CHUNK_MIN_ITEMS);
    const readDefault = async (p: string): Promise<Uint8Array | null> => {
      try {
        return new Uint8Array(fs.readFileSync(path.join(dir, p)));
      } catch {
        return null;
      }
    };
    const t0 = col<number>('SELECT min(observed_at) FROM events')[0]!;
    const hosts = col('SELECT hostname FROM event_hosts GROUP BY hostname ORDER BY count(*) DESC LIMIT 12');
    const seats = col('SELECT seat_id FROM event_seats GROUP BY seat_id ORDER BY count(*) DESC LIMIT 12');
    const keys = db.prepare('SELECT observed_at, id FROM events ORDER BY observed_at, id').raw().all() as Array<[number, string]>;
    const tsArb = fc.integer({ min: t0 - 86_400_000, max: nowMs });
    type Kind = 'plain' | 'type' | 'entity';
    const worst: Record<string, { chunks: number; over: number; bytes: number; target: string }> = {};
    const pids = col('SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id GROUP BY p.pid ORDER BY count(*) DESC LIMIT 12');
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          type: fc.option(fc.subarray([...EVENT_TYPES], { minLength: 1, maxLength: 4 }), { nil: undefined }),
          host: fc.option(fc.constantFrom(...hosts), { nil: undefined, freq: 2 }),
          seat: fc.option(fc.constantFrom(...seats), { nil: undefined, freq: 2 }),
          since: fc.option(tsArb, { nil: undefined, freq: 2 }),
          limit: fc.integer({ min: 1, max: 200 }),
          until: fc.option(tsArb, { nil: undefined, freq: 3 }),
          participant: fc.option(fc.constantFrom(...pids), { nil: undefined, freq: 4 }),
          mode: fc.constantFrom('first', 'cursor', 'prev'),
          key: fc.constantFrom(...keys),
          hops: fc.nat({ max: 2 }),
        }),
        async (r) => {
          let cursor: string | null = r.mode === 'first' ? null : eventCursor(r.key, r.mode === 'cursor' ? 'next' : 'prev');
          const [since, until] = r.since !== undefined && r.until !== undefined && r.since > r.until ? [r.until, r.since] : [r.since, r.until];
          const plan = eventPlan({ types: r.type, host: r.host, seat: r.seat, participant: r.participant });
          // plain: every item of the source list matches; type: only the type is left to match (chunks
          // without a wanted type are passed over by the index's counts); entity: a seat or host is left.
          const kind: Kind = plan.seat !== undefined || plan.host !== undefined ? 'entity' : plan.types !== null ? 'type' : 'plain';
          const sourceChunks = rootOf(plan.partition)?.entries.length ?? 0;
          for (let i = 0; i <= r.hops && (cursor !== null || i === 0); i++) {
            const q = new URLSearchParams();
            if (r.type) q.set('type', r.type.join(','));
            if (r.host !== undefined) q.set('host', r.host);
            if (r.seat !== undefined) q.set('seat', r.seat);
            if (r.participant !== undefined) q.set('participant', r.participant);
            if (since !== undefined) q.set('since', new Date(since).toISOString());
            if (until !== undefined) q.set('until', new Date(until).toISOString());
            q.set('limit', String(r.limit));
            if (cursor !== null) q.set(r.mode === 'prev' ? 'prev_cursor' : 'cursor', cursor);
            const target = `/v1/events?${q}`;
            const parsed = parseRequest(ROUTES['events.list'], {}, q, { now: nowMs });
            if (!parsed.ok) throw new Error(target);
            const params = parsed.params as Record<string, unknown>;
            const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
            const composed = await compose(ROUTES['events.list'], params, { read: readDefault, nowMs, stats });
            expect(jsonText(finished(composed, '/')), target).toBe(jsonText(finished(runQuery('events.list', db, params, nowMs), '/')));
            const first = cursor === null;
            const newer = r.mode === 'prev' && !first;
            // The page: a plain one spans at most 3 chunks (chunks of at least 100 events); a type-only
            // one reads the chunk where it starts, chunks holding a match and the one ending the range:
            // at most `limit` + 2, and a prev_cursor page up to 3 more to tell whether an older match
            // follows; a page with a seat or host left to match, at most its source list.
            const page = kind === 'plain' ? 3 : kind === 'type' ? r.limit + 2 + (newer ? 3 : 0) : sourceChunks;
            // A first page adds meta: at most one events chunk at each of since and until and two
            // histogram chunks; counted one by one (a participant's events, a seat's with a host), its list.
            const scanned = plan.partition[0] === 'participant' || [r.participant, r.seat, r.host].filter((v) => v !== undefined).length >= 2;
            const meta = first ? (scanned ? sourceChunks : 4) : 0;
            expect(stats.chunks, `${target}: chunks read (${kind})`).toBeLessThanOrEqual(Math.min(page + meta, sourceChunks + meta));
            const label = `${kind}${first ? ' first' : newer ? ' prev' : ''}`;
            const w = (worst[label] ??= { chunks: 0, over: -Infinity, bytes: 0, target: '' });
            if (stats.chunks > w.chunks || (stats.chunks === w.chunks && stats.bytes > w.bytes)) Object.assign(w, { chunks: stats.chunks, bytes: stats.bytes, target });
            w.over = Math.max(w.over, stats.chunks - r.limit);
            const body = (composed.status === 200 ? composed.body : null) as FeedPage | null;
            cursor = r.mode === 'prev' ? (body?.prev_cursor ?? null) : (body?.next_cursor ?? null);
          }
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 200) },
    );
    console.log(`events.list with default chunks (small demo): most chunks read by one page per plan ${JSON.stringify(worst)}`);
  });
});

describe('anomalies', () => {
  it('the default first page is an exact file; every anomaly detail equals the oracle; unknown ids are 404', async () => {
    const r = await both('anomalies.list', {});
    expect(r.composed).toBe(r.oracle);
    expect(r.stats.files).toBe(1);
    const ids = col('SELECT id FROM anomalies');
    expect(ids.length).toBeGreaterThan(3);
    for (const id of [...ids, 'cis-0000000000000000']) {
      const d = await both('anomalies.detail', { id });
      expect(d.composed).toBe(d.oracle);
      expect(d.status).toBe(ids.includes(id) ? 200 : 404);
    }
    const unknown = await both('anomalies.detail', { id: 'cis-0000000000000000' });
    expect((unknown.body as { type: string }).type).toBe('https://api.example.org/problems/anomaly-not-found');
    const bad = await both('anomalies.detail', { id: 'Not_An_Id!' });
    expect(bad.status).toBe(404);
  });

  it('random filters, limits and cursors: composed = oracle; walks give every anomaly once', async () => {
    const hosts = col('SELECT DISTINCT hostname FROM anomaly_hosts');
    const seats = col('SELECT DISTINCT seat_id FROM anomaly_seats');
    const keys = db.prepare('SELECT observed_at, id FROM anomalies').raw().all() as Array<[number, string]>;
    const t0 = col<number>('SELECT min(observed_at) FROM anomalies')[0]!;
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            detector: fc.constantFrom(...DETECTORS, 'bogus'),
            grade: fc.constantFrom('notice', 'warning', 'WARNING'),
            host: fc.oneof(fc.constantFrom(...hosts), fc.constant('nowhere.example.com')),
            seat: fc.oneof(fc.constantFrom(...seats), fc.constant('pzz000000')),
            acknowledged: fc.constantFrom('true', 'false'),
            since: fc.oneof({ weight: 9, arbitrary: fc.integer({ min: t0 - 86_400_000, max: nowMs }) }, { weight: 1, arbitrary: fc.constant(TIMESTAMP_MIN_MS) }),
            limit: fc.integer({ min: 1, max: 200 }),
            cursor: fc.constantFrom(...keys),
          },
          { requiredKeys: [] },
        ),
        async (r) => {
          const q = new URLSearchParams();
          for (const k of ['detector', 'grade', 'host', 'seat', 'acknowledged'] as const) if (r[k] !== undefined) q.set(k, r[k]);
          if (r.since !== undefined) q.set('since', new Date(r.since).toISOString());
          if (r.limit !== undefined) q.set('limit', String(r.limit));
          if (r.cursor !== undefined) q.set('cursor', anomalyCursor(r.cursor));
          const res = await both('anomalies.list', {}, q);
          expect(res.composed).toBe(res.oracle);
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 150) },
    );
    for (const limit of [1, 7, 50, 200]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (;;) {
        const q = new URLSearchParams({ limit: String(limit) });
        if (cursor) q.set('cursor', cursor);
        const r = await both('anomalies.list', {}, q);
        expect(r.composed).toBe(r.oracle);
        const page = r.body as { items: Array<{ id: string }>; next_cursor: string | null };
        seen.push(...page.items.map((i) => i.id));
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      expect(seen).toEqual(col('SELECT id FROM anomalies ORDER BY observed_at DESC, id DESC'));
    }
  });

  it('400 problems of the anomaly list', async () => {
    for (const q of ['detector=bogus', 'grade=severe', 'acknowledged=maybe', 'since=today', 'limit=x', 'cursor=zzz', `cursor=${eventCursor([nowMs, 'ev-1'], 'next')}`]) {
      const r = await both('anomalies.list', {}, q);
      expect([q, r.status]).toEqual([q, 400]);
      expect((r.body as { title: string }).title).toBe(q.startsWith('cursor') ? 'Invalid cursor' : 'Invalid query parameter');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Anomaly pages under any filters: full, and reading only chunks that hold a match

/** The anomaly filters as a client sets them (query parameter values). */
type AnomalyQuery = Partial<Record<'detector' | 'grade' | 'acknowledged' | 'host' | 'seat', string>>;
const ANOMALY_FILTERS = ['detector', 'grade', 'acknowledged', 'host', 'seat'] as const;

interface AnomalyAnswer {
  oracle: string;
  composed: string;
  body: { items: Array<{ id: string }>; next_cursor: string | null };
  stats: ReadStats;
}

/** One anomaly page composed from the snapshot in `dir` and answered by the oracle over `adb`. */
async function anomalyAnswer(adb: Db, dir: string, q: URLSearchParams): Promise<AnomalyAnswer> {
  const parsed = parseRequest(ROUTES['anomalies.list'], {}, q, { now: nowMs });
  if (!parsed.ok) throw new Error(q.toString());
  // The canonical parameters of the route, as the composers and the oracle take them.
  const params = parsed.params as Record<string, unknown>;
  const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  const readDir = async (p: string): Promise<Uint8Array | null> => {
    try {
      return new Uint8Array(fs.readFileSync(path.join(dir, p)));
    } catch {
      return null;
    }
  };
  const composed = await compose(ROUTES['anomalies.list'], params, { read: readDir, nowMs, stats });
  const oracle = runQuery('anomalies.list', adb, params, nowMs);
  const body = finished(oracle, '/v1/anomalies');
  expect(RESOURCE_SCHEMAS.AnomalyPage.safeParse(body).success).toBe(true);
  // A valid AnomalyPage (checked above).
  return { oracle: jsonText(body), composed: jsonText(finished(composed, '/v1/anomalies')), body: body as AnomalyAnswer['body'], stats };
}

/** The ids of the anomalies matching `f` (observed at or after `since`, after the key `after`), newest first: straight SQL. */
function anomalyMatches(adb: Db, f: AnomalyQuery, since?: number, after?: [number, string]): string[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.detector !== undefined) (where.push('detector = ?'), args.push(f.detector));
  if (f.grade !== undefined) (where.push('grade = ?'), args.push(f.grade));
  if (f.acknowledged !== undefined) (where.push('acknowledged = ?'), args.push(f.acknowledged === 'true' ? 1 : 0));
  if (f.host !== undefined) (where.push('id IN (SELECT anomaly_id FROM anomaly_hosts WHERE hostname = ?)'), args.push(f.host));
  if (f.seat !== undefined) (where.push('id IN (SELECT anomaly_id FROM anomaly_seats WHERE seat_id = ?)'), args.push(f.seat));
  if (since !== undefined) (where.push('observed_at >= ?'), args.push(since));
  if (after !== undefined) (where.push('(observed_at < ? OR (observed_at = ? AND id < ?))'), args.push(after[0], after[0], after[1]));
  // One text column plucked.
  return adb.prepare(`SELECT id FROM anomalies ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY observed_at DESC, id DESC`).pluck().all(...args) as string[];
}

interface WalkCost {
  pages: number;
  /** Most chunks one page read, and the most it read beyond its `limit`. */
  maxChunks: number;
  maxOverLimit: number;
}

/**
 * Follows next_cursor from the first page (or from `cursor`) to the end: every page composed = oracle,
 * every page but the last full (`limit` items), at most `limit` + 2 chunks read per page, and the
 * pages together hold every match once, in order.
 */
async function walkAnomalies(adb: Db, dir: string, f: AnomalyQuery, limit: number, opts: { since?: number; after?: [number, string] } = {}): Promise<WalkCost> {
  const q = new URLSearchParams({ ...f, limit: String(limit) });
  if (opts.since !== undefined) q.set('since', new Date(opts.since).toISOString());
  let cursor: string | null = opts.after === undefined ? null : anomalyCursor(opts.after);
  const seen: string[] = [];
  const cost: WalkCost = { pages: 0, maxChunks: 0, maxOverLimit: -Infinity };
  for (;;) {
    if (cursor !== null) q.set('cursor', cursor);
    const target = `/v1/anomalies?${q}`;
    const r = await anomalyAnswer(adb, dir, q);
    expect(r.composed, target).toBe(r.oracle);
    expect(r.stats.chunks, `${target}: chunks read`).toBeLessThanOrEqual(limit + 2);
    if (r.body.next_cursor !== null) expect(r.body.items.length, `${target}: a page before the last is full`).toBe(limit);
    cost.pages++;
    cost.maxChunks = Math.max(cost.maxChunks, r.stats.chunks);
    cost.maxOverLimit = Math.max(cost.maxOverLimit, r.stats.chunks - limit);
    seen.push(...r.body.items.map((i) => i.id));
    cursor = r.body.next_cursor;
    if (cursor === null) break;
    expect(cost.pages, `${target}: more pages than matches`).toBeLessThanOrEqual(seen.length);
  }
  expect(seen, `${JSON.stringify(f)} limit=${limit}`).toEqual(anomalyMatches(adb, f, opts.since, opts.after));
  return cost;
}

/** Each subset of the filters with each value of `values` (none: the filter is not set). */
function filterCombinations(values: { [K in keyof AnomalyQuery]-?: readonly string[] }): AnomalyQuery[] {
  let out: AnomalyQuery[] = [{}];
  for (const k of ANOMALY_FILTERS) out = out.flatMap((f) => [f, ...values[k].map((v) => ({ ...f, [k]: v }))]);
  return out;
}

const ANOMALY_WALK_LIMITS = [1, 7, 50] as const;

describe('which index entries an anomaly page reads (anomalyEntryMayMatch)', () => {
  const entry = {
    detector: { cert_identity_shift: 2, mass_change_burst: 1 },
    grade: { notice: 1, warning: 2 },
    acknowledged: { false: 2, true: 1 },
    'detector|grade|acknowledged': { 'cert_identity_shift|warning|false': 2, 'mass_change_burst|notice|true': 1, 'off_cadence_rotation|notice|false': 0 },
    'seat|detector|grade|acknowledged': { 'PSY000002|cert_identity_shift|warning|false': 1, 'PSY000001|mass_change_burst|notice|true': 1 },
  };
  const may = (f: Parameters<typeof anomalyPlan>[0], counts: Parameters<typeof anomalyEntryMayMatch>[1] = entry): boolean => anomalyEntryMayMatch(anomalyPlan(f), counts);

  it('an entry is read only when it counts a combination of every filter set: counts of each filter alone do not decide', () => {
    expect(may({})).toBe(true);
    expect(may({ detector: 'cert_identity_shift' })).toBe(true);
    expect(may({ detector: 'off_cadence_rotation' })).toBe(false);
    // Each value is counted on its own, but no anomaly of the entry has both.
    expect(may({ detector: 'cert_identity_shift', acknowledged: true })).toBe(false);
    expect(may({ grade: 'warning', acknowledged: true })).toBe(false);
    expect(may({ detector: 'mass_change_burst', grade: 'notice', acknowledged: true })).toBe(true);
    expect(may({ detector: 'mass_change_burst', grade: 'warning', acknowledged: true })).toBe(false);
    // A host alone reads its own list, every item a match.
    expect(may({ host: 'ap.example', grade: 'notice' })).toBe(true);
  });

  it('host with seat: the seat is counted with the combination on the host\'s list', () => {
    expect(anomalyPlan({ host: 'ap.example', seat: 'PSY000001' }).partition).toEqual(['host', 'ap.example']);
    expect(may({ host: 'ap.example', seat: 'PSY000001' })).toBe(true);
    expect(may({ host: 'ap.example', seat: 'PSY000003' })).toBe(false);
    expect(may({ host: 'ap.example', seat: 'PSY000001', grade: 'warning' })).toBe(false);
    expect(may({ host: 'ap.example', seat: 'PSY000002', grade: 'warning', acknowledged: false })).toBe(true);
    // A seat filter that ends like a counted value is not that value's seat.
    expect(may({ host: 'ap.example', seat: 'X|PSY000001' })).toBe(false);
  });

  it('a snapshot written before the combined counts: the counts of each filter alone rule out what they can', () => {
    const old = { detector: entry.detector, grade: entry.grade, acknowledged: entry.acknowledged };
    expect(may({ detector: 'cert_identity_shift', acknowledged: true }, old)).toBe(true);
    expect(may({ detector: 'off_cadence_rotation' }, old)).toBe(false);
    expect(may({ host: 'ap.example', seat: 'PSY000003', grade: 'notice' }, old)).toBe(true);
    expect(anomalyEntryMayMatch(anomalyPlan({ detector: 'off_cadence_rotation' }), undefined)).toBe(true);
  });
});

describe('anomaly pages under every filter combination are full and read at most `limit` + 2 chunks (small demo, one anomaly a chunk)', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('api-anomalies-1-');
    const sink = new DirectorySink(dir);
    // One anomaly per chunk: the demo's six anomalies span six chunks, so the bound is not trivially met.
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 1, chunkMaxBytes: 65_536 }, jsonBody);
    EVENTS_RENDERERS['anomalies.list']!(ctx);
    sink.close();
  });

  it('every value of every filter, alone and combined, at limits 1, 7 and 50, from the first page and from every anomaly', async () => {
    // A list root as the renderer writes it (src/edge/list-format.ts).
    const root = readStoredJson(path.join(dir, listRootPath('anomalies.list', ['all']))) as ListRoot;
    expect(root.entries.length).toBe(col<number>('SELECT count(*) FROM anomalies')[0]!);
    const combos = filterCombinations({
      detector: DETECTORS,
      grade: ['notice', 'warning'],
      acknowledged: ['true', 'false'],
      host: col('SELECT DISTINCT hostname FROM anomaly_hosts ORDER BY 1'),
      seat: col('SELECT DISTINCT seat_id FROM anomaly_seats ORDER BY 1'),
    });
    // Raw rows of the two selected columns: sort keys.
    const keys = db.prepare('SELECT observed_at, id FROM anomalies ORDER BY observed_at DESC, id DESC').raw().all() as Array<[number, string]>;
    let pages = 0;
    let matching = 0;
    let worst = -Infinity;
    for (const f of combos) {
      if (anomalyMatches(db, f).length > 0) matching++;
      for (const limit of ANOMALY_WALK_LIMITS) {
        const c = await walkAnomalies(db, dir, f, limit);
        pages += c.pages;
        worst = Math.max(worst, c.maxOverLimit);
      }
    }
    // From every anomaly's position, with the combinations that hold a match.
    for (const f of combos.filter((x) => anomalyMatches(db, x).length > 0)) for (const after of keys) worst = Math.max(worst, (await walkAnomalies(db, dir, f, 1, { after })).maxOverLimit);
    console.log(`anomalies (small demo, 1 a chunk): ${combos.length} filter combinations (${matching} with a match), ${pages} pages; most chunks read beyond limit: ${worst}`);
    expect(matching).toBeGreaterThan(50);
  }, 240_000);
});

describe('anomaly pages under every filter combination are full and read at most `limit` + 2 chunks (600 synthetic anomalies)', () => {
  // 600 synthetic anomalies over four hosts and four seats (some with two seats, some with no host),
  // random detector, grade and acknowledgement, in chunks of at most 16: combinations of three or more
  // filters match sparsely, and without combined counts a page looking for them read most of the list.
  let adb: Db;
  let dir: string;
  const hosts = ['a.syn.example', 'b.syn.example', 'c.syn.example', 'd.syn.example'];
  const seats = ['PSY000001', 'PSY000002', 'PSY000003', 'PSY000004'];
  const grades = ['notice', 'warning'] as const;
  /** A sparse combination: every filter set (chosen from the data: one match or a few). */
  let sparse: Required<AnomalyQuery>;

  beforeAll(async () => {
    // The small demo derived once per run (test/helpers/demo-fixture.ts), copied.
    adb = copyOfDb((await derivedSmallDemo()).db).open();
    // mulberry32: a seeded generator whose outputs are independent enough for independent filters.
    let x = 12345;
    const rnd = (n: number): number => {
      x = (x + 0x6d2b79f5) | 0;
      let t = Math.imul(x ^ (x >>> 15), 1 | x);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
    };
    const ins = adb.prepare('INSERT INTO anomalies (id, detector, grade, target, evidence, observed_at, acknowledged, reason) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)');
    const insHost = adb.prepare('INSERT OR IGNORE INTO anomaly_hosts (hostname, anomaly_id) VALUES (?, ?)');
    const insSeat = adb.prepare('INSERT OR IGNORE INTO anomaly_seats (seat_id, anomaly_id) VALUES (?, ?)');
    adb.transaction(() => {
      for (let i = 0; i < 600; i++) {
        const id = `syn-${String(i).padStart(6, '0')}`;
        ins.run(id, DETECTORS[rnd(DETECTORS.length)]!, grades[rnd(2)]!, JSON.stringify({ n: i }), JSON.stringify({ i }), nowMs - 1000 * 3600 * (1 + rnd(24 * 60)), rnd(4) === 0 ? 1 : 0);
        if (rnd(10) !== 0) insHost.run(hosts[rnd(4)]!, id);
        insSeat.run(seats[rnd(4)]!, id);
        if (rnd(6) === 0) insSeat.run(seats[rnd(4)]!, id);
      }
    })();
    dir = tempDir('api-anomalies-syn-');
    const sink = new DirectorySink(dir);
    const ctx = new RenderContext(adb, nowMs, sink, { chunkMaxItems: 16, chunkMaxBytes: 8192 }, jsonBody);
    EVENTS_RENDERERS['anomalies.list']!(ctx);
    sink.close();
    // The sparse combination: every filter set, acknowledged, with the fewest matches (at least one).
    // Raw rows of the four selected text columns.
    const rows = adb
      .prepare(
        `SELECT a.detector, a.grade, h.hostname, s.seat_id FROM anomalies a JOIN anomaly_hosts h ON h.anomaly_id = a.id JOIN anomaly_seats s ON s.anomaly_id = a.id
         WHERE a.acknowledged = 1 GROUP BY 1, 2, 3, 4 ORDER BY count(*), 1, 2, 3, 4 LIMIT 1`,
      )
      .raw()
      .all() as Array<[string, string, string, string]>;
    const [detector, grade, host, seat] = rows[0]!;
    sparse = { detector, grade, acknowledged: 'true', host, seat };
  }, 120_000);
  afterAll(() => adb?.close());

  it('the data is a hard case: by the counts of each filter alone, some `limit=1` page would read more than 3 chunks', () => {
    // Per index entry: whether the counts of each filter on its own (the index's per-filter counts; a
    // seat's from the combinations that name it) leave it to be read, and how many anomalies of the
    // wanted combination it holds. A `limit=1` page from the start of an entry reads the entries left
    // until it has two matches (its item and the one telling that more follow).
    const perFilterMost: Record<string, number> = {};
    const facets = { detector: sparse.detector, grade: sparse.grade, acknowledged: sparse.acknowledged };
    const combination = [sparse.detector, sparse.grade, sparse.acknowledged].join('|');
    for (const [partition, seat] of [
      [['all'], undefined],
      [['host', sparse.host], sparse.seat],
    ] as const) {
      // A list root as the renderer writes it (src/edge/list-format.ts).
      const root = readStoredJson(path.join(dir, listRootPath('anomalies.list', partition))) as ListRoot;
      expect(root.level).toBe(0);
      const entries = root.entries.map((e) => {
        const seats = Object.entries(e.counts?.['seat|detector|grade|acknowledged'] ?? {});
        return {
          left: Object.entries(facets).every(([f, v]) => (e.counts?.[f]?.[v] ?? 0) > 0) && (seat === undefined || seats.some(([v, n]) => n > 0 && v.startsWith(`${seat}|`))),
          matches: seat === undefined ? (e.counts?.['detector|grade|acknowledged']?.[combination] ?? 0) : (e.counts?.['seat|detector|grade|acknowledged']?.[`${seat}|${combination}`] ?? 0),
        };
      });
      let most = 0;
      for (let i = 0; i < entries.length; i++) {
        let reads = 0;
        let found = 0;
        for (let j = i; j < entries.length && found < 2; j++) {
          if (!entries[j]!.left) continue;
          reads++;
          found += entries[j]!.matches;
        }
        most = Math.max(most, reads);
      }
      const key = partition.join('/');
      perFilterMost[key] = most;
      console.log(`anomalies (600 synthetic), ${key} ${seat === undefined ? '' : `${seat}|`}${combination}: ${entries.length} chunks, ${entries.filter((e) => e.matches > 0).length} hold a match, per-filter counts leave ${entries.filter((e) => e.left).length}; a limit=1 page would read up to ${most}`);
    }
    expect(perFilterMost['all']).toBeGreaterThan(3);
    expect(perFilterMost[`host/${sparse.host}`]).toBeGreaterThan(3);
  });

  it('each subset of the filters at the sparse combination\'s values, at limits 1, 7 and 50: full pages, every match once, at most `limit` + 2 chunks', async () => {
    const combos = filterCombinations({
      detector: [sparse.detector],
      grade: [sparse.grade],
      acknowledged: [sparse.acknowledged],
      host: [sparse.host],
      seat: [sparse.seat],
    });
    expect(combos.length).toBe(32);
    const worst: Record<number, { chunks: number; over: number; target: string }> = {};
    for (const f of combos) {
      for (const limit of ANOMALY_WALK_LIMITS) {
        const c = await walkAnomalies(adb, dir, f, limit);
        const w = (worst[limit] ??= { chunks: 0, over: -Infinity, target: '' });
        if (c.maxChunks > w.chunks) Object.assign(w, { chunks: c.maxChunks, target: new URLSearchParams(f).toString() });
        w.over = Math.max(w.over, c.maxOverLimit);
      }
    }
    console.log(`anomalies (600 synthetic): most chunks read by one page per limit: ${JSON.stringify(worst)}`);
  }, 240_000);

  it('random filters, since, limits and cursors: composed = oracle; walks to the end give every match once; full pages; at most `limit` + 2 chunks a page', async () => {
    // Raw rows of the two selected columns: sort keys.
    const keys = adb.prepare('SELECT observed_at, id FROM anomalies ORDER BY observed_at DESC, id DESC').raw().all() as Array<[number, string]>;
    const t0 = keys[keys.length - 1]![0];
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            detector: fc.constantFrom(...DETECTORS),
            grade: fc.constantFrom(...grades),
            acknowledged: fc.constantFrom('true', 'false'),
            host: fc.constantFrom(...hosts, 'nowhere.example'),
            seat: fc.constantFrom(...seats, 'PZZ000000'),
          },
          { requiredKeys: [] },
        ),
        fc.integer({ min: 1, max: 200 }),
        fc.option(fc.constantFrom(...keys), { nil: undefined }),
        fc.option(fc.integer({ min: t0 - 86_400_000, max: nowMs }), { nil: undefined, freq: 3 }),
        async (f, limit, after, since) => {
          await walkAnomalies(adb, dir, f, limit, { after, since });
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 60) },
    );
  }, 240_000);
});
