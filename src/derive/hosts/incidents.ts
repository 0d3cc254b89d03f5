// Incidents from a sequence of slot verdicts, shared by hosts and zones
// (docs/methodology/hosts.md, "Incidents").
//
// - A slot is an instant with at least one check; its verdict comes from quorum.ts. Slots whose
//   verdict is null (stale) are skipped: they neither open, extend nor close an incident.
// - Open: the first slot whose verdict is not `up` while no incident is open. started_at = that slot.
// - Timeline: a step {at, severity} at the opening slot and at every later slot whose verdict differs
//   from the previous slot's (including `up` steps of single-slot returns).
// - Severity: the worst verdict of the timeline (down > degraded > up).
// - Close: after a sustained return to `up`: at least RECOVERY_MIN_SLOTS consecutive `up` slots AND the
//   latest of them at least RECOVERY_MS (60 min) after the last non-up slot. ended_at = the first slot of
//   that up run (the timeline's last step, `up`); closed_at = the slot that confirmed it. Until then the
//   incident is open (ended_at null), even when the latest slots are already up.
// - Id: the first 48 bits of sha256("<kind>\n<key>\n<started_at as isoTime>") as an integer
//   (kind `host` with the hostname, or `zone` with the zone name): stable across rebuilds and below 2^53.
import { createHash } from 'node:crypto';
import { SEVERITY_RANK, type Verdict } from './quorum.js';
import { MINUTE, isoTime } from './time.js';

export const RECOVERY_MS = 60 * MINUTE;
export const RECOVERY_MIN_SLOTS = 2;

/** The stable integer id of an incident. */
export function incidentId(kind: 'host' | 'zone', key: string, startedAtMs: number): number {
  const hex = createHash('sha256').update(`${kind}\n${key}\n${isoTime(startedAtMs)}`).digest('hex');
  return Number.parseInt(hex.slice(0, 12), 16);
}

/** The state of an open incident (serialisable: it is part of a host checkpoint). */
export interface OpenIncident {
  startedAt: number;
  worst: Verdict;
  /** The verdict of the latest (non-null) slot. */
  current: Verdict;
  timeline: [number, Verdict][];
  /** The latest slot whose verdict was not up. */
  lastBadAt: number;
  /** Consecutive up slots since then, and the first of them. */
  ups: number;
  upFrom: number | null;
}

export interface FinishedIncident {
  startedAt: number;
  endedAt: number | null;
  closedAt: number | null;
  status: 'open' | 'closed';
  severity: Verdict;
  timeline: [number, Verdict][];
}

/** Feeds slot verdicts; returns an incident when one closes. */
export function incidentSlot(open: OpenIncident | null, t: number, v: Verdict | null): { open: OpenIncident | null; closed: FinishedIncident | null } {
  if (v === null) return { open, closed: null };
  if (open === null) {
    if (v === 'up') return { open: null, closed: null };
    return { open: { startedAt: t, worst: v, current: v, timeline: [[t, v]], lastBadAt: t, ups: 0, upFrom: null }, closed: null };
  }
  if (v !== open.current) open.timeline.push([t, v]);
  open.current = v;
  if (v === 'up') {
    if (open.ups === 0) open.upFrom = t;
    open.ups++;
    if (open.ups >= RECOVERY_MIN_SLOTS && t - open.lastBadAt >= RECOVERY_MS) {
      return { open: null, closed: { startedAt: open.startedAt, endedAt: open.upFrom, closedAt: t, status: 'closed', severity: open.worst, timeline: open.timeline } };
    }
    return { open, closed: null };
  }
  open.ups = 0;
  open.upFrom = null;
  open.lastBadAt = t;
  if (SEVERITY_RANK[v] > SEVERITY_RANK[open.worst]) open.worst = v;
  return { open, closed: null };
}

/** An incident still open at the end of the data. */
export function openIncidentRow(open: OpenIncident): FinishedIncident {
  return { startedAt: open.startedAt, endedAt: null, closedAt: null, status: 'open', severity: open.worst, timeline: open.timeline };
}

/** Timeline JSON as stored: [[at ms, severity], ...]. */
export function timelineView(json: string): { at: string; severity: Verdict }[] {
  return (JSON.parse(json) as [number, Verdict][]).map(([at, severity]) => ({ at: isoTime(at), severity }));
}
