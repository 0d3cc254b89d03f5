// Readers of the participants and stats steps' tables. They return objects with exactly the spec's
// field names in the spec's order, `T|null` keys always present, instants as isoTime(). Lists are
// generators in their published order, each item with its keyset sort key; the API layer pages them.
import { iterating, rawStatement, rowObjects, statement } from '../../db/statements.js';
import type { Db } from '../../db/index.js';
import { organisationFromSubject } from '../../feeds/ids.js';
import type { EventType } from '../events.js';
import { isoTime } from '../hosts/time.js';
import { identityOf } from '../providers/identity.js';
import { EndpointSets, type EndpointSet } from './endpoints.js';
import type { Fact } from './derive.js';
import { schemeLabel } from '../../api/participants/schemes.js';
import { STATS_FACETS, type StatsFacet } from './stats.js';

export interface Keyed<T, K> {
  item: T;
  key: K;
}

export interface ParticipantCard {
  name: string | null;
  countryCode: string | null;
  registrationDate: string | null;
}
export interface ParticipantRegistration {
  registered: boolean;
  since: string | null;
  smp: string | null;
}
export interface SeatProvider {
  slug: string | null;
  name: string | null;
  country: string | null;
  verified: boolean;
}
export interface SeatRef {
  seat_id: string;
  provider: SeatProvider;
}
export interface ParticipantEndpointView {
  doctype: string;
  transport_profile: string;
  url: string;
  seat: SeatRef | null;
}
export type Provenance = 'directory' | 'discovered';
export interface ParticipantView {
  id: string;
  scheme: string;
  value: string;
  provenance: Provenance;
  directory: { present: boolean; since: string | null };
  registration: ParticipantRegistration;
  card: ParticipantCard | null;
  endpoints: ParticipantEndpointView[];
  seats: SeatRef[];
}
export interface ParticipantEvent {
  id: string;
  type: EventType;
  observed_at: string;
  payload: Record<string, unknown>;
}
export interface ParticipantHistoryRow {
  fact: Fact;
  valid_from: string;
  valid_to: string | null;
  detail: Record<string, unknown>;
}
export interface ParticipantListItem {
  id: string;
  scheme: string;
  value: string;
  name: string | null;
  country: string | null;
  registered: boolean;
  smp: string | null;
  ap_seat_id: string | null;
  ap_provider: string | null;
  provenance: Provenance;
  first_seen_at: string;
}
export interface FacetBucket {
  value: string;
  count: number;
  label?: string;
}
export interface ParticipantStats {
  total_count: number;
  refreshed_at: string;
  facets: Record<StatsFacet, FacetBucket[]>;
}

/** Keyset position in a participant's history (valid_from DESC, fact ASC). */
export interface HistoryKey {
  valid_from: number;
  fact: string;
}
/** Keyset position in an event list (observed_at DESC, id DESC). */
export interface EventKey {
  observed_at: number;
  id: string;
}

// ---------------------------------------------------------------------------------------------------
// Seat providers: the providers step's seat_identities (curated, else O=, else bare seat) when it has a
// row for the seat; otherwise the same rule applied here to the endpoint certificate (unverified, name
// from its O= or the seat id, country from the seat id).

const seatTables = new WeakMap<Db, boolean>();
function hasSeatIdentities(db: Db): boolean {
  let v = seatTables.get(db);
  if (v === undefined) {
    v = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'seat_identities'").get() !== undefined;
    // Only a positive answer is cached: the table appears once the derived schema is created.
    if (v) seatTables.set(db, v);
  }
  return v;
}

function seatProvider(db: Db, seatId: string, subject: string | null): SeatProvider {
  if (hasSeatIdentities(db)) {
    const r = statement(db, 'SELECT name, verified, slug, country FROM seat_identities WHERE seat_id = ?').get(seatId) as
      | { name: string | null; verified: number; slug: string | null; country: string | null }
      | undefined;
    if (r) return { slug: r.slug, name: r.name, country: r.country, verified: r.verified === 1 };
  }
  const i = identityOf(seatId, null, subject === null ? null : organisationFromSubject(subject));
  return { slug: null, name: i.name, country: i.country, verified: false };
}

/** Curated provider names of seats (verified identities only), for ap_provider and the `ap` facet labels. */
function curatedNames(db: Db, seats: Iterable<string>): Map<string, string> {
  const out = new Map<string, string>();
  if (!hasSeatIdentities(db)) return out;
  const q = db.prepare('SELECT name FROM seat_identities WHERE seat_id = ? AND verified = 1 AND name IS NOT NULL').pluck();
  for (const s of new Set(seats)) {
    const n = q.get(s) as string | undefined;
    if (n !== undefined) out.set(s, n);
  }
  return out;
}

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoTime(ms));

// ---------------------------------------------------------------------------------------------------
// One participant.

/** participants.id of a canonical participant id that has derived state, or null when unknown. */
export function participantKey(db: Db, pid: string): number | null {
  const r = statement(db, 'SELECT l.participant_id FROM participants p JOIN participant_list l ON l.participant_id = p.id WHERE p.pid = ?').pluck().get(pid) as
    | number
    | undefined;
  return r ?? null;
}

interface ListDbRow {
  participant_id: number;
  pid: string;
  scheme: string;
  value: string;
  name: string | null;
  country: string | null;
  registration_date: string | null;
  has_card: number;
  directory_present: number | null;
  directory_since: number | null;
  registered: number;
  registration_since: number | null;
  smp: string | null;
  ap_seat_id: string | null;
  endpoint_set_id: number | null;
  provenance: Provenance;
  first_seen_at: number;
}

/**
 * The parsed endpoint sets of each connection. A set's row never changes (it is found by its content),
 * and thousands of participants share one (13,197 sets for 3 million participants at `peppol`): a
 * full build parsed the same JSON for every participant (a tenth of its per-participant work).
 */
const parsedSets = new WeakMap<Db, EndpointSets>();

function endpointSetOf(db: Db, id: number): EndpointSet {
  let sets = parsedSets.get(db);
  if (sets === undefined) parsedSets.set(db, (sets = new EndpointSets(db, 20_000)));
  return sets.get(id);
}

/** ParticipantView of a canonical participant id, or null when unknown. */
export function participantView(db: Db, pid: string): ParticipantView | null {
  const r = statement(db, 'SELECT l.* FROM participants p JOIN participant_list l ON l.participant_id = p.id WHERE p.pid = ?').get(pid) as ListDbRow | undefined;
  return r ? viewOfRow(db, r) : null;
}

/**
 * ParticipantView of a participant_list row. `providers` memoises the seats' providers for the
 * caller (a full build's records ask for the same ~1,500 seats three million times); the caller
 * keeps it no longer than the database stays as it is.
 */
function viewOfRow(db: Db, r: ListDbRow, providers?: Map<string, SeatProvider>): ParticipantView {
  const endpoints: ParticipantEndpointView[] = [];
  const seats: SeatRef[] = [];
  if (r.endpoint_set_id !== null) {
    const set = endpointSetOf(db, r.endpoint_set_id);
    const refs = new Map<string, SeatRef>();
    const providerOf = (seat: string, subject: string | null): SeatProvider => {
      if (providers === undefined) return seatProvider(db, seat, subject);
      // A seat id holds no NUL: a key without one is the seat without a subject.
      const k = subject === null ? seat : `${seat}\u0000${subject}`;
      let p = providers.get(k);
      if (p === undefined) providers.set(k, (p = seatProvider(db, seat, subject)));
      return p;
    };
    const refOf = (seat: string, subject: string | null): SeatRef => {
      let ref = refs.get(seat);
      if (!ref) {
        ref = { seat_id: seat, provider: providerOf(seat, subject) };
        refs.set(seat, ref);
      }
      return ref;
    };
    set.endpoints.forEach((e, i) => {
      const seat = set.seatOf[i] ?? null;
      endpoints.push({ doctype: e.doctype, transport_profile: e.transport_profile, url: e.url, seat: seat === null ? null : refOf(seat, e.cert?.subject ?? null) });
    });
    for (const s of set.seats) seats.push(refs.get(s)!);
  }
  return {
    id: r.pid,
    scheme: r.scheme,
    value: r.value,
    provenance: r.provenance,
    directory: { present: r.directory_present === 1, since: isoOrNull(r.directory_since) },
    registration: { registered: r.registered === 1, since: isoOrNull(r.registration_since), smp: r.smp },
    card: r.has_card === 1 ? { name: r.name, countryCode: r.country, registrationDate: r.registration_date } : null,
    endpoints,
    seats,
  };
}

interface HistoryDbRow {
  valid_from: number;
  fact: Fact;
  valid_to: number | null;
  flag: number | null;
  name: string | null;
  country: string | null;
  registration_date: string | null;
  hostname: string | null;
}

function historyDetail(r: HistoryDbRow): Record<string, unknown> {
  switch (r.fact) {
    case 'directory_presence':
      return { present: r.flag === 1 };
    case 'card':
      return { name: r.name, countryCode: r.country, registrationDate: r.registration_date };
    case 'registration':
      return { registered: r.flag === 1 };
    case 'smp':
      return { hostname: r.hostname };
  }
}

/** A participant's facts history, newest first (valid_from DESC, fact ASC); empty when unknown. */
export function* participantHistory(db: Db, pid: string, opts: { after?: HistoryKey | null } = {}): Generator<Keyed<ParticipantHistoryRow, HistoryKey>> {
  const id = participantKey(db, pid);
  if (id === null) return;
  const args: unknown[] = [id];
  let cond = '';
  if (opts.after) {
    cond = 'AND (valid_from < ? OR (valid_from = ? AND fact > ?))';
    args.push(opts.after.valid_from, opts.after.valid_from, opts.after.fact);
  }
  const rows = iterating(
    db,
    `SELECT valid_from, fact, valid_to, flag, name, country, registration_date, hostname FROM participant_history
     WHERE participant_id = ? ${cond} ORDER BY valid_from DESC, fact ASC`,
  ).iterate(...args) as IterableIterator<HistoryDbRow>;
  for (const r of rows) yield historyOfRow(r);
}

function historyOfRow(r: HistoryDbRow): Keyed<ParticipantHistoryRow, HistoryKey> {
  return {
    item: { fact: r.fact, valid_from: isoTime(r.valid_from), valid_to: isoOrNull(r.valid_to), detail: historyDetail(r) },
    key: { valid_from: r.valid_from, fact: r.fact },
  };
}

/** A participant's change events, newest first (observed_at DESC, id DESC); empty when unknown. */
export function* participantEvents(db: Db, pid: string, opts: { after?: EventKey | null } = {}): Generator<Keyed<ParticipantEvent, EventKey>> {
  const id = participantKey(db, pid);
  if (id === null) return;
  const args: unknown[] = [id];
  let cond = '';
  if (opts.after) {
    cond = 'AND (observed_at < ? OR (observed_at = ? AND id < ?))';
    args.push(opts.after.observed_at, opts.after.observed_at, opts.after.id);
  }
  const rows = iterating(db, `SELECT id, type, observed_at, payload FROM events WHERE participant_id = ? ${cond} ORDER BY observed_at DESC, id DESC`).iterate(...args) as IterableIterator<EventDbRow>;
  for (const r of rows) yield eventOfRow(r);
}

interface EventDbRow {
  id: string;
  type: EventType;
  observed_at: number;
  payload: string;
}

function eventOfRow(r: EventDbRow): Keyed<ParticipantEvent, EventKey> {
  return { item: { id: r.id, type: r.type, observed_at: isoTime(r.observed_at), payload: JSON.parse(r.payload) as Record<string, unknown> }, key: { observed_at: r.observed_at, id: r.id } };
}

/** A participant's view and the heads of its history and events, as participantView, participantHistory and participantEvents give them. */
export interface ParticipantRows {
  view: ParticipantView;
  /** The newest `take` history rows at most, in list order. */
  history: Array<Keyed<ParticipantHistoryRow, HistoryKey>>;
  /** The newest `take` events at most, in list order. */
  events: Array<Keyed<ParticipantEvent, EventKey>>;
}

/**
 * The views and the heads (`take` items at most) of the history and events of the participants
 * `ids` (ascending participant_id), with one statement per table for all of them: a build's records
 * (src/render/routes/participants.ts) ask for three million participants in batches, where a
 * statement per participant and table was most of a record's SQLite time. A batch whose ids are
 * dense (a full build's) reads its range; a sparse one (an incremental build's changed
 * participants) looks each id up within the same statement. Participants without a list row are
 * absent from the result. `providers`: see viewOfRow.
 */
export function participantRowsOf(db: Db, ids: readonly number[], take: number, providers: Map<string, SeatProvider>): Map<number, ParticipantRows> {
  const out = new Map<number, ParticipantRows>();
  if (ids.length === 0) return out;
  const lo = ids[0]!;
  const hi = ids[ids.length - 1]!;
  // A range holding at most twice the ids reads little beyond them; otherwise the ids one by one.
  const dense = hi - lo < 2 * ids.length;
  const where = dense ? 'participant_id BETWEEN ? AND ?' : 'participant_id IN (SELECT value FROM json_each(?))';
  const args = dense ? [lo, hi] : [JSON.stringify(ids)];
  const wanted = dense ? new Set(ids) : null;
  for (const r of rowObjects<ListDbRow>(rawStatement(db, `SELECT * FROM participant_list WHERE ${where}`), ...args)) {
    if (wanted === null || wanted.has(r.participant_id)) out.set(r.participant_id, { view: viewOfRow(db, r, providers), history: [], events: [] });
  }
  const history = rawStatement(
    db,
    `SELECT participant_id, valid_from, fact, valid_to, flag, name, country, registration_date, hostname FROM participant_history
     WHERE ${where} ORDER BY participant_id, valid_from DESC, fact ASC`,
  );
  for (const r of rowObjects<HistoryDbRow & { participant_id: number }>(history, ...args)) {
    const p = out.get(r.participant_id);
    if (p !== undefined && p.history.length < take) p.history.push(historyOfRow(r));
  }
  const events = rawStatement(db, `SELECT participant_id, id, type, observed_at, payload FROM events WHERE ${where} ORDER BY participant_id, observed_at DESC, id DESC`);
  for (const r of rowObjects<EventDbRow & { participant_id: number }>(events, ...args)) {
    const p = out.get(r.participant_id);
    if (p !== undefined && p.events.length < take) p.events.push(eventOfRow(r));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The participant list.

export const PARTICIPANT_SORTS = ['first_seen.desc', 'first_seen.asc', 'name.asc', 'name.desc', 'country.asc', 'country.desc'] as const;
export type ParticipantSort = (typeof PARTICIPANT_SORTS)[number];

/** Keyset position in a list order: the sort column's value (null sorts last), then the unique id. */
export interface ParticipantListKey {
  value: number | string | null;
  id: string;
}

/** The columns participantListItem() maps (a participant_list row). */
export interface ParticipantListRow {
  pid: string;
  scheme: string;
  value: string;
  name: string | null;
  country: string | null;
  registered: number;
  smp: string | null;
  ap_seat_id: string | null;
  provenance: Provenance;
  first_seen_at: number;
}

/** A participant_list row as ParticipantListItem; apProvider is the curated name behind its seat. */
export function participantListItem(r: ParticipantListRow, apProvider: string | null): ParticipantListItem {
  return {
    id: r.pid,
    scheme: r.scheme,
    value: r.value,
    name: r.name,
    country: r.country,
    registered: r.registered === 1,
    smp: r.smp,
    ap_seat_id: r.ap_seat_id,
    ap_provider: r.ap_seat_id === null ? null : apProvider,
    provenance: r.provenance,
    first_seen_at: isoTime(r.first_seen_at),
  };
}

export interface ParticipantListQuery {
  sort?: ParticipantSort;
  /** Each a set of accepted values (OR within a filter, AND across filters). */
  country?: readonly string[] | null;
  scheme?: readonly string[] | null;
  smp?: readonly string[] | null;
  ap?: readonly string[] | null;
  registered?: boolean | null;
  provenance?: Provenance | null;
  /** Continue after this keyset position. */
  after?: ParticipantListKey | null;
}

const SORT_COLUMN: Record<ParticipantSort, 'first_seen_at' | 'name' | 'country'> = {
  'first_seen.desc': 'first_seen_at',
  'first_seen.asc': 'first_seen_at',
  'name.asc': 'name',
  'name.desc': 'name',
  'country.asc': 'country',
  'country.desc': 'country',
};

/**
 * The participant list in one of its orders, filtered, from `after` on. Order: the sort column in the
 * sort's direction with nulls last (in both directions), then the canonical id in the same direction.
 * A nullable column is read in two index range scans: the non-null values, then the nulls by id.
 */
export function* participantList(db: Db, q: ParticipantListQuery = {}): Generator<Keyed<ParticipantListItem, ParticipantListKey>> {
  const sort = q.sort ?? 'first_seen.desc';
  const col = SORT_COLUMN[sort];
  const desc = sort.endsWith('.desc');
  const dir = desc ? 'DESC' : 'ASC';
  const cmp = desc ? '<' : '>';
  const where: string[] = [];
  const args: unknown[] = [];
  const inList = (column: string, values: readonly string[] | null | undefined): void => {
    if (values === null || values === undefined) return;
    where.push(values.length === 0 ? '0' : `${column} IN (${values.map(() => '?').join(', ')})`);
    args.push(...values);
  };
  inList('country', q.country);
  inList('scheme', q.scheme);
  inList('smp', q.smp);
  inList('ap_seat_id', q.ap);
  if (q.registered !== null && q.registered !== undefined) {
    where.push('registered = ?');
    args.push(q.registered ? 1 : 0);
  }
  if (q.provenance) {
    where.push('provenance = ?');
    args.push(q.provenance);
  }
  const cols = 'pid, scheme, value, name, country, registered, smp, ap_seat_id, provenance, first_seen_at';
  // Keyset condition "after (v, id)" within one phase (v null: the phase of the nulls, ordered by id).
  const afterCond = (v: number | string | null, id: string): { cond: string; args: unknown[] } =>
    v === null ? { cond: `pid ${cmp} ?`, args: [id] } : { cond: `(${col} ${cmp} ? OR (${col} = ? AND pid ${cmp} ?))`, args: [v, v, id] };
  const after = q.after ?? null;
  const phases: Array<{ base: string[]; order: string; start: { cond: string; args: unknown[] } | null }> = [];
  if (after === null || after.value !== null) {
    phases.push({ base: col === 'first_seen_at' ? [] : [`${col} IS NOT NULL`], order: `${col} ${dir}, pid ${dir}`, start: after === null ? null : afterCond(after.value, after.id) });
  }
  if (col !== 'first_seen_at') {
    phases.push({ base: [`${col} IS NULL`], order: `pid ${dir}`, start: after !== null && after.value === null ? afterCond(null, after.id) : null });
  }
  const names = new Map<string, string | null>();
  const nameQ = hasSeatIdentities(db) ? db.prepare('SELECT name FROM seat_identities WHERE seat_id = ? AND verified = 1').pluck() : null;
  const apProvider = (seat: string | null): string | null => {
    if (seat === null || nameQ === null) return null;
    let n = names.get(seat);
    if (n === undefined) {
      n = (nameQ.get(seat) as string | null | undefined) ?? null;
      names.set(seat, n);
    }
    return n;
  };
  // Read in pages (no cursor stays open while the caller consumes items).
  const PAGE = 500;
  for (const ph of phases) {
    let pos = ph.start;
    for (;;) {
      const conds = [...where, ...ph.base, ...(pos === null ? [] : [pos.cond])];
      const sql = `SELECT ${cols} FROM participant_list ${conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : ''} ORDER BY ${ph.order} LIMIT ${PAGE}`;
      const rows = db.prepare(sql).all(...args, ...(pos === null ? [] : pos.args)) as ParticipantListRow[];
      for (const r of rows) yield { item: participantListItem(r, apProvider(r.ap_seat_id)), key: { value: r[col], id: r.pid } };
      if (rows.length < PAGE) break;
      const last = rows[rows.length - 1]!;
      pos = afterCond(last[col], last.pid);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Statistics.

/**
 * ParticipantStats from the stats step's tables: every facet's buckets by count DESC, value ASC, every
 * value (no top-N cut). refreshed_at is the latest participant observation the counts include (nowMs
 * before any participant was observed).
 */
export function participantStats(db: Db, nowMs: number): ParticipantStats {
  const t = db.prepare('SELECT total_count, as_of FROM participant_totals WHERE id = 1').get() as { total_count: number; as_of: number | null } | undefined;
  const rows = db.prepare('SELECT facet, value, count FROM participant_facets ORDER BY facet, count DESC, value ASC').all() as Array<{ facet: StatsFacet; value: string; count: number }>;
  const facets = Object.fromEntries(STATS_FACETS.map((f) => [f, [] as FacetBucket[]])) as Record<StatsFacet, FacetBucket[]>;
  const apSeats: string[] = [];
  for (const r of rows) {
    const list = facets[r.facet];
    if (list === undefined) continue;
    list.push({ value: r.value, count: r.count });
    if (r.facet === 'ap') apSeats.push(r.value);
  }
  for (const b of facets.scheme) {
    const label = schemeLabel(b.value);
    if (label !== null) b.label = label;
  }
  const names = curatedNames(db, apSeats);
  for (const b of facets.ap) {
    const label = names.get(b.value);
    if (label !== undefined) b.label = label;
  }
  return { total_count: t?.total_count ?? 0, refreshed_at: isoTime(t?.as_of ?? nowMs), facets };
}
