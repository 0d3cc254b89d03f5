// The demo scenario generator (src/demo): determinism, incremental append, feed validity, and a ground
// truth that an independent reading of the feeds confirms (precision and recall 1 on the small scenario).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anomalyId, anomalyTargetKey, type AnomalyTarget } from '../src/derive/anomaly-id.js';
import Database from 'better-sqlite3';
import { runIngest } from '../src/feeds/ingest.js';
import { buildNetwork, EVENT_TYPES, parseDemoOptions, participantBase, runDemo, SCALE_CONFIG, scaleStart, type GroundTruth, type Scale } from '../src/demo/index.js';
import { abnValid, gs1Digit, luhnValid } from '../src/demo/schemes.js';
import { FEED_KINDS, FeedIndex, parseFeedLine, type FeedRecord } from '../src/feeds/schema.js';
import { organisationFromSubject, seatIdFromSubject } from '../src/feeds/ids.js';
import { UsageError } from '../src/util/errors.js';
import { smallDemo } from './helpers/demo-fixture.js';

const SMALL_START = scaleStart('small');
const FULL_NOW = '2026-11-22T00:00:00Z';
/** The end-to-end check runs on `small`; DEMO_TEST_SCALE=medium (or large) runs it on a bigger scenario by hand. */
const FULL_SCALE = (process.env.DEMO_TEST_SCALE ?? 'small') as Scale;
const H = 3_600_000;
const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-test-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** path -> sha256 of every file under dir. */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(dir, p), createHash('sha256').update(fs.readFileSync(p)).digest('hex'));
    }
  };
  walk(dir);
  return out;
}

function* feedRecords(dir: string): Generator<{ seg: string; line: string }> {
  const idx = FeedIndex.parse(JSON.parse(fs.readFileSync(path.join(dir, 'feeds.json'), 'utf8')));
  for (const s of idx.segments) {
    const buf = fs.readFileSync(path.join(dir, s.path));
    expect(buf.length, s.path).toBe(s.bytes);
    expect(createHash('sha256').update(buf).digest('hex'), s.path).toBe(s.sha256);
    const text = (s.path.endsWith('.gz') ? zlib.gunzipSync(buf) : buf).toString('utf8');
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.split('\n')) if (line.length > 0) yield { seg: s.path, line };
  }
}

describe('demo options (CLI flags)', () => {
  const clock = Date.parse('2026-11-22T10:07:31Z');
  it('applies the defaults', () => {
    expect(parseDemoOptions({}, clock)).toEqual({ feeds: 'data/demo-feeds', scale: 'small', seed: 1, now: '2026-11-22T10:00:00Z' });
    expect(parseDemoOptions({ scale: 'large' }, clock).now).toBe('2026-11-22T10:00:00Z'); // floored to the 30-minute cadence
    expect(parseDemoOptions({ scale: 'large' }, Date.parse('2026-11-22T10:47:00Z')).now).toBe('2026-11-22T10:30:00Z');
    expect(parseDemoOptions({ now: '2026-11-22T10:00:00+01:00', seed: '42' }, clock)).toMatchObject({ now: '2026-11-22T09:00:00Z', seed: 42 });
  });
  it.each([
    [{ scale: 'huge' }],
    [{ seed: '1.5' }],
    [{ seed: '-3' }],
    [{ seed: 'abc' }],
    [{ seed: '99999999999' }],
    [{ now: 'yesterday' }],
    [{ now: '2026-02-30T00:00:00Z' }],
    [{ now: '2026-11-22T10:00:00' }],
  ])('rejects %j with a UsageError', (flags) => {
    expect(() => parseDemoOptions(flags, clock)).toThrow(UsageError);
  });
  it('refuses a --now before the scenario start, an earlier --now, another seed or scale, and a foreign directory', async () => {
    const dir = path.join(tmp, 'refuse');
    await expect(runDemo({ feeds: dir, scale: 'small', seed: 1, now: '2026-01-01T00:00:00Z' })).rejects.toThrow(UsageError);
    await runDemo({ feeds: dir, scale: 'small', seed: 1, now: iso(SMALL_START + 2 * H) });
    await expect(runDemo({ feeds: dir, scale: 'small', seed: 1, now: iso(SMALL_START + H) })).rejects.toThrow(/earlier than/);
    await expect(runDemo({ feeds: dir, scale: 'small', seed: 2, now: iso(SMALL_START + 3 * H) })).rejects.toThrow(/--seed 1 --scale small/);
    await expect(runDemo({ feeds: dir, scale: 'medium', seed: 1, now: iso(SMALL_START + 3 * H) })).rejects.toThrow(UsageError);
    const foreign = path.join(tmp, 'foreign');
    fs.mkdirSync(foreign);
    fs.writeFileSync(path.join(foreign, 'notes.txt'), 'x');
    await expect(runDemo({ feeds: foreign, scale: 'small', seed: 1, now: FULL_NOW })).rejects.toThrow(/not a demo feed directory/);
  });
});

describe('determinism and incremental append', () => {
  const t1 = iso(SMALL_START + 30 * H + 20 * 60_000); // mid-window: a partial hour and quarter are not written
  const t2 = iso(SMALL_START + 2 * 24 * H + 3 * H + 50 * 60_000); // includes two daily delta sweeps

  it('same seed and now give identical bytes; another seed gives different feeds', async () => {
    await runDemo({ feeds: path.join(tmp, 'a'), scale: 'small', seed: 7, now: t2 });
    await runDemo({ feeds: path.join(tmp, 'b'), scale: 'small', seed: 7, now: t2 });
    const a = tree(path.join(tmp, 'a'));
    expect(a.size).toBeGreaterThan(100);
    expect(tree(path.join(tmp, 'b'))).toEqual(a);
    await runDemo({ feeds: path.join(tmp, 'c'), scale: 'small', seed: 8, now: t2 });
    const c = tree(path.join(tmp, 'c'));
    expect(c.get('feeds.json')).not.toBe(a.get('feeds.json'));
    expect(c.get('ground-truth.json')).not.toBe(a.get('ground-truth.json'));
  });

  it('feeds up to t1 then up to t2 equal feeds up to t2 at once, byte for byte (plain and gzip)', async () => {
    const inc = path.join(tmp, 'inc');
    const s1 = await runDemo({ feeds: inc, scale: 'small', seed: 7, now: t1 });
    const s2 = await runDemo({ feeds: inc, scale: 'small', seed: 7, now: t2 });
    expect(s2.segments.reused).toBe(s1.segments.total);
    expect(s2.segments.written).toBe(s2.segments.total - s1.segments.total);
    expect(tree(inc)).toEqual(tree(path.join(tmp, 'a')));
    // Re-running at the same now is a no-op.
    const s3 = await runDemo({ feeds: inc, scale: 'small', seed: 7, now: t2 });
    expect(s3.segments.written).toBe(0);
    expect(tree(inc)).toEqual(tree(path.join(tmp, 'a')));

    const m0 = scaleStart('medium');
    const gz1 = path.join(tmp, 'gz1');
    const gz2 = path.join(tmp, 'gz2');
    await runDemo({ feeds: gz1, scale: 'medium', seed: 3, now: iso(m0 + H + 5 * 60_000) });
    await runDemo({ feeds: gz1, scale: 'medium', seed: 3, now: iso(m0 + 2 * H + 30 * 60_000) });
    await runDemo({ feeds: gz2, scale: 'medium', seed: 3, now: iso(m0 + 2 * H + 30 * 60_000) });
    const g = tree(gz1);
    expect([...g.keys()].some((k) => k.endsWith('.ndjson.gz'))).toBe(true);
    expect(tree(gz2)).toEqual(g);
    let n = 0;
    for (const { line } of feedRecords(gz1)) {
      const r = parseFeedLine(line);
      if (!r.ok) throw new Error(r.error);
      n++;
    }
    expect(n).toBeGreaterThan(30_000);
  });

  it('a killed run leaves no partial file under a final name; the next run completes the directory', async () => {
    const dir = path.join(tmp, 'killed');
    await runDemo({ feeds: dir, scale: 'small', seed: 7, now: t1 });
    // Simulate a crash mid-write of the next run: a stray temp file and a segment not yet in feeds.json.
    const extra = path.join(dir, 'segments', '2026-10-19T08', 'probe-0800.ndjson.demo-tmp-99999');
    fs.mkdirSync(path.dirname(extra), { recursive: true });
    fs.writeFileSync(extra, '{"partial');
    await runDemo({ feeds: dir, scale: 'small', seed: 7, now: t2 });
    expect(tree(dir)).toEqual(tree(path.join(tmp, 'a')));
    // A first run killed after claiming the directory and writing some segments is completed too.
    const fresh = path.join(tmp, 'killed-first');
    await runDemo({ feeds: fresh, scale: 'small', seed: 7, now: t1 });
    fs.rmSync(path.join(fresh, 'feeds.json'));
    fs.rmSync(path.join(fresh, 'ground-truth.json'));
    fs.writeFileSync(path.join(fresh, 'demo.json'), JSON.stringify({ format: 'peppol-snapshot/demo@1', seed: 7, scale: 'small', start: iso(SMALL_START), now: iso(SMALL_START) }));
    await runDemo({ feeds: fresh, scale: 'small', seed: 7, now: t2 });
    expect(tree(fresh)).toEqual(tree(path.join(tmp, 'a')));
  });
});

// ---------------------------------------------------------------------------------------------------
// The full small scenario, checked against an independent reading of its feeds.

type Sev = 'up' | 'degraded' | 'down';
interface Incident {
  key: string;
  start: string;
  end: string | null;
  worst: Sev;
  flaps: boolean;
}
const rank: Record<Sev, number> = { up: 0, degraded: 1, down: 2 };

/** Quorum incidents: open when a majority (>= 4 of 6) of locations is not up; close after two all-up slots. */
class IncidentTracker {
  private open = new Map<string, { start: string; worst: Sev; ups: number; upAt: string | null; flaps: boolean }>();
  readonly done: Incident[] = [];
  slot(key: string, at: string, sev: Sev): void {
    const o = this.open.get(key);
    if (!o) {
      if (sev !== 'up') this.open.set(key, { start: at, worst: sev, ups: 0, upAt: null, flaps: false });
      return;
    }
    if (sev === 'up') {
      o.ups++;
      if (o.ups === 1) o.upAt = at;
      if (o.ups >= 2) {
        this.done.push({ key, start: o.start, end: o.upAt, worst: o.worst, flaps: o.flaps });
        this.open.delete(key);
      }
      return;
    }
    if (o.ups > 0) o.flaps = true;
    o.ups = 0;
    if (rank[sev] > rank[o.worst]) o.worst = sev;
  }
  finish(): Incident[] {
    for (const [key, o] of this.open) this.done.push({ key, start: o.start, end: null, worst: o.worst, flaps: o.flaps });
    this.open.clear();
    return this.done.sort((a, b) => a.key.localeCompare(b.key) || a.start.localeCompare(b.start));
  }
}

function quorum(results: Sev[]): Sev {
  const down = results.filter((r) => r === 'down').length;
  const bad = results.filter((r) => r !== 'up').length;
  if (bad * 2 <= results.length) return 'up';
  return down * 2 > results.length ? 'down' : 'degraded';
}

interface Derived {
  lines: number;
  rejects: number;
  kinds: Record<string, number>;
  events: string[];
  incidents: Incident[];
  zoneIncidents: Incident[];
  dnameAt: string | null;
  anomalies: string[];
  churn: string[];
  acks: Map<string, { acknowledged: boolean; reason: string | null }>;
  seatsWithoutOrg: number;
}

/** Reads every feed line (through parseFeedLine) and derives events, incidents, anomalies and churn. */
function deriveFromFeeds(dir: string, baselineEnd: string): Derived {
  const d: Derived = { lines: 0, rejects: 0, kinds: {}, events: [], incidents: [], zoneIncidents: [], dnameAt: null, anomalies: [], churn: [], acks: new Map(), seatsWithoutOrg: 0 };
  const hostSlot = new Map<string, { at: string; results: Sev[] }>();
  const zoneSlot = new Map<string, { at: string; results: Sev[] }>();
  const hostInc = new IncidentTracker();
  const zoneInc = new IncidentTracker();
  const hostCert = new Map<string, { fp: string; subject: string; notAfter: string }>();
  const hostNet = new Map<string, string>();
  const hostSeat = new Map<string, string>();
  const sml = new Map<string, { registered: boolean; smp: string | null }>();
  const dirState = new Map<string, { present: boolean; card: string }>();
  const smp = new Map<string, { seats: string; urls: Map<string, string>; doctypes: string; seat: string }>();
  const curatedSeat = new Map<string, { slug: string; at: string }>();
  const curationMember = new Map<string, string | null>();
  const memberHosts = new Map<string, string[]>();
  const seatOrg = new Map<string, string | null>();
  const firstSeat = new Map<string, string>();
  const joiners = new Set<string>();
  const smpChanges: { at: string; from: string; to: string }[] = [];
  const moves: { participant: string; at: string; from: string; to: string }[] = [];
  const leavers: { participant: string; at: string; seat: string }[] = [];
  const anomalies: { detector: AnomalyTarget; at: string }[] = [];

  const flushSlot = (map: Map<string, { at: string; results: Sev[] }>, tracker: IncidentTracker, key: string): void => {
    const s = map.get(key);
    if (s) tracker.slot(key, s.at, quorum(s.results));
  };
  const event = (type: string, at: string, subject: string): void => {
    d.events.push(`${type}|${subject}|${at}`);
  };
  const providerAt = (seat: string, at: string | null): string => {
    const c = curatedSeat.get(seat);
    if (c && (at === null || c.at <= at)) return `c-${c.slug}`;
    const org = seatOrg.get(seat);
    return org ? `o:${org}` : `s-${seat}`;
  };
  const footprint = (seat: string, at: string): Set<string> => {
    const who = providerAt(seat, at);
    const hosts = new Set<string>();
    for (const [h, s] of hostSeat) if (providerAt(s, at) === who) hosts.add(h);
    const c = curatedSeat.get(seat);
    const member = c ? curationMember.get(c.slug) : null;
    for (const h of member ? (memberHosts.get(member) ?? []) : []) hosts.add(h);
    return hosts;
  };

  for (const { line } of feedRecords(dir)) {
    d.lines++;
    const parsed = parseFeedLine(line);
    if (!parsed.ok) {
      d.rejects++;
      continue;
    }
    const r: FeedRecord = parsed.record;
    d.kinds[r.kind] = (d.kinds[r.kind] ?? 0) + 1;
    switch (r.kind) {
      case 'probe': {
        const s = hostSlot.get(r.hostname);
        if (!s || s.at !== r.at) {
          flushSlot(hostSlot, hostInc, r.hostname);
          hostSlot.set(r.hostname, { at: r.at, results: [r.result] });
        } else s.results.push(r.result);
        const net = `${r.ips.join(',')}|${r.ptr}`;
        const prevNet = hostNet.get(r.hostname);
        if (prevNet !== undefined && prevNet !== net) event('hosting_changed', r.at, r.hostname);
        hostNet.set(r.hostname, net);
        if (r.cert) {
          const prev = hostCert.get(r.hostname);
          if (prev && prev.fp !== r.cert.fingerprint) {
            event('host_cert_rotated', r.at, r.hostname);
            const remainingDays = (Date.parse(prev.notAfter) - Date.parse(r.at)) / 86_400_000;
            const same = seatIdFromSubject(prev.subject) === seatIdFromSubject(r.cert.subject) && organisationFromSubject(prev.subject) === organisationFromSubject(r.cert.subject);
            if (!same) anomalies.push({ detector: { detector: 'cert_identity_shift', hostname: r.hostname }, at: r.at });
            else if (remainingDays > 60) anomalies.push({ detector: { detector: 'off_cadence_rotation', hostname: r.hostname }, at: r.at });
          }
          hostCert.set(r.hostname, { fp: r.cert.fingerprint, subject: r.cert.subject, notAfter: r.cert.not_after });
          const seat = seatIdFromSubject(r.cert.subject);
          if (seat) {
            hostSeat.set(r.hostname, seat);
            if (!seatOrg.has(seat)) seatOrg.set(seat, organisationFromSubject(r.cert.subject));
          }
        }
        break;
      }
      case 'zone': {
        const sev: Sev = r.critical_nxdomain ? 'down' : r.existing_ok < r.existing_total ? 'degraded' : 'up';
        const s = zoneSlot.get(r.zone);
        if (!s || s.at !== r.at) {
          flushSlot(zoneSlot, zoneInc, r.zone);
          zoneSlot.set(r.zone, { at: r.at, results: [sev] });
        } else s.results.push(sev);
        if (r.dname_target && d.dnameAt === null) d.dnameAt = r.at;
        break;
      }
      case 'member':
        memberHosts.set(r.key, r.hostnames);
        break;
      case 'curation':
        curationMember.set(r.slug, r.member_key);
        for (const s of r.seats) if (!curatedSeat.has(s)) curatedSeat.set(s, { slug: r.slug, at: r.at });
        break;
      case 'ack':
        d.acks.set(r.anomaly_id, { acknowledged: r.acknowledged, reason: r.reason });
        break;
      case 'directory': {
        const id = r.participant.id;
        const card = JSON.stringify(r.card);
        const prev = dirState.get(id);
        if (prev && prev.present && r.present && prev.card !== card) event('directory_card_changed', r.at, id);
        dirState.set(id, { present: r.present, card });
        break;
      }
      case 'sml': {
        const id = r.participant.id;
        const prev = sml.get(id);
        if (!prev) {
          if (r.at >= baselineEnd && r.registered) {
            event('participant_registered', r.at, id);
            joiners.add(id);
          }
        } else if (prev.registered !== r.registered) {
          event(r.registered ? 'participant_registered' : 'participant_deregistered', r.at, id);
          if (!r.registered) leavers.push({ participant: id, at: r.at, seat: smp.get(id)!.seat });
        } else if (r.registered && prev.smp !== r.smp) {
          event('participant_smp_changed', r.at, id);
          smpChanges.push({ at: r.at, from: prev.smp!, to: r.smp! });
        }
        sml.set(id, { registered: r.registered, smp: r.smp });
        break;
      }
      case 'smp': {
        const id = r.participant.id;
        const seatsOf = r.endpoints.map((e) => (e.cert ? seatIdFromSubject(e.cert.subject) : null) ?? '-');
        for (const e of r.endpoints) if (e.cert) {
          const s = seatIdFromSubject(e.cert.subject)!;
          if (!seatOrg.has(s)) seatOrg.set(s, organisationFromSubject(e.cert.subject));
        }
        const cur = {
          seats: [...new Set(seatsOf)].sort().join(','),
          urls: new Map(r.endpoints.map((e) => [`${e.doctype}|${e.process}`, e.url])),
          doctypes: [...new Set(r.endpoints.map((e) => e.doctype))].sort().join('\n'),
          seat: seatsOf[0]!,
        };
        const prev = smp.get(id);
        if (!prev) firstSeat.set(id, cur.seat);
        else {
          if (prev.seats !== cur.seats) {
            event('ap_seat_changed', r.at, id);
            moves.push({ participant: id, at: r.at, from: prev.seat, to: cur.seat });
            if (!curatedSeat.has(cur.seat) || curatedSeat.get(cur.seat)!.at > r.at) anomalies.push({ detector: { detector: 'moved_to_unverified_seat', participant: id, seat: cur.seat }, at: r.at });
          } else {
            let urlChanged: string | null = null;
            for (const [k, u] of cur.urls) if (prev.urls.has(k) && prev.urls.get(k) !== u) urlChanged = u;
            if (urlChanged !== null) {
              event('endpoint_changed', r.at, id);
              const host = new URL(urlChanged).hostname;
              if (!footprint(cur.seat, r.at).has(host)) anomalies.push({ detector: { detector: 'endpoint_off_footprint', participant: id, hostname: host }, at: r.at });
            }
          }
          if (prev.doctypes !== cur.doctypes) event('doctype_support_changed', r.at, id);
        }
        smp.set(id, cur);
        break;
      }
    }
  }
  for (const k of hostSlot.keys()) flushSlot(hostSlot, hostInc, k);
  for (const k of zoneSlot.keys()) flushSlot(zoneSlot, zoneInc, k);
  d.incidents = hostInc.finish();
  d.zoneIncidents = zoneInc.finish();

  // Mass change burst: >= 20 SMP changes with the same before and after within one UTC hour.
  const groups = new Map<string, { n: number; first: string; from: string; to: string }>();
  for (const c of smpChanges) {
    const k = `${c.at.slice(0, 13)}|${c.from}|${c.to}`;
    const g = groups.get(k) ?? { n: 0, first: c.at, from: c.from, to: c.to };
    g.n++;
    if (c.at < g.first) g.first = c.at;
    groups.set(k, g);
  }
  for (const g of groups.values()) if (g.n >= 20) anomalies.push({ detector: { detector: 'mass_change_burst', event_type: 'participant_smp_changed', from: g.from, to: g.to }, at: g.first });
  d.anomalies = anomalies.map((a) => anomalyId(a.detector.detector, anomalyTargetKey(a.detector), a.at)).sort();

  // Churn, resolved to the provider identities as they are at the end.
  for (const id of joiners) d.churn.push(`${id}|joiner||${providerAt(firstSeat.get(id)!, null)}`);
  for (const m of moves) {
    const from = providerAt(m.from, null);
    const to = providerAt(m.to, null);
    if (from !== to) d.churn.push(`${m.participant}|mover|${from}|${to}`);
  }
  for (const l of leavers) d.churn.push(`${l.participant}|leaver|${providerAt(l.seat, null)}|`);
  d.churn.sort();
  d.events.sort();
  for (const [s, org] of seatOrg) if (org === null && !curatedSeat.has(s)) d.seatsWithoutOrg++;
  return d;
}

describe(`the ${FULL_SCALE} scenario (${SCALE_CONFIG[FULL_SCALE].days} days)`, () => {
  let dir: string;
  let gt: GroundTruth;
  let derived: Derived;
  beforeAll(async () => {
    if (FULL_SCALE === 'small') dir = smallDemo().feeds; // generated once per test run (test/global-setup.ts)
    else {
      dir = path.join(tmp, 'full');
      await runDemo({ feeds: dir, scale: FULL_SCALE, seed: 1, now: FULL_NOW });
    }
    gt = JSON.parse(fs.readFileSync(path.join(dir, 'ground-truth.json'), 'utf8')) as GroundTruth;
    derived = deriveFromFeeds(dir, gt.window.baseline_sweep_end as string);
  }, FULL_SCALE === 'small' ? 120_000 : 3_600_000);

  it('every line of every segment passes parseFeedLine; feeds.json matches the files', () => {
    expect(derived.rejects).toBe(0);
    expect(derived.lines).toBeGreaterThan(1_000_000);
    expect(Object.keys(derived.kinds).sort()).toEqual(['ack', 'curation', 'directory', 'member', 'probe', 'sml', 'smp', 'zone']);
    const cfg = SCALE_CONFIG[FULL_SCALE];
    expect(derived.kinds.probe).toBe(cfg.hosts * 6 * (1440 / cfg.probeMinutes) * cfg.days);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'demo.json'), 'utf8'))).toEqual({ format: 'peppol-snapshot/demo@1', seed: 1, scale: FULL_SCALE, start: iso(scaleStart(FULL_SCALE)), now: FULL_NOW });
  });

  it('ingests through the real ingest with zero rejects and every record stored', async () => {
    // At scale small the fixture database is the real ingest of these feeds (test/global-setup.ts).
    const dbPath = FULL_SCALE === 'small' ? smallDemo().db : path.join(tmp, 'full.sqlite');
    if (FULL_SCALE !== 'small') {
      const s = await runIngest({ dbPath, sources: [{ name: 'demo', url: dir }], http: { timeout_ms: 30_000, retries: 0, retry_base_ms: 100 } });
      expect(s.failed_sources).toEqual([]);
      expect(s.rejects).toBe(0);
      expect(s.duplicates).toBe(0);
      expect(s.records).toEqual({ ...Object.fromEntries(FEED_KINDS.map((k) => [k, 0])), ...derived.kinds });
    }
    const fdb = new Database(dbPath, { readonly: true });
    expect(fdb.prepare('SELECT count(*) FROM rejects').pluck().get()).toBe(0);
    expect(fdb.prepare('SELECT sum(duplicates) FROM segments').pluck().get()).toBe(0);
    fdb.close();
    const db = new Database(dbPath, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM probe_obs').pluck().get()).toBe(derived.kinds.probe);
    expect(db.prepare('SELECT count(*) FROM segments').pluck().get()).toBe(JSON.parse(fs.readFileSync(path.join(dir, 'feeds.json'), 'utf8')).segments.length);
    db.close();
  }, 600_000);

  it('covers all nine event types and all five detectors', () => {
    for (const t of EVENT_TYPES) expect(gt.coverage.event_types[t], t).toBeGreaterThan(0);
    for (const det of ['cert_identity_shift', 'off_cadence_rotation', 'endpoint_off_footprint', 'moved_to_unverified_seat', 'mass_change_burst']) expect(gt.coverage.detectors[det], det).toBeGreaterThan(0);
    const outages = gt.outages as { status: string; flaps: boolean; worst: string }[];
    expect(outages.some((o) => o.status === 'open')).toBe(true);
    expect(outages.some((o) => o.flaps)).toBe(true);
    expect(new Set(outages.map((o) => o.worst))).toEqual(new Set(['down', 'degraded']));
    expect((gt.zone_failures as { critical_nxdomain: boolean }[]).some((z) => z.critical_nxdomain)).toBe(true);
    expect(gt.dname_cutover).not.toBeNull();
    expect(gt.curation_changes.length).toBeGreaterThan(0);
    expect((gt.acks as { acknowledged: boolean }[]).some((a) => !a.acknowledged)).toBe(true);
    const kinds = new Set((gt.providers as { kind: string }[]).map((p) => p.kind));
    expect(kinds).toEqual(new Set(['curated', 'organisation', 'seat']));
    expect(derived.seatsWithoutOrg).toBeGreaterThan(0);
  });

  it('every expected event is in the feeds and the feeds imply no other event', () => {
    const expected = (gt.events as { type: string; observed_at: string; hostname: string | null; participant: string | null }[])
      .map((e) => `${e.type}|${e.participant ?? e.hostname}|${e.observed_at}`)
      .sort();
    expect(derived.events).toEqual(expected);
  });

  it('every injected outage is a quorum incident with its start, end and worst severity; blips are not', () => {
    const expected = (gt.outages as { hostname: string; start: string; end: string | null; worst: Sev; flaps: boolean }[])
      .map((o) => ({ key: o.hostname, start: o.start, end: o.end, worst: o.worst, flaps: o.flaps }))
      .sort((a, b) => a.key.localeCompare(b.key) || a.start.localeCompare(b.start));
    expect(derived.incidents).toEqual(expected);
    const zones = (gt.zone_failures as { zone: string; start: string; end: string | null; severity: Sev; expect_incident: boolean }[])
      .filter((z) => z.expect_incident)
      .map((z) => ({ key: z.zone, start: z.start, end: z.end, worst: z.severity, flaps: false }))
      .sort((a, b) => a.key.localeCompare(b.key) || a.start.localeCompare(b.start));
    expect(derived.zoneIncidents).toEqual(zones);
    expect(derived.dnameAt).toBe((gt.dname_cutover as { observed_at: string }).observed_at);
  });

  it('anomaly conditions: exactly the injected ones, with the ids of src/derive/anomaly-id.ts; acks target them', () => {
    const ids = (gt.anomalies as { id: string }[]).map((a) => a.id).sort();
    expect(derived.anomalies).toEqual(ids);
    for (const a of gt.anomalies as { id: string; detector: AnomalyTarget['detector']; target_key: string; window_start: string; acknowledged: boolean }[]) {
      expect(anomalyId(a.detector, a.target_key, a.window_start)).toBe(a.id);
      expect(derived.acks.get(a.id)?.acknowledged ?? false).toBe(a.acknowledged);
    }
    for (const id of derived.acks.keys()) expect(ids).toContain(id);
  });

  it('churn: joiners, movers and leavers resolved to the current provider identity', () => {
    const expected = (gt.churn as { participant: string; category: string; from: string | null; to: string | null }[])
      .map((c) => `${c.participant}|${c.category}|${c.from ?? ''}|${c.to ?? ''}`)
      .sort();
    expect(derived.churn).toEqual(expected);
    const stale = gt.curation_changes[0] as { old_key: string; new_key: string };
    expect((gt.providers as { ref: string; stale_keys: string[] }[]).find((p) => p.ref === stale.new_key)?.stale_keys).toContain(stale.old_key);
  });
});

describe('identifiers and anomaly ids', () => {
  it('participant identifiers are unique and carry valid check digits', () => {
    const net = buildNetwork(1, 'small');
    const seen = new Set<string>();
    const schemes = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const b = participantBase(net, i);
      expect(seen.has(b.id), b.id).toBe(false);
      seen.add(b.id);
      schemes.add(b.scheme);
      const v = b.id.split('::')[1]!;
      switch (b.scheme) {
        case '0208':
          expect(97 - (Number(v.slice(0, 8)) % 97)).toBe(Number(v.slice(8)));
          break;
        case '9925':
          expect(v.startsWith('be')).toBe(true);
          expect(97 - (Number(v.slice(2, 10)) % 97)).toBe(Number(v.slice(10)));
          break;
        case '0007':
        case '0002':
        case '0009':
          expect(luhnValid(v), `${b.scheme} ${v}`).toBe(true);
          break;
        case '0088':
          expect(gs1Digit(v.slice(0, 12))).toBe(Number(v.slice(12)));
          break;
        case '0151':
          expect(abnValid(v)).toBe(true);
          break;
        case '0192': {
          const w = [3, 2, 7, 6, 5, 4, 3, 2];
          const s = w.reduce((a, x, k) => a + x * Number(v[k]), 0);
          expect((11 - (s % 11)) % 11).toBe(Number(v[8]));
          break;
        }
        case '0184': {
          const w = [2, 7, 6, 5, 4, 3, 2, 1];
          expect(w.reduce((a, x, k) => a + x * Number(v[k]), 0) % 11).toBe(0);
          break;
        }
      }
    }
    for (const s of ['0208', '9925', '0192', '0007', '0088', '0106', '9944', '0184', '0204', '9930', '0009', '0002', '0211', '0151']) expect(schemes.has(s), s).toBe(true);
  });

  it('anomaly ids are prefixed, content-derived and normalise the window start', () => {
    const key = anomalyTargetKey({ detector: 'off_cadence_rotation', hostname: 'AP.Example.BE' });
    expect(key).toBe('host:ap.example.be');
    const a = anomalyId('off_cadence_rotation', key, '2026-11-02T02:14:09Z');
    expect(a).toMatch(/^ocr-[0-9a-f]{16}$/);
    expect(anomalyId('off_cadence_rotation', key, '2026-11-02T03:14:09+01:00')).toBe(a);
    expect(anomalyId('cert_identity_shift', key, '2026-11-02T02:14:09Z')).not.toBe(a);
    expect(() => anomalyId('off_cadence_rotation', key, 'nope')).toThrow();
  });
});
