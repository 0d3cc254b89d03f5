// Runs the derivation steps (src/derive/step.ts) over the segments ingested since the last run.
//
// Derived tables are created here from the steps' DDL. Their fingerprint (sha256 of all DDL) is kept in
// `meta.derive_schema`; when a build brings other DDL, the old derived tables are dropped and rebuilt
// from the raw tables (they are a cache, nothing is lost). The watermark `meta.derive_upto` (highest
// segment id derived) moves only after every step has finished, so a crash repeats the range.
import { createHash } from 'node:crypto';
import type { Db } from '../db/index.js';
import { getMeta, setMeta } from '../db/index.js';
import { ensureChangesTable, resetChanges, startRecording, stopRecording } from './changes.js';
import { EVENTS_DDL, EVENTS_TABLES } from './events.js';
import { anomaliesStep } from './anomalies.js';
import { churnStep } from './churn.js';
import { providersStep } from './providers/step.js';
import { rostersStep } from './providers/rosters.js';
import { hostsStep } from './hosts/step.js';
import { participantsStep } from './participants/step.js';
import { statsStep } from './participants/stats.js';
import type { DeriveContext, DeriveStep, StepStats } from './step.js';
import { zonesStep } from './zones.js';

/** Every step, in run order: later steps may read the tables of earlier ones. */
export const STEPS: readonly DeriveStep[] = [
  // hosts (probe rollups, host state, host incidents, host events), zones, providers (members,
  // curation, seats, AP identities), participants (facts, views, participant events), churn,
  // anomalies, stats.
  hostsStep,
  zonesStep,
  providersStep,
  participantsStep,
  rostersStep,
  churnStep,
  anomaliesStep,
  statsStep,
];

export interface DeriveOptions {
  /** Rebuild every derived table from scratch. */
  full?: boolean;
  progress?: (message: string) => void;
  /** Restrict to these steps (tests); the watermark does not move then. */
  only?: readonly string[];
  /** Worker threads of the hosts and participants steps (DeriveContext.deriveWorkers; 0: none). */
  deriveWorkers?: number;
}

export interface DeriveSummary {
  full: boolean;
  since: number;
  upTo: number;
  seconds: number;
  steps: Record<string, StepStats & { seconds: number }>;
  /** Derive ran in a process of its own (a full derive of a build: src/derive/apart.ts). */
  apart?: boolean;
}

const SHARED_TABLES = { ddl: EVENTS_DDL, tables: EVENTS_TABLES };

/** The derived tables' fingerprint (sha256 of their DDL), kept in `meta.derive_schema`. */
export function schemaFingerprint(steps: readonly DeriveStep[]): string {
  const h = createHash('sha256');
  h.update(SHARED_TABLES.ddl);
  for (const s of steps) h.update(`\n--${s.name}\n${s.ddl}`);
  return h.digest('hex');
}

/**
 * Whether the next derive rebuilds every derived table: derived tables of other DDL (ensureDerivedSchema
 * recreates them) or none derived yet (watermark 0). Reads only.
 */
export function fullDerivePending(db: Db, steps: readonly DeriveStep[] = STEPS): boolean {
  return getMeta(db, 'derive_schema') !== schemaFingerprint(steps) || Number(getMeta(db, 'derive_upto') ?? '0') === 0;
}

/** Creates the derived tables, dropping older ones when their DDL changed. Returns true when (re)created. */
export function ensureDerivedSchema(db: Db, steps: readonly DeriveStep[] = STEPS): boolean {
  const fp = schemaFingerprint(steps);
  if (getMeta(db, 'derive_schema') === fp) return false;
  db.transaction(() => {
    const old = JSON.parse(getMeta(db, 'derive_tables') ?? '[]') as string[];
    for (const t of old) db.exec(`DROP TABLE IF EXISTS "${t.replaceAll('"', '""')}"`);
    const tables = [...SHARED_TABLES.tables, ...steps.flatMap((s) => s.tables)];
    for (const t of tables) db.exec(`DROP TABLE IF EXISTS "${t}"`);
    db.exec(SHARED_TABLES.ddl);
    for (const s of steps) db.exec(s.ddl);
    setMeta(db, 'derive_tables', JSON.stringify(tables));
    setMeta(db, 'derive_schema', fp);
    setMeta(db, 'derive_upto', '0');
  })();
  return true;
}

/** Empties every derived table (for a full rebuild). */
function emptyDerived(db: Db, steps: readonly DeriveStep[]): void {
  for (const t of SHARED_TABLES.tables) db.exec(`DELETE FROM "${t}"`);
  for (const s of steps) {
    if (s.reset) s.reset(db);
    else for (const t of s.tables) db.exec(`DELETE FROM "${t}"`);
  }
}

export function runDerive(db: Db, opts: DeriveOptions = {}, steps: readonly DeriveStep[] = STEPS): DeriveSummary {
  const t0 = performance.now();
  const full = opts.full === true || fullDerivePending(db, steps);
  ensureDerivedSchema(db, steps);
  const selected = opts.only ? steps.filter((s) => opts.only!.includes(s.name)) : steps;
  const upTo = (db.prepare('SELECT coalesce(max(id), 0) FROM segments').pluck().get() as number) ?? 0;
  const watermark = Number(getMeta(db, 'derive_upto') ?? '0');
  const since = full ? 0 : watermark;
  const ctx: DeriveContext = { db, full, since, upTo, progress: opts.progress ?? (() => {}) };
  if (opts.deriveWorkers !== undefined) ctx.deriveWorkers = opts.deriveWorkers;
  const summary: DeriveSummary = { full, since, upTo, seconds: 0, steps: {} };
  ensureChangesTable(db);
  if (full)
    db.transaction(() => {
      emptyDerived(db, steps);
      resetChanges(db, upTo);
    })();
  if (!full && since >= upTo) {
    summary.seconds = (performance.now() - t0) / 1000;
    return summary;
  }
  // An incremental run records which participants it changes (src/derive/changes.ts).
  if (!full) startRecording(db, upTo);
  try {
    for (const step of selected) {
      const s0 = performance.now();
      ctx.progress(`derive: ${step.name}`);
      const stats = db.transaction(() => step.run(ctx))();
      summary.steps[step.name] = { ...stats, seconds: Math.round(performance.now() - s0) / 1000 };
    }
  } finally {
    if (!full) stopRecording(db);
  }
  if (!opts.only) setMeta(db, 'derive_upto', String(upTo));
  summary.seconds = (performance.now() - t0) / 1000;
  return summary;
}
