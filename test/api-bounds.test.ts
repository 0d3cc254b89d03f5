// Limits (docs/api.md "Limits"): no single request can make an answer, or the work behind it, grow with
// a request parameter. For every route of the route table, worst-case requests are constructed over a
// snapshot built from the small demo with the default configuration and answered through the shim
// (the resolver; the handler for /health* and /openapi.json), every file it asks for counted, absent ones included, with
// its bytes, and for the data routes by the oracle too (the same bytes). Each answer must stay within
// its route's bound in BOUNDS, which docs/api.md repeats word for word: the API's cap on what the
// answer holds, the body's bytes as a formula over what it holds (items, days, hosts, payload bytes …),
// and the files and bytes read. A route of the table without a bound fails the test.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anomalyCursor, eventCursor, eventPlan } from '../src/api/events/feed.js';
import { LIMIT_MAX, addDays, utcDay } from '../src/api/params.js';
import { MAIN_LIST_SORTS, POSTING_VALUES_MAX, SEARCH_TRIGRAMS_MAX } from '../src/api/participants/plan.js';
import { CUBE_PATH } from '../src/api/participants/facets.js';
import { HTML_CONTENT_TYPE } from '../src/api/json.js';
import { listRootPath } from '../src/api/paths.js';
import { recordPackOf } from '../src/api/participants/record.js';
import { PROBLEM_NAMES } from '../src/api/problems.js';
import { matchRoute } from '../src/api/routes/match.js';
import { CHURN_WINDOW_MAX_DAYS, ROUTE_LIST, ROUTES, type RouteId } from '../src/api/routes/table.js';
import { CHURN_PARTICIPANTS_MAX, RESOURCE_SCHEMAS } from '../src/api/schemas/index.js';
import { defaultConfig } from '../src/config/index.js';
import type { Db } from '../src/db/index.js';
import { createHandler } from '../src/edge/handler.js';
import { createResolve, snapshotInfoReader } from '../src/edge/resolve.js';
import { MAX_TARGET_BYTES } from '../src/edge/target.js';
import type { IndexEntry, IndexNode, ListRoot } from '../src/edge/list-format.js';
import type { FileReader } from '../src/edge/types.js';
import { builtSmallDemo, copyOfDb, smallDemo } from './helpers/demo-fixture.js';
import { oracleAnswer, snapshotInfo } from './helpers/snapshot.js';
import { readStoredJson } from '../src/render/stored.js';

type Json = Record<string, unknown>;
const KIB = 1024;
/** render.chunk_max_bytes of the default configuration: no chunk is larger; an index node (128 entries) is smaller. */
const LIST_FILE_MAX = 64 * KIB;

/**
 * How big one route's answers can get. Each bound is written twice: as text (the "Limits" table of
 * docs/api.md repeats it word for word, which a test below checks) and as a function over the answer
 * (what it holds: items, days, hosts, payload bytes …, decided by the API's caps or by the data).
 */
interface Bound {
  /** The API's own cap on what the answer holds (`limit`, 500 rows, 400 days): checked on every answer. */
  cap?: { text: string; count: (b: Json) => number; max: number };
  /** Body bytes. */
  body: string;
  bodyMax: (b: Json) => number;
  /** Files one answer asks the snapshot for (absent ones included) and bytes read (`target`: the request). */
  reads: string;
  files: (b: Json, target: string) => number;
  bytes: (b: Json, target: string) => number;
}

// Answers are JSON validated against their schemas first: arrays of objects and objects, read for counts.
const arr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' ? (v as Json) : {});
const items = (b: Json): Json[] => arr(b.items);
const sum = (xs: readonly Json[], f: (x: Json) => number): number => xs.reduce((n, x) => n + f(x), 0);
/** Bytes of a free-form value as JSON (payloads, evidence). */
const size = (v: unknown): number => new TextEncoder().encode(JSON.stringify(v ?? null)).length;
/** Chunks holding `bytes` of consecutive items: every chunk but the last holds at least a quarter of 64 KiB, and a range may start inside one. */
const chunksFor = (bytes: number): number => Math.ceil(bytes / (LIST_FILE_MAX / 4)) + 2;
/** A route answered by one exact file, the answer itself: one file read, its bytes the body's. */
const exact = (body: string, bodyMax: (b: Json) => number): Bound => ({ body, bodyMax, reads: '1 file (the answer)', files: fixed(1), bytes: bodyMax });
const fixed = (n: number) => (): number => n;
const lim = (max: number, text = '`limit`'): Bound['cap'] => ({ text: `items ≤ ${text}`, count: (b) => items(b).length, max });
const incidentBytes = (i: Json): number => 400 + 70 * arr(i.timeline).length;
/**
 * A walk that skips the chunks its filter's counts rule out reads only chunks holding a match, at most
 * `limit` + 2 (the one of the cursor, then one per match, and the one telling whether more follow),
 * each with the index node above it when the list has one index level: 2 × (`limit` + 2) + 1 files.
 */
const SKIP_WALK_FILES = 2 * (LIMIT_MAX + 2) + 1;
const INCIDENT_READS = '≤ 2 × (`limit` + 2) + 1 files: root, `limit` + 2 chunks and one index node above each (a `status` page reads only chunks holding a match)';
const anomalyBytes = (a: Json): number => 1_000 + size(a.target) + size(a.evidence) + 30 * arr(a.event_refs).length;

/** The files of a stored list: its root, index nodes and chunks (1, the absent root, when there is none). */
function listFiles(rootPath: string): number {
  const file = path.join(out, rootPath);
  if (!fs.existsSync(file)) return 1;
  const below = (level: number, entries: ReadonlyArray<{ path: string }>): number =>
    level === 0 ? entries.length : entries.reduce((n, e) => n + 1 + below(level - 1, (readStoredJson(path.join(out, e.path)) as IndexNode).entries), 0);
  const root = readStoredJson(file) as ListRoot;
  return 1 + below(root.level, root.entries);
}
const EVENT_READS =
  '≤ 21 files when every event of the list read matches: the page (root, ≤ 4 index nodes, 3 chunks); meta (the feed root, 4 index nodes and a chunk at each of since and until; a histogram root, ≤ 3 index nodes, 2 chunks). A `type` left to match (two or more types, or `type` with an entity) reads only chunks holding a wanted type: the page (root, ≤ `limit` + 5 chunks and one index node above each) and meta. A `seat` or `host` left to match (`seat` with `host`, `participant` with either) reads its list to the page\'s end (meta counts in the same list; a file is read once per request): ≤ 13 + the list\'s files';
/**
 * Files one event page reads (EVENT_READS), by what is left to match on the list it reads (eventPlan):
 * nothing, 21; only the type, meta's 13 and the page's root and `limit` + 5 chunks with an index node
 * above each; a seat or host, meta's 13 and the list's files (the shim reads a file once per request).
 */
function eventFiles(target: string): number {
  const p = new URL(target, 'http://bounds.test').searchParams;
  const plan = eventPlan({ types: p.get('type')?.split(','), host: p.get('host') ?? undefined, seat: p.get('seat') ?? undefined, participant: p.get('participant') ?? undefined });
  if (plan.seat !== undefined || plan.host !== undefined) return 13 + listFiles(listRootPath('events.list', plan.partition));
  if (plan.types !== null) return 14 + 2 * (LIMIT_MAX + 5);
  return 21;
}

const PARTICIPANT_BODY = '1,500 + 500 × (endpoints + seats)';
const participantBytes = (b: Json): number => 1_500 + 500 * (arr(b.endpoints).length + arr(b.seats).length);
const eventPageBytes = (b: Json): number => 300 + sum(items(b), (e) => 250 + size(e.payload));
const historyPageBytes = (b: Json): number => 300 + sum(items(b), (h) => 200 + size(h.detail));
/**
 * A participant's record (docs/snapshot-format.md "Participants"): the bounds of its three parts, the
 * detail and the first pages (limit 50) of its events and history as the oracle answers them, and 100 B
 * for the members' names.
 */
function oneRecordBytes(id: string): number {
  const body = (path: string): Json | null => {
    const a = oracleAnswer(db, new URL(`/v1/participants/${encodeURIComponent(id)}${path}`, 'http://bounds.test'), nowMs, baseUrl);
    return a.status === 200 ? (JSON.parse(a.text) as Json) : null;
  };
  const view = body('');
  if (view === null) return 0; // unknown: no record
  return participantBytes(view) + eventPageBytes(body('/events')!) + historyPageBytes(body('/history')!) + 100;
}

/**
 * The record pack of the target's participant, the file the three routes of one participant read
 * first: the records of every participant whose id hashes to it, and 100 B for the pack's own members.
 */
function recordBytes(target: string): number {
  const id = decodeURIComponent(new URL(target, 'http://bounds.test').pathname.split('/')[3]!);
  const pack = recordPackOf(id);
  const ids = (db.prepare('SELECT pid FROM participant_list').pluck().all() as string[]).filter((p) => recordPackOf(p) === pack);
  return ids.reduce((n, p) => n + oneRecordBytes(p), 100);
}

/** The facet buckets of a body's `facets` (ListMeta, ParticipantStats): 40 B each besides its value and label. */
const facetBytes = (b: Json): number =>
  Object.values(obj(b.facets)).reduce<number>((n, list) => n + sum(arr(list), (x) => 40 + size(x.value) + size(x.label ?? '')), 0);
/** The facet cube (src/api/participants/facets.ts), read by the list's first pages; a page reads it or at most 8 facet vectors, each smaller. */
const cubeBytes = (): number => fs.statSync(path.join(out, CUBE_PATH)).size;
/** The most a participant list walk reads: every index node and chunk of the largest source list (a main list), as files and bytes. */
function walkFiles(): { files: number; bytes: number } {
  let most = { files: 0, bytes: 0 };
  for (const sort of MAIN_LIST_SORTS) {
    const all = { files: 0, bytes: 0 };
    const visit = (entries: IndexEntry[]): void => {
      for (const e of entries) {
        if (e.path === '') continue; // the root's inline head
        const abs = path.join(out, e.path);
        all.files++;
        all.bytes += fs.statSync(abs).size;
        const node = readStoredJson(abs) as Partial<IndexNode>;
        if (node.entries !== undefined) visit(node.entries);
      }
    };
    visit((readStoredJson(path.join(out, listRootPath('participants.list', [sort]))) as ListRoot).entries);
    if (all.bytes > most.bytes) most = all;
  }
  return most;
}

const BOUNDS: Record<RouteId, Bound> = {
  health: { body: '100 B', bodyMax: fixed(100), reads: 'none', files: fixed(0), bytes: fixed(0) },
  'health.db': { body: '200 B', bodyMax: fixed(200), reads: '1 file, its first 4 KiB (manifest.json)', files: fixed(1), bytes: fixed(4 * KIB) },
  network: exact('300 B', fixed(300)),
  'hosts.list': exact('300 + 1,000 × hosts', (b) => 300 + 1_000 * items(b).length),
  'hosts.detail': {
    body: '2,000 + 60 × IPs',
    bodyMax: (b) => 2_000 + 60 * arr(obj(b.network).ips).length,
    reads: '≤ 5 files: the current view, the state list (root, 2 index nodes, 1 chunk)',
    files: fixed(5),
    bytes: (b) => 2 * (2_000 + 60 * arr(obj(b.network).ips).length) + 4 * LIST_FILE_MAX,
  },
  'hosts.incidents': {
    cap: lim(LIMIT_MAX),
    body: '300 + Σ incidents (400 + 70 × timeline steps)',
    bodyMax: (b) => 300 + sum(items(b), incidentBytes),
    reads: INCIDENT_READS,
    files: fixed(SKIP_WALK_FILES),
    bytes: fixed(SKIP_WALK_FILES * LIST_FILE_MAX),
  },
  'hosts.uptime': {
    cap: lim(LIMIT_MAX),
    body: '300 + 450 × buckets',
    bodyMax: (b) => 300 + 450 * items(b).length,
    reads: '≤ 8 files: root, ≤ 4 index nodes, 3 chunks; with `location`, root and ≤ 6 chunks (an unknown location: the root)',
    files: fixed(8),
    bytes: fixed(8 * LIST_FILE_MAX),
  },
  'incidents.list': {
    cap: lim(LIMIT_MAX),
    body: '300 + Σ incidents (400 + 70 × timeline steps)',
    bodyMax: (b) => 300 + sum(items(b), incidentBytes),
    reads: 'as the incidents of one host',
    files: fixed(SKIP_WALK_FILES),
    bytes: fixed(SKIP_WALK_FILES * LIST_FILE_MAX),
  },
  'participants.list': {
    cap: lim(LIMIT_MAX),
    body: '2,000 + Σ facet buckets (40 + bytes of value and label) + 700 × items',
    bodyMax: (b) => 2_000 + facetBytes(obj(b.meta)) + 700 * items(b).length,
    reads: `≤ 50 files besides a walk's: the main root; ≤ ${POSTING_VALUES_MAX} posting roots each of smp and ap; a name search's trigram table and its rarest trigram's root (≤ ${SEARCH_TRIGRAMS_MAX} trigram roots without the table); a small set (≤ ${POSTING_VALUES_MAX} roots, ≤ 16 chunks) or an identifier lookup (≤ 4 index nodes, 3 chunks); on a first page the facet cube, or the facet vectors of a one-dimension filter; a walk reads the chunks and index nodes from the cursor to the match after the page, at most its whole source list, or a sparse combination its runs of the cell list`,
    files: () => 1 + 2 * POSTING_VALUES_MAX + SEARCH_TRIGRAMS_MAX + 3 * POSTING_VALUES_MAX + 1 + walkFiles().files,
    bytes: () => (2 * POSTING_VALUES_MAX + SEARCH_TRIGRAMS_MAX + 3 * POSTING_VALUES_MAX + 1) * LIST_FILE_MAX + cubeBytes() + walkFiles().bytes,
  },
  'participants.detail': {
    body: PARTICIPANT_BODY,
    bodyMax: participantBytes,
    reads: "1 file: the participant's record pack (the records of the participants whose id hashes to it: the answer and the first pages of its events and history); an unknown participant whose pack is absent, 2 (the pack, then its own path, of snapshots before record packs)",
    files: fixed(2),
    bytes: (_b, target) => recordBytes(target),
  },
  'participants.events': {
    cap: lim(LIMIT_MAX),
    body: '300 + Σ events (250 + payload bytes)',
    bodyMax: eventPageBytes,
    reads: "≤ 9 files: the participant's record pack, then the stored list (root, ≤ 4 index nodes, 3 chunks)",
    files: fixed(9),
    bytes: (_b, target) => recordBytes(target) + 8 * LIST_FILE_MAX,
  },
  'participants.history': {
    cap: lim(LIMIT_MAX),
    body: '300 + Σ rows (200 + detail bytes)',
    bodyMax: historyPageBytes,
    reads: '≤ 9 files, as the events',
    files: fixed(9),
    bytes: (_b, target) => recordBytes(target) + 8 * LIST_FILE_MAX,
  },
  'stats.participants': exact('200 + Σ facet buckets (40 + bytes of value and label)', (b) => 200 + facetBytes(b)),
  'providers.list': exact('200 + Σ providers (500 + 80 × hostnames)', (b) => 200 + sum(items(b), (p) => 500 + 80 * arr(p.hostnames).length)),
  'providers.detail': exact('600 + Σ seats (100 + 150 × hosts)', (b) => 600 + sum(arr(b.seats), (s) => 100 + 150 * arr(s.hosts).length)),
  'aps.list': exact('200 + Σ providers (250 + 15 × seats)', (b) => 200 + sum(items(b), (a) => 250 + 15 * arr(a.seats).length)),
  'aps.detail': exact('500 + 250 × seats + 40 × mix buckets', (b) => 500 + 250 * arr(b.seats).length + 40 * (arr(b.country_mix).length + arr(b.scheme_mix).length)),
  'aps.churn': {
    cap: { text: `series ≤ ${CHURN_WINDOW_MAX_DAYS} days`, count: (b) => arr(b.series).length, max: CHURN_WINDOW_MAX_DAYS },
    body: '300 + 100 × days + 150 × counterparts',
    bodyMax: (b) => 300 + 100 * arr(b.series).length + 150 * arr(b.counterparts).length,
    reads: '≤ 6 files and the chunks of ≤ 400 day rows (≤ 100 + 120 × counterparts bytes each): the AP (aps.detail file), root, ≤ 4 index nodes',
    files: (b) => 6 + chunksFor(CHURN_WINDOW_MAX_DAYS * (100 + 120 * arr(b.counterparts).length)),
    bytes: (b) => 20_000 + (5 + chunksFor(CHURN_WINDOW_MAX_DAYS * (100 + 120 * arr(b.counterparts).length))) * LIST_FILE_MAX,
  },
  'aps.churn_participants': {
    cap: lim(CHURN_PARTICIPANTS_MAX, String(CHURN_PARTICIPANTS_MAX)),
    body: '200 + 250 × rows',
    bodyMax: (b) => 200 + 250 * items(b).length,
    reads: '≤ 18 files: the AP (aps.detail file), root, ≤ 4 index nodes, the chunks of ≤ 501 rows (≤ 300 B each)',
    files: fixed(6 + chunksFor(501 * 300)),
    bytes: fixed(20_000 + (5 + chunksFor(501 * 300)) * LIST_FILE_MAX),
  },
  'seats.detail': exact('500 + 150 × hosts', (b) => 500 + 150 * arr(b.hosts).length),
  'events.list': {
    cap: lim(LIMIT_MAX),
    body: '3,000 + Σ events (350 + payload bytes + 80 × anomalies) + 60 × chart buckets',
    bodyMax: (b) => 3_000 + sum(items(b), (e) => 350 + size(e.payload) + 80 * arr(e.anomalies).length) + 60 * arr(obj(b.meta).chart_data).length,
    reads: EVENT_READS,
    files: (_b, target) => eventFiles(target),
    bytes: (_b, target) => eventFiles(target) * LIST_FILE_MAX,
  },
  'anomalies.list': {
    cap: lim(LIMIT_MAX),
    body: '300 + Σ anomalies (1,000 + target and evidence bytes + 30 × event refs)',
    bodyMax: (b) => 300 + sum(items(b), anomalyBytes),
    reads: "as the incidents (any filters: only chunks holding a match, by the index's counts of each combination of `detector`, `grade` and `acknowledged`, and of `seat` with it on a host's list)",
    files: fixed(SKIP_WALK_FILES),
    bytes: fixed(SKIP_WALK_FILES * LIST_FILE_MAX),
  },
  'anomalies.detail': exact('1,000 + target and evidence bytes + 30 × event refs', anomalyBytes),
  sml: exact(
    '200 + Σ zones (800 + 350 × canaries + Σ incidents (400 + 70 × timeline steps))',
    (b) => 200 + sum(arr(b.zones), (z) => 800 + 350 * arr(z.canary).length + sum(arr(z.incidents), incidentBytes)),
  ),
  'discovery.openapi': {
    body: '256 KiB (generated from the route table, no data)',
    bodyMax: fixed(256 * KIB),
    reads: '1 file (the stored openapi.json, for its component schemas)',
    files: fixed(1),
    bytes: fixed(256 * KIB),
  },
  'discovery.api_catalog': exact('1 KiB', fixed(KIB)),
  'discovery.problem_type': { body: '2 KiB', bodyMax: fixed(2 * KIB), reads: 'none', files: fixed(0), bytes: fixed(0) },
};

// ---------------------------------------------------------------------------------------------

let db: Db;
let out: string;
let nowMs: number;
let baseUrl: string;
const measured = new Map<string, { body: number; bodyMax: number; files: number; bytes: number; target: string; filesTarget: string }>();

beforeAll(async () => {
  // The small demo built once per run (test/helpers/demo-fixture.ts), read in place; its database copied.
  const built = await builtSmallDemo();
  nowMs = Date.parse(smallDemo().now);
  out = built.out;
  db = copyOfDb(built.db).open();
  baseUrl = snapshotInfo(out).base_url;
}, 240_000);

afterAll(() => {
  db?.close();
  const rows = [...measured].map(([id, m]) => `${id}: body ${m.body} B (bound ${m.bodyMax}) ${m.target} | ${m.files} files ${m.filesTarget} | ${m.bytes} B read`);
  console.log(`api-bounds: the largest answer per route on the small demo\n${rows.join('\n')}`);
});

/** A reader over the snapshot that counts every file asked for (absent ones too) and the bytes returned. */
function countingReader(): { files: FileReader; stats: { files: number; bytes: number } } {
  const stats = { files: 0, bytes: 0 };
  const read = async (p: string): Promise<Uint8Array | null> => {
    stats.files++;
    try {
      const b = new Uint8Array(await fs.promises.readFile(path.join(out, p)));
      stats.bytes += b.length;
      return b;
    } catch {
      return null;
    }
  };
  return {
    stats,
    files: {
      read,
      async readPrefix(p: string, length: number) {
        const b = await read(p);
        if (b === null) return null;
        stats.bytes -= b.length - Math.min(length, b.length);
        return b.subarray(0, length);
      },
    },
  };
}

// better-sqlite3 rows are untyped: the column each query below selects.
const col = <T = string>(sql: string, ...args: unknown[]): T[] => db.prepare(sql).pluck().all(...args) as T[];
const row = (sql: string): [number, string] => db.prepare(sql).raw().get() as [number, string];

interface Answered {
  status: number;
  text: string;
  /** The answer as its schema sees it: the parsed JSON, or the text of an HTML page. */
  value: unknown;
  body: Json;
  files: number;
  bytes: number;
}

/** The paths the HTTP layer answers itself (src/edge/handler.ts), not the resolver. */
const HANDLER_PATHS = ['/health', '/health/db', '/openapi.json'];

/**
 * One request through the shim (the handler for HANDLER_PATHS, else the resolver) with the snapshot info
 * read beforehand (a cached read of the shim, not the answer's), compared with the oracle for data routes.
 */
async function answer(target: string): Promise<Answered> {
  expect(new TextEncoder().encode(target).length, `${target.slice(0, 80)}: longer than the edge accepts`).toBeLessThanOrEqual(MAX_TARGET_BYTES);
  const url = new URL(target, 'http://bounds.test');
  const { files, stats } = countingReader();
  const info = snapshotInfoReader();
  await info(files);
  stats.files = 0;
  stats.bytes = 0;
  let status: number;
  let text: string;
  let contentType: string | null;
  if (HANDLER_PATHS.includes(url.pathname)) {
    const handler = createHandler({
      files,
      resolve: createResolve({ snapshotInfo: info }),
      problemBaseUrl: async (f) => (await info(f))?.base_url ?? null,
      policy: { ...defaultConfig().edge, rate_limit: 'off' },
      now: () => nowMs,
      healthMaxAgeSeconds: 1e9,
    });
    const res = await handler(new Request(url), '127.0.0.1');
    status = res.status;
    text = await res.text();
    contentType = res.headers.get('content-type');
  } else {
    const res = await createResolve({ snapshotInfo: info })({ url, routeId: null }, files);
    status = res.status;
    text = new TextDecoder().decode(res.body);
    contentType = res.contentType;
    const route = matchRoute(url.pathname)?.route;
    if (route && !route.id.startsWith('discovery.')) {
      const want = oracleAnswer(db, url, nowMs, baseUrl);
      expect(status, target).toBe(want.status);
      expect(text, target).toBe(want.text);
    }
  }
  // Every answer but a problem type page is a JSON object (a resource or a problem).
  const value: unknown = contentType === HTML_CONTENT_TYPE ? text : JSON.parse(text);
  return { status, text, value, body: obj(value), files: stats.files, bytes: stats.bytes };
}

/** Answers the targets, checks each against the route's bound, and records the largest. */
async function check(id: RouteId, targets: readonly string[]): Promise<void> {
  const b = BOUNDS[id];
  expect(targets.length, `route ${id}: no worst-case requests`).toBeGreaterThan(0);
  let ok = 0;
  for (const target of targets) {
    const a = await answer(target);
    if (a.status !== 200) continue;
    ok++;
    const schema = RESOURCE_SCHEMAS[ROUTES[id].response];
    expect(schema.safeParse(a.value).success, `${target}: a valid ${ROUTES[id].response}`).toBe(true);
    const bytes = new TextEncoder().encode(a.text).length;
    if (b.cap) expect(b.cap.count(a.body), `${target}: ${b.cap.text}`).toBeLessThanOrEqual(b.cap.max);
    expect(bytes, `${target}: body`).toBeLessThanOrEqual(b.bodyMax(a.body));
    expect(a.files, `${target}: files read`).toBeLessThanOrEqual(b.files(a.body, target));
    expect(a.bytes, `${target}: bytes read`).toBeLessThanOrEqual(b.bytes(a.body, target));
    const m = measured.get(id) ?? { body: 0, bodyMax: 0, files: 0, bytes: 0, target: '', filesTarget: '' };
    if (bytes > m.body) Object.assign(m, { body: bytes, bodyMax: b.bodyMax(a.body), target: target.slice(0, 140) });
    if (a.files > m.files) Object.assign(m, { files: a.files, filesTarget: target.slice(0, 140) });
    m.bytes = Math.max(m.bytes, a.bytes);
    measured.set(id, m);
  }
  expect(ok, `route ${id}: no worst-case request answered 200`).toBeGreaterThan(0);
}

// ---------------------------------------------------------------------------------------------
// Worst-case requests per route

const enc = encodeURIComponent;
const q = (params: Record<string, string | number | undefined>): string => {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${enc(String(v))}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
};
const fits = (target: string): boolean => new TextEncoder().encode(target).length <= MAX_TARGET_BYTES;
/** As many comma-separated values (repeated when they run out) as fit a target of MAX_TARGET_BYTES. */
function fill(prefix: string, values: readonly string[]): string {
  let s = prefix;
  for (let i = 0; ; i++) {
    const next = `${s}${s === prefix ? '' : ','}${enc(values[i % values.length]!)}`;
    if (!fits(next)) return s;
    s = next;
  }
}
/** `prefix` + the longest start of `text` (whole code points) that fits a target of MAX_TARGET_BYTES. */
function fitText(prefix: string, text: string): string {
  const cps = Array.from(text);
  let lo = 0;
  let hi = cps.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (fits(prefix + enc(cps.slice(0, mid).join('')))) lo = mid;
    else hi = mid - 1;
  }
  return prefix + enc(cps.slice(0, lo).join(''));
}
const FAR_PAST = '0000-01-01T00:00:00Z';
const FAR_FUTURE = '9999-12-31T23:59:59Z';

/** The target of the next page after `target` (the oracle's next_cursor), or null. */
function nextPage(target: string): string | null {
  const url = new URL(target, 'http://bounds.test');
  const a = oracleAnswer(db, url, nowMs, baseUrl);
  if (a.status !== 200) return null;
  // A 200 of a list route: a page envelope.
  const c = (JSON.parse(a.text) as { next_cursor?: string | null }).next_cursor;
  if (!c) return null;
  url.searchParams.set('cursor', c);
  return `${url.pathname}${url.search}`;
}
/** The target and the page after it (when there is one). */
const withNext = (target: string): string[] => {
  const n = nextPage(target);
  return n === null ? [target] : [target, n];
};
const today = (): string => utcDay(nowMs);
/** Identifiers with the most rows first. */
const most = (sql: string, n: number): string[] => col<string>(sql).slice(0, n);

const WORST: Record<RouteId, () => string[]> = {
  health: () => ['/health'],
  'health.db': () => ['/health/db'],
  network: () => ['/v1/network', `/v1/network${q({ limit: 200, at: FAR_PAST })}`],
  'hosts.list': () => ['/v1/hosts'],
  'hosts.detail': () =>
    col('SELECT hostname FROM hosts ORDER BY hostname').flatMap((h) => [
      `/v1/hosts/${h}`,
      `/v1/hosts/${h}${q({ at: FAR_PAST })}`,
      `/v1/hosts/${h}${q({ at: FAR_FUTURE })}`,
      `/v1/hosts/${h}${q({ at: new Date(nowMs - 40 * 86_400_000).toISOString() })}`,
    ]),
  'hosts.incidents': () =>
    most('SELECT h.hostname FROM hosts h LEFT JOIN host_incidents i ON i.host_id = h.id GROUP BY h.id ORDER BY count(i.id) DESC, h.hostname', 5).flatMap((h) => [
      `/v1/hosts/${h}/incidents${q({ limit: 200 })}`,
      `/v1/hosts/${h}/incidents${q({ limit: 200, status: 'closed', since: FAR_PAST })}`,
      `/v1/hosts/${h}/incidents${q({ limit: 200, status: 'open' })}`,
      ...withNext(`/v1/hosts/${h}/incidents${q({ limit: 1 })}`),
    ]),
  'hosts.uptime': () =>
    col('SELECT hostname FROM hosts ORDER BY hostname LIMIT 3').flatMap((h) =>
      ['hourly', 'daily', 'monthly'].flatMap((resolution) =>
        [undefined, '__all__', 'fra'].flatMap((location) => [
          ...withNext(`/v1/hosts/${h}/uptime${q({ resolution, location, limit: 200 })}`),
          `/v1/hosts/${h}/uptime${q({ resolution, location, limit: 200, from: FAR_PAST, to: FAR_FUTURE })}`,
        ]),
      ),
    ),
  'incidents.list': () => {
    const host = most('SELECT h.hostname FROM host_incidents i JOIN hosts h ON h.id = i.host_id GROUP BY h.id ORDER BY count(*) DESC, 1', 1)[0]!;
    return [
      ...withNext(`/v1/incidents${q({ limit: 200 })}`),
      `/v1/incidents${q({ limit: 200, status: 'closed', since: FAR_PAST })}`,
      `/v1/incidents${q({ limit: 200, status: 'open' })}`,
      `/v1/incidents${q({ limit: 200, host })}`,
      `/v1/incidents${q({ limit: 200, host: `${'x'.repeat(1800)}.example` })}`,
    ];
  },
  'participants.list': () => {
    const top = (c: string): string[] => most(`SELECT ${c} FROM participant_list WHERE ${c} IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1`, POSTING_VALUES_MAX);
    const rare = (c: string): string[] => most(`SELECT ${c} FROM participant_list WHERE ${c} IS NOT NULL GROUP BY 1 ORDER BY count(*), 1`, POSTING_VALUES_MAX);
    // A name with more trigrams than are looked up, each of them in some name.
    const name = most('SELECT name FROM participant_list WHERE name IS NOT NULL ORDER BY length(name) DESC, name', 1)[0]!;
    const all = (c: string): string[] => col(`SELECT DISTINCT ${c} FROM participant_list WHERE ${c} IS NOT NULL ORDER BY 1`);
    const every = { smp: top('smp').join(','), ap: top('ap_seat_id').join(','), country: top('country').join(','), scheme: top('scheme').join(',') };
    const targets: string[] = [];
    for (const sort of ['first_seen.desc', 'name.asc', 'country.desc']) {
      targets.push(...withNext(`/v1/participants${q({ sort, limit: 200, ...every, q: name, registered: 'true', provenance: 'directory' })}`));
      targets.push(...withNext(`/v1/participants${q({ sort, limit: 200, smp: every.smp, ap: every.ap })}`));
      // The small set of the most values: the rarest countries, schemes, SMPs, seats.
      targets.push(`/v1/participants${q({ sort, limit: 200, country: rare('country').join(','), scheme: rare('scheme').join(','), smp: rare('smp').join(','), ap: rare('ap_seat_id').join(',') })}`);
      targets.push(...withNext(`/v1/participants${q({ sort, limit: 200 })}`));
    }
    // Filters and searches as long as the edge accepts: the caps keep the reads where they were.
    targets.push(fill(`/v1/participants?limit=200&smp=`, all('smp')));
    targets.push(fill(`/v1/participants?limit=200&ap=`, all('ap_seat_id')));
    targets.push(fill(`/v1/participants?limit=200&country=`, [...all('country'), ...Array.from({ length: 600 }, (_, i) => `X${i}`)]));
    targets.push(fitText('/v1/participants?limit=200&q=', all('name').slice(0, 100).join(' ')));
    targets.push(fitText('/v1/participants?sort=name.asc&limit=200&q=', name.repeat(100)));
    targets.push(`/v1/participants${q({ limit: 200, q: col('SELECT pid FROM participant_list LIMIT 1')[0] })}`);
    // A sparse walk: the rarest (registered, provenance) pair in name order reads on to its matches.
    targets.push(...withNext(`/v1/participants${q({ sort: 'name.asc', limit: 200, registered: 'false', provenance: 'directory' })}`));
    return targets;
  },
  'participants.detail': () => {
    // The largest records (the participants with the most endpoints, seats, events and history) and
    // those of the largest packs.
    const dir = path.join(out, 'f', 'participants', 'records');
    const records = fs
      .readdirSync(dir)
      .flatMap((f) => {
        const pack = readStoredJson(path.join(dir, f)) as { records: Record<string, unknown> };
        const n = Object.keys(pack.records).length;
        return Object.entries(pack.records).map(([id, r]) => ({ id, size: JSON.stringify(r).length, n }));
      });
    const largest = [...records].sort((a, b) => b.size - a.size).slice(0, 5);
    const crowded = [...records].sort((a, b) => b.n - a.n).slice(0, 3);
    return [...largest, ...crowded].map(({ id }) => `/v1/participants/${enc(id)}`);
  },
  'participants.events': () =>
    most('SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id GROUP BY p.id ORDER BY count(*) DESC, 1', 5).flatMap((id) => [
      `/v1/participants/${enc(id)}/events${q({ limit: 200 })}`,
      ...withNext(`/v1/participants/${enc(id)}/events${q({ limit: 1 })}`),
    ]),
  'participants.history': () =>
    most('SELECT p.pid FROM participant_history h JOIN participants p ON p.id = h.participant_id GROUP BY p.id ORDER BY count(*) DESC, 1', 5).flatMap((id) => [
      `/v1/participants/${enc(id)}/history${q({ limit: 200 })}`,
      ...withNext(`/v1/participants/${enc(id)}/history${q({ limit: 1 })}`),
    ]),
  'stats.participants': () => ['/v1/stats/participants'],
  'providers.list': () => ['/v1/providers'],
  'providers.detail': () => col('SELECT slug FROM curated_providers ORDER BY slug').map((s) => `/v1/providers/${s}`),
  'aps.list': () => ['/v1/aps'],
  'aps.detail': () => [...col('SELECT key FROM ap_identities ORDER BY key'), ...col('SELECT alias FROM ap_key_aliases ORDER BY alias')].map((k) => `/v1/aps/${k}`),
  'aps.churn': () => {
    const keys = col('SELECT DISTINCT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id ORDER BY 1');
    const longest = addDays(today(), -(CHURN_WINDOW_MAX_DAYS - 1));
    return keys.flatMap((k) => [
      `/v1/aps/${k}/churn`,
      `/v1/aps/${k}/churn${q({ from: longest })}`,
      `/v1/aps/${k}/churn${q({ from: '0001-01-01', to: addDays('0001-01-01', CHURN_WINDOW_MAX_DAYS - 1) })}`,
      `/v1/aps/${k}/churn${q({ from: addDays('9999-12-31', -(CHURN_WINDOW_MAX_DAYS - 1)), to: '9999-12-31' })}`,
      `/v1/aps/${k}/churn${q({ to: '0001-01-05' })}`,
      `/v1/aps/${k}/churn${q({ from: '0001-01-01', to: '9999-12-31' })}`,
    ]);
  },
  'aps.churn_participants': () => {
    const keys = col('SELECT DISTINCT s.key FROM churn_daily d JOIN seat_identities s ON s.seat_id = d.seat_id ORDER BY 1');
    const longest = addDays(today(), -(CHURN_WINDOW_MAX_DAYS - 1));
    return keys.flatMap((k) =>
      ['joiner', 'mover_in', 'mover_out', 'leaver'].flatMap((category) => [
        `/v1/aps/${k}/churn/participants${q({ category, from: longest })}`,
        `/v1/aps/${k}/churn/participants${q({ category, from: '0001-01-01', to: '9999-12-31' })}`,
      ]),
    );
  },
  'seats.detail': () => col('SELECT seat_id FROM seat_identities ORDER BY seat_id').map((s) => `/v1/seats/${s}`),
  'events.list': () => {
    const host = most('SELECT hostname FROM event_hosts GROUP BY 1 ORDER BY count(*) DESC, 1', 1)[0]!;
    const seat = most('SELECT seat_id FROM event_seats GROUP BY 1 ORDER BY count(*) DESC, 1', 1)[0]!;
    const pid = most('SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id GROUP BY p.id ORDER BY count(*) DESC, 1', 1)[0]!;
    const types = col('SELECT DISTINCT type FROM events ORDER BY 1').join(',');
    const old = row('SELECT observed_at, id FROM events ORDER BY observed_at, id LIMIT 1');
    const mid = row('SELECT observed_at, id FROM events ORDER BY observed_at DESC, id DESC LIMIT 1 OFFSET 250');
    const sparse = most(`SELECT h.hostname FROM event_seats s JOIN event_hosts h USING (event_id) WHERE s.seat_id = '${seat}' GROUP BY 1 ORDER BY count(*), 1`, 1)[0]!;
    return [
      ...withNext(`/v1/events${q({ limit: 200 })}`),
      `/v1/events${q({ limit: 200, since: FAR_PAST, until: FAR_FUTURE })}`,
      `/v1/events${q({ limit: 200, type: types, since: FAR_PAST })}`,
      `/v1/events${q({ limit: 200, type: types, host, seat, participant: pid, since: FAR_PAST, until: FAR_FUTURE })}`,
      `/v1/events${q({ limit: 200, host })}`,
      `/v1/events${q({ limit: 200, seat, type: 'ap_seat_changed,endpoint_changed' })}`,
      `/v1/events${q({ limit: 200, participant: pid })}`,
      `/v1/events${q({ limit: 200, prev_cursor: eventCursor(old, 'prev') })}`,
      `/v1/events${q({ limit: 200, cursor: eventCursor(mid, 'next'), type: types })}`,
      // Filters left to match item by item: two rare types over the whole feed, and a seat with the
      // host sharing the fewest of its events (the seat's list to its end).
      ...withNext(`/v1/events${q({ limit: 200, type: 'host_cert_rotated,hosting_changed' })}`),
      `/v1/events${q({ limit: 200, type: 'host_cert_rotated,hosting_changed', prev_cursor: eventCursor(old, 'prev') })}`,
      ...withNext(`/v1/events${q({ limit: 1, seat, host: sparse })}`),
      `/v1/events${q({ limit: 200, seat, host: sparse, prev_cursor: eventCursor(old, 'prev') })}`,
      `/v1/events${q({ limit: 200, since: new Date(nowMs - 2 * 86_400_000).toISOString(), until: new Date(nowMs).toISOString() })}`,
    ];
  },
  'anomalies.list': () => {
    const host = most('SELECT hostname FROM anomaly_hosts GROUP BY 1 ORDER BY count(*) DESC, 1', 1)[0]!;
    const seat = most('SELECT seat_id FROM anomaly_seats GROUP BY 1 ORDER BY count(*) DESC, 1', 1)[0]!;
    const last = row('SELECT observed_at, id FROM anomalies ORDER BY observed_at DESC, id DESC LIMIT 1');
    return [
      `/v1/anomalies${q({ limit: 200 })}`,
      `/v1/anomalies${q({ limit: 200, since: FAR_PAST })}`,
      `/v1/anomalies${q({ limit: 200, detector: 'mass_change_burst', grade: 'warning', acknowledged: 'false' })}`,
      `/v1/anomalies${q({ limit: 200, host, seat, detector: 'moved_to_unverified_seat' })}`,
      `/v1/anomalies${q({ limit: 200, host })}`,
      `/v1/anomalies${q({ limit: 200, seat, grade: 'notice' })}`,
      `/v1/anomalies${q({ limit: 200, cursor: anomalyCursor(last) })}`,
      // Every filter at once, at the values of an anomaly naming a host and a seat (host with seat reads the host's list).
      ...db
        .prepare(
          `SELECT h.hostname, s.seat_id, a.detector, a.grade, a.acknowledged FROM anomalies a JOIN anomaly_hosts h ON h.anomaly_id = a.id
           JOIN anomaly_seats s ON s.anomaly_id = a.id ORDER BY a.observed_at DESC, a.id DESC, 1, 2`,
        )
        .raw()
        // Raw rows of the five selected columns.
        .all()
        .flatMap((r) => {
          const [h, s, detector, grade, ack] = r as [string, string, string, string, number];
          const f = { limit: 1, host: h, seat: s, detector, grade, acknowledged: String(ack === 1) };
          return [`/v1/anomalies${q(f)}`, `/v1/anomalies${q({ ...f, limit: 200, cursor: anomalyCursor(last) })}`];
        }),
    ];
  },
  'anomalies.detail': () => col('SELECT id FROM anomalies ORDER BY id').map((id) => `/v1/anomalies/${id}`),
  sml: () => ['/v1/sml'],
  'discovery.openapi': () => ['/openapi.json'],
  'discovery.api_catalog': () => ['/.well-known/api-catalog'],
  'discovery.problem_type': () => [...PROBLEM_NAMES.map((n) => `/problems/${n}`), '/problems/no-such-problem'],
};

// ---------------------------------------------------------------------------------------------

// ROUTE_LIST lists the routes of ROUTES, whose keys are their ids.
const ROUTE_IDS = ROUTE_LIST.map((r) => r.id as RouteId);

describe('limits', () => {
  it('every route of the route table has a bound and worst-case requests', () => {
    for (const id of ROUTE_IDS) {
      expect(BOUNDS[id], `BOUNDS has no entry for ${id}`).toBeDefined();
      expect(WORST[id], `WORST has no requests for ${id}`).toBeDefined();
    }
  });

  it('docs/api.md "Limits" states the same bounds, route by route', () => {
    const doc = fs.readFileSync(path.resolve('docs/api.md'), 'utf8');
    const start = doc.indexOf('\n## Limits');
    const end = doc.indexOf('\n## ', start + 1);
    const limits = doc.slice(start, end === -1 ? undefined : end);
    const rows = new Map<string, string[]>();
    for (const line of limits.split('\n')) {
      const m = /^\| `([a-z_.]+)` \|(.*)\|$/.exec(line);
      if (m) rows.set(m[1]!, m[2]!.split(' | ').map((c) => c.trim()));
    }
    for (const id of ROUTE_IDS) {
      const b = BOUNDS[id];
      const cells = rows.get(id);
      expect(cells, `docs/api.md "Limits" has no row for ${id}`).toBeDefined();
      expect(cells!.slice(0, 3), `docs/api.md "Limits", row ${id}: cap, body, reads`).toEqual([b.cap?.text ?? '–', b.body, b.reads]);
    }
  });

  it.each(ROUTE_IDS)('%s: the largest answers stay within the bound', async (id) => {
    const worst = WORST[id];
    expect(worst, `no worst-case requests for ${id}`).toBeDefined();
    await check(id, worst());
  }, 120_000);
});

