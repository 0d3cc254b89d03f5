// The `zones` derivation step (SML/SMK canaries -> zone incidents) and the reader of /v1/sml
// (docs/methodology/zones.md).
//
// - Canary verdict (one check of one zone from one location): `down` when critical_nxdomain (a name
//   that must exist answered NXDOMAIN); else `degraded` when some existing canaries failed
//   (existing_ok < existing_total); else `up`. Non-existent canaries do not enter the verdict.
// - Zone verdict: the quorum of the latest canary per location with the staleness rule of hosts
//   (src/derive/hosts/quorum.ts), evaluated at every instant with a canary (a slot).
// - Zone incidents: the incident rules of hosts (src/derive/hosts/incidents.ts) over the zone's slot
//   verdicts; ids incidentId('zone', zone, started_at).
// Zone observations are few (zones x locations x 96 a day) and never pruned, so a zone with new
// canaries is recomputed from its whole history.
import type { Db } from '../db/index.js';
import { incidentId, incidentSlot, openIncidentRow, timelineView, type FinishedIncident, type OpenIncident } from './hosts/incidents.js';
import { evaluate, KNOWN_WINDOW_MS, STALE_AFTER_MS, type LocationCheck, type Verdict } from './hosts/quorum.js';
import { isoTime } from './hosts/time.js';
import type { IncidentTimelineStep } from './hosts/read.js';
import type { DeriveContext, DeriveStep, StepStats } from './step.js';

export const ZONES_STEP = 'zones';

const ZONE_TABLES = ['zone_incidents', 'zone_list'] as const;
const ZONES_DDL = `
  CREATE TABLE zone_incidents (
    id         INTEGER PRIMARY KEY,  -- incidentId('zone', zone, started_at)
    zone       TEXT NOT NULL,
    status     TEXT NOT NULL,        -- open | closed
    severity   TEXT NOT NULL,        -- worst verdict of the timeline
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    closed_at  INTEGER,
    timeline   TEXT NOT NULL         -- JSON [[at ms, severity], ...]
  );
  CREATE INDEX zone_incidents_zone ON zone_incidents (zone, started_at DESC, id DESC);
  -- Every monitored zone and its first canary.
  CREATE TABLE zone_list (
    zone     TEXT PRIMARY KEY,
    first_at INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

/** The verdict of one canary check. */
export function canaryVerdict(c: { critical_nxdomain: number | boolean; existing_ok: number; existing_total: number }): Verdict {
  if (c.critical_nxdomain === true || c.critical_nxdomain === 1) return 'down';
  return c.existing_ok < c.existing_total ? 'degraded' : 'up';
}

/** Recomputes one zone's incidents from all its canaries. */
function deriveZone(db: Db, zone: string): { incidents: number; canaries: number } {
  const rows = db
    .prepare('SELECT location_id, at, existing_ok, existing_total, critical_nxdomain FROM zone_obs WHERE zone = ? ORDER BY at, location_id')
    .raw()
    .iterate(zone) as IterableIterator<[number, number, number, number, number]>;
  const latest = new Map<number, LocationCheck>();
  const done: FinishedIncident[] = [];
  let open: OpenIncident | null = null;
  let slot: number | null = null;
  let first: number | null = null;
  let n = 0;
  const endSlot = (t: number): void => {
    const r = incidentSlot(open, t, evaluate(latest.values(), t).verdict);
    open = r.open;
    if (r.closed) done.push(r.closed);
  };
  for (const [loc, at, existingOk, existingTotal, critical] of rows) {
    if (first === null) first = at;
    if (slot !== null && at !== slot) endSlot(slot);
    slot = at;
    latest.set(loc, { at, verdict: canaryVerdict({ critical_nxdomain: critical, existing_ok: existingOk, existing_total: existingTotal }) });
    n++;
  }
  if (slot !== null) endSlot(slot);
  if (open) done.push(openIncidentRow(open));
  db.prepare('DELETE FROM zone_incidents WHERE zone = ?').run(zone);
  db.prepare('DELETE FROM zone_list WHERE zone = ?').run(zone);
  if (first === null) return { incidents: 0, canaries: 0 };
  db.prepare('INSERT INTO zone_list (zone, first_at) VALUES (?, ?)').run(zone, first);
  const ins = db.prepare('INSERT INTO zone_incidents (id, zone, status, severity, started_at, ended_at, closed_at, timeline) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  for (const inc of done) ins.run(incidentId('zone', zone, inc.startedAt), zone, inc.status, inc.severity, inc.startedAt, inc.endedAt, inc.closedAt, JSON.stringify(inc.timeline));
  return { incidents: done.length, canaries: n };
}

export const zonesStep: DeriveStep = {
  name: ZONES_STEP,
  tables: ZONE_TABLES,
  ddl: ZONES_DDL,
  run(ctx: DeriveContext): StepStats {
    const { db } = ctx;
    let zones: string[];
    if (ctx.full) zones = db.prepare('SELECT DISTINCT zone FROM zone_obs ORDER BY zone').pluck().all() as string[];
    else {
      const span = db.prepare('SELECT min(min_at) AS lo, max(max_at) AS hi FROM segments WHERE id > ? AND id <= ?').get(ctx.since, ctx.upTo) as { lo: number | null; hi: number | null };
      if (span.lo === null || span.hi === null) return { zones: 0 };
      zones = db.prepare('SELECT DISTINCT zone FROM zone_obs WHERE at BETWEEN ? AND ? ORDER BY zone').pluck().all(span.lo, span.hi) as string[];
    }
    const stats = { zones: 0, canaries: 0, incidents: 0 };
    for (const z of zones) {
      const r = deriveZone(db, z);
      stats.zones++;
      stats.canaries += r.canaries;
      stats.incidents += r.incidents;
    }
    return stats;
  },
};

// ---- reader -------------------------------------------------------------------------------------

export interface ZoneCanary {
  location: string;
  verdict: Verdict;
  existing_ok: number;
  existing_total: number;
  nonexistent_ok: number;
  nonexistent_total: number;
  critical_nxdomain: boolean;
  soa_serial: number | null;
  ns: string[];
  observed_at: string;
}
export interface ZoneIncidentView {
  id: number;
  zone: string;
  status: 'open' | 'closed';
  severity: Verdict;
  started_at: string;
  ended_at: string | null;
  timeline: IncidentTimelineStep[];
}
export interface ZoneStatusView {
  zone: string;
  kind: 'SML' | 'SMK';
  env: string;
  operator: string;
  verdict: Verdict | null;
  critical_nxdomain: boolean;
  cutover: { dname_present: boolean | null; dname_target: string | null };
  canary: ZoneCanary[];
  management: { host: string | null; tls_ok: boolean | null; tls_not_after: string | null; tls_issuer: string | null };
  incidents: ZoneIncidentView[];
}
export interface SmlResponse {
  zones: ZoneStatusView[];
}

interface CanaryRow {
  location: string;
  at: number;
  zone_kind: 'SML' | 'SMK';
  env: string;
  operator: string;
  existing_ok: number;
  existing_total: number;
  nonexistent_ok: number;
  nonexistent_total: number;
  critical_nxdomain: number;
  soa_serial: number | null;
  ns: string;
  dname_target: string | null;
  mgmt_host: string | null;
  mgmt_tls_ok: number | null;
  mgmt_tls_not_after: number | null;
  mgmt_tls_issuer: string | null;
}

/** A zone's incidents, newest first (started_at DESC, id DESC). */
export function zoneIncidents(db: Db, zone: string): ZoneIncidentView[] {
  const rows = db
    .prepare('SELECT id, zone, status, severity, started_at, ended_at, timeline FROM zone_incidents WHERE zone = ? ORDER BY started_at DESC, id DESC')
    .all(zone) as { id: number; zone: string; status: 'open' | 'closed'; severity: Verdict; started_at: number; ended_at: number | null; timeline: string }[];
  return rows.map((r) => ({
    id: r.id,
    zone: r.zone,
    status: r.status,
    severity: r.severity,
    started_at: isoTime(r.started_at),
    ended_at: r.ended_at === null ? null : isoTime(r.ended_at),
    timeline: timelineView(r.timeline),
  }));
}

/** ZoneStatusView of one zone at nowMs (null when the zone has no canary at or before now). */
export function zoneStatus(db: Db, zone: string, nowMs: number): ZoneStatusView | null {
  const locations = db.prepare('SELECT id, name FROM locations ORDER BY name').all() as { id: number; name: string }[];
  const latestStmt = db.prepare(
    `SELECT ? AS location, at, zone_kind, env, operator, existing_ok, existing_total, nonexistent_ok, nonexistent_total, critical_nxdomain,
       soa_serial, ns, dname_target, mgmt_host, mgmt_tls_ok, mgmt_tls_not_after, mgmt_tls_issuer
     FROM zone_obs WHERE zone = ? AND location_id = ? AND at <= ? ORDER BY at DESC LIMIT 1`,
  );
  // The latest canary per location (by location name), newest overall first for the zone's attributes.
  const latest = locations.map((l) => latestStmt.get(l.name, zone, l.id, nowMs) as CanaryRow | undefined).filter((r): r is CanaryRow => r !== undefined);
  if (latest.length === 0) return null;
  const newest = latest.reduce((a, b) => (b.at > a.at ? b : a));
  // Canaries listed: the locations known at now (a canary within 24 h); verdict from the fresh ones.
  const canaries = latest.filter((c) => c.at > nowMs - KNOWN_WINDOW_MS);
  const ev = evaluate(
    canaries.map((c) => ({ at: c.at, verdict: canaryVerdict(c) })),
    nowMs,
  );
  const fresh = canaries.filter((c) => c.at > nowMs - STALE_AFTER_MS);
  const majority = (n: number): boolean => n * 2 > fresh.length;
  let dnamePresent: boolean | null = null;
  let dnameTarget: string | null = null;
  if (ev.verdict !== null) {
    const targets = new Map<string, number>();
    for (const c of fresh) if (c.dname_target !== null) targets.set(c.dname_target, (targets.get(c.dname_target) ?? 0) + 1);
    const withDname = [...targets.values()].reduce((s, n) => s + n, 0);
    dnamePresent = majority(withDname);
    if (dnamePresent) dnameTarget = [...targets].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
  }
  const mgmt = canaries.length > 0 ? canaries.reduce((a, b) => (b.at > a.at ? b : a)) : null;
  return {
    zone,
    kind: newest.zone_kind,
    env: newest.env,
    operator: newest.operator,
    verdict: ev.verdict,
    critical_nxdomain: ev.verdict !== null && majority(fresh.filter((c) => c.critical_nxdomain === 1).length),
    cutover: { dname_present: dnamePresent, dname_target: dnameTarget },
    canary: canaries.map((c) => ({
      location: c.location,
      verdict: canaryVerdict(c),
      existing_ok: c.existing_ok,
      existing_total: c.existing_total,
      nonexistent_ok: c.nonexistent_ok,
      nonexistent_total: c.nonexistent_total,
      critical_nxdomain: c.critical_nxdomain === 1,
      soa_serial: c.soa_serial,
      ns: JSON.parse(c.ns) as string[],
      observed_at: isoTime(c.at),
    })),
    management: {
      host: mgmt?.mgmt_host ?? null,
      tls_ok: mgmt && mgmt.mgmt_tls_ok !== null ? mgmt.mgmt_tls_ok === 1 : null,
      tls_not_after: mgmt && mgmt.mgmt_tls_not_after !== null ? isoTime(mgmt.mgmt_tls_not_after) : null,
      tls_issuer: mgmt?.mgmt_tls_issuer ?? null,
    },
    incidents: zoneIncidents(db, zone),
  };
}

/** SmlResponse at nowMs: one entry per monitored zone (a canary at or before now), by zone name. */
export function smlResponse(db: Db, nowMs: number): SmlResponse {
  const zones = db.prepare('SELECT zone FROM zone_list WHERE first_at <= ? ORDER BY zone').pluck().all(nowMs) as string[];
  const out: ZoneStatusView[] = [];
  for (const z of zones) {
    const v = zoneStatus(db, z, nowMs);
    if (v) out.push(v);
  }
  return { zones: out };
}
