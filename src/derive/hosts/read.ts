// Readers of the host derivation for the API query functions (src/api). They return objects with
// exactly the spec's field names in the spec's order, `T|null` keys always present, instants as
// isoTime() strings. `now` is applied here (derived tables never depend on the clock): the state "now"
// is the state at nowMs, windows like "the last 24 h" end at nowMs. Lists are returned as iterators
// with their keyset sort key and no pagination: the API layer pages them.
// Rules: docs/methodology/hosts.md.
import type { Db } from '../../db/index.js';
import { Sketch, decodeSketches } from '../sketch.js';
import { timelineView } from './incidents.js';
import type { Verdict } from './quorum.js';
import { ALL_KEY, ALL_LOCATIONS, PHASES, ROLLUP_TABLES, type Resolution } from './rollup.js';
import { HOUR, isoTime } from './time.js';

export type HostRole = 'SMP' | 'AP';

export interface HostCert {
  fingerprint: string;
  subject: string;
  issuer: string;
  not_before: string;
  not_after: string;
}
export interface HostNetwork {
  ips: string[];
  ptr: string | null;
}
export interface HostProviderInfo {
  key: string;
  trade_name: string;
  legal_name: string | null;
  country: string | null;
}
export interface HostView {
  hostname: string;
  role: HostRole | null;
  verdict: Verdict | null;
  network: HostNetwork | null;
  cert: HostCert | null;
  provider: HostProviderInfo | null;
}
export interface HostLatency {
  p50: number;
  p95: number;
}
export interface HostSummary {
  hostname: string;
  role: string | null;
  verdict: Verdict | null;
  latency: HostLatency | null;
  uptime_24h: number | null;
  last_bucket: string | null;
  cert?: HostCert;
  provider?: HostProviderInfo;
}
export interface HostsRollup {
  hosts: number;
  avg_uptime_24h: number | null;
  avg_latency_p50: number | null;
}
export interface HostsResponse {
  items: HostSummary[];
  rollup: HostsRollup;
  generated_at: string;
}
export interface IncidentTimelineStep {
  at: string;
  severity: Verdict;
}
export interface IncidentView {
  id: number;
  hostname: string;
  role: HostRole;
  status: 'open' | 'closed';
  severity: Verdict;
  started_at: string;
  ended_at: string | null;
  timeline: IncidentTimelineStep[];
}
export interface UptimePercentiles {
  p50: number;
  p95: number;
  p99: number;
}
export type UptimePhasePercentiles = Record<(typeof PHASES)[number], UptimePercentiles>;
export interface UptimeBucket {
  resolution: Resolution;
  hostname: string;
  role: HostRole;
  location: string;
  bucket_start: string;
  checks_total: number;
  up: number;
  degraded: number;
  down: number;
  uptime_pct: number;
  phases: UptimePhasePercentiles;
}

/** Keyset position of an incident in the newest-first order (started_at DESC, id DESC). */
export interface IncidentKey {
  started_at: number;
  id: number;
}
/** Keyset position of an uptime bucket (bucket_start DESC, then location with `__all__` first, then name). */
export interface UptimeKey {
  bucket_start: number;
  location: string;
}
export interface Keyed<T, K> {
  item: T;
  key: K;
}

/** Non-integer numbers are published rounded to 3 decimals (half away from zero for positive values). */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** uptime_pct = 100 * (up + degraded) / checks_total (unrounded). */
export function uptimePct(up: number, degraded: number, down: number): number {
  const total = up + degraded + down;
  return total === 0 ? 0 : (100 * (up + degraded)) / total;
}

/** A latency percentile as published: whole milliseconds; 0 when the phase has no sample. */
export function wholeMs(s: Sketch, p: number): number {
  return Math.round(s.percentile(p) ?? 0);
}

function certOf(db: Db, certId: number | null): HostCert | null {
  if (certId === null) return null;
  const c = db.prepare('SELECT fingerprint, subject, issuer, not_before, not_after FROM certs WHERE id = ?').get(certId) as
    | { fingerprint: string; subject: string; issuer: string; not_before: number; not_after: number }
    | undefined;
  if (!c) return null;
  return { fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, not_before: isoTime(c.not_before), not_after: isoTime(c.not_after) };
}

function networkOf(db: Db, networkId: number | null): HostNetwork | null {
  if (networkId === null) return null;
  const n = db.prepare('SELECT ips, ptr FROM networks WHERE id = ?').get(networkId) as { ips: string; ptr: string | null } | undefined;
  return n ? { ips: JSON.parse(n.ips) as string[], ptr: n.ptr } : null;
}

interface StateRow {
  verdict: Verdict | null;
  network_id: number | null;
  cert_id: number | null;
}

/** The host state interval holding instant t, or null before the host's first check. */
export function hostStateAt(db: Db, hostId: number, t: number): StateRow | null {
  const row = db
    .prepare('SELECT valid_to, verdict, network_id, cert_id FROM host_state WHERE host_id = ? AND valid_from <= ? ORDER BY valid_from DESC LIMIT 1')
    .get(hostId, t) as (StateRow & { valid_to: number | null }) | undefined;
  if (!row || (row.valid_to !== null && row.valid_to <= t)) return null;
  return { verdict: row.verdict, network_id: row.network_id, cert_id: row.cert_id };
}

function hasProviderTables(db: Db): boolean {
  const n = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('providers', 'provider_hosts')").pluck().get() as number;
  return n === 2;
}

/** The member-registry provider of a host (providers / provider_hosts of the providers step), or null. */
function providerOf(db: Db, hostname: string, tables: boolean): HostProviderInfo | null {
  if (!tables) return null;
  const p = db
    .prepare('SELECT p.key, p.trade_name, p.legal_name, p.country FROM provider_hosts ph JOIN providers p ON p.key = ph.key WHERE ph.hostname = ? ORDER BY p.key LIMIT 1')
    .get(hostname) as HostProviderInfo | undefined;
  return p ? { key: p.key, trade_name: p.trade_name, legal_name: p.legal_name, country: p.country } : null;
}

/**
 * HostView at `atMs` (null: now). An instant after now is answered as of now. Null when the host is
 * unknown (not in the hosts table).
 */
export function hostView(db: Db, hostname: string, atMs: number | null, nowMs: number): HostView | null {
  const host = db.prepare('SELECT id, hostname, role FROM hosts WHERE hostname = ?').get(hostname.toLowerCase()) as { id: number; hostname: string; role: HostRole | null } | undefined;
  if (!host) return null;
  const t = atMs === null ? nowMs : Math.min(atMs, nowMs);
  const st = hostStateAt(db, host.id, t);
  return {
    hostname: host.hostname,
    role: host.role,
    verdict: st ? st.verdict : null,
    network: st ? networkOf(db, st.network_id) : null,
    cert: st ? certOf(db, st.cert_id) : null,
    provider: providerOf(db, host.hostname, hasProviderTables(db)),
  };
}

/** Hosts with derived state (every host ever probed), by hostname. */
function monitoredHosts(db: Db): { id: number; hostname: string; role: HostRole | null }[] {
  return db
    .prepare('SELECT h.id, h.hostname, h.role FROM hosts h WHERE EXISTS (SELECT 1 FROM host_state s WHERE s.host_id = h.id) ORDER BY h.hostname')
    .all() as { id: number; hostname: string; role: HostRole | null }[];
}

const VERDICT_ORDER = (v: Verdict | null): number => (v === 'down' ? 0 : v === 'degraded' ? 1 : v === null ? 2 : 3);

/**
 * HostsResponse at nowMs: every monitored host, worst first (down, degraded, unknown, up; then
 * uptime_24h ascending with null first; then hostname), and the network-wide rollup.
 */
export function hostsResponse(db: Db, nowMs: number): HostsResponse {
  const providers = hasProviderTables(db);
  const latest = db.prepare(`SELECT bucket_start, sketches FROM ${ROLLUP_TABLES.hourly} WHERE host_id = ? AND bucket_start < ? AND location = '' ORDER BY bucket_start DESC LIMIT 1`);
  const day = db.prepare(`SELECT up, degraded, down FROM ${ROLLUP_TABLES.hourly} WHERE host_id = ? AND bucket_start >= ? AND bucket_start < ? AND location = ''`);
  const items: HostSummary[] = [];
  for (const h of monitoredHosts(db)) {
    const st = hostStateAt(db, h.id, nowMs);
    const last = latest.get(h.id, nowMs) as { bucket_start: number; sketches: Buffer } | undefined;
    let latency: HostLatency | null = null;
    if (last) {
      const total = decodeSketches(last.sketches, PHASES.length)[PHASES.indexOf('total')]!;
      if (total.count > 0) latency = { p50: wholeMs(total, 50), p95: wholeMs(total, 95) };
    }
    const hours = day.all(h.id, nowMs - 24 * HOUR, nowMs) as { up: number; degraded: number; down: number }[];
    const uptime = hours.length === 0 ? null : round3(hours.reduce((s, b) => s + uptimePct(b.up, b.degraded, b.down), 0) / hours.length);
    const item: HostSummary = {
      hostname: h.hostname,
      role: h.role,
      verdict: st ? st.verdict : null,
      latency,
      uptime_24h: uptime,
      last_bucket: last ? isoTime(last.bucket_start) : null,
    };
    const cert = st ? certOf(db, st.cert_id) : null;
    if (cert) item.cert = cert;
    const provider = providerOf(db, h.hostname, providers);
    if (provider) item.provider = provider;
    items.push(item);
  }
  items.sort(
    (a, b) =>
      VERDICT_ORDER(a.verdict) - VERDICT_ORDER(b.verdict) ||
      (a.uptime_24h === b.uptime_24h ? 0 : a.uptime_24h === null ? -1 : b.uptime_24h === null ? 1 : a.uptime_24h - b.uptime_24h) ||
      (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0),
  );
  const uptimes = items.map((i) => i.uptime_24h).filter((u): u is number => u !== null);
  const p50s = items.map((i) => i.latency?.p50).filter((p): p is number => p !== undefined);
  return {
    items,
    rollup: {
      hosts: items.length,
      avg_uptime_24h: uptimes.length === 0 ? null : round3(uptimes.reduce((s, u) => s + u, 0) / uptimes.length),
      avg_latency_p50: p50s.length === 0 ? null : round3(p50s.reduce((s, u) => s + u, 0) / p50s.length),
    },
    generated_at: isoTime(nowMs),
  };
}

/** Every monitored host with its verdict at nowMs (null: unknown), in hostname order. */
export function hostVerdicts(db: Db, nowMs: number): { hostname: string; role: HostRole | null; verdict: Verdict | null }[] {
  return monitoredHosts(db).map((h) => ({ hostname: h.hostname, role: h.role, verdict: hostStateAt(db, h.id, nowMs)?.verdict ?? null }));
}

/** Current host verdict counts (NetworkSummary.hosts); hosts whose verdict is unknown are not counted. */
export function hostVerdictCounts(db: Db, nowMs: number): { up: number; down: number; degraded: number } {
  const out = { up: 0, down: 0, degraded: 0 };
  for (const h of hostVerdicts(db, nowMs)) if (h.verdict !== null) out[h.verdict]++;
  return out;
}

/** Number of open host incidents (NetworkSummary.open_incidents). */
export function openIncidentCount(db: Db): number {
  return db.prepare("SELECT count(*) FROM host_incidents WHERE status = 'open'").pluck().get() as number;
}

export interface IncidentQuery {
  /** Only this host's incidents (a host that is unknown has none). */
  host?: string | null;
  status?: 'open' | 'closed' | null;
  /** Only incidents that started at or after this instant. */
  sinceMs?: number | null;
  /** Continue after this keyset position. */
  after?: IncidentKey | null;
}

/** Host incidents newest first (started_at DESC, id DESC), filtered; streamed from an index. */
export function* hostIncidents(db: Db, q: IncidentQuery = {}): Generator<Keyed<IncidentView, IncidentKey>> {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.host !== undefined && q.host !== null) {
    where.push('h.hostname = ?');
    args.push(q.host.toLowerCase());
  }
  if (q.status) {
    where.push('i.status = ?');
    args.push(q.status);
  }
  if (q.sinceMs !== undefined && q.sinceMs !== null) {
    where.push('i.started_at >= ?');
    args.push(q.sinceMs);
  }
  if (q.after) {
    where.push('(i.started_at < ? OR (i.started_at = ? AND i.id < ?))');
    args.push(q.after.started_at, q.after.started_at, q.after.id);
  }
  const sql = `SELECT i.id, h.hostname, h.role, i.status, i.severity, i.started_at, i.ended_at, i.timeline
    FROM host_incidents i JOIN hosts h ON h.id = i.host_id
    ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
    ORDER BY i.started_at DESC, i.id DESC`;
  type Row = { id: number; hostname: string; role: HostRole; status: 'open' | 'closed'; severity: Verdict; started_at: number; ended_at: number | null; timeline: string };
  for (const r of db.prepare(sql).iterate(...args) as IterableIterator<Row>) {
    yield {
      item: {
        id: r.id,
        hostname: r.hostname,
        role: r.role,
        status: r.status,
        severity: r.severity,
        started_at: isoTime(r.started_at),
        ended_at: r.ended_at === null ? null : isoTime(r.ended_at),
        timeline: timelineView(r.timeline),
      },
      key: { started_at: r.started_at, id: r.id },
    };
  }
}

export interface UptimeQuery {
  resolution: Resolution;
  /** Buckets whose bucket_start lies in [fromMs, toMs); either bound may be absent. */
  fromMs?: number | null;
  toMs?: number | null;
  /** One probe location, or `__all__`; absent: every location and `__all__`. */
  location?: string | null;
  after?: UptimeKey | null;
}

/** The phase percentiles of a sketches BLOB as published. */
export function phasePercentiles(blob: Uint8Array): UptimePhasePercentiles {
  const sk = decodeSketches(blob, PHASES.length);
  const pct = (s: Sketch): UptimePercentiles => ({ p50: wholeMs(s, 50), p95: wholeMs(s, 95), p99: wholeMs(s, 99) });
  return { dns: pct(sk[0]!), tcp: pct(sk[1]!), tls: pct(sk[2]!), http: pct(sk[3]!), total: pct(sk[4]!) };
}

/**
 * A host's uptime buckets, newest first: bucket_start DESC, then location with `__all__` first and the
 * probe locations by name. Empty when the host is unknown.
 */
export function* uptimeBuckets(db: Db, hostname: string, q: UptimeQuery): Generator<Keyed<UptimeBucket, UptimeKey>> {
  const host = db.prepare('SELECT id, hostname, role FROM hosts WHERE hostname = ?').get(hostname.toLowerCase()) as { id: number; hostname: string; role: HostRole | null } | undefined;
  if (!host || host.role === null) return;
  const table = ROLLUP_TABLES[q.resolution];
  const where = ['host_id = ?'];
  const args: unknown[] = [host.id];
  if (q.fromMs !== undefined && q.fromMs !== null) {
    where.push('bucket_start >= ?');
    args.push(q.fromMs);
  }
  if (q.toMs !== undefined && q.toMs !== null) {
    where.push('bucket_start < ?');
    args.push(q.toMs);
  }
  if (q.location !== undefined && q.location !== null) {
    where.push('location = ?');
    args.push(q.location === ALL_LOCATIONS ? ALL_KEY : q.location);
  }
  if (q.after) {
    const loc = q.after.location === ALL_LOCATIONS ? ALL_KEY : q.after.location;
    where.push('(bucket_start < ? OR (bucket_start = ? AND location > ?))');
    args.push(q.after.bucket_start, q.after.bucket_start, loc);
  }
  const sql = `SELECT bucket_start, location, up, degraded, down, sketches FROM ${table} WHERE ${where.join(' AND ')} ORDER BY bucket_start DESC, location ASC`;
  type Row = { bucket_start: number; location: string; up: number; degraded: number; down: number; sketches: Buffer };
  for (const r of db.prepare(sql).iterate(...args) as IterableIterator<Row>) {
    const location = r.location === ALL_KEY ? ALL_LOCATIONS : r.location;
    yield {
      item: {
        resolution: q.resolution,
        hostname: host.hostname,
        role: host.role,
        location,
        bucket_start: isoTime(r.bucket_start),
        checks_total: r.up + r.degraded + r.down,
        up: r.up,
        degraded: r.degraded,
        down: r.down,
        uptime_pct: round3(uptimePct(r.up, r.degraded, r.down)),
        phases: phasePercentiles(r.sketches),
      },
      key: { bucket_start: r.bucket_start, location },
    };
  }
}
