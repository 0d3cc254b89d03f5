// The background writer of a day's bulk copy (docs/bulk.md, "Cadence"): a build that is due to write
// the copy starts a detached process (dist/bulk-writer.mjs, src/bulk/writer.ts) instead of writing it
// within the build; a later build adopts the finished copy into the snapshot.
//
// The staging directory `<out>.bulk-staging/` beside the output directory holds one job at a time:
//
//   job.json       what to write: the day, the settings' key, the clock, the database and the state it
//                  must be read at (its id, derive watermark and last ingested segment), the settings
//   writer.log     the writer's progress and errors (its stderr)
//   ready.json     the writer holds a read snapshot of that database state (written once it does)
//   <day>/         the copy's files, each renamed to its name once complete
//   done.json      every file with its SHA-256 and size, per table its rows and seconds, the writer's
//                  seconds and peak RSS: written last, so a copy without it is never adopted
//   failed.json    the writer's error, when it failed
//
// The writer holds the lock `<out>.bulk-staging.lock` (src/util/lock.ts: an operating-system lock that
// dies with its process) from before it reads job.json until after it wrote done.json or failed.json. So
// a build tells a running writer (the lock is held) from a finished one (done.json) and from one that
// died (neither, the lock free), and stops a writer by killing the lock's holder.
//
// The writer reads the database in one read transaction (WAL: writers go on, the reader keeps its
// snapshot) taken while the starting build still holds the database's lock: the build waits for
// ready.json before it returns. The writer checks that the state it reads is the one the build rendered
// (job.json), so a copy is always of one build's database state.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/index.js';
import { getMeta, type Db } from '../db/index.js';
import { acquireLock, LockedError, type Lock, type LockHolder } from '../util/lock.js';
import type { BulkTableReport, CopyFile } from './copy.js';

/** The command a writer names in its lock (a build kills only a holder of this name, on this host). */
export const WRITER_COMMAND = 'peppol-snapshot bulk writer';
/** Bumped when the job files' meaning changes (a job of another version is discarded). */
export const JOB_VERSION = 1;
const JOB_FILE = 'job.json';
const READY_FILE = 'ready.json';
const DONE_FILE = 'done.json';
const FAILED_FILE = 'failed.json';
const LOG_FILE = 'writer.log';
/** The writer's prefix of the SQLite dump's temporary files (src/bulk/copy.ts writeCopyFiles). */
export const SCRATCH = 'scratch';
/** How long a build waits for a writer to take its snapshot (ready.json) before it gives up. */
export const READY_TIMEOUT_MS = 60_000;
/** How long a build waits for a killed writer to release its lock. */
const STOP_TIMEOUT_MS = 10_000;

/** What a writer is to write, and from which database state. */
export interface BulkJob {
  v: number;
  /** Random: the state records the job its build started (`bulk_job`), and only that one is adopted. */
  id: string;
  day: string;
  /** The copy's key (src/bulk/index.ts bulkKey): the day and the settings that decide its bytes. */
  key: string;
  /** Why the copy is written. */
  reason: string;
  dbPath: string;
  nowMs: number;
  mark: DbMark;
  config: Pick<Config, 'bulk' | 'render'>;
  /** Wall clock when the build started the writer. */
  started_at: string;
}

/** Which state of which database: its id, derive watermark and last ingested segment. */
export interface DbMark {
  dbId: string;
  upto: number;
  segment: number;
}

export interface BulkReady {
  pid: number;
  at: string;
}

export interface BulkDone {
  files: CopyFile[];
  tables: Record<string, BulkTableReport>;
  redacted: number;
  /** The writer's seconds, from its snapshot to done.json, and its peak resident memory. */
  seconds: number;
  peak_rss_mb: number;
  finished_at: string;
}

/** What the staging directory holds. */
export type JobState =
  | { status: 'running'; job: BulkJob | null; holder: LockHolder | null }
  | { status: 'done'; job: BulkJob; ready: BulkReady | null; done: BulkDone }
  | { status: 'failed'; job: BulkJob; ready: BulkReady | null; error: string }
  /** No writer holds the lock and it left neither done.json nor failed.json (killed, crashed, or leftovers). */
  | { status: 'dead'; job: BulkJob | null; ready: BulkReady | null };

/** The staging directory of an output directory: `<out>.bulk-staging` beside it. */
export function stagingDir(outDir: string): string {
  return `${path.resolve(outDir).replace(/[/\\]+$/, '')}.bulk-staging`;
}

/** Where a writer puts the files of its copy. */
export function stagedFilesDir(staging: string, day: string): string {
  return path.join(staging, day);
}

/** The database state a build renders from, as a writer checks it (call within a read transaction). */
export function dbMark(db: Db): DbMark {
  return {
    dbId: getMeta(db, 'db_id') ?? '',
    upto: Number(getMeta(db, 'derive_upto') ?? '0'),
    segment: db.prepare('SELECT coalesce(max(id), 0) FROM segments').pluck().get() as number,
  };
}

/** The writer script: next to the bundle in dist/, or dist/ of the project when running from source. */
function writerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/bulk-writer.mjs', here) : new URL('./bulk-writer.mjs', here);
}

/** Whether the writer script is there (a checkout not built yet has none: builds then write the copy themselves). */
export function writerAvailable(): boolean {
  return fs.existsSync(fileURLToPath(writerUrl()));
}

/** A JSON file of the staging directory, or null when it is absent or unreadable (half written by a killed writer). */
export function readJobFile<T>(staging: string, name: string): T | null {
  try {
    // The files are written by this code (writeJobFile); a torn or foreign one fails to parse.
    return JSON.parse(fs.readFileSync(path.join(staging, name), 'utf8')) as T;
  } catch {
    return null;
  }
}

/** Writes a JSON file of the staging directory through a temporary name (never seen half written). */
export function writeJobFile(staging: string, name: string, value: unknown): void {
  const abs = path.join(staging, name);
  const tmp = `${abs}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `${JSON.stringify(value)}\n`);
  fs.renameSync(tmp, abs);
}

export const JOB_FILES = { job: JOB_FILE, ready: READY_FILE, done: DONE_FILE, failed: FAILED_FILE, log: LOG_FILE } as const;

export function readJob(staging: string): BulkJob | null {
  const job = readJobFile<BulkJob>(staging, JOB_FILE);
  return job !== null && job.v === JOB_VERSION ? job : null;
}

/** The staging directory's lock, or the error naming its holder. */
function lockOrHolder(staging: string, command: string): Lock | LockedError {
  try {
    return acquireLock(staging, command);
  } catch (e) {
    if (e instanceof LockedError) return e;
    throw e;
  }
}

/** Blocks the thread for `ms` (a build is synchronous). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** What the staging directory of `outDir` holds, or null when there is none. */
export function inspectJob(outDir: string): JobState | null {
  const staging = stagingDir(outDir);
  if (!fs.existsSync(staging)) return null;
  // The lock first: a writer writes done.json before it releases the lock, so a free lock and no
  // done.json mean that no writer will finish this job.
  const lock = lockOrHolder(staging, 'peppol-snapshot build');
  if (lock instanceof LockedError) return { status: 'running', job: readJob(staging), holder: lock.holder };
  try {
    const job = readJob(staging);
    const ready = readJobFile<BulkReady>(staging, READY_FILE);
    if (job === null) return { status: 'dead', job: null, ready };
    const done = readJobFile<BulkDone>(staging, DONE_FILE);
    if (done !== null) return { status: 'done', job, ready, done };
    const failed = readJobFile<{ error: string }>(staging, FAILED_FILE);
    if (failed !== null) return { status: 'failed', job, ready, error: failed.error };
    return { status: 'dead', job, ready };
  } finally {
    lock.release();
  }
}

/**
 * Stops the writer of `outDir` if one runs (SIGKILL to the lock's holder, when it is a writer on this
 * host) and removes the staging directory. Returns false when a writer holds the lock and could not be
 * stopped (the directory is left as it is).
 */
export function discardJob(outDir: string): boolean {
  const staging = stagingDir(outDir);
  if (!fs.existsSync(staging)) return true;
  let lock = lockOrHolder(staging, 'peppol-snapshot build');
  if (lock instanceof LockedError) {
    const h = lock.holder;
    if (h !== null && h.host === os.hostname() && h.command === WRITER_COMMAND) {
      try {
        process.kill(h.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const t0 = Date.now();
    while ((lock = lockOrHolder(staging, 'peppol-snapshot build')) instanceof LockedError && Date.now() - t0 < STOP_TIMEOUT_MS) sleep(50);
    if (lock instanceof LockedError) return false;
  }
  try {
    fs.rmSync(staging, { recursive: true, force: true });
  } finally {
    lock.release();
  }
  return true;
}

/** Removes the staging directory after its copy was adopted, unless a writer still holds it (the next build does). */
export function removeAdopted(outDir: string, jobId: string): void {
  const staging = stagingDir(outDir);
  const lock = lockOrHolder(staging, 'peppol-snapshot build');
  if (lock instanceof LockedError) return;
  try {
    if (readJob(staging)?.id === jobId) fs.rmSync(staging, { recursive: true, force: true });
  } finally {
    lock.release();
  }
}

/** The last line the writer logged (its progress), or null. */
export function lastLogLine(outDir: string): string | null {
  const file = path.join(stagingDir(outDir), LOG_FILE);
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, 4096));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      const lines = buf.toString('utf8').split('\n').filter((l) => l.trim() !== '');
      return lines.at(-1) ?? null;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** Whether a child process has ended (a zombie: this thread does not reap it while it blocks). Linux only; false elsewhere. */
function ended(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' && fs.existsSync('/proc/self/stat');
  }
}

export interface StartedWriter {
  pid: number | null;
  /**
   * Blocks until the writer holds its read snapshot (ready.json), at most `timeoutMs`. Returns null when
   * it does, else why not (the writer is killed then).
   */
  awaitReady(timeoutMs?: number): string | null;
}

/**
 * Starts a writer for `job` (the staging directory must be free: discardJob). Detached: its own process
 * group, no stdin or stdout, stderr into writer.log; `run` and `build` end without waiting for it.
 */
export function startWriter(outDir: string, job: BulkJob): StartedWriter {
  const staging = stagingDir(outDir);
  fs.mkdirSync(staging, { recursive: true });
  writeJobFile(staging, JOB_FILE, job);
  const log = fs.openSync(path.join(staging, LOG_FILE), 'a');
  let pid: number | null = null;
  try {
    const child = spawn(process.execPath, [fileURLToPath(writerUrl()), staging, job.id], { detached: true, stdio: ['ignore', 'ignore', log] });
    // A failure to spawn is reported by the event loop; awaitReady sees no pid or a writer that ended.
    child.on('error', () => {});
    child.unref();
    pid = child.pid ?? null;
  } finally {
    fs.closeSync(log);
  }
  return {
    pid,
    awaitReady: (timeoutMs = READY_TIMEOUT_MS) => {
      if (pid === null) return 'the writer could not be started';
      const t0 = Date.now();
      for (;;) {
        if (fs.existsSync(path.join(staging, READY_FILE))) return null;
        const failed = readJobFile<{ error: string }>(staging, FAILED_FILE);
        if (failed !== null) return `the writer failed: ${failed.error}`;
        if (ended(pid)) return `the writer ended before it took its snapshot${logTail(staging)}`;
        if (Date.now() - t0 > timeoutMs) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone
          }
          return `the writer did not take its snapshot within ${timeoutMs / 1000} s; killed`;
        }
        sleep(20);
      }
    },
  };
}

function logTail(staging: string): string {
  try {
    const text = fs.readFileSync(path.join(staging, LOG_FILE), 'utf8').trim();
    return text === '' ? '' : `: ${text.slice(-500)}`;
  } catch {
    return '';
  }
}
