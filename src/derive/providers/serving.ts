// Shared helpers of the providers, churn and anomalies steps: the serving seat of an SMP endpoint list
// and the time floor of the segments new in a derive run.
import type { Db } from '../../db/index.js';
import { seatIdFromSubject } from '../../feeds/ids.js';

export interface EndpointLike {
  cert: { subject: string } | null;
}

/**
 * The serving seat of an endpoint list: the seat id (certificate CN) of the most endpoints; ties go to
 * the lowest seat id; null when no endpoint carries a seat certificate. The same rule as the
 * participants step's `ap_seat_id` (docs/methodology/participants.md).
 */
export function servingSeat(endpoints: readonly EndpointLike[]): string | null {
  const counts = new Map<string, number>();
  for (const e of endpoints) {
    const s = e.cert ? seatIdFromSubject(e.cert.subject) : null;
    if (s !== null) counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  let best: string | null = null;
  let bestN = 0;
  for (const [s, n] of counts) if (n > bestN || (n === bestN && best !== null && s < best)) [best, bestN] = [s, n];
  return best;
}

/**
 * The earliest record instant of the segments new in this run (since < id <= upTo), or null when they
 * hold no records. Derived facts resting on observations at or after it are the ones a run can change.
 */
export function segmentsTimeFloor(db: Db, since: number, upTo: number): number | null {
  const v = db.prepare('SELECT min(min_at) FROM segments WHERE id > ? AND id <= ?').pluck().get(since, upTo) as number | null;
  return v ?? null;
}
