// Time in the API, one definition each (date parameters' arithmetic, addDays and utcDay, lives with
// the date type in src/api/params.ts). Edge-safe.
//
// Instants leave the API in exactly one form, `Date.prototype.toISOString()` (UTC, milliseconds always,
// `Z`): the derivation readers print instants without `.000`, so every instant a response carries goes
// through apiTs (docs/api.md, "Response schemas").

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;

/** A timestamp as the API prints it (`Date.prototype.toISOString()`), from an ISO string or epoch ms. */
export function apiTs(v: string | number): string {
  const ms = typeof v === 'number' ? v : Date.parse(v);
  if (Number.isNaN(ms)) throw new TypeError(`not a timestamp: ${String(v)}`);
  let s = printed.get(ms);
  if (s === undefined) {
    s = new Date(ms).toISOString();
    if (printed.size >= PRINTED_MAX) printed.clear();
    printed.set(ms, s);
  }
  return s;
}

/**
 * apiTs's recent answers. A full build prints the same bucket starts for every host (19 million
 * uptime buckets at `peppol`, a few thousand distinct instants), and toISOString was 5% of its CPU.
 * Bounded: cleared when full.
 */
const printed = new Map<number, string>();
const PRINTED_MAX = 65_536;

/** apiTs, keeping null. */
export function apiTsOrNull(v: string | null): string | null {
  return v === null ? null : apiTs(v);
}
