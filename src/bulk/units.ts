// Render units of the bulk downloads (docs/incremental.md, docs/bulk.md "Cadence"): each dated copy
// `bulk/YYYY-MM-DD/` is a unit, and `bulk/latest/` one more. They are retired only when bulk is made
// again or a dated copy expires, never by the build's own unit, so builds between two regenerations keep
// the files and their manifest entries as they are. Below every other unit: participants are positive,
// the build is 0, kept lists count down from -1 and the render worker's from -1,000,000,000.
import { DAY_MS } from '../api/time.js';

/** The unit of `bulk/latest/`; a dated copy's unit is this plus its day number (days since 1970-01-01). */
export const BULK_LATEST_UNIT = -2_000_000_000;
/** Every bulk unit is in [BULK_LATEST_UNIT, BULK_UNIT_MAX]. */
export const BULK_UNIT_MAX = BULK_LATEST_UNIT + 1_000_000;

/** The unit of the dated copy of a UTC day (`YYYY-MM-DD`). */
export function bulkDayUnit(day: string): number {
  return BULK_LATEST_UNIT + Math.floor(Date.parse(`${day}T00:00:00Z`) / DAY_MS);
}

/** The UTC day (`YYYY-MM-DD`) of a dated copy's unit. */
export function dayOfBulkUnit(unit: number): string {
  return new Date((unit - BULK_LATEST_UNIT) * DAY_MS).toISOString().slice(0, 10);
}

/** The UTC day of an instant. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
