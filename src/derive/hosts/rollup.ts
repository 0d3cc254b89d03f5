// Probe rollups: per host, UTC hour / day / month buckets per location and across locations
// (docs/methodology/hosts.md, "Uptime buckets").
//
// Tables uptime_hourly, uptime_daily, uptime_monthly (same shape):
//   host_id, bucket_start (ms), location ('' = the `__all__` rollup across locations),
//   up, degraded, down (check counts; checks_total is their sum), sketches (BLOB: the five phase
//   sketches dns, tcp, tls, http, total in that order, see src/derive/sketch.ts).
// A phase that was not reached (null) is not counted in that phase's sketch.
// Hourly and daily buckets are built in one pass over the raw checks (a day's sketch has exactly the
// bucket counts of the merge of its hours); monthly buckets merge the daily sketches.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../../db/index.js';
import { bucketIndex, decodeSketches, encodeSketches, Sketch, SKETCH_MIN_VALUE } from '../sketch.js';
import { monthStart } from './time.js';

export const PHASES = ['dns', 'tcp', 'tls', 'http', 'total'] as const;
export type Phase = (typeof PHASES)[number];
/** location value of the rollup across locations (stored as ''; published as `__all__`). */
export const ALL_LOCATIONS = '__all__';
export const ALL_KEY = '';

export const ROLLUP_TABLES = { hourly: 'uptime_hourly', daily: 'uptime_daily', monthly: 'uptime_monthly' } as const;
export type Resolution = keyof typeof ROLLUP_TABLES;

export const ROLLUP_DDL = Object.values(ROLLUP_TABLES)
  .map(
    (t) => `
  CREATE TABLE ${t} (
    host_id      INTEGER NOT NULL,
    bucket_start INTEGER NOT NULL,
    location     TEXT NOT NULL,       -- probe location name; '' = __all__
    up           INTEGER NOT NULL,
    degraded     INTEGER NOT NULL,
    down         INTEGER NOT NULL,
    sketches     BLOB NOT NULL,       -- dns, tcp, tls, http, total (src/derive/sketch.ts)
    PRIMARY KEY (host_id, bucket_start DESC, location)
  ) WITHOUT ROWID;`,
  )
  .join('\n');

interface Acc {
  up: number;
  degraded: number;
  down: number;
  /** Per phase: bucket indices of the values (sketch.ts) and the count of zero values. */
  indices: number[][];
  zeros: number[];
}
const newAcc = (): Acc => ({ up: 0, degraded: 0, down: 0, indices: PHASES.map(() => []), zeros: PHASES.map(() => 0) });
const sketchesOf = (acc: Acc): Buffer => encodeSketches(acc.indices.map((ix, k) => Sketch.fromIndices(ix, acc.zeros[k]!)));

/** A phase value as a bucket index; ZERO_VALUE for a value below SKETCH_MIN_VALUE, null when not reached. */
export const ZERO_VALUE = -0x80000000;
export function phaseIndex(v: number | null): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  return v < SKETCH_MIN_VALUE ? ZERO_VALUE : bucketIndex(v);
}

export type BucketWriter = (bucketStart: number, location: string, up: number, degraded: number, down: number, sketches: Buffer) => void;

/** Accumulates checks into buckets of one size; checks must arrive in time order. */
export class BucketAccumulator {
  private bucket: number | null = null;
  private byLoc = new Map<string, Acc>();
  constructor(
    private readonly bucketOf: (ms: number) => number,
    private readonly write: BucketWriter,
  ) {}

  /** phases: the phaseIndex() of dns, tcp, tls, http, total (null where not reached). */
  add(at: number, location: string, result: number, phases: readonly (number | null)[]): void {
    const b = this.bucketOf(at);
    if (b !== this.bucket) {
      this.flush();
      this.bucket = b;
    }
    let acc = this.byLoc.get(location);
    if (!acc) this.byLoc.set(location, (acc = newAcc()));
    if (result === 0) acc.up++;
    else if (result === 1) acc.degraded++;
    else acc.down++;
    for (let k = 0; k < PHASES.length; k++) {
      const i = phases[k];
      if (i === null || i === undefined) continue;
      if (i === ZERO_VALUE) acc.zeros[k]!++;
      else acc.indices[k]!.push(i);
    }
  }

  flush(): void {
    if (this.bucket === null) return;
    const all = newAcc();
    for (const [loc, acc] of this.byLoc) {
      this.write(this.bucket, loc, acc.up, acc.degraded, acc.down, sketchesOf(acc));
      all.up += acc.up;
      all.degraded += acc.degraded;
      all.down += acc.down;
      for (let k = 0; k < PHASES.length; k++) {
        for (const i of acc.indices[k]!) all.indices[k]!.push(i);
        all.zeros[k]! += acc.zeros[k]!;
      }
    }
    this.write(this.bucket, ALL_KEY, all.up, all.degraded, all.down, sketchesOf(all));
    this.bucket = null;
    this.byLoc = new Map();
  }
}

export interface RollupStatements {
  insert: Record<Resolution, Statement>;
}

export function rollupStatements(db: Db): RollupStatements {
  const ins = (t: string) => db.prepare(`INSERT INTO ${t} (host_id, bucket_start, location, up, degraded, down, sketches) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  return { insert: { hourly: ins(ROLLUP_TABLES.hourly), daily: ins(ROLLUP_TABLES.daily), monthly: ins(ROLLUP_TABLES.monthly) } };
}

/**
 * Recomputes a host's monthly buckets from the month holding `fromMs` on, by merging its daily
 * sketches (the caller has rewritten the daily buckets from `fromMs` on).
 */
export function rollUpMonths(db: Db, hostId: number, fromMs: number, insert: Statement): number {
  const start = Number.isFinite(fromMs) && fromMs > -8.64e15 ? monthStart(fromMs) : -Number.MAX_SAFE_INTEGER;
  db.prepare(`DELETE FROM ${ROLLUP_TABLES.monthly} WHERE host_id = ? AND bucket_start >= ?`).run(hostId, start);
  const rows = db
    .prepare(`SELECT bucket_start, location, up, degraded, down, sketches FROM ${ROLLUP_TABLES.daily} WHERE host_id = ? AND bucket_start >= ? ORDER BY bucket_start`)
    .raw()
    .all(hostId, start) as [number, string, number, number, number, Buffer][]; // bounded: one host's days
  let month: number | null = null;
  let byLoc = new Map<string, { up: number; degraded: number; down: number; sketches: Sketch[][] }>();
  let written = 0;
  const flush = (): void => {
    if (month === null) return;
    for (const loc of [...byLoc.keys()].sort()) {
      const a = byLoc.get(loc)!;
      insert.run(hostId, month, loc, a.up, a.degraded, a.down, encodeSketches(a.sketches.map((list) => Sketch.merge(list))));
      written++;
    }
    byLoc = new Map();
  };
  for (const [bucketStart, loc, up, degraded, down, blob] of rows) {
    const m = monthStart(bucketStart);
    if (m !== month) {
      flush();
      month = m;
    }
    let a = byLoc.get(loc);
    if (!a) byLoc.set(loc, (a = { up: 0, degraded: 0, down: 0, sketches: PHASES.map(() => []) }));
    a.up += up;
    a.degraded += degraded;
    a.down += down;
    const sk = decodeSketches(blob, PHASES.length);
    for (let k = 0; k < PHASES.length; k++) a.sketches[k]!.push(sk[k]!);
  }
  flush();
  return written;
}
