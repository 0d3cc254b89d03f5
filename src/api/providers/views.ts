// Pure pieces of the providers / access points / seats / churn family that the oracle (./query.ts), the
// renderer (src/render/routes/providers.ts) and the shim (src/edge/compose/providers.ts) share: the
// API form of seat hosts, the churn day rows and their series, the churn participant rows. Edge-safe.
// The files and rules are stated once in docs/api-providers-events.md, "Churn".
import type { SortKey } from '../sort-keys.js';
import type { ApChurnView, ChurnCounterpartTotal, ChurnParticipant, ChurnSeriesPoint, ChurnTotals } from './schema.js';
import { apiTs, DAY_MS } from '../time.js';


/** A SeatHost-bearing object with `since` re-printed in API form. */
export function withApiSince<H extends { since: string | null }>(h: H): H {
  return { ...h, since: h.since === null ? null : apiTs(h.since) };
}

// ---------------------------------------------------------------------------------------------
// Churn

/** One rendered day of an identity's churn (list item of `aps.churn`). */
export interface ChurnDayRow {
  day: string;
  joiners: number;
  movers_in: number;
  movers_out: number;
  leavers: number;
  /** Movers per counterpart identity that day (name: the counterpart's current name). */
  counterparts: Array<{ key: string; name: string; won: number; lost: number }>;
}

export const CHURN_DAY_DIRS = ['asc'] as const;
export const churnDayKey = (row: ChurnDayRow): SortKey => [row.day];


/** Days from `from` to `to` inclusive (YYYY-MM-DD, UTC). */
export function daysInRange(from: string, to: string): string[] {
  const out: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end; t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** The series of [from, to] before any row: every day, oldest first, all zero. */
export function zeroSeries(from: string, to: string): Map<string, ChurnSeriesPoint> {
  const series = new Map<string, ChurnSeriesPoint>();
  for (const d of daysInRange(from, to)) series.set(d, { day: d, joiners: 0, movers_in: 0, movers_out: 0, leavers: 0, net_growth: 0 });
  return series;
}

/** Sets each point's net_growth (joiners + movers_in − movers_out − leavers) and returns the series' totals. */
export function churnTotals(series: Iterable<ChurnSeriesPoint>): ChurnTotals {
  const totals: ChurnTotals = { joiners: 0, movers_in: 0, movers_out: 0, leavers: 0, net_growth: 0 };
  for (const p of series) {
    p.net_growth = p.joiners + p.movers_in - p.movers_out - p.leavers;
    totals.joiners += p.joiners;
    totals.movers_in += p.movers_in;
    totals.movers_out += p.movers_out;
    totals.leavers += p.leavers;
  }
  totals.net_growth = totals.joiners + totals.movers_in - totals.movers_out - totals.leavers;
  return totals;
}

/** Counterparts by won + lost descending, then key ascending. */
export const compareCounterparts = (a: ChurnCounterpartTotal, b: ChurnCounterpartTotal): number =>
  b.won + b.lost - (a.won + a.lost) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * ApChurnView from the day rows of [from, to] (any order, days outside ignored): every day of the range
 * oldest first, totals summing the series, counterparts by won + lost descending then key ascending.
 */
export function churnViewFromDays(key: string, name: string, from: string, to: string, rows: readonly ChurnDayRow[]): ApChurnView {
  const series = zeroSeries(from, to);
  const cps = new Map<string, ChurnCounterpartTotal>();
  for (const r of rows) {
    const p = series.get(r.day);
    if (!p) continue;
    p.joiners += r.joiners;
    p.movers_in += r.movers_in;
    p.movers_out += r.movers_out;
    p.leavers += r.leavers;
    for (const c of r.counterparts) {
      const t = cps.get(c.key) ?? { key: c.key, name: c.name, won: 0, lost: 0 };
      t.won += c.won;
      t.lost += c.lost;
      cps.set(c.key, t);
    }
  }
  const totals = churnTotals(series.values());
  return { key, name, from, to, totals, series: [...series.values()], counterparts: [...cps.values()].sort(compareCounterparts) };
}

/** A rendered churn participant row: the API item plus the event id (unique tiebreak of the list). */
export interface ChurnParticipantRow {
  p: ChurnParticipant;
  event_id: string;
}

export const CHURN_PARTICIPANT_DIRS = ['desc', 'asc', 'asc'] as const;
export const churnParticipantKey = (r: ChurnParticipantRow): SortKey => [r.p.day, r.p.id, r.event_id];
