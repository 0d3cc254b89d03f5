// The `hosts` derivation (src/derive/hosts) on the small demo: incidents, host events, state as of any
// instant, rollups and percentiles against the raw checks, the readers, incremental runs equal to a full
// run, and raw pruning that keeps the history.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../src/db/index.js';
import { eventId, HOST_EVENT_TYPES } from '../src/derive/events.js';
import {
  hostIncidents,
  hostsResponse,
  hostsStep,
  hostVerdictCounts,
  hostView,
  incidentId,
  isoTime,
  openIncidentCount,
  pruneRawProbes,
  round3,
  uptimeBuckets,
  uptimePct,
} from '../src/derive/hosts/index.js';
import { runDerive, type DeriveSummary } from '../src/derive/index.js';
import { decodeSketches, exactPercentile, SKETCH_ALPHA } from '../src/derive/sketch.js';
import { zonesStep } from '../src/derive/zones.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

const MINE = [hostsStep, zonesStep];
const H = 3_600_000;
const DAY = 24 * H;
const ms = (iso: string): number => Date.parse(iso);

interface Step {
  at: string;
  severity: string;
}
interface Outage {
  hostname: string;
  role: string;
  start: string;
  end: string | null;
  status: string;
  worst: string;
  timeline: Step[];
}
interface GtEvent {
  type: string;
  observed_at: string;
  hostname: string | null;
  change: string;
  seats: string[];
  hosts: string[];
}
interface GtChange {
  id: string;
  kind: string;
  hostname?: string;
  observed_at: string;
  before: { fingerprint?: string; ips?: string[]; ptr?: string | null } | null;
  after: { fingerprint?: string; ips?: string[]; ptr?: string | null } | null;
}

const PHASE_COLS = ['dns', 'tcp', 'tls', 'http', 'total'] as const;

let db: Db;
let dbPath: string;
let now: number;
let outages: Outage[];
let blips: Outage[];
let derived: DeriveSummary;

beforeAll(() => {
  const copy = copyOfSmallDemoDb();
  dbPath = copy.path;
  db = copy.open();
  now = ms(smallDemo().now);
  const gt = smallDemo().groundTruth();
  outages = gt.outages as Outage[];
  blips = gt.regional_blips as Outage[];
  derived = runDerive(db, {}, MINE);
}, 120_000);
afterAll(() => db?.close());

const hostId = (name: string): number => db.prepare('SELECT id FROM hosts WHERE hostname = ?').pluck().get(name) as number;

describe('host incidents', () => {
  it('every ground-truth outage is one incident with its host, start, end, status, worst severity and timeline; nothing else is', () => {
    const got = [...hostIncidents(db)]
      .map(({ item: i }) => ({ hostname: i.hostname, role: i.role, status: i.status, severity: i.severity, started_at: i.started_at, ended_at: i.ended_at, timeline: i.timeline }))
      .sort((a, b) => a.hostname.localeCompare(b.hostname) || a.started_at.localeCompare(b.started_at));
    const expected = outages
      .map((o) => ({ hostname: o.hostname, role: o.role, status: o.status, severity: o.worst, started_at: o.start, ended_at: o.end, timeline: o.timeline }))
      .sort((a, b) => a.hostname.localeCompare(b.hostname) || a.started_at.localeCompare(b.started_at));
    expect(got).toEqual(expected);
    expect(got.filter((i) => i.status === 'open')).toHaveLength(2);
  });

  it('regional blips (one or two locations) open no incident', () => {
    expect(blips.length).toBeGreaterThan(0);
    for (const b of blips) {
      const around = [...hostIncidents(db, { host: b.hostname })].filter(({ item }) => ms(item.started_at) <= ms(b.end ?? b.start) + H && (item.ended_at === null || ms(item.ended_at) >= ms(b.start) - H));
      expect(around, b.hostname).toEqual([]);
    }
  });

  it('ids are the first 48 bits of sha256("host\\n<hostname>\\n<started_at>"), safe integers', () => {
    for (const { item } of hostIncidents(db)) {
      const hex = createHash('sha256').update(`host\n${item.hostname}\n${item.started_at}`).digest('hex').slice(0, 12);
      expect(item.id).toBe(Number.parseInt(hex, 16));
      expect(item.id).toBe(incidentId('host', item.hostname, ms(item.started_at)));
      expect(Number.isSafeInteger(item.id)).toBe(true);
    }
  });
});

describe('host events', () => {
  it('host_cert_rotated and hosting_changed equal the ground-truth events (type, host, time, seats, hosts) with before/after payloads', () => {
    const gt = smallDemo().groundTruth();
    const changes = new Map((gt.changes as GtChange[]).map((c) => [c.id, c]));
    const expected = (gt.events as GtEvent[])
      .filter((e) => (HOST_EVENT_TYPES as readonly string[]).includes(e.type))
      .map((e) => ({ type: e.type, hostname: e.hostname, observed_at: e.observed_at, seats: [...e.seats].sort(), hosts: [...e.hosts].sort() }))
      .sort((a, b) => a.observed_at.localeCompare(b.observed_at) || a.type.localeCompare(b.type));
    expect(expected.length).toBeGreaterThan(3);
    const rows = db.prepare(`SELECT id, type, hostname, observed_at, payload, participant_id FROM events WHERE type IN ('host_cert_rotated', 'hosting_changed') ORDER BY observed_at, type`).all() as {
      id: string;
      type: 'host_cert_rotated' | 'hosting_changed';
      hostname: string;
      observed_at: number;
      payload: string;
      participant_id: number | null;
    }[];
    const seatsOf = db.prepare('SELECT seat_id FROM event_seats WHERE event_id = ? ORDER BY seat_id').pluck();
    const hostsOf = db.prepare('SELECT hostname FROM event_hosts WHERE event_id = ? ORDER BY hostname').pluck();
    const got = rows.map((r) => ({ type: r.type, hostname: r.hostname, observed_at: isoTime(r.observed_at), seats: seatsOf.all(r.id), hosts: hostsOf.all(r.id) }));
    expect(got).toEqual(expected);
    // Payloads carry before and after; ids follow src/derive/events.ts.
    const byKey = new Map((gt.events as GtEvent[]).map((e) => [`${e.type}|${e.hostname}|${e.observed_at}`, changes.get(e.change)!]));
    for (const r of rows) {
      expect(r.id).toBe(eventId(r.type, `host:${r.hostname}`, r.observed_at));
      expect(r.participant_id).toBeNull();
      const change = byKey.get(`${r.type}|${r.hostname}|${isoTime(r.observed_at)}`)!;
      const p = JSON.parse(r.payload) as Record<string, Record<string, unknown> | string | null>;
      if (r.type === 'host_cert_rotated') {
        expect(Object.keys(p)).toEqual(['before', 'after', 'seat_before', 'seat_after']);
        expect((p.before as { fingerprint: string }).fingerprint).toBe(change.before!.fingerprint);
        expect((p.after as { fingerprint: string }).fingerprint).toBe(change.after!.fingerprint);
        expect(Object.keys(p.after as object)).toEqual(['fingerprint', 'subject', 'issuer', 'not_before', 'not_after']);
      } else {
        expect(p).toEqual({ before: { ips: change.before!.ips, ptr: change.before!.ptr }, after: { ips: change.after!.ips, ptr: change.after!.ptr } });
      }
    }
  });
});

describe('host state as of an instant', () => {
  it('verdict at each timeline step of an outage, and up just before it', () => {
    for (const o of outages) {
      expect(hostView(db, o.hostname, ms(o.start) - 1, now)!.verdict, o.hostname).toBe('up');
      for (const s of o.timeline) {
        expect(hostView(db, o.hostname, ms(s.at), now)!.verdict, `${o.hostname} ${s.at}`).toBe(s.severity);
        expect(hostView(db, o.hostname, ms(s.at) + 10 * 60_000, now)!.verdict, `${o.hostname} ${s.at}+10m`).toBe(s.severity);
      }
    }
  });

  it('certificate and network before and after each host change', () => {
    const changes = (smallDemo().groundTruth().changes as GtChange[]).filter((c) => c.hostname !== undefined && c.kind !== undefined && (c.kind.startsWith('cert_') || c.kind === 'hosting_move'));
    expect(changes.length).toBeGreaterThan(3);
    for (const c of changes) {
      const before = hostView(db, c.hostname!, ms(c.observed_at) - 1, now)!;
      const after = hostView(db, c.hostname!, ms(c.observed_at), now)!;
      if (c.kind === 'hosting_move') {
        expect(before.network).toEqual({ ips: c.before!.ips, ptr: c.before!.ptr });
        expect(after.network).toEqual({ ips: c.after!.ips, ptr: c.after!.ptr });
      } else {
        expect(before.cert!.fingerprint).toBe(c.before!.fingerprint);
        expect(after.cert!.fingerprint).toBe(c.after!.fingerprint);
      }
    }
  });

  it('HostView has the spec fields in order; unknown hosts are null; `at` after now is answered as of now', () => {
    const open = outages.find((o) => o.status === 'open' && o.worst === 'down')!;
    const v = hostView(db, open.hostname.toUpperCase(), null, now)!;
    expect(Object.keys(v)).toEqual(['hostname', 'role', 'verdict', 'network', 'cert', 'provider']);
    expect(v).toMatchObject({ hostname: open.hostname, role: open.role, verdict: 'down', provider: null });
    expect(Object.keys(v.cert!)).toEqual(['fingerprint', 'subject', 'issuer', 'not_before', 'not_after']);
    expect(v.cert!.not_after).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(hostView(db, open.hostname, now + 30 * DAY, now)).toEqual(v);
    expect(hostView(db, 'no.such.host.example', null, now)).toBeNull();
    // Before the first check nothing is known.
    expect(hostView(db, open.hostname, ms('2026-10-01T00:00:00Z'), now)).toMatchObject({ verdict: null, network: null, cert: null });
  });

  it('the verdict goes stale 90 minutes after the majority of locations last checked; network and certificate stay known', () => {
    const last = db.prepare('SELECT max(at) FROM probe_obs').pluck().get() as number;
    const host = outages.find((o) => o.status === 'closed')!.hostname;
    const later = last + 2 * H;
    expect(hostView(db, host, last + 90 * 60_000 - 1, later)!.verdict).toBe('up');
    const stale = hostView(db, host, last + 90 * 60_000, later)!;
    expect(stale.verdict).toBeNull();
    expect(stale.network).not.toBeNull();
    expect(stale.cert).not.toBeNull();
  });

  it('provider comes from the providers step tables when they exist', () => {
    const host = outages[0]!.hostname;
    db.exec(`CREATE TABLE providers (key TEXT PRIMARY KEY, trade_name TEXT NOT NULL, legal_name TEXT, country TEXT, url TEXT);
             CREATE TABLE provider_hosts (key TEXT, hostname TEXT)`);
    try {
      db.prepare('INSERT INTO providers VALUES (?, ?, ?, ?, ?)').run('m-acme', 'Acme', null, 'BE', null);
      db.prepare('INSERT INTO provider_hosts VALUES (?, ?)').run('m-acme', host);
      expect(hostView(db, host, null, now)!.provider).toEqual({ key: 'm-acme', trade_name: 'Acme', legal_name: null, country: 'BE' });
      expect(hostView(db, outages[1]!.hostname, null, now)!.provider).toBeNull();
      expect(hostsResponse(db, now).items.find((i) => i.hostname === host)!.provider).toEqual({ key: 'm-acme', trade_name: 'Acme', legal_name: null, country: 'BE' });
    } finally {
      db.exec('DROP TABLE providers; DROP TABLE provider_hosts');
    }
  });
});

/** Raw checks of a host in [from, to). */
function rawChecks(hostname: string, from: number, to: number): { location: string; result: number; dns: number | null; tcp: number | null; tls: number | null; http: number | null; total: number | null }[] {
  return db
    .prepare('SELECT l.name AS location, p.result, p.dns, p.tcp, p.tls, p.http, p.total FROM probe_obs p JOIN locations l ON l.id = p.location_id WHERE p.host_id = ? AND p.at >= ? AND p.at < ?')
    .all(hostId(hostname), from, to) as ReturnType<typeof rawChecks>;
}

describe('uptime rollups', () => {
  it('counts add up: hourly buckets hold every check once, per location and in __all__; days and months sum their hours', () => {
    const total = db.prepare('SELECT count(*) FROM probe_obs').pluck().get() as number;
    for (const t of ['uptime_hourly', 'uptime_daily', 'uptime_monthly']) {
      const all = db.prepare(`SELECT sum(up + degraded + down) FROM ${t} WHERE location = ''`).pluck().get();
      const locs = db.prepare(`SELECT sum(up + degraded + down) FROM ${t} WHERE location <> ''`).pluck().get();
      expect([t, all, locs]).toEqual([t, total, total]);
    }
    const byResult = db.prepare('SELECT sum(result = 0), sum(result = 1), sum(result = 2) FROM probe_obs').raw().get();
    expect(db.prepare("SELECT sum(up), sum(degraded), sum(down) FROM uptime_monthly WHERE location = ''").raw().get()).toEqual(byResult);
  });

  it('a host-day: counts per location equal the raw checks; p50/p95/p99 of every phase from the merged (daily) sketch are within 1 % of the exact nearest-rank percentiles', () => {
    const o = outages.find((x) => x.timeline.length > 2 && x.worst === 'down')!; // a day with up, degraded and down checks
    const day = Math.floor(ms(o.start) / DAY) * DAY;
    const raw = rawChecks(o.hostname, day, day + DAY);
    const buckets = [...uptimeBuckets(db, o.hostname, { resolution: 'daily', fromMs: day, toMs: day + DAY })].map((b) => b.item);
    const locations = [...new Set(raw.map((r) => r.location))].sort();
    expect(buckets.map((b) => b.location)).toEqual(['__all__', ...locations]);
    const blobs = new Map(
      (db.prepare("SELECT location, sketches FROM uptime_daily WHERE host_id = ? AND bucket_start = ?").all(hostId(o.hostname), day) as { location: string; sketches: Buffer }[]).map((r) => [r.location || '__all__', r.sketches]),
    );
    let compared = 0;
    for (const b of buckets) {
      const rows = b.location === '__all__' ? raw : raw.filter((r) => r.location === b.location);
      expect([b.up, b.degraded, b.down]).toEqual([0, 1, 2].map((k) => rows.filter((r) => r.result === k).length));
      expect(b.checks_total).toBe(rows.length);
      expect(b.uptime_pct).toBe(round3((100 * (b.up + b.degraded)) / b.checks_total));
      const sketches = decodeSketches(blobs.get(b.location)!, 5);
      PHASE_COLS.forEach((phase, k) => {
        const values = rows.map((r) => r[phase]).filter((v): v is number => v !== null);
        for (const p of [50, 95, 99] as const) {
          const exact = exactPercentile(values, p);
          const est = sketches[k]!.percentile(p);
          if (exact === null) {
            expect(est).toBeNull();
            expect(b.phases[phase][`p${p}`]).toBe(0);
            continue;
          }
          expect(Math.abs(est! - exact), `${b.location} ${phase} p${p}`).toBeLessThanOrEqual(SKETCH_ALPHA * exact + 1e-9);
          expect(Math.abs(b.phases[phase][`p${p}`] - exact)).toBeLessThanOrEqual(SKETCH_ALPHA * exact + 0.5); // whole ms
          compared++;
        }
      });
    }
    expect(compared).toBeGreaterThan(80);
  });

  it('a phase never reached in a bucket reports 0; reached phases report their latency', () => {
    const o = outages.find((x) => x.timeline.length === 2 && x.worst === 'down' && ms(x.end ?? x.start) - ms(x.start) >= 3 * H)!; // long down
    const hour = Math.floor(ms(o.start) / H) * H + H;
    const raw = rawChecks(o.hostname, hour, hour + H);
    const all = [...uptimeBuckets(db, o.hostname, { resolution: 'hourly', fromMs: hour, toMs: hour + H, location: '__all__' })].map((b) => b.item);
    expect(all).toHaveLength(1);
    for (const phase of PHASE_COLS) {
      const reached = raw.filter((r) => r[phase] !== null).length;
      if (reached === 0) expect(all[0]!.phases[phase]).toEqual({ p50: 0, p95: 0, p99: 0 });
      else expect(all[0]!.phases[phase].p99).toBeGreaterThan(0);
    }
  });

  it('lists buckets newest first, __all__ before the locations, windowed by [from, to), with keyset continuation', () => {
    const host = outages[0]!.hostname;
    const from = ms('2026-11-10T00:00:00Z');
    const to = ms('2026-11-11T00:00:00Z');
    const all = [...uptimeBuckets(db, host, { resolution: 'hourly', fromMs: from, toMs: to })];
    expect(all).toHaveLength(24 * 7);
    expect(all[0]!.item.bucket_start).toBe('2026-11-10T23:00:00Z');
    expect(all.at(-1)!.item.bucket_start).toBe('2026-11-10T00:00:00Z');
    const first = all.slice(0, 7).map((b) => b.item.location);
    expect(first[0]).toBe('__all__');
    expect(first.slice(1)).toEqual([...first.slice(1)].sort());
    for (let i = 1; i < all.length; i++) {
      const a = all[i - 1]!.key;
      const b = all[i]!.key;
      expect(a.bucket_start > b.bucket_start || (a.bucket_start === b.bucket_start && (a.location === '__all__' || (b.location !== '__all__' && a.location < b.location)))).toBe(true);
    }
    const rest = [...uptimeBuckets(db, host, { resolution: 'hourly', fromMs: from, toMs: to, after: all[9]!.key })];
    expect(rest.map((b) => b.key)).toEqual(all.slice(10).map((b) => b.key));
    const item = all[0]!.item;
    expect(Object.keys(item)).toEqual(['resolution', 'hostname', 'role', 'location', 'bucket_start', 'checks_total', 'up', 'degraded', 'down', 'uptime_pct', 'phases']);
    expect(Object.keys(item.phases)).toEqual(['dns', 'tcp', 'tls', 'http', 'total']);
    expect([...uptimeBuckets(db, host, { resolution: 'monthly', location: '__all__' })].map((b) => b.item.bucket_start)).toEqual(['2026-11-01T00:00:00Z', '2026-10-01T00:00:00Z']);
    expect([...uptimeBuckets(db, host, { resolution: 'daily', location: 'fra', fromMs: from, toMs: to })].map((b) => [b.item.location, b.item.bucket_start])).toEqual([['fra', '2026-11-10T00:00:00Z']]);
    expect([...uptimeBuckets(db, 'no.such.host.example', { resolution: 'hourly' })]).toEqual([]);
  });
});

describe('hosts list, incidents list and network counts', () => {
  it('HostsResponse: every probed host, worst first, with 24 h uptime and latest latency from the raw checks', () => {
    const r = hostsResponse(db, now);
    const probed = db.prepare('SELECT count(DISTINCT host_id) FROM probe_obs').pluck().get() as number;
    expect(r.items).toHaveLength(probed);
    expect(r.generated_at).toBe('2026-11-22T00:00:00Z');
    const rank = (v: string | null): number => (v === 'down' ? 0 : v === 'degraded' ? 1 : v === null ? 2 : 3);
    for (let i = 1; i < r.items.length; i++) {
      const a = r.items[i - 1]!;
      const b = r.items[i]!;
      const ord = rank(a.verdict) - rank(b.verdict) || (a.uptime_24h ?? -1) - (b.uptime_24h ?? -1) || (a.hostname < b.hostname ? -1 : 1);
      expect(ord, `${a.hostname} before ${b.hostname}`).toBeLessThan(0);
    }
    const open = outages.filter((o) => o.status === 'open');
    expect(r.items.slice(0, 2).map((i) => [i.hostname, i.verdict])).toEqual(
      open.sort((a, b) => (a.worst === 'down' ? -1 : 1) - (b.worst === 'down' ? -1 : 1)).map((o) => [o.hostname, o.worst]),
    );
    for (const item of [r.items[0]!, r.items[1]!, r.items.at(-1)!]) {
      expect(Object.keys(item)).toEqual(['hostname', 'role', 'verdict', 'latency', 'uptime_24h', 'last_bucket', 'cert']);
      // uptime_24h: mean over the last 24 hourly buckets of 100 * (up + degraded) / total.
      let sum = 0;
      for (let h = now - 24 * H; h < now; h += H) {
        const raw = rawChecks(item.hostname, h, h + H);
        sum += uptimePct(raw.filter((x) => x.result === 0).length, raw.filter((x) => x.result === 1).length, raw.filter((x) => x.result === 2).length);
      }
      expect(item.uptime_24h).toBe(round3(sum / 24));
      expect(item.last_bucket).toBe('2026-11-21T23:00:00Z');
      const totals = rawChecks(item.hostname, now - H, now).map((x) => x.total).filter((v): v is number => v !== null);
      if (totals.length === 0) expect(item.latency).toBeNull();
      else
        for (const p of [50, 95] as const) {
          const exact = exactPercentile(totals, p)!;
          expect(Math.abs(item.latency![`p${p}`] - exact)).toBeLessThanOrEqual(SKETCH_ALPHA * exact + 0.5);
        }
    }
    const ups = r.items.map((i) => i.uptime_24h!);
    expect(r.rollup).toEqual({
      hosts: probed,
      avg_uptime_24h: round3(ups.reduce((s, u) => s + u, 0) / ups.length),
      avg_latency_p50: round3(r.items.filter((i) => i.latency).reduce((s, i) => s + i.latency!.p50, 0) / r.items.filter((i) => i.latency).length),
    });
    const counts = hostVerdictCounts(db, now);
    expect(counts).toEqual({ up: r.items.filter((i) => i.verdict === 'up').length, down: r.items.filter((i) => i.verdict === 'down').length, degraded: r.items.filter((i) => i.verdict === 'degraded').length });
    expect(counts.down).toBeGreaterThanOrEqual(1);
    expect(openIncidentCount(db)).toBe(open.length);
  });

  it('incidents newest first by (started_at, id), filtered by status, since (inclusive) and host, with keyset continuation', () => {
    const all = [...hostIncidents(db)];
    expect(all.map((k) => k.item.started_at)).toEqual(outages.map((o) => o.start).sort().reverse());
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.key.started_at > all[i]!.key.started_at || (all[i - 1]!.key.started_at === all[i]!.key.started_at && all[i - 1]!.key.id > all[i]!.key.id)).toBe(true);
    expect([...hostIncidents(db, { status: 'open' })].map((k) => k.item.hostname).sort()).toEqual(outages.filter((o) => o.status === 'open').map((o) => o.hostname).sort());
    const mid = all[4]!.item;
    const since = [...hostIncidents(db, { sinceMs: ms(mid.started_at) })];
    expect(since.map((k) => k.item.id)).toEqual(all.slice(0, 5).map((k) => k.item.id));
    expect([...hostIncidents(db, { host: mid.hostname })].map((k) => k.item.id)).toContain(mid.id);
    expect([...hostIncidents(db, { host: mid.hostname })].every((k) => k.item.hostname === mid.hostname)).toBe(true);
    expect([...hostIncidents(db, { after: all[2]!.key })].map((k) => k.item.id)).toEqual(all.slice(3).map((k) => k.item.id));
    expect([...hostIncidents(db, { host: 'no.such.host.example' })]).toEqual([]);
    expect(Object.keys(mid)).toEqual(['id', 'hostname', 'role', 'status', 'severity', 'started_at', 'ended_at', 'timeline']);
  });
});

// ---- incremental runs and pruning -------------------------------------------------------------------

const DIMENSION_TABLES = ['sources', 'hosts', 'locations', 'networks', 'certs', 'participants', 'endpoint_sets'];
const RAW_TABLES = ['probe_obs', 'zone_obs', 'directory_obs', 'sml_obs', 'smp_obs', 'member_obs', 'curation_obs', 'ack_obs', 'rejects'];
const HOST_TYPES = "('host_cert_rotated', 'hosting_changed')";
/** Every derived table of the two steps (S. = the schema), as a set of rows. */
const DERIVED: [string, string][] = [
  ...['host_state', 'host_incidents', 'host_events', 'host_checkpoints', 'uptime_hourly', 'uptime_daily', 'uptime_monthly', 'zone_incidents', 'zone_list'].map((t): [string, string] => [t, `SELECT * FROM S.${t}`]),
  ['events', `SELECT * FROM S.events WHERE type IN ${HOST_TYPES}`],
  ['event_hosts', `SELECT h.* FROM S.event_hosts h JOIN S.events e ON e.id = h.event_id WHERE e.type IN ${HOST_TYPES}`],
  ['event_seats', `SELECT x.* FROM S.event_seats x JOIN S.events e ON e.id = x.event_id WHERE e.type IN ${HOST_TYPES}`],
];

/** Compares every derived table of `d` with the same table of the database at refPath, row by row (SQL EXCEPT both ways). */
function expectSameTables(d: Db, refPath: string): void {
  d.prepare('ATTACH DATABASE ? AS ref').run(refPath);
  try {
    for (const [name, q] of DERIVED) {
      const mine = q.replaceAll('S.', 'main.');
      const ref = q.replaceAll('S.', 'ref.');
      const count = (sql: string): number => d.prepare(`SELECT count(*) FROM (${sql})`).pluck().get() as number;
      const missing = d.prepare(`SELECT * FROM (${ref}) EXCEPT SELECT * FROM (${mine}) LIMIT 3`).raw().all();
      const extra = d.prepare(`SELECT * FROM (${mine}) EXCEPT SELECT * FROM (${ref}) LIMIT 3`).raw().all();
      expect({ table: name, rows: count(mine), missing, extra }).toEqual({ table: name, rows: count(ref), missing: [], extra: [] });
    }
    expect(d.prepare('SELECT count(*) FROM main.host_state').pluck().get()).toBeGreaterThan(60);
  } finally {
    d.exec('DETACH DATABASE ref');
  }
}

/** The last segment id of the feed windows that start before `iso` (in the fixture database). */
const segmentsBefore = (iso: string): number => (db.prepare('SELECT min(id) FROM segments WHERE min_at >= ?').pluck().get(ms(iso)) as number) - 1;

describe('incremental derivation', () => {
  it('feeds ingested in five steps and derived after each give exactly the tables of one full run; a repeated run changes nothing', () => {
    // Cuts inside an escalating outage, a zone failure, a flapping outage and a pending recovery.
    const cuts = ['2026-10-28T10:20:00Z', '2026-11-01T07:20:00Z', '2026-11-04T09:40:00Z', '2026-11-14T18:40:00Z'];
    const inc = openDb(path.join(tempDir('derive-hosts-inc-'), 'inc.sqlite'));
    try {
      inc.prepare('ATTACH DATABASE ? AS src').run(dbPath);
      const bounds = [0, ...cuts.map(segmentsBefore), db.prepare('SELECT max(id) FROM segments').pluck().get() as number];
      const add = (lo: number, hi: number): void =>
        inc.transaction(() => {
          inc.prepare('INSERT INTO segments SELECT * FROM src.segments WHERE id > ? AND id <= ?').run(lo, hi);
          for (const t of RAW_TABLES) inc.prepare(`INSERT INTO ${t} SELECT * FROM src.${t} WHERE segment_id > ? AND segment_id <= ?`).run(lo, hi);
        })();
      inc.transaction(() => {
        for (const t of DIMENSION_TABLES) inc.exec(`INSERT INTO ${t} SELECT * FROM src.${t}`);
      })();
      for (let i = 1; i < bounds.length; i++) {
        const [lo, hi] = [bounds[i - 1]!, bounds[i]!];
        add(lo, hi);
        inc.exec('DETACH DATABASE src');
        const summary = runDerive(inc, {}, MINE);
        expect(summary).toMatchObject(i === 1 ? { full: true, upTo: hi } : { full: false, since: lo, upTo: hi });
        inc.prepare('ATTACH DATABASE ? AS src').run(dbPath);
      }
      inc.exec('DETACH DATABASE src');
      expectSameTables(inc, dbPath);
      // Running the steps again over the last segments (the last day) is idempotent.
      for (const step of MINE) inc.transaction(() => step.run({ db: inc, full: false, since: bounds.at(-1)! - 20, upTo: bounds.at(-1)!, progress: () => {} }))();
      expectSameTables(inc, dbPath);
    } finally {
      inc.close();
    }
  }, 120_000);
});

describe('hosts computed on worker threads', () => {
  it('give the tables of hosts computed in the step\'s own thread', () => {
    // The fixture's database is a file with more hosts than POOL_MIN_JOBS: a full run derives them on two workers.
    expect(derived.steps.hosts).toMatchObject({ workers: 2 });
    const copy = copyOfSmallDemoDb();
    const one = copy.open();
    try {
      const s = runDerive(one, { deriveWorkers: 0 }, MINE);
      expect(s.steps.hosts).toMatchObject({ workers: 0, hosts: derived.steps.hosts!.hosts, hourly: derived.steps.hosts!.hourly, checks: derived.steps.hosts!.checks });
      expectSameTables(one, dbPath);
    } finally {
      one.close();
    }
  }, 120_000);
});

describe('raw probe pruning', () => {
  it('prunes rolled-up checks before the horizon; a full rebuild keeps rollups, state, incidents and events of the pruned period', () => {
    const dir = tempDir('derive-hosts-prune-');
    const p = path.join(dir, 'pruned.sqlite');
    db.prepare('VACUUM INTO ?').run(p);
    const pruned = openDb(p);
    try {
      const horizon = ms('2026-11-15T00:00:00Z');
      const before = pruned.prepare('SELECT count(*) FROM probe_obs WHERE at < ?').pluck().get(horizon) as number;
      const r = pruneRawProbes(pruned, horizon + 5 * H);
      expect(r.horizon).toBe(horizon);
      expect(r.deleted).toBe(before);
      expect(pruned.prepare('SELECT count(*) FROM probe_obs WHERE at < ?').pluck().get(horizon)).toBe(0);
      expect(pruneRawProbes(pruned, horizon).deleted).toBe(0); // an earlier horizon is a no-op
      const s = runDerive(pruned, { full: true }, MINE);
      expect(s.full).toBe(true);
      expectSameTables(pruned, dbPath);
      // History before the horizon still answers.
      const o = outages.find((x) => ms(x.start) < horizon - DAY)!;
      expect(hostView(pruned, o.hostname, ms(o.timeline[0]!.at), now)!.verdict).toBe(o.timeline[0]!.severity);
    } finally {
      pruned.close();
    }
  }, 120_000);
});
