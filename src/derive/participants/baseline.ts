// The first full sweep (docs/methodology/participants.md, "The first full sweep").
//
// Monitoring starts with a sweep that observes every participant once; those first observations are
// the baseline: they emit no event and are not joiners. The derivation cannot be told when that sweep
// ended, so it reads it from the SML observations: the first sweep is the maximal run of SML
// observations, starting with the earliest one, in which no two consecutive observation instants are
// FIRST_SWEEP_GAP_MS or more apart. Its end is the instant of the last observation of that run.
//
// While no observation lies FIRST_SWEEP_GAP_MS or more after the run, the sweep may still be running:
// the end is then the latest SML observation so far (every participant seen so far is baseline) and is
// recomputed on the next call. Once a later observation exists the sweep is closed and its end is
// cached in `meta` (it cannot move again as long as segments arrive in time order, which feeds do).
// The end only ever moves forward, so a participant that was baseline stays baseline: incremental
// runs and a full rebuild agree.
import type { Db } from '../../db/index.js';
import { getMeta, setMeta } from '../../db/index.js';

/** A pause in SML observations at least this long ends the first sweep. */
export const FIRST_SWEEP_GAP_MS = 60 * 60_000;

/** meta key holding the end of the first sweep once it is closed. */
export const FIRST_SWEEP_META_KEY = 'participants_first_sweep_end';

export interface FirstSweep {
  /** Instant (ms) of the last SML observation of the first sweep (so far, when not closed). */
  end: number;
  /** True once an SML observation at least FIRST_SWEEP_GAP_MS after `end` exists. */
  closed: boolean;
}

/**
 * Reads the first sweep from sml_obs. One grouped scan over the table (per-minute buckets: a gap of an
 * hour cannot hide inside a minute), done only until the sweep is closed. Null when there is no SML
 * observation yet.
 */
export function readFirstSweep(db: Db): FirstSweep | null {
  const cached = getMeta(db, FIRST_SWEEP_META_KEY);
  if (cached !== null) return { end: Number(cached), closed: true };
  const buckets = db
    .prepare('SELECT at / 60000 AS m, min(at) AS lo, max(at) AS hi FROM sml_obs GROUP BY m ORDER BY m')
    .iterate() as IterableIterator<{ m: number; lo: number; hi: number }>;
  let end: number | null = null;
  let closed = false;
  for (const b of buckets) {
    if (end === null) end = b.hi;
    else if (b.lo - end >= FIRST_SWEEP_GAP_MS) {
      closed = true;
      break; // ends the iterator (and the statement) early
    } else end = b.hi;
  }
  if (end === null) return null;
  if (closed) setMeta(db, FIRST_SWEEP_META_KEY, String(end));
  return { end, closed };
}

/**
 * End (ms) of the first full sweep: a participant whose first SML observation lies after it is a
 * newcomer (its registration is an event, and it is a joiner); observations at or before it are the
 * baseline. Null when there is no SML observation yet.
 */
export function firstSweepEnd(db: Db): number | null {
  return readFirstSweep(db)?.end ?? null;
}
