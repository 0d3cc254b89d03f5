// One participant's derived facts, from its whole raw history (docs/methodology/participants.md and
// docs/methodology/events.md). Pure: the same observations give the same rows, whatever the order in
// which participants are processed or how the history arrived (full or incremental derivation).
import type { EventType, NewEvent } from '../events.js';
import type { EndpointSet } from './endpoints.js';
import { endpointKey } from './endpoints.js';

/** A directory_obs row (booleans as 0/1). */
export interface DirObs {
  at: number;
  present: number;
  has_card: number;
  name: string | null;
  country: string | null;
  registration_date: string | null;
}
/** An sml_obs row with the SMP hostname resolved. */
export interface SmlObs {
  at: number;
  registered: number;
  smp: string | null;
}
/** An smp_obs row (the endpoint set id). */
export interface SmpObs {
  at: number;
  set: number;
}

export interface ParticipantKey {
  /** participants.id */
  id: number;
  /** canonical `scheme::value` */
  pid: string;
  scheme: string;
  value: string;
}

export const FACTS = ['directory_presence', 'card', 'registration', 'smp'] as const;
export type Fact = (typeof FACTS)[number];

/** A validity interval of one fact (participant_history row; the detail is in typed columns). */
export interface HistoryRow {
  fact: Fact;
  valid_from: number;
  valid_to: number | null;
  /** directory_presence: present; registration: registered (0/1); else null. */
  flag: number | null;
  /** card: the card fields; else null. */
  name: string | null;
  country: string | null;
  registration_date: string | null;
  /** smp: the SMP hostname; else null. */
  hostname: string | null;
}

/** The current state of a participant (participant_list row). */
export interface ListRow {
  participant_id: number;
  pid: string;
  scheme: string;
  value: string;
  /** Current card (only while present in the directory with a card), else nulls / has_card 0. */
  name: string | null;
  country: string | null;
  registration_date: string | null;
  has_card: number;
  /** Latest directory observation: present (0/1), null when never observed in the directory. */
  directory_present: number | null;
  directory_since: number | null;
  registered: number;
  registration_since: number | null;
  smp: string | null;
  ap_seat_id: string | null;
  /** The endpoint set of the current endpoints (latest SMP record while registered), else null. */
  endpoint_set_id: number | null;
  provenance: 'directory' | 'discovered';
  first_seen_at: number;
  last_seen_at: number;
}

export interface ParticipantDerivation {
  list: ListRow | null;
  history: HistoryRow[];
  events: NewEvent[];
}

export interface ParticipantCard {
  name: string | null;
  countryCode: string | null;
  registrationDate: string | null;
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
const sortedUnique = (xs: Iterable<string | null>): string[] => [...new Set([...xs].filter((x): x is string => x !== null))].sort(byCodePoint);

/** The card of a directory observation: only while present with a card. */
export function cardOf(o: DirObs): ParticipantCard | null {
  if (o.present !== 1 || o.has_card !== 1) return null;
  return { name: o.name, countryCode: o.country, registrationDate: o.registration_date };
}

/**
 * Validity intervals of one fact: consecutive observations with the same value merge into one row;
 * a row starts at the first observation showing the value and ends (valid_to) at the first observation
 * showing another value, or is open (null) while it is the latest. Observations whose value is null
 * (no card, no SMP) produce no row; they end the previous one.
 */
function intervals<O extends { at: number }>(out: HistoryRow[], fact: Fact, obs: readonly O[], keyOf: (o: O) => string | null, row: (o: O, fact: Fact) => HistoryRow): void {
  let curKey: string | null = null;
  let cur: HistoryRow | null = null;
  for (const o of obs) {
    const k = keyOf(o);
    if (cur !== null && k === curKey) continue;
    if (cur !== null) {
      cur.valid_to = o.at;
      out.push(cur);
      cur = null;
    }
    if (k !== null) {
      curKey = k;
      cur = row(o, fact);
    }
  }
  if (cur !== null) out.push(cur);
}

const flagRow = (at: number, fact: Fact, flag: number): HistoryRow => ({ fact, valid_from: at, valid_to: null, flag, name: null, country: null, registration_date: null, hostname: null });

/** Start of the trailing run of observations with the same value (the "since" of the current state). */
function since<O extends { at: number }>(obs: readonly O[], same: (a: O, b: O) => boolean): number | null {
  if (obs.length === 0) return null;
  let i = obs.length - 1;
  while (i > 0 && same(obs[i - 1]!, obs[i]!)) i--;
  return obs[i]!.at;
}

/** Index of the latest SMP record observed at or before `t` (strictly before when `strict`), or -1. */
function smpAt(smp: readonly SmpObs[], t: number, strict: boolean): number {
  let lo = 0;
  let hi = smp.length; // first index with at > t (or >= t when strict)
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const a = smp[mid]!.at;
    if (strict ? a < t : a <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * Derives one participant. `dir`, `sml` and `smp` are its observations in time order; `sets` resolves
 * an endpoint set id; `sweepEnd` is the end of the first full sweep (baseline.ts).
 */
export function deriveParticipant(
  p: ParticipantKey,
  dir: readonly DirObs[],
  sml: readonly SmlObs[],
  smp: readonly SmpObs[],
  sets: (id: number) => EndpointSet,
  sweepEnd: number | null,
): ParticipantDerivation {
  const history: HistoryRow[] = [];
  intervals(history, 'directory_presence', dir, (o) => (o.present === 1 ? '1' : '0'), (o, f) => flagRow(o.at, f, o.present));
  intervals(
    history,
    'card',
    dir,
    (o) => (o.present === 1 && o.has_card === 1 ? `${o.name}\u0000${o.country}\u0000${o.registration_date}\u0000${o.name === null ? 0 : 1}${o.country === null ? 0 : 1}${o.registration_date === null ? 0 : 1}` : null),
    (o, fact) => ({ fact, valid_from: o.at, valid_to: null, flag: null, name: o.name, country: o.country, registration_date: o.registration_date, hostname: null }),
  );
  intervals(history, 'registration', sml, (o) => (o.registered === 1 ? '1' : '0'), (o, f) => flagRow(o.at, f, o.registered));
  intervals(
    history,
    'smp',
    sml,
    (o) => (o.registered === 1 && o.smp !== null ? o.smp : null),
    (o, fact) => ({ fact, valid_from: o.at, valid_to: null, flag: null, name: null, country: null, registration_date: null, hostname: o.smp }),
  );
  // Newest first: valid_from DESC, then fact (the order of the history endpoint).
  history.sort((a, b) => b.valid_from - a.valid_from || byCodePoint(a.fact, b.fact));

  const events: NewEvent[] = [];
  const subject = `participant:${p.pid}`;
  const emit = (type: EventType, at: number, payload: Record<string, unknown>, hosts: Iterable<string | null>, seats: Iterable<string | null>): void => {
    events.push({ type, observedAt: at, subject, hostname: null, participantId: p.id, payload, hosts: sortedUnique(hosts), seats: sortedUnique(seats) });
  };
  const setAt = (t: number, strict: boolean): EndpointSet | null => {
    const i = smpAt(smp, t, strict);
    return i < 0 ? null : sets(smp[i]!.set);
  };

  // Registration events from successive SML observations.
  let prevSml: SmlObs | null = null;
  for (const o of sml) {
    if (prevSml === null) {
      // First observation: baseline unless it lies after the first sweep and shows a registration.
      if (o.registered === 1 && sweepEnd !== null && o.at > sweepEnd) {
        const s = setAt(o.at, false);
        emit('participant_registered', o.at, { before: { registered: null, smp: null }, after: { registered: true, smp: o.smp }, joiner: true }, [o.smp, ...(s?.hostOf ?? [])], s?.seats ?? []);
      }
    } else if (prevSml.registered !== o.registered) {
      if (o.registered === 1) {
        const s = setAt(o.at, false);
        emit('participant_registered', o.at, { before: { registered: false, smp: prevSml.smp }, after: { registered: true, smp: o.smp }, joiner: false }, [o.smp, ...(s?.hostOf ?? [])], s?.seats ?? []);
      } else {
        const s = setAt(o.at, true);
        emit(
          'participant_deregistered',
          o.at,
          { before: { registered: true, smp: prevSml.smp, seats: s?.seats ?? [], seat: s?.seat ?? null }, after: { registered: false, smp: null } },
          [prevSml.smp, ...(s?.hostOf ?? [])],
          s?.seats ?? [],
        );
      }
    } else if (o.registered === 1 && prevSml.smp !== o.smp) {
      const s = setAt(o.at, false);
      emit('participant_smp_changed', o.at, { before: { smp: prevSml.smp }, after: { smp: o.smp } }, [prevSml.smp, o.smp], s?.seats ?? []);
    }
    prevSml = o;
  }

  // Endpoint events from successive SMP records.
  for (let i = 1; i < smp.length; i++) {
    const a = sets(smp[i - 1]!.set);
    const b = sets(smp[i]!.set);
    if (a.id === b.id) continue;
    const at = smp[i]!.at;
    if (!sameList(a.seats, b.seats)) {
      emit('ap_seat_changed', at, { before: { seats: a.seats, seat: a.seat }, after: { seats: b.seats, seat: b.seat } }, [...a.hostOf, ...b.hostOf], [...a.seats, ...b.seats]);
    } else {
      const changes: Array<{ doctype: string; process: string; transport_profile: string; before: string; after: string }> = [];
      const hosts: Array<string | null> = [];
      const seats: Array<string | null> = [];
      b.endpoints.forEach((e, j) => {
        const k = a.byKey.get(endpointKey(e));
        if (k === undefined || a.endpoints[k]!.url === e.url) return;
        changes.push({ doctype: e.doctype, process: e.process, transport_profile: e.transport_profile, before: a.endpoints[k]!.url, after: e.url });
        hosts.push(a.hostOf[k]!, b.hostOf[j]!);
        seats.push(a.seatOf[k]!, b.seatOf[j]!);
      });
      if (changes.length > 0) emit('endpoint_changed', at, { seat: b.seat, changes }, hosts, seats);
    }
    if (!sameList(a.doctypes, b.doctypes)) {
      const before = new Set(a.doctypes);
      const after = new Set(b.doctypes);
      const added = b.doctypes.filter((d) => !before.has(d));
      const removed = a.doctypes.filter((d) => !after.has(d));
      // Linked to the hosts and seats of the endpoints that publish an added or removed document type.
      const hosts: Array<string | null> = [];
      const seats: Array<string | null> = [];
      b.endpoints.forEach((e, j) => {
        if (before.has(e.doctype)) return;
        hosts.push(b.hostOf[j]!);
        seats.push(b.seatOf[j]!);
      });
      a.endpoints.forEach((e, j) => {
        if (after.has(e.doctype)) return;
        hosts.push(a.hostOf[j]!);
        seats.push(a.seatOf[j]!);
      });
      emit('doctype_support_changed', at, { before: { doctypes: a.doctypes }, after: { doctypes: b.doctypes }, added, removed }, hosts, seats);
    }
  }

  // Card events from successive directory observations (present in both).
  for (let i = 1; i < dir.length; i++) {
    const a = dir[i - 1]!;
    const b = dir[i]!;
    if (a.present !== 1 || b.present !== 1) continue;
    const ca = cardOf(a);
    const cb = cardOf(b);
    if (ca !== null && cb !== null && ca.name === cb.name && ca.countryCode === cb.countryCode && ca.registrationDate === cb.registrationDate) continue;
    if (ca === null && cb === null) continue;
    emit('directory_card_changed', b.at, { before: { card: ca }, after: { card: cb } }, [], []);
  }

  // Current state.
  const firsts = [dir[0]?.at, sml[0]?.at, smp[0]?.at].filter((x): x is number => x !== undefined);
  if (firsts.length === 0) return { list: null, history, events };
  const lasts = [dir.at(-1)?.at, sml.at(-1)?.at, smp.at(-1)?.at].filter((x): x is number => x !== undefined);
  const lastDir = dir.at(-1) ?? null;
  const card = lastDir === null ? null : cardOf(lastDir);
  const lastSml = sml.at(-1) ?? null;
  const registered = lastSml?.registered === 1;
  const current = registered && smp.length > 0 ? sets(smp[smp.length - 1]!.set) : null;
  const list: ListRow = {
    participant_id: p.id,
    pid: p.pid,
    scheme: p.scheme,
    value: p.value,
    name: card?.name ?? null,
    country: card?.countryCode ?? null,
    registration_date: card?.registrationDate ?? null,
    has_card: card === null ? 0 : 1,
    directory_present: lastDir === null ? null : lastDir.present,
    directory_since: since(dir, (x, y) => x.present === y.present),
    registered: registered ? 1 : 0,
    registration_since: since(sml, (x, y) => x.registered === y.registered),
    smp: registered ? (lastSml?.smp ?? null) : null,
    ap_seat_id: current?.seat ?? null,
    endpoint_set_id: current?.id ?? null,
    provenance: dir.some((o) => o.present === 1) ? 'directory' : 'discovered',
    first_seen_at: Math.min(...firsts),
    last_seen_at: Math.max(...lasts),
  };
  return { list, history, events };
}
