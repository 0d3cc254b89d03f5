// The providers and rosters steps (members, curated providers, seats, AP identities, stale keys, seat
// hosts, roster counts) and their readers: a hand-built case for O= keys, then the small demo's ground
// truth and counts recomputed from the raw tables.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../src/db/index.js';
import { hostsStep } from '../src/derive/hosts/index.js';
import { isoTime } from '../src/derive/hosts/time.js';
import { ensureDerivedSchema } from '../src/derive/index.js';
import { orgHash, orgKey, slugify } from '../src/derive/providers/identity.js';
import { resolveApKey } from '../src/derive/providers/keys.js';
import { apDetail, apsList, providerDetail, providersList, seatView } from '../src/derive/providers/read.js';
import { providersStep } from '../src/derive/providers/step.js';
import { rostersStep } from '../src/derive/providers/rosters.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

interface GtProvider {
  ref: string;
  kind: string;
  name: string;
  seats: string[];
  hostnames: string[];
  stale_keys: string[];
}
interface GtHost {
  hostname: string;
  role: string;
  seat: string;
  provider_ref: string;
}

/** Ground-truth provider ref -> API key (`o:<O=>` -> `o-<slug>-<hash>`). */
const keyOfRef = (ref: string): string => (ref.startsWith('o:') ? orgKey(ref.slice(2)) : ref);

/**
 * Seat ids that occur anywhere in the raw data (host certificates, endpoint certificates, curation
 * records), read independently of the step. The ground truth lists every seat of the scenario; a seat
 * that no record names cannot be derived (the small demo has one: a second seat of an organisation
 * that serves no participant and presents no host).
 */
function observedSeats(db: Db): Set<string> {
  const text = [
    ...(db.prepare('SELECT subject FROM certs').pluck().all() as string[]),
    ...(db.prepare('SELECT endpoints FROM endpoint_sets').pluck().all() as string[]),
    ...(db.prepare('SELECT seats FROM curation_obs').pluck().all() as string[]),
  ].join('\n');
  return new Set(text.match(/P[A-Z]{2}[0-9]{6}/g) ?? []);
}

/** The ground-truth providers restricted to observed seats (identities with none are dropped). */
function expectedProviders(db: Db): GtProvider[] {
  const seen = observedSeats(db);
  return (smallDemo().groundTruth().providers as GtProvider[])
    .map((p) => ({ ...p, seats: p.seats.filter((s) => seen.has(s)) }))
    .filter((p) => p.seats.length > 0);
}

let db: Db;
let seconds = 0;
let rosterSeconds = 0;
beforeAll(async () => {
  // The small demo derived with the registered pipeline (STEPS) once per run (test/helpers/demo-fixture.ts), copied.
  const derived = await derivedSmallDemo();
  db = copyOfDb(derived.db).open();
  const summary = derived.summary;
  seconds = summary.steps.providers!.seconds;
  rosterSeconds = summary.steps.rosters!.seconds;
}, 120_000);
afterAll(() => db?.close());

describe('identity keys', () => {
  it('slugifies O= strings to URL-safe slugs and hashes the exact string', () => {
    expect(slugify('Arkivsync NV')).toBe('arkivsync-nv');
    expect(slugify('Irisconnect S.r.l.')).toBe('irisconnect-s-r-l');
    expect(slugify('Société Générale Ødegaard')).toBe('societe-generale-degaard');
    expect(slugify('  --  ')).toBe('org');
    expect(slugify('x'.repeat(60))).toHaveLength(40);
    expect(orgHash('Arkivsync NV')).toMatch(/^[0-9a-f]{8}$/);
    // The hash tells apart O= strings that slugify alike.
    expect(orgKey('Arkivsync NV')).not.toBe(orgKey('Arkivsync, NV'));
    expect(orgKey('Arkivsync NV')).toBe(`o-arkivsync-nv-${orgHash('Arkivsync NV')}`);
  });
});

describe('stale O= keys', () => {
  /** A raw database with endpoint lists of the given (seat, O=) pairs and curation records. */
  function build(curations: Array<{ slug: string; seats: string[] }>): Db {
    const d = openDb(path.join(tempDir('providers-'), 'synth.sqlite'));
    d.prepare("INSERT INTO sources (id, url, name) VALUES (1, 'synthetic', 'synthetic')").run();
    d.prepare("INSERT INTO segments (source_id, path, sha256, bytes, lines, records, duplicates, rejects, min_at, max_at, ingested_at) VALUES (1, 's', 'x', 0, 0, 0, 0, 0, 0, 0, 0)").run();
    ensureDerivedSchema(d, [hostsStep, providersStep]);
    const seats: Array<[string, string]> = [['PNL000003', 'Beta BV'], ['PNL000006', 'Beta BV'], ['PNL000007', 'Beta BV'], ['PBE000008', 'Delta NV']];
    for (const [seat, org] of seats) {
      const eps = [{ doctype: 'd', process: 'p', transport_profile: 'as4', url: 'https://x.example/', cert: { fingerprint: '0'.repeat(64), subject: `CN=${seat},O=${org},C=NL`, issuer: 'CA' } }];
      d.prepare('INSERT INTO endpoint_sets (hash, endpoints) VALUES (?, ?)').run(seat, JSON.stringify(eps));
    }
    for (const c of curations) d.prepare("INSERT INTO curation_obs (slug, at, name, country, natural_key, notes, seats, member_key, segment_id) VALUES (?, 1, ?, 'NL', NULL, NULL, ?, NULL, 1)").run(c.slug, c.slug, JSON.stringify(c.seats));
    d.transaction(() => providersStep.run({ db: d, full: true, since: 0, upTo: 1, progress: () => {} }))();
    return d;
  }
  const BETA = orgKey('Beta BV');

  it('an O= key stays current while one of its seats is uncurated', () => {
    const d = build([{ slug: 'beta', seats: ['PNL000003'] }]);
    expect(resolveApKey(d, BETA)).toBe(BETA);
    expect(d.prepare('SELECT seat_id FROM seat_identities WHERE key = ? ORDER BY seat_id').pluck().all(BETA)).toEqual(['PNL000006', 'PNL000007']);
    expect(resolveApKey(d, 's-PNL000003')).toBe('c-beta');
    expect(resolveApKey(d, 's-PNL000006')).toBe(BETA);
    d.close();
  });

  it('once all its seats are curated, the O= key resolves to the identity holding most of them', () => {
    const d = build([
      { slug: 'beta', seats: ['PNL000003'] },
      { slug: 'beta-group', seats: ['PNL000006', 'PNL000007'] },
    ]);
    expect(d.prepare('SELECT key FROM ap_identities WHERE key = ?').get(BETA)).toBeUndefined();
    expect(resolveApKey(d, BETA)).toBe('c-beta-group');
    expect(resolveApKey(d, orgKey('Delta NV'))).toBe(orgKey('Delta NV'));
    d.close();
  });
});

describe('providers on the small demo', () => {
  it('AP identities equal the ground truth: keys, names, seats, hosts', () => {
    const gt = expectedProviders(db);
    const all = smallDemo().groundTruth().providers as GtProvider[];
    // At most a handful of scenario seats are never named by any record.
    expect(all.flatMap((p) => p.seats).length - gt.flatMap((p) => p.seats).length).toBeLessThanOrEqual(2);
    const ids = db.prepare('SELECT key, name, verified FROM ap_identities ORDER BY key').all() as Array<{ key: string; name: string; verified: number }>;
    expect(ids.map((i) => i.key).sort()).toEqual(gt.map((p) => keyOfRef(p.ref)).sort());
    for (const p of gt) {
      const key = keyOfRef(p.ref);
      const id = ids.find((i) => i.key === key)!;
      expect(id.name, key).toBe(p.name);
      expect(id.verified === 1, key).toBe(p.kind === 'curated');
      expect(db.prepare('SELECT seat_id FROM seat_identities WHERE key = ? ORDER BY seat_id').pluck().all(key), key).toEqual(p.seats);
      const hosts = db.prepare('SELECT h.hostname FROM seat_hosts h JOIN seat_identities s ON s.seat_id = h.seat_id WHERE s.key = ? ORDER BY h.hostname').pluck().all(key);
      expect(hosts, key).toEqual(p.hostnames);
    }
    expect(new Set(gt.map((p) => p.kind))).toEqual(new Set(['curated', 'organisation', 'seat']));
  });

  it('every host presents the ground-truth seat; seat views list it', () => {
    const hosts = smallDemo().groundTruth().hosts as GtHost[];
    for (const h of hosts) {
      const row = db.prepare('SELECT seat_id, role FROM seat_hosts WHERE hostname = ?').get(h.hostname) as { seat_id: string; role: string };
      expect(row, h.hostname).toEqual({ seat_id: h.seat, role: h.role });
      const v = seatView(db, h.seat)!;
      expect(v.hosts.map((x) => x.hostname)).toContain(h.hostname);
      const key = (db.prepare('SELECT key FROM seat_identities WHERE seat_id = ?').pluck().get(h.seat) as string);
      expect(key, h.hostname).toBe(keyOfRef(h.provider_ref));
    }
  });

  it('stale keys (a bare seat curated mid-window) resolve to the current identity; current keys resolve to themselves', () => {
    const gt = smallDemo().groundTruth();
    const changes = gt.curation_changes as Array<{ old_key: string; new_key: string; seat: string }>;
    expect(changes.length).toBeGreaterThan(0);
    for (const c of changes) {
      expect(resolveApKey(db, c.old_key)).toBe(c.new_key);
      expect(db.prepare('SELECT key FROM ap_identities WHERE key = ?').get(c.old_key)).toBeUndefined();
    }
    for (const p of expectedProviders(db)) {
      const key = keyOfRef(p.ref);
      expect(resolveApKey(db, key)).toBe(key);
      for (const s of p.stale_keys) expect(resolveApKey(db, keyOfRef(s))).toBe(key);
      // Every seat's bare key names the seat's current identity.
      for (const seat of p.seats) expect(resolveApKey(db, `s-${seat}`)).toBe(key);
    }
    expect(resolveApKey(db, 's-PZZ999999')).toBeNull();
    expect(resolveApKey(db, 'c-no-such-provider')).toBeNull();
  });

  it('the member registry: latest record per key, flags, declared hostnames, curated slug', () => {
    const members = db
      .prepare('SELECT m.* FROM member_obs m WHERE m.id = (SELECT id FROM member_obs n WHERE n.key = m.key ORDER BY n.at DESC, n.id DESC LIMIT 1) AND m.active = 1 ORDER BY m.key')
      .all() as Array<{ key: string; trade_name: string; legal_name: string | null; country: string | null; url: string | null; ap: number; smp: number; peppol_authority: number; end_user: number; observer: number; hostnames: string }>;
    const list = providersList(db);
    expect(list.map((p) => p.key).sort()).toEqual(members.map((m) => m.key));
    for (const m of members) {
      const p = list.find((x) => x.key === m.key)!;
      expect(Object.keys(p)).toEqual(['key', 'trade_name', 'legal_name', 'country', 'url', 'flags', 'hostnames', 'participant_count', 'slug']);
      expect(Object.keys(p.flags)).toEqual(['peppol_authority', 'ap', 'smp', 'end_user', 'observer']);
      expect(p).toMatchObject({ trade_name: m.trade_name, legal_name: m.legal_name, country: m.country, url: m.url });
      expect(p.flags).toEqual({ peppol_authority: m.peppol_authority === 1, ap: m.ap === 1, smp: m.smp === 1, end_user: m.end_user === 1, observer: m.observer === 1 });
      expect(p.hostnames).toEqual((JSON.parse(m.hostnames) as string[]).sort());
      const slug = db.prepare('SELECT slug FROM curated_providers WHERE member_key = ? ORDER BY slug LIMIT 1').pluck().get(m.key) ?? null;
      expect(p.slug, m.key).toBe(slug);
    }
    // Members without a curated provider exist (authorities, observers, uncurated APs).
    expect(list.some((p) => p.slug === null && p.flags.ap)).toBe(true);
    expect(list.some((p) => p.slug !== null)).toBe(true);
  });

  it('providerDetail: curated provider with its seats and the hosts presenting them', () => {
    const gt = smallDemo().groundTruth();
    const change = (gt.curation_changes as Array<{ slug: string; seat: string; observed_at: string }>)[0]!;
    const d = providerDetail(db, change.slug)!;
    expect(Object.keys(d)).toEqual(['slug', 'name', 'country', 'natural_key', 'notes', 'verified', 'seats']);
    expect(d.verified).toBe(true);
    expect(d.seats.map((s) => s.seat_id)).toContain(change.seat);
    const rec = db.prepare('SELECT name, country, natural_key, notes FROM curation_obs WHERE slug = ? ORDER BY at DESC LIMIT 1').get(change.slug);
    expect({ name: d.name, country: d.country, natural_key: d.natural_key, notes: d.notes }).toEqual(rec);
    for (const s of d.seats) for (const h of s.hosts) {
      expect(Object.keys(h)).toEqual(['hostname', 'role', 'since']);
      expect(['SMP', 'AP']).toContain(h.role);
    }
    expect(providerDetail(db, 'no-such-slug')).toBeNull();
  });

  it('seat views: provider by precedence (curated, O=, bare) and hosts with since', () => {
    const gt = expectedProviders(db);
    for (const p of gt) {
      for (const seat of p.seats) {
        const v = seatView(db, seat)!;
        expect(Object.keys(v)).toEqual(['seat_id', 'provider', 'hosts']);
        expect(Object.keys(v.provider)).toEqual(['slug', 'name', 'country', 'verified']);
        expect(v.provider.verified).toBe(p.kind === 'curated');
        expect(v.provider.name).toBe(p.name);
        expect(v.provider.slug).toBe(p.kind === 'curated' ? p.ref.slice(2) : null);
      }
    }
    expect(seatView(db, 'PZZ999999')).toBeNull();
  });

  it("a host's since is its first certificate, or the rotation onto its current seat (identity shift)", () => {
    const gt = smallDemo().groundTruth();
    const shift = (gt.changes as Array<{ kind: string; hostname: string; observed_at: string; seat_after: string }>).find((c) => c.kind === 'cert_identity_shift')!;
    const v = seatView(db, shift.seat_after)!;
    expect(v.hosts.find((h) => h.hostname === shift.hostname)?.since).toBe(shift.observed_at);
    // A host that never changed seats presents it since its first probe with a certificate.
    const steady = (gt.hosts as GtHost[]).find((h) => !(gt.changes as Array<{ hostname?: string }>).some((c) => c.hostname === h.hostname))!;
    const first = db
      .prepare('SELECT min(p.at) FROM probe_obs p JOIN hosts h ON h.id = p.host_id WHERE h.hostname = ? AND p.cert_id IS NOT NULL')
      .pluck()
      .get(steady.hostname) as number;
    expect(seatView(db, steady.seat)!.hosts.find((h) => h.hostname === steady.hostname)?.since).toBe(isoTime(first));
  });

  it('derives in well under a second on the small demo', () => {
    console.log(`providers step (full): ${seconds.toFixed(3)} s; rosters step: ${rosterSeconds.toFixed(3)} s`);
    expect(seconds).toBeLessThan(5);
    expect(rosterSeconds).toBeLessThan(5);
  });
});

/**
 * Current state read straight from the raw tables, independently of the participants step: per
 * participant, the latest SML observation (registered, SMP host) and the serving seat of the latest SMP
 * record (the seat of the most endpoints, ties to the lowest seat id).
 */
function rawCurrentState(db: Db): Array<{ pid: string; scheme: string; registered: boolean; smp: string | null; seat: string | null; country: string | null }> {
  const rows = db
    .prepare(
      `SELECT p.pid, p.scheme,
         (SELECT s.registered FROM sml_obs s WHERE s.participant_id = p.id ORDER BY s.at DESC LIMIT 1) AS registered,
         (SELECT h.hostname FROM sml_obs s JOIN hosts h ON h.id = s.smp_host_id WHERE s.participant_id = p.id ORDER BY s.at DESC LIMIT 1) AS smp,
         (SELECT e.endpoints FROM smp_obs m JOIN endpoint_sets e ON e.id = m.endpoint_set_id WHERE m.participant_id = p.id ORDER BY m.at DESC LIMIT 1) AS endpoints,
         (SELECT CASE WHEN d.present = 1 AND d.has_card = 1 THEN d.country END FROM directory_obs d WHERE d.participant_id = p.id ORDER BY d.at DESC LIMIT 1) AS country
       FROM participants p`,
    )
    .all() as Array<{ pid: string; scheme: string; registered: number | null; smp: string | null; endpoints: string | null; country: string | null }>;
  return rows.map((r) => {
    const counts = new Map<string, number>();
    for (const m of (r.endpoints ?? '').matchAll(/"subject":"CN=(P[A-Z]{2}[0-9]{6})[,"]/g)) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
    const seat = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0] ?? null;
    return { pid: r.pid, scheme: r.scheme, registered: r.registered === 1, smp: r.registered === 1 ? r.smp : null, seat, country: r.country };
  });
}

describe('rosters: participant counts and mixes', () => {
  it('ApView participant_count = registered participants whose serving seat resolves to the identity; busiest first', () => {
    const keyOf = new Map((db.prepare('SELECT seat_id, key FROM seat_identities').all() as Array<{ seat_id: string; key: string }>).map((r) => [r.seat_id, r.key]));
    const expected = new Map<string, number>();
    for (const p of rawCurrentState(db)) if (p.registered && p.seat !== null) expected.set(keyOf.get(p.seat)!, (expected.get(keyOf.get(p.seat)!) ?? 0) + 1);
    const aps = apsList(db, Date.parse(smallDemo().now));
    for (const a of aps) expect(a.participant_count, a.key).toBe(expected.get(a.key) ?? 0);
    expect(aps.reduce((n, a) => n + a.participant_count, 0)).toBe([...expected.values()].reduce((n, x) => n + x, 0));
    expect(aps.reduce((n, a) => n + a.participant_count, 0)).toBeGreaterThan(4000);
    const counts = aps.map((a) => a.participant_count);
    expect(counts).toEqual([...counts].sort((x, y) => y - x));
    expect(Object.keys(aps[0]!)).toEqual(['key', 'name', 'verified', 'seats', 'participant_count', 'net_growth']);
  });

  it('ApProviderDetail: canonical key for a stale key, seats, country and scheme mix of the roster', () => {
    const change = (smallDemo().groundTruth().curation_changes as Array<{ old_key: string; new_key: string }>)[0]!;
    const d = apDetail(db, change.old_key)!;
    expect(Object.keys(d)).toEqual(['key', 'name', 'verified', 'participant_count', 'seats', 'country_mix', 'scheme_mix']);
    expect(d.key).toBe(change.new_key);
    expect(d.verified).toBe(true);
    const busiest = apsList(db, Date.parse(smallDemo().now))[0]!;
    const b = apDetail(db, busiest.key)!;
    const seats = new Set(b.seats.map((s) => s.seat_id));
    const roster = rawCurrentState(db).filter((p) => p.registered && p.seat !== null && seats.has(p.seat));
    expect(b.participant_count).toBe(roster.length);
    const tally = (f: (p: (typeof roster)[number]) => string | null) => {
      const m = new Map<string, number>();
      for (const p of roster) {
        const v = f(p);
        if (v !== null) m.set(v, (m.get(v) ?? 0) + 1);
      }
      return [...m].map(([value, count]) => ({ value, count })).sort((x, y) => y.count - x.count || (x.value < y.value ? -1 : 1));
    };
    expect(b.scheme_mix).toEqual(tally((p) => p.scheme));
    expect(b.country_mix).toEqual(tally((p) => p.country));
    expect(b.country_mix.length).toBeGreaterThan(1);
    expect(apDetail(db, 's-PZZ999999')).toBeNull();
  });

  it('member participant_count = registered participants served by its seats or registered on its hostnames', () => {
    const state = rawCurrentState(db);
    for (const p of providersList(db)) {
      const seats = new Set(db.prepare('SELECT seat_id FROM provider_seats WHERE key = ?').pluck().all(p.key) as string[]);
      const hosts = new Set(p.hostnames);
      const n = state.filter((s) => s.registered && ((s.seat !== null && seats.has(s.seat)) || (s.smp !== null && hosts.has(s.smp)))).length;
      expect(p.participant_count, p.key).toBe(n);
    }
    const list = providersList(db);
    expect(list[0]!.participant_count).toBeGreaterThan(0);
    expect(list.map((p) => p.participant_count)).toEqual(list.map((p) => p.participant_count).sort((x, y) => y - x));
    // A member without a curated provider counts through the seats its declared hosts present.
    const uncurated = list.find((p) => p.slug === null && p.flags.ap && p.hostnames.length > 0)!;
    expect(uncurated.participant_count).toBeGreaterThan(0);
  });

  it('a cycle without participant observations re-sums the stored combinations; one with them regroups participant_list', () => {
    const state = () => ({
      rosters: db.prepare('SELECT * FROM ap_rosters ORDER BY key').all(),
      mix: db.prepare('SELECT * FROM ap_mix ORDER BY key, facet, value').all(),
      combos: db.prepare('SELECT * FROM ap_roster_combos ORDER BY rowid').all(),
      members: db.prepare('SELECT key, participant_count FROM providers ORDER BY key').all(),
    });
    const before = state();
    expect(before.combos.length).toBeGreaterThan(0);
    const hasObs = (id: number) => ['directory_obs', 'sml_obs', 'smp_obs'].some((t) => db.prepare(`SELECT 1 FROM ${t} WHERE segment_id = ? LIMIT 1`).get(id) !== undefined);
    const ids = db.prepare('SELECT id FROM segments ORDER BY id DESC').pluck().all() as number[];
    const probeOnly = ids.find((id) => !hasObs(id))!;
    const withObs = ids.find((id) => hasObs(id))!;
    const run = (id: number) => db.transaction(() => rostersStep.run({ db, full: false, since: id - 1, upTo: id, progress: () => {} }))();
    expect(run(probeOnly)).toMatchObject({ regrouped: 0 });
    expect(state()).toEqual(before);
    // The stored combinations are what a probe-only cycle sums: emptied, the counts drop to nothing...
    db.exec('DELETE FROM ap_roster_combos');
    run(probeOnly);
    expect(db.prepare('SELECT count(*) FROM ap_rosters').pluck().get()).toBe(0);
    // ...and a cycle with a participant observation groups participant_list again: the full run's tables.
    expect(run(withObs)).toMatchObject({ regrouped: 1 });
    expect(state()).toEqual(before);
  });
});
