// The participants family: the shim's composer over the rendered snapshot answers byte-identically to
// the oracle over SQLite (status and body), for random valid parameters (filters, searches, orders,
// limits, cursors taken from real pages); whole walks are gap- and duplicate-free; the spec's 400 and
// 404 cases give the right problems; every body passes its response schema.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody, jsonText } from '../src/api/json.js';
import { acceptedValues, CHUNK_ITEMS_ESTIMATE, classifySearch, MAIN_LIST_SORTS, mainPartition, mainSource, READ_REVERSED, facetValues, foldName, itemMatches, LIST_CHUNK_MIN_ITEMS, listOrder, plannedPostingDimensions, postingPartition, postingSource, ORDERED_POSTINGS_COUNTED, POSTING_VALUES_MAX, searchTrigrams, SMALL_SET_MAX, TRIGRAM_ORDERS, TRIGRAM_TABLE_MIN, TRIGRAMS_PATH, gramCount, trigramPartition, trigramSource, DEFAULT_SORT, shortSearchGramsOf, unregisteredGramPartition, unregisteredSearchGrams, UNREGISTERED_GRAMS_PATH, type GramCountTable, type ListParams, type TrigramCounts } from '../src/api/participants/plan.js';
import { PROBLEM_CATALOGUE } from '../src/api/problems.js';
import { runQuery } from '../src/api/query/index.js';
import { curatedSeatNames, facetLabelsOf, facetTupleRows, LIST_COLUMNS, listItemOf, orderSql, type ListRow } from '../src/api/participants/query.js';
import { CUBE_FORMAT, CUBE_JSON_PATH, CUBE_PATH, cubeOf, decodeCube, encodeCube, FACET_DIMENSIONS, type FacetCube } from '../src/api/participants/facets.js';
import { gramListPath, GRAMS_PREFIX } from '../src/api/participants/grams.js';
import { finishResult, paramErrorsOf, type ApiResult } from '../src/api/result.js';
import { matchRoute } from '../src/api/routes/match.js';
import { parseRequest } from '../src/api/routes/request.js';
import { ROUTES } from '../src/api/routes/table.js';
import { FILTER_COUNT_CAP, PARTICIPANT_SORTS, RESOURCE_SCHEMAS, type ParticipantListItem, type ResourceName } from '../src/api/schemas/index.js';
import type { CursorPosition } from '../src/api/cursor.js';
import type { Db } from '../src/db/index.js';
import { runDerive } from '../src/derive/index.js';
import { compose } from '../src/edge/compose/index.js';
import { pageOf } from '../src/edge/compose/scan.js';
import { ListReader } from '../src/edge/list-reader.js';
import { listRootPath } from '../src/api/paths.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { RenderContext } from '../src/render/context.js';
import { participantRenderers } from '../src/render/routes/participants.js';
import { DirectorySink } from '../src/render/sink.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { decodeStored, encodeStored, readStoredJson } from '../src/render/stored.js';

const BASE = 'https://api.example.test';
const HISTORY_LIST_MIN = 4;
let db: Db;
let nowMs: number;
let outDir: string;
/** A file's content, decoded from its stored encoding (for a ListReader opened without a Source). */
const readDecoded = async (p: string): Promise<Uint8Array | null> => {
  const b = await read(p);
  return b && decodeStored(Buffer.from(b));
};
const read = async (p: string): Promise<Uint8Array | null> => {
  try {
    return new Uint8Array(fs.readFileSync(path.join(outDir, p)));
  } catch {
    return null;
  }
};

interface Sample {
  pids: string[];
  names: string[];
  values: string[];
  countries: string[];
  schemes: string[];
  smps: string[];
  seats: string[];
  /** Participants with more than 1 event / HISTORY_LIST_MIN history rows (walked; stored lists are rendered for them). */
  multiEvents: string[];
  multiHistory: string[];
}
let S: Sample;
const maxCost = { files: 0, bytes: 0, chunks: 0, target: '' };
const costByRoute = new Map<string, { files: number; bytes: number }>();

beforeAll(() => {
  const copy = copyOfSmallDemoDb();
  db = copy.open();
  // The steps the participants family reads (hosts, zones, churn, anomalies are not needed here).
  runDerive(db, { only: ['providers', 'participants', 'stats'] });
  nowMs = Date.parse(smallDemo().now);
  outDir = tempDir('participants-out-');
  const sink = new DirectorySink(outDir);
  // Small chunks so lists span many chunks and a level of inner index nodes (> 128 chunks).
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 30, chunkMaxBytes: 16_384 }, jsonBody);
  // Per-participant lists are rendered for every participant with more than 1 event (demo maximum: 2)
  // or history row, so the stored-list path is exercised (production: more than 50).
  for (const render of Object.values(participantRenderers({ perParticipantListMin: 1 }))) render(ctx);
  sink.close();
  const col = (sql: string): string[] => db.prepare(sql).pluck().all() as string[];
  S = {
    pids: col('SELECT pid FROM participant_list ORDER BY pid'),
    names: col('SELECT name FROM participant_list WHERE name IS NOT NULL ORDER BY pid'),
    values: col('SELECT value FROM participant_list ORDER BY pid'),
    countries: col('SELECT DISTINCT country FROM participant_list WHERE country IS NOT NULL ORDER BY 1'),
    schemes: col('SELECT DISTINCT scheme FROM participant_list ORDER BY 1'),
    smps: col('SELECT DISTINCT smp FROM participant_list WHERE smp IS NOT NULL ORDER BY 1'),
    seats: col('SELECT DISTINCT ap_seat_id FROM participant_list WHERE ap_seat_id IS NOT NULL ORDER BY 1'),
    multiEvents: col('SELECT p.pid FROM events e JOIN participant_list p ON p.participant_id = e.participant_id GROUP BY p.pid HAVING count(*) > 1 ORDER BY 1'),
    multiHistory: col(`SELECT p.pid FROM participant_history h JOIN participant_list p ON p.participant_id = h.participant_id GROUP BY p.pid HAVING count(*) > ${HISTORY_LIST_MIN} ORDER BY 1`),
  };
}, 240_000);

afterAll(() => {
  db?.close();
  console.log(`participants composer cost (small demo, 30-item chunks): max per request ${JSON.stringify(maxCost)}; per route ${JSON.stringify(Object.fromEntries(costByRoute))}`);
});

interface Answer {
  status: number;
  text: string;
  body: unknown;
  route: string;
  stats?: ReadStats;
}

function finish(r: ApiResult, instance: string): { status: number; text: string; body: unknown } {
  const f = finishResult(r, { baseUrl: BASE, instance });
  const body = f.status === 200 ? f.body : f.problem;
  return { status: f.status, text: jsonText(body), body };
}

/** A participant list page of the composer over the snapshot in `dir`, equal to the oracle's over `from`: its body and what it read. */
type ListBody = { items: Array<{ id: string }>; next_cursor: string | null; meta?: Meta };
async function pageOver(from: Db, dir: string, query: Record<string, string | undefined>): Promise<{ target: string; body: ListBody; paths: string[]; files: number }> {
  const target = `/v1/participants${qs(query)}`;
  const url = new URL(target, BASE);
  const parsed = parseRequest(ROUTES['participants.list'], {}, url.searchParams, { now: nowMs });
  if (!parsed.ok) throw new Error(target);
  const paths: string[] = [];
  const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  const read = async (p: string): Promise<Uint8Array | null> => {
    paths.push(p);
    try {
      return new Uint8Array(fs.readFileSync(path.join(dir, p)));
    } catch {
      return null;
    }
  };
  const composed = finish(await compose(ROUTES['participants.list'], parsed.params as Record<string, unknown>, { read, nowMs, stats }), url.pathname);
  const oracle = finish(runQuery('participants.list', from, parsed.params as Record<string, unknown>, nowMs), url.pathname);
  expect(composed.text, target).toBe(oracle.text);
  return { target, body: composed.body as ListBody, paths, files: stats.files };
}

/** The participant lists of a database, rendered with the default chunk settings into a new directory. */
function listsOf(from: Db, prefix: string): string {
  const dir = tempDir(prefix);
  const sink = new DirectorySink(dir);
  participantRenderers()['participants.list']!(new RenderContext(from, nowMs, sink, { chunkMaxItems: 1000, chunkMaxBytes: 65_536 }, jsonBody));
  sink.close();
  return dir;
}

/** Answers one request target with the oracle and with the composer. */
async function answer(target: string): Promise<{ oracle: Answer; composer: Answer }> {
  const url = new URL(target, BASE);
  const m = matchRoute(url.pathname);
  if (!m) throw new Error(`no route for ${target}`);
  const parsed = parseRequest(m.route, m.pathParams, url.searchParams, { now: nowMs });
  if (!parsed.ok) {
    const a = { ...finish(paramErrorsOf(parsed.errors), url.pathname), route: m.route.id };
    return { oracle: a, composer: a };
  }
  const params = parsed.params as Record<string, unknown>;
  const oracle = { ...finish(runQuery(m.route.id, db, params, nowMs), url.pathname), route: m.route.id };
  const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  const composed = await compose(m.route, params, { read, nowMs, stats });
  const composer = { ...finish(composed, url.pathname), route: m.route.id, stats };
  if (stats.bytes > maxCost.bytes) Object.assign(maxCost, { files: stats.files, bytes: stats.bytes, chunks: stats.chunks, target });
  const c = costByRoute.get(m.route.id) ?? { files: 0, bytes: 0 };
  costByRoute.set(m.route.id, { files: Math.max(c.files, stats.files), bytes: Math.max(c.bytes, stats.bytes) });
  return { oracle, composer };
}

/** Both answers equal; the body valid against its schema (or a Problem). */
async function same(target: string): Promise<Answer> {
  const { oracle, composer } = await answer(target);
  expect(composer.status, target).toBe(oracle.status);
  expect(composer.text, target).toBe(oracle.text);
  const url = new URL(target, BASE);
  const route = matchRoute(url.pathname)!.route;
  const schema = RESOURCE_SCHEMAS[(oracle.status === 200 ? route.response : 'Problem') as ResourceName];
  const parsed = schema.safeParse(oracle.body);
  expect(parsed.success, `${target}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues.slice(0, 3))}`).toBe(true);
  return oracle;
}

const qs = (o: Record<string, string | undefined>): string => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined) u.set(k, v);
  const s = u.toString();
  return s === '' ? '' : `?${s}`;
};

/** Every list item in an order (SQL order of the oracle, built independently of the walk). */
function allItems(sort: string, from: Db = db): ParticipantListItem[] {
  const order = listOrder(sort as ListParams['sort']);
  const names = curatedSeatNames(from);
  return (from.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY ${orderSql(order)}`).all() as ListRow[]).map((r) => listItemOf(r, names));
}

/** Ids of every item matching a request's filters and search, in the request's order. */
function everyMatch(q: Record<string, string>): string[] {
  return matchingItems(q).map((i) => i.id);
}

/** everyMatch over another database. */
function everyMatchIn(from: Db, q: Record<string, string>): string[] {
  return matchingItems(q, from).map((i) => i.id);
}

/** Every participant matching a request's filters and search, in the request's order (the test's own reading of the rules). */
function matchingItems(q: Record<string, string>, from: Db = db): ParticipantListItem[] {
  const url = new URL(`/v1/participants${qs(q)}`, BASE);
  const parsed = parseRequest(ROUTES['participants.list'], {}, url.searchParams, { now: nowMs });
  if (!parsed.ok) throw new Error(`bad request ${url}`);
  const p = parsed.params;
  const search = p.q === undefined ? null : classifySearch(p.q);
  return allItems(p.sort, from).filter((i) => itemMatches(i, p, search));
}

type Meta = { filter_count: number | null; facets_without_q?: boolean; facets: Record<string, Array<{ value: string; count: number; label?: string }>> };

/** Facet buckets [value, count] per facet, by count descending then value, from items (no label). */
function facetsOfItems(items: readonly ParticipantListItem[]): Record<string, Array<[string, number]>> {
  const dims: Record<string, (i: ParticipantListItem) => string | null> = {
    country: (i) => i.country,
    scheme: (i) => i.scheme,
    registered: (i) => String(i.registered),
    provenance: (i) => i.provenance,
    smp: (i) => i.smp,
    ap: (i) => i.ap_seat_id,
  };
  const out: Record<string, Array<[string, number]>> = {};
  for (const [dim, get] of Object.entries(dims)) {
    const m = new Map<string, number>();
    for (const i of items) {
      const v = get(i);
      if (v !== null) m.set(v, (m.get(v) ?? 0) + 1);
    }
    out[dim] = [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
  return out;
}

const bucketsOf = (meta: Meta): Record<string, Array<[string, number]>> => Object.fromEntries(Object.entries(meta.facets).map(([k, v]) => [k, v.map((b): [string, number] => [b.value, b.count])]));

/** The sort key a list cursor continues after. */
function cursorKey(cursor: string): unknown {
  const url = new URL(`/v1/participants?sort=name.asc&cursor=${cursor}`, BASE);
  const parsed = parseRequest(matchRoute(url.pathname)!.route, {}, url.searchParams, { now: nowMs });
  if (!parsed.ok) throw new Error('bad cursor');
  return (parsed.params.cursor as CursorPosition).key;
}

// ---------------------------------------------------------------------------------------------
// Arbitraries over the demo's real values (plus unknown ones)

const pick = <T,>(xs: () => readonly T[]): fc.Arbitrary<T> => fc.nat().map((n) => xs()[n % xs().length]!);
/** 1–3 values mostly; sometimes 7–12, around POSTING_VALUES_MAX (more values are matched item by item only). */
const listOf = (xs: () => readonly string[], unknown: string): fc.Arbitrary<string | undefined> => {
  const value = fc.oneof({ weight: 5, arbitrary: pick(xs) }, { weight: 1, arbitrary: fc.constant(unknown) });
  return fc.option(
    fc.oneof({ weight: 5, arbitrary: fc.array(value, { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(value, { minLength: 7, maxLength: 12 }) }).map((a) => a.join(',')),
    { freq: 3 },
  );
};

/** Substrings of real names (3–8 code points, short ones too), real ids and values, noise. */
const qArb: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(pick(() => S.names), fc.nat(), fc.integer({ min: 3, max: 8 })).map(([n, at, len]) => {
    const cps = Array.from(n);
    const s = at % Math.max(1, cps.length - 2);
    return cps.slice(s, s + len).join('');
  }),
  fc.tuple(pick(() => S.names), fc.nat(), fc.integer({ min: 1, max: 2 })).map(([n, at, len]) => Array.from(n).slice(at % n.length, (at % n.length) + len).join('')),
  pick(() => S.pids),
  pick(() => S.pids).map((id) => `iso6523-actorid-upis::${id.replace('::', ':').toUpperCase()}`),
  pick(() => S.values),
  fc.constantFrom('zzzqqq', 'GmbH', ' bv ', 'AS', '0000::unknown-1', '99999999999', 'Ø'),
  // Whole names and longer texts: more trigrams than SEARCH_TRIGRAMS_MAX.
  pick(() => S.names),
  fc.tuple(pick(() => S.names), pick(() => S.names)).map(([a, b]) => `${a} ${b}`),
);

/** The six facet filters, each absent or a list of real (and sometimes unknown) values. */
const facetFilters = {
  country: listOf(() => S.countries, 'XX'),
  scheme: listOf(() => S.schemes, '9999'),
  smp: listOf(() => S.smps, 'smp.unknown.example'),
  ap: listOf(() => S.seats, 'PZZ999999'),
  registered: fc.option(fc.constantFrom('true', 'false'), { nil: undefined, freq: 3 }),
  provenance: fc.option(fc.constantFrom('directory', 'discovered'), { nil: undefined, freq: 3 }),
};

const listArb = fc.record({
  sort: fc.option(fc.constantFrom('first_seen.desc', 'first_seen.asc', 'name.asc', 'name.desc', 'country.asc', 'country.desc'), { nil: undefined }),
  ...facetFilters,
  q: fc.option(qArb, { nil: undefined, freq: 2 }),
  limit: fc.option(fc.integer({ min: 1, max: 200 }).map(String), { nil: undefined }),
});

// ---------------------------------------------------------------------------------------------

describe('participants.list', () => {
  it('the default first page is the exact file and equals the oracle', async () => {
    const a = await same('/v1/participants');
    const body = a.body as { items: unknown[]; meta: { total_count: number; filter_count: number | null } };
    expect(body.items).toHaveLength(50);
    expect(body.meta.total_count).toBe(S.pids.length);
    expect(body.meta.filter_count).toBeNull();
  });

  it('random filters, searches, orders and limits: composer = oracle, first pages and pages after a real cursor', async () => {
    await fc.assert(
      fc.asyncProperty(listArb, fc.nat(), async (p, hop) => {
        const first = await same(`/v1/participants${qs(p)}`);
        expect(first.status).toBe(200);
        const body = first.body as { next_cursor: string | null; items: Array<{ id: string }>; meta: { filter_count: number | null; filter_count_capped?: boolean } };
        // filter_count: null without filters; when exact, at least the items shown and at most the cap.
        const filtered = Object.entries(p).some(([k, v]) => v !== undefined && k !== 'sort' && k !== 'limit');
        // Every filter combination and search is counted (the facet cube, a small set, the grams index).
        if (!filtered) expect(body.meta.filter_count).toBeNull();
        else expect(body.meta.filter_count).not.toBeNull();
        if (body.meta.filter_count !== null) {
          expect(body.meta.filter_count).toBeGreaterThanOrEqual(body.items.length);
          expect(body.meta.filter_count).toBeLessThanOrEqual(FILTER_COUNT_CAP);
        }
        // A page with a next_cursor holds `limit` items: never short, never empty.
        const limit = Number(p.limit ?? 50);
        if (body.next_cursor !== null) expect(body.items).toHaveLength(limit);
        // Follow the cursor a few pages, each compared.
        let cursor = body.next_cursor;
        for (let i = 0; i < (hop % 3) + 1 && cursor !== null; i++) {
          const next = await same(`/v1/participants${qs({ ...p, cursor })}`);
          const nb = next.body as { items: unknown[]; next_cursor: string | null; meta?: unknown };
          expect(nb.meta).toBeUndefined();
          if (nb.next_cursor !== null) expect(nb.items).toHaveLength(limit);
          else expect(nb.items.length).toBeGreaterThan(0);
          cursor = nb.next_cursor;
        }
      }),
      { numRuns: 100 },
    );
  });

  it('searches: an identifier finds its participant; a name substring finds only names containing it', async () => {
    const id = S.pids[17]!;
    const byId = (await same(`/v1/participants?q=${encodeURIComponent(id)}`)).body as { items: Array<{ id: string }>; meta: { filter_count: number } };
    expect(byId.items.map((i) => i.id)).toEqual([id]);
    expect(byId.meta.filter_count).toBe(1);
    expect(classifySearch(S.values[17]!).kind).toBe('value');
    const name = S.names[3]!;
    const part = Array.from(name.toLowerCase()).slice(1, 6).join('');
    const byName = (await same(`/v1/participants?q=${encodeURIComponent(part)}&limit=200`)).body as { items: Array<{ name: string }>; meta: { filter_count: number | null } };
    expect(byName.items.length).toBeGreaterThan(0);
    for (const i of byName.items) expect(i.name.toLowerCase()).toContain(part);
  });

  it('whole walks at limits 1, 7, 50 and 200 give every matching item once, in order', async () => {
    const seat = db.prepare('SELECT ap_seat_id FROM participant_list WHERE ap_seat_id IS NOT NULL GROUP BY 1 ORDER BY count(*), 1 LIMIT 1').pluck().get() as string;
    const cases: Array<{ q: Record<string, string>; limits: number[] }> = [
      { q: {}, limits: [50, 200] },
      { q: { sort: 'name.desc' }, limits: [200] },
      { q: { sort: 'country.asc' }, limits: [200] },
      { q: { sort: 'first_seen.asc', country: S.countries.slice(0, 2).join(',') }, limits: [7, 50, 200] },
      { q: { ap: seat, sort: 'country.desc' }, limits: [1, 7, 50] },
      { q: { country: 'NO', registered: 'true' }, limits: [7, 200] },
      { q: { sort: 'country.desc', registered: 'false' }, limits: [50] },
      { q: { sort: 'name.asc', smp: S.smps[0]!, provenance: 'discovered' }, limits: [7, 50] },
      { q: { q: 'as', sort: 'name.asc' }, limits: [50, 200] },
    ];
    for (const c of cases) {
      const expected = everyMatch(c.q);
      expect(expected.length, JSON.stringify(c)).toBeGreaterThan(0);
      const filtered = Object.keys(c.q).some((k) => k !== 'sort');
      for (const limit of c.limits) {
        const seen: string[] = [];
        let cursor: string | null = null;
        for (;;) {
          const a = await same(`/v1/participants${qs({ ...c.q, limit: String(limit), cursor: cursor ?? undefined })}`);
          const b = a.body as { items: Array<{ id: string }>; next_cursor: string | null; meta?: { filter_count: number | null; total_count: number } };
          // Counted, with a search too (the facet cube, a small set, the grams index).
          if (b.meta && filtered) expect(b.meta.filter_count).toBe(Math.min(expected.length, FILTER_COUNT_CAP));
          seen.push(...b.items.map((i) => i.id));
          if (b.next_cursor === null) break;
          // Every page but the last is full.
          expect(b.items).toHaveLength(limit);
          cursor = b.next_cursor;
        }
        expect(seen, `${JSON.stringify(c)} limit ${limit}`).toEqual(expected);
      }
    }
  });

  it('random filter combinations, searches and orders walked whole at limits 1, 7, 50 and 200: every page but the last full, the matches once each in order, filter_count the walk\'s length', async () => {
    // Values held by more than SMALL_SET_MAX participants, so that most requests walk a list (and the
    // two-valued facets often): sparse combinations along the order are what a walk must fill.
    const common = (c: string): string[] => db.prepare(`SELECT ${c} FROM participant_list WHERE ${c} IS NOT NULL GROUP BY 1 HAVING count(*) > ? ORDER BY 1`).pluck().all(SMALL_SET_MAX) as string[];
    const often = (xs: string[]): fc.Arbitrary<string | undefined> => fc.option(fc.constantFrom(...xs), { nil: undefined, freq: 2 });
    const walkArb = fc.record({
      ...facetFilters,
      country: often(common('country')),
      smp: often(common('smp')),
      ap: often(common('ap_seat_id')),
      registered: fc.option(fc.constantFrom('true', 'false'), { nil: undefined, freq: 1 }),
      provenance: fc.option(fc.constantFrom('directory', 'discovered'), { nil: undefined, freq: 1 }),
      q: fc.option(qArb, { nil: undefined, freq: 3 }),
      sort: fc.constantFrom(...PARTICIPANT_SORTS),
    });
    const PAGES_MAX = 30; // bounded test time: longer walks are followed for their first PAGES_MAX pages
    await fc.assert(
      fc.asyncProperty(walkArb, async (r) => {
        const q = Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as Record<string, string>;
        const expected = everyMatch(q);
        for (const limit of [1, 7, 50, 200]) {
          const seen: string[] = [];
          let cursor: string | null = null;
          let pages = 0;
          for (;;) {
            const b = (await same(`/v1/participants${qs({ ...q, limit: String(limit), cursor: cursor ?? undefined })}`)).body as { items: Array<{ id: string }>; next_cursor: string | null; meta?: Meta };
            pages++;
            // Every request with a filter or a search is counted (`sort` is always there).
            if (b.meta) expect(b.meta.filter_count).toBe(Object.keys(q).length > 1 ? Math.min(expected.length, FILTER_COUNT_CAP) : null);
            seen.push(...b.items.map((i) => i.id));
            if (b.next_cursor === null) break;
            expect(b.items, `${JSON.stringify(q)} limit ${limit} page ${pages}`).toHaveLength(limit);
            if (pages === PAGES_MAX) break;
            cursor = b.next_cursor;
          }
          if (pages < PAGES_MAX || seen.length === expected.length) {
            expect(seen, `${JSON.stringify(q)} limit ${limit}`).toEqual(expected);
            expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
          } else expect(seen).toEqual(expected.slice(0, seen.length));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('the issue\'s sparse walks: every page but the last full, none empty with a cursor, filter_count the walk\'s length', async () => {
    // The rarest (registered, provenance) pair: sparse along the name order, no small candidate set.
    const pair = db.prepare('SELECT registered, provenance, count(*) AS n FROM participant_list GROUP BY 1, 2 HAVING n > ? ORDER BY n LIMIT 1').get(SMALL_SET_MAX) as { registered: number; provenance: string; n: number } | undefined;
    expect(pair, 'the demo has a (registered, provenance) pair beyond the small-set size').toBeDefined();
    const cases: Array<Record<string, string>> = [
      { sort: 'name.asc', registered: pair!.registered === 1 ? 'true' : 'false', provenance: pair!.provenance },
      { sort: 'name.asc', provenance: 'discovered' },
      { registered: 'false' },
      { country: 'BE', registered: 'false' },
      // A search that matches nothing, in the default order and another.
      { q: 'zzzqqq' },
      { q: 'zzzqqq', sort: 'country.asc' },
      // A combination that matches nothing.
      { country: 'BE', scheme: S.schemes.find((x) => db.prepare("SELECT 1 FROM participant_list WHERE country = 'BE' AND scheme = ?").get(x) === undefined) ?? '9999' },
    ];
    for (const q of cases) {
      const expected = everyMatch(q);
      for (const limit of [1, 7, 50, 200]) {
        if (limit < 50 && expected.length > 500) continue; // bounded test time: long walks at 50 and 200 only
        const seen: string[] = [];
        let pages = 0;
        let cursor: string | null = null;
        for (;;) {
          const b = (await same(`/v1/participants${qs({ ...q, limit: String(limit), cursor: cursor ?? undefined })}`)).body as { items: Array<{ id: string }>; next_cursor: string | null; meta?: Meta };
          pages++;
          if (b.meta && q.q === undefined) expect(b.meta.filter_count, JSON.stringify(q)).toBe(expected.length);
          seen.push(...b.items.map((i) => i.id));
          if (b.next_cursor === null) break;
          expect(b.items, `${JSON.stringify(q)} limit ${limit} page ${pages}`).toHaveLength(limit);
          cursor = b.next_cursor;
        }
        expect(seen, `${JSON.stringify(q)} limit ${limit}`).toEqual(expected);
        expect(pages, `${JSON.stringify(q)} limit ${limit}: pages of the walk`).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      }
    }
  });

  it('filter_count and facets: exact for any filter combination without a search, the facets those of the matches with every value', async () => {
    const facetArb = fc.record(facetFilters);
    await fc.assert(
      fc.asyncProperty(facetArb, async (q) => {
        const filters = Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined)) as Record<string, string>;
        const meta = ((await same(`/v1/participants${qs(filters)}`)).body as { meta: Meta }).meta;
        const matches = matchingItems(filters);
        expect(meta.filter_count).toBe(Object.keys(filters).length === 0 ? null : Math.min(matches.length, FILTER_COUNT_CAP));
        expect(meta.facets_without_q).toBeUndefined();
        expect(bucketsOf(meta)).toEqual(facetsOfItems(matches));
      }),
      { numRuns: 60 },
    );
  });

  it('the issue\'s cases: two facet filters counted; a country filter leaves only that country\'s schemes; more than 8 values counted', async () => {
    const broad = ((await same('/v1/participants?registered=true&provenance=directory')).body as { meta: Meta }).meta;
    expect(broad.filter_count).toBe(db.prepare("SELECT count(*) FROM participant_list WHERE registered = 1 AND provenance = 'directory'").pluck().get());
    const two = ((await same('/v1/participants?country=BE&registered=false')).body as { meta: Meta }).meta;
    expect(two.filter_count).toBe(db.prepare("SELECT count(*) FROM participant_list WHERE country = 'BE' AND registered = 0").pluck().get());
    const be = ((await same('/v1/participants?country=BE')).body as { meta: Meta }).meta;
    const beSchemes = db.prepare("SELECT scheme, count(*) FROM participant_list WHERE country = 'BE' GROUP BY 1 ORDER BY 2 DESC, 1").raw().all() as Array<[string, number]>;
    expect(be.facets.scheme!.map((b) => [b.value, b.count])).toEqual(beSchemes);
    expect(be.facets.country!.map((b) => b.value)).toEqual(['BE']);
    // Every seat of the network is a bucket of the unfiltered facets (no top-N cut), labelled when curated.
    const all = ((await same('/v1/participants?sort=name.asc')).body as { meta: Meta }).meta;
    expect(all.facets.ap).toHaveLength(new Set(S.seats).size);
    expect(all.facets.ap!.some((b) => b.label !== undefined)).toBe(true);
    expect(all.facets.scheme!.every((b) => b.label !== undefined)).toBe(true);
    // A seat filter of more values than POSTING_VALUES_MAX is counted like any other.
    const seats = S.seats.slice(0, POSTING_VALUES_MAX + 3);
    const over = ((await same(`/v1/participants?ap=${seats.join(',')}`)).body as { meta: Meta }).meta;
    expect(over.filter_count).toBe(db.prepare(`SELECT count(*) FROM participant_list WHERE ap_seat_id IN (${seats.map(() => '?').join(',')})`).pluck().get(...seats));
  });

  it('a search: counted with the facets of its matches, whether read whole or walked (the grams index counts a frequent text per cell)', async () => {
    const id = S.pids[5]!;
    const byId = ((await same(`/v1/participants?q=${encodeURIComponent(id)}`)).body as { meta: Meta }).meta;
    expect(byId.filter_count).toBe(1);
    expect(bucketsOf(byId)).toEqual(facetsOfItems(matchingItems({ q: id })));
    // One or two letters held by most names, and the most common trigram: walks, counted per cell.
    const frequentTrigram = (JSON.parse(Buffer.from((await readDecoded(TRIGRAMS_PATH))!).toString('utf8')) as TrigramCounts).counts.reduce((a, b) => (b[1] > a[1] ? b : a));
    expect(frequentTrigram[1]).toBeGreaterThan(SMALL_SET_MAX);
    const cases: Array<Record<string, string>> = [{ q: 'a', country: 'BE' }, { q: 'en', registered: 'true', sort: 'name.desc' }, { q: frequentTrigram[0] }, { q: frequentTrigram[0], provenance: 'directory', sort: 'country.asc' }];
    for (const q of cases) {
      const meta = ((await same(`/v1/participants${qs(q)}`)).body as { meta: Meta }).meta;
      const matches = matchingItems(q);
      expect(matches.length, JSON.stringify(q)).toBeGreaterThan(SMALL_SET_MAX);
      expect(meta.filter_count, JSON.stringify(q)).toBe(matches.length);
      expect(meta.facets_without_q).toBeUndefined();
      expect(bucketsOf(meta), JSON.stringify(q)).toEqual(facetsOfItems(matches));
    }
    // A letter few names hold (a small set from the grams index), and one no name holds.
    for (const q of ['ø', 'qqq', 'ğ']) {
      const meta = ((await same(`/v1/participants${qs({ q })}`)).body as { meta: Meta }).meta;
      expect(meta.filter_count, q).toBe(matchingItems({ q }).length);
    }
  });

  it('400s: invalid sort, registered, provenance, limit, cursor; a cursor of another order', async () => {
    const other = ((await same('/v1/participants?sort=name.asc&limit=3')).body as { next_cursor: string }).next_cursor;
    const cases: Array<[string, string]> = [
      ['/v1/participants?sort=name', 'invalid-parameter'],
      ['/v1/participants?registered=yes', 'invalid-parameter'],
      ['/v1/participants?provenance=scraped', 'invalid-parameter'],
      ['/v1/participants?limit=ten', 'invalid-parameter'],
      ['/v1/participants?cursor=not-a-cursor', 'invalid-cursor'],
      [`/v1/participants?cursor=${other}`, 'invalid-cursor'],
      [`/v1/participants?cursor=${other.slice(0, -2)}${other.endsWith('AA') ? 'AB' : 'AA'}`, 'invalid-cursor'],
    ];
    for (const [target, problem] of cases) {
      const a = await same(target);
      expect(a.status, target).toBe(400);
      const b = a.body as { type: string; title: string; status: number };
      expect(b.type).toBe(`${BASE}/problems/${problem}`);
      expect(b.title).toBe(PROBLEM_CATALOGUE[problem as keyof typeof PROBLEM_CATALOGUE].title);
      expect(b.status).toBe(400);
    }
  });
});

describe('participants.list read cost with the default chunk settings', () => {
  // The lists rendered as `build` renders them by default (chunks of at most 1000 items and 64 KiB).
  let prodDir: string;
  const readProd = async (p: string): Promise<Uint8Array | null> => {
    try {
      return new Uint8Array(fs.readFileSync(path.join(prodDir, p)));
    } catch {
      return null;
    }
  };
  /** A list page composed over these lists, equal to the oracle's, with what it read. */
  async function prodPage(target: string): Promise<{ body: { items: Array<{ id: string }>; next_cursor: string | null }; stats: ReadStats; paths: string[] }> {
    const url = new URL(target, BASE);
    const parsed = parseRequest(matchRoute(url.pathname)!.route, {}, url.searchParams, { now: nowMs });
    if (!parsed.ok) throw new Error(target);
    const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
    const paths: string[] = [];
    const composed = await compose(ROUTES['participants.list'], parsed.params as Record<string, unknown>, { read: (p) => (paths.push(p), readProd(p)), nowMs, stats });
    const oracle = runQuery('participants.list', db, parsed.params as Record<string, unknown>, nowMs);
    expect(jsonText(finish(composed, url.pathname).body), target).toBe(jsonText(finish(oracle, url.pathname).body));
    expect(composed.status, target).toBe(200);
    // A 200 answer of participants.list is a ParticipantListPage (checked against the oracle's bytes above).
    return { body: (composed.status === 200 ? composed.body : null) as { items: Array<{ id: string }>; next_cursor: string | null }, stats, paths };
  }
  beforeAll(() => {
    prodDir = tempDir('participants-prod-');
    const sink = new DirectorySink(prodDir);
    const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 1000, chunkMaxBytes: 65_536 }, jsonBody);
    const renderers = participantRenderers();
    renderers['participants.list']!(ctx);
    renderers['stats.participants']!(ctx);
    sink.close();
  }, 120_000);

  it('a walk passes over the index entries whose counts rule its filter out: the discovered participants (no name) in name order read only the chunks at the end of the list', async () => {
    const discovered = db.prepare("SELECT count(*) FROM participant_list WHERE provenance = 'discovered'").pluck().get() as number;
    const root = readStoredJson(path.join(prodDir, listRootPath('participants.list', ['name.asc']))) as { entries: unknown[] };
    expect(root.entries.length, 'the name list spans several chunks').toBeGreaterThan(3);
    let cursor: string | undefined;
    let seen = 0;
    for (;;) {
      const target = `/v1/participants${qs({ provenance: 'discovered', sort: 'name.asc', limit: '200', cursor })}`;
      const { body, stats } = await prodPage(target);
      seen += body.items.length;
      // 200 items span at most 3 chunks of at least LIST_CHUNK_MIN_ITEMS (two, and the one whose next item tells that more follow).
      expect(stats.chunks, target).toBeLessThanOrEqual(3);
      if (body.next_cursor === null) break;
      cursor = body.next_cursor;
    }
    expect(seen).toBe(discovered);
  });

  it('a sparse filter combination in any order reads its runs of the cell list, not the whole order: full pages, as the oracle, in a few chunks', async () => {
    // Two values of over SMALL_SET_MAX participants each (no small set), rarely together.
    const pair = db.prepare("SELECT country, count(*) AS n FROM participant_list WHERE registered = 0 AND country IN (SELECT country FROM participant_list GROUP BY 1 HAVING count(*) > ?) GROUP BY 1 ORDER BY n DESC LIMIT 1").get(SMALL_SET_MAX) as { country: string; n: number } | undefined;
    expect(pair, 'a country of over SMALL_SET_MAX participants with unregistered ones').toBeDefined();
    for (const sort of PARTICIPANT_SORTS) {
      for (const limit of [7, 50]) {
        let cursor: string | undefined;
        const seen: string[] = [];
        for (;;) {
          const target = `/v1/participants${qs({ country: pair!.country, registered: 'false', sort, limit: String(limit), cursor })}`;
          const { body, stats } = await prodPage(target);
          seen.push(...body.items.map((i) => i.id));
          // The unregistered Belgians lie in a handful of runs of the cell list (one per scheme and provenance).
          expect(stats.chunks, target).toBeLessThanOrEqual(6);
          if (body.next_cursor === null) break;
          expect(body.items).toHaveLength(limit);
          cursor = body.next_cursor;
        }
        expect(seen).toEqual(everyMatch({ country: pair!.country, registered: 'false', sort }));
      }
    }
  });

  it('the most common value of each posting dimension (over SMALL_SET_MAX participants), in every order where it has a list of its own or a range of one, walks that list: a whole walk reads about the value\'s items once, not the main list', async () => {
    const column = { country: 'country', scheme: 'scheme', smp: 'smp', ap: 'ap_seat_id' } as const;
    let walked = 0;
    for (const dim of ['country', 'scheme', 'smp', 'ap'] as const) {
      const top = db.prepare(`SELECT ${column[dim]} AS v, count(*) AS n FROM participant_list WHERE ${column[dim]} IS NOT NULL GROUP BY 1 ORDER BY n DESC LIMIT 1`).get() as { v: string; n: number };
      expect(top.n, `the demo has a ${dim} of over SMALL_SET_MAX participants`).toBeGreaterThan(SMALL_SET_MAX);
      for (const sort of PARTICIPANT_SORTS.filter((s) => s !== 'first_seen.desc' && postingSource(dim, s) !== null)) {
        const at = postingSource(dim, sort)!;
        if (at.kind === 'posting') expect(readStoredJson(path.join(prodDir, listRootPath('participants.list', postingPartition(dim, top.v, at.sort)))), `${dim} ${sort}`).toMatchObject({ count: top.n });
        let cursor: string | undefined;
        let pages = 0;
        let chunks = 0;
        const seen: string[] = [];
        for (;;) {
          const target = `/v1/participants${qs({ [dim]: top.v, sort, limit: '200', cursor })}`;
          const { body, stats } = await prodPage(target);
          pages++;
          chunks += stats.chunks;
          seen.push(...body.items.map((i) => i.id));
          if (body.next_cursor === null) break;
          cursor = body.next_cursor;
        }
        expect(seen, `${dim} ${sort}`).toEqual(everyMatch({ [dim]: top.v, sort }));
        // The value's items span at most ⌈n / LIST_CHUNK_MIN_ITEMS⌉ + 2 chunks (chunks of at least that many items, partial at
        // both ends of a range); each page may read the chunk at its cursor again. The main list holds
        // the other values' participants too.
        expect(chunks, `${dim} ${sort}: ${pages} pages`).toBeLessThanOrEqual(Math.ceil(top.n / LIST_CHUNK_MIN_ITEMS) + 2 + pages);
        walked++;
      }
    }
    // smp, ap and scheme in five orders, country in three.
    expect(walked).toBe(18);
  });

  it('registered=false, about 1% of the participants, reads its posting list in every order, not the main list: a page reads at most the list\'s chunks', async () => {
    const n = db.prepare('SELECT count(*) FROM participant_list WHERE registered = 0').pluck().get() as number;
    expect(n, 'the demo has unregistered participants').toBeGreaterThan(20);
    const listChunks = Math.ceil(n / LIST_CHUNK_MIN_ITEMS) + 1;
    for (const sort of PARTICIPANT_SORTS) {
      const at = postingSource('registered', sort)!;
      expect(at.kind, sort).toBe('posting');
      if (at.kind === 'posting') expect(readStoredJson(path.join(prodDir, listRootPath('participants.list', postingPartition('registered', 'false', at.sort)))), sort).toMatchObject({ count: n });
      let cursor: string | undefined;
      const seen: string[] = [];
      for (;;) {
        const { body, stats } = await prodPage(`/v1/participants${qs({ registered: 'false', sort, limit: '7', cursor })}`);
        // The main list holds the unregistered one or two to a chunk: a page of 7 read 3 to 5 chunks.
        expect(stats.chunks, `${sort} ${cursor ?? 'first page'}`).toBeLessThanOrEqual(listChunks);
        seen.push(...body.items.map((i) => i.id));
        if (body.next_cursor === null) break;
        cursor = body.next_cursor;
      }
      expect(seen, sort).toEqual(everyMatch({ registered: 'false', sort }));
    }
    // The opposite orders have no lists of their own: they read these reversed (READ_REVERSED).
    for (const sort of PARTICIPANT_SORTS.filter((s) => READ_REVERSED[s] !== undefined)) {
      expect(fs.existsSync(path.join(prodDir, listRootPath('participants.list', postingPartition('registered', 'false', sort)))), sort).toBe(false);
      expect(fs.existsSync(path.join(prodDir, listRootPath('participants.list', mainPartition(sort)))), sort).toBe(false);
    }
    // registered=true has no posting list: nearly everyone, walked densely in the main list.
    expect(fs.existsSync(path.join(prodDir, listRootPath('participants.list', postingPartition('registered', 'true'))))).toBe(false);
  });

  /**
   * The chunks a small candidate set read whole spans (docs/snapshot-format.md "Participants", rule 2):
   * per list, its items over chunks of at least LIST_CHUNK_MIN_ITEMS and a partial one; 0 when the
   * request is not planned as a set. Counted from the items, as the plan counts them.
   */
  let everyItem: ParticipantListItem[] | undefined;
  function smallSetChunks(p: ListParams): number {
    const items = (everyItem ??= allItems('first_seen.desc'));
    const chunksOf = (n: number): number => Math.ceil(n / LIST_CHUNK_MIN_ITEMS) + 1;
    const search = p.q === undefined ? null : classifySearch(p.q);
    if (search?.kind === 'name') {
      const counts = searchTrigrams(search.text).map((t) => items.filter((i) => i.name !== null && foldName(i.name).includes(t)).length);
      if (counts.length > 0 && Math.min(...counts) <= SMALL_SET_MAX) return chunksOf(Math.min(...counts));
    }
    let most = 0;
    for (const d of plannedPostingDimensions(p)) {
      const sizes = acceptedValues(p, d).map((v) => items.filter((i) => facetValues(i, d).includes(v)).length);
      if (sizes.reduce((a, b) => a + b, 0) <= SMALL_SET_MAX) most = Math.max(most, sizes.reduce((n, k) => n + (k === 0 ? 0 : chunksOf(k)), 0));
    }
    return most;
  }

  it('random requests: the answer equals the oracle; at most 3 chunks (one more per extra value of a multi-valued small set, and a small set\'s own chunks) and 256 KiB', async () => {
    let worst = { chunks: 0, bytes: 0, target: '' };
    await fc.assert(
      fc.asyncProperty(listArb, fc.nat(), async (q, hop) => {
        let cursor: string | null = null;
        for (let i = 0; i <= hop % 3; i++) {
          const target = `/v1/participants${qs({ ...q, cursor: cursor ?? undefined })}`;
          const url = new URL(target, BASE);
          const parsed = parseRequest(ROUTES['participants.list'], {}, url.searchParams, { now: nowMs });
          expect(parsed.ok).toBe(true);
          if (!parsed.ok) return;
          const params = parsed.params as Record<string, unknown>;
          const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
          const composed = await compose(ROUTES['participants.list'], params, { read: readProd, nowMs, stats });
          const oracle = runQuery('participants.list', db, params, nowMs);
          expect(jsonText(finish(composed, url.pathname).body), target).toBe(jsonText(finish(oracle, url.pathname).body));
          const extraValues = ['country', 'scheme', 'smp', 'ap'].reduce((n, d) => n + Math.max(0, ((params[d] as string[] | undefined)?.length ?? 1) - 1), 0);
          expect(stats.chunks, target).toBeLessThanOrEqual(Math.max(3 + extraValues, smallSetChunks(parsed.params)));
          expect(stats.bytes, target).toBeLessThanOrEqual(256 * 1024);
          if (stats.bytes > worst.bytes) worst = { chunks: stats.chunks, bytes: stats.bytes, target };
          cursor = (composed.status === 200 ? (composed.body as { next_cursor: string | null }).next_cursor : null);
          if (cursor === null) break;
        }
      }),
      { numRuns: 150 },
    );
    console.log(`participants.list with default chunks (small demo): most bytes read by one page ${JSON.stringify(worst)}`);
  });

  it('a combination of filters takes its values\' totals from the facet cube: the smp and ap posting roots and the main root are read only when the page reads those lists', async () => {
    const smps = db.prepare('SELECT smp FROM participant_list WHERE smp IS NOT NULL GROUP BY smp ORDER BY count(*) DESC, smp LIMIT 3').pluck().all() as string[];
    const country = db.prepare('SELECT country FROM participant_list WHERE country IS NOT NULL AND smp IN (?, ?, ?) GROUP BY country ORDER BY count(*), country LIMIT 1').pluck().get(...smps) as string;
    const smpRoot = /^i\/participants\.list\/[^/]+\/smp\//;
    const MAIN_ROOTS = MAIN_LIST_SORTS.map((sort) => listRootPath('participants.list', mainPartition(sort)));
    for (const sort of PARTICIPANT_SORTS) {
      const target = `/v1/participants${qs({ country, smp: smps.join(','), sort, limit: '7' })}`;
      const url = new URL(target, BASE);
      const parsed = parseRequest(ROUTES['participants.list'], {}, url.searchParams, { now: nowMs });
      if (!parsed.ok) throw new Error(target);
      const paths: string[] = [];
      const composed = await compose(ROUTES['participants.list'], parsed.params as Record<string, unknown>, { read: async (p) => (paths.push(p), readProd(p)), nowMs });
      const oracle = runQuery('participants.list', db, parsed.params as Record<string, unknown>, nowMs);
      expect(jsonText(finish(composed, url.pathname).body), target).toBe(jsonText(finish(oracle, url.pathname).body));
      // The country's participants are fewer than the three SMPs': the page reads the country's list, not
      // theirs, and not the main list either (the total of every participant comes from the cube too).
      expect(paths.filter((p) => smpRoot.test(p)), target).toEqual([]);
      expect(paths.filter((p) => MAIN_ROOTS.includes(p)), target).toEqual([]);
    }
  });

  it('the facet cube is stored in binary (encodeCube): the cube of the participants; a snapshot written before it, with the cube as JSON, gives the same answers', async () => {
    const binPath = path.join(prodDir, CUBE_PATH);
    const stored = fs.readFileSync(binPath);
    const cube = decodeCube(new Uint8Array(decodeStored(stored)));
    expect(cube).not.toBeNull();
    expect(cube!.format).toBe(CUBE_FORMAT);
    const want = cubeOf(facetTupleRows(db), facetLabelsOf(curatedSeatNames(db)));
    expect({ ...cube!, cells: [...cube!.cells] }).toEqual(want);
    // Pages of several filters read the cube: as the oracle, from the binary cube and from the JSON one.
    const smps = db.prepare('SELECT smp FROM participant_list WHERE smp IS NOT NULL GROUP BY smp ORDER BY count(*) DESC, smp LIMIT 2').pluck().all() as string[];
    const targets = PARTICIPANT_SORTS.map((sort, i) => `/v1/participants${qs({ registered: 'true', smp: smps.join(','), ...(i % 2 === 0 ? { provenance: 'directory' } : {}), sort, limit: String(1 + i * 9) })}`);
    const pages = async (): Promise<Array<{ paths: string[]; body: string }>> => {
      const out: Array<{ paths: string[]; body: string }> = [];
      for (const target of targets) {
        const { paths, body } = await prodPage(target);
        out.push({ paths, body: JSON.stringify(body) });
      }
      return out;
    };
    const binary = await pages();
    expect(binary.every((p) => p.paths.includes(CUBE_PATH))).toBe(true);
    const jsonPath = path.join(prodDir, CUBE_JSON_PATH);
    fs.rmSync(binPath);
    fs.writeFileSync(jsonPath, encodeStored(CUBE_JSON_PATH, new TextEncoder().encode(jsonText(want))));
    try {
      const old = await pages();
      expect(old.every((p) => p.paths.includes(CUBE_JSON_PATH))).toBe(true);
      expect(old.map((p) => p.body)).toEqual(binary.map((p) => p.body));
    } finally {
      fs.rmSync(jsonPath);
      fs.writeFileSync(binPath, stored);
    }
  });

  it('encodeCube and decodeCube: any cube back as it was (codes of one, two and four bytes, nulls); other bytes are no cube', () => {
    const dictionary = (n: number) => Array.from({ length: n }, (_, i) => `v${String(i).padStart(6, '0')}`);
    const cubeArb = fc
      .record({ sizes: fc.tuple(...FACET_DIMENSIONS.map(() => fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 250, max: 300 })))), rows: fc.integer({ min: 0, max: 40 }), seed: fc.integer() })
      .map(({ sizes, rows, seed }) => {
        let x = seed >>> 0;
        const next = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % n);
        const values = Object.fromEntries(FACET_DIMENSIONS.map((dim, d) => [dim, dictionary(sizes[d]!)])) as FacetCube['values'];
        const cells: number[] = [];
        for (let r = 0; r < rows; r++) {
          for (const dim of FACET_DIMENSIONS) cells.push(values[dim].length === 0 || next(5) === 0 ? -1 : next(values[dim].length));
          cells.push(1 + next(3_000_000));
        }
        const cube: FacetCube = { format: CUBE_FORMAT, values, labels: { scheme: values.scheme.length > 0 ? { [values.scheme[0]!]: 'Ä scheme' } : {}, ap: {} }, cells };
        return cube;
      });
    fc.assert(
      fc.property(cubeArb, (cube) => {
        const back = decodeCube(encodeCube(cube));
        expect(back).not.toBeNull();
        expect({ ...back!, cells: [...back!.cells] }).toEqual(cube);
        // As a big-endian machine reads it (through a DataView).
        expect([...decodeCube(encodeCube(cube), false)!.cells]).toEqual(cube.cells);
        // Not at the start of its buffer (as a file read into a larger one): the same cube.
        const bytes = encodeCube(cube);
        const shifted = new Uint8Array(bytes.length + 3);
        shifted.set(bytes, 3);
        expect([...decodeCube(shifted.subarray(3))!.cells]).toEqual(cube.cells);
        // Cut short, or JSON: no cube.
        expect(decodeCube(bytes.subarray(0, bytes.length - 1))).toBeNull();
      }),
      { numRuns: 60 },
    );
    // A dictionary past 65,534 values: codes of four bytes.
    const big = dictionary(70_000);
    const values = { country: ['BE'], scheme: [], registered: ['true'], provenance: [], smp: [], ap: big } as unknown as FacetCube['values'];
    const cube: FacetCube = { format: CUBE_FORMAT, values, labels: { scheme: {}, ap: {} }, cells: [0, -1, 0, -1, -1, 69_999, 7, -1, -1, 0, -1, -1, 65_535, 2] };
    expect({ ...decodeCube(encodeCube(cube))!, cells: [...decodeCube(encodeCube(cube))!.cells] }).toEqual(cube);
    expect(decodeCube(new TextEncoder().encode(jsonText(cube)))).toBeNull();
  });

  it('a name search of three trigrams or more reads the trigram table and the rarest trigram\'s root, not a root per trigram; a snapshot without the table reads every root, with the same answers', async () => {
    // A trigram list's root, in the default order or in one of TRIGRAM_ORDERS.
    const trigramRoot = /^i\/participants\.list\/(?:[^/]+\/)?_5fnames\//;
    /** The page composed over the lists with the files it read; equal to the oracle's. */
    const page = async (target: string): Promise<{ paths: string[]; body: unknown }> => {
      const url = new URL(target, BASE);
      const parsed = parseRequest(ROUTES['participants.list'], {}, url.searchParams, { now: nowMs });
      if (!parsed.ok) throw new Error(target);
      const paths: string[] = [];
      const read = async (p: string): Promise<Uint8Array | null> => {
        paths.push(p);
        return readProd(p);
      };
      const composed = await compose(ROUTES['participants.list'], parsed.params as Record<string, unknown>, { read, nowMs });
      const oracle = runQuery('participants.list', db, parsed.params as Record<string, unknown>, nowMs);
      expect(jsonText(finish(composed, url.pathname).body), target).toBe(jsonText(finish(oracle, url.pathname).body));
      return { paths, body: finish(composed, url.pathname).body };
    };
    // Words of the demo's names: a common one (its trigrams' lists hold many participants) and rare ones.
    const words = new Map<string, number>();
    for (const name of db.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().iterate() as IterableIterator<string>) {
      for (const w of foldName(name).split(' ')) if ([...w].length >= 5) words.set(w, (words.get(w) ?? 0) + 1);
    }
    const byUse = [...words].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const queries = [byUse[0]![0], byUse[Math.floor(byUse.length / 2)]![0], byUse[byUse.length - 1]![0], `${byUse[0]![0]} zzqx`];
    const tablePath = path.join(prodDir, TRIGRAMS_PATH);
    const answers = new Map<string, unknown>();
    for (const q of queries) {
      expect(searchTrigrams(q).length, q).toBeGreaterThanOrEqual(TRIGRAM_TABLE_MIN);
      for (const sort of ['first_seen.desc', 'name.asc'] as const) {
        const target = `/v1/participants${qs({ q, sort, limit: '7' })}`;
        const { paths, body } = await page(target);
        expect(paths, target).toContain(TRIGRAMS_PATH);
        expect(paths.filter((p) => trigramRoot.test(p)).length, target).toBeLessThanOrEqual(1);
        answers.set(target, body);
      }
    }
    // A snapshot written before the table: the roots of the search's trigrams, the same pages.
    const table = fs.readFileSync(tablePath);
    fs.rmSync(tablePath);
    try {
      for (const [target, body] of answers) {
        const { paths, body: again } = await page(target);
        const q = new URL(target, BASE).searchParams.get('q')!;
        expect(paths.filter((p) => trigramRoot.test(p)).length, target).toBe(searchTrigrams(foldName(q)).length);
        expect(again, target).toEqual(body);
      }
    } finally {
      fs.writeFileSync(tablePath, table);
    }
  });
});

describe('participants.detail, events, history', () => {
  const idArb = fc.oneof({ weight: 6, arbitrary: pick(() => S.pids) }, { weight: 1, arbitrary: fc.constantFrom('0208::does-not-exist', '9999::0000') });

  it('random existing and unknown participants: composer = oracle (200 or 404), schema-valid', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }), async (id, limit) => {
        const enc = encodeURIComponent(id);
        const d = await same(`/v1/participants/${enc}`);
        const known = S.pids.includes(id);
        expect(d.status).toBe(known ? 200 : 404);
        if (!known) expect((d.body as { type: string }).type).toBe(`${BASE}/problems/participant-not-found`);
        for (const sub of ['events', 'history']) {
          const first = await same(`/v1/participants/${enc}/${sub}${qs({ limit: limit === undefined ? undefined : String(limit) })}`);
          expect(first.status).toBe(known ? 200 : 404);
          let cursor = first.status === 200 ? (first.body as { next_cursor: string | null }).next_cursor : null;
          while (cursor !== null) {
            const n = await same(`/v1/participants/${enc}/${sub}${qs({ limit: String(limit), cursor })}`);
            cursor = (n.body as { next_cursor: string | null }).next_cursor;
          }
        }
      }),
      { numRuns: 100 },
    );
  });

  it('walks at limits 1, 7, 50, 200 over events and history of participants with several rows', async () => {
    for (const [sub, ids] of [['events', S.multiEvents.slice(0, 5)], ['history', S.multiHistory.slice(0, 5)]] as const) {
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) {
        let reference: string | null = null;
        for (const limit of [1, 7, 50, 200]) {
          const seen: unknown[] = [];
          let cursor: string | null = null;
          for (;;) {
            const a = await same(`/v1/participants/${encodeURIComponent(id)}/${sub}${qs({ limit: String(limit), cursor: cursor ?? undefined })}`);
            const b = a.body as { items: unknown[]; next_cursor: string | null };
            seen.push(...b.items);
            if (b.next_cursor === null) break;
            cursor = b.next_cursor;
          }
          const json = JSON.stringify(seen);
          expect(new Set(seen.map((s) => JSON.stringify(s))).size).toBe(seen.length);
          if (reference === null) reference = json;
          else expect(json).toBe(reference);
        }
      }
    }
  });

  it('a stored per-participant list pages like the oracle (lists longer than one default page)', async () => {
    for (const [route, ids] of [['participants.events', S.multiEvents.slice(0, 8)], ['participants.history', S.multiHistory.slice(0, 8)]] as const) {
      for (const id of ids) {
        for (const limit of [1, 2, 3]) {
          let cursor: CursorPosition | undefined;
          for (;;) {
            const oracle = runQuery(route, db, { id, limit, cursor }, nowMs);
            // The stored list alone (the record's first page not consulted), paged by the route's descriptor.
            const list = await ListReader.open(readDecoded, listRootPath(route, [id]));
            const paged = await pageOf(ROUTES[route], { id, limit, cursor }, list!, { facet: () => [], counted: [] });
            const page = (paged.status === 200 ? paged.body : null) as { next_cursor: string | null };
            expect(oracle.status).toBe(200);
            expect(jsonText(page)).toBe(jsonText(oracle.status === 200 ? oracle.body : null));
            if (page.next_cursor === null) break;
            const url = new URL(`/v1/participants/${encodeURIComponent(id)}/x?cursor=${page.next_cursor}`, BASE);
            const parsed = parseRequest(matchRoute(`/v1/participants/${encodeURIComponent(id)}/${route === 'participants.events' ? 'events' : 'history'}`)!.route, { id }, url.searchParams);
            expect(parsed.ok).toBe(true);
            cursor = (parsed.ok ? parsed.params.cursor : undefined) as CursorPosition;
          }
        }
      }
    }
  });

  it('400 for an id that is not scheme::value, 400 for a bad limit or cursor, 404 for an unknown participant', async () => {
    const known = encodeURIComponent(S.pids[0]!);
    const cases: Array<[string, number, string]> = [
      ['/v1/participants/not-an-id', 400, 'invalid-identifier'],
      ['/v1/participants/not-an-id/events', 400, 'invalid-identifier'],
      ['/v1/participants/12::x/history', 400, 'invalid-identifier'],
      [`/v1/participants/${known}/events?limit=1.5`, 400, 'invalid-parameter'],
      [`/v1/participants/${known}/history?cursor=AAAA`, 400, 'invalid-cursor'],
      ['/v1/participants/0208::nobody', 404, 'participant-not-found'],
      ['/v1/participants/0208::nobody/events', 404, 'participant-not-found'],
      ['/v1/participants/0208::nobody/history', 404, 'participant-not-found'],
    ];
    for (const [target, status, problem] of cases) {
      const a = await same(target);
      expect(a.status, target).toBe(status);
      const b = a.body as { type: string; title: string };
      expect(b.type, target).toBe(`${BASE}/problems/${problem}`);
      expect(b.title).toBe(PROBLEM_CATALOGUE[problem as keyof typeof PROBLEM_CATALOGUE].title);
    }
    // A cursor of one participant's events is not valid for another participant's.
    const multi = S.multiEvents[0]!;
    const c = ((await same(`/v1/participants/${encodeURIComponent(multi)}/events?limit=1`)).body as { next_cursor: string }).next_cursor;
    const other = S.pids.find((p) => p !== multi)!;
    expect((await same(`/v1/participants/${encodeURIComponent(other)}/events?cursor=${c}`)).status).toBe(400);
  });
});

describe('stats.participants', () => {
  it('composer = oracle; totals and facets agree with the list', async () => {
    const a = await same('/v1/stats/participants');
    const b = a.body as { total_count: number; facets: { registered: Array<{ value: string; count: number }> } };
    expect(b.total_count).toBe(S.pids.length);
    expect(b.facets.registered.reduce((n, x) => n + x.count, 0)).toBe(S.pids.length);
  });
});

describe('participants.list: a country in a country order', () => {
  // A copy of the demo with many more participants in another country: the country filtered on is a
  // small part of the main list, as most countries are at `peppol`, where the small demo has few.
  let big: Db;
  let dir: string;
  const COUNTRY = 'BE';
  const OTHER = 'NO';
  const SCHEME = '0192';
  const RARE_SCHEME = '0204';
  const DISCOVERED = 120;
  let smp: string;
  beforeAll(() => {
    big = copyOfSmallDemoDb().open();
    runDerive(big, { only: ['providers', 'participants', 'stats'] });
    const maxId = big.prepare('SELECT max(participant_id) FROM participant_list').pluck().get() as number;
    const t0 = big.prepare('SELECT min(first_seen_at) FROM participant_list').pluck().get() as number;
    smp = big.prepare('SELECT smp FROM participant_list WHERE country = ? AND smp IS NOT NULL GROUP BY smp ORDER BY count(*) DESC, smp LIMIT 1').pluck().get(COUNTRY) as string;
    const ins = big.prepare(
      `INSERT INTO participant_list (participant_id, pid, scheme, value, name, country, has_card, registered, smp, ap_seat_id, provenance, first_seen_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, 1, 1, ?, NULL, 'directory', ?, ?)`,
    );
    const discovered = big.prepare(
      `INSERT INTO participant_list (participant_id, pid, scheme, value, name, country, has_card, registered, smp, ap_seat_id, provenance, first_seen_at, last_seen_at)
       VALUES (?, ?, ?, ?, NULL, NULL, 0, 1, ?, NULL, 'discovered', ?, ?)`,
    );
    big.transaction(() => {
      // 20,000 in the other country, registered with the country's most common SMP; 150 in the country
      // under a scheme of the other country's, spread along the country's names; 120 discovered ones
      // (no name, no country: the last of the SMP's lists in the name and country orders) of a scheme
      // no one else has.
      for (let i = 1; i <= 20_000; i++) ins.run(maxId + i, `${SCHEME}::9${String(i).padStart(8, '0')}`, SCHEME, `9${String(i).padStart(8, '0')}`, `Synthetic ${i} AS`, OTHER, smp, t0 + i * 1000, t0 + i * 1000);
      for (let i = 1; i <= 150; i++) {
        const value = `8${String(i).padStart(8, '0')}`;
        ins.run(maxId + 20_000 + i, `${SCHEME}::${value}`, SCHEME, value, `${String.fromCharCode(65 + (i % 26))}ynthetic ${i} BV`, COUNTRY, null, t0 + i * 997, t0 + i * 997);
      }
      for (let i = 1; i <= DISCOVERED; i++) {
        const value = `7${String(i).padStart(8, '0')}`;
        discovered.run(maxId + 30_000 + i, `${RARE_SCHEME}::${value}`, RARE_SCHEME, value, smp, t0 + i * 991, t0 + i * 991);
      }
    })();
    dir = listsOf(big, 'participants-country-');
  }, 180_000);
  afterAll(() => big?.close());

  /** Every page of a walk, each equal to the oracle's, with the files each read; the matches' ids in order. */
  async function walk(query: Record<string, string>, maxPages = Infinity): Promise<{ ids: string[]; pages: Array<{ paths: string[]; files: number }> }> {
    let cursor: string | undefined;
    const ids: string[] = [];
    const pages: Array<{ paths: string[]; files: number }> = [];
    for (;;) {
      const { target, body, paths, files } = await pageOver(big, dir, { ...query, cursor });
      pages.push({ paths, files });
      ids.push(...body.items.map((i) => i.id));
      if (body.next_cursor === null || pages.length === maxPages) return { ids, pages };
      expect(body.items, target).toHaveLength(Number(query.limit));
      cursor = body.next_cursor;
      expect(pages.length, target).toBeLessThan(500);
    }
  }

  it('a posting list in a country order with a country filter is read from the country\'s range: the other countries\' chunks before it are not read', async () => {
    // A second country with participants of the SMP: the walk goes from one country's range to the other's.
    const second = big.prepare('SELECT country FROM participant_list WHERE smp = ? AND country NOT IN (?, ?) GROUP BY country ORDER BY count(*) DESC, country LIMIT 1').pluck().get(smp, COUNTRY, OTHER) as string | undefined;
    expect(second).toBeDefined();
    for (const countries of [COUNTRY, `${COUNTRY},${second!}`]) {
      const list = countries.split(',');
      const matches = big.prepare(`SELECT count(*) FROM participant_list WHERE country IN (${list.map(() => '?').join(', ')}) AND smp = ?`).pluck().get(...list, smp) as number;
      expect(matches).toBeGreaterThan(40);
      for (const sort of ['country.asc', 'country.desc'] as const) {
        const { ids, pages } = await walk({ country: countries, smp, sort, limit: '20' });
        expect(ids.length, `${countries} ${sort}`).toBe(matches);
        expect(pages.length, `${countries} ${sort}`).toBe(Math.ceil(matches / 20));
        // The SMP's list holds the other country's 20,000 participants (in country.desc before these):
        // reading on to the country would take over a hundred chunks.
        for (const page of pages) expect(page.files, `${countries} ${sort}`).toBeLessThanOrEqual(8);
      }
    }
  });

  it('a filter combination with a country, in a country order, is weighed by the country\'s participants: it walks their range of the main list instead of reading the cell list\'s runs', async () => {
    const country = big.prepare('SELECT count(*) FROM participant_list WHERE country = ?').pluck().get(COUNTRY) as number;
    const all = big.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    const matches = big.prepare('SELECT count(*) FROM participant_list WHERE country = ? AND scheme = ?').pluck().get(COUNTRY, SCHEME) as number;
    // Weighed over the whole list, the walk would look sparse enough (more than 4 chunks a page at
    // CHUNK_ITEMS_ESTIMATE items a chunk) to read the matches' runs of the cell list; over the country's range it is not.
    expect((21 * all) / matches / CHUNK_ITEMS_ESTIMATE).toBeGreaterThan(4);
    expect((21 * country) / matches / CHUNK_ITEMS_ESTIMATE).toBeLessThanOrEqual(4);
    const cellsList = /^i\/participants\.list\/_5fcells/;
    for (const sort of ['country.asc', 'country.desc'] as const) {
      const { ids, pages } = await walk({ country: COUNTRY, scheme: SCHEME, sort, limit: '20' });
      expect(ids.length, sort).toBe(matches);
      expect(pages.length, sort).toBe(Math.ceil(matches / 20));
      for (const page of pages) {
        expect(page.paths.filter((p) => cellsList.test(p)), sort).toEqual([]);
        expect(page.files, sort).toBeLessThanOrEqual(8);
      }
    }
  });

  it('a page after the first of one value\'s walk reads only the list it walks: the value\'s total is its root\'s count, not the main root\'s', async () => {
    const cases: Array<{ query: Record<string, string>; root: string }> = [
      { query: { country: OTHER, sort: 'first_seen.desc' }, root: listRootPath('participants.list', postingPartition('country', OTHER)) },
      { query: { country: OTHER, sort: 'name.asc' }, root: listRootPath('participants.list', mainPartition('country.asc')) },
      { query: { scheme: SCHEME, sort: 'country.desc' }, root: listRootPath('participants.list', postingPartition('scheme', SCHEME, 'country.asc')) },
      { query: { smp, sort: 'name.desc' }, root: listRootPath('participants.list', postingPartition('smp', smp, 'name.asc')) },
      // A small set (at most SMALL_SET_MAX), read whole from its list in the order.
      { query: { registered: 'false', sort: 'country.asc', limit: '20' }, root: listRootPath('participants.list', postingPartition('registered', 'false', 'country.asc')) },
    ];
    for (const { query, root } of cases) {
      const label = JSON.stringify(query);
      // Every page equals the oracle's (walk), and the walk reaches the end of the matches.
      const { pages } = await walk({ limit: '200', ...query });
      expect(pages.length, label).toBeGreaterThan(1);
      for (const page of pages.slice(1)) expect(page.paths.filter((p) => p.startsWith('i/')), label).toEqual([root]);
    }
  });

  it('a name search whose every trigram holds over SMALL_SET_MAX participants walks its rarest trigram\'s list stored in the requested order (or its opposite): full pages as the oracle, each of a few files', async () => {
    // "ynthetic": the 20,150 synthetic names, spread over both countries' names; "synthetic": the
    // 20,000 of the other country and the few of the country that start with an S.
    const table = readStoredJson(path.join(dir, TRIGRAMS_PATH)) as TrigramCounts;
    // A page after the first: the trigram table, the list's root and the chunks of its items and the
    // next (an index node at `peppol`); the first also reads the main root (total_count) and the facet
    // vectors or cube (the facets of the filters).
    const within = (pages: Array<{ paths: string[]; files: number }>, what: string): void => {
      pages.forEach((page, i) => expect(page.files, `${what} page ${i + 1}: ${page.paths.join(' ')}`).toBeLessThanOrEqual(i === 0 ? 8 : 6));
    };
    for (const q of ['ynthetic', 'synthetic']) {
      const rarest = Math.min(...searchTrigrams(q).map((t) => gramCount(table, t)));
      expect(rarest, q).toBeGreaterThan(SMALL_SET_MAX);
      for (const sort of PARTICIPANT_SORTS) {
        const at = trigramSource(sort)!;
        expect(at, sort).not.toBeNull();
        for (const t of searchTrigrams(q)) expect(readStoredJson(path.join(dir, listRootPath('participants.list', trigramPartition(t, at.sort)))), `${t} ${sort}`).toMatchObject({ count: gramCount(table, t) });
        for (const limit of ['7', '200']) within((await walk({ q, sort, limit }, 2)).pages, `${q} ${sort} limit ${limit}`);
      }
    }
    // Whole walks: in a country order backward (a list of TRIGRAM_ORDERS read reversed) and in a name
    // order, of "synthetic 19" (its rarest trigram " 19" over SMALL_SET_MAX: 1,111 of the other
    // country's names and a few of the country's), and with a country filter.
    expect(Math.min(...searchTrigrams('synthetic 19').map((t) => gramCount(table, t)))).toBeGreaterThan(SMALL_SET_MAX);
    const whole: Array<Record<string, string>> = [
      { q: 'synthetic 19', sort: 'country.desc', limit: '200' },
      { q: 'synthetic 19', sort: 'name.asc', limit: '200' },
      { q: 'ynthetic', country: COUNTRY, sort: 'name.asc', limit: '50' },
    ];
    for (const query of whole) {
      const { ids, pages } = await walk(query);
      expect(ids, JSON.stringify(query)).toEqual(everyMatchIn(big, query));
      // The country's few synthetic names are single items among the other country's in a name order:
      // a page may fall back to the cell list's runs.
      if (query.country === undefined) within(pages, JSON.stringify(query));
    }
    // A snapshot written before the lists in TRIGRAM_ORDERS: the same answers (the main list walked).
    const moved = TRIGRAM_ORDERS.map((sort) => path.dirname(path.join(dir, listRootPath('participants.list', trigramPartition('syn', sort)))));
    for (const d of moved) fs.renameSync(d, `${d}.away`);
    try {
      for (const sort of PARTICIPANT_SORTS) await walk({ q: 'synthetic', sort, limit: '50' }, 2);
    } finally {
      for (const d of moved) fs.renameSync(`${d}.away`, d);
    }
  }, 120_000);

  it('a name search with a filter that few or none of its candidates pass walks a trigram list past the entries without the filter\'s values (every trigram list counts facets per entry): as the oracle, a few files a page', async () => {
    const queries: Array<Record<string, string>> = [
      // None: the discovered participants, and the rare scheme's, have no name; every named one is registered.
      { q: 'synthetic', provenance: 'discovered' },
      { q: 'synthetic', scheme: RARE_SCHEME },
      { q: 'ynthetic', registered: 'false' },
      // Few: the country's 150 among the other country's 20,000.
      { q: 'ynthetic', country: COUNTRY, scheme: SCHEME },
    ];
    for (const query of queries) {
      for (const sort of PARTICIPANT_SORTS) {
        const q = { ...query, sort, limit: '50' };
        const { ids, pages } = await walk(q);
        expect(ids, JSON.stringify(q)).toEqual(everyMatchIn(big, q));
        // Within the budget of 8 files a page: a later page that reads the matches' runs of the cell
        // list weighs them against the walk with the facet cube again (7 files with chunks of 256).
        pages.forEach((page, i) => expect(page.files, `${JSON.stringify(q)} page ${i + 1}: ${page.paths.join(' ')}`).toBeLessThanOrEqual(8));
      }
    }
    // The default order's trigram lists count the facets per entry, as those in TRIGRAM_ORDERS do.
    const root = readStoredJson(path.join(dir, listRootPath('participants.list', trigramPartition('syn')))) as { entries: Array<{ counts?: Record<string, unknown> }> };
    expect(root.entries.every((e) => e.counts !== undefined && Object.keys(e.counts).sort().join() === [...ORDERED_POSTINGS_COUNTED].sort().join())).toBe(true);
  });

  it('several values of one dimension walk their lists merged in the requested order, not the main list: full pages as the oracle, each of a few files', async () => {
    // SMPs other than the one of the 20,000 added participants, together over SMALL_SET_MAX (no small
    // set), a few percent of the list: spread along every order of the main list.
    const others = big.prepare('SELECT smp, count(*) AS n FROM participant_list WHERE smp IS NOT NULL AND smp <> ? GROUP BY smp ORDER BY n DESC, smp').all(smp) as Array<{ smp: string; n: number }>;
    const values: string[] = [];
    let total = 0;
    for (const o of others) {
      if (total > SMALL_SET_MAX) break;
      if (o.n > SMALL_SET_MAX / 2) continue;
      values.push(o.smp);
      total += o.n;
    }
    expect(total, 'the SMPs chosen hold more than SMALL_SET_MAX participants').toBeGreaterThan(SMALL_SET_MAX);
    expect(values.length).toBeGreaterThan(1);
    const all = big.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    expect(total / all, 'a few percent of the participants').toBeLessThan(0.1);
    const smpRoot = /^i\/participants\.list\/(?:[^/]+\/)*smp\//;
    for (const sort of PARTICIPANT_SORTS) {
      const query = { smp: values.join(','), sort, limit: '50' };
      const { ids, pages } = await walk(query);
      expect(ids, sort).toEqual(everyMatchIn(big, query));
      expect(pages.length, sort).toBe(Math.ceil(total / 50));
      pages.forEach((page, i) => {
        // Each SMP's root and the chunk at the cursor of each list (one more where a list's items on
        // the page, or the one after them, reach into its next chunk; in a descending order read
        // reversed, a seek to a list's null block); the first page also the main root and each SMP's
        // facet vector.
        expect(page.files, `${sort} page ${i + 1}: ${page.paths.join(' ')}`).toBeLessThanOrEqual(i === 0 ? 4 * values.length + 2 : 3 * values.length + 2);
        expect(page.paths.filter((p) => smpRoot.test(p)).length, sort).toBe(values.length);
      });
    }
  }, 120_000);

  it('a posting list in another order counts facets per index entry: a pair whose matches are the last of the list passes over the chunks before them', async () => {
    // The SMP's lists in the name and country orders hold its 20,000 participants of the other country
    // and then its discovered ones (no name, no country). A page of one is estimated cheap enough to
    // walk (2 × the list / the matches / 140 ≤ 4 chunks), and the walk's first match is after every
    // named participant of the list: before the lists counted facets per entry, each page read 8
    // chunks of them and then the cell list.
    const total = big.prepare('SELECT count(*) FROM participant_list WHERE smp = ?').pluck().get(smp) as number;
    const matches = big.prepare("SELECT count(*) FROM participant_list WHERE smp = ? AND provenance = 'discovered'").pluck().get(smp) as number;
    expect(matches).toBeGreaterThanOrEqual(DISCOVERED);
    expect((2 * total) / matches / 140).toBeLessThanOrEqual(4);
    const root = readStoredJson(path.join(dir, listRootPath('participants.list', postingPartition('smp', smp, 'name.asc')))) as { entries: Array<{ counts?: Record<string, Record<string, number>> }> };
    expect(root.entries.length, 'the SMP\'s name-order list spans many chunks').toBeGreaterThan(20);
    expect(root.entries.every((e) => e.counts?.provenance !== undefined), 'every index entry counts provenances').toBe(true);
    const cellsList = /^i\/participants\.list\/_5fcells/;
    for (const sort of ['name.asc', 'name.desc', 'country.asc', 'country.desc'] as const) {
      const { ids, pages } = await walk({ provenance: 'discovered', smp, sort, limit: '1' });
      expect(ids.length, sort).toBe(matches);
      expect(pages.length, sort).toBe(matches);
      // The root, the index nodes down to the end of the list, the chunk (and the next one at a
      // chunk's end), the facet vector or cube: no chunk of the named participants, no cell list.
      for (const page of pages.slice(0, 5)) {
        expect(page.files, sort).toBeLessThanOrEqual(6);
        expect(page.paths.filter((p) => cellsList.test(p)), sort).toEqual([]);
      }
    }
  });

});

describe('participants.list: name searches counted by the grams index', () => {
  // A copy of the demo with names whose grams of four code points and more are frequent (over
  // GRAM_THRESHOLD participants hold them), as the demo's are at `peppol`: "alpha gamma" and "delta
  // beta" 1,500 times each, "alpha beta" 60 times. Every trigram of "alpha beta" is then frequent
  // though the text is not: its matches are those of its gram "ha b", listed. And 1,200 unregistered
  // "omega kappa", whose grams are frequent among the unregistered participants too (as `vil` is at
  // `peppol`): a search of them with registered=false walks an unregistered name list.
  let big: Db;
  let dir: string;
  beforeAll(() => {
    big = copyOfSmallDemoDb().open();
    runDerive(big, { only: ['providers', 'participants', 'stats'] });
    const maxId = big.prepare('SELECT max(participant_id) FROM participant_list').pluck().get() as number;
    const t0 = big.prepare('SELECT min(first_seen_at) FROM participant_list').pluck().get() as number;
    const smps = big.prepare('SELECT smp FROM participant_list WHERE smp IS NOT NULL GROUP BY smp ORDER BY count(*) DESC, smp LIMIT 3').pluck().all() as string[];
    const ins = big.prepare(
      `INSERT INTO participant_list (participant_id, pid, scheme, value, name, country, has_card, registered, smp, ap_seat_id, provenance, first_seen_at, last_seen_at)
       VALUES (?, ?, '0192', ?, ?, ?, 1, ?, ?, NULL, 'directory', ?, ?)`,
    );
    const countries = ['NO', 'BE', 'DK', 'SE'];
    big.transaction(() => {
      let n = 0;
      const add = (name: string, i: number, registered = i % 9 === 0 ? 0 : 1): void => {
        n++;
        const value = `97${String(n).padStart(7, '0')}`;
        ins.run(maxId + n, `0192::${value}`, value, name, countries[i % 4], registered, smps[i % 3], t0 + n * 7919, t0 + n * 7919);
      };
      for (let i = 1; i <= 1500; i++) {
        add(`Alpha Gamma ${i}`, i);
        add(`Delta Beta ${i}`, i);
        if (i <= 60) add(`Alpha Beta ${i}`, i);
        if (i <= 1200) add(`Omega Kappa ${i}`, i, 0);
      }
    })();
    dir = listsOf(big, 'participants-grams-');
  }, 180_000);
  afterAll(() => big?.close());

  /** One page by the composer, equal to the oracle's; the paths it read. */
  async function page(query: Record<string, string | undefined>): Promise<{ body: ListBody; paths: string[] }> {
    const { target, body, paths } = await pageOver(big, dir, query);
    // Not a walk of whole lists: this demo's chunks are larger than at `peppol` (up to 64 KB), so the
    // reads are weighed less exactly (the budget of 8 files is measured there: docs/benchmarks.md).
    expect(paths.length, `${target}: ${paths.join(' ')}`).toBeLessThanOrEqual(16);
    return { body, paths };
  }

  it('every search text counted, under any filters and in any order: a frequent one from its cells, an infrequent one from its gram\'s list, one no name holds as none', async () => {
    const texts = fc.constantFrom('alpha beta', 'alpha gamma', 'pha gam', 'delta beta 1', 'alpha gammaz', 'delta gamma', 'ha b', 'a beta', 'beta 15', 'gamma 1500', 'lta', 'omega kappa', 'ga ka', 'kappa 11', 'o', 'ka', 'pp', 'z');
    await fc.assert(
      fc.asyncProperty(
        texts,
        fc.constantFrom(...PARTICIPANT_SORTS),
        fc.option(fc.constantFrom('NO', 'BE', 'NO,DK', 'FI'), { nil: undefined }),
        fc.option(fc.constantFrom('true', 'false', 'false'), { nil: undefined }),
        fc.constantFrom('1', '7', '50', '200'),
        async (q, sort, country, registered, limit) => {
          const query = { q, sort, country, registered, limit };
          const expected = everyMatchIn(big, Object.fromEntries(Object.entries(query).filter(([k, v]) => v !== undefined && k !== 'limit')) as Record<string, string>);
          const first = await page(query);
          expect(first.body.meta?.filter_count, q).toBe(expected.length);
          // Walk on (a few pages): full pages, the matches in order.
          const seen = first.body.items.map((i) => i.id);
          let cursor = first.body.next_cursor;
          for (let n = 0; n < 3 && cursor !== null; n++) {
            const next = await page({ ...query, cursor });
            expect(next.body.items).toHaveLength(next.body.next_cursor === null ? next.body.items.length : Number(limit));
            seen.push(...next.body.items.map((i) => i.id));
            cursor = next.body.next_cursor;
          }
          expect(seen).toEqual(expected.slice(0, seen.length));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reads what the grams index says: the gram\'s list for an infrequent text, the cell shard for a frequent one, nothing more for one no name holds', async () => {
    const infrequent = await page({ q: 'alpha beta', sort: 'name.asc' });
    expect(infrequent.body.meta?.filter_count).toBe(60);
    expect(infrequent.paths).toContain(gramListPath('ha b'));
    const frequent = await page({ q: 'alpha gamma', country: 'NO' });
    expect(frequent.body.meta?.filter_count).toBe(everyMatchIn(big, { q: 'alpha gamma', country: 'NO' }).length);
    expect(frequent.body.meta?.filter_count).toBeGreaterThan(300);
    expect(frequent.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}cells/`))).toBe(true);
    expect(frequent.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}dict/`))).toBe(false);
    // A later page counts nothing: the dictionary (a few KB) tells it the text is frequent.
    expect(frequent.body.next_cursor).not.toBeNull();
    const second = await page({ q: 'alpha gamma', country: 'NO', cursor: frequent.body.next_cursor! });
    expect(second.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}dict/`))).toBe(true);
    expect(second.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}cells/`))).toBe(false);
    // Every trigram of "delta gamma" is frequent, the text held by no name: no chunk is read.
    const none = await page({ q: 'delta gamma', sort: 'name.desc' });
    expect(none.body.meta?.filter_count).toBe(0);
    expect(none.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}dict/`))).toBe(true);
    expect(none.paths.filter((p) => p.startsWith('c/'))).toEqual([]);
  });

  it('a page after the first whose text is the gram of the list it walks (a short name list, a trigram list) reads no dictionary; the first page of a filtered search that walks reads the facet cube instead of its value\'s root and the main root', async () => {
    const smp = big.prepare('SELECT smp FROM participant_list WHERE smp IS NOT NULL GROUP BY smp ORDER BY count(*) DESC, smp LIMIT 1').pluck().get() as string;
    const MAIN_ROOTS = MAIN_LIST_SORTS.map((sort) => listRootPath('participants.list', mainPartition(sort)));
    const smpRoot = /^i\/participants\.list\/(?:[^/]+\/)?smp\//;
    const names = (big.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().all() as string[]).map(foldName);
    const rarest = Math.min(...searchTrigrams('alpha gamma').map((t) => names.filter((n) => n.includes(t)).length));
    expect(big.prepare('SELECT count(*) FROM participant_list WHERE smp = ?').pluck().get(smp) as number).toBeGreaterThan(rarest);
    for (const sort of PARTICIPANT_SORTS) {
      // `ka` has a short name list and `lta` a trigram list, each of over SMALL_SET_MAX names: walked.
      for (const q of ['ka', 'lta']) {
        expect(everyMatchIn(big, { q }).length, q).toBeGreaterThan(SMALL_SET_MAX);
        const first = await page({ q, sort, limit: '7' });
        expect(first.body.next_cursor, `${q} ${sort}`).not.toBeNull();
        const second = await page({ q, sort, limit: '7', cursor: first.body.next_cursor! });
        expect(second.body.items, `${q} ${sort}`).toHaveLength(7);
        expect(second.paths.filter((p) => p.startsWith(GRAMS_PREFIX)), `${q} ${sort}`).toEqual([]);
      }
      // A longer text may be no frequent gram: a later page still looks it up.
      const first = await page({ q: 'alpha gamma', sort, limit: '7' });
      const second = await page({ q: 'alpha gamma', sort, limit: '7', cursor: first.body.next_cursor! });
      expect(second.paths.some((p) => p.startsWith(`${GRAMS_PREFIX}dict/`)), sort).toBe(true);
      // A frequent text with one SMP: counted from its cells of the cube, and the cube gives the SMP's
      // total and everyone's, so neither the SMP's root nor a main root is read unless walked.
      const filtered = await page({ q: 'alpha gamma', smp, sort, limit: '7' });
      expect(filtered.body.meta?.filter_count, sort).toBe(everyMatchIn(big, { q: 'alpha gamma', smp }).length);
      expect(filtered.paths, sort).toContain(CUBE_PATH);
      expect(filtered.paths.filter((p) => MAIN_ROOTS.includes(p)), sort).toEqual([]);
      // The SMP holds more participants than the text's rarest trigram: that trigram's list is walked.
      expect(filtered.paths.filter((p) => smpRoot.test(p)), sort).toEqual([]);
    }
  });

  it('a search with registered=false reads the unregistered name lists\' table and walks its rarest gram\'s list there, in the requested order: full pages as the oracle, the matches most of what it reads', async () => {
    const table = readStoredJson(path.join(dir, UNREGISTERED_GRAMS_PATH)) as GramCountTable<string>;
    expect(gramCount(table, 'kap')).toBe(everyMatchIn(big, { q: 'kap', registered: 'false' }).length);
    expect(gramCount(table, 'kap')).toBeGreaterThan(SMALL_SET_MAX);
    for (const sort of PARTICIPANT_SORTS) {
      for (const q of ['omega kappa', 'ka']) {
        // Its rarest gram among the unregistered (the text itself when it is a gram).
        const gram = unregisteredSearchGrams(q).reduce((a, b) => (gramCount(table, b) < gramCount(table, a) ? b : a));
        expect(gramCount(table, gram), q).toBeGreaterThan(SMALL_SET_MAX);
        const query = { q, registered: 'false', sort, limit: '50' };
        const expected = everyMatchIn(big, { q, registered: 'false', sort });
        const at = trigramSource(sort)!;
        const list = listRootPath('participants.list', unregisteredGramPartition(gram, at.sort));
        let cursor: string | null | undefined;
        const seen: string[] = [];
        do {
          const r = await page({ ...query, cursor: cursor ?? undefined });
          expect(r.paths, `${q} ${sort}`).toContain(UNREGISTERED_GRAMS_PATH);
          expect(r.paths, `${q} ${sort}`).toContain(list);
          // Its chunks only: not those of the registered=false posting list, nor of a trigram list of
          // everyone (a first page reads the main root besides, for total_count).
          const main = listRootPath('participants.list', mainPartition(mainSource(sort).sort));
          expect(r.paths.filter((p) => p.startsWith("i/") && p !== list && p !== main), `${q} ${sort}: ${r.paths.join(" ")}`).toEqual([]);
          expect(r.paths.filter((p) => p.startsWith('c/')).length, `${q} ${sort}`).toBeLessThanOrEqual(3);
          if (r.body.next_cursor !== null) expect(r.body.items).toHaveLength(50);
          seen.push(...r.body.items.map((i) => i.id));
          cursor = r.body.next_cursor;
        } while (cursor !== null);
        expect(seen, `${q} ${sort}`).toEqual(expected);
      }
    }
    // A snapshot without the unregistered name lists (written before them) answers the same from the
    // registered=false posting list and the trigram lists.
    const before = tempDir('participants-grams-before-');
    try {
      fs.cpSync(dir, before, { recursive: true });
      fs.rmSync(path.join(before, UNREGISTERED_GRAMS_PATH));
      for (const sort of [DEFAULT_SORT, ...TRIGRAM_ORDERS]) {
        const names = path.dirname(path.join(before, listRootPath('participants.list', trigramPartition('kap', sort))));
        for (const seg of fs.readdirSync(names, { withFileTypes: true })) if (seg.isDirectory()) fs.rmSync(path.join(names, seg.name, 'registered'), { recursive: true, force: true });
      }
      const was = dir;
      dir = before;
      try {
        for (const sort of PARTICIPANT_SORTS) {
          // page() compares each answer with the oracle's.
          const r = await page({ q: 'omega kappa', registered: 'false', sort, limit: '7' });
          expect(r.body.items).toHaveLength(7);
          expect(r.paths).toContain(UNREGISTERED_GRAMS_PATH);
        }
      } finally {
        dir = was;
      }
    } finally {
      fs.rmSync(before, { recursive: true, force: true });
    }
  });

  it('a search of one or two code points walks its short name list in the requested order: full pages as the oracle, each of a few chunks of that list; a snapshot without these lists answers the same', async () => {
    for (const sort of PARTICIPANT_SORTS) {
      for (const [q, limit, pages] of [['ka', '200', Infinity], ['o', '200', 3]] as const) {
        const expected = everyMatchIn(big, { q, sort });
        expect(expected.length, q).toBeGreaterThan(SMALL_SET_MAX);
        const list = listRootPath('participants.list', trigramPartition(q, trigramSource(sort)!.sort));
        const main = listRootPath('participants.list', mainPartition(mainSource(sort).sort));
        let cursor: string | null | undefined;
        const seen: string[] = [];
        for (let n = 0; n < pages; n++) {
          const r = await page({ q, sort, limit, cursor: cursor ?? undefined });
          expect(r.paths, `${q} ${sort}`).toContain(list);
          // Its chunks only (a first page reads the main root besides, for total_count): those of a page of
          // 200 matches and the next, one more read backward.
          expect(r.paths.filter((p) => p.startsWith('i/') && p !== list && p !== main), `${q} ${sort}: ${r.paths.join(' ')}`).toEqual([]);
          expect(r.paths.filter((p) => p.startsWith('c/')).length, `${q} ${sort}`).toBeLessThanOrEqual(4);
          if (r.body.next_cursor !== null) expect(r.body.items).toHaveLength(Number(limit));
          if (n === 0) expect(r.body.meta?.filter_count, `${q} ${sort}`).toBe(expected.length);
          seen.push(...r.body.items.map((i) => i.id));
          cursor = r.body.next_cursor;
          if (cursor === null) break;
        }
        expect(seen, `${q} ${sort}`).toEqual(pages === Infinity ? expected : expected.slice(0, seen.length));
      }
    }
    // A snapshot without the short name lists (written before them) answers the same: the grams index
    // plans the search (a frequent text walks the main list).
    const before = tempDir('participants-grams-before-');
    try {
      fs.cpSync(dir, before, { recursive: true });
      const grams = new Set((big.prepare('SELECT name FROM participant_list WHERE name IS NOT NULL').pluck().all() as string[]).flatMap((n) => shortSearchGramsOf(foldName(n))));
      for (const sort of [DEFAULT_SORT, ...TRIGRAM_ORDERS]) for (const g of grams) fs.rmSync(path.join(before, listRootPath('participants.list', trigramPartition(g, sort))));
      for (const q of ['ka', 'o', 'z']) {
        const matches = everyMatchIn(big, { q }).length;
        for (const sort of PARTICIPANT_SORTS) {
          // pageOver compares each answer with the oracle's (a walk of the main list reads more files
          // than page() allows: `ka` in name order reads 13 chunks of it).
          const r = await pageOver(big, before, { q, sort, limit: '7' });
          expect(r.body.items.length, q).toBe(Math.min(7, matches));
        }
      }
    } finally {
      fs.rmSync(before, { recursive: true, force: true });
    }
  });
});
