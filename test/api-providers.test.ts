// Providers, access points, seats and churn: the shim's composers over the rendered snapshot answer
// byte-identically to the oracle over SQLite (docs/architecture.md §5), for every resource of the small demo and for
// random parameters; bodies validate against the response schemas; 400/404 problems per the spec.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonText } from '../src/api/json.js';
import { addDays, utcDay } from '../src/api/params.js';
import { queryOf, runQuery } from '../src/api/query/index.js';
import { PROVIDERS_QUERIES } from '../src/api/providers/query.js';
import { finishResult, paramErrorsOf, type ApiResult } from '../src/api/result.js';
import { parseRequest } from '../src/api/routes/request.js';
import { ROUTES, type RouteId } from '../src/api/routes/table.js';
import { RESOURCE_SCHEMAS } from '../src/api/schemas/index.js';
import type { Db } from '../src/db/index.js';
import { compose, composerOf } from '../src/edge/compose/index.js';
import { PROVIDERS_COMPOSERS } from '../src/edge/compose/providers.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { jsonBody } from '../src/api/json.js';
import { RenderContext } from '../src/render/context.js';
import { RENDERERS } from '../src/render/routes/index.js';
import { PROVIDERS_RENDERERS } from '../src/render/routes/providers.js';
import { DirectorySink } from '../src/render/sink.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

const ROUTE_IDS = ['providers.list', 'providers.detail', 'aps.list', 'aps.detail', 'aps.churn', 'aps.churn_participants', 'seats.detail'] as const;

let db: Db;
let out: string;
let nowMs: number;
const maxStats: Record<string, ReadStats> = {};

beforeAll(async () => {
  // The small demo derived once per run (test/helpers/demo-fixture.ts), copied.
  db = copyOfDb((await derivedSmallDemo()).db).open();
  nowMs = Date.parse(smallDemo().now);
  out = tempDir('api-market-');
  const sink = new DirectorySink(out);
  // Small chunks so that lists span several chunks and index levels on the small demo.
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 8, chunkMaxBytes: 2048 }, jsonBody);
  for (const id of ROUTE_IDS) PROVIDERS_RENDERERS[id]!(ctx);
  sink.close();
});

afterAll(() => {
  db?.close();
  console.log(`api-market: most snapshot reads for one answer on the small demo: ${JSON.stringify(maxStats)}`);
});

const read = async (p: string): Promise<Uint8Array | null> => {
  try {
    return new Uint8Array(fs.readFileSync(path.join(out, p)));
  } catch {
    return null;
  }
};

interface Both {
  status: number;
  oracle: string;
  composed: string;
  body: unknown;
  stats: ReadStats;
}

const finished = (r: ApiResult, instance: string): unknown => {
  const f = finishResult(r, { baseUrl: 'https://api.example.org', instance });
  return f.status === 200 ? f.body : f.problem;
};
const bodyText = (r: ApiResult, instance: string): string => jsonText(finished(r, instance));

/** One request answered by the oracle and by the composer, as the resolver would (parseRequest first). */
async function both(id: RouteId, pathParams: Record<string, string>, query = ''): Promise<Both> {
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
    composed = await compose(route, params, { read, nowMs, stats });
  }
  const m = maxStats[id] ?? { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  maxStats[id] = { files: Math.max(m.files, stats.files), bytes: Math.max(m.bytes, stats.bytes), decoded: Math.max(m.decoded, stats.decoded), chunks: Math.max(m.chunks, stats.chunks) };
  if (oracle.status === 200) {
    const schema = RESOURCE_SCHEMAS[route.response];
    const v = schema.safeParse(oracle.body);
    if (!v.success) throw new Error(`${id} ${JSON.stringify(pathParams)}?${query}: body fails ${route.response}: ${v.error.message}`);
  } else {
    expect(RESOURCE_SCHEMAS.Problem.safeParse(oracle.problem).success).toBe(true);
  }
  return {
    status: oracle.status,
    oracle: bodyText(oracle, instance),
    composed: bodyText(composed, instance),
    body: finished(oracle, instance),
    stats,
  };
}

const col = (sql: string): string[] => db.prepare(sql).pluck().all() as string[];

describe('providers, aps and seats (exact files)', () => {
  it('every route of the family is registered with its oracle, renderer and composer', () => {
    for (const id of ROUTE_IDS) {
      expect(queryOf(id)).toBe(PROVIDERS_QUERIES[id]);
      expect(RENDERERS[id]).toBe(PROVIDERS_RENDERERS[id]);
      // A route whose every answer is its exact file has no composer.
      if (id === 'aps.churn' || id === 'aps.churn_participants') expect(composerOf(id)).toBe(PROVIDERS_COMPOSERS[id]);
      else expect(() => composerOf(id)).toThrow();
    }
  });

  it('the member registry and the AP list equal the oracle and are ordered busiest first', async () => {
    for (const id of ['providers.list', 'aps.list'] as const) {
      const r = await both(id, {});
      expect(r.status).toBe(200);
      expect(r.composed).toBe(r.oracle);
      const items = (r.body as { items: Array<{ participant_count: number; key: string }>; next_cursor: null }).items;
      expect(items.length).toBeGreaterThan(0);
      for (let i = 1; i < items.length; i++) {
        const a = items[i - 1]!;
        const b = items[i]!;
        expect(a.participant_count > b.participant_count || (a.participant_count === b.participant_count && a.key < b.key)).toBe(true);
      }
    }
  });

  it('every provider slug, AP key (current and stale) and seat answers like the oracle; unknown ones are 404', async () => {
    const slugs = col('SELECT slug FROM curated_providers');
    const keys = col('SELECT key FROM ap_identities');
    const aliases = col('SELECT alias FROM ap_key_aliases');
    const seats = col('SELECT seat_id FROM seat_identities');
    expect(aliases.length).toBeGreaterThan(0);
    for (const slug of [...slugs, 'no-such-provider']) {
      const r = await both('providers.detail', { slug });
      expect(r.composed).toBe(r.oracle);
      expect(r.status).toBe(slug === 'no-such-provider' ? 404 : 200);
    }
    for (const key of [...keys, ...aliases, 'c-nobody', 's-PZZ999999']) {
      const r = await both('aps.detail', { key });
      expect(r.composed).toBe(r.oracle);
      if (keys.includes(key)) expect((r.body as { key: string }).key).toBe(key);
      else if (aliases.includes(key)) {
        // A stale key answers with the canonical current key.
        const canonical = db.prepare('SELECT key FROM ap_key_aliases WHERE alias = ?').pluck().get(key) as string;
        expect((r.body as { key: string }).key).toBe(canonical);
      } else {
        expect(r.status).toBe(404);
        expect((r.body as { title: string }).title).toBe('Unknown access point');
      }
    }
    // AP keys are case-insensitive, as seat ids are: any casing answers as the canonical key.
    const flip = (k: string): string => [...k].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c.toLowerCase())).join('');
    for (const key of [...keys.slice(0, 20), ...aliases.slice(0, 10)]) {
      const canonical = await both('aps.detail', { key });
      for (const variant of [key.toUpperCase(), key.toLowerCase(), flip(key)]) {
        const r = await both('aps.detail', { key: variant });
        expect(r.composed).toBe(r.oracle);
        expect(r.oracle, variant).toBe(canonical.oracle);
      }
    }
    for (const seatId of [...seats, 'PZZ999999']) {
      const r = await both('seats.detail', { seatId: seatId.toLowerCase() });
      expect(r.composed).toBe(r.oracle);
      expect(r.status).toBe(seatId === 'PZZ999999' ? 404 : 200);
    }
    const bad = await both('seats.detail', { seatId: 'not-a-seat' });
    expect(bad.status).toBe(404);
    expect((bad.body as { type: string }).type).toBe('https://api.example.org/problems/seat-not-found');
  });
});

describe('churn', () => {
  const today = (): string => utcDay(nowMs);
  /** Days of random windows: near today (up to 520 days back, past the 400-day limit) or at the calendar's edges. */
  const dayArb = (): fc.Arbitrary<string> =>
    fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: -520, max: 5 }).map((d) => addDays(today(), d)) },
      { weight: 1, arbitrary: fc.constantFrom('0001-01-01', '0001-01-05', '0001-12-31', '9999-01-01', '9999-12-01', '9999-12-31') },
    );
  const span = (from: string, to: string): number => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
  const churnKeys = (): string[] =>
    col(`SELECT DISTINCT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id`);

  it('the default window is served from one exact file and equals the oracle (trailing 30 days)', async () => {
    const keys = churnKeys();
    expect(keys.length).toBeGreaterThan(3);
    for (const key of keys) {
      const r = await both('aps.churn', { key });
      expect(r.status).toBe(200);
      expect(r.composed).toBe(r.oracle);
      expect(r.stats.files).toBe(1);
      const v = r.body as { from: string; to: string; series: unknown[] };
      expect(v.to).toBe(today());
      expect(v.from).toBe(addDays(today(), -29));
      expect(v.series).toHaveLength(30);
    }
  });

  it('random keys and windows: composed = oracle, byte for byte', async () => {
    const keys = [...churnKeys(), ...col('SELECT alias FROM ap_key_aliases'), ...col('SELECT key FROM ap_identities'), 'c-nobody', 's-PZZ000001'];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...keys), fc.option(dayArb()), fc.option(dayArb()), async (key, from, to) => {
        const q = new URLSearchParams();
        if (from !== null) q.set('from', from);
        if (to !== null) q.set('to', to);
        const r = await both('aps.churn', { key }, q.toString());
        expect(r.composed).toBe(r.oracle);
        const f = from ?? addDays(to ?? today(), -29);
        const n = span(f, to ?? today());
        if (n < 1 || n > 400) expect(r.status).toBe(400);
        if (r.status === 200) expect((r.body as { series: unknown[] }).series).toHaveLength(n);
      }),
      { numRuns: Number(process.env.API_FC_RUNS ?? 150) },
    );
  });

  it('churn participants: random keys, categories and windows, composed = oracle; at most 500 rows', async () => {
    const keys = [...churnKeys(), ...col('SELECT alias FROM ap_key_aliases'), 'c-nobody'];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...keys),
        fc.constantFrom('joiner', 'mover_in', 'mover_out', 'leaver', 'LEAVER'),
        fc.option(dayArb()),
        fc.option(dayArb()),
        async (key, category, from, to) => {
          const q = new URLSearchParams({ category });
          if (from !== null) q.set('from', from);
          if (to !== null) q.set('to', to);
          const r = await both('aps.churn_participants', { key }, q.toString());
          expect(r.composed).toBe(r.oracle);
          const n = span(from ?? addDays(to ?? today(), -29), to ?? today());
          if (n < 1 || n > 400) expect(r.status).toBe(400);
          if (r.status === 200) expect((r.body as { items: unknown[] }).items.length).toBeLessThanOrEqual(500);
        },
      ),
      { numRuns: Number(process.env.API_FC_RUNS ?? 150) },
    );
  });

  it('the participants behind a count add up to the count of the churn view', async () => {
    let checked = 0;
    for (const key of churnKeys()) {
      const from = addDays(today(), -119);
      const v = (await both('aps.churn', { key }, `from=${from}`)).body as { totals: Record<string, number> };
      for (const [category, total] of [
        ['joiner', 'joiners'],
        ['mover_in', 'movers_in'],
        ['mover_out', 'movers_out'],
        ['leaver', 'leavers'],
      ] as const) {
        const p = await both('aps.churn_participants', { key }, `category=${category}&from=${from}`);
        expect(p.composed).toBe(p.oracle);
        const n = (p.body as { items: unknown[] }).items.length;
        if (v.totals[total]! <= 500) expect(n).toBe(v.totals[total]);
        checked += n;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('400 and 404 problems of the churn routes', async () => {
    const key = churnKeys()[0]!;
    const missing = await both('aps.churn_participants', { key });
    expect([missing.status, (missing.body as { title: string }).title]).toEqual([400, 'Missing query parameter']);
    const invalid = await both('aps.churn_participants', { key }, 'category=stayer');
    expect([invalid.status, (invalid.body as { title: string }).title]).toEqual([400, 'Invalid query parameter']);
    const reversed = await both('aps.churn', { key }, `from=${today()}&to=${addDays(today(), -3)}`);
    expect([reversed.status, (reversed.body as { title: string }).title]).toEqual([400, 'Invalid query parameter']);
    const badDate = await both('aps.churn', { key }, 'from=2026-02-30');
    expect(badDate.status).toBe(400);
    const unknown = await both('aps.churn', { key: 'c-nobody' });
    expect([unknown.status, (unknown.body as { type: string }).type]).toEqual([404, 'https://api.example.org/problems/churn-not-found']);
    // An identity that exists but never had churn is a 404 too (spec "Errors" 3).
    const quiet = col('SELECT key FROM ap_identities').find((k) => !churnKeys().includes(k));
    if (quiet !== undefined) {
      const r = await both('aps.churn', { key: quiet }, `from=${addDays(today(), -60)}`);
      expect(r.status).toBe(404);
      expect(r.composed).toBe(r.oracle);
    }
    const unknownAp = await both('aps.churn_participants', { key: 'c-nobody' }, 'category=joiner');
    expect([unknownAp.status, (unknownAp.body as { title: string }).title]).toEqual([404, 'Unknown access point']);
  });
});
