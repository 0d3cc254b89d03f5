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
  return new Date(ms).toISOString();
}

/** apiTs, keeping null. */
export function apiTsOrNull(v: string | null): string | null {
  return v === null ? null : apiTs(v);
}
