// `peppol-snapshot build`: derive (incrementally), prune raw probes past retention, render every route
// of the route table into the output directory, then the discovery documents, snapshot.json and the
// manifest (last). Files of earlier builds that this build did not produce are removed at the end.
//
// Incremental render (docs/incremental.md): a participant's own files are rendered again only when the
// derive change set names it (or a seat its endpoints name changed); every other file is rendered by
// every build. The state of the previous build is kept in `<out>.state.sqlite` (src/render/state.ts).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { jsonBody } from '../api/json.js';
import { openApiDocument } from '../api/openapi.js';
import { apiCatalog, componentSchemas } from '../api/openapi-schemas.js';
import { ROUTE_LIST } from '../api/routes/table.js';
import type { Config } from '../config/index.js';
import { emptyWal, openDb } from '../db/index.js';
import { pruneRawProbes } from '../derive/hosts/step.js';
import { runDerive, type DeriveSummary } from '../derive/index.js';
import { deriveApart, fullDeriveDue } from '../derive/apart.js';
import { SNAPSHOT_INFO_PATH } from '../edge/resolve.js';
import { RECORD_PACKS } from '../api/participants/record.js';
import { GRAMS_UNIT, recordPackUnit, RenderContext, renderTempStore, type EventsReport, type ListsReport, type RecordsReport, type RenderOptions, type UptimeReport } from './context.js';
import { patchManifest, writeManifest, type Manifest } from './manifest.js';
import { RENDERERS } from './routes/index.js';
import { renderSite, SITE_RENDER } from './site/index.js';
import { templatesDir } from './site/template.js';
import { createRecords, INCREMENTAL_OFFLOADED_ROUTES, mergeRecords, writtenByBoth, Offload, OFFLOADED_ROUTES, recordsPathOf, removeRecords, SHARED_ROUTE, timedRender, workerAvailable } from './offload.js';
import { BUILD_UNIT, DirectorySink } from './sink.js';
import { changedSeats, collectChangedPacks, collectChangedParticipants, collectEventChanges, collectUptimeChanges, currentSeats, databaseId, recordedState, RenderState, renderFingerprint, type RecordedState, type RenderPlan } from './state.js';
import { consumeChanges } from '../derive/changes.js';
import { getMeta } from '../db/index.js';
import { DAY_MS } from '../api/time.js';
import { runBulk, type BulkReport, type BulkStep } from '../bulk/index.js';
import { writerAvailable } from '../bulk/background.js';

/** Routes the edge answers itself, without a file of their own: health, and the problem type pages (from the catalogue). */
export const EDGE_ONLY: ReadonlySet<string> = new Set(['health', 'health.db', 'discovery.problem_type']);

export interface BuildOptions {
  config: Config;
  dbPath: string;
  outDir: string;
  nowMs: number;
  /** Render every file, whatever the previous build left (`build --full`). */
  full?: boolean;
  /**
   * A render renders some routes in a worker thread (src/render/offload.ts; an incremental one unless
   * the previous build was killed); false renders every route on the calling thread. Default true.
   * For tests and benchmarks.
   */
  worker?: boolean;
  /**
   * A full derive (a first build, or derived tables of other DDL) runs in a process of its own
   * (src/derive/apart.ts), so that what it allocated is gone before the render grows. Default true;
   * false derives on the calling thread. For tests and benchmarks.
   */
  deriveApart?: boolean;
  /**
   * Most participants whose list item changed for which an incremental build patches the participant
   * lists in place (more: it writes them in full; -1 always does). Default:
   * src/render/routes/participant-lists.ts. For tests and benchmarks.
   */
  listPatchLimit?: number;
  /**
   * An incremental build that is due to write the day's bulk copy starts the background writer instead
   * (src/bulk/background.ts, docs/bulk.md "Cadence"); a later build adopts the copy. The CLI's `build`
   * and `run` set it. Default false: the copy is written within the build. `build --full` and a first
   * build into an empty directory always write it within the build.
   */
  bulkWriter?: boolean;
  progress?: (message: string) => void;
}

export interface BuildSummary {
  generated_at: string;
  derive: DeriveSummary;
  pruned_probe_rows: number;
  /** Full or incremental render, why, and how many participants' own files were rendered. */
  render: {
    mode: RenderPlan['mode'];
    reason: string;
    participants: number | null;
    lists: ListsReport | null;
    uptime: UptimeReport | null;
    /** The record packs written, and their records rendered again or kept (src/render/routes/participants.ts). */
    records: RecordsReport;
    /** The event feed's lists: which partitions were written (src/render/routes/events.ts). */
    events: EventsReport | null;
    /** The grams index of the name searches: written, or kept as the previous build wrote it (src/render/grams.ts). */
    grams: 'written' | 'updated' | 'kept' | null;
    /** 2 when a worker thread shared the render (src/render/offload.ts), else 1. */
    threads: 1 | 2;
    /**
     * How a file rendered again is compared with the one on disk: by the hash the state recorded
     * (an incremental build, or a full render the state vouches for: src/render/state.ts RenderPlan),
     * by reading its bytes (`--full`, or after a killed build), or not at all (an empty directory).
     */
    compare: 'state' | 'bytes' | 'none';
  };
  /** The manifest: its shards, how many were cut again (all of them when written in full), and how many of those were read from their earlier file (the others from the state's files table). */
  manifest: { mode: 'patched' | 'written'; shards: number; shards_cut: number; shards_read: number };
  /** The bulk downloads (src/bulk): written (once per UTC day), started in the background, pending, adopted, failed, kept, or disabled. */
  bulk: BulkReport;
  routes: Record<string, { seconds: number }>;
  /** Routes of the route table without a renderer yet (their requests cannot be answered). */
  missing_routes: string[];
  files: number;
  written: number;
  /** Of `written`, by cache class. */
  written_by_class: Record<'immutable' | 'mutable' | 'meta', number>;
  removed: number;
  bytes: number;
  seconds: number;
}

/**
 * A full garbage collection of this thread's heap. V8 sizes the heap from the live set at its last
 * full collection, so after a full derive (hundreds of MB allocated, little kept) the render would
 * otherwise run with a heap limit sized for derive. Node exposes `gc` only behind --expose-gc; the flag
 * set at run time takes effect for contexts created afterwards, hence the new context.
 */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc === 'function') gc();
}

/**
 * How far V8 may grow a heap past its live set before the next full collection, in percent, while a
 * build runs (all threads: V8 flags are per process). V8's own factor reaches 4 when little time goes
 * to collecting, which is the case while rendering: at `peppol` the main thread's live set stayed
 * between 50 and 190 MB but its heap reached 830 MB, most of a full render's 1.55 GB peak
 * (docs/benchmarks.md "A bounded heap"). A command line that sets --heap-growing-percent wins.
 */
const BUILD_HEAP_GROWING_PERCENT = 150;

/** Runs `fn` with the heap growing factor of a build, and restores V8's own afterwards. */
function withBoundedHeapGrowth<T>(fn: () => T): T {
  if (process.execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) return fn();
  v8.setFlagsFromString(`--heap-growing-percent=${BUILD_HEAP_GROWING_PERCENT}`);
  try {
    return fn();
  } finally {
    v8.setFlagsFromString('--heap-growing-percent=0');
  }
}

/** ISO 8601 form of the snapshot clock (whole seconds print without milliseconds). */
export function isoNow(ms: number): string {
  const s = new Date(ms).toISOString();
  return s.endsWith('.000Z') ? `${s.slice(0, -5)}Z` : s;
}

/**
 * Page cache of the database while rendering, in KiB (derive uses the connection's 256 MiB). Rendering
 * reads mostly in index order, and its random reads (a participant's rows) span far more than any
 * cache: a smaller one costs no time and keeps a full build of the peppol network near 1.5 GB.
 */
const RENDER_CACHE_KIB = 64 * 1024;

export function runBuild(opts: BuildOptions): BuildSummary {
  return withBoundedHeapGrowth(() => build(opts));
}

function build(opts: BuildOptions): BuildSummary {
  const t0 = performance.now();
  const progress = opts.progress ?? (() => {});
  const generatedAt = isoNow(opts.nowMs);
  // The status page's templates are read at the end of the render: a bundle copied away from them
  // fails here, before the work, not after it.
  templatesDir();
  const db = openDb(opts.dbPath);
  try {
    // A full derive runs in a process of its own where it can, with the first prune of raw probes after
    // it (it replays every host's probes up to the horizon and deletes most of them): their memory (the
    // heap they grew, SQLite's caches, the transaction's pages) is given back when that process ends,
    // before the render grows (docs/benchmarks.md).
    const horizon = opts.nowMs - opts.config.retention.raw_probe_days * DAY_MS;
    const apart = opts.deriveApart !== false && fullDeriveDue(db) ? deriveApart(opts.dbPath, horizon, progress) : null;
    const derive = apart?.derive ?? runDerive(db, { progress });
    const pruned = apart?.pruned ?? db.transaction(() => pruneRawProbes(db, horizon))();
    if (derive.full) {
      // A full derive and the first prune leave gigabytes of pages in the write-ahead log (2.5 GB at
      // `peppol`): copied into the database and the log emptied before the render, which then reads
      // the database file alone (the process apart did so already).
      if (apart === null) emptyWal(db);
      // What they allocated in this process is garbage now; collected before rendering, the heap grows
      // from the render's own live set (docs/benchmarks.md "Full builds on two cores").
      collectGarbage();
    }
    renderTempStore(db);
    db.pragma(`cache_size = ${-RENDER_CACHE_KIB}`);
    const upto = Number(getMeta(db, 'derive_upto') ?? '0');
    const fingerprint = renderFingerprint(opts.config);
    const state = RenderState.open(opts.outDir);
    try {
      return renderInto(opts, db, state, { upto, fingerprint, derive, pruned: pruned.deleted, generatedAt, t0, progress });
    } finally {
      state.close();
    }
  } finally {
    db.close();
  }
}

interface RenderArgs {
  upto: number;
  fingerprint: string;
  derive: DeriveSummary;
  pruned: number;
  generatedAt: string;
  t0: number;
  progress: (message: string) => void;
}

function renderInto(opts: BuildOptions, db: ReturnType<typeof openDb>, state: RenderState, a: RenderArgs): BuildSummary {
  const { upto, fingerprint, progress } = a;
  const plan = state.plan({ db, fingerprint, forceFull: opts.full === true, upto });
  const emptyAtStart = !fs.existsSync(opts.outDir) || fs.readdirSync(opts.outDir).length === 0;
  const dbId = databaseId(db);
  const seatsNow = currentSeats(db);
  progress(`render: ${plan.mode} (${plan.reason})`);
  // A full render shares the work with a worker thread, and so does an incremental one (its uptime
  // lists; not after a killed build, which compares files on disk); its records file is attached to
  // the state before the state's transaction begins (ATTACH cannot run inside one).
  const recordsPath = recordsPathOf(state.file);
  let useWorker = (plan.mode === 'full' || !plan.recovering) && opts.worker !== false;
  if (useWorker && !workerAvailable()) {
    progress('render: the render worker script is missing (build the project: npm run build); rendering on one thread');
    useWorker = false;
  }
  if (useWorker) {
    createRecords(recordsPath);
    state.db.prepare('ATTACH DATABASE ? AS offload').run(recordsPath);
  } else removeRecords(recordsPath);
  // A full render the state vouches for knows an unchanged file by the hash the state recorded,
  // without reading it (RenderPlan): from a snapshot of the state taken before this build changes it.
  const recorded = plan.mode === 'full' && plan.trusted && !emptyAtStart ? recordedState(state.file) : null;
  try {
    return renderWith(opts, db, state, a, plan, { emptyAtStart, dbId, seatsNow, recordsPath: useWorker ? recordsPath : null, recorded });
  } finally {
    recorded?.close();
    if (useWorker) {
      if (state.db.inTransaction) state.db.exec('ROLLBACK');
      state.db.exec('DETACH DATABASE offload');
      removeRecords(recordsPath);
    }
  }
}

function renderWith(
  opts: BuildOptions,
  db: ReturnType<typeof openDb>,
  state: RenderState,
  a: RenderArgs,
  plan: RenderPlan,
  b: { emptyAtStart: boolean; dbId: string; seatsNow: Map<string, string>; recordsPath: string | null; recorded: RecordedState | null },
): BuildSummary {
  const { upto, fingerprint, generatedAt, progress } = a;
  const { emptyAtStart, dbId, seatsNow, recordsPath, recorded } = b;
  state.begin();
  // Renderers read from one consistent database state.
  db.exec('BEGIN');
  let participants: number | null = null;
  /** An incremental build's changed participants and their record packs (ascending). */
  let changedUnits: number[] = [];
  let changedPacks: number[] = [];
  /** Whether the grams index is written again (RenderContext.gramsDue): always in a full build. */
  let gramsDue = true;
  let lists: ListsReport | null = null;
  let uptime: UptimeReport | null = null;
  const records: RecordsReport = { packs: 0, rendered: 0, kept: 0 };
  const addRecords = (r: RecordsReport): void => {
    records.packs += r.packs;
    records.rendered += r.rendered;
    records.kept += r.kept;
  };
  let events: EventsReport | null = null;
  let grams: BuildSummary['render']['grams'] = null;
  let bulk: BulkStep;
  const routes: BuildSummary['routes'] = {};
  const missing: string[] = [];
  const { edge, render } = opts.config;
  let sink: DirectorySink;
  let compare: BuildSummary['render']['compare'];
  try {
    if (plan.mode === 'incremental') {
      participants = collectChangedParticipants(db, plan.since, upto, changedSeats(state.seats(), seatsNow));
      // The uptime and event change sets, for the routes of them this thread renders (the worker
      // collects its own).
      const onWorker = recordsPath === null ? [] : INCREMENTAL_OFFLOADED_ROUTES;
      if (!onWorker.includes('hosts.uptime')) collectUptimeChanges(db, plan.since, upto);
      if (!onWorker.includes('events.list')) collectEventChanges(db, plan.since, upto);
      changedUnits = db.prepare('SELECT participant_id FROM temp.render_participants').pluck().all() as number[];
      changedPacks = collectChangedPacks(db);
      // The grams index is made of the list items: kept when none may differ (RenderContext.gramsDue).
      gramsDue = db.prepare('SELECT EXISTS (SELECT 1 FROM temp.render_list_participants)').pluck().get() === 1;
      state.retireUnits([BUILD_UNIT, ...changedUnits, ...changedPacks.map(recordPackUnit), ...(gramsDue ? [GRAMS_UNIT] : [])]);
    } else {
      state.forgetAll();
    }
    // How a file rendered again is known unchanged without reading it (BuildSummary.render.compare).
    const previousSha = plan.mode === 'incremental' ? (plan.recovering ? undefined : state.retiredSha()) : recorded?.sha;
    compare = emptyAtStart ? 'none' : previousSha !== undefined ? 'state' : 'bytes';
    sink = new DirectorySink(opts.outDir, { db: state.db, previousSha, fresh: emptyAtStart });
    const renderOpts = { chunkMaxItems: opts.config.render.chunk_max_items, chunkMaxBytes: opts.config.render.chunk_max_bytes };
    // A killed build may have rewritten list roots on disk: write the lists in full then.
    const store = state.listStore(plan.mode === 'incremental' && !plan.recovering, opts.listPatchLimit);
    const offload = recordsPath === null ? null : startOffload(opts, plan, { recordsPath, renderOpts, emptyAtStart, db, state, upto, recorded, changedUnits, changedPacks, gramsDue });
    const ctx = new RenderContext(db, opts.nowMs, sink, renderOpts, jsonBody,
      progress,
      plan.mode === 'incremental' ? 'changed' : 'all',
      store,
      offload?.batches,
    );
    if (offload !== null) ctx.elsewhere = new Set(offload.routes);
    ctx.gramsDue = gramsDue;
    ctx.gramsStatePath = gramsStatePathOf(state.file);
    // The discovery documents depend on the configuration, not on the database. openapi.json is complete
    // for the snapshot's policy and base URL; the edge serves it regenerated from its components.schemas
    // for the policy in force and the origin serving it (src/edge/openapi.ts).
    const rateLimit = edge.rate_limit === 'off' ? 'off' : { requests: edge.rate_limit.requests, window_seconds: edge.rate_limit.window_seconds };
    const openapi = openApiDocument({ baseUrl: render.base_url, serverUrl: render.base_url, access: edge.access, rateLimit, deprecations: edge.deprecations, schemas: componentSchemas(), bulk: opts.config.bulk.enabled });
    const discovery: Record<string, () => void> = {
      'discovery.openapi': () => sink.put('openapi.json', jsonBody(openapi), 'application/json', 'mutable'),
      'discovery.api_catalog': () => sink.put('.well-known/api-catalog', jsonBody(apiCatalog(render.base_url, { bulk: opts.config.bulk.enabled })), 'application/linkset+json', 'mutable'),
    };
    try {
      for (const route of ROUTE_LIST) {
        if (EDGE_ONLY.has(route.id)) continue;
        const renderRoute = RENDERERS[route.id] ?? discovery[route.id];
        if (!renderRoute) {
          missing.push(route.id);
          continue;
        }
        if (offload?.routes.includes(route.id)) continue;
        progress(`render: ${route.id}`);
        timedRender(routes, route.id, () => renderRoute(ctx));
      }
      // The status page, the feed and the API page: from the same database state (src/render/site/).
      progress(`render: ${SITE_RENDER}`);
      timedRender(routes, SITE_RENDER, () => renderSite(sink, { db, nowMs: opts.nowMs, baseUrl: render.base_url, openapi }));
      // The main thread's share of the route both threads render (src/render/offload.ts), after the
      // loop above: the worker takes batches meanwhile.
      if (offload?.routes.includes(SHARED_ROUTE) === true) {
        progress(`render: ${SHARED_ROUTE} (with the worker)`);
        timedRender(routes, SHARED_ROUTE, () => RENDERERS[SHARED_ROUTE]!(ctx));
      }
    } catch (e) {
      offload?.stop();
      throw e;
    }
    lists = ctx.listsReport;
    uptime = ctx.uptimeReport;
    events = ctx.eventsReport;
    grams = ctx.gramsReport;
    addRecords(ctx.recordsReport);
    if (offload !== null) {
      const report = offload.join(progress);
      // Both threads' seconds in SHARED_ROUTE: the longer span.
      for (const [id, r] of Object.entries(report.routes)) routes[id] = { seconds: Math.max(r.seconds, routes[id]?.seconds ?? 0) };
      // A full build's participant lists are written by both threads (the worker's index lists).
      lists = lists !== null && report.lists !== null ? { ...lists, lists: lists.lists + report.lists.lists } : (lists ?? report.lists);
      uptime ??= report.uptime;
      events ??= report.events;
      grams ??= report.grams;
      addRecords(report.records);
      sink.absorb(report.stats, emptyAtStart ? writtenByBoth(state.db) : 0);
      mergeRecords(state.db, plan.mode === 'incremental' ? (root) => store.unit(root) : null);
    }
    // The bulk downloads, from the same database state (once per UTC day; src/bulk/index.ts).
    // A due copy is left to the background writer (reading this database state), except by `--full`
    // and a first build into an empty directory (docs/bulk.md "Cadence").
    let background = opts.bulkWriter === true && opts.full !== true && !emptyAtStart;
    if (background && !writerAvailable()) {
      progress('bulk: the background writer script is missing (build the project: npm run build); a due copy is written within the build');
      background = false;
    }
    bulk = runBulk({ db, state, sink, config: opts.config, nowMs: opts.nowMs, dbPath: opts.dbPath, dbId, full: plan.mode === 'full', trustState: plan.mode === 'incremental' && !plan.recovering, background, progress });
  } finally {
    db.exec('COMMIT');
  }
  sink.put(SNAPSHOT_INFO_PATH, jsonBody({ generated_at: generatedAt, base_url: render.base_url, edge }), 'application/json', 'meta');
  // An incremental build keeps the earlier manifest's shards whose files did not change.
  const patched = plan.mode === 'incremental' && !plan.recovering ? patchManifest(sink, state.db, generatedAt, readManifest(opts.outDir), state.shardBytes()) : null;
  const { manifest, shardBytes } = patched ?? writeManifest(sink, generatedAt);
  // A full render, or one after an interrupted build, walks the directory (leftover temporary
  // files); an incremental one removes exactly the retired files no unit wrote again.
  const oldShards = state.replaceShards(shardBytes);
  // A directory that was empty when the build began holds only what it wrote: no walk.
  const removed = emptyAtStart ? 0 : plan.mode === 'full' || plan.recovering ? removeStale(opts.outDir, sink) : state.removeRetired(oldShards);
  sink.close();
  const manifestSha = createHash('sha256').update(fs.readFileSync(path.join(opts.outDir, 'manifest.json'))).digest('hex');
  state.commit({ dbId, upto, fingerprint, manifestSha, seats: seatsNow });
  // A writer started now takes its snapshot before the database can change (this build still holds its lock).
  bulk.afterCommit();
  // The change rows this build rendered are no longer needed (src/derive/changes.ts).
  consumeChanges(db, upto);
  return {
    generated_at: generatedAt,
    derive: a.derive,
    pruned_probe_rows: a.pruned,
    render: { mode: plan.mode, reason: plan.reason, participants, lists, uptime, records, events, grams, threads: recordsPath === null ? 1 : 2, compare },
    manifest: { mode: patched ? 'patched' : 'written', shards: manifest.shards.length, shards_cut: patched?.shardsCut ?? manifest.shards.length, shards_read: patched?.shardsRead ?? 0 },
    bulk: bulk.report,
    routes,
    missing_routes: missing,
    files: manifest.files,
    written: sink.stats.written,
    written_by_class: sink.stats.written_by_class,
    removed,
    bytes: manifest.bytes,
    seconds: Math.round(performance.now() - a.t0) / 1000,
  };
}

/**
 * Starts the render worker (src/render/offload.ts): a full build's on OFFLOADED_ROUTES, an incremental
 * build's on INCREMENTAL_OFFLOADED_ROUTES.
 */
function startOffload(
  opts: BuildOptions,
  plan: RenderPlan,
  a: {
    recordsPath: string;
    renderOpts: RenderOptions;
    emptyAtStart: boolean;
    db: ReturnType<typeof openDb>;
    state: RenderState;
    upto: number;
    recorded: RecordedState | null;
    changedUnits: number[];
    changedPacks: number[];
    gramsDue: boolean;
  },
): Offload {
  const job = { dbPath: opts.dbPath, outDir: opts.outDir, recordsPath: a.recordsPath, nowMs: opts.nowMs, opts: a.renderOpts, fresh: a.emptyAtStart, gramsStatePath: gramsStatePathOf(a.state.file) };
  if (plan.mode === 'full') {
    return Offload.start({ ...job, routes: OFFLOADED_ROUTES, stateFile: a.recorded === null ? null : a.state.file, packs: { min: 0, max: RECORD_PACKS - 1 }, incremental: null });
  }
  // The changed packs are shared by position: both threads list the same ones, ascending.
  return Offload.start({
    ...job,
    routes: INCREMENTAL_OFFLOADED_ROUTES,
    stateFile: a.state.file,
    packs: { min: 0, max: a.changedPacks.length - 1 },
    incremental: { since: plan.since, upto: a.upto, participants: a.changedUnits, gramsDue: a.gramsDue, listParticipants: a.gramsDue ? (a.db.prepare('SELECT participant_id FROM temp.render_list_participants').pluck().all() as number[]) : [] },
  });
}

/** Where the grams index keeps its state between builds (src/render/grams-model.ts): beside the build's state file. */
export const gramsStatePathOf = (stateFile: string): string => `${stateFile}-grams`;

/** The manifest.json an earlier build wrote (the plan checked its hash). */
function readManifest(outDir: string): Manifest {
  return JSON.parse(fs.readFileSync(path.join(outDir, 'manifest.json'), 'utf8')) as Manifest;
}

/** Deletes files under outDir that this build neither listed nor wrote (earlier chunks, shards, temp files). */
function removeStale(outDir: string, sink: DirectorySink): number {
  let removed = 0;
  /**
   * Walks a directory; returns how many entries it still holds. Streamed (opendir): the participants'
   * directory holds 3 million records at `peppol`, whose entries read at once took about 200 MB, the
   * peak of a full build over an earlier tree. Removing the entry just read is safe while iterating.
   */
  const walk = (dir: string): number => {
    let left = 0;
    const d = fs.opendirSync(dir, { bufferSize: 256 });
    try {
      for (let e = d.readSync(); e !== null; e = d.readSync()) left += visit(dir, e);
    } finally {
      d.closeSync();
    }
    return left;
  };
  /** Removes one entry unless this build keeps it (a directory: unless it holds one); 1 when it stays. */
  const visit = (dir: string, e: fs.Dirent): number => {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (walk(abs) > 0) return 1;
      fs.rmdirSync(abs);
      return 0;
    }
    if (sink.keeps(path.relative(outDir, abs).split(path.sep).join('/'))) return 1;
    fs.unlinkSync(abs);
    removed++;
    return 0;
  };
  walk(outDir);
  return removed;
}
