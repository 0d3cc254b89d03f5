// The change-event table, shared by the steps that emit events (hosts: host_cert_rotated,
// hosting_changed; participants: the seven participant types). Each step deletes and re-inserts the
// events of the subjects it recomputes (deleteEvents, then EventWriter), so ids stay stable across rebuilds.
//
// - id: `ev-` + the first 16 hex digits of sha256("<type>\n<subject>\n<observed_at ISO>") where
//   subject is `host:<hostname>` or `participant:<scheme::value>`: one event per type, subject and
//   observation instant, the same in every rebuild.
// - Order of every event list: newest first, `observed_at DESC, id DESC` (the keyset of the feeds).
// - hostname: the host the event is about (host events); null for participant events.
// - event_hosts: every hostname an event relates to (the host itself; old and new SMP host of a
//   participant_smp_changed; hosts of changed endpoint URLs) — the `/v1/events?host=` filter.
// - event_seats: every seat id an event relates to (before and after seats of ap_seat_changed, seats
//   of the endpoints involved, the seat of a host certificate) — the `?seat=` filter.
// - anomaly links (event -> anomalies) live in the anomalies step's own table.
//
// Payload contract (other steps — churn, anomalies — read these; keys always present):
//   host_cert_rotated        { before: HostCert, after: HostCert, seat_before, seat_after }   (HostCert as in the
//                            spec: fingerprint, subject, issuer, not_before, not_after ISO; seats may be null)
//   hosting_changed          { before: { ips, ptr }, after: { ips, ptr } }
//   participant_registered   { before: { registered: false|null, smp: string|null }, after: { registered: true, smp }, joiner: boolean }
//   participant_deregistered { before: { registered: true, smp, seats: string[], seat }, after: { registered: false, smp: null } }
//   participant_smp_changed  { before: { smp }, after: { smp } }
//   ap_seat_changed          { before: { seats: string[], seat: string|null }, after: { seats, seat } }
//                            (seats sorted; `seat` = the serving seat, see docs/methodology)
//   endpoint_changed         { seat, changes: [{ doctype, process, transport_profile, before: url, after: url }] }
//   doctype_support_changed  { before: { doctypes: string[] }, after: { doctypes }, added: string[], removed: string[] }
//   directory_card_changed   { before: { card }, after: { card } }   (card as ParticipantCard)
import { createHash } from 'node:crypto';
import type { Db } from '../db/index.js';
import { statement } from '../db/statements.js';

import { EVENT_TYPES, type EventType } from './event-types.js';

export { EVENT_TYPES, type EventType } from './event-types.js';

export const HOST_EVENT_TYPES: readonly EventType[] = ['host_cert_rotated', 'hosting_changed'];
export const PARTICIPANT_EVENT_TYPES: readonly EventType[] = EVENT_TYPES.filter((t) => !HOST_EVENT_TYPES.includes(t));

export const EVENTS_DDL = `
  CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    type           TEXT NOT NULL,
    observed_at    INTEGER NOT NULL,
    hostname       TEXT,
    participant_id INTEGER,            -- participants.id for participant events
    payload        TEXT NOT NULL       -- JSON object: { before, after, ... }
  ) WITHOUT ROWID;
  CREATE INDEX events_time ON events (observed_at DESC, id DESC);
  CREATE INDEX events_type_time ON events (type, observed_at DESC, id DESC);
  CREATE INDEX events_participant ON events (participant_id, observed_at DESC, id DESC) WHERE participant_id IS NOT NULL;
  CREATE INDEX events_host ON events (hostname, observed_at DESC, id DESC) WHERE hostname IS NOT NULL;
  CREATE TABLE event_hosts (
    hostname TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (hostname, event_id)
  ) WITHOUT ROWID;
  CREATE INDEX event_hosts_event ON event_hosts (event_id);
  CREATE TABLE event_seats (
    seat_id  TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (seat_id, event_id)
  ) WITHOUT ROWID;
  CREATE INDEX event_seats_event ON event_seats (event_id);
`;
export const EVENTS_TABLES = ['event_seats', 'event_hosts', 'events'] as const;

/** The stable id of a change event. */
export function eventId(type: EventType, subject: string, observedAtMs: number): string {
  const canonical = `${type}\n${subject}\n${new Date(observedAtMs).toISOString()}`;
  return `ev-${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`;
}

export interface NewEvent {
  type: EventType;
  observedAt: number;
  /** `host:<hostname>` or `participant:<scheme::value>`; part of the id. */
  subject: string;
  hostname: string | null;
  participantId: number | null;
  payload: Record<string, unknown>;
  hosts: readonly string[];
  seats: readonly string[];
}

/** Writes events (ids from eventId). Callers first delete the events of the subjects they recompute. */
export class EventWriter {
  private readonly ins;
  private readonly insHost;
  private readonly insSeat;
  constructor(db: Db) {
    this.ins = db.prepare('INSERT OR REPLACE INTO events (id, type, observed_at, hostname, participant_id, payload) VALUES (?, ?, ?, ?, ?, ?)');
    this.insHost = db.prepare('INSERT OR IGNORE INTO event_hosts (hostname, event_id) VALUES (?, ?)');
    this.insSeat = db.prepare('INSERT OR IGNORE INTO event_seats (seat_id, event_id) VALUES (?, ?)');
  }
  write(e: NewEvent): string {
    const id = eventId(e.type, e.subject, e.observedAt);
    this.ins.run(id, e.type, e.observedAt, e.hostname, e.participantId, JSON.stringify(e.payload));
    for (const h of new Set(e.hosts)) this.insHost.run(h, id);
    for (const s of new Set(e.seats)) this.insSeat.run(s, id);
    return id;
  }
}

/** Deletes every event (and its links) matching a WHERE clause on `events`, e.g. one host's host events. */
export function deleteEvents(db: Db, where: string, ...params: unknown[]): number {
  // Prepared once per connection: the participants step calls this for every participant it recomputes.
  const ids = statement(db, `SELECT id FROM events WHERE ${where}`).pluck().all(...params) as string[];
  deleteEventIds(db, ids);
  return ids.length;
}

/** Deletes the events with these ids, and their links. */
export function deleteEventIds(db: Db, ids: Iterable<string>): void {
  const dh = statement(db, 'DELETE FROM event_hosts WHERE event_id = ?');
  const ds = statement(db, 'DELETE FROM event_seats WHERE event_id = ?');
  const de = statement(db, 'DELETE FROM events WHERE id = ?');
  for (const id of ids) {
    dh.run(id);
    ds.run(id);
    de.run(id);
  }
}

/**
 * Whether the stored event `id` is the event `e` would write (EventWriter.write): the same row and
 * the same host and seat links. `row`: its stored columns (type, observed_at, hostname,
 * participant_id, payload).
 */
export function storedEventIs(db: Db, id: string, row: readonly unknown[], e: NewEvent): boolean {
  if (row[0] !== e.type || row[1] !== e.observedAt || row[2] !== e.hostname || row[3] !== e.participantId || row[4] !== JSON.stringify(e.payload)) return false;
  const sameSet = (stored: string[], wanted: readonly string[]): boolean => {
    const w = new Set(wanted);
    return stored.length === w.size && stored.every((x) => w.has(x));
  };
  const hosts = statement(db, 'SELECT hostname FROM event_hosts WHERE event_id = ?').pluck().all(id) as string[];
  if (!sameSet(hosts, e.hosts)) return false;
  const seats = statement(db, 'SELECT seat_id FROM event_seats WHERE event_id = ?').pluck().all(id) as string[];
  return sameSet(seats, e.seats);
}
