// Record packs (docs/snapshot-format.md "Participants"): the snapshot holds each participant's record
// ({"participant", "history", "events"}: the detail and the first pages of its history and events, null
// when empty) in the record pack its id hashes to, `f/participants/records/<pack>.json`, and nothing of it
// under v1/participants; a stored list `i/participants.events/<id>.json` / `i/participants.history/<id>.json`
// only when that list holds more than one default page. The shim answers all three routes from the
// record: byte for byte the oracle's answer, for any limit and cursor, reading the pack alone when the
// answer lies within the record's first page, and 404 for an unknown participant from its pack (and,
// where no participant hashes to that pack, the participant's own path, where snapshots built before
// record packs hold the record).
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
import { isRecordPack, recordPackOf, recordPackPath, recordPath, type ParticipantRecord } from '../src/api/participants/record.js';
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
import { packRecordTexts, RenderContext } from '../src/render/context.js';
import { packBody, participantRenderers } from '../src/render/routes/participants.js';
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
/** `rich` as a snapshot built before record packs (a record per participant at its own path). */
let legacyRecords: string;
/** `rich` as a snapshot built before the record held it (the view at that path, each page a file). */
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
function renderRecords(file: Db, dir: string, sinkClass: typeof DirectorySink = DirectorySink): void {
  const sink = new sinkClass(dir);
  const ctx = new RenderContext(file, nowMs, sink, SMALL_CHUNKS, jsonBody);
  const renderers = participantRenderers();
  for (const id of ['participants.detail', 'participants.events', 'participants.history']) renderers[id]!(ctx);
  writeManifest(sink, new Date(nowMs).toISOString());
  sink.close();
}

/** Every record of the packs of `dir`, by participant id. */
function recordsOf(dir: string): Map<string, ParticipantRecord> {
  const out = new Map<string, ParticipantRecord>();
  for (const p of manifestPaths(dir)) {
    if (!p.startsWith('f/participants/records/')) continue;
    const pack = readStoredJson(path.join(dir, p));
    if (!isRecordPack(pack)) throw new Error(`${p} is not a record pack`);
    for (const [id, rec] of Object.entries(pack.records)) out.set(id, rec);
  }
  return out;
}

/** A participant's record in the snapshot `dir`, from its pack (undefined when absent). */
function recordIn(dir: string, id: string): ParticipantRecord | undefined {
  const file = path.join(dir, recordPackPath(recordPackOf(id)));
  if (!fs.existsSync(file)) return undefined;
  const pack = readStoredJson(file);
  return isRecordPack(pack) ? pack.records[id] : undefined;
}

/**
 * `dir` copied to a new directory in the layout of snapshots built before record packs: each record at
 * the participant's own path (`records`), or, before the record, the view there and each non-empty
 * first page in a file of its own (`views`).
 */
function toLegacyLayout(dir: string, layout: 'records' | 'views'): string {
  const to = tempDir('participant-pages-legacy-');
  fs.cpSync(dir, to, { recursive: true });
  fs.rmSync(path.join(to, 'f/participants/records'), { recursive: true, force: true });
  for (const [id, rec] of recordsOf(dir)) {
    const p = recordPath(id);
    fs.mkdirSync(path.dirname(path.join(to, p)), { recursive: true });
    if (layout === 'records') {
      fs.writeFileSync(path.join(to, p), jsonBody(rec));
      continue;
    }
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
  legacyRecords = toLegacyLayout(rich, 'records');
  legacy = toLegacyLayout(rich, 'views');
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
 * What a request for participant `id` reads of `dir` first: its record pack, and, when the pack is
 * absent (no participant hashes to it), the participant's own path (snapshots before record packs).
 */
function recordReads(dir: string, id: string): string[] {
  const pack = recordPackPath(recordPackOf(id));
  return fs.existsSync(path.join(dir, pack)) ? [pack] : [pack, recordPath(id)];
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
  const record = recordReads(dir, id);
  if (want.status === 404) {
    expect(got.reads, t).toEqual(record);
    return 'unknown';
  }
  expect(got.reads, t).toEqual(expect.arrayContaining([recordPackPath(recordPackOf(id))]));
  expect(record, t).toHaveLength(1);
  const first = keys.slice(0, LIMIT_DEFAULT);
  const inFirst = keys.length <= LIMIT_DEFAULT || afterKey(sub, first, cursorKey) >= (limit ?? LIMIT_DEFAULT);
  if (inFirst) {
    expect(got.reads, t).toEqual(record);
    return 'record';
  }
  expect(got.reads[1], t).toBe(listRootPath(ROUTE_OF[sub], [id]));
  return 'list';
}

/** The pack paths of some participants. */
const packsOf = (ids: readonly string[]): Set<string> => new Set(ids.map((id) => recordPackPath(recordPackOf(id))));

describe('record packs', () => {
  it('the build writes each participant its record in its pack and nothing under v1/participants; no stored list in the demo', () => {
    const listed = manifestPaths(out);
    expect([...listed].filter((p) => p.startsWith('v1/participants/'))).toEqual([]);
    // A pack for each pack some participant hashes to, holding exactly those participants, in id order.
    expect(new Set([...listed].filter((p) => p.startsWith('f/participants/records/')))).toEqual(packsOf(P.all));
    const records = recordsOf(out);
    expect(new Set(records.keys())).toEqual(new Set(P.all));
    for (const p of packsOf(P.all)) {
      const ids = Object.keys((readStoredJson(path.join(out, p)) as { records: object }).records);
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      for (const id of ids) expect(recordPackPath(recordPackOf(id))).toBe(p);
    }
    // No participant of the demo has more than a page of events or history: no stored list either.
    expect(db.prepare('SELECT max(n) FROM (SELECT count(*) AS n FROM participant_history GROUP BY participant_id UNION ALL SELECT count(*) FROM events WHERE participant_id IS NOT NULL GROUP BY participant_id)').pluck().get()).toBeLessThanOrEqual(LIMIT_DEFAULT);
    expect([...listed].filter((p) => p.startsWith('i/participants.events/') || p.startsWith('i/participants.history/'))).toEqual([]);
    // Every record holds the oracle's three answers at default parameters; an empty list is null.
    const oracle = oracleOf(db);
    const seen = { nullEvents: 0, events: 0, nullHistory: 0 };
    for (const id of P.all) {
      const rec = records.get(id)!;
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
    expect(new Set([...listed].filter((p) => p.startsWith('f/participants/records/')))).toEqual(packsOf(P.all));
    expect(new Set(recordsOf(rich).keys())).toEqual(new Set(P.all));
    const lists = [...listed].filter((p) => p.startsWith('i/'));
    const want = SUBS.flatMap((sub) => R[sub].filter((_, i) => SIZES[i]! > LIMIT_DEFAULT).map((id) => listRootPath(ROUTE_OF[sub], [id])));
    expect(lists.sort()).toEqual(want.sort());
    // Objects: the packs, and the roots and chunks of the four lists over a page.
    const objects = [...listed].filter((p) => !p.startsWith('m/'));
    expect(objects.filter((p) => p.startsWith('c/')).length).toBeGreaterThanOrEqual(2 * 2 + 2 * 5); // chunks of at most 30 items
    expect(objects.length).toBe(packsOf(P.all).size + lists.length + objects.filter((p) => p.startsWith('c/')).length);
    expect(objects.length / P.all.length).toBeLessThan(1.05);
  });

  it("a pack's records are read back as the texts written (sliced), or parsed when the text is laid out otherwise", () => {
    const dec = new TextDecoder();
    let n = 0;
    for (const p of packsOf(P.all)) {
      const text = readStored(path.join(out, p)).toString('utf8');
      const texts = packRecordTexts(text);
      const parsed = readStoredJson(path.join(out, p)) as { records: Record<string, unknown> };
      expect(new Map(texts)).toEqual(new Map(Object.entries(parsed.records).map(([id, r]) => [id, JSON.stringify(r)])));
      // Written again from the texts, the same bytes.
      expect(dec.decode(packBody(texts))).toBe(text);
      // Laid out otherwise: the same records, parsed.
      expect(packRecordTexts(JSON.stringify(JSON.parse(text), null, 1))).toEqual(texts);
      n += texts.size;
    }
    expect(n).toBe(P.all.length);
    expect(() => packRecordTexts('{"records":{}}')).toThrow('not a record pack');
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
    // A record in a pack its participant does not hash to: the first of a pack of two or more (without
    // a stored list), put into another pack.
    const byPack = new Map<string, string[]>();
    for (const id of P.all) byPack.set(recordPackPath(recordPackOf(id)), [...(byPack.get(recordPackPath(recordPackOf(id))) ?? []), id]);
    const withLists = [...R.events, ...R.history];
    const moved = [...byPack.values()].find((ids) => ids.length >= 2 && !ids.some((id) => [withList, emptied, broken].includes(id)) && !withLists.includes(ids[0]!))![0]!;
    const movedTo = recordPackPath(recordPackOf(withList));
    const dec = new TextDecoder();
    class Bugs extends DirectorySink {
      override put(rel: string, content: Uint8Array, contentType: string, cacheClass: 'mutable' | 'immutable' | 'meta'): void {
        if (!rel.startsWith('f/participants/records/')) return super.put(rel, content, contentType, cacheClass);
        const pack = JSON.parse(dec.decode(content)) as { records: Record<string, ParticipantRecord> };
        for (const [id, rec] of Object.entries(pack.records)) {
          if (id === withList) pack.records[id] = { ...rec, events: null };
          else if (id === emptied) pack.records[id] = { ...rec, history: { items: [], next_cursor: null } };
          else if (id === broken) pack.records[id] = { ...rec, participant: { ...rec.participant, registration: null } as unknown as ParticipantRecord['participant'] };
          else if (id === moved && rel !== movedTo) delete pack.records[id];
          if (id === stray) super.put(exactFilePath(['v1', 'participants', stray, 'events']), jsonBody(rec.events), contentType, cacheClass);
        }
        if (rel === movedTo) {
          const all = { ...pack.records, [moved]: recordIn(rich, moved)! };
          pack.records = Object.fromEntries(Object.keys(all).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).map((id) => [id, all[id]!]));
        }
        super.put(rel, jsonBody(pack), contentType, cacheClass);
      }
    }
    const dir = tempDir('participant-pages-broken-');
    renderRecords(richDb, dir, Bugs);
    const about = (p: { path: string; message: string }): boolean => (p.path.startsWith('i/') || p.path.startsWith('v1/') || p.path.startsWith('f/')) && !p.message.startsWith('names seat');
    const problems = verifySnapshot(dir).problems.filter(about).map((p) => `${p.path}: ${p.message.replace(/: .*/, '')}`);
    const packOf = (id: string): string => recordPackPath(recordPackOf(id));
    expect(problems.sort()).toEqual(
      [
        `${listRootPath('participants.events', [withList])}: has no first page in the record of ${withList} (events is null)`,
        `${packOf(emptied)}: history is an empty page (an empty list is null)`,
        `${packOf(broken)}: participant does not match ParticipantView`,
        `${movedTo}: holds the record of ${moved}, whose pack is ${packOf(moved)}`,
        `${exactFilePath(['v1', 'participants', stray, 'events'])}: a participant's record and first pages are in its record pack, not a file of their own`,
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

  it('the detail: the record\'s participant, one read; unknown: 404 from its pack, or from its own path where no participant hashes to the pack', async () => {
    // An unknown id whose pack holds other participants' records.
    const sharing = Array.from({ length: 500 }, (_, i) => `0208::${String(9_000_000_000 + i)}`).find((id) => fs.existsSync(path.join(rich, recordPackPath(recordPackOf(id)))))!;
    expect(sharing).toBeDefined();
    const seen = { one: 0, two: 0 };
    for (const id of [...R.events, ...R.history, ...P.smpOnly, P.withEvents[0]!, ...UNKNOWN, sharing]) {
      const t = target(id, null);
      const want = oracleOf(richDb)(t);
      const got = await composed(rich, t);
      expect(got.status, t).toBe(want.status);
      expect(got.text, t).toBe(want.text);
      expect(got.reads, t).toEqual(recordReads(rich, id));
      if (want.status === 200) expect(got.reads, t).toHaveLength(1);
      seen[got.reads.length === 1 ? 'one' : 'two']++;
    }
    expect(seen.two).toBeGreaterThan(0);
    expect(oracleOf(richDb)(target(sharing, null)).status).toBe(404);
  });

  it.each([
    ['before record packs (a record per participant at its own path)', () => legacyRecords],
    ['before the record (detail and pages in files of their own)', () => legacy],
  ])('a snapshot built %s is still answered as the oracle answers', async (_, dirOf) => {
    // The shim is deployed before the first snapshot of a new layout is published, so it must answer
    // the snapshot published until then.
    const dir = dirOf();
    expect(fs.existsSync(path.join(dir, recordPath(R.events[0]!)))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'f/participants/records'))).toBe(false);
    expect(fs.existsSync(path.join(dir, exactFilePath(['v1', 'participants', R.events[0]!, 'events'])))).toBe(dir === legacy);
    const oracle = oracleOf(richDb);
    let n = 0;
    for (const id of [...R.events, ...R.history, ...P.smpOnly, P.noEvents[3]!, P.withEvents[1]!, UNKNOWN[0]!]) {
      for (const t of [target(id, null), ...SUBS.flatMap((sub) => [target(id, sub), target(id, sub, { limit: '7' }), target(id, sub, { limit: '51' })])]) {
        const want = oracle(t);
        const got = await composed(dir, t);
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
        const got = await composed(dir, t);
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
      // The detail answer is the record's participant, never the pack's or the record's bytes.
      const pack = readStored(path.join(out, recordPackPath(recordPackOf(id)))).toString('utf8');
      const detail = (await get(target(id, null))).text;
      expect(detail).not.toBe(pack);
      expect(detail).not.toBe(jsonText(recordIn(out, id)));
      expect(detail).toBe(jsonText(recordIn(out, id)!.participant));
    }
  });
});
