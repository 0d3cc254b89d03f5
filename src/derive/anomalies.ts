// The `anomalies` step and its readers: five detectors over the change events (docs/methodology/anomalies.md).
//
//   detector                  grade    fires on
//   cert_identity_shift       warning  host_cert_rotated whose new certificate has another seat id or O=
//   off_cadence_rotation      notice   host_cert_rotated, same identity, > 60 days left on the replaced certificate
//   endpoint_off_footprint    warning  endpoint_changed moving a URL onto a host outside the footprint of the seat's provider
//   moved_to_unverified_seat  notice   ap_seat_changed onto a seat of another identity that was not curated at that time
//   mass_change_burst         warning  >= 20 participant_smp_changed (or ap_seat_changed) events with the same
//                                      (before, after) within 60 minutes
//
// Ids come from anomalyId() (content-derived, so acknowledgements in the `ack` feed attach and survive
// rebuilds). Everything a detector decides at an event's instant t uses only data as of t: curation
// and member records at or before t, host certificates (host_state) at or before t. So an incremental
// run recomputes the anomalies observed at or after the earliest instant of its new segments; the two
// inputs without a time (a seat's O= string, read from its certificates) trigger a full recompute
// when they change, and bursts (which span events) are recomputed whole on every run.
import type { Db } from '../db/index.js';
import { statement } from '../db/statements.js';
import { organisationFromSubject, seatIdFromSubject } from '../feeds/ids.js';
import { anomalyId, anomalyTargetKey, type AnomalyTarget, type Detector } from './anomaly-id.js';
import { DAY, HOUR, isoTime } from './hosts/time.js';
import { identityOf } from './providers/identity.js';
import { segmentsTimeFloor } from './providers/serving.js';
import type { DeriveContext, DeriveStep, StepStats } from './step.js';

export type Grade = 'notice' | 'warning';

export const GRADES: Record<Detector, Grade> = {
  cert_identity_shift: 'warning',
  off_cadence_rotation: 'notice',
  endpoint_off_footprint: 'warning',
  moved_to_unverified_seat: 'notice',
  mass_change_burst: 'warning',
};

/** A same-identity rotation with more than this much validity left on the replaced certificate is off cadence. */
export const OFF_CADENCE_REMAINING_MS = 60 * DAY;
/** A burst: at least this many events with the same (type, before, after) within BURST_WINDOW_MS. */
export const BURST_MIN_EVENTS = 20;
export const BURST_WINDOW_MS = HOUR;
/** Events of one (type, before, after) pair closer than this belong to the same cluster (one anomaly). */
export const BURST_GAP_MS = HOUR;
const BURST_TYPES = ['participant_smp_changed', 'ap_seat_changed'] as const;

export const ANOMALIES_DDL = `
  CREATE TABLE anomalies (
    id           TEXT PRIMARY KEY,    -- anomalyId(detector, target key, window start)
    detector     TEXT NOT NULL,
    grade        TEXT NOT NULL,       -- notice | warning
    target       TEXT NOT NULL,       -- JSON object
    evidence     TEXT NOT NULL,       -- JSON object
    observed_at  INTEGER NOT NULL,    -- window start: the earliest event it rests on
    acknowledged INTEGER NOT NULL,    -- latest ack record of the id (0 without one)
    reason       TEXT                 -- that record's reason
  ) WITHOUT ROWID;
  CREATE INDEX anomalies_time ON anomalies (observed_at DESC, id DESC);
  CREATE INDEX anomalies_detector ON anomalies (detector, observed_at DESC, id DESC);
  -- The events an anomaly rests on (its event_refs) and, reversed, the anomalies an event triggered.
  CREATE TABLE anomaly_events (
    anomaly_id  TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    observed_at INTEGER NOT NULL,     -- the event's, for event_refs order
    PRIMARY KEY (anomaly_id, event_id)
  ) WITHOUT ROWID;
  CREATE INDEX anomaly_events_event ON anomaly_events (event_id);
  -- Hosts and seats an anomaly concerns (the ?host= and ?seat= filters).
  CREATE TABLE anomaly_hosts (
    hostname   TEXT NOT NULL,
    anomaly_id TEXT NOT NULL,
    PRIMARY KEY (hostname, anomaly_id)
  ) WITHOUT ROWID;
  CREATE INDEX anomaly_hosts_anomaly ON anomaly_hosts (anomaly_id);
  CREATE TABLE anomaly_seats (
    seat_id    TEXT NOT NULL,
    anomaly_id TEXT NOT NULL,
    PRIMARY KEY (seat_id, anomaly_id)
  ) WITHOUT ROWID;
  CREATE INDEX anomaly_seats_anomaly ON anomaly_seats (anomaly_id);
  -- The seat O= strings the detectors last ran with (a change forces a full recompute).
  CREATE TABLE anomaly_seat_orgs (
    seat_id TEXT PRIMARY KEY,
    org     TEXT
  ) WITHOUT ROWID;
`;
export const ANOMALIES_TABLES = ['anomaly_seat_orgs', 'anomaly_seats', 'anomaly_hosts', 'anomaly_events', 'anomalies'] as const;

interface Found {
  detector: Detector;
  target: AnomalyTarget;
  evidence: Record<string, unknown>;
  observedAt: number;
  events: Array<{ id: string; observed_at: number }>;
  hosts: string[];
  seats: string[];
}

interface CurationRec {
  slug: string;
  at: number;
  name: string;
  country: string | null;
  seats: string[];
  member_key: string | null;
}
interface MemberRec {
  key: string;
  at: number;
  hostnames: string[];
  active: boolean;
}

/** Curation, member registry, seat O= strings and host certificates as of any instant (small data, held in memory). */
class AsOf {
  private readonly curations: CurationRec[];
  private readonly members: MemberRec[];
  private readonly hostCertAt;
  private readonly certSubject;
  private readonly hostIds = new Map<string, number>();
  private readonly subjectSeat = new Map<number, string | null>();

  constructor(
    db: Db,
    readonly orgs: Map<string, string | null>,
  ) {
    this.curations = (db.prepare('SELECT slug, at, name, country, seats, member_key FROM curation_obs ORDER BY at, id').all() as Array<Omit<CurationRec, 'seats'> & { seats: string }>).map((r) => ({
      ...r,
      seats: JSON.parse(r.seats) as string[],
    }));
    this.members = (db.prepare('SELECT key, at, hostnames, active FROM member_obs ORDER BY at, id').all() as Array<{ key: string; at: number; hostnames: string; active: number }>).map((r) => ({
      key: r.key,
      at: r.at,
      hostnames: (JSON.parse(r.hostnames) as string[]).map((h) => h.toLowerCase()),
      active: r.active === 1,
    }));
    for (const h of db.prepare('SELECT id, hostname FROM hosts').all() as Array<{ id: number; hostname: string }>) this.hostIds.set(h.hostname, h.id);
    // The host's latest known certificate at or before t (host_state carries it forward across gaps).
    this.hostCertAt = db.prepare('SELECT cert_id FROM host_state WHERE host_id = ? AND valid_from <= ? AND cert_id IS NOT NULL ORDER BY valid_from DESC LIMIT 1').pluck();
    this.certSubject = db.prepare('SELECT subject FROM certs WHERE id = ?').pluck();
  }

  /** The latest curation record per slug at or before t. */
  private curationsAt(t: number): Map<string, CurationRec> {
    const m = new Map<string, CurationRec>();
    for (const c of this.curations) if (c.at <= t) m.set(c.slug, c);
    return m;
  }

  /** The curated provider of a seat at t (the most recent record listing it; ties: lowest slug), or null. */
  curatedAt(seat: string, t: number): CurationRec | null {
    let best: CurationRec | null = null;
    for (const c of this.curationsAt(t).values()) {
      if (!c.seats.includes(seat)) continue;
      if (best === null || c.at > best.at || (c.at === best.at && c.slug < best.slug)) best = c;
    }
    return best;
  }

  /** The identity key of a seat at t (curation as of t; O= strings are not time-stamped). */
  keyAt(seat: string, t: number): string {
    const c = this.curatedAt(seat, t);
    return identityOf(seat, c ? { slug: c.slug, name: c.name, country: c.country } : null, this.orgs.get(seat) ?? null).key;
  }

  /** Hostnames declared at t by the active member a curated provider maps to. */
  memberHostsAt(memberKey: string, t: number): string[] {
    let rec: MemberRec | null = null;
    for (const m of this.members) if (m.key === memberKey && m.at <= t) rec = m;
    return rec && rec.active ? rec.hostnames : [];
  }

  /** The seat of the certificate a host presented at t, or null (unknown host, no certificate yet). */
  hostSeatAt(hostname: string, t: number): string | null {
    const id = this.hostIds.get(hostname);
    if (id === undefined) return null;
    const certId = this.hostCertAt.get(id, t) as number | undefined;
    if (certId === undefined) return null;
    let s = this.subjectSeat.get(certId);
    if (s === undefined) {
      s = seatIdFromSubject(this.certSubject.get(certId) as string);
      this.subjectSeat.set(certId, s);
    }
    return s;
  }

  /** Is the host in the footprint of the seat's provider at t? (see docs: footprint) */
  inFootprint(seat: string, hostname: string, t: number): { inside: boolean; key: string } {
    const key = this.keyAt(seat, t);
    const hostSeat = this.hostSeatAt(hostname, t);
    if (hostSeat !== null && this.keyAt(hostSeat, t) === key) return { inside: true, key };
    const c = this.curatedAt(seat, t);
    if (c && c.member_key !== null && this.memberHostsAt(c.member_key, t).includes(hostname)) return { inside: true, key };
    return { inside: false, key };
  }
}

interface EventRow {
  id: string;
  type: string;
  observed_at: number;
  hostname: string | null;
  pid: string | null;
  payload: string;
}

interface HostCertPayload {
  before: { fingerprint: string; subject: string; not_after: string } | null;
  after: { fingerprint: string; subject: string; not_after: string } | null;
  seat_before: string | null;
  seat_after: string | null;
}

function detectRotation(e: EventRow): Found | null {
  const p = JSON.parse(e.payload) as HostCertPayload;
  if (!p.before || !p.after || e.hostname === null) return null;
  const host = e.hostname.toLowerCase();
  const orgBefore = organisationFromSubject(p.before.subject);
  const orgAfter = organisationFromSubject(p.after.subject);
  const seats = [...new Set([p.seat_before, p.seat_after].filter((s): s is string => s !== null))].sort();
  const ref = [{ id: e.id, observed_at: e.observed_at }];
  if (p.seat_before !== p.seat_after || orgBefore !== orgAfter) {
    return {
      detector: 'cert_identity_shift',
      target: { detector: 'cert_identity_shift', hostname: host },
      evidence: { seat_before: p.seat_before, seat_after: p.seat_after, org_before: orgBefore, org_after: orgAfter, fingerprint_before: p.before.fingerprint, fingerprint_after: p.after.fingerprint },
      observedAt: e.observed_at,
      events: ref,
      hosts: [host],
      seats,
    };
  }
  const remaining = Date.parse(p.before.not_after) - e.observed_at;
  if (remaining > OFF_CADENCE_REMAINING_MS) {
    return {
      detector: 'off_cadence_rotation',
      target: { detector: 'off_cadence_rotation', hostname: host },
      evidence: {
        seat: p.seat_after,
        fingerprint_before: p.before.fingerprint,
        fingerprint_after: p.after.fingerprint,
        not_after_before: p.before.not_after,
        remaining_days: Math.round((remaining / DAY) * 10) / 10,
        threshold_days: OFF_CADENCE_REMAINING_MS / DAY,
      },
      observedAt: e.observed_at,
      events: ref,
      hosts: [host],
      seats,
    };
  }
  return null;
}

function hostOfUrl(url: string | null | undefined): string | null {
  if (typeof url !== 'string') return null;
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

function detectOffFootprint(e: EventRow, asOf: AsOf): Found[] {
  const p = JSON.parse(e.payload) as { seat: string | null; changes: Array<{ before: string | null; after: string | null }> };
  if (e.pid === null || !p.seat) return [];
  const out: Found[] = [];
  const seen = new Set<string>();
  for (const c of p.changes ?? []) {
    const after = hostOfUrl(c.after);
    const before = hostOfUrl(c.before);
    // Only a move onto another host counts; a path change on the same host is no move.
    if (after === null || after === before || seen.has(after)) continue;
    seen.add(after);
    const f = asOf.inFootprint(p.seat, after, e.observed_at);
    if (f.inside) continue;
    out.push({
      detector: 'endpoint_off_footprint',
      target: { detector: 'endpoint_off_footprint', participant: e.pid, hostname: after },
      evidence: { seat: p.seat, provider_key: f.key, url_before: c.before, url_after: c.after, host_seat: asOf.hostSeatAt(after, e.observed_at) },
      observedAt: e.observed_at,
      events: [{ id: e.id, observed_at: e.observed_at }],
      hosts: [after, ...(before !== null ? [before] : [])],
      seats: [p.seat],
    });
  }
  return out;
}

function detectUnverifiedMove(e: EventRow, asOf: AsOf): Found | null {
  const p = JSON.parse(e.payload) as { before: { seat: string | null }; after: { seat: string | null } };
  const before = p.before?.seat ?? null;
  const after = p.after?.seat ?? null;
  if (e.pid === null || before === null || after === null || before === after) return null;
  if (asOf.curatedAt(after, e.observed_at) !== null) return null;
  const keyBefore = asOf.keyAt(before, e.observed_at);
  const keyAfter = asOf.keyAt(after, e.observed_at);
  // Moving between seats of one (unverified) identity is not a move to a new unverified provider.
  if (keyBefore === keyAfter) return null;
  return {
    detector: 'moved_to_unverified_seat',
    target: { detector: 'moved_to_unverified_seat', participant: e.pid, seat: after },
    evidence: { seat_before: before, seat_after: after, provider_before: keyBefore, provider_after: keyAfter },
    observedAt: e.observed_at,
    events: [{ id: e.id, observed_at: e.observed_at }],
    hosts: [],
    seats: [before, after].sort(),
  };
}

/** Bursts: clusters of one (type, before, after) pair with gaps < BURST_GAP_MS holding >= BURST_MIN_EVENTS within BURST_WINDOW_MS. */
function detectBursts(db: Db): Found[] {
  const out: Found[] = [];
  for (const type of BURST_TYPES) {
    const open = new Map<string, { from: string; to: string; events: Array<{ id: string; observed_at: number }> }>();
    const close = (c: { from: string; to: string; events: Array<{ id: string; observed_at: number }> }): void => {
      let peak = 0;
      for (let i = 0, j = 0; i < c.events.length; i++) {
        while (c.events[i]!.observed_at - c.events[j]!.observed_at >= BURST_WINDOW_MS) j++;
        peak = Math.max(peak, i - j + 1);
      }
      if (peak < BURST_MIN_EVENTS) return;
      const first = c.events[0]!.observed_at;
      const last = c.events[c.events.length - 1]!.observed_at;
      out.push({
        detector: 'mass_change_burst',
        target: { detector: 'mass_change_burst', event_type: type, from: c.from, to: c.to },
        evidence: { event_count: c.events.length, peak_60min: peak, first_at: isoTime(first), last_at: isoTime(last), threshold: BURST_MIN_EVENTS, window_minutes: BURST_WINDOW_MS / 60_000 },
        observedAt: first,
        events: c.events,
        hosts: type === 'participant_smp_changed' ? [c.from, c.to] : [],
        seats: type === 'ap_seat_changed' ? [c.from, c.to] : [],
      });
    };
    const rows = db.prepare('SELECT id, observed_at, payload FROM events WHERE type = ? ORDER BY observed_at, id').iterate(type) as Iterable<{ id: string; observed_at: number; payload: string }>;
    let seen = 0;
    for (const r of rows) {
      // Now and then, close the clusters that can no longer grow (bounded memory over long histories).
      if (++seen % 10_000 === 0) {
        for (const [k, c] of open) {
          if (r.observed_at - c.events[c.events.length - 1]!.observed_at >= BURST_GAP_MS) {
            close(c);
            open.delete(k);
          }
        }
      }
      const p = JSON.parse(r.payload) as { before?: { smp?: string | null; seat?: string | null }; after?: { smp?: string | null; seat?: string | null } };
      const from = type === 'participant_smp_changed' ? p.before?.smp : p.before?.seat;
      const to = type === 'participant_smp_changed' ? p.after?.smp : p.after?.seat;
      if (typeof from !== 'string' || typeof to !== 'string' || from === to) continue;
      const k = `${from}\n${to}`;
      const c = open.get(k);
      if (c && r.observed_at - c.events[c.events.length - 1]!.observed_at < BURST_GAP_MS) c.events.push({ id: r.id, observed_at: r.observed_at });
      else {
        if (c) close(c);
        open.set(k, { from, to, events: [{ id: r.id, observed_at: r.observed_at }] });
      }
    }
    for (const c of open.values()) close(c);
  }
  return out;
}

class AnomalyWriter {
  private readonly ins;
  private readonly insEvent;
  private readonly insHost;
  private readonly insSeat;
  private readonly del;
  private readonly delEvents;
  private readonly delHosts;
  private readonly delSeats;
  private readonly row;
  private readonly events;
  private readonly hosts;
  private readonly seats;
  written = 0;
  constructor(db: Db) {
    this.ins = db.prepare('INSERT OR REPLACE INTO anomalies (id, detector, grade, target, evidence, observed_at, acknowledged, reason) VALUES (?, ?, ?, ?, ?, ?, 0, NULL)');
    this.insEvent = db.prepare('INSERT OR IGNORE INTO anomaly_events (anomaly_id, event_id, observed_at) VALUES (?, ?, ?)');
    this.insHost = db.prepare('INSERT OR IGNORE INTO anomaly_hosts (hostname, anomaly_id) VALUES (?, ?)');
    this.insSeat = db.prepare('INSERT OR IGNORE INTO anomaly_seats (seat_id, anomaly_id) VALUES (?, ?)');
    this.del = db.prepare('DELETE FROM anomalies WHERE id = ?');
    this.delEvents = db.prepare('DELETE FROM anomaly_events WHERE anomaly_id = ?');
    this.delHosts = db.prepare('DELETE FROM anomaly_hosts WHERE anomaly_id = ?');
    this.delSeats = db.prepare('DELETE FROM anomaly_seats WHERE anomaly_id = ?');
    this.row = db.prepare('SELECT detector, grade, target, evidence, observed_at FROM anomalies WHERE id = ?');
    this.events = db.prepare('SELECT event_id, observed_at FROM anomaly_events WHERE anomaly_id = ?');
    this.hosts = db.prepare('SELECT hostname FROM anomaly_hosts WHERE anomaly_id = ?').pluck();
    this.seats = db.prepare('SELECT seat_id FROM anomaly_seats WHERE anomaly_id = ?').pluck();
  }
  delete(id: string): void {
    this.del.run(id);
    this.delEvents.run(id);
    this.delHosts.run(id);
    this.delSeats.run(id);
  }
  /**
   * Writes a found anomaly; returns its id. One stored already as found (same fields and links) is
   * left as it is: a rewrite would record its events as changed (src/derive/changes.ts) in every run
   * that recomputes it, e.g. every burst in every run.
   */
  write(f: Found): string {
    const id = anomalyId(f.detector, anomalyTargetKey(f.target), new Date(f.observedAt).toISOString());
    const { detector: _d, ...target } = f.target;
    const targetJson = JSON.stringify(target);
    const evidenceJson = JSON.stringify(f.evidence);
    this.written++;
    if (this.stored(id, f, targetJson, evidenceJson)) return id;
    this.delete(id); // the same id found again (e.g. a burst that grew) replaces its links
    this.ins.run(id, f.detector, GRADES[f.detector], targetJson, evidenceJson, f.observedAt);
    for (const e of f.events) this.insEvent.run(id, e.id, e.observed_at);
    for (const h of new Set(f.hosts)) this.insHost.run(h, id);
    for (const s of new Set(f.seats)) this.insSeat.run(s, id);
    return id;
  }
  /** Whether the anomaly `id` is stored exactly as write would store `f`. */
  private stored(id: string, f: Found, targetJson: string, evidenceJson: string): boolean {
    const r = this.row.get(id) as { detector: string; grade: string; target: string; evidence: string; observed_at: number } | undefined;
    if (r === undefined || r.detector !== f.detector || r.grade !== GRADES[f.detector] || r.target !== targetJson || r.evidence !== evidenceJson || r.observed_at !== f.observedAt) return false;
    // The links as INSERT OR IGNORE leaves them: the first observed_at of each event id.
    const events = new Map<string, number>();
    for (const e of f.events) if (!events.has(e.id)) events.set(e.id, e.observed_at);
    const had = this.events.all(id) as Array<{ event_id: string; observed_at: number }>;
    if (had.length !== events.size || had.some((e) => events.get(e.event_id) !== e.observed_at)) return false;
    const sameSet = (have: unknown[], want: readonly string[]): boolean => {
      const w = new Set(want);
      return have.length === w.size && have.every((v) => w.has(v as string));
    };
    return sameSet(this.hosts.all(id), f.hosts) && sameSet(this.seats.all(id), f.seats);
  }
}

/**
 * Events of one type observed at or after `from`, oldest first, read in keyset batches (no statement
 * stays open while the detectors write, and memory holds one batch).
 */
function* eventsFrom(db: Db, type: string, from: number): Generator<EventRow> {
  const batch = db.prepare(
    `SELECT e.id, e.type, e.observed_at, e.hostname, p.pid, e.payload FROM events e LEFT JOIN participants p ON p.id = e.participant_id
     WHERE e.type = ? AND (e.observed_at > ? OR (e.observed_at = ? AND e.id > ?)) ORDER BY e.observed_at, e.id LIMIT 2000`,
  );
  let pos: [number, string] = [from, ''];
  for (;;) {
    const rows = batch.all(type, pos[0], pos[0], pos[1]) as EventRow[];
    if (rows.length === 0) return;
    for (const r of rows) yield r;
    const last = rows[rows.length - 1]!;
    pos = [last.observed_at, last.id];
  }
}

/** The O= string of every seat as the providers step resolved it (seat_orgs: signing certificates first). */
function currentSeatOrgs(db: Db): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const rows = db.prepare("SELECT seat_id, org FROM seat_orgs ORDER BY seat_id, source = 'smp' DESC, ref DESC").all() as Array<{ seat_id: string; org: string }>;
  for (const r of rows) if (!out.has(r.seat_id)) out.set(r.seat_id, r.org === '' ? null : r.org);
  return out;
}

export function runAnomalies(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  const orgs = currentSeatOrgs(db);
  const before = new Map((db.prepare('SELECT seat_id, org FROM anomaly_seat_orgs').all() as Array<{ seat_id: string; org: string | null }>).map((r) => [r.seat_id, r.org]));
  let orgsChanged = before.size !== orgs.size;
  if (!orgsChanged) for (const [s, o] of orgs) if (!before.has(s) || before.get(s) !== o) orgsChanged = true;
  if (orgsChanged) {
    db.exec('DELETE FROM anomaly_seat_orgs');
    const ins = db.prepare('INSERT INTO anomaly_seat_orgs (seat_id, org) VALUES (?, ?)');
    for (const [s, o] of orgs) ins.run(s, o);
  }

  // From which instant the per-event detectors are recomputed.
  let from: number | null;
  if (ctx.full || orgsChanged) from = -Number.MAX_SAFE_INTEGER;
  else from = segmentsTimeFloor(db, ctx.since, ctx.upTo);

  const w = new AnomalyWriter(db);
  let removed = 0;
  // The anomalies recomputed and not found again are removed after the detectors ran (write leaves
  // one found unchanged as it is).
  if (from !== null) {
    const stale = new Set(db.prepare("SELECT id FROM anomalies WHERE observed_at >= ? AND detector <> 'mass_change_burst'").pluck().all(from) as string[]);
    const asOf = new AsOf(db, orgs);
    for (const e of eventsFrom(db, 'host_cert_rotated', from)) {
      const f = detectRotation(e);
      if (f) stale.delete(w.write(f));
    }
    for (const e of eventsFrom(db, 'endpoint_changed', from)) for (const f of detectOffFootprint(e, asOf)) stale.delete(w.write(f));
    for (const e of eventsFrom(db, 'ap_seat_changed', from)) {
      const f = detectUnverifiedMove(e, asOf);
      if (f) stale.delete(w.write(f));
    }
    for (const id of stale) w.delete(id);
    removed += stale.size;
  }
  if (ctx.full || from !== null) {
    // Bursts span many events: recomputed whole (cost: one pass over the two event types).
    const stale = new Set(db.prepare("SELECT id FROM anomalies WHERE detector = 'mass_change_burst'").pluck().all() as string[]);
    for (const f of detectBursts(db)) stale.delete(w.write(f));
    for (const id of stale) w.delete(id);
    removed += stale.size;
  }

  // Acknowledgements: the latest ack record of each id (at, then ingest order) wins; recomputed for all.
  const acks = db.prepare(
    `UPDATE anomalies SET
       acknowledged = coalesce((SELECT k.acknowledged FROM ack_obs k WHERE k.anomaly_id = anomalies.id ORDER BY k.at DESC, k.id DESC LIMIT 1), 0),
       reason = (SELECT k.reason FROM ack_obs k WHERE k.anomaly_id = anomalies.id ORDER BY k.at DESC, k.id DESC LIMIT 1)`,
  ).run().changes;
  return { written: w.written, removed, acks_applied: acks };
}

export const anomaliesStep: DeriveStep = {
  name: 'anomalies',
  tables: ANOMALIES_TABLES,
  ddl: ANOMALIES_DDL,
  run: runAnomalies,
};

// ---------------------------------------------------------------------------------------------------
// Readers.

export interface AnomalyView {
  id: string;
  detector: Detector;
  grade: Grade;
  target: Record<string, unknown>;
  event_refs: string[];
  evidence: Record<string, unknown>;
  observed_at: string;
  acknowledged: boolean;
  reason: string | null;
}
export interface AnomalyRef {
  id: string;
  detector: Detector;
  grade: Grade;
}

interface AnomalyRow {
  id: string;
  detector: Detector;
  grade: Grade;
  target: string;
  evidence: string;
  observed_at: number;
  acknowledged: number;
  reason: string | null;
}

function toView(db: Db, r: AnomalyRow): AnomalyView {
  const refs = db.prepare('SELECT event_id FROM anomaly_events WHERE anomaly_id = ? ORDER BY observed_at, event_id').pluck().all(r.id) as string[];
  return {
    id: r.id,
    detector: r.detector,
    grade: r.grade,
    target: JSON.parse(r.target) as Record<string, unknown>,
    event_refs: refs,
    evidence: JSON.parse(r.evidence) as Record<string, unknown>,
    observed_at: isoTime(r.observed_at),
    acknowledged: r.acknowledged === 1,
    reason: r.reason,
  };
}

const COLS = 'a.id, a.detector, a.grade, a.target, a.evidence, a.observed_at, a.acknowledged, a.reason';

/** AnomalyView of one id, or null when unknown. */
export function anomalyView(db: Db, id: string): AnomalyView | null {
  const r = db.prepare(`SELECT ${COLS} FROM anomalies a WHERE a.id = ?`).get(id) as AnomalyRow | undefined;
  return r ? toView(db, r) : null;
}

export interface AnomalyFilters {
  detector?: Detector;
  grade?: Grade;
  /** Anomalies concerning this hostname (target host, hosts of the events, SMP hosts of a burst). */
  host?: string;
  /** Anomalies concerning this seat id. */
  seat?: string;
  acknowledged?: boolean;
  /** observed_at at or after (ms). */
  sinceMs?: number;
}

/** Sort key of the anomaly list: [observed_at ms, id], newest first (observed_at DESC, id DESC). */
export type AnomalySortKey = [number, string];

/**
 * The anomaly list newest-first (observed_at DESC, id DESC) under the filters, each item with its sort
 * key, as an iterator (the API pages it by keyset; `after` resumes strictly after a sort key).
 */
export function* anomalyList(db: Db, filters: AnomalyFilters = {}, after?: AnomalySortKey): Generator<{ item: AnomalyView; key: AnomalySortKey }> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filters.detector !== undefined) {
    where.push('a.detector = ?');
    params.push(filters.detector);
  }
  if (filters.grade !== undefined) {
    where.push('a.grade = ?');
    params.push(filters.grade);
  }
  if (filters.acknowledged !== undefined) {
    where.push('a.acknowledged = ?');
    params.push(filters.acknowledged ? 1 : 0);
  }
  if (filters.sinceMs !== undefined) {
    where.push('a.observed_at >= ?');
    params.push(filters.sinceMs);
  }
  if (filters.host !== undefined) {
    where.push('a.id IN (SELECT anomaly_id FROM anomaly_hosts WHERE hostname = ?)');
    params.push(filters.host.toLowerCase());
  }
  if (filters.seat !== undefined) {
    where.push('a.id IN (SELECT anomaly_id FROM anomaly_seats WHERE seat_id = ?)');
    params.push(filters.seat.toUpperCase());
  }
  // Read in keyset batches: no statement stays open while the caller consumes items.
  const keyset = '(a.observed_at < ? OR (a.observed_at = ? AND a.id < ?))';
  const base = `SELECT ${COLS} FROM anomalies a WHERE ${[...where, keyset].join(' AND ')} ORDER BY a.observed_at DESC, a.id DESC LIMIT 200`;
  const stmt = db.prepare(base);
  let pos: AnomalySortKey = after ?? [Number.MAX_SAFE_INTEGER, ''];
  for (;;) {
    const rows = stmt.all(...params, pos[0], pos[0], pos[1]) as AnomalyRow[];
    if (rows.length === 0) return;
    for (const r of rows) {
      pos = [r.observed_at, r.id];
      yield { item: toView(db, r), key: pos };
    }
  }
}

/** Anomalies observed in (fromMs, toMs]: `anomalies_24h` is anomalyCount(db, now − 24 h, now). */
export function anomalyCount(db: Db, fromMs: number, toMs: number): number {
  return db.prepare('SELECT count(*) FROM anomalies WHERE observed_at > ? AND observed_at <= ?').pluck().get(fromMs, toMs) as number;
}

/** The anomalies an event triggered (GlobalEvent.anomalies), by id. */
export function eventAnomalies(db: Db, eventId: string): AnomalyRef[] {
  // Prepared once per connection: a full render of the event lists asks this of every event several times.
  return statement(db, 'SELECT a.id, a.detector, a.grade FROM anomaly_events l JOIN anomalies a ON a.id = l.anomaly_id WHERE l.event_id = ? ORDER BY a.id').all(eventId) as AnomalyRef[];
}
