// The contract every derivation step follows (see docs/methodology.md, "How derivation runs").
//
// - Derived tables are a cache of the raw observation tables: they are a function of the raw tables
//   only, never of the clock (`--now` is applied by the query functions in src/api, e.g. staleness
//   of a verdict or "the last 24 hours"). So a full rebuild and any sequence of incremental runs over
//   the same raw rows give identical tables, which the tests check table by table.
// - Each step owns its tables (`tables`, created by `ddl`). Nothing else writes them.
// - Incremental: a run sees the segments with `since < segments.id <= upTo` as new. A step finds
//   the keys those rows can affect (hosts, participants, days, ...) and recomputes exactly those keys
//   from the whole raw history of the key (delete the key's derived rows, insert them again).
//   Raw rows carry `segment_id`; participant tables are scanned for `segment_id > since`, probe and
//   zone rows are found per host/location or zone by time span (`segments.min_at` / `max_at`).
// - Idempotent: running a step again over the same segment range leaves its tables unchanged (a run
//   that crashes before the watermark moves is simply repeated).
// - A full run (`full: true`) starts from empty tables and treats every segment as new.
import type { Db } from '../db/index.js';

export interface DeriveContext {
  db: Db;
  /** True when every derived table was emptied first and every segment counts as new. */
  full: boolean;
  /** Segments with id > since are new in this run (0 on a full run). */
  since: number;
  /** The highest segment id this run covers (segments ingested later wait for the next run). */
  upTo: number;
  /** Reports progress of long work (a line on a terminal). */
  progress: (message: string) => void;
  /**
   * Worker threads a full run's hosts and participants steps compute on (src/derive/pool.ts
   * workersFor); 0 computes in the step's own thread. Default: one per core, at most two, on a full
   * run; none on an incremental run.
   */
  deriveWorkers?: number;
}

/** Counts a step reports for the summary line (rows written, keys recomputed, ...). */
export type StepStats = Record<string, number>;

export interface DeriveStep {
  /** Short name, used in progress and in the summary. */
  name: string;
  /** The derived tables this step owns, in drop order. */
  tables: readonly string[];
  /** CREATE TABLE / CREATE INDEX statements for `tables`. */
  ddl: string;
  /**
   * Optional: how a full rebuild empties the step's tables (default: DELETE every row). A step whose
   * tables keep facts whose raw rows were pruned (probe rollups past the raw retention) keeps those.
   */
  reset?(db: Db): void;
  /** Brings the step's tables up to date for the context's segment range. Runs inside a transaction. */
  run(ctx: DeriveContext): StepStats;
}
