// The files of one bulk copy (docs/bulk.md), written in one place and put into a snapshot in another:
//
// - writeCopyFiles writes every file of a day's copy into a directory: each table in one pass over its
//   rows to every format at once (NDJSON, Parquet, CSV for flat tables, a table of the SQLite dump), then
//   the SQLite dump, datapackage.json and SHA256SUMS. Each file goes to a temporary name, hashed as
//   written, and is handed to the caller, who renames it into place: into the snapshot through the
//   sink (a copy written within a build), or to its own name in the staging directory (a copy written
//   by the background writer, src/bulk/background.ts).
// - placeCopyFile and placeLatest put a copy's files into the snapshot through the sink: the dated copy
//   `bulk/<day>/` and `bulk/latest/` (hard links where the file system allows, else copies). A file
//   whose bytes did not change keeps its earlier bytes and mtime, so `publish` skips it.
//
// Both ways of writing a copy run the same code on the same database state and clock, so they give the
// same bytes.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import type { DirectorySink } from '../render/sink.js';
import { jsonBody } from '../api/json.js';
import { flatColumns, isFlat, rowColumns } from './columns.js';
import { bulkContentType, dataPackage, sha256sums, type BulkFileInfo } from './datapackage.js';
import { GzipFile, gzipFileInto, HashedFile, type WrittenFile } from './file.js';
import { BULK_TABLES, type BulkTable } from './tables.js';
import { BULK_LATEST_UNIT, utcDay } from './units.js';
import { CsvWriter, flatValues, NdjsonWriter, ParquetTableWriter, SqliteTableWriter, type TableWriter } from './writers.js';

/** The directory of the bulk downloads in a snapshot. */
export const BULK_DIR = 'bulk';
/** The copy of the newest day. */
export const BULK_LATEST_DIR = `${BULK_DIR}/latest`;
export const DATA_PACKAGE_FILE = 'datapackage.json';
export const SHA256SUMS_FILE = 'SHA256SUMS';
/** The SQLite dump's file name in a copy. */
export const SQLITE_FILE = 'peppol.sqlite.gz';
/** The Parquet files' created_by. */
const CREATED_BY = 'peppol-snapshot bulk';

export interface BulkTableReport {
  rows: number;
  seconds: number;
  /** Bytes per file of the table, by file name. */
  files: Record<string, number>;
}

/** A file of a copy: its name in the copy's directory, SHA-256 (hex) and size. */
export interface CopyFile {
  file: string;
  sha256: string;
  bytes: number;
}

/** What writeCopyFiles wrote: every file of the copy (datapackage.json and SHA256SUMS last), per table its rows and seconds. */
export interface CopyFiles {
  files: CopyFile[];
  tables: Record<string, BulkTableReport>;
  /** Rows dropped or fields nulled for privacy (src/bulk/tables.ts); 0 unless the derivation failed its rule. */
  redacted: number;
}

export interface CopyInput {
  db: Db;
  config: Pick<Config, 'bulk' | 'render'>;
  nowMs: number;
  progress: (message: string) => void;
}

/**
 * Writes every file of the copy of the day of `o.nowMs` into the directory `dir`: each through a
 * temporary name, handed to `place(file, written)` as soon as it is complete (the caller renames or
 * removes the temporary file). `scratch` is the path prefix of the SQLite dump's two temporary
 * databases (`<scratch>-dump.sqlite`, `<scratch>-vacuum.sqlite`), removed before returning.
 */
export function writeCopyFiles(o: CopyInput, dir: string, scratch: string, place: (file: string, w: WrittenFile) => void): CopyFiles {
  const day = utcDay(o.nowMs);
  const abs = (file: string): string => path.join(dir, file);
  const infos: BulkFileInfo[] = [];
  const files: CopyFile[] = [];
  const tables: Record<string, BulkTableReport> = {};
  let redacted = 0;
  const done = (file: string, w: WrittenFile): void => {
    files.push({ file, sha256: w.sha256, bytes: w.bytes });
    place(file, w);
  };
  // The SQLite dump is built in a scratch file, then compacted (VACUUM INTO) and gzipped.
  const dumpPath = `${scratch}-dump.sqlite`;
  const vacuumPath = `${scratch}-vacuum.sqlite`;
  for (const p of [dumpPath, vacuumPath]) fs.rmSync(p, { force: true });
  fs.mkdirSync(path.dirname(dumpPath), { recursive: true });
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
        done(f.info.file, f.written);
        infos.push(f.info);
        sizes[f.info.file] = f.info.bytes;
      }
      tables[t.name] = { rows, seconds: Math.round(performance.now() - t0) / 1000, files: sizes };
    }
    o.progress('bulk: the SQLite dump');
    dump.exec(`VACUUM INTO '${vacuumPath.replace(/'/g, "''")}'`);
  } finally {
    dump.close();
    fs.rmSync(dumpPath, { force: true });
  }
  try {
    const gz = new GzipFile(abs(SQLITE_FILE));
    gzipFileInto(vacuumPath, gz);
    const w = gz.close();
    done(SQLITE_FILE, w);
    infos.push({ file: SQLITE_FILE, format: 'sqlite', sha256: w.sha256, bytes: w.bytes, table: null });
  } finally {
    fs.rmSync(vacuumPath, { force: true });
  }
  // datapackage.json and SHA256SUMS: small, from what was written.
  const pkg = jsonBody(dataPackage({ day, baseUrl: o.config.render.base_url, config: o.config.bulk, files: infos }));
  done(DATA_PACKAGE_FILE, writeSmall(abs(DATA_PACKAGE_FILE), pkg));
  const listed = [...infos.map((f) => ({ file: f.file, sha256: f.sha256 })), { file: DATA_PACKAGE_FILE, sha256: createHash('sha256').update(pkg).digest('hex') }];
  done(SHA256SUMS_FILE, writeSmall(abs(SHA256SUMS_FILE), Buffer.from(sha256sums(listed))));
  return { files, tables, redacted };
}

/** A small file written whole through a temporary name. */
function writeSmall(abs: string, body: Uint8Array): WrittenFile {
  const f = new HashedFile(abs);
  try {
    f.write(body);
  } catch (e) {
    f.abort();
    throw e;
  }
  return f.close();
}

/** Writes one table in every format in one pass over its rows. */
function writeTable(o: CopyInput, t: BulkTable, abs: (file: string) => string, dump: Database.Database): { rows: number; redacted: number; written: Array<{ info: BulkFileInfo; written: WrittenFile }> } {
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

/**
 * A temporary name beside `target` holding `src`'s bytes: a hard link where the file system allows
 * (no bytes copied), else a copy. The caller hands it to the sink, which renames it into place.
 */
export function linkBeside(src: string, target: string): string {
  const tmp = `${target}.tmp-${process.pid}`;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.rmSync(tmp, { force: true });
  try {
    fs.linkSync(src, tmp);
  } catch {
    fs.copyFileSync(src, tmp);
  }
  return tmp;
}

/**
 * Puts a file of the dated copy `bulk/<day>/` through the sink (under the sink's current unit), from
 * a finished temporary file; returns whether it was written (false: the earlier bytes stay).
 */
export function placeCopyFile(sink: DirectorySink, day: string, w: WrittenFile & { file: string }, previous: (rel: string) => string | undefined): boolean {
  const rel = `${BULK_DIR}/${day}/${w.file}`;
  return sink.putFile(rel, w, bulkContentType(w.file), 'mutable', previous(rel));
}

/** Puts `bulk/latest/`: the files of the dated copy `bulk/<day>/` (already in place), under BULK_LATEST_UNIT. Returns the files written. */
export function placeLatest(sink: DirectorySink, day: string, files: readonly CopyFile[], previous: (rel: string) => string | undefined): number {
  const prevUnit = sink.unit;
  sink.unit = BULK_LATEST_UNIT;
  let written = 0;
  try {
    for (const f of files) {
      const rel = `${BULK_LATEST_DIR}/${f.file}`;
      const tmp = linkBeside(path.join(sink.outDir, BULK_DIR, day, f.file), path.join(sink.outDir, rel));
      if (sink.putFile(rel, { tmp, sha256: f.sha256, bytes: f.bytes }, bulkContentType(f.file), 'mutable', previous(rel))) written++;
    }
  } finally {
    sink.unit = prevUnit;
  }
  return written;
}
