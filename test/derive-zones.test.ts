// The `zones` derivation and the /v1/sml reader (src/derive/zones.ts) on the small demo: zone incidents
// against the ground truth, canary verdicts, quorum, critical NXDOMAIN, DNAME cutover, management TLS
// and staleness. Incremental runs of this step are checked with the hosts step in derive-hosts.test.ts.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/index.js';
import { hostsStep, isoTime } from '../src/derive/hosts/index.js';
import { runDerive } from '../src/derive/index.js';
import { canaryVerdict, smlResponse, zoneIncidents, zonesStep, type ZoneStatusView } from '../src/derive/zones.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';

interface ZoneFailure {
  zone: string;
  start: string;
  end: string | null;
  status: string;
  severity: 'up' | 'degraded' | 'down';
  critical_nxdomain: boolean;
  locations: string[];
  expect_incident: boolean;
}

const ms = (iso: string): number => Date.parse(iso);
const MIN = 60_000;
let db: Db;
let now: number;
let failures: ZoneFailure[];
let cutover: { zone: string; dname_target: string; observed_at: string };

beforeAll(() => {
  db = copyOfSmallDemoDb().open();
  runDerive(db, { only: ['zones'] }, [hostsStep, zonesStep]);
  now = ms(smallDemo().now);
  const gt = smallDemo().groundTruth();
  failures = gt.zone_failures as ZoneFailure[];
  cutover = gt.dname_cutover as typeof cutover;
}, 120_000);
afterAll(() => db?.close());

const zoneAt = (t: number, zone: string): ZoneStatusView => smlResponse(db, t).zones.find((z) => z.zone === zone)!;

describe('zone incidents', () => {
  it('every majority zone failure is one incident (zone, start, end, status, severity, timeline); single-location failures are none', () => {
    const zones = db.prepare('SELECT zone FROM zone_list ORDER BY zone').pluck().all() as string[];
    const got = zones.flatMap((z) => zoneIncidents(db, z)).map((i) => ({ zone: i.zone, status: i.status, severity: i.severity, started_at: i.started_at, ended_at: i.ended_at, timeline: i.timeline }));
    const expected = failures
      .filter((f) => f.expect_incident)
      .map((f) => ({
        zone: f.zone,
        status: f.status,
        severity: f.severity,
        started_at: f.start,
        ended_at: f.end,
        timeline: f.end === null ? [{ at: f.start, severity: f.severity }] : [{ at: f.start, severity: f.severity }, { at: f.end, severity: 'up' }],
      }));
    expect(got.sort((a, b) => a.started_at.localeCompare(b.started_at))).toEqual(expected.sort((a, b) => a.started_at.localeCompare(b.started_at)));
    expect(failures.some((f) => !f.expect_incident)).toBe(true);
    for (const i of zones.flatMap((z) => zoneIncidents(db, z))) {
      const hex = createHash('sha256').update(`zone\n${i.zone}\n${i.started_at}`).digest('hex').slice(0, 12);
      expect(i.id).toBe(Number.parseInt(hex, 16));
      expect(Object.keys(i)).toEqual(['id', 'zone', 'status', 'severity', 'started_at', 'ended_at', 'timeline']);
    }
  });

  it('the reader verdict at each incident step equals the step severity (the derivation and the reader apply one rule)', () => {
    const zones = db.prepare('SELECT zone FROM zone_list').pluck().all() as string[];
    for (const i of zones.flatMap((z) => zoneIncidents(db, z))) for (const s of i.timeline) expect(zoneAt(ms(s.at), i.zone).verdict, `${i.zone} ${s.at}`).toBe(s.severity);
  });
});

describe('SmlResponse', () => {
  it('one entry per zone with the spec fields in order; canaries are the latest per location, as in the raw feed', () => {
    const r = smlResponse(db, now);
    const zones = db.prepare('SELECT DISTINCT zone FROM zone_obs ORDER BY zone').pluck().all() as string[];
    expect(r.zones.map((z) => z.zone)).toEqual(zones);
    for (const z of r.zones) {
      expect(Object.keys(z)).toEqual(['zone', 'kind', 'env', 'operator', 'verdict', 'critical_nxdomain', 'cutover', 'canary', 'management', 'incidents']);
      const raw = db
        .prepare(
          `SELECT l.name AS location, o.* FROM zone_obs o JOIN locations l ON l.id = o.location_id
           WHERE o.zone = ? AND o.at = (SELECT max(at) FROM zone_obs WHERE zone = o.zone AND location_id = o.location_id AND at <= ?) ORDER BY l.name`,
        )
        .all(z.zone, now) as Record<string, number | string | null>[];
      expect(raw.length).toBe(6);
      expect(z.canary).toEqual(
        raw.map((c) => ({
          location: c.location,
          verdict: canaryVerdict(c as { critical_nxdomain: number; existing_ok: number; existing_total: number }),
          existing_ok: c.existing_ok,
          existing_total: c.existing_total,
          nonexistent_ok: c.nonexistent_ok,
          nonexistent_total: c.nonexistent_total,
          critical_nxdomain: c.critical_nxdomain === 1,
          soa_serial: c.soa_serial,
          ns: JSON.parse(c.ns as string),
          observed_at: isoTime(c.at as number),
        })),
      );
      expect(z).toMatchObject({ kind: raw[0]!.zone_kind, env: raw[0]!.env, operator: raw[0]!.operator, verdict: 'up', critical_nxdomain: false });
      expect(z.management).toEqual({ host: raw[0]!.mgmt_host, tls_ok: raw[0]!.mgmt_tls_ok === 1, tls_not_after: isoTime(raw[0]!.mgmt_tls_not_after as number), tls_issuer: raw[0]!.mgmt_tls_issuer });
      expect(z.incidents).toEqual(zoneIncidents(db, z.zone));
    }
  });

  it('critical NXDOMAIN from a majority of locations: verdict down and critical_nxdomain; from one location: only that canary', () => {
    const major = failures.find((f) => f.critical_nxdomain && f.expect_incident)!;
    const during = zoneAt(ms(major.start) + 15 * MIN, major.zone);
    expect(during.verdict).toBe('down');
    expect(during.critical_nxdomain).toBe(true);
    expect(during.canary.filter((c) => c.critical_nxdomain).map((c) => c.location).sort()).toEqual([...major.locations].sort());
    const minor = failures.find((f) => f.critical_nxdomain && !f.expect_incident)!;
    const single = zoneAt(ms(minor.start), minor.zone);
    expect(single.verdict).toBe('up');
    expect(single.critical_nxdomain).toBe(false);
    expect(single.canary.filter((c) => c.verdict === 'down').map((c) => c.location)).toEqual(minor.locations);
    const degraded = failures.find((f) => f.severity === 'degraded')!;
    expect(zoneAt(ms(degraded.start), degraded.zone).verdict).toBe('degraded');
  });

  it('DNAME cutover: absent before the first canary showing it, present with its target from then on; other zones report none', () => {
    const before = zoneAt(ms(cutover.observed_at) - 1, cutover.zone);
    expect(before.cutover).toEqual({ dname_present: false, dname_target: null });
    expect(zoneAt(ms(cutover.observed_at), cutover.zone).cutover).toEqual({ dname_present: true, dname_target: cutover.dname_target });
    for (const z of smlResponse(db, now).zones) expect(z.cutover).toEqual(z.zone === cutover.zone ? { dname_present: true, dname_target: cutover.dname_target } : { dname_present: false, dname_target: null });
  });

  it('stale canaries: 90 minutes after the last check the verdict and cutover are unknown; after 24 hours no canary is listed', () => {
    const last = db.prepare('SELECT max(at) FROM zone_obs').pluck().get() as number;
    const fresh = smlResponse(db, last + 90 * MIN - 1).zones[0]!;
    expect(fresh.verdict).toBe('up');
    const stale = smlResponse(db, last + 90 * MIN).zones[0]!;
    expect(stale).toMatchObject({ verdict: null, critical_nxdomain: false, cutover: { dname_present: null, dname_target: null } });
    expect(stale.canary).toHaveLength(6);
    const gone = smlResponse(db, last + 25 * 60 * MIN).zones[0]!;
    expect(gone.canary).toEqual([]);
    expect(gone.management).toEqual({ host: null, tls_ok: null, tls_not_after: null, tls_issuer: null });
    expect(smlResponse(db, ms('2026-01-01T00:00:00Z'))).toEqual({ zones: [] });
  });
});
