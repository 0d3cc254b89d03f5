// A full derive in a process of its own (docs/architecture.md "Build"): the first build's peak memory is
// then the larger of derive's and the render's, not what derive leaves behind plus the render's
// (docs/benchmarks.md). The script is dist/derive-apart.mjs (src/derive/apart-main.ts), next to the CLI's
// bundle; a checkout not built yet, or a dist/ built from other derive code (its derived schema is not
// the caller's), derives in the calling process instead.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/index.js';
import { fullDerivePending, schemaFingerprint, STEPS, type DeriveSummary } from './index.js';
import type { PruneSummary } from './hosts/step.js';

/** Exit code of the script when its derive code is not the caller's. */
export const APART_STALE_EXIT = 3;

/** The script: next to the bundle in dist/, or dist/ of the project when running from source. */
function scriptUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/derive-apart.mjs', here) : new URL('./derive-apart.mjs', here);
}

/**
 * Whether the next derive of this database rebuilds every derived table (a first build, or derived
 * tables of other DDL: src/derive/index.ts ensureDerivedSchema) over ingested segments.
 */
export function fullDeriveDue(db: Db): boolean {
  const segments = (db.prepare('SELECT coalesce(max(id), 0) FROM segments').pluck().get() as number) ?? 0;
  return segments > 0 && fullDerivePending(db, STEPS);
}

/** What the script did: the derive, then the prune of raw probes before the build's horizon. */
export interface ApartResult {
  derive: DeriveSummary;
  pruned: PruneSummary;
}

/**
 * Runs derive over the database at `dbPath` in a child process, then the prune of raw probes before
 * `pruneBeforeMs` (the first prune replays every host's probes up to the horizon and deletes most of
 * them: its memory goes with the child too), then empties the write-ahead log. Returns what the child
 * did; null when it cannot (no script, or a script of other derive code: then nothing was written). The
 * child's progress goes to this process's stderr (a status line on a terminal). Throws when it fails.
 */
export function deriveApart(dbPath: string, pruneBeforeMs: number, progress: (message: string) => void): ApartResult | null {
  const script = fileURLToPath(scriptUrl());
  if (!fs.existsSync(script)) return null;
  progress('derive: full, in a process of its own');
  const args = [script, dbPath, schemaFingerprint(STEPS), String(pruneBeforeMs)];
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.error) throw r.error;
  if (r.status === APART_STALE_EXIT) return null;
  if (r.status !== 0) throw new Error(`derive (in its own process) failed: ${r.signal !== null ? `killed by ${r.signal}` : `exit code ${String(r.status)}`}`);
  // The script prints one ApartResult (src/derive/apart-main.ts), produced by this same code: its
  // fingerprint matched.
  const result = JSON.parse(r.stdout) as ApartResult;
  return { derive: { ...result.derive, apart: true }, pruned: result.pruned };
}
