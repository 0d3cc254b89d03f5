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
  const s = new Date(ms).toISOString();
  return s.endsWith('.000Z') ? `${s.slice(0, -5)}Z` : s;
}

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
