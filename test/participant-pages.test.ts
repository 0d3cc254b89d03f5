// A participant's events and history pages when the list is empty (issue 12, "leaner snapshot"): the
// build writes no `v1/participants/<id>/events.json` (or `history.json`) for an empty list, and the shim
// answers such a request from the participant's detail file: the empty page exactly as the oracle gives
// it, for any limit and any valid cursor, and 404 for an unknown participant, reading at most two files.
//
// The small demo gets two extra participants seen only by an SMP lookup (no directory or SML
// observation): they have neither events nor history rows (the demo itself has no participant without
// history), one of them with an id long and non-ASCII enough for a hashed path segment.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/api/cursor.js';
import { jsonBody, jsonText } from '../src/api/json.js';
import type { SortKey } from '../src/api/keys.js';
import { exactFilePath, listRootPath } from '../src/api/paths.js';
import { finishResult, paramErrorsOf } from '../src/api/result.js';
import { matchRoute, orderOf, parseRequest, ROUTES, sortKeyOf } from '../src/api/routes.js';
import { defaultConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { PARTICIPANT_COMPOSERS } from '../src/edge/compose/participants.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { parseParticipantId } from '../src/feeds/ids.js';
import { runBuild } from '../src/render/build.js';
import { RenderContext } from '../src/render/context.js';
import { participantRenderers } from '../src/render/routes/participants.js';
import { DirectorySink } from '../src/render/sink.js';
import { writeManifest } from '../src/render/manifest.js';
import { verifySnapshot } from '../src/render/verify.js';
import { startServe as startServeCli, type Served } from './helpers/cli.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { oracleAnswer, snapshotInfo, snapshotTempDir } from './helpers/snapshot.js';

type Sub = 'events' | 'history';
const SUBS: readonly Sub[] = ['events', 'history'];
const ROUTE_OF = { events: 'participants.events', history: 'participants.history' } as const;
/** The empty page as the oracle serialises it (src/api/json.ts: a final newline). */
const EMPTY_PAGE = '{"items":[],"next_cursor":null}\n';
const UNKNOWN = ['0208::0000000097', '9915::no-such-participant', `0208::${'\u00e9'.repeat(150)}`];

let db: Db;
let out: string;
/** The participants family alone, with a stored list for every list of more than 1 item (all three shim paths). */
let small: string;
let nowMs: number;
let baseUrl: string;
let server: Served | null = null;
/** Participants by what their events / history hold. */
const P = { all: [] as string[], smpOnly: [] as string[], noEvents: [] as string[], withEvents: [] as string[], withHistory: [] as string[] };

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
  runBuild({ config: defaultConfig(), dbPath: copy.path, outDir: out, nowMs });
  db = copy.open();
  baseUrl = snapshotInfo(out).base_url;

  small = tempDir('participant-pages-lists-');
  const sink = new DirectorySink(small);
  const ctx = new RenderContext(db, nowMs, sink, { chunkMaxItems: 30, chunkMaxBytes: 16_384 }, jsonBody);
  const renderers = participantRenderers({ perParticipantListMin: 1 });
  for (const id of ['participants.detail', 'participants.events', 'participants.history']) renderers[id]!(ctx);
  sink.close();

  const col = (sql: string): string[] => db.prepare(sql).pluck().all() as string[];
  P.all = col('SELECT pid FROM participant_list ORDER BY pid');
  P.noEvents = col('SELECT pid FROM participant_list l WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.participant_id = l.participant_id) ORDER BY pid');
  P.withEvents = col('SELECT pid FROM participant_list l WHERE EXISTS (SELECT 1 FROM events e WHERE e.participant_id = l.participant_id) ORDER BY pid');
  P.withHistory = col('SELECT pid FROM participant_list l WHERE EXISTS (SELECT 1 FROM participant_history h WHERE h.participant_id = l.participant_id) ORDER BY pid');
  server = await startServe(out);
}, 240_000);

afterAll(async () => {
  if (server) {
    server.child.kill('SIGTERM');
    await server.done;
  }
  db?.close();
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

const target = (id: string, sub: Sub, q: Record<string, string | undefined> = {}): string => {
  const qs = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return `/v1/participants/${encodeURIComponent(id)}/${sub}${qs === '' ? '' : `?${qs}`}`;
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
  const stats: ReadStats = { files: 0, bytes: 0, chunks: 0 };
  const r = parsed.ok ? await PARTICIPANT_COMPOSERS[m.route.id]!(parsed.params as Record<string, unknown>, { read, nowMs, stats }) : paramErrorsOf(parsed.errors);
  const done = finishResult(r, { baseUrl, instance: url.pathname });
  return { status: done.status, text: jsonText(done.status === 200 ? done.body : done.problem), reads };
}

const oracle = (t: string) => oracleAnswer(db, new URL(t, baseUrl), nowMs, baseUrl);

describe('the build writes no page of an empty list', () => {
  it('an events / history file exists exactly for the participants whose list has items', () => {
    const listed = manifestPaths(out);
    expect(P.noEvents.length).toBeGreaterThan(P.withEvents.length); // most participants have no events
    expect(P.withEvents.length).toBeGreaterThan(0);
    for (const id of P.smpOnly) {
      expect(P.noEvents).toContain(id);
      expect(P.withHistory).not.toContain(id);
    }
    const want = { events: new Set(P.withEvents), history: new Set(P.withHistory) };
    for (const sub of SUBS) {
      for (const id of P.all) {
        const file = exactFilePath(['v1', 'participants', id, sub]);
        expect(listed.has(exactFilePath(['v1', 'participants', id])), id).toBe(true);
        expect(listed.has(file), file).toBe(want[sub].has(id));
        expect(fs.existsSync(path.join(out, file)), file).toBe(want[sub].has(id));
      }
      // No other page of this kind (nothing named otherwise, no empty page left).
      const pages = [...listed].filter((p) => p.startsWith('v1/participants/') && p.endsWith(`/${sub}.json`));
      expect(pages.length).toBe(want[sub].size);
      for (const p of pages) expect(fs.readFileSync(path.join(out, p), 'utf8')).not.toBe(EMPTY_PAGE);
    }
  });

  it('verify accepts the snapshot', () => {
    expect(verifySnapshot(out).problems).toEqual([]);
  });

  it('verify reports a page whose participant has no detail file, and a stored list without its first page', () => {
    // The shim answers a participant without a first page from its detail file, and reads a stored
    // list only after the first page. A render that drops one participant's detail file and another's
    // first page of a stored list (renderer bugs, simulated), with a manifest of its own: verify names
    // both, and nothing else about participants.
    const withList = P.withEvents.find((p) => fs.existsSync(path.join(small, listRootPath('participants.events', [p]))))!;
    const orphan = P.withEvents.find((p) => p !== withList)!;
    expect(withList).toBeDefined();
    const dropped = [['v1', 'participants', withList, 'events'], ['v1', 'participants', orphan]].map((segs) => segs.join('\u0000'));
    class DropFiles extends RenderContext {
      override exact(segments: readonly string[], body: unknown): void {
        if (!dropped.includes(segments.join('\u0000'))) super.exact(segments, body);
      }
    }
    const broken = tempDir('participant-pages-broken-');
    const sink = new DirectorySink(broken);
    const ctx = new DropFiles(db, nowMs, sink, { chunkMaxItems: 30, chunkMaxBytes: 16_384 }, jsonBody);
    const renderers = participantRenderers({ perParticipantListMin: 1 });
    for (const r of ['participants.detail', 'participants.events']) renderers[r]!(ctx);
    writeManifest(sink, new Date(nowMs).toISOString());
    sink.close();
    // (The render has no seat files or discovery documents: those problems are not looked at.)
    const about = (p: { path: string; message: string }): boolean => (p.path.startsWith('i/participants.events/') || p.path.startsWith('v1/participants/')) && !p.message.startsWith('names seat');
    const problems = verifySnapshot(broken).problems.filter(about).map((p) => `${p.path}: ${p.message}`);
    expect(problems.sort()).toEqual(
      [
        `${listRootPath('participants.events', [withList])}: has no first page ${exactFilePath(['v1', 'participants', withList, 'events'])}`,
        `${exactFilePath(['v1', 'participants', orphan, 'events'])}: belongs to a participant without a detail file (${exactFilePath(['v1', 'participants', orphan])})`,
      ].sort(),
    );
  });
});

describe('the shim answers an empty list from the participant detail', () => {
  /** A cursor of `id`'s list at an arbitrary position (any valid cursor: the oracle accepts every key). */
  const cursorArb = (sub: Sub, id: string, real: SortKey[]) =>
    fc.oneof(
      fc.tuple(
        fc.oneof(fc.integer({ min: Date.parse('2026-09-01T00:00:00Z'), max: Date.parse('2026-12-31T00:00:00Z') }), fc.maxSafeInteger(), fc.constant(Number.MIN_SAFE_INTEGER), fc.constant(0)),
        fc.oneof(fc.string(), fc.constantFrom('card', 'directory_presence', 'registration', 'smp', '', '\uffff')),
      ),
      ...(real.length > 0 ? [fc.constantFrom(...real)] : []),
    ).map((key) => encodeCursor({ route: ROUTE_OF[sub], partition: [id], key, hint: '', dir: 'next' }));

  const idArb = fc.oneof(
    { weight: 4, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.noEvents)) },
    { weight: 2, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.smpOnly)) },
    { weight: 3, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...P.withEvents)) },
    { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN) },
  );

  it('random participants (many without events), limits and cursors: composer = oracle, byte for byte', async () => {
    const seen = { empty: 0, items: 0, unknown: 0, cursor: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...SUBS),
        idArb,
        fc.option(fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: -3, max: 400 })), { nil: undefined }),
        fc.boolean(),
        fc.nat(),
        async (sub, id, limit, withCursor, pick) => {
          const order = orderOf(ROUTES[ROUTE_OF[sub]].list!, {});
          const all = oracle(target(id, sub, { limit: '200' }));
          const real = all.status === 200 ? (JSON.parse(all.text) as { items: Array<Record<string, unknown>> }).items.map((i) => sortKeyOf(order, i)) : [];
          const cursor = withCursor ? fc.sample(cursorArb(sub, id, real), { numRuns: 1, seed: pick })[0] : undefined;
          const t = target(id, sub, { limit: limit === undefined ? undefined : String(limit), cursor });
          const want = oracle(t);
          for (const dir of [out, small]) {
            const got = await composed(dir, t);
            expect(got.status, t).toBe(want.status);
            expect(got.text, t).toBe(want.text);
            const page = got.status === 200 && real.length === 0;
            if (page || got.status === 404) {
              // An empty list or an unknown participant: its (absent) page and its detail file, no more.
              expect(got.reads, t).toEqual([exactFilePath(['v1', 'participants', id, sub]), exactFilePath(['v1', 'participants', id])]);
            }
          }
          if (want.status === 200 && real.length === 0) {
            expect(want.text).toBe(EMPTY_PAGE);
            seen.empty++;
          } else if (want.status === 200) seen.items++;
          else if (want.status === 404) seen.unknown++;
          if (cursor !== undefined && want.status === 200) seen.cursor++;
        },
      ),
      { numRuns: 300 },
    );
    // Every kind of answer was exercised.
    expect(seen.empty).toBeGreaterThan(50);
    expect(seen.items).toBeGreaterThan(20);
    expect(seen.unknown).toBeGreaterThan(5);
    expect(seen.cursor).toBeGreaterThan(50);
  });

  it('over real HTTP (serve): 200 with the empty page for a participant without events, 404 for an unknown id', async () => {
    const quiet = P.noEvents.find((id) => !P.smpOnly.includes(id))!;
    const get = async (t: string): Promise<{ status: number; type: string | null; text: string }> => {
      const r = await fetch(`${server!.url}${t}`);
      return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
    };
    const cases: Array<[string, number]> = [
      [target(quiet, 'events'), 200],
      [target(quiet, 'events', { limit: '1' }), 200],
      [target(quiet, 'events', { limit: '200', cursor: encodeCursor({ route: 'participants.events', partition: [quiet], key: [nowMs, 'x'], hint: '', dir: 'next' }) }), 200],
      [`/v1/participants/iso6523-actorid-upis::${quiet.replace('::', ':').toUpperCase()}/events`, 200],
      ...P.smpOnly.flatMap((id): Array<[string, number]> => [
        [target(id, 'events'), 200],
        [target(id, 'history', { limit: '7' }), 200],
      ]),
      [target(P.withEvents[0]!, 'events'), 200],
      ...UNKNOWN.flatMap((id): Array<[string, number]> => [
        [target(id, 'events'), 404],
        [target(id, 'history', { limit: '3' }), 404],
      ]),
      // A cursor of another participant's list is still a 400, an empty list or not.
      [target(quiet, 'events', { cursor: encodeCursor({ route: 'participants.events', partition: [P.withEvents[0]!], key: [nowMs, 'x'], hint: '', dir: 'next' }) }), 400],
    ];
    for (const [t, status] of cases) {
      const got = await get(t);
      const want = oracle(t);
      expect(got.status, t).toBe(status);
      expect(want.status, t).toBe(status);
      expect(got.type, t).toBe(want.contentType);
      expect(got.text, t).toBe(want.text);
      if (status === 200 && !t.includes(encodeURIComponent(P.withEvents[0]!))) expect(got.text, t).toBe(EMPTY_PAGE);
      if (status === 404) expect((JSON.parse(got.text) as { type: string }).type).toBe(`${baseUrl}/problems/participant-not-found`);
    }
    expect(fs.existsSync(path.join(out, exactFilePath(['v1', 'participants', quiet, 'events'])))).toBe(false);
  });
});
