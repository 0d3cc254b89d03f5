// One object per participant (docs/snapshot-format.md "Participants"): the snapshot holds each
// participant's record `v1/participants/<id>.json` ({"participant", "history", "events"}: the detail and
// the first pages of its history and events, null when empty) and nothing else of it under
// v1/participants; a stored list `i/participants.events/<id>.json` / `i/participants.history/<id>.json`
// only when that list holds more than one default page. The shim answers all three routes from the
// record: byte for byte the oracle's answer, for any limit and cursor, reading the record alone when the
// answer lies within its first page, and 404 for an unknown participant, from one read.
//
// Two snapshots:
// - `out`: a full build of the small demo, with two extra participants seen only by an SMP lookup (no
//   directory or SML observation: neither events nor history), one of them with an id long and
//   non-ASCII enough for a hashed path segment;
// - `rich`: the participants' records rendered again (default options, small chunks) over a copy of the
//   built database to which six participants' events or history were set to exactly 50, 51 and more
//   than 100 items (the demo has no participant with more than a page).
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/api/cursor.js';
import { jsonBody, jsonText } from '../src/api/json.js';
import type { SortKey } from '../src/api/sort-keys.js';
import { LIMIT_DEFAULT } from '../src/api/params.js';
import { recordPath, type ParticipantRecord } from '../src/api/participants/record.js';
import { exactFilePath, listRootPath } from '../src/api/paths.js';
import { finishResult, paramErrorsOf } from '../src/api/result.js';
import { matchRoute } from '../src/api/routes/match.js';
import { orderOf, parseRequest, sortKeyOf } from '../src/api/routes/request.js';
import { ROUTES } from '../src/api/routes/table.js';
import { openDb, type Db } from '../src/db/index.js';
import { compose } from '../src/edge/compose/index.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { parseParticipantId } from '../src/feeds/ids.js';
import { runBuild } from '../src/render/build.js';
import { RenderContext } from '../src/render/context.js';
import { participantRenderers } from '../src/render/routes/participants.js';
import { DirectorySink } from '../src/render/sink.js';
import { writeManifest } from '../src/render/manifest.js';
import { verifySnapshot } from '../src/render/verify.js';
import { testConfig } from './helpers/config.js';
import { startServe as startServeCli, type Served } from './helpers/cli.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { oracleAnswer, snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';
import { readStored, readStoredJson } from '../src/render/stored.js';

type Sub = 'events' | 'history';
const SUBS: readonly Sub[] = ['events', 'history'];
const ROUTE_OF = { events: 'participants.events', history: 'participants.history' } as const;
/** The empty page as the oracle serialises it (src/api/json.ts: a final newline). */
const EMPTY_PAGE = '{"items":[],"next_cursor":null}\n';
const UNKNOWN = ['0208::0000000097', '9915::no-such-participant', `0208::${'\u00e9'.repeat(150)}`];
/** Items given to the participants of `rich`, by the list they were given to. */
const SIZES = [50, 51, 130] as const;
const SMALL_CHUNKS = { chunkMaxItems: 30, chunkMaxBytes: 16_384 };

let db: Db;
/** The database of `rich` (the built one, with the synthetic events and history). */
let richDb: Db;
let out: string;
let rich: string;
/** `rich` as a snapshot built before the record held it (the layout the shim still reads). */
let legacy: string;
let nowMs: number;
let baseUrl: string;
let server: Served | null = null;
/** Participants by what their events / history hold (in `db`). */
const P = { all: [] as string[], smpOnly: [] as string[], noEvents: [] as string[], withEvents: [] as string[], withHistory: [] as string[] };
/** The participants of `rich` whose list was set to SIZES[i] items, per list. */
const R = { events: [] as string[], history: [] as string[] };

/** Two participants seen only by an SMP lookup, added to the ingested database before the build derives it. */
function addSmpOnlyParticipants(file: Db): string[] {
  const ids = [parseParticipantId('0208::smp-only-0001')!, parseParticipantId(`9925::smp-only-${'\u00e9\u00df'.repeat(60)}`)!];
  const obs = file.prepare('SELECT at, smp_host_id, endpoint_set_id, segment_id FROM smp_obs ORDER BY participant_id, at LIMIT 1').get() as { at: number; smp_host_id: number; endpoint_set_id: number; segment_id: number };
  for (const p of ids) {
    const { lastInsertRowid } = file.prepare('INSERT INTO participants (pid, scheme, value) VALUES (?, ?, ?)').run(p.id, p.scheme, p.value);
    file.prepare('INSERT INTO smp_obs (participant_id, at, smp_host_id, endpoint_set_id, segment_id) VALUES (?, ?, ?, ?, ?)').run(lastInsertRowid, obs.at, obs.smp_host_id, obs.endpoint_set_id, obs.segment_id);
  }
  return ids.map((p) => p.id);
}

/**
 * Replaces the events or history of `pid` with `n` synthetic items. Three events share each instant
 * and two history rows each valid_from, so the order's last field decides ties.
 */
function setItems(file: Db, sub: Sub, pid: string, n: number): void {
  const key = file.prepare('SELECT participant_id FROM participant_list WHERE pid = ?').pluck().get(pid) as number;
  const base = Date.parse('2026-06-01T00:00:00Z');
  if (sub === 'events') {
    file.prepare('DELETE FROM events WHERE participant_id = ?').run(key);
    const ins = file.prepare('INSERT INTO events (id, type, observed_at, hostname, participant_id, payload) VALUES (?, ?, ?, NULL, ?, ?)');
    for (let i = 0; i < n; i++) ins.run(`ev-synthetic-${key}-${String(i).padStart(3, '0')}`, 'endpoint_changed', base - Math.floor(i / 3) * 60_000, key, JSON.stringify({ n: i, before: null, after: { url: `https://ap.example/${i}` } }));
  } else {
    file.prepare('DELETE FROM participant_history WHERE participant_id = ?').run(key);
    const ins = file.prepare('INSERT INTO participant_history (participant_id, valid_from, fact, valid_to, flag, name, country, registration_date, hostname) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (let i = 0; i < n; i++) {
      const from = base - Math.floor(i / 2) * 3_600_000;
      const to = i < 2 ? null : from + 3_600_000;
      if (i % 2 === 0) ins.run(key, from, 'card', to, null, `Name ${key}-${i}`, 'BE', '2020-01-01', null);
      else ins.run(key, from, 'smp', to, null, null, null, null, `smp${i}.example`);
    }
  }
}

/** Renders the participants' records (and stored lists) of `file` into `dir`, with a manifest. */
function renderRecords(file: Db, dir: string, ctxClass: typeof RenderContext = RenderContext): void {
  const sink = new DirectorySink(dir);
  const ctx = new ctxClass(file, nowMs, sink, SMALL_CHUNKS, jsonBody);
  const renderers = participantRenderers();
  for (const id of ['participants.detail', 'participants.events', 'participants.history']) renderers[id]!(ctx);
  writeManifest(sink, new Date(nowMs).toISOString());
  sink.close();
}

/** `dir` copied to a new directory in the layout of snapshots built before the record. */
function toLegacyLayout(dir: string): string {
  const to = tempDir('participant-pages-legacy-');
  fs.cpSync(dir, to, { recursive: true });
  for (const p of manifestPaths(dir)) {
    if (!/^v1\/participants\/[^/]+\.json$/.test(p)) continue;
    const rec = readStoredJson(path.join(dir, p)) as ParticipantRecord;
    fs.writeFileSync(path.join(to, p), jsonBody(rec.participant));
    for (const sub of SUBS) {
      if (rec[sub] === null) continue;
      const page = path.join(to, `${p.slice(0, -'.json'.length)}/${sub}.json`);
      fs.mkdirSync(path.dirname(page), { recursive: true });
      fs.writeFileSync(page, jsonBody(rec[sub]));
    }
  }
  return to;
}

/** Starts the built CLI's serve over `dir` on a free port (as test/e2e-serve.test.ts). */
async function startServe(dir: string): Promise<NonNullable<typeof server>> {
  const config = path.join(tempDir('pages-config-'), 'config.json');
  fs.writeFileSync(config, '{}\n');
  return startServeCli(['--config', config, '--out', dir, '--port', '0', '--rate-limit', 'off', '--access', 'open']);
}

beforeAll(async () => {
  const copy = copyOfSmallDemoDb();
  {
    const raw = copy.open();
    P.smpOnly = addSmpOnlyParticipants(raw);
    raw.close();
  }
  nowMs = Date.parse(smallDemo().now);
  out = snapshotTempDir('participant-pages-');
  runBuild({ config: testConfig(), dbPath: copy.path, outDir: out, nowMs });
  db = copy.open();
  baseUrl = snapshotInfo(out).base_url;

  const col = (sql: string): string[] => db.prepare(sql).pluck().all() as string[];
  P.all = col('SELECT pid FROM participant_list ORDER BY pid');
  P.noEvents = col('SELECT pid FROM participant_list l WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.participant_id = l.participant_id) ORDER BY pid');
  P.withEvents = col('SELECT pid FROM participant_list l WHERE EXISTS (SELECT 1 FROM events e WHERE e.participant_id = l.participant_id) ORDER BY pid');
  P.withHistory = col('SELECT pid FROM participant_list l WHERE EXISTS (SELECT 1 FROM participant_history h WHERE h.participant_id = l.participant_id) ORDER BY pid');

  const richPath = path.join(tempDir('participant-pages-db-'), 'rich.sqlite');
  db.exec(`VACUUM INTO '${richPath}'`);
  richDb = openDb(richPath);
  const quiet = P.noEvents.filter((id) => !P.smpOnly.includes(id));
  R.events = [quiet[0]!, quiet[1]!, quiet[2]!];
  R.history = [P.withHistory[3]!, P.withHistory[4]!, P.withHistory[5]!];
  SIZES.forEach((n, i) => {
    setItems(richDb, 'events', R.events[i]!, n);
    setItems(richDb, 'history', R.history[i]!, n);
  });
  rich = tempDir('participant-pages-rich-');
  renderRecords(richDb, rich);
  legacy = toLegacyLayout(rich);
  server = await startServe(out);
}, 240_000);

afterAll(async () => {
  if (server) {
    server.child.kill('SIGTERM');
    await server.done;
  }
  db?.close();
  richDb?.close();
});

/** Every path the snapshot's manifest lists. */
function manifestPaths(dir: string): Set<string> {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { shards: { path: string }[] };
  const out = new Set<string>();
  for (const s of m.shards) {
    for (const l of fs.readFileSync(path.join(dir, s.path), 'utf8').split('\n')) if (l !== '') out.add((JSON.parse(l) as { path: string }).path);
  }
  return out;
}

const target = (id: string, sub: Sub | null, q: Record<string, string | undefined> = {}): string => {
  const qs = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return `/v1/participants/${encodeURIComponent(id)}${sub === null ? '' : `/${sub}`}${qs === '' ? '' : `?${qs}`}`;
};

/** The composer's answer over a snapshot directory, finished as the shim finishes it; `reads` lists every file asked for. */
async function composed(dir: string, t: string): Promise<{ status: number; text: string; reads: string[] }> {
  const url = new URL(t, baseUrl);
  const m = matchRoute(url.pathname)!;
  const parsed = parseRequest(m.route, m.pathParams, url.searchParams, { now: nowMs });
  const reads: string[] = [];
  const read = async (p: string): Promise<Uint8Array | null> => {
    reads.push(p);
    try {
      return new Uint8Array(await fs.promises.readFile(path.join(dir, p)));
    } catch {
      return null;
    }
  };
  const stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 };
  const r = parsed.ok ? await compose(m.route, parsed.params, { read, nowMs, stats }) : paramErrorsOf(parsed.errors);
  const done = finishResult(r, { baseUrl, instance: url.pathname });
  return { status: done.status, text: jsonText(done.status === 200 ? done.body : done.problem), reads };
}

const oracleOf = (file: Db) => (t: string) => oracleAnswer(file, new URL(t, baseUrl), nowMs, baseUrl);

/** The keys of a participant's whole list, from the oracle (every list here holds at most 200 items). */
function keysOf(file: Db, id: string, sub: Sub): SortKey[] {
  const all = oracleOf(file)(target(id, sub, { limit: '200' }));
  if (all.status !== 200) return [];
  const body = JSON.parse(all.text) as { items: Array<Record<string, unknown>>; next_cursor: string | null };
  expect(body.next_cursor).toBeNull();
  return body.items.map((i) => sortKeyOf(orderOf(ROUTES[ROUTE_OF[sub]].list!, {}), i));
}

const cursorOf = (sub: Sub, id: string, key: SortKey): string => encodeCursor({ route: ROUTE_OF[sub], partition: [id], key, hint: '', dir: 'next' });

/** Items after `cursor` among the list's `keys` (newest first: descending time, then the last field). */
function afterKey(sub: Sub, keys: SortKey[], cursorKey: SortKey | undefined): number {
  if (cursorKey === undefined) return keys.length;
  const [t, last] = cursorKey as [number, string];
  // events: [observed_at desc, id desc]; history: [valid_from desc, fact asc]
  return keys.filter(([kt, kl]) => (kt as number) < t || (kt === t && (sub === 'events' ? (kl as string) < last : (kl as string) > last))).length;
}

/**
 * Checks one request over `dir` against the oracle of `file`, and what it read: the record first; the
 * record alone when the participant is unknown, the list empty, or the answer within the record's first
 * page; else the record and the participant's stored list.
 */
async function checkRequest(dir: string, file: Db, id: string, sub: Sub, keys: SortKey[], limit: number | undefined, cursorKey: SortKey | undefined): Promise<'record' | 'list' | 'unknown'> {
  const t = target(id, sub, { limit: limit === undefined ? undefined : String(limit), cursor: cursorKey === undefined ? undefined : cursorOf(sub, id, cursorKey) });
  const want = oracleOf(file)(t);
  const got = await composed(dir, t);
  expect(got.status, t).toBe(want.status);
  expect(got.text, t).toBe(want.text);
  expect(got.reads[0], t).toBe(recordPath(id));
  if (want.status === 404) {
    expect(got.reads, t).toEqual([recordPath(id)]);
    return 'unknown';
  }
  const first = keys.slice(0, LIMIT_DEFAULT);
  const inFirst = keys.length <= LIMIT_DEFAULT || afterKey(sub, first, cursorKey) >= (limit ?? LIMIT_DEFAULT);
  if (inFirst) {
    expect(got.reads, t).toEqual([recordPath(id)]);
    return 'record';
  }
  expect(got.reads[1], t).toBe(listRootPath(ROUTE_OF[sub], [id]));
  return 'list';
}

describe('one object per participant', () => {
  it('the build writes each participant its record and nothing else under v1/participants; no stored list in the demo', () => {
    const listed = manifestPaths(out);
    const under = [...listed].filter((p) => p.startsWith('v1/participants/'));
    expect(new Set(under)).toEqual(new Set(P.all.map(recordPath)));
    expect(under.length).toBe(P.all.length);
    // No participant of the demo has more than a page of events or history: no stored list either.
    expect(db.prepare('SELECT max(n) FROM (SELECT count(*) AS n FROM participant_history GROUP BY participant_id UNION ALL SELECT count(*) FROM events WHERE participant_id IS NOT NULL GROUP BY participant_id)').pluck().get()).toBeLessThanOrEqual(LIMIT_DEFAULT);
    expect([...listed].filter((p) => p.startsWith('i/participants.events/') || p.startsWith('i/participants.history/'))).toEqual([]);
    // Every record holds the oracle's three answers at default parameters; an empty list is null.
    const oracle = oracleOf(db);
    const seen = { nullEvents: 0, events: 0, nullHistory: 0 };
    for (const id of P.all) {
      const rec = readStoredJson(path.join(out, recordPath(id))) as ParticipantRecord;
      expect(Object.keys(rec)).toEqual(['participant', 'history', 'events']);
      expect(jsonText(rec.participant)).toBe(oracle(target(id, null)).text);
      for (const sub of SUBS) {
        const want = oracle(target(id, sub)).text;
        if (want === EMPTY_PAGE) expect(rec[sub], id).toBeNull();
        else expect(jsonText(rec[sub]), id).toBe(want);
      }
      if (rec.events === null) seen.nullEvents++;
      else seen.events++;
      if (rec.history === null) seen.nullHistory++;
    }
    expect(seen.nullEvents).toBe(P.noEvents.length);
    expect(seen.events).toBe(P.withEvents.length);
    expect(seen.nullHistory).toBe(P.all.length - P.withHistory.length);
    expect(seen.nullHistory).toBeGreaterThanOrEqual(P.smpOnly.length);
  });

  it('with lists of 50, 51 and 130 items: one record each, a stored list exactly for the lists longer than a page', () => {
    const listed = manifestPaths(rich);
    expect(new Set([...listed].filter((p) => p.startsWith('v1/participants/')))).toEqual(new Set(P.all.map(recordPath)));
    const lists = [...listed].filter((p) => p.startsWith('i/'));
    const want = SUBS.flatMap((sub) => R[sub].filter((_, i) => SIZES[i]! > LIMIT_DEFAULT).map((id) => listRootPath(ROUTE_OF[sub], [id])));
    expect(lists.sort()).toEqual(want.sort());
    // Objects per participant: its record, and the roots and chunks of the four lists over a page.
    const objects = [...listed].filter((p) => !p.startsWith('m/'));
    expect(objects.filter((p) => p.startsWith('c/')).length).toBeGreaterThanOrEqual(2 * 2 + 2 * 5); // chunks of at most 30 items
    expect(objects.length).toBe(P.all.length + lists.length + objects.filter((p) => p.startsWith('c/')).length);
    expect(objects.length / P.all.length).toBeLessThan(1.05);
  });

  it('verify accepts both snapshots', () => {
    expect(verifySnapshot(out).problems).toEqual([]);
    // `rich` holds the participants family alone: no seat files, no discovery documents.
    const about = (p: { path: string; message: string }): boolean => (p.path.startsWith('i/') || p.path.startsWith('v1/')) && !p.message.startsWith('names seat');
    expect(verifySnapshot(rich).problems.filter(about)).toEqual([]);
  });

  it('verify reports a stored list whose record has no first page, an empty page, a bad part and a page file of its own', () => {
    // Renderer bugs, simulated: one participant's record without the first page of its stored events
    // list, one with an empty history page instead of null, one whose detail is not a ParticipantView,
    // and one old-style page file besides a record.
    const withList = R.events[1]!; // 51 events: a stored list
    const untouched = P.withHistory.filter((id) => !R.events.includes(id) && !R.history.includes(id) && !P.withEvents.includes(id));
    const [emptied, broken] = [untouched[0]!, untouched[1]!];
    const stray = P.withEvents.find((id) => !R.history.includes(id))!;
    class Bugs extends RenderContext {
      override exact(segments: readonly string[], body: unknown): void {
        const id = segments[2]!;
        const rec = body as ParticipantRecord;
        if (id === withList) super.exact(segments, { ...rec, events: null });
        else if (id === emptied) super.exact(segments, { ...rec, history: { items: [], next_cursor: null } });
        else if (id === broken) super.exact(segments, { ...rec, participant: { ...rec.participant, registration: null } });
        else super.exact(segments, body);
        if (id === stray) super.exact([...segments, 'events'], rec.events);
      }
    }
    const dir = tempDir('participant-pages-broken-');
    renderRecords(richDb, dir, Bugs);
    const about = (p: { path: string; message: string }): boolean => (p.path.startsWith('i/') || p.path.startsWith('v1/')) && !p.message.startsWith('names seat');
    const problems = verifySnapshot(dir).problems.filter(about).map((p) => `${p.path}: ${p.message.replace(/:.*/, '')}`);
    expect(problems.sort()).toEqual(
      [
        `${listRootPath('participants.events', [withList])}: has no first page in ${recordPath(withList)} (events is null)`,
        `${recordPath(emptied)}: history is an empty page (an empty list is null)`,
        `${recordPath(broken)}: participant does not match ParticipantView`,
        `${exactFilePath(['v1', 'participants', stray, 'events'])}: a participant's first page is part of its record (${recordPath(stray)}), not a file of its own`,
      ].sort(),
    );
  });
});

describe('the shim answers detail, events and history from the record', () => {
  it('0, few, exactly 50 and more than 50 items, at limits around a page and cursors throughout: composer = oracle, byte for byte', async () => {
    const limits = [undefined, 1, 2, 7, 49, 50, 51, 100, 199, 200];
    const seen = { record: 0, list: 0, unknown: 0 };
    const cases: Array<[Sub, string]> = [
      ...SUBS.flatMap((sub) => R[sub].map((id): [Sub, string] => [sub, id])),
      ['events', P.smpOnly[1]!], // 0 items, a hashed path segment
      ['history', P.smpOnly[0]!], // 0 items
      ['events', P.noEvents[7]!], // 0 items
      ['events', P.withEvents[0]!], // few
      ['history', P.withHistory[0]!], // few
      ['history', R.events[2]!], // few (its events were set)
    ];
    for (const [sub, id] of cases) {
      const keys = keysOf(richDb, id, sub);
      const [t0] = (keys[0] ?? [nowMs, '']) as [number, string];
      const cursors: Array<SortKey | undefined> = [
        undefined,
        ...[0, 1, 24, 48, 49, 50, 51, 99, keys.length - 2, keys.length - 1].filter((i) => i >= 0 && i < keys.length).map((i) => keys[i]!),
        [t0 + 1, ''], // before every item
        [0, 'x'], // after every item
        [t0, sub === 'events' ? '~' : ''], // at the first instant, before its items
      ];
      for (const limit of limits) for (const c of cursors) seen[await checkRequest(rich, richDb, id, sub, keys, limit, c)]++;
    }
    for (const id of UNKNOWN) for (const sub of SUBS) seen[await checkRequest(rich, richDb, id, sub, [], 7, undefined)]++;
    // Both kinds of answer were exercised, the stored list for answers beyond the first page only.
    expect(seen.record).toBeGreaterThan(300);
    expect(seen.list).toBeGreaterThan(100);
    expect(seen.unknown).toBe(UNKNOWN.length * SUBS.length);
  });

  it('random participants of the build, limits and cursors: composer = oracle, the record read alone', async () => {
    const cursorArb = (sub: Sub, id: string, real: SortKey[]) =>
      fc.oneof(
        fc.tuple(
          fc.oneof(fc.integer({ min: Date.parse('2026-09-01T00:00:00Z'), max: Date.parse('2026-12-31T00:00:00Z') }), fc.maxSafeInteger(), fc.constant(Number.MIN_SAFE_INTEGER), fc.constant(0)),
          fc.oneof(fc.string(), fc.constantFrom('card', 'directory_presence', 'registration', 'smp', '', '\uffff')),
        ),
        ...(real.length > 0 ? [fc.constantFrom(...real)] : []),
      ) as fc.Arbitrary<SortKey>;
    const idArb = fc.oneof(
      { weight: 4, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.noEvents)) },
      { weight: 2, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.smpOnly)) },
      { weight: 3, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.withEvents)) },
      { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN) },
    );
    const seen = { record: 0, list: 0, unknown: 0, empty: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SUBS),
        idArb,
        fc.option(fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 60 })), { nil: undefined }),
        fc.boolean(),
        fc.nat(),
        async (sub, id, limit, withCursor, pick) => {
          const keys = keysOf(db, id, sub);
          const cursor = withCursor ? fc.sample(cursorArb(sub, id, keys), { numRuns: 1, seed: pick })[0] : undefined;
          const kind = await checkRequest(out, db, id, sub, keys, limit, cursor);
          seen[kind]++;
          if (kind === 'record' && keys.length === 0) seen.empty++;
        },
      ),
      { numRuns: 300 },
    );
    expect(seen.list).toBe(0); // no list of the demo exceeds a page
    expect(seen.empty).toBeGreaterThan(50);
    expect(seen.record - seen.empty).toBeGreaterThan(20);
    expect(seen.unknown).toBeGreaterThan(5);
  });

  it('the detail: the record\'s participant, one read; unknown: 404 from one read', async () => {
    for (const id of [...R.events, ...R.history, ...P.smpOnly, P.withEvents[0]!, ...UNKNOWN]) {
      const t = target(id, null);
      const want = oracleOf(richDb)(t);
      const got = await composed(rich, t);
      expect(got.status, t).toBe(want.status);
      expect(got.text, t).toBe(want.text);
      expect(got.reads, t).toEqual([recordPath(id)]);
    }
  });

  it('a snapshot built before the record (detail and pages in files of their own) is still answered as the oracle answers', async () => {
    // The shim is deployed before the first snapshot with records is published, so it must answer the
    // snapshot published until then.
    expect(fs.existsSync(path.join(legacy, exactFilePath(['v1', 'participants', R.events[0]!, 'events'])))).toBe(true);
    const oracle = oracleOf(richDb);
    let n = 0;
    for (const id of [...R.events, ...R.history, ...P.smpOnly, P.noEvents[3]!, P.withEvents[1]!, UNKNOWN[0]!]) {
      for (const t of [target(id, null), ...SUBS.flatMap((sub) => [target(id, sub), target(id, sub, { limit: '7' }), target(id, sub, { limit: '51' })])]) {
        const want = oracle(t);
        const got = await composed(legacy, t);
        expect(got.status, t).toBe(want.status);
        expect(got.text, t).toBe(want.text);
        n++;
      }
    }
    // Walks through the stored lists, after real cursors.
    for (const sub of SUBS) {
      const id = R[sub][2]!;
      let cursor: string | null = null;
      do {
        const t = target(id, sub, { limit: '13', cursor: cursor ?? undefined });
        const want = oracle(t);
        const got = await composed(legacy, t);
        expect(got.text, t).toBe(want.text);
        cursor = (JSON.parse(want.text) as { next_cursor: string | null }).next_cursor;
        n++;
      } while (cursor !== null);
    }
    expect(n).toBeGreaterThan(80);
  });

  it('over real HTTP (serve): the detail is the view, not the record; the empty page; 404 for an unknown id on all three routes', async () => {
    const quiet = P.noEvents.find((id) => !P.smpOnly.includes(id))!;
    const oracle = oracleOf(db);
    const get = async (t: string): Promise<{ status: number; type: string | null; text: string }> => {
      const r = await fetch(`${server!.url}${t}`);
      return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
    };
    const cases: Array<[string, number]> = [
      [target(quiet, null), 200],
      [target(P.withEvents[0]!, null), 200],
      [target(quiet, 'events'), 200],
      [target(quiet, 'events', { limit: '1' }), 200],
      [target(quiet, 'events', { limit: '200', cursor: cursorOf('events', quiet, [nowMs, 'x']) }), 200],
      [`/v1/participants/iso6523-actorid-upis::${quiet.replace('::', ':').toUpperCase()}/events`, 200],
      ...P.smpOnly.flatMap((id): Array<[string, number]> => [
        [target(id, null), 200],
        [target(id, 'events'), 200],
        [target(id, 'history', { limit: '7' }), 200],
      ]),
      [target(P.withEvents[0]!, 'events'), 200],
      [target(P.withHistory[0]!, 'history', { limit: '1' }), 200],
      ...UNKNOWN.flatMap((id): Array<[string, number]> => [
        [target(id, null), 404],
        [target(id, 'events'), 404],
        [target(id, 'history', { limit: '3' }), 404],
      ]),
      // A cursor of another participant's list is still a 400, an empty list or not.
      [target(quiet, 'events', { cursor: cursorOf('events', P.withEvents[0]!, [nowMs, 'x']) }), 400],
    ];
    for (const [t, status] of cases) {
      const got = await get(t);
      const want = oracle(t);
      expect(got.status, t).toBe(status);
      expect(want.status, t).toBe(status);
      expect(got.type, t).toBe(want.contentType);
      expect(got.text, t).toBe(want.text);
      if (status === 404) expect((JSON.parse(got.text) as { type: string }).type).toBe(`${baseUrl}/problems/participant-not-found`);
    }
    for (const id of [quiet, ...P.smpOnly]) {
      expect((await get(target(id, 'events'))).text).toBe(EMPTY_PAGE);
      // The detail answer is the record's participant, never the record's bytes.
      const rec = readStored(path.join(out, recordPath(id))).toString('utf8');
      const detail = (await get(target(id, null))).text;
      expect(detail).not.toBe(rec);
      expect(detail).toBe(jsonText((JSON.parse(rec) as ParticipantRecord).participant));
    }
  });
});
