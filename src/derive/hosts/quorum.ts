// The quorum verdict of a host or zone at an instant, from the latest check per location, and when it
// goes stale. Shared by the host and zone derivations and by the readers that evaluate "now"
// (docs/methodology/hosts.md, "Quorum verdict" and "Staleness").
//
// At an instant t, each location contributes its latest check at or before t:
// - known locations K: those with a check in (t − 24 h, t];
// - fresh checks F: those with a check in (t − 90 min, t];
// - the verdict is null (stale) unless F holds a majority of K: |F| ≥ floor(|K| / 2) + 1;
// - otherwise it is the quorum of F: `up` when at most half of F are not up; else `down` when more
//   than half of F are down; else `degraded`.
// A verdict computed at t stays valid until the next check or until the majority of fresh checks is
// lost, whichever comes first: staleAt = (the m-th most recent fresh check) + 90 min, m = floor(|K|/2)+1.
// 90 minutes is three probe intervals at the 30-minute cadence of the large scales (six at 15 minutes).
import { HOUR, MINUTE } from './time.js';

export type Verdict = 'up' | 'degraded' | 'down';

export const STALE_AFTER_MS = 90 * MINUTE;
export const KNOWN_WINDOW_MS = 24 * HOUR;

export const SEVERITY_RANK: Record<Verdict, number> = { up: 0, degraded: 1, down: 2 };
/** probe_obs.result codes. */
export const RESULT_VERDICT: readonly Verdict[] = ['up', 'degraded', 'down'];

/** The quorum of a non-empty set of checks (see the top of this file). */
export function quorum(results: readonly Verdict[]): Verdict {
  let down = 0;
  let bad = 0;
  for (const r of results) {
    if (r !== 'up') bad++;
    if (r === 'down') down++;
  }
  if (bad * 2 <= results.length) return 'up';
  return down * 2 > results.length ? 'down' : 'degraded';
}

export interface LocationCheck {
  at: number;
  verdict: Verdict;
}

export interface Evaluation {
  verdict: Verdict | null;
  /** The instant the verdict goes stale if no further check arrives (t itself when already stale). */
  staleAt: number;
  /** The fresh checks the verdict was computed from. */
  fresh: LocationCheck[];
  /** Number of known locations. */
  known: number;
}

/** The verdict at t from the latest check per location (checks after t must not be passed). */
export function evaluate(latest: Iterable<LocationCheck>, t: number): Evaluation {
  let known = 0;
  const fresh: LocationCheck[] = [];
  for (const c of latest) {
    if (c.at > t - KNOWN_WINDOW_MS) known++;
    if (c.at > t - STALE_AFTER_MS) fresh.push(c);
  }
  const need = Math.floor(known / 2) + 1;
  if (fresh.length < need) return { verdict: null, staleAt: t, fresh, known };
  const times = fresh.map((c) => c.at).sort((a, b) => b - a);
  return { verdict: quorum(fresh.map((c) => c.verdict)), staleAt: times[need - 1]! + STALE_AFTER_MS, fresh, known };
}
