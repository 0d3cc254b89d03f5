// The `churn` step and its readers: joiners, movers and leavers per AP identity and UTC day
// (docs/methodology/churn.md).
//
// Stored per event (churn_facts) with SEATS, never with identity keys: a seat is resolved to its
// current identity through seat_identities when read. So a curation change (a bare seat becoming
// curated) re-resolves the whole history without touching this step's tables, and incremental runs only
// recompute the participants whose events or SMP records changed.
//
// Inputs: the participant events of the participants step (payload contract in events.ts):
//   participant_registered   { ..., joiner: boolean }           -> joiner (when joiner is true)
//   ap_seat_changed          { before: { seat }, after: { seat } } -> mover (serving seats differ)
//   participant_deregistered                                     -> leaver (the seat served just before)
// and smp_obs/endpoint_sets for the serving seat of a joiner's first SMP record and of a leaver's last.
import type { Db } from '../db/index.js';
import { DAY } from './hosts/time.js';
import { resolveApKey, seatsOfKey } from './providers/keys.js';
import { segmentsTimeFloor, servingSeat, type EndpointLike } from './providers/serving.js';
import type { DeriveContext, DeriveStep, StepStats } from './step.js';
import { churnTotals, compareCounterparts, zeroSeries } from '../api/providers/views.js';

/** Joiners count from this UTC instant on (spec: "Joiners count from 2026-08-01 onward"). */
export const JOINERS_FROM = Date.UTC(2026, 7, 1);

export const CHURN_CATEGORIES = ['joiner', 'mover_in', 'mover_out', 'leaver'] as const;
export type ChurnCategory = (typeof CHURN_CATEGORIES)[number];

/** Most rows `/v1/aps/{key}/churn/participants` lists. */
export const CHURN_PARTICIPANTS_MAX = 500;

export const CHURN_DDL = `
  CREATE TABLE churn_facts (
    event_id       TEXT PRIMARY KEY,   -- the event the row rests on
    participant_id INTEGER NOT NULL,
    observed_at    INTEGER NOT NULL,
    day            TEXT NOT NULL,      -- UTC day of observed_at
    kind           TEXT NOT NULL,      -- joiner | mover | leaver
    from_seat      TEXT,               -- mover: serving seat before; leaver: seat served at deregistration
    to_seat        TEXT,               -- mover: serving seat after; joiner: first-ever serving seat
    seat_at        INTEGER             -- joiner: at of the SMP record that showed the first serving seat
  ) WITHOUT ROWID;
  CREATE INDEX churn_facts_to ON churn_facts (to_seat, day) WHERE to_seat IS NOT NULL;
  CREATE INDEX churn_facts_from ON churn_facts (from_seat, day) WHERE from_seat IS NOT NULL;
  CREATE INDEX churn_facts_participant ON churn_facts (participant_id);
  CREATE INDEX churn_facts_time ON churn_facts (observed_at);
  CREATE INDEX churn_facts_day ON churn_facts (day);
  CREATE INDEX churn_facts_seat_at ON churn_facts (seat_at) WHERE seat_at IS NOT NULL;
  -- Joiners whose SMP records show no serving seat yet: re-examined on every run.
  CREATE TABLE churn_pending (
    participant_id INTEGER PRIMARY KEY,
    event_id       TEXT NOT NULL,
    observed_at    INTEGER NOT NULL
  );
  -- Daily aggregates per seat, category and counterpart seat ('' for joiners and leavers): what the
  -- series and totals sum after resolving both seats to identities.
  CREATE TABLE churn_daily (
    seat_id          TEXT NOT NULL,
    day              TEXT NOT NULL,
    category         TEXT NOT NULL,
    counterpart_seat TEXT NOT NULL,
    n                INTEGER NOT NULL,
    PRIMARY KEY (seat_id, day, category, counterpart_seat)
  ) WITHOUT ROWID;
  CREATE INDEX churn_daily_day ON churn_daily (day);
`;
export const CHURN_TABLES = ['churn_daily', 'churn_pending', 'churn_facts'] as const;

const CHURN_EVENT_TYPES = ['participant_registered', 'ap_seat_changed', 'participant_deregistered'] as const;

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

interface Fact {
  event_id: string;
  observed_at: number;
  kind: 'joiner' | 'mover' | 'leaver';
  from_seat: string | null;
  to_seat: string | null;
  seat_at: number | null;
}

/** Recomputes one participant's churn rows from its events and SMP records; returns the days touched. */
class ParticipantChurn {
  private readonly events;
  private readonly smpAsc;
  private readonly smpBefore;
  private readonly endpointSet;
  private readonly delFacts;
  private readonly factDays;
  private readonly delPending;
  private readonly insFact;
  private readonly insPending;
  private readonly seatCache = new Map<number, string | null>();
  facts = 0;
  pending = 0;

  constructor(db: Db) {
    this.events = db.prepare(
      `SELECT id, type, observed_at, payload FROM events
       WHERE participant_id = ? AND type IN ('participant_registered', 'ap_seat_changed', 'participant_deregistered')
       ORDER BY observed_at, id`,
    );
    this.smpAsc = db.prepare('SELECT at, endpoint_set_id FROM smp_obs WHERE participant_id = ? ORDER BY at');
    this.smpBefore = db.prepare('SELECT endpoint_set_id FROM smp_obs WHERE participant_id = ? AND at < ? ORDER BY at DESC LIMIT 1').pluck();
    this.endpointSet = db.prepare('SELECT endpoints FROM endpoint_sets WHERE id = ?').pluck();
    this.delFacts = db.prepare('DELETE FROM churn_facts WHERE participant_id = ?');
    this.factDays = db.prepare('SELECT DISTINCT day FROM churn_facts WHERE participant_id = ?').pluck();
    this.delPending = db.prepare('DELETE FROM churn_pending WHERE participant_id = ?');
    this.insFact = db.prepare(
      'INSERT INTO churn_facts (event_id, participant_id, observed_at, day, kind, from_seat, to_seat, seat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.insPending = db.prepare('INSERT INTO churn_pending (participant_id, event_id, observed_at) VALUES (?, ?, ?)');
  }

  private seatOfSet(id: number): string | null {
    let s = this.seatCache.get(id);
    if (s === undefined) {
      s = servingSeat(JSON.parse(this.endpointSet.get(id) as string) as EndpointLike[]);
      this.seatCache.set(id, s);
    }
    return s;
  }

  /** The first-ever serving seat of a participant and when it was observed. */
  private firstSeat(pid: number): { seat: string; at: number } | null {
    for (const r of this.smpAsc.all(pid) as Array<{ at: number; endpoint_set_id: number }>) {
      const seat = this.seatOfSet(r.endpoint_set_id);
      if (seat !== null) return { seat, at: r.at };
    }
    return null;
  }

  recompute(pid: number, days: Set<string>): void {
    for (const d of this.factDays.all(pid) as string[]) days.add(d);
    this.delFacts.run(pid);
    this.delPending.run(pid);
    const facts: Fact[] = [];
    for (const e of this.events.all(pid) as Array<{ id: string; type: string; observed_at: number; payload: string }>) {
      const p = JSON.parse(e.payload) as Record<string, unknown>;
      if (e.type === 'participant_registered') {
        if (p.joiner !== true || e.observed_at < JOINERS_FROM) continue;
        const first = this.firstSeat(pid);
        if (first === null) {
          this.insPending.run(pid, e.id, e.observed_at);
          this.pending++;
        } else facts.push({ event_id: e.id, observed_at: e.observed_at, kind: 'joiner', from_seat: null, to_seat: first.seat, seat_at: first.at });
      } else if (e.type === 'ap_seat_changed') {
        const before = (p.before as { seat?: string | null } | undefined)?.seat ?? null;
        const after = (p.after as { seat?: string | null } | undefined)?.seat ?? null;
        // A mover has a serving seat on both sides; whether the two seats belong to different
        // identities is decided when read (resolution to the current identity).
        if (before !== null && after !== null && before !== after) facts.push({ event_id: e.id, observed_at: e.observed_at, kind: 'mover', from_seat: before, to_seat: after, seat_at: null });
      } else {
        const setId = this.smpBefore.get(pid, e.observed_at) as number | undefined;
        const seat = setId === undefined ? null : this.seatOfSet(setId);
        if (seat !== null) facts.push({ event_id: e.id, observed_at: e.observed_at, kind: 'leaver', from_seat: seat, to_seat: null, seat_at: null });
      }
    }
    for (const f of facts) {
      const day = dayOf(f.observed_at);
      days.add(day);
      this.insFact.run(f.event_id, pid, f.observed_at, day, f.kind, f.from_seat, f.to_seat, f.seat_at);
    }
    this.facts += facts.length;
  }
}

/** Rebuilds the daily aggregates of the given days from churn_facts. */
function rebuildDaily(db: Db, days: Iterable<string>): number {
  const del = db.prepare('DELETE FROM churn_daily WHERE day = ?');
  const ins = db.prepare(
    `INSERT INTO churn_daily (seat_id, day, category, counterpart_seat, n)
     SELECT to_seat, day, 'joiner', '', count(*) FROM churn_facts WHERE day = @day AND kind = 'joiner' GROUP BY to_seat
     UNION ALL
     SELECT to_seat, day, 'mover_in', from_seat, count(*) FROM churn_facts WHERE day = @day AND kind = 'mover' GROUP BY to_seat, from_seat
     UNION ALL
     SELECT from_seat, day, 'mover_out', to_seat, count(*) FROM churn_facts WHERE day = @day AND kind = 'mover' GROUP BY from_seat, to_seat
     UNION ALL
     SELECT from_seat, day, 'leaver', '', count(*) FROM churn_facts WHERE day = @day AND kind = 'leaver' GROUP BY from_seat`,
  );
  let n = 0;
  for (const d of days) {
    del.run(d);
    ins.run({ day: d });
    n++;
  }
  return n;
}

export function runChurn(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  const pc = new ParticipantChurn(db);
  const days = new Set<string>();
  let participants = 0;
  const types = CHURN_EVENT_TYPES.map((t) => `'${t}'`).join(', ');
  if (ctx.full) {
    db.exec('DELETE FROM churn_facts; DELETE FROM churn_pending; DELETE FROM churn_daily;');
    const ids = db.prepare(`SELECT DISTINCT participant_id FROM events WHERE type IN (${types}) AND participant_id IS NOT NULL ORDER BY participant_id`).pluck();
    // Collected first: recompute() writes to tables the cursor does not read, but keeping the read
    // cursor open across writes is avoided anyway. Ids only (8 bytes each), not participant data.
    const all = ids.all() as number[];
    for (const pid of all) {
      pc.recompute(pid, days);
      participants++;
    }
    rebuildDaily(db, [...days].sort());
    return { participants, facts: pc.facts, pending: pc.pending, days: days.size };
  }
  const tmin = segmentsTimeFloor(db, ctx.since, ctx.upTo);
  if (tmin === null) return { participants: 0, facts: 0, pending: 0, days: 0 };
  // Every event, fact and pending joiner a new observation can change lies at or after the earliest
  // instant of the new segments (an event is emitted at the observation that shows the change).
  const affected = db
    .prepare(
      `SELECT participant_id FROM events WHERE type IN (${types}) AND observed_at >= @tmin AND participant_id IS NOT NULL
       UNION SELECT participant_id FROM churn_facts WHERE observed_at >= @tmin
       UNION SELECT participant_id FROM churn_facts WHERE seat_at >= @tmin
       UNION SELECT participant_id FROM churn_pending
       ORDER BY 1`,
    )
    .pluck()
    .all({ tmin }) as number[];
  for (const pid of affected) {
    pc.recompute(pid, days);
    participants++;
  }
  rebuildDaily(db, [...days].sort());
  return { participants, facts: pc.facts, pending: pc.pending, days: days.size };
}

export const churnStep: DeriveStep = {
  name: 'churn',
  tables: CHURN_TABLES,
  ddl: CHURN_DDL,
  run: runChurn,
};

// ---------------------------------------------------------------------------------------------------
// Readers. Every seat is resolved to its current identity (seat_identities); a seat without a row there
// (not expected: every seat on a certificate has one) resolves to its bare key `s-<SEATID>`.

export interface ChurnSeriesPoint {
  day: string;
  joiners: number;
  movers_in: number;
  movers_out: number;
  leavers: number;
  net_growth: number;
}
export interface ChurnTotals {
  joiners: number;
  movers_in: number;
  movers_out: number;
  leavers: number;
  net_growth: number;
}
export interface ChurnCounterpartTotal {
  key: string;
  name: string;
  won: number;
  lost: number;
}
export interface ApChurnView {
  key: string;
  name: string;
  from: string;
  to: string;
  totals: ChurnTotals;
  series: ChurnSeriesPoint[];
  counterparts: ChurnCounterpartTotal[];
}
export interface ChurnParticipant {
  id: string;
  scheme: string;
  value: string;
  day: string;
  counterpart_key: string | null;
  counterpart_name: string | null;
}

/** The default churn period: the 30 UTC days ending with the day of `nowMs` (spec: `to` = today, `from` = to − 29). */
export function defaultChurnPeriod(nowMs: number): { from: string; to: string } {
  return { from: dayOf(nowMs - 29 * DAY), to: dayOf(nowMs) };
}

// Aggregate rows of one identity's seats, the counterpart resolved; movers whose counterpart resolves to
// the same identity (a seat change inside one provider) are dropped.
const AGG_SQL = `
  SELECT d.day, d.category, d.n, CASE WHEN d.counterpart_seat = '' THEN NULL ELSE coalesce(c.key, 's-' || d.counterpart_seat) END AS ckey
  FROM seat_identities s
  JOIN churn_daily d ON d.seat_id = s.seat_id AND d.day BETWEEN @from AND @to
  LEFT JOIN seat_identities c ON c.seat_id = d.counterpart_seat
  WHERE s.key = @key AND (d.counterpart_seat = '' OR coalesce(c.key, 's-' || d.counterpart_seat) <> @key)`;

interface AggRow {
  day: string;
  category: ChurnCategory;
  n: number;
  ckey: string | null;
}

function identityName(db: Db, key: string): string {
  const n = db.prepare('SELECT name FROM ap_identities WHERE key = ?').pluck().get(key) as string | undefined;
  return n ?? (key.startsWith('s-') ? key.slice(2) : key);
}

/** True when the identity has at least one churn row on any day. */
function hasChurn(db: Db, key: string): boolean {
  return db.prepare(`SELECT 1 FROM (${AGG_SQL}) LIMIT 1`).get({ key, from: '0000-00-00', to: '9999-99-99' }) !== undefined;
}

/**
 * ApChurnView for an AP key (stale keys resolve) over [fromDay, toDay] (inclusive UTC days). The series
 * holds every day of the range, zero days included, oldest first. Null when the key names no AP
 * identity or the identity has no churn at all (the spec's 404 "access point with no churn").
 */
export function apChurn(db: Db, key: string, fromDay: string, toDay: string): ApChurnView | null {
  const canonical = resolveApKey(db, key);
  if (canonical === null || !hasChurn(db, canonical)) return null;
  const series = zeroSeries(fromDay, toDay);
  const cps = new Map<string, { won: number; lost: number }>();
  for (const r of db.prepare(AGG_SQL).iterate({ key: canonical, from: fromDay, to: toDay }) as Iterable<AggRow>) {
    const p = series.get(r.day);
    if (!p) continue;
    if (r.category === 'joiner') p.joiners += r.n;
    else if (r.category === 'leaver') p.leavers += r.n;
    else {
      const c = cps.get(r.ckey!) ?? { won: 0, lost: 0 };
      if (r.category === 'mover_in') {
        p.movers_in += r.n;
        c.won += r.n;
      } else {
        p.movers_out += r.n;
        c.lost += r.n;
      }
      cps.set(r.ckey!, c);
    }
  }
  const totals = churnTotals(series.values());
  const counterparts = [...cps].map(([k, c]) => ({ key: k, name: identityName(db, k), won: c.won, lost: c.lost })).sort(compareCounterparts);
  return { key: canonical, name: identityName(db, canonical), from: fromDay, to: toDay, totals, series: [...series.values()], counterparts };
}

/**
 * The participants behind one category count of an AP identity over [fromDay, toDay]: newest day first,
 * then participant id ascending (then the event id), at most CHURN_PARTICIPANTS_MAX rows. Null when the
 * key names no AP identity. A participant appears once per churn event (e.g. twice when it moved in twice).
 */
export function churnParticipants(db: Db, key: string, category: ChurnCategory, fromDay: string, toDay: string): ChurnParticipant[] | null {
  const canonical = resolveApKey(db, key);
  if (canonical === null) return null;
  const seats = seatsOfKey(db, canonical);
  if (seats.length === 0) return [];
  const own = category === 'joiner' || category === 'mover_in' ? 'to_seat' : 'from_seat';
  const other = category === 'mover_in' ? 'from_seat' : category === 'mover_out' ? 'to_seat' : null;
  const kind = category === 'joiner' ? 'joiner' : category === 'leaver' ? 'leaver' : 'mover';
  const marks = seats.map(() => '?').join(', ');
  const cp = other === null ? 'NULL' : `coalesce(c.key, 's-' || f.${other})`;
  const rows = db
    .prepare(
      `SELECT p.pid AS id, p.scheme, p.value, f.day, ${cp} AS counterpart_key, ${other === null ? 'NULL' : `coalesce(a.name, f.${other})`} AS counterpart_name
       FROM churn_facts f
       JOIN participants p ON p.id = f.participant_id
       ${other === null ? '' : `LEFT JOIN seat_identities c ON c.seat_id = f.${other} LEFT JOIN ap_identities a ON a.key = c.key`}
       WHERE f.${own} IN (${marks}) AND f.kind = ? AND f.day BETWEEN ? AND ?
         ${other === null ? '' : `AND ${cp} <> ?`}
       ORDER BY f.day DESC, p.pid ASC, f.event_id ASC
       LIMIT ${CHURN_PARTICIPANTS_MAX}`,
    )
    .all(...seats, kind, fromDay, toDay, ...(other === null ? [] : [canonical])) as ChurnParticipant[];
  return rows.map((r) => ({ id: r.id, scheme: r.scheme, value: r.value, day: r.day, counterpart_key: r.counterpart_key, counterpart_name: r.counterpart_name }));
}

/** net_growth of every AP identity over the 30 UTC days ending with the day of `nowMs` (identities without churn: absent, i.e. 0). */
export function netGrowthAll(db: Db, nowMs: number): Map<string, number> {
  const { from, to } = defaultChurnPeriod(nowMs);
  const out = new Map<string, number>();
  const rows = db
    .prepare(
      `SELECT s.key, d.category, sum(d.n) AS n
       FROM churn_daily d
       JOIN seat_identities s ON s.seat_id = d.seat_id
       LEFT JOIN seat_identities c ON c.seat_id = d.counterpart_seat
       WHERE d.day BETWEEN ? AND ? AND (d.counterpart_seat = '' OR coalesce(c.key, 's-' || d.counterpart_seat) <> s.key)
       GROUP BY s.key, d.category`,
    )
    .all(from, to) as Array<{ key: string; category: ChurnCategory; n: number }>;
  for (const r of rows) {
    const sign = r.category === 'joiner' || r.category === 'mover_in' ? 1 : -1;
    out.set(r.key, (out.get(r.key) ?? 0) + sign * r.n);
  }
  return out;
}

/** net_growth of one AP identity (stale keys resolve) over the trailing 30 days; null for an unknown key. */
export function netGrowth(db: Db, key: string, nowMs: number): number | null {
  const canonical = resolveApKey(db, key);
  if (canonical === null) return null;
  const { from, to } = defaultChurnPeriod(nowMs);
  let n = 0;
  for (const r of db.prepare(AGG_SQL).iterate({ key: canonical, from, to }) as Iterable<AggRow>) n += r.category === 'joiner' || r.category === 'mover_in' ? r.n : -r.n;
  return n;
}
