// A build renders some routes in a worker thread while the main thread renders the others
// (docs/incremental.md "Full builds on two cores", "Incremental builds on two threads"). A full build
// of the peppol network is CPU-bound on one core (SQLite reads, JSON, hashing); the machine has two.
// The worker renders its routes with the same renderers, from its own read-only connection to the same
// database state (nothing writes the database while a build renders), into the same output directory:
// no two routes write the same mutable file, and a content-addressed file written by both is the same
// bytes.
//
// - A full build: the worker renders OFFLOADED_ROUTES. Its kept lists take units from
//   WORKER_UNIT_BASE down, apart from the main thread's (from -1 down).
// - An incremental build (not one after a killed build): the worker renders
//   INCREMENTAL_OFFLOADED_ROUTES, the uptime lists and the event feed's lists, patched or written
//   again from their kept files as on the main thread, then its share of the changed record packs. What each kept list held, and the hashes of
//   the previous build, it reads from a read-only snapshot of the state as the previous build
//   committed it (src/render/state.ts recordedState); it records the lists it drops
//   (`dropped_lists`), the files its lists no longer hold (`retired_files`), the paths whose manifest
//   entry may differ (`touched_paths`), and gives the lists it creates provisional units, below every
//   unit of the snapshot, that the main thread replaces by units of its own when it merges.
//
// What the worker records (each file with its render unit, the kept lists with theirs) goes into a
// SQLite file of its own beside the state file, attached to the state's connection before the build's
// transaction; when the worker is done the main thread takes the rows into the state (sorted by path,
// so the state's index grows in order) within that transaction (mergeRecords).
//
// runBuild is synchronous, so the main thread joins the worker by blocking on a shared word
// (Atomics.wait), and reads the worker's report with receiveMessageOnPort. A worker that stops putting
// files for STALL_MS is taken as dead (an out-of-memory end posts nothing).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { PACK_BATCH, type EventsReport, type ListStore, type ListsReport, type RecordsReport, type RenderOptions, type UptimeReport } from './context.js';
import type { SinkStats } from './sink.js';
import type { RecordedState } from './state.js';
import { INDEX_LISTS_PART, SHORT_LISTS_PART } from './routes/participant-lists.js';
import { GRAMS_PART } from './grams.js';

/**
 * The routes a full build renders in the worker: the uptime lists, the participant lists' two index
 * lists (INDEX_LISTS_PART: a part of participants.list, which the main thread's renderer then leaves
 * out), then its share of the participants' record packs (SHARED_ROUTE). The main thread renders every
 * other route, then takes its share of SHARED_ROUTE too: both threads take batches of packs from one
 * shared counter until none is left, so they end about together whatever the mix of hosts and
 * participants. (Without the index lists the worker ran out of packs while the main thread was still
 * writing the participant lists, about 140 s before it at `peppol`: docs/benchmarks.md; with the short
 * name lists on the main thread, about 700 s before it.)
 */
export const OFFLOADED_ROUTES: readonly string[] = ['hosts.uptime', INDEX_LISTS_PART, GRAMS_PART, SHORT_LISTS_PART, 'participants.detail'];
/**
 * The routes an incremental build renders in the worker: the uptime lists and the event feed's lists
 * (at `peppol` about 10 and 5 s of a sweep cycle's render), kept apart from every other route's lists,
 * and four routes of unit 0 only (about a second each), while the main thread patches the participant
 * lists (16–24 s) and renders the rest; then both threads share the changed record packs
 * (SHARED_ROUTE: 8,200 packs, 15–24 s on the main thread alone in a sweep cycle).
 */
export const INCREMENTAL_OFFLOADED_ROUTES: readonly string[] = [GRAMS_PART, 'hosts.uptime', 'events.list', 'aps.churn', 'aps.churn_participants', 'hosts.detail', 'hosts.incidents', 'participants.detail'];
/** The route both threads render, batch by batch (RenderContext.forEachRecordPack). */
export const SHARED_ROUTE = 'participants.detail';

/** The first unit of the worker's kept lists (the main thread's count down from -1). */
export const WORKER_UNIT_BASE = -1_000_000_000;

/**
 * The worker's young generation, in MB (V8's default on 64-bit: 48, for semi-spaces of 16 MB). The
 * render allocates an object or two per item of every list and record, and keeps many of them until
 * their chunk is written: a larger young generation collects them there, before they are promoted.
 * Measured at `peppol`: docs/benchmarks.md, "The index lists on the worker again".
 */
const WORKER_YOUNG_GENERATION_MB = 192;

/** A worker that puts no file for this long is taken as dead. */
const STALL_MS = 10 * 60_000;
/** A worker whose script has not started running after this long failed to load. */
const START_MS = 60_000;

/**
 * The rows the worker records: the state's `files` and `lists` without their keys (appends; merged
 * sorted). `files` is indexed by path all the same: the worker's sink looks up each content-addressed
 * file it puts into an empty directory there (DirectorySink.has), and without the index each lookup
 * scanned the table (51 of the worker's 576 CPU-seconds in a first build at `peppol`).
 */
export const RECORDS_DDL = `
  CREATE TABLE files (path TEXT NOT NULL, unit INTEGER NOT NULL, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, content_type TEXT NOT NULL, cache_class TEXT NOT NULL);
  CREATE INDEX files_path ON files (path);
  CREATE TABLE lists (root TEXT PRIMARY KEY, unit INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE retired_files (unit INTEGER NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL);
  CREATE TABLE touched_paths (path TEXT PRIMARY KEY) WITHOUT ROWID;
  CREATE TABLE dropped_lists (root TEXT PRIMARY KEY) WITHOUT ROWID;
`;

/** What an incremental build's worker renders from (OffloadJob.incremental): the change set's range (src/render/state.ts). */
export interface IncrementalJob {
  since: number;
  upto: number;
  /** The participants whose own files are rendered again (the main thread's `temp.render_participants`). */
  participants: number[];
  /** Whether the grams index is written again (RenderContext.gramsDue). */
  gramsDue: boolean;
  /** Those of them whose list item may differ (`temp.render_list_participants`): the grams index's changes. */
  listParticipants: number[];
}

/** What the worker is given (workerData). */
export interface OffloadJob {
  routes: readonly string[];
  dbPath: string;
  outDir: string;
  recordsPath: string;
  nowMs: number;
  opts: RenderOptions;
  fresh: boolean;
  /**
   * The state file when the render trusts its recorded hashes (src/render/state.ts RenderPlan: a
   * trusted full render, or an incremental one): the worker reads them itself.
   */
  stateFile: string | null;
  /** An incremental build's: what the worker patches its lists from; null in a full build. */
  incremental: IncrementalJob | null;
  /** Where the grams index keeps its state (RenderContext.gramsStatePath). */
  gramsStatePath: string | null;
  /** Shared words: [0] status (0 running, 1 done, 2 failed), [1] files put so far, [2] next batch of SHARED_ROUTE, [3] 1 once the script runs. */
  shared: SharedArrayBuffer;
  /**
   * What SHARED_ROUTE's batches cover (RenderContext.forEachRecordPack): a full build's record packs;
   * an incremental build's positions in its changed packs, ascending (collectChangedPacks).
   */
  packs: { min: number; max: number };
  port: MessagePort;
}

/** What the worker reports when done. */
export interface OffloadReport {
  routes: Record<string, { seconds: number }>;
  stats: SinkStats;
  lists: ListsReport | null;
  uptime: UptimeReport | null;
  records: RecordsReport;
  events: EventsReport | null;
  grams: 'written' | 'updated' | 'kept' | null;
}

/** Runs one route's renderer and records its seconds in `routes` (both threads' route loops). */
export function timedRender(routes: Record<string, { seconds: number }>, id: string, render: () => void): void {
  const t0 = performance.now();
  render();
  routes[id] = { seconds: Math.round(performance.now() - t0) / 1000 };
}

/**
 * The batches of SHARED_ROUTE, shared by both threads: ranges of PACK_BATCH record packs (or, in an
 * incremental build, positions in its changed packs) from `packs.min`, each taken once.
 */
export class SharedBatches {
  private readonly words: Int32Array;
  constructor(
    shared: SharedArrayBuffer,
    private readonly packs: { min: number; max: number },
  ) {
    this.words = new Int32Array(shared);
  }

  /** The next range [lo, hi) of record packs (or positions), or null when every range is taken. */
  next(): [number, number] | null {
    const k = Atomics.add(this.words, 2, 1);
    const lo = this.packs.min + k * PACK_BATCH;
    return lo > this.packs.max ? null : [lo, Math.min(lo + PACK_BATCH, this.packs.max + 1)];
  }
}

export type OffloadMessage = { ok: true; report: OffloadReport } | { ok: false; error: string };

/** The worker script: next to the bundle in dist/, or dist/ of the project when running from source. */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/render-worker.mjs', here) : new URL('./render-worker.mjs', here);
}

/** Whether the worker script is there (a checkout not built yet has none: the build then stays on one thread). */
export function workerAvailable(): boolean {
  return fs.existsSync(fileURLToPath(workerUrl()));
}

/** The records file of a state file. */
export function recordsPathOf(stateFile: string): string {
  return `${stateFile}.worker`;
}

/** Removes a records file and its journal (leftovers of a killed build too). */
export function removeRecords(recordsPath: string): void {
  for (const p of [recordsPath, `${recordsPath}-journal`]) fs.rmSync(p, { force: true });
}

/** Creates an empty records file (before the state attaches it). */
export function createRecords(recordsPath: string): void {
  removeRecords(recordsPath);
  const db = new Database(recordsPath);
  try {
    db.exec(RECORDS_DDL);
  } finally {
    db.close();
  }
}

export class Offload {
  private readonly words: Int32Array;
  private readonly port: MessagePort;
  private settled = false;
  /** The main thread's side of SHARED_ROUTE's batches. */
  readonly batches: SharedBatches;

  private constructor(
    private readonly worker: Worker,
    shared: SharedArrayBuffer,
    port: MessagePort,
    readonly routes: readonly string[],
    packs: { min: number; max: number },
  ) {
    this.words = new Int32Array(shared);
    this.port = port;
    this.batches = new SharedBatches(shared, packs);
  }

  /** Starts the worker on `routes` (its records file must exist: createRecords). */
  static start(job: Omit<OffloadJob, 'shared' | 'port'>): Offload {
    const shared = new SharedArrayBuffer(16);
    const { port1, port2 } = new MessageChannel();
    const data: OffloadJob = { ...job, shared, port: port2 };
    const worker = new Worker(workerUrl(), { workerData: data, transferList: [port2], resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
    // Errors reach the main thread through the port; the events only matter to an idle event loop.
    worker.on('error', () => {});
    return new Offload(worker, shared, port1, job.routes, job.packs);
  }

  /**
   * Blocks until the worker is done; returns its report or throws its error. `progress` hears how many
   * files the worker has put, every few seconds.
   */
  join(progress: (message: string) => void): OffloadReport {
    let seen = Atomics.load(this.words, 1);
    const started = Date.now();
    let lastChange = started;
    let lastPrint = 0;
    while (Atomics.load(this.words, 0) === 0) {
      Atomics.wait(this.words, 0, 0, 1000);
      const now = Date.now();
      // A script that fails to load runs no code and posts nothing (its 'error' event needs the event
      // loop this thread is blocking).
      if (Atomics.load(this.words, 3) === 0 && now - started > START_MS) {
        this.stop();
        throw new Error(`render worker (${this.routes.join(', ')}): did not start within ${START_MS / 1000} s (${fileURLToPath(workerUrl())})`);
      }
      const put = Atomics.load(this.words, 1);
      if (put !== seen) {
        seen = put;
        lastChange = now;
      } else if (now - lastChange > STALL_MS) {
        this.stop();
        throw new Error(`render worker (${this.routes.join(', ')}): no file put for ${STALL_MS / 60_000} minutes; stopped`);
      }
      if (now - lastPrint >= 5000) {
        progress(`render: waiting for the worker (${this.routes.join(', ')}): ${put.toLocaleString('en-US')} files`);
        lastPrint = now;
      }
    }
    // The report is posted before the status word is set.
    const m = receiveMessageOnPort(this.port)?.message as OffloadMessage | undefined;
    this.stop();
    if (m === undefined) throw new Error(`render worker (${this.routes.join(', ')}) ended without a report`);
    if (!m.ok) throw new Error(`render worker (${this.routes.join(', ')}): ${m.error}`);
    return m.report;
  }

  /** Stops the worker and closes the port (once: the worker is done, or the main thread failed). */
  stop(): void {
    if (this.settled) return;
    this.settled = true;
    void this.worker.terminate();
    this.port.close();
  }
}

/**
 * Takes the worker's records into the state, within the build's transaction (the records file attached
 * as `offload`): the lists it dropped are forgotten and the files its lists no longer hold are retired,
 * as the main thread's store does (src/render/state.ts); then its kept lists are added, with units
 * `allot` gives (an incremental build's: the worker's units were provisional) or as they are (a full
 * build's), and its files with them; then, in an incremental build, the paths it touched.
 */
/**
 * The content-addressed files both threads wrote (the same content, from lists of the two threads: a
 * run of participants that a short name list and another list both hold, such as a common gram's list
 * and the main list's named participants in the name order), before mergeRecords: in a directory
 * that was empty each thread writes what its own sink has not put, so such a file was written twice
 * where one thread writes it once (the build's counts subtract them).
 */
export function writtenByBoth(state: Database.Database): number {
  return state.prepare(`SELECT count(*) FROM (SELECT DISTINCT path FROM offload.files WHERE cache_class = 'immutable') f WHERE EXISTS (SELECT 1 FROM main.files m WHERE m.path = f.path)`).pluck().get() as number;
}

export function mergeRecords(state: Database.Database, allot: ((root: string) => number) | null): void {
  state.exec(`DELETE FROM main.lists WHERE root IN (SELECT root FROM offload.dropped_lists);
              INSERT OR IGNORE INTO temp.retired (path, sha256) SELECT path, sha256 FROM offload.retired_files;
              DELETE FROM main.files WHERE (path, unit) IN (SELECT path, unit FROM offload.retired_files);
              DROP TABLE IF EXISTS temp.worker_units;
              CREATE TEMP TABLE worker_units (provisional INTEGER PRIMARY KEY, unit INTEGER NOT NULL)`);
  if (allot === null) state.exec('INSERT INTO main.lists (root, unit) SELECT root, unit FROM offload.lists ORDER BY root');
  else {
    const map = state.prepare('INSERT INTO temp.worker_units (provisional, unit) VALUES (?, ?)');
    for (const r of state.prepare('SELECT root, unit FROM offload.lists ORDER BY root').all() as Array<{ root: string; unit: number }>) map.run(r.unit, allot(r.root));
  }
  state.exec(`INSERT OR REPLACE INTO main.files (path, unit, sha256, bytes, content_type, cache_class)
                SELECT f.path, coalesce(m.unit, f.unit), f.sha256, f.bytes, f.content_type, f.cache_class
                FROM offload.files f LEFT JOIN temp.worker_units m ON m.provisional = f.unit ORDER BY f.path, 2;
              DROP TABLE temp.worker_units`);
  // An incremental build's manifest is patched where paths were touched (src/render/manifest.ts).
  if (allot !== null) state.exec('INSERT OR IGNORE INTO temp.touched (path) SELECT path FROM offload.touched_paths');
}

/**
 * An incremental build's worker's kept lists: those of the previous build, read from its state
 * (`recorded`), and those this build creates, with provisional units below every unit of the state
 * (mergeRecords gives them units of the main thread's store). The lists it drops and the files they
 * no longer hold are recorded for the main thread (`dropped_lists`, `retired_files`).
 */
export function keptListStore(records: Database.Database, recorded: RecordedState): ListStore {
  const created = new Map<string, number>();
  const provisional = new Set<number>();
  const dropped = new Set<string>();
  let next = recorded.minListUnit() - 1;
  const addList = records.prepare('INSERT INTO lists (root, unit) VALUES (?, ?)');
  const addDropped = records.prepare('INSERT OR IGNORE INTO dropped_lists (root) VALUES (?)');
  const addRetired = records.prepare('INSERT INTO retired_files (unit, path, sha256) VALUES (?, ?, ?)');
  /** The unit of a list of the previous build still kept in this one. */
  const keptUnit = (root: string): number | undefined => (dropped.has(root) ? undefined : recorded.listUnit(root));
  const retire = (unit: number, rels: Iterable<string>): void => {
    const held = recorded.unitFiles(unit);
    for (const rel of rels) {
      const sha = held.get(rel);
      if (sha !== undefined) addRetired.run(unit, rel, sha);
    }
  };
  return {
    patchable: true,
    unit: (root) => {
      const u = created.get(root) ?? keptUnit(root);
      if (u !== undefined) return u;
      created.set(root, next);
      provisional.add(next);
      addList.run(root, next);
      return next--;
    },
    has: (root) => created.has(root) || keptUnit(root) !== undefined,
    paths: (unit) => (provisional.has(unit) ? new Set() : new Set(recorded.unitFiles(unit).keys())),
    retire: (unit, rels) => retire(unit, rels),
    drop: (root) => {
      if (created.has(root)) throw new Error(`render worker: the list ${root} dropped in the build that created it`);
      const u = keptUnit(root);
      if (u === undefined) return;
      retire(u, recorded.unitFiles(u).keys());
      dropped.add(root);
      addDropped.run(root);
    },
    roots: (prefix) => [...recorded.listRoots(prefix).filter((r) => !dropped.has(r)), ...[...created.keys()].filter((r) => r.startsWith(prefix))].sort(),
  };
}

/** The worker's kept lists: a ListStore over its records file (a full build: none kept before). */
export function recordsListStore(db: Database.Database): ListStore {
  const unitOf = db.prepare('SELECT unit FROM lists WHERE root = ?').pluck();
  const insert = db.prepare('INSERT INTO lists (root, unit) VALUES (?, ?)');
  let next = WORKER_UNIT_BASE;
  const none = (what: string): never => {
    throw new Error(`render worker: ${what} in a full build`);
  };
  return {
    patchable: false,
    unit: (root) => {
      const u = unitOf.get(root) as number | undefined;
      if (u !== undefined) return u;
      insert.run(root, next);
      return next--;
    },
    has: (root) => unitOf.get(root) !== undefined,
    paths: () => none('a kept list read'),
    retire: () => none('a kept list retired'),
    drop: () => none('a kept list dropped'),
    roots: () => [],
  };
}
