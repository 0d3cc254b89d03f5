// The oracle of the participants family (docs/architecture.md §5, "Correctness oracle"): every answer straight from
// SQLite — SQL with WHERE / ORDER BY / LIMIT and keyset conditions on the sort key. The composer
// (src/edge/compose/participants.ts) must give byte-identical answers from the snapshot's files.
// Shared pure rules (search, envelopes, cursors, meta, the filter_count budget): ../participants/plan.ts.
import type { Db } from '../../db/index.js';
import { participantEvents, participantHistory, participantKey, participantStats, participantView, type EventKey, type HistoryKey, type Keyed, type ParticipantEvent, type ParticipantHistoryRow, type ParticipantView as ReadParticipantView } from '../../derive/participants/read.js';
import type { ParamsOf } from '../handlers.js';
import type { SortKey } from '../sort-keys.js';
import { acceptedValues, activeDimensions, type FilterDimension, classifySearch, EVENTS_ROUTE, foldName, HISTORY_ROUTE, listKey, listMeta, listOrder, listPage, type ListParams, type ParticipantSort, type Search } from './plan.js';
import { notFoundOf, ok, type ApiResult } from '../result.js';
import type { OrderSpec } from '../routes/types.js';
import type { ParticipantListItem, ParticipantStats, ParticipantView } from '../schemas/index.js';
import type { Queries, QueryFn } from '../query/types.js';
import { afterSql, keysetOf, orderBySql } from '../query/keyset.js';
import { apiTs, apiTsOrNull } from '../time.js';
import { pageBody, type PageBody } from '../page.js';
import { FacetCounter, type FacetTuple, type LabelledDimension } from './facets.js';
import { SCHEME_LABELS, schemeLabel } from './schemes.js';

// ---------------------------------------------------------------------------------------------
// Rows -> spec objects

/** The participant_list columns a list item is built from. */
export const LIST_COLUMNS = 'pid, scheme, value, name, country, registered, smp, ap_seat_id, provenance, first_seen_at';

export interface ListRow {
  pid: string;
  scheme: string;
  value: string;
  name: string | null;
  country: string | null;
  registered: number;
  smp: string | null;
  ap_seat_id: string | null;
  provenance: 'directory' | 'discovered';
  first_seen_at: number;
}

/** Curated provider names by seat (verified seat identities only): ap_provider. A few thousand seats. */
export function curatedSeatNames(db: Db): Map<string, string> {
  const out = new Map<string, string>();
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'seat_identities'").get() !== undefined;
  if (!has) return out;
  for (const r of db.prepare('SELECT seat_id, name FROM seat_identities WHERE verified = 1 AND name IS NOT NULL').all() as Array<{ seat_id: string; name: string }>) {
    out.set(r.seat_id, r.name);
  }
  return out;
}

export function listItemOf(r: ListRow, seatNames: ReadonlyMap<string, string>): ParticipantListItem {
  return {
    id: r.pid,
    scheme: r.scheme,
    value: r.value,
    name: r.name,
    country: r.country,
    registered: r.registered === 1,
    smp: r.smp,
    ap_seat_id: r.ap_seat_id,
    ap_provider: r.ap_seat_id === null ? null : (seatNames.get(r.ap_seat_id) ?? null),
    provenance: r.provenance,
    first_seen_at: new Date(r.first_seen_at).toISOString(),
  };
}

/** ParticipantView with the schemas' timestamp form. */
export function viewOf(db: Db, id: string): ParticipantView | null {
  const v = participantView(db, id);
  return v === null ? null : apiViewOf(v);
}

/** The API's ParticipantView of the reader's (instants as the API writes them). */
export function apiViewOf(v: ReadParticipantView): ParticipantView {
  return {
    ...v,
    directory: { present: v.directory.present, since: apiTsOrNull(v.directory.since) },
    registration: { registered: v.registration.registered, since: apiTsOrNull(v.registration.since), smp: v.registration.smp },
  };
}

export function statsOf(db: Db, nowMs: number): ParticipantStats {
  const s = participantStats(db, nowMs);
  return { total_count: s.total_count, refreshed_at: apiTs(s.refreshed_at), facets: s.facets };
}

// ---------------------------------------------------------------------------------------------
// SQL of the list orders (nulls last in both directions: `x IS NULL` first in ORDER BY)

const COLUMN: Record<string, string> = { first_seen_at: 'first_seen_at', name: 'name', country: 'country', id: 'pid' };

/** ORDER BY of a list order over participant_list. */
export function orderSql(order: OrderSpec): string {
  return orderBySql(keysetOf(order, COLUMN));
}

const FOLD_FN = 'peppol_fold_text';
const folded = new WeakSet<Db>();
/** Registers the `q` fold (src/api/params.ts foldText) as a SQL function on the connection. */
function ensureFold(db: Db): void {
  if (folded.has(db)) return;
  db.function(FOLD_FN, { deterministic: true }, (s: unknown) => (typeof s === 'string' ? foldName(s) : null));
  folded.add(db);
}

/** The column of participant_list holding each filter dimension's value. */
export const DIM_COLUMN: Readonly<Record<FilterDimension, string>> = { country: 'country', scheme: 'scheme', smp: 'smp', ap: 'ap_seat_id', registered: 'registered', provenance: 'provenance' };

/** The WHERE condition of some values of a filter dimension ("true"/"false" of `registered` stored as 1/0), and its arguments. */
export function dimCondition(d: FilterDimension, values: readonly string[]): { cond: string; args: unknown[] } {
  const col = DIM_COLUMN[d];
  const args = d === 'registered' ? values.map((v) => (v === 'true' ? 1 : 0)) : [...values];
  return { cond: args.length === 1 ? `${col} = ?` : `${col} IN (${args.map(() => '?').join(', ')})`, args };
}

/** WHERE conditions of the filters and the search. */
function filterSql(db: Db, p: ListParams, search: Search | null): { conds: string[]; args: unknown[] } {
  const conds: string[] = [];
  const args: unknown[] = [];
  for (const d of activeDimensions(p)) {
    const c = dimCondition(d, acceptedValues(p, d));
    conds.push(c.cond);
    args.push(...c.args);
  }
  if (search !== null) {
    if (search.kind === 'id') {
      conds.push('pid = ?');
      args.push(search.id);
    } else if (search.kind === 'value') {
      conds.push('value = ?');
      args.push(search.value);
    } else {
      ensureFold(db);
      conds.push(`name IS NOT NULL AND instr(${FOLD_FN}(name), ?) > 0`);
      args.push(search.text);
    }
  }
  return { conds, args };
}

const where = (conds: readonly string[]): string => (conds.length === 0 ? '' : `WHERE ${conds.join(' AND ')}`);

/**
 * The facet tuples of participant_list with their counts, under WHERE conditions (every tuple without).
 * The renderer's facet cube is this without conditions.
 */
export function facetTupleRows(db: Db, conds: readonly string[] = [], args: readonly unknown[] = []): Array<{ tuple: FacetTuple; count: number }> {
  const rows = db
    .prepare(`SELECT country, scheme, registered, provenance, smp, ap_seat_id, count(*) FROM participant_list ${where(conds)} GROUP BY country, scheme, registered, provenance, smp, ap_seat_id`)
    .raw()
    .all(...args) as Array<[string | null, string, number, string, string | null, string | null, number]>;
  return rows.map((r) => ({ tuple: [r[0], r[1], r[2] === 1 ? 'true' : 'false', r[3], r[4], r[5]], count: r[6] }));
}

/** The labels of facet values: a scheme's name in the code list, the curated provider of a seat. */
export function facetLabelsOf(seatNames: ReadonlyMap<string, string>): Record<LabelledDimension, (value: string) => string | null> {
  return { scheme: schemeLabel, ap: (seat) => seatNames.get(seat) ?? null };
}

/** The count and facets of the participants matching WHERE conditions, straight from SQL. */
function countsSql(db: Db, conds: readonly string[], args: readonly unknown[], seatNames: ReadonlyMap<string, string>, everyTuple?: ReturnType<typeof facetTupleRows>): FacetCounter {
  const counter = new FacetCounter();
  counter.label({ scheme: SCHEME_LABELS, ap: seatNames });
  for (const r of conds.length === 0 && everyTuple !== undefined ? everyTuple : facetTupleRows(db, conds, args)) counter.add(r.tuple, r.count);
  return counter;
}

/** The list answer for canonical parameters. */
/**
 * `everyTuple`: facetTupleRows(db) when the caller has it (the renderer, which also writes it as the
 * facet cube), so that the default page does not group the list a second time (10.6 s at `peppol`).
 */
export function participantsList(db: Db, params: ParamsOf<'participants.list'>, nowMs: number, everyTuple?: ReturnType<typeof facetTupleRows>): ApiResult {
  // The route's parsed parameters are the canonical list parameters (sort and limit always present).
  const p: ListParams = params;
  const order = listOrder(p.sort);
  const search = p.q === undefined ? null : classifySearch(p.q);
  const seatNames = curatedSeatNames(db);
  const after = p.cursor === undefined ? null : afterSql(keysetOf(order, COLUMN), p.cursor.key);
  const { conds, args } = filterSql(db, p, search);
  // Whatever the shim reads, the page is the first `limit` matches after the cursor (plan.ts, "Where a
  // list page reads from"), and `meta` counts every match (the shim: metaMode).
  const pageConds = after === null ? conds : [...conds, after.sql];
  const pageArgs = after === null ? args : [...args, ...after.args];
  const rows = db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ${where(pageConds)} ORDER BY ${orderSql(order)} LIMIT ?`).all(...pageArgs, p.limit + 1) as ListRow[];
  const items = rows.slice(0, p.limit).map((r) => listItemOf(r, seatNames));
  const nextKey: SortKey | null = rows.length > p.limit ? listKey(order, items[items.length - 1]!) : null;
  let meta;
  if (p.cursor === undefined) {
    const total = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
    meta = listMeta(p, total, search === null ? 'cube' : 'set', countsSql(db, conds, args, seatNames, everyTuple));
  }
  return ok(listPage(p.sort, items, nextKey, meta));
}

// ---------------------------------------------------------------------------------------------
// One participant

export const participantsDetail: QueryFn<'participants.detail'> = (db, params) => {
  const id = params.id;
  const v = viewOf(db, id);
  return v === null ? notFoundOf('participant', id) : ok(v);
};

function takePage<T, K>(gen: Iterable<{ item: T; key: K }>, limit: number, keyOf: (k: K) => SortKey): { items: T[]; keys: SortKey[]; more: boolean } {
  const items: T[] = [];
  const keys: SortKey[] = [];
  for (const { item, key } of gen) {
    if (items.length === limit) return { items, keys, more: true };
    items.push(item);
    keys.push(keyOf(key));
  }
  return { items, keys, more: false };
}

export const participantsEvents: QueryFn<'participants.events'> = (db, params) => {
  const id = params.id;
  if (participantKey(db, id) === null) return notFoundOf('participant', id);
  const c = params.cursor;
  // parseRequest accepts a cursor only when its key fits the route's order: [observed_at ms, event id].
  const after = c === undefined ? null : { observed_at: c.key[0] as number, id: c.key[1] as string };
  return ok(eventsPageOf(id, participantEvents(db, id, { after }), params.limit));
};

/** A page of a participant's events from its events after the cursor, in list order (the oracle's answer, and a record's first page). */
export function eventsPageOf(id: string, events: Iterable<Keyed<ParticipantEvent, EventKey>>, limit: number): PageBody<Record<string, unknown>> {
  const pg = takePage(events, limit, (k) => [k.observed_at, k.id]);
  const items = pg.items.map((e) => ({ id: e.id, type: e.type, observed_at: apiTs(e.observed_at), payload: e.payload }));
  return pageBody(EVENTS_ROUTE, [id], items, pg.keys, pg.more);
}

export const participantsHistory: QueryFn<'participants.history'> = (db, params) => {
  const id = params.id;
  if (participantKey(db, id) === null) return notFoundOf('participant', id);
  const c = params.cursor;
  // parseRequest accepts a cursor only when its key fits the route's order: [valid_from ms, fact].
  const after = c === undefined ? null : { valid_from: c.key[0] as number, fact: c.key[1] as string };
  return ok(historyPageOf(id, participantHistory(db, id, { after }), params.limit));
};

/** A page of a participant's history from its rows after the cursor, in list order (the oracle's answer, and a record's first page). */
export function historyPageOf(id: string, rows: Iterable<Keyed<ParticipantHistoryRow, HistoryKey>>, limit: number): PageBody<Record<string, unknown>> {
  const pg = takePage(rows, limit, (k) => [k.valid_from, k.fact]);
  const items = pg.items.map((h) => ({ fact: h.fact, valid_from: apiTs(h.valid_from), valid_to: apiTsOrNull(h.valid_to), detail: h.detail }));
  return pageBody(HISTORY_ROUTE, [id], items, pg.keys, pg.more);
}

export const statsParticipants: QueryFn<'stats.participants'> = (db, _params, nowMs) => ok(statsOf(db, nowMs));

export const PARTICIPANT_QUERIES = {
  'participants.list': participantsList,
  'participants.detail': participantsDetail,
  'participants.events': participantsEvents,
  'participants.history': participantsHistory,
  'stats.participants': statsParticipants,
} satisfies Partial<Queries>;

/** Sorts named for renderers (re-exported for convenience). */
export type { ParticipantSort };
