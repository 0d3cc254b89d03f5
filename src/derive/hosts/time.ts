// Time helpers of the host and zone derivations (all UTC).
//
// isoTime: the one way instants leave the derivation (API fields, event payloads, incident ids):
// ISO 8601 `YYYY-MM-DDTHH:MM:SSZ`, with `.sss` milliseconds only when they are non-zero
// (`2026-11-04T09:00:00Z`, `2026-11-04T09:00:00.250Z`).

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** `YYYY-MM-DDTHH:MM:SSZ`, or `YYYY-MM-DDTHH:MM:SS.sssZ` when the milliseconds are non-zero. */
export function isoTime(ms: number): string {
  let s = isoPrinted.get(ms);
  if (s === undefined) {
    s = new Date(ms).toISOString();
    if (s.endsWith('.000Z')) s = `${s.slice(0, -5)}Z`;
    if (isoPrinted.size >= ISO_PRINTED_MAX) isoPrinted.clear();
    isoPrinted.set(ms, s);
  }
  return s;
}

/**
 * isoTime's recent answers. A build's records print the same instants for millions of participants
 * (about 50,000 distinct ones at `peppol`: observation times), and toISOString was a twentieth of a
 * record's CPU. Bounded: cleared when full.
 */
const isoPrinted = new Map<number, string>();
const ISO_PRINTED_MAX = 65_536;

/** Start of the UTC hour holding `ms`. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR) * HOUR;
}

/** Start of the UTC day holding `ms`. */
export function dayStart(ms: number): number {
  return Math.floor(ms / DAY) * DAY;
}

/** Start of the UTC calendar month holding `ms`. */
export function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
