// Derivation benchmark (docs/benchmarks.md "Derivation"): runs the derive steps of `build` alone on an
// ingested database — incrementally from its watermark, or from scratch with --full — and reports the
// time of each step, the total, and the process's peak RSS. The database is changed exactly as `build`
// would change it (derived tables and the watermark), so run it on a copy when that matters.
import { openDb } from '../src/db/index.js';
import { runDerive, type DeriveSummary } from '../src/derive/index.js';

export interface DeriveBenchResult {
  bench: 'derive';
  db: string;
  full: boolean;
  segments_since: number;
  segments_upto: number;
  seconds: number;
  steps: Record<string, number>;
  peak_rss_mb: number;
  cpu_seconds: number;
}

export function benchDerive(dbPath: string, full: boolean, progress: (line: string) => void): DeriveBenchResult {
  const db = openDb(dbPath);
  let summary: DeriveSummary;
  const cpu0 = process.cpuUsage();
  try {
    summary = runDerive(db, { full, progress });
  } finally {
    db.close();
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    bench: 'derive',
    db: dbPath,
    full: summary.full,
    segments_since: summary.since,
    segments_upto: summary.upTo,
    seconds: Math.round(summary.seconds * 100) / 100,
    steps: Object.fromEntries(Object.entries(summary.steps).map(([k, v]) => [k, v.seconds])),
    // maxRSS is in KiB (Node's process.resourceUsage)
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    cpu_seconds: Math.round(((cpu.user + cpu.system) / 1e6) * 10) / 10,
  };
}
