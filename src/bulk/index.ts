// The bulk downloads of a snapshot (docs/bulk.md): every published resource as a table, written once
// per UTC day into `bulk/YYYY-MM-DD/` and copied to `bulk/latest/`, from the database state of one build.
//
// - Cadence: the day's copy is due when the state has none for the day of the build's --now (the first
//   build of a UTC day), when the bulk settings changed, and on every full render (`build --full`, or a
//   render the state cannot trust: src/render/state.ts plan). Other builds keep the files and their
//   manifest entries as they are.
// - Off the cycle's path: an incremental build that is due starts the background writer
//   (src/bulk/background.ts) and returns; the writer writes the copy from that build's database state
//   into the staging directory beside the output directory; a later build adopts the finished copy
//   (its files are linked into the snapshot, their manifest entries added). Until then the earlier
//   copy stays. `build --full`, a first build into an empty directory, and builds with
//   `background: false` write the copy within the build (`written`).
// - Units: each dated copy and `bulk/latest/` are render units of their own (src/bulk/units.ts),
//   retired only here: when a copy is written or adopted, or expires after `bulk.keep_days`.
// - A file whose bytes did not change keeps its earlier bytes on disk, so `publish` skips it.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import type { DirectorySink } from '../render/sink.js';
import type { RenderState } from '../render/state.js';
import { dbMark, discardJob, inspectJob, JOB_VERSION, lastLogLine, removeAdopted, stagedFilesDir, stagingDir, startWriter, type BulkJob } from './background.js';
import { linkBeside, placeCopyFile, placeLatest, writeCopyFiles, BULK_DIR, type BulkTableReport, type CopyFile, type CopyInput } from './copy.js';
import { hashFile } from './file.js';
import { BULK_LATEST_UNIT, BULK_UNIT_MAX, bulkDayUnit, dayOfBulkUnit, utcDay } from './units.js';
import { DAY_MS } from '../api/time.js';

export { BULK_DIR, BULK_LATEST_DIR, DATA_PACKAGE_FILE, SHA256SUMS_FILE, SQLITE_FILE, type BulkTableReport } from './copy.js';

/** Bumped when the files' layout or content rules change: the next build writes the day's copy again. */
const BULK_FORMAT = 1;
/** The state's `info` key recording the copy written last: its day and settings. */
const STATE_KEY = 'bulk_key';
/** The state's `info` key naming the background writer's job a build started ('' when none is pending). */
const JOB_KEY = 'bulk_job';

/**
 * What a build did with the bulk copy:
 * - `written`: the day's copy was written within this build (`build --full`, a first build into an
 *   empty directory, no writer script, or `background: false`);
 * - `started`: the copy is due; this build started the background writer on its database state (the
 *   earlier copy stays until a later build adopts the new one);
 * - `pending`: a writer started by an earlier build is still writing (the earlier copy stays);
 * - `adopted`: a writer's finished copy was put into the snapshot by this build;
 * - `failed`: the copy is due but the writer could not start (the earlier copy stays; the next build
 *   tries again);
 * - `kept`: the day's copy exists;
 * - `disabled`: `bulk.enabled` is false (every copy removed).
 */
export type BulkMode = 'written' | 'started' | 'pending' | 'adopted' | 'failed' | 'kept' | 'disabled';

/** The background writer of the copy (started, pending or adopted). */
export interface BulkWriterReport {
  pid: number | null;
  /** The clock and derive watermark of the build whose database state the copy is of. */
  now: string;
  upto: number;
  /** Wall clock when that build started the writer. */
  started_at: string;
  /** Once adopted: the writer's seconds (from its snapshot to its last file) and peak resident memory. */
  seconds: number | null;
  peak_rss_mb: number | null;
  /** While pending: the writer's last progress line. */
  progress: string | null;
}

export interface BulkReport {
  mode: BulkMode;
  reason: string;
  day: string | null;
  /** Dated copies removed (expired, or bulk disabled), by day. */
  expired: string[];
  tables: Record<string, BulkTableReport>;
  /** Rows dropped or fields nulled for privacy (src/bulk/tables.ts); 0 unless the derivation failed its rule. */
  redacted: number;
  /** Files of the day's copy written or adopted, `bulk/latest/` not counted, and their bytes. */
  files: number;
  bytes: number;
  /** Files written into the snapshot (a file whose bytes did not change is not written again). */
  written: number;
  writer: BulkWriterReport | null;
  /** Seconds of the build's bulk step (`started`: with the wait for the writer's snapshot; not the writer's own seconds). */
  seconds: number;
}

export interface BulkOptions {
  db: Db;
  state: RenderState;
  sink: DirectorySink;
  config: Config;
  nowMs: number;
  /** The database's file (the background writer opens it) and id. */
  dbPath: string;
  dbId: string;
  /** The render's mode: a full render writes the day's copy again. */
  full: boolean;
  /** The earlier build's recorded hashes can be trusted (an incremental build after one that finished). */
  trustState: boolean;
  /** A due copy is written by the background writer (src/bulk/background.ts) rather than within this build. */
  background: boolean;
  progress: (message: string) => void;
}

/** Bulk's step of a build, and what it leaves for after the build's state is committed. */
export interface BulkStep {
  report: BulkReport;
  /**
   * Runs after the state is committed, before the database can change: waits for a writer started now
   * to take its snapshot (the report says `failed` when it does not), or removes an adopted copy's
   * staging directory.
   */
  afterCommit(): void;
}

/** What decides a copy's bytes besides the database: the day, the settings (keep_days aside), the format. */
function bulkKey(day: string, config: Config): string {
  const { keep_days: _keep, ...bulk } = config.bulk;
  return createHash('sha256').update(JSON.stringify({ v: BULK_FORMAT, day, bulk, base: config.render.base_url })).digest('hex');
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The report of the writer of job `j`, process `pid`. */
function writerReport(j: BulkJob, pid: number | null, extra: Partial<BulkWriterReport> = {}): BulkWriterReport {
  return { pid, now: iso(j.nowMs), upto: j.mark.upto, started_at: j.started_at, seconds: null, peak_rss_mb: null, progress: null, ...extra };
}

/** Bulk's step of a build (see the file comment). Runs in the build's state transaction, within its database read transaction. */
export function runBulk(o: BulkOptions): BulkStep {
  const t0 = performance.now();
  const st = o.state.db;
  const outDir = o.sink.outDir;
  const units = new Set(st.prepare('SELECT DISTINCT unit FROM files WHERE unit BETWEEN ? AND ?').pluck().all(BULK_LATEST_UNIT, BULK_UNIT_MAX) as number[]);
  const report = (r: Partial<BulkReport> & Pick<BulkReport, 'mode' | 'reason'>): BulkReport => ({
    day: null,
    expired: [],
    tables: {},
    redacted: 0,
    files: 0,
    bytes: 0,
    written: 0,
    writer: null,
    ...r,
    seconds: Math.round(performance.now() - t0) / 1000,
  });
  const done = (r: BulkReport, afterCommit: () => void = () => {}): BulkStep => ({ report: r, afterCommit });
  if (!o.config.bulk.enabled) {
    discardJob(outDir);
    o.state.retireUnits(units);
    o.state.setInfoValue(STATE_KEY, '');
    o.state.setInfoValue(JOB_KEY, '');
    return done(report({ mode: 'disabled', reason: 'bulk.enabled is false', expired: [...units].filter((u) => u !== BULK_LATEST_UNIT).map(dayOfBulkUnit).sort() }));
  }
  const day = utcDay(o.nowMs);
  const dayUnit = bulkDayUnit(day);
  // A dated copy expires when it is keep_days old, or dated after the build's day (the clock went back).
  const oldest = utcDay(Date.parse(`${day}T00:00:00Z`) - (o.config.bulk.keep_days - 1) * DAY_MS);
  const expiredUnits = [...units].filter((u) => u !== BULK_LATEST_UNIT && (dayOfBulkUnit(u) < oldest || dayOfBulkUnit(u) > day));
  o.state.retireUnits(expiredUnits);
  const expired = expiredUnits.map(dayOfBulkUnit).sort();
  // Copies kept from a state the render does not trust must still be on disk as recorded.
  if (!o.trustState) {
    const files = st.prepare('SELECT path, bytes, unit FROM files WHERE unit BETWEEN ? AND ?').all(BULK_LATEST_UNIT, BULK_UNIT_MAX) as Array<{ path: string; bytes: number; unit: number }>;
    const broken = new Set(files.filter((f) => fs.statSync(path.join(outDir, f.path), { throwIfNoEntry: false })?.size !== f.bytes).map((f) => f.unit));
    o.state.retireUnits(broken);
    for (const u of broken) units.delete(u);
  }
  for (const u of expiredUnits) units.delete(u);
  const key = bulkKey(day, o.config);
  const due = o.full
    ? "a full render writes the day's copy again"
    : !units.has(dayUnit) || !units.has(BULK_LATEST_UNIT)
      ? 'no copy of the day yet'
      : o.state.infoValue(STATE_KEY) !== key
        ? 'the bulk settings changed'
        : null;

  // The copy is put into the snapshot: the earlier hashes of its paths decide which files are written.
  const replaceCopy = (): ((rel: string) => string | undefined) => {
    const before = new Map((st.prepare('SELECT path, sha256 FROM files WHERE unit IN (?, ?)').all(dayUnit, BULK_LATEST_UNIT) as Array<{ path: string; sha256: string }>).map((r) => [r.path, r.sha256]));
    o.state.retireUnits([dayUnit, BULK_LATEST_UNIT]);
    return (rel) => {
      if (o.trustState) return before.get(rel);
      // Not trusted: the bytes on disk decide (bulk files are read once a day at most).
      const abs = path.join(outDir, rel);
      return fs.existsSync(abs) ? hashFile(abs).sha256 : undefined;
    };
  };

  if (!o.background && due !== null) {
    // Within the build: a writer's job (of an earlier state) is dropped, never adopted after this copy.
    discardJob(outDir);
    o.state.setInfoValue(JOB_KEY, '');
    o.progress(`bulk: writing ${day} (${due})`);
    const r = writeBulkCopy({ db: o.db, sink: o.sink, config: o.config, nowMs: o.nowMs, progress: o.progress }, dayUnit, replaceCopy());
    o.state.setInfoValue(STATE_KEY, key);
    return done(report({ mode: 'written', reason: due, day, expired, ...r }));
  }

  // The job in the staging directory: this directory's (the one its state's last build started, of
  // this day and settings and database), or a leftover to discard.
  const job = inspectJob(outDir);
  const jobId = o.state.infoValue(JOB_KEY) ?? '';
  const ours = job !== null && job.job !== null && jobId !== '' && job.job.id === jobId && job.job.key === key && job.job.mark.dbId === o.dbId;
  let failure: string | null = null;
  if (ours && !(o.background && o.full)) {
    const j = job.job!;
    if (job.status === 'running') {
      const progress = lastLogLine(outDir);
      o.progress(`bulk: ${day} is being written in the background (pid ${job.holder?.pid ?? '?'}${progress === null ? '' : `: ${progress}`})`);
      return done(report({ mode: 'pending', reason: `the writer started ${j.started_at} is still writing (${j.reason}); the earlier copy stays`, day, expired, writer: writerReport(j, job.holder?.pid ?? null, { progress }) }));
    }
    if (job.status === 'done') {
      const problem = stagedProblem(stagedFilesDir(stagingDir(outDir), j.day), job.done.files);
      if (problem === null) {
        o.progress(`bulk: adopting ${day} (written in the background from the state of ${iso(j.nowMs)})`);
        const written = adoptCopy(o.sink, j, job.done.files, dayUnit, replaceCopy());
        o.state.setInfoValue(STATE_KEY, key);
        o.state.setInfoValue(JOB_KEY, '');
        const files = job.done.files;
        return done(
          report({
            mode: 'adopted',
            reason: `written in the background from the database state of ${iso(j.nowMs)} (${j.reason})`,
            day,
            expired,
            tables: job.done.tables,
            redacted: job.done.redacted,
            files: files.length,
            bytes: files.reduce((n, f) => n + f.bytes, 0),
            written,
            writer: writerReport(j, job.ready?.pid ?? null, { seconds: job.done.seconds, peak_rss_mb: job.done.peak_rss_mb }),
          }),
          () => removeAdopted(outDir, j.id),
        );
      }
      failure = `the copy written in the background is incomplete (${problem})`;
    } else if (job.status === 'failed') failure = `the writer started ${j.started_at} failed: ${job.error}`;
    else failure = `the writer started ${j.started_at} ended without finishing`;
  }
  // Anything else in the staging directory is of no use now: a failed or killed writer, or one of
  // another day, other settings or a state superseded since.
  if (job !== null && !discardJob(outDir)) {
    const who = job.status === 'running' ? `pid ${job.holder?.pid ?? '?'} on ${job.holder?.host ?? '?'}` : 'its writer';
    return done(report({ mode: due === null ? 'kept' : 'failed', reason: `the staging directory ${stagingDir(outDir)} is held by ${who}, which could not be stopped`, day, expired }));
  }
  if (jobId !== '') o.state.setInfoValue(JOB_KEY, '');
  if (due === null) return done(report({ mode: 'kept', reason: "the day's copy exists", day, expired }));

  // Start the writer on this build's database state (read here, within the render's transaction).
  const reason = failure === null ? due : `${due}; ${failure}, started again`;
  const j: BulkJob = {
    v: JOB_VERSION,
    id: randomUUID(),
    day,
    key,
    reason,
    dbPath: path.resolve(o.dbPath),
    nowMs: o.nowMs,
    mark: dbMark(o.db),
    config: { bulk: o.config.bulk, render: o.config.render },
    started_at: new Date().toISOString(),
  };
  o.progress(`bulk: starting the background writer of ${day} (${reason})`);
  const w = startWriter(outDir, j);
  o.state.setInfoValue(JOB_KEY, j.id);
  const r = report({ mode: 'started', reason, day, expired, writer: writerReport(j, w.pid) });
  return done(r, () => {
    o.progress(`bulk: waiting for the writer of ${day} to take its snapshot`);
    const t1 = performance.now();
    const error = w.awaitReady();
    // The build's bulk seconds include the wait.
    r.seconds = Math.round(r.seconds * 1000 + performance.now() - t1) / 1000;
    if (error !== null) {
      r.mode = 'failed';
      r.reason = `${reason}; ${error}`;
    }
  });
}

/** The CLI's line about the bulk step of a build (null when there is nothing to say: kept, nothing expired). */
export function formatBulkLine(b: BulkReport): string | null {
  const mb = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;
  const expired = b.expired.length > 0 ? `; expired ${b.expired.join(', ')}` : '';
  const w = b.writer;
  switch (b.mode) {
    case 'written':
      return `build: bulk ${b.day}: ${b.files} files, ${mb(b.bytes)} (${b.written} written), ${b.seconds.toFixed(1)} s (${b.reason})${expired}`;
    case 'started':
      return `build: bulk ${b.day}: writing in the background (pid ${w?.pid ?? '?'}) from this build's database state (${b.reason}); a later build adopts it${expired}`;
    case 'pending':
      return `build: bulk ${b.day}: still being written in the background (pid ${w?.pid ?? '?'}, started ${w?.started_at ?? '?'}${w?.progress ? `; ${w.progress}` : ''}); the earlier copy stays${expired}`;
    case 'adopted':
      return `build: bulk ${b.day}: adopted the copy written in the background from the state of ${w?.now ?? '?'}: ${b.files} files, ${mb(b.bytes)} (${b.written} written); the writer took ${w?.seconds ?? '?'} s, peak RSS ${w?.peak_rss_mb ?? '?'} MB${expired}`;
    case 'failed':
      return `build: bulk ${b.day}: not written: ${b.reason}; the earlier copy stays, the next build tries again${expired}`;
    case 'kept':
    case 'disabled':
      return b.expired.length > 0 ? `build: bulk: removed ${b.expired.join(', ')}` : null;
  }
}

/** Whether every file a writer listed is in the staging directory with its size (null), else what is wrong. */
function stagedProblem(dir: string, files: readonly CopyFile[]): string | null {
  for (const f of files) {
    const size = fs.statSync(path.join(dir, f.file), { throwIfNoEntry: false })?.size;
    if (size !== f.bytes) return size === undefined ? `${f.file} is missing` : `${f.file} has ${size} bytes, not ${f.bytes}`;
  }
  return null;
}

/**
 * Puts a finished copy of the staging directory into the snapshot: each file linked into `bulk/<day>/`
 * (the staging directory keeps its own link until the build is committed), then `bulk/latest/`.
 * Returns the files written.
 */
function adoptCopy(sink: DirectorySink, job: BulkJob, files: readonly CopyFile[], dayUnit: number, previous: (rel: string) => string | undefined): number {
  const staged = stagedFilesDir(stagingDir(sink.outDir), job.day);
  const prevUnit = sink.unit;
  sink.unit = dayUnit;
  let written = 0;
  try {
    for (const f of files) {
      const tmp = linkBeside(path.join(staged, f.file), path.join(sink.outDir, BULK_DIR, job.day, f.file));
      if (placeCopyFile(sink, job.day, { ...f, tmp }, previous)) written++;
    }
  } finally {
    sink.unit = prevUnit;
  }
  return written + placeLatest(sink, job.day, files, previous);
}

export type CopyResult = Pick<BulkReport, 'tables' | 'redacted' | 'files' | 'bytes' | 'written'>;

/**
 * Writes the copy of the day of `o.nowMs` (`bulk/<day>/` and `bulk/latest/`) within the build, through
 * the sink, the dated files under `dayUnit`. `previous`: the hash a path had (its file is kept when
 * unchanged). Used by runBulk, and alone by the benchmark (`npm run bench -- bulk`).
 */
export function writeBulkCopy(o: CopyInput & { sink: DirectorySink }, dayUnit: number, previous: (rel: string) => string | undefined): CopyResult {
  const day = utcDay(o.nowMs);
  const outDir = o.sink.outDir;
  let written = 0;
  const prevUnit = o.sink.unit;
  o.sink.unit = dayUnit;
  let r;
  try {
    r = writeCopyFiles(o, path.join(outDir, BULK_DIR, day), `${path.resolve(outDir)}.bulk`, (file, w) => {
      if (placeCopyFile(o.sink, day, { ...w, file }, previous)) written++;
    });
  } finally {
    o.sink.unit = prevUnit;
  }
  written += placeLatest(o.sink, day, r.files, previous);
  return { tables: r.tables, redacted: r.redacted, files: r.files.length, bytes: r.files.reduce((n, f) => n + f.bytes, 0), written };
}
