// Pure pieces of the network / hosts / incidents / uptime / SML family that the oracle (./query.ts),
// the renderer (src/render/routes/hosts.ts, host-uptime.ts) and the shim (src/edge/compose/hosts.ts)
// share: the API form of the derive readers' views, the host at an instant, the compact uptime tuple.
// Edge-safe. The rules and the files are stated once in docs/api-hosts.md.
import type { Direction, SortKey } from '../sort-keys.js';
import { orderDirs, routeOrder } from '../routes/request.js';
import { ROUTES } from '../routes/table.js';
import type { HostCert, HostNetwork, HostSummary, HostView, HostsResponse, IncidentView, UptimeBucket } from '../../derive/hosts/read.js';
import type { SmlResponse, ZoneIncidentView, ZoneStatusView } from '../../derive/zones.js';
import { apiTs, apiTsOrNull } from '../time.js';

export const HOST_ROUTE = 'hosts.detail';
export const HOST_INCIDENTS_ROUTE = 'hosts.incidents';
export const UPTIME_ROUTE = 'hosts.uptime';
export const INCIDENTS_ROUTE = 'incidents.list';

/** Directions of the incident key [started_at, id] and of the uptime key [bucket_start, location]: the declared orders. */
export const INCIDENT_DIRS: Direction[] = orderDirs(routeOrder(ROUTES[INCIDENTS_ROUTE]));
export const UPTIME_DIRS: Direction[] = orderDirs(routeOrder(ROUTES[UPTIME_ROUTE]));
/** Facet of the uptime lists, counted per index entry: the `location` filter skips entries without it. */
export const UPTIME_FACETS = ['location'] as const;
/** Directions of the host state interval key [valid_from]: newest interval first (a stored list of no route's order). */
export const STATE_DIRS: Direction[] = ['desc'];

/** Published name of the rollup across locations (stored as '' in the uptime tables). */
export const ALL_LOCATIONS = '__all__';



export function certApi(c: HostCert): HostCert {
  return { fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, not_before: apiTs(c.not_before), not_after: apiTs(c.not_after) };
}

export function certApiOrNull(c: HostCert | null): HostCert | null {
  return c === null ? null : certApi(c);
}

// ---------------------------------------------------------------------------------------------
// Host view

/** The state part of a HostView, as stored per interval in the `hosts.detail` list. */
export interface HostStateItem {
  /** valid_to of the interval (ms, exclusive); null: open-ended. */
  valid_to: number | null;
  verdict: HostView['verdict'];
  network: HostNetwork | null;
  cert: HostCert | null;
}

/** A HostView in the API's key order and timestamp form. */
export function hostViewApi(v: HostView): HostView {
  return { hostname: v.hostname, role: v.role, verdict: v.verdict, network: v.network, cert: certApiOrNull(v.cert), provider: v.provider };
}

/**
 * The HostView at an instant from the current view (the exact file: hostname, role, provider) and the
 * state interval whose valid_from is the latest at or before T (null when there is none).
 */
export function hostViewAt(current: HostView, interval: { from: number; state: HostStateItem } | null, t: number): HostView {
  const st = interval !== null && interval.from <= t && (interval.state.valid_to === null || interval.state.valid_to > t) ? interval.state : null;
  return {
    hostname: current.hostname,
    role: current.role,
    verdict: st ? st.verdict : null,
    network: st ? st.network : null,
    cert: st ? st.cert : null,
    provider: current.provider ?? null,
  };
}

/** The instant a HostView answers for: min(at, now); at absent -> now. */
export function hostInstant(atMs: number | undefined, nowMs: number): number {
  return atMs === undefined ? nowMs : Math.min(atMs, nowMs);
}

// ---------------------------------------------------------------------------------------------
// Hosts list, network, SML

function summaryApi(s: HostSummary): HostSummary {
  const out: HostSummary = {
    hostname: s.hostname,
    role: s.role,
    verdict: s.verdict,
    latency: s.latency,
    uptime_24h: s.uptime_24h,
    last_bucket: apiTsOrNull(s.last_bucket),
  };
  if (s.cert) out.cert = certApi(s.cert);
  if (s.provider) out.provider = s.provider;
  return out;
}

export function hostsResponseApi(r: HostsResponse, nowMs: number): HostsResponse {
  return { items: r.items.map(summaryApi), rollup: r.rollup, generated_at: apiTs(nowMs) };
}

export interface NetworkSummaryBody {
  hosts: { up: number; down: number; degraded: number };
  open_incidents: number;
  anomalies_24h: number;
  generated_at: string;
}

export function networkSummary(hosts: { up: number; down: number; degraded: number }, openIncidents: number, anomalies24h: number, nowMs: number): NetworkSummaryBody {
  return { hosts: { up: hosts.up, down: hosts.down, degraded: hosts.degraded }, open_incidents: openIncidents, anomalies_24h: anomalies24h, generated_at: apiTs(nowMs) };
}

function zoneIncidentApi(i: ZoneIncidentView): ZoneIncidentView {
  return {
    id: i.id,
    zone: i.zone,
    status: i.status,
    severity: i.severity,
    started_at: apiTs(i.started_at),
    ended_at: apiTsOrNull(i.ended_at),
    timeline: i.timeline.map((s) => ({ at: apiTs(s.at), severity: s.severity })),
  };
}

function zoneApi(z: ZoneStatusView): ZoneStatusView {
  return {
    zone: z.zone,
    kind: z.kind,
    env: z.env,
    operator: z.operator,
    verdict: z.verdict,
    critical_nxdomain: z.critical_nxdomain,
    cutover: { dname_present: z.cutover.dname_present, dname_target: z.cutover.dname_target },
    canary: z.canary.map((c) => ({ ...c, observed_at: apiTs(c.observed_at) })),
    management: { host: z.management.host, tls_ok: z.management.tls_ok, tls_not_after: apiTsOrNull(z.management.tls_not_after), tls_issuer: z.management.tls_issuer },
    incidents: z.incidents.map(zoneIncidentApi),
  };
}

export function smlApi(r: SmlResponse): SmlResponse {
  return { zones: r.zones.map(zoneApi) };
}

// ---------------------------------------------------------------------------------------------
// Incidents and uptime pages

export function incidentApi(i: IncidentView): IncidentView {
  return {
    id: i.id,
    hostname: i.hostname,
    role: i.role,
    status: i.status,
    severity: i.severity,
    started_at: apiTs(i.started_at),
    ended_at: apiTsOrNull(i.ended_at),
    timeline: i.timeline.map((s) => ({ at: apiTs(s.at), severity: s.severity })),
  };
}


// ---------------------------------------------------------------------------------------------
// Uptime buckets in list chunks
//
// The uptime lists are the bulk of the snapshot (18 million hourly buckets at the peppol scale, one
// list per host and resolution: docs/snapshot-format.md, "Uptime"), so their chunks hold a compact tuple per bucket instead of the published object:
// the key already carries bucket_start and location, the list's partition the hostname and
// resolution. [role, up, degraded, down, uptime_pct, then p50, p95, p99 of dns, tcp, tls, http, total]
// is about a quarter of the object's JSON. expandUptime() rebuilds the object exactly.

export type UptimeTuple = [role: UptimeBucket['role'], up: number, degraded: number, down: number, uptime_pct: number, ...percentiles: number[]];

const PHASE_NAMES = ['dns', 'tcp', 'tls', 'http', 'total'] as const;

export function compactUptime(b: UptimeBucket): UptimeTuple {
  const t: UptimeTuple = [b.role, b.up, b.degraded, b.down, b.uptime_pct];
  for (const p of PHASE_NAMES) t.push(b.phases[p].p50, b.phases[p].p95, b.phases[p].p99);
  return t;
}

export function expandUptime(resolution: UptimeBucket['resolution'], hostname: string, key: SortKey, t: UptimeTuple): UptimeBucket {
  const [role, up, degraded, down, uptimePct] = t;
  const pct = (i: number): { p50: number; p95: number; p99: number } => ({ p50: t[5 + 3 * i] as number, p95: t[6 + 3 * i] as number, p99: t[7 + 3 * i] as number });
  return {
    resolution,
    hostname,
    role,
    location: key[1] as string,
    bucket_start: apiTs(key[0] as number),
    checks_total: up + degraded + down,
    up,
    degraded,
    down,
    uptime_pct: uptimePct,
    phases: { dns: pct(0), tcp: pct(1), tls: pct(2), http: pct(3), total: pct(4) },
  };
}
