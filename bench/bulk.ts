// `npm run bench -- bulk --db FILE --out DIR [--now ISO]`: writes one bulk copy (src/bulk) of a derived
// database, opened read-only, into a scratch directory, and reports per table its rows, seconds and the
// bytes of each file, the copy's totals and the process's peak RSS (docs/benchmarks.md "Bulk downloads").
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { defaultConfig } from '../src/config/index.js';
import { writeBulkCopy, type CopyResult } from '../src/bulk/index.js';
import { bulkDayUnit, utcDay } from '../src/bulk/units.js';
import { DirectorySink } from '../src/render/sink.js';

export interface BulkBench extends CopyResult {
  db: string;
  day: string;
  seconds: number;
  peak_rss_mb: number;
}

export function benchBulk(dbPath: string, outDir: string, nowMs: number, progress: (line: string) => void): BulkBench {
  fs.rmSync(outDir, { recursive: true, force: true });
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  db.pragma('temp_store = FILE');
  db.pragma(`cache_size = ${-64 * 1024}`);
  const sink = new DirectorySink(outDir);
  const t0 = performance.now();
  try {
    db.exec('BEGIN');
    const r = writeBulkCopy({ db, sink, config: defaultConfig(), nowMs, progress }, bulkDayUnit(utcDay(nowMs)), () => undefined);
    db.exec('COMMIT');
    return { db: dbPath, day: utcDay(nowMs), ...r, seconds: Math.round(performance.now() - t0) / 1000, peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024) };
  } finally {
    sink.close();
    db.close();
  }
}
