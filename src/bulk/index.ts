// The bulk downloads of a snapshot (docs/bulk.md): every published resource as a table, written once
// per UTC day by `build` into `bulk/YYYY-MM-DD/` and copied to `bulk/latest/`, from the database
// state the build renders the API from.
//
// - Cadence: a build writes the day's copy when the state has none for the day of its --now (the
//   first build of a UTC day), when the bulk settings changed, and on every full render (`build
//   --full`, or a render the state cannot trust: src/render/state.ts plan). Other builds keep the files
//   and their manifest entries as they are.
// - Units: each dated copy and `bulk/latest/` are render units of their own (src/bulk/units.ts),
//   retired only here: when the copy is written again, or expires after `bulk.keep_days`.
// - Streaming: each table is one pass over its rows, written to every format at once (NDJSON, Parquet,
//   CSV for flat tables, a table of the SQLite dump); files go to temporary names, hashed as written,
//   and are handed to the sink (DirectorySink.putFile). A file whose bytes did not change keeps its
//   earlier bytes on disk, so `publish` skips it.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import type { DirectorySink } from '../render/sink.js';
import type { RenderState } from '../render/state.js';
import { flatColumns, isFlat, rowColumns } from './columns.js';
import { bulkContentType, dataPackage, sha256sums, type BulkFileInfo } from './datapackage.js';
import { GzipFile, gzipFileInto, hashFile, type WrittenFile } from './file.js';
import { BULK_TABLES, type BulkTable } from './tables.js';
import { BULK_LATEST_UNIT, BULK_UNIT_MAX, bulkDayUnit, dayOfBulkUnit, utcDay } from './units.js';
import { CsvWriter, flatValues, NdjsonWriter, ParquetTableWriter, SqliteTableWriter, type TableWriter } from './writers.js';
import { jsonBody } from '../api/json.js';
import { DAY_MS } from '../api/time.js';

/** The directory of the bulk downloads in a snapshot. */
export const BULK_DIR = 'bulk';
/** The copy of the newest day. */
export const BULK_LATEST_DIR = `${BULK_DIR}/latest`;
export const DATA_PACKAGE_FILE = 'datapackage.json';
export const SHA256SUMS_FILE = 'SHA256SUMS';
/** The SQLite dump's file name in a copy. */
export const SQLITE_FILE = 'peppol.sqlite.gz';
/** Bumped when the files' layout or content rules change: the next build writes the day's copy again. */
const BULK_FORMAT = 1;
/** The Parquet files' created_by. */
const CREATED_BY = 'peppol-snapshot bulk';
/** The state's `info` key recording the copy written last: its day and settings. */
const STATE_KEY = 'bulk_key';

export interface BulkTableReport {
  rows: number;
  seconds: number;
  /** Bytes per file of the table, by file name. */
  files: Record<string, number>;
}

export interface BulkReport {
  /** `written`: the day's copy was written now; `kept`: an earlier build's copy stays; `disabled`. */
  mode: 'written' | 'kept' | 'disabled';
  reason: string;
  day: string | null;
  /** Dated copies removed (expired, or bulk disabled), by day. */
  expired: string[];
  tables: Record<string, BulkTableReport>;
  /** Rows dropped or fields nulled for privacy (src/bulk/tables.ts); 0 unless the derivation failed its rule. */
  redacted: number;
  /** Files of the day's copy, `bulk/latest/` not counted, and their bytes. */
  files: number;
  bytes: number;
  /** Files written (a file whose bytes did not change is not written again). */
  written: number;
  seconds: number;
}

export interface BulkOptions {
  db: Db;
  state: RenderState;
  sink: DirectorySink;
  config: Config;
  nowMs: number;
  /** The render's mode: a full render writes the day's copy again. */
  full: boolean;
  /** The earlier build's recorded hashes can be trusted (an incremental build after one that finished). */
  trustState: boolean;
  progress: (message: string) => void;
}

/** What decides a copy's bytes besides the database: the day, the settings (keep_days aside), the format. */
function bulkKey(day: string, config: Config): string {
  const { keep_days: _keep, ...bulk } = config.bulk;
  return createHash('sha256').update(JSON.stringify({ v: BULK_FORMAT, day, bulk, base: config.render.base_url })).digest('hex');
}

/** Bulk's step of a build (see the file comment). Runs in the build's state transaction. */
export function runBulk(o: BulkOptions): BulkReport {
  const t0 = performance.now();
  const st = o.state.db;
  const units = new Set(st.prepare('SELECT DISTINCT unit FROM files WHERE unit BETWEEN ? AND ?').pluck().all(BULK_LATEST_UNIT, BULK_UNIT_MAX) as number[]);
  const report = (r: Partial<BulkReport> & Pick<BulkReport, 'mode' | 'reason'>): BulkReport => ({
    day: null,
    expired: [],
    tables: {},
    redacted: 0,
    files: 0,
    bytes: 0,
    written: 0,
    ...r,
    seconds: Math.round(performance.now() - t0) / 1000,
  });
  if (!o.config.bulk.enabled) {
    o.state.retireUnits(units);
    o.state.setInfoValue(STATE_KEY, '');
    return report({ mode: 'disabled', reason: 'bulk.enabled is false', expired: [...units].filter((u) => u !== BULK_LATEST_UNIT).map(dayOfBulkUnit).sort() });
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
    const broken = new Set(files.filter((f) => fs.statSync(path.join(o.sink.outDir, f.path), { throwIfNoEntry: false })?.size !== f.bytes).map((f) => f.unit));
    o.state.retireUnits(broken);
    for (const u of broken) units.delete(u);
  }
  for (const u of expiredUnits) units.delete(u);
  const key = bulkKey(day, o.config);
  const why = o.full
    ? 'a full render writes the day\'s copy again'
    : !units.has(dayUnit) || !units.has(BULK_LATEST_UNIT)
      ? 'no copy of the day yet'
      : o.state.infoValue(STATE_KEY) !== key
        ? 'the bulk settings changed'
        : null;
  if (why === null) return report({ mode: 'kept', reason: 'the day\'s copy exists', day, expired });
  o.progress(`bulk: writing ${day} (${why})`);
  // The earlier hashes of the copy's paths (a file whose bytes did not change is not rewritten).
  const before = new Map((st.prepare('SELECT path, sha256 FROM files WHERE unit IN (?, ?)').all(dayUnit, BULK_LATEST_UNIT) as Array<{ path: string; sha256: string }>).map((r) => [r.path, r.sha256]));
  o.state.retireUnits([dayUnit, BULK_LATEST_UNIT]);
  const previous = (rel: string): string | undefined => {
    if (o.trustState) return before.get(rel);
    // Not trusted: the bytes on disk decide (a full render; bulk files are read once a day at most).
    const abs = path.join(o.sink.outDir, rel);
    return fs.existsSync(abs) ? hashFile(abs).sha256 : undefined;
  };
  const r = writeBulkCopy({ db: o.db, sink: o.sink, config: o.config, nowMs: o.nowMs, progress: o.progress }, dayUnit, previous);
  o.state.setInfoValue(STATE_KEY, key);
  return report({ mode: 'written', reason: why, day, expired, ...r });
}

export type CopyResult = Pick<BulkReport, 'tables' | 'redacted' | 'files' | 'bytes' | 'written'>;

/**
 * Writes the copy of the day of `o.nowMs` (`bulk/<day>/` and `bulk/latest/`) through the sink, the
 * dated files under `dayUnit`. `previous`: the hash a path had (its file is kept when unchanged). Used by
 * runBulk, and alone by the benchmark (`npm run bench -- bulk`).
 */
export function writeBulkCopy(o: Pick<BulkOptions, 'db' | 'sink' | 'config' | 'nowMs' | 'progress'>, dayUnit: number, previous: (rel: string) => string | undefined): CopyResult {
  const day = utcDay(o.nowMs);
  const dir = `${BULK_DIR}/${day}`;
  const outDir = o.sink.outDir;
  const abs = (file: string): string => path.join(outDir, dir, file);
  const files: BulkFileInfo[] = [];
  const tables: Record<string, BulkTableReport> = {};
  let redacted = 0;
  let written = 0;
  const prevUnit = o.sink.unit;
  o.sink.unit = dayUnit;
  const put = (file: string, w: WrittenFile): void => {
    if (o.sink.putFile(`${dir}/${file}`, w, bulkContentType(file), 'mutable', previous(`${dir}/${file}`))) written++;
  };
  // The SQLite dump is built beside the output directory, then compacted (VACUUM INTO) and gzipped.
  const dumpPath = `${path.resolve(outDir)}.bulk-dump.sqlite`;
  const vacuumPath = `${path.resolve(outDir)}.bulk-vacuum.sqlite`;
  for (const p of [dumpPath, vacuumPath]) fs.rmSync(p, { force: true });
  const dump = new Database(dumpPath);
  try {
    dump.pragma('journal_mode = OFF');
    dump.pragma('synchronous = OFF');
    dump.pragma('page_size = 4096');
    for (const t of BULK_TABLES) {
      const t0 = performance.now();
      o.progress(`bulk: ${t.name}`);
      const { rows, written: tableFiles, redacted: red } = writeTable(o, t, abs, dump);
      redacted += red;
      const sizes: Record<string, number> = {};
      for (const f of tableFiles) {
        put(f.info.file, f.written);
        files.push(f.info);
        sizes[f.info.file] = f.info.bytes;
      }
      tables[t.name] = { rows, seconds: Math.round(performance.now() - t0) / 1000, files: sizes };
    }
    dump.exec(`VACUUM INTO '${vacuumPath.replace(/'/g, "''")}'`);
  } finally {
    dump.close();
    fs.rmSync(dumpPath, { force: true });
  }
  try {
    const gz = new GzipFile(abs(SQLITE_FILE));
    gzipFileInto(vacuumPath, gz);
    const w = gz.close();
    put(SQLITE_FILE, w);
    files.push({ file: SQLITE_FILE, format: 'sqlite', sha256: w.sha256, bytes: w.bytes, table: null });
  } finally {
    fs.rmSync(vacuumPath, { force: true });
  }
  // datapackage.json and SHA256SUMS: small, put as they are.
  const pkg = jsonBody(dataPackage({ day, baseUrl: o.config.render.base_url, config: o.config.bulk, files }));
  o.sink.put(`${dir}/${DATA_PACKAGE_FILE}`, pkg, bulkContentType(DATA_PACKAGE_FILE), 'mutable');
  const listed = [...files.map((f) => ({ file: f.file, sha256: f.sha256 })), { file: DATA_PACKAGE_FILE, sha256: createHash('sha256').update(pkg).digest('hex') }];
  const sums = Buffer.from(sha256sums(listed));
  o.sink.put(`${dir}/${SHA256SUMS_FILE}`, sums, bulkContentType(SHA256SUMS_FILE), 'mutable');
  // bulk/latest/: the same files (hard links where the file system allows, else copies).
  o.sink.unit = BULK_LATEST_UNIT;
  for (const f of files) {
    const rel = `${BULK_LATEST_DIR}/${f.file}`;
    const target = path.join(outDir, rel);
    const tmp = `${target}.tmp-${process.pid}`;
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.rmSync(tmp, { force: true });
    try {
      fs.linkSync(abs(f.file), tmp);
    } catch {
      fs.copyFileSync(abs(f.file), tmp);
    }
    if (o.sink.putFile(rel, { tmp, sha256: f.sha256, bytes: f.bytes }, bulkContentType(f.file), 'mutable', previous(rel))) written++;
  }
  o.sink.put(`${BULK_LATEST_DIR}/${DATA_PACKAGE_FILE}`, pkg, bulkContentType(DATA_PACKAGE_FILE), 'mutable');
  o.sink.put(`${BULK_LATEST_DIR}/${SHA256SUMS_FILE}`, sums, bulkContentType(SHA256SUMS_FILE), 'mutable');
  o.sink.unit = prevUnit;
  return { tables, redacted, files: files.length + 2, bytes: files.reduce((n, f) => n + f.bytes, 0) + pkg.length + sums.length, written };
}

/** Writes one table in every format in one pass over its rows. */
function writeTable(o: Pick<BulkOptions, 'db' | 'config' | 'nowMs'>, t: BulkTable, abs: (file: string) => string, dump: Database.Database): { rows: number; redacted: number; written: Array<{ info: BulkFileInfo; written: WrittenFile }> } {
  const flat = flatColumns(t.schema);
  const ndjsonFile = `${t.name}.ndjson.gz`;
  const parquetFile = `${t.name}.parquet`;
  const csvFile = `${t.name}.csv.gz`;
  const outputs: Array<{ file: string; format: BulkFileInfo['format']; columns: ReturnType<typeof flatColumns>; writer: TableWriter }> = [];
  const sqlite = new SqliteTableWriter(dump, t.name, flat);
  try {
    outputs.push({ file: ndjsonFile, format: 'ndjson', columns: rowColumns(t.schema), writer: new NdjsonWriter(abs(ndjsonFile)) });
    outputs.push({ file: parquetFile, format: 'parquet', columns: flat, writer: new ParquetTableWriter(abs(parquetFile), flat, o.config.bulk.row_group_rows, CREATED_BY) });
    if (isFlat(flat)) outputs.push({ file: csvFile, format: 'csv', columns: flat, writer: new CsvWriter(abs(csvFile), flat) });
    let rows = 0;
    let redacted = 0;
    dump.exec('BEGIN');
    for (const row of t.rows({ db: o.db, nowMs: o.nowMs, redact: () => redacted++ })) {
      const values = flatValues(row, flat);
      for (const out of outputs) out.writer.add(row, values);
      sqlite.add(values);
      rows++;
    }
    dump.exec('COMMIT');
    const written = outputs.map((out) => {
      const w = out.writer.close();
      return { info: { file: out.file, format: out.format, sha256: w.sha256, bytes: w.bytes, table: { name: t.name, title: t.title, description: t.description, columns: out.columns } }, written: w };
    });
    return { rows, redacted, written };
  } catch (e) {
    for (const out of outputs) out.writer.abort();
    throw e;
  }
}
