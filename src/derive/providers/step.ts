// The `providers` step: member registry, curated providers, seats and their provider identities, AP
// identities, stale-key aliases and the hosts presenting each seat (docs/methodology/providers.md).
//
// Everything here is small (providers, seats, hosts: thousands) and is recomputed whole on every run,
// except the scan of SMP endpoint lists for the `O=` string of each seat, which is incremental by
// endpoint_sets.id (endpoint lists are append-only and shared by many participants).
//
// Reads raw tables (member_obs, curation_obs, certs, endpoint_sets, hosts) and, of the hosts step (which
// runs earlier), host_state (each host's latest certificate) and the `host_cert_rotated` events (when a
// host started to present its current seat).
//
// providers.participant_count is written by the `rosters` step (src/derive/providers/rosters.ts), which
// runs after the participants step because it counts their current state; this step writes 0.
import type { Db } from '../../db/index.js';
import { organisationFromSubject, seatIdFromSubject } from '../../feeds/ids.js';
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';
import { identityOf, orgKey, seatKey, type SeatIdentity } from './identity.js';

export const PROVIDERS_DDL = `
  CREATE TABLE providers (
    key              TEXT PRIMARY KEY,
    trade_name       TEXT NOT NULL,
    legal_name       TEXT,
    country          TEXT,
    url              TEXT,
    peppol_authority INTEGER,
    ap               INTEGER,
    smp              INTEGER,
    end_user         INTEGER,
    observer         INTEGER,
    slug             TEXT,
    participant_count INTEGER
  ) WITHOUT ROWID;
  CREATE TABLE provider_hosts (
    key      TEXT NOT NULL,
    hostname TEXT NOT NULL,
    PRIMARY KEY (key, hostname)
  ) WITHOUT ROWID;
  CREATE INDEX provider_hosts_host ON provider_hosts (hostname);
  -- The seats a member serves with (for its participant count): its curated provider's seats, else the
  -- seats its declared hosts present.
  CREATE TABLE provider_seats (
    key     TEXT NOT NULL,
    seat_id TEXT NOT NULL,
    PRIMARY KEY (key, seat_id)
  ) WITHOUT ROWID;
  CREATE TABLE curated_providers (
    slug        TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    country     TEXT,
    natural_key TEXT,
    notes       TEXT,
    member_key  TEXT,
    observed_at INTEGER NOT NULL          -- at of the latest curation record (the one in force)
  ) WITHOUT ROWID;
  -- Every (seat, O= string) seen on a certificate: source 'smp' (endpoint signing certificates, ref =
  -- highest endpoint_sets.id holding it) or 'host' (host certificates, ref = highest certs.id). org ''
  -- when the subject has no O=.
  CREATE TABLE seat_orgs (
    seat_id TEXT NOT NULL,
    source  TEXT NOT NULL,
    org     TEXT NOT NULL,
    ref     INTEGER NOT NULL,
    PRIMARY KEY (seat_id, source, org)
  ) WITHOUT ROWID;
  CREATE TABLE providers_scan (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE seat_identities (
    seat_id  TEXT PRIMARY KEY,
    key      TEXT NOT NULL,
    name     TEXT,
    verified INTEGER NOT NULL,
    slug     TEXT,
    country  TEXT
  ) WITHOUT ROWID;
  CREATE INDEX seat_identities_key ON seat_identities (key, seat_id);
  CREATE INDEX seat_identities_slug ON seat_identities (slug, seat_id) WHERE slug IS NOT NULL;
  CREATE TABLE ap_identities (
    key      TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    verified INTEGER NOT NULL,
    slug     TEXT
  ) WITHOUT ROWID;
  CREATE TABLE ap_key_aliases (
    alias TEXT PRIMARY KEY,
    key   TEXT NOT NULL
  ) WITHOUT ROWID;
  -- Hosts whose current certificate (latest probe with a certificate) carries the seat.
  CREATE TABLE seat_hosts (
    seat_id  TEXT NOT NULL,
    hostname TEXT NOT NULL,
    role       TEXT,
    since      INTEGER NOT NULL,       -- when the host started to present this seat
    first_seen INTEGER NOT NULL,       -- when the host first presented any certificate
    PRIMARY KEY (seat_id, hostname)
  ) WITHOUT ROWID;
  CREATE INDEX seat_hosts_host ON seat_hosts (hostname);
`;

export const PROVIDERS_TABLES = [
  'seat_hosts',
  'ap_key_aliases',
  'ap_identities',
  'seat_identities',
  'providers_scan',
  'seat_orgs',
  'curated_providers',
  'provider_seats',
  'provider_hosts',
  'providers',
] as const;

interface MemberRow {
  key: string;
  trade_name: string;
  legal_name: string | null;
  country: string | null;
  url: string | null;
  peppol_authority: number;
  ap: number;
  smp: number;
  end_user: number;
  observer: number;
  hostnames: string;
  active: number;
}

interface CurationRow {
  slug: string;
  at: number;
  name: string;
  country: string | null;
  natural_key: string | null;
  notes: string | null;
  seats: string;
  member_key: string | null;
}

/** Parses a certificate subject once per run (subjects repeat across endpoint lists). */
class SubjectCache {
  private readonly map = new Map<string, { seat: string | null; org: string }>();
  get(subject: string): { seat: string | null; org: string } {
    let v = this.map.get(subject);
    if (!v) {
      v = { seat: seatIdFromSubject(subject), org: organisationFromSubject(subject) ?? '' };
      this.map.set(subject, v);
    }
    return v;
  }
}

/** Records the (seat, O=) pairs of endpoint lists added since the last scan. */
function scanEndpointSets(db: Db, subjects: SubjectCache): number {
  const last = (db.prepare("SELECT value FROM providers_scan WHERE name = 'endpoint_sets'").pluck().get() as number | undefined) ?? 0;
  const upsert = db.prepare(
    `INSERT INTO seat_orgs (seat_id, source, org, ref) VALUES (?, 'smp', ?, ?)
     ON CONFLICT (seat_id, source, org) DO UPDATE SET ref = max(ref, excluded.ref)`,
  );
  let max = last;
  let n = 0;
  // In batches: better-sqlite3 allows no other statement while an iterator is open.
  const batch = db.prepare('SELECT id, endpoints FROM endpoint_sets WHERE id > ? ORDER BY id LIMIT 500');
  for (;;) {
    const rows = batch.all(max) as Array<{ id: number; endpoints: string }>;
    if (rows.length === 0) break;
    for (const row of rows) {
      const eps = JSON.parse(row.endpoints) as Array<{ cert: { subject: string } | null }>;
      const seen = new Set<string>();
      for (const e of eps) {
        if (!e.cert) continue;
        const s = subjects.get(e.cert.subject);
        if (s.seat === null) continue;
        const k = `${s.seat}\n${s.org}`;
        if (seen.has(k)) continue;
        seen.add(k);
        upsert.run(s.seat, s.org, row.id);
      }
      max = row.id;
      n++;
    }
  }
  if (max > last) db.prepare("INSERT OR REPLACE INTO providers_scan (name, value) VALUES ('endpoint_sets', ?)").run(max);
  return n;
}

/** Host certificates: recomputed whole (one row per certificate ever seen by a probe). */
function scanHostCerts(db: Db, subjects: SubjectCache): void {
  db.prepare("DELETE FROM seat_orgs WHERE source = 'host'").run();
  const upsert = db.prepare(
    `INSERT INTO seat_orgs (seat_id, source, org, ref) VALUES (?, 'host', ?, ?)
     ON CONFLICT (seat_id, source, org) DO UPDATE SET ref = max(ref, excluded.ref)`,
  );
  for (const c of db.prepare('SELECT id, subject FROM certs ORDER BY id').all() as Array<{ id: number; subject: string }>) {
    const s = subjects.get(c.subject);
    if (s.seat !== null) upsert.run(s.seat, s.org, c.id);
  }
}

/**
 * The current certificate seat of every host with derived state (host_state of the hosts step: its
 * cert_id is the latest non-null certificate, kept across raw-probe pruning), since when the host
 * presents that seat, and when it first presented any certificate.
 */
function currentHostSeats(db: Db, subjects: SubjectCache): HostSeat[] {
  const latest = db.prepare('SELECT cert_id FROM host_state WHERE host_id = ? AND cert_id IS NOT NULL ORDER BY valid_from DESC LIMIT 1').pluck();
  const first = db.prepare('SELECT valid_from FROM host_state WHERE host_id = ? AND cert_id IS NOT NULL ORDER BY valid_from ASC LIMIT 1').pluck();
  const certSubject = db.prepare('SELECT subject FROM certs WHERE id = ?').pluck();
  // The latest rotation onto the current seat: host_cert_rotated payload { seat_before, seat_after } (events.ts).
  const rotations = db.prepare("SELECT observed_at, payload FROM events WHERE hostname = ? AND type = 'host_cert_rotated' ORDER BY observed_at DESC, id DESC");
  const out: HostSeat[] = [];
  for (const h of db.prepare('SELECT id, hostname, role FROM hosts ORDER BY hostname').all() as Array<{ id: number; hostname: string; role: string | null }>) {
    const certId = latest.get(h.id) as number | undefined;
    if (certId === undefined) continue;
    const seat = subjects.get(certSubject.get(certId) as string).seat;
    if (seat === null) continue;
    const firstSeen = first.get(h.id) as number;
    let since = firstSeen;
    for (const ev of rotations.all(h.hostname) as Array<{ observed_at: number; payload: string }>) {
      const p = JSON.parse(ev.payload) as { seat_before?: string | null; seat_after?: string | null };
      if (p.seat_after === seat && p.seat_before !== seat) {
        since = ev.observed_at;
        break;
      }
    }
    out.push({ hostname: h.hostname, role: h.role, seat, since, firstSeen });
  }
  return out;
}

interface HostSeat {
  hostname: string;
  role: string | null;
  seat: string;
  /** When the host started to present this seat (the rotation onto it, else its first certificate). */
  since: number;
  /** When the host first presented any certificate. */
  firstSeen: number;
}

/** The seat's `O=`: from its signing certificates (latest endpoint list), else its host certificates. */
function seatOrgs(db: Db): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const rows = db.prepare("SELECT seat_id, source, org FROM seat_orgs ORDER BY seat_id, source = 'smp' DESC, ref DESC").all() as Array<{ seat_id: string; source: string; org: string }>;
  for (const r of rows) if (!out.has(r.seat_id)) out.set(r.seat_id, r.org === '' ? null : r.org);
  return out;
}

export function runProviders(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  const subjects = new SubjectCache();
  const endpointSets = scanEndpointSets(db, subjects);
  scanHostCerts(db, subjects);

  for (const t of ['providers', 'provider_hosts', 'provider_seats', 'curated_providers', 'seat_identities', 'ap_identities', 'ap_key_aliases', 'seat_hosts']) db.exec(`DELETE FROM ${t}`);

  // Curated providers: the latest record per slug (ties in `at`: the later-ingested record).
  const curations = db
    .prepare(
      `SELECT c.slug, c.at, c.name, c.country, c.natural_key, c.notes, c.seats, c.member_key FROM curation_obs c
       WHERE c.id = (SELECT id FROM curation_obs d WHERE d.slug = c.slug ORDER BY d.at DESC, d.id DESC LIMIT 1)
       ORDER BY c.slug`,
    )
    .all() as CurationRow[];
  const insCur = db.prepare('INSERT INTO curated_providers (slug, name, country, natural_key, notes, member_key, observed_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  // A seat listed by several curated providers belongs to the one whose record is the most recent
  // (ties: the lowest slug).
  const seatSlug = new Map<string, CurationRow>();
  for (const c of curations) {
    insCur.run(c.slug, c.name, c.country, c.natural_key, c.notes, c.member_key, c.at);
    for (const s of JSON.parse(c.seats) as string[]) {
      const prev = seatSlug.get(s);
      if (!prev || c.at > prev.at) seatSlug.set(s, c);
    }
  }

  // Seats: every seat on a certificate, plus curated seats not (yet) observed.
  const orgs = seatOrgs(db);
  const seats = [...new Set([...orgs.keys(), ...seatSlug.keys()])].sort();
  const identities: SeatIdentity[] = seats.map((s) => {
    const c = seatSlug.get(s);
    return identityOf(s, c ? { slug: c.slug, name: c.name, country: c.country } : null, orgs.get(s) ?? null);
  });
  const insSeat = db.prepare('INSERT INTO seat_identities (seat_id, key, name, verified, slug, country) VALUES (?, ?, ?, ?, ?, ?)');
  const byKey = new Map<string, SeatIdentity>();
  for (const i of identities) {
    insSeat.run(i.seat_id, i.key, i.name, i.verified ? 1 : 0, i.slug, i.country);
    if (!byKey.has(i.key)) byKey.set(i.key, i);
  }
  const insAp = db.prepare('INSERT INTO ap_identities (key, name, verified, slug) VALUES (?, ?, ?, ?)');
  for (const [key, i] of [...byKey].sort((a, b) => (a[0] < b[0] ? -1 : 1))) insAp.run(key, i.name, i.verified ? 1 : 0, i.slug);

  // Stale keys: a seat's `s-` key and an O= string's `o-` key that no longer name a current identity.
  const aliases = new Map<string, string>();
  const currentOf = new Map(identities.map((i) => [i.seat_id, i.key]));
  for (const i of identities) if (i.key !== seatKey(i.seat_id)) aliases.set(seatKey(i.seat_id), i.key);
  const orgSeats = new Map<string, Map<string, number>>();
  for (const r of db.prepare("SELECT DISTINCT seat_id, org FROM seat_orgs WHERE org <> ''").all() as Array<{ seat_id: string; org: string }>) {
    const k = orgKey(r.org);
    if (byKey.has(k)) continue;
    const cur = currentOf.get(r.seat_id)!;
    const m = orgSeats.get(k) ?? new Map<string, number>();
    m.set(cur, (m.get(cur) ?? 0) + 1);
    orgSeats.set(k, m);
  }
  for (const [alias, m] of orgSeats) {
    // The identity holding most of the O= string's seats (ties: the lowest key).
    const [key] = [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))[0]!;
    aliases.set(alias, key);
  }
  const insAlias = db.prepare('INSERT INTO ap_key_aliases (alias, key) VALUES (?, ?)');
  for (const [a, k] of [...aliases].sort((x, y) => (x[0] < y[0] ? -1 : 1))) insAlias.run(a, k);

  // Hosts presenting each seat now.
  const hostSeats = currentHostSeats(db, subjects);
  const insSeatHost = db.prepare('INSERT INTO seat_hosts (seat_id, hostname, role, since, first_seen) VALUES (?, ?, ?, ?, ?)');
  const seatsOfHost = new Map<string, string>();
  for (const h of hostSeats) {
    insSeatHost.run(h.seat, h.hostname, h.role, h.since, h.firstSeen);
    seatsOfHost.set(h.hostname, h.seat);
  }

  // Member registry: the latest record per key; members that left (active = false) are not listed.
  const members = db
    .prepare(
      `SELECT m.key, m.trade_name, m.legal_name, m.country, m.url, m.peppol_authority, m.ap, m.smp, m.end_user, m.observer, m.hostnames, m.active
       FROM member_obs m
       WHERE m.id = (SELECT id FROM member_obs n WHERE n.key = m.key ORDER BY n.at DESC, n.id DESC LIMIT 1)
       ORDER BY m.key`,
    )
    .all() as MemberRow[];
  const slugsOfMember = new Map<string, string[]>();
  for (const c of curations) if (c.member_key !== null) slugsOfMember.set(c.member_key, [...(slugsOfMember.get(c.member_key) ?? []), c.slug]);
  const insProv = db.prepare(
    `INSERT INTO providers (key, trade_name, legal_name, country, url, peppol_authority, ap, smp, end_user, observer, slug, participant_count)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
  );
  const insPH = db.prepare('INSERT OR IGNORE INTO provider_hosts (key, hostname) VALUES (?, ?)');
  const insPS = db.prepare('INSERT OR IGNORE INTO provider_seats (key, seat_id) VALUES (?, ?)');
  let active = 0;
  for (const m of members) {
    if (m.active !== 1) continue;
    active++;
    const slugs = (slugsOfMember.get(m.key) ?? []).sort();
    insProv.run(m.key, m.trade_name, m.legal_name, m.country, m.url, m.peppol_authority, m.ap, m.smp, m.end_user, m.observer, slugs[0] ?? null);
    const hostnames = [...new Set((JSON.parse(m.hostnames) as string[]).map((h) => h.toLowerCase()))];
    for (const h of hostnames) insPH.run(m.key, h);
    if (slugs.length > 0) {
      for (const i of identities) if (i.slug !== null && slugs.includes(i.slug)) insPS.run(m.key, i.seat_id);
    } else {
      for (const h of hostnames) {
        const s = seatsOfHost.get(h);
        if (s !== undefined) insPS.run(m.key, s);
      }
    }
  }

  return { endpoint_sets: endpointSets, members: active, curated: curations.length, seats: identities.length, identities: byKey.size, aliases: aliases.size, hosts: hostSeats.length };
}

export const providersStep: DeriveStep = {
  name: 'providers',
  tables: PROVIDERS_TABLES,
  ddl: PROVIDERS_DDL,
  run: runProviders,
};
