// Worker thread entry of a build's offloaded routes (src/render/offload.ts): renders them into the
// output directory and records their files, kept lists, retired files and touched paths in its records
// file, then reports.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { jsonBody } from '../api/json.js';
import { openDb } from '../db/index.js';
import { RenderContext, renderTempStore, type ListStore } from './context.js';
import { keptListStore, recordsListStore, SharedBatches, timedRender, type OffloadJob, type OffloadMessage, type OffloadReport } from './offload.js';
import { RENDERERS } from './routes/index.js';
import { DirectorySink } from './sink.js';
import { collectChangedPacks, collectEventChanges, collectUptimeChanges, recordedState, useChangedParticipants } from './state.js';

// The job the main thread started this worker with (src/render/offload.ts Offload.start).
const job = workerData as OffloadJob;
const words = new Int32Array(job.shared);
// The script runs (src/render/offload.ts join: a worker that never gets here failed to load).
Atomics.store(words, 3, 1);

/** Counts the files put, for the main thread's progress and stall check. */
class CountingSink extends DirectorySink {
  override put(...args: Parameters<DirectorySink['put']>): void {
    super.put(...args);
    Atomics.add(words, 1, 1);
  }
}

function run(): OffloadReport {
  const db = openDb(job.dbPath, { readonly: true, cacheMiB: 64 });
  renderTempStore(db);
  const records = new Database(job.recordsPath);
  const recorded = job.stateFile === null ? null : recordedState(job.stateFile);
  try {
    records.pragma('journal_mode = OFF');
    records.pragma('synchronous = OFF');
    db.exec('BEGIN');
    records.exec('BEGIN');
    const inc = job.incremental;
    let lists: ListStore;
    if (inc === null) lists = recordsListStore(records);
    else {
      if (recorded === null) throw new Error('an incremental render without the state file');
      // The change set, collected on this connection as the main thread collects it on its own.
      collectUptimeChanges(db, inc.since, inc.upto);
      collectEventChanges(db, inc.since, inc.upto);
      // The changed participants as the main thread collected them, and so the same packs.
      useChangedParticipants(db, inc.participants, inc.listParticipants);
      collectChangedPacks(db);
      lists = keptListStore(records, recorded);
    }
    const sink = new CountingSink(job.outDir, { db: records, fresh: job.fresh, previousSha: recorded?.sha });
    const ctx = new RenderContext(db, job.nowMs, sink, job.opts, jsonBody, () => {}, inc === null ? 'all' : 'changed', lists, new SharedBatches(job.shared, job.packs));
    ctx.gramsDue = inc === null || inc.gramsDue;
    ctx.gramsStatePath = job.gramsStatePath;
    const routes: OffloadReport['routes'] = {};
    for (const id of job.routes) {
      const render = RENDERERS[id];
      if (render === undefined) throw new Error(`no renderer for ${id}`);
      timedRender(routes, id, () => render(ctx));
    }
    // An incremental build's paths whose manifest entry may differ (the sink records them, knowing the earlier hashes).
    if (inc !== null) records.exec('INSERT INTO main.touched_paths (path) SELECT path FROM temp.touched');
    records.exec('COMMIT');
    db.exec('COMMIT');
    return { routes, stats: sink.stats, lists: ctx.listsReport, uptime: ctx.uptimeReport, events: ctx.eventsReport, grams: ctx.gramsReport, records: ctx.recordsReport };
  } finally {
    recorded?.close();
    records.close();
    db.close();
  }
}

let message: OffloadMessage;
try {
  message = { ok: true, report: run() };
} catch (e) {
  message = { ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
}
job.port.postMessage(message);
Atomics.store(words, 0, message.ok ? 1 : 2);
Atomics.notify(words, 0);
