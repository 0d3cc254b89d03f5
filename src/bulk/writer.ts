// The background writer of a bulk copy (dist/bulk-writer.mjs; src/bulk/background.ts, docs/bulk.md
// "Cadence"): `node bulk-writer.mjs <staging directory> <job id>`, started detached by a build.
//
// 1. Takes the staging directory's lock (held until done.json or failed.json is written; it dies with
//    the process), and checks that the job is still the one it was started for.
// 2. Opens the database read-only and begins a read transaction: its snapshot is the database state the
//    build rendered from (the build waits for ready.json before it returns and releases the database's
//    lock); the writer checks that state against the job (database id, derive watermark, last segment).
// 3. Lowers its priority (the cron cycles keep the CPU), writes the copy into `<staging>/<day>/` with
//    the code a build writes it with (src/bulk/copy.ts), then done.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb } from '../db/index.js';
import { acquireLock, LockedError, type Lock } from '../util/lock.js';
import { dbMark, JOB_FILES, readJob, SCRATCH, stagedFilesDir, WRITER_COMMAND, writeJobFile, type BulkDone, type BulkReady } from './background.js';
import { writeCopyFiles } from './copy.js';

/** Page cache of the writer's database connection, in KiB (a build's render uses the same). */
const CACHE_KIB = 64 * 1024;
/** How much the writer lowers its priority (nice), at most to 19. */
const NICE_STEP = 10;

const log = (line: string): void => {
  process.stderr.write(`[${new Date().toISOString()}] ${line}\n`);
};

function main(staging: string, id: string): number {
  let lock: Lock;
  try {
    lock = acquireLock(staging, WRITER_COMMAND);
  } catch (e) {
    log(e instanceof LockedError ? `another writer runs: ${e.message}` : String(e));
    return 1;
  }
  try {
    const job = readJob(staging);
    // A build discarded the job (it holds the lock while it removes the directory) before this writer got the lock.
    if (job === null || job.id !== id) {
      log(`job ${id} is no longer in ${staging}; nothing to do`);
      return 1;
    }
    try {
      const db = openDb(job.dbPath, { readonly: true, cacheMiB: CACHE_KIB / 1024 });
      try {
        // Sorts (the orders no index serves) on disk: memory does not grow with the tables.
        db.pragma('temp_store = FILE');
        db.exec('BEGIN');
        // The first read takes the snapshot.
        const mark = dbMark(db);
        if (mark.dbId !== job.mark.dbId || mark.upto !== job.mark.upto || mark.segment !== job.mark.segment) {
          throw new Error(`the database is not in the state the build rendered from (found ${JSON.stringify(mark)}, expected ${JSON.stringify(job.mark)}): it changed before the writer took its snapshot`);
        }
        const ready: BulkReady = { pid: process.pid, at: new Date().toISOString() };
        writeJobFile(staging, JOB_FILES.ready, ready);
        try {
          os.setPriority(Math.min(19, os.getPriority() + NICE_STEP));
        } catch {
          // not allowed here: run at the build's priority
        }
        log(`writing the copy of ${job.day} (${job.reason}) from derive watermark ${mark.upto} at ${new Date(job.nowMs).toISOString()}`);
        const t0 = performance.now();
        const dir = stagedFilesDir(staging, job.day);
        fs.rmSync(dir, { recursive: true, force: true });
        const r = writeCopyFiles({ db, config: job.config, nowMs: job.nowMs, progress: log }, dir, path.join(staging, SCRATCH), (file, w) => fs.renameSync(w.tmp, path.join(dir, file)));
        db.exec('COMMIT');
        const done: BulkDone = {
          files: r.files,
          tables: r.tables,
          redacted: r.redacted,
          seconds: Math.round(performance.now() - t0) / 1000,
          peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
          finished_at: new Date().toISOString(),
        };
        writeJobFile(staging, JOB_FILES.done, done);
        log(`done: ${r.files.length} files, ${(r.files.reduce((n, f) => n + f.bytes, 0) / 1e6).toFixed(1)} MB, ${done.seconds} s, peak RSS ${done.peak_rss_mb} MB`);
        return 0;
      } finally {
        db.close();
      }
    } catch (e) {
      log(e instanceof Error ? (e.stack ?? e.message) : String(e));
      writeJobFile(staging, JOB_FILES.failed, { error: e instanceof Error ? e.message : String(e), at: new Date().toISOString() });
      return 1;
    }
  } finally {
    lock.release();
  }
}

const [staging, id] = process.argv.slice(2);
if (staging === undefined || id === undefined) {
  log('usage: bulk-writer.mjs <staging directory> <job id>');
  process.exitCode = 2;
} else {
  process.exitCode = main(path.resolve(staging), id);
}
