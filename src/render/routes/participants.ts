// Renders the participants family into the snapshot (docs/snapshot-format.md "Participants"):
// - exact files: every participant (`v1/participants/<id>`), the first page of its events and history
//   at default parameters when that list is not empty (the shim answers an empty one from the detail
//   file), the list's first page at default parameters, `v1/stats/participants`;
// - lists: the six main orders of `/v1/participants` (list totals of country, scheme, registered,
//   provenance in the root), posting lists per country / scheme / smp / ap value and one per name
//   trigram, in the default order, and the identifier index ([value, id]); chunks of at least
//   LIST_CHUNK_MIN_ITEMS items (a page's window spans at most three); a participant's events or
//   history as a list only when it holds more than one default page (otherwise the exact file is the
//   whole list and the composer pages it).
// Streaming: statements are iterated (one open writer at a time) or read in keyset batches; nothing
// participant-sized is held in memory. better-sqlite3 cannot run a statement while another iterates on
// the same connection, so work that queries per participant reads the ids in batches first.
import { LIMIT_DEFAULT } from '../../api/params.js';
import {
  dirsOf,
  DEFAULT_SORT,
  DETAIL_ROUTE,
  EVENTS_ROUTE,
  HISTORY_ROUTE,
  ID_INDEX_DIRS,
  ID_INDEX_PARTITION,
  LIST_ROUTE,
  listKey,
  listOrder,
  MAIN_FACET_FIELDS,
  mainPartition,
  POSTING_DIMENSIONS,
  postingPartition,
  STATS_ROUTE,
  storeParticipant,
  LIST_CHUNK_MIN_ITEMS,
  trigramPartition,
  trigramsOf,
  foldName,
  facetValues,
  tsOf,
  tsOrNull,
} from '../../api/participants-shared.js';
import {
  curatedSeatNames,
  LIST_COLUMNS,
  listItemOf,
  orderSql,
  participantsEvents,
  participantsHistory,
  participantsList,
  statsOf,
  viewOf,
  type ListRow,
} from '../../api/query/participants.js';
import type { SortKey } from '../../api/keys.js';
import { orderOf, ROUTES, sortKeyOf } from '../../api/routes.js';
import { PARTICIPANT_SORTS, type ParticipantListItem } from '../../api/schemas/index.js';
import { participantEvents, participantHistory } from '../../derive/participants/read.js';
import type { ParticipantUnit, RenderContext } from '../context.js';
import type { ParticipantRecord, RecordPage } from '../../api/participant-record.js';
import { statement } from '../../db/statements.js';

export interface ParticipantRenderOptions {
  /** A participant's events or history are also written as a list when they hold more items than this. */
  perParticipantListMin: number;
}
const DEFAULTS: ParticipantRenderOptions = { perParticipantListMin: LIMIT_DEFAULT };

const BATCH = 2000;

/** Participants in participant_id order, in batches (no statement stays open while the caller works). */
type BatchRow = { participant_id: number; pid: string; name: string | null; first_seen_at: number };
function* participantBatches(ctx: RenderContext, extra = ''): Generator<BatchRow[]> {
  const q = ctx.db.prepare(`SELECT participant_id, pid, name, first_seen_at FROM participant_list WHERE participant_id > ? ${extra} ORDER BY participant_id LIMIT ${BATCH}`);
  let last = -Infinity;
  for (;;) {
    const rows = q.all(last) as BatchRow[];
    if (rows.length === 0) return;
    yield rows;
    last = rows[rows.length - 1]!.participant_id;
  }
}

function facetsOf(item: ParticipantListItem): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const f of MAIN_FACET_FIELDS) out[f] = facetValues(item, f);
  return out;
}

/**
 * Writes one list in the default order per group of a row stream ordered by group, then by the default
 * order (posting lists of a facet value, trigram lists).
 */
function writeDefaultOrderLists(ctx: RenderContext, rows: Iterable<ListRow & { group: string }>, partitionOf: (group: string) => string[], seatNames: ReadonlyMap<string, string>): void {
  const dflt = listOrder(DEFAULT_SORT);
  let current: string | null = null;
  let w: ReturnType<RenderContext['list']> | null = null;
  for (const r of rows) {
    if (r.group !== current) {
      w?.finish();
      current = r.group;
      w = ctx.list(LIST_ROUTE, partitionOf(current), dirsOf(dflt), undefined, { minItems: LIST_CHUNK_MIN_ITEMS });
    }
    const item = listItemOf(r, seatNames);
    w!.add(storeParticipant(item), listKey(dflt, item));
  }
  w?.finish();
}

export function renderParticipantsList(ctx: RenderContext): void {
  const { db } = ctx;
  const seatNames = curatedSeatNames(db);
  const body = participantsList(db, { sort: DEFAULT_SORT, limit: LIMIT_DEFAULT }, ctx.nowMs);
  if (body.status !== 200) throw new Error('participants.list: default page is not 200');
  ctx.exact(['v1', 'participants'], body.body);

  // The six main lists.
  for (const sort of PARTICIPANT_SORTS) {
    const order = listOrder(sort);
    const w = ctx.list(LIST_ROUTE, mainPartition(sort), dirsOf(order), MAIN_FACET_FIELDS, { minItems: LIST_CHUNK_MIN_ITEMS, entryCounts: false });
    for (const r of db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY ${orderSql(order)}`).iterate() as IterableIterator<ListRow>) {
      const item = listItemOf(r, seatNames);
      w.add(storeParticipant(item), listKey(order, item), facetsOf(item));
    }
    w.finish();
  }

  // Posting lists per facet value, default order.
  const dflt = listOrder(DEFAULT_SORT);
  const col: Record<(typeof POSTING_DIMENSIONS)[number], string> = { country: 'country', scheme: 'scheme', smp: 'smp', ap: 'ap_seat_id' };
  for (const dim of POSTING_DIMENSIONS) {
    // Values in descending order too, so the whole ORDER BY is the backward scan of the index
    // (dim, first_seen_at, pid): no sort.
    const sql = `SELECT ${col[dim]} AS "group", ${LIST_COLUMNS} FROM participant_list WHERE ${col[dim]} IS NOT NULL ORDER BY ${col[dim]} DESC, ${orderSql(dflt)}`;
    writeDefaultOrderLists(ctx, db.prepare(sql).iterate() as IterableIterator<ListRow & { group: string }>, (v) => postingPartition(dim, v), seatNames);
  }

  // The identifier index: [value, id] ascending (rule 1 of the participant list).
  {
    const w = ctx.list(LIST_ROUTE, ID_INDEX_PARTITION, ID_INDEX_DIRS, undefined, { minItems: LIST_CHUNK_MIN_ITEMS });
    for (const r of db.prepare(`SELECT ${LIST_COLUMNS} FROM participant_list ORDER BY value, pid`).iterate() as IterableIterator<ListRow>) {
      w.add(storeParticipant(listItemOf(r, seatNames)), [r.value, r.pid]);
    }
    w.finish();
  }

  // Trigram posting lists of folded names (rule 2), in the default order (a name search walks the
  // rarest one): the (trigram, participant) pairs go into a plain temporary table (appends), and one
  // index built afterwards (SQLite's external sort) gives them in list order; nothing
  // participant-sized is held in memory (the temporary database is on disk while rendering).
  db.exec('DROP TABLE IF EXISTS temp.participant_trigrams; CREATE TEMP TABLE participant_trigrams (t TEXT NOT NULL, first_seen_at INTEGER NOT NULL, pid TEXT NOT NULL, participant_id INTEGER NOT NULL)');
  try {
    const ins = db.prepare('INSERT INTO temp.participant_trigrams (t, first_seen_at, pid, participant_id) VALUES (?, ?, ?, ?)');
    const insertBatch = db.transaction((rows: BatchRow[]) => {
      for (const r of rows) for (const t of trigramsOf(foldName(r.name!))) ins.run(t, r.first_seen_at, r.pid, r.participant_id);
    });
    for (const rows of participantBatches(ctx, 'AND name IS NOT NULL')) insertBatch(rows);
    db.exec('CREATE INDEX temp.participant_trigrams_order ON participant_trigrams (t, first_seen_at DESC, pid DESC)');
    const cols = LIST_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ');
    const sql = `SELECT g.t AS "group", ${cols} FROM temp.participant_trigrams g JOIN participant_list l ON l.participant_id = g.participant_id ORDER BY g.t, g.first_seen_at DESC, g.pid DESC`;
    writeDefaultOrderLists(ctx, db.prepare(sql).iterate() as IterableIterator<ListRow & { group: string }>, trigramPartition, seatNames);
  } finally {
    db.exec('DROP TABLE IF EXISTS temp.participant_trigrams');
  }
}

/**
 * Each participant's record (src/api/participant-record.ts), its one object under `v1/participants`:
 * the detail and the first pages of its history and events at default parameters (null when empty);
 * and, when its history or events hold more than `perParticipantListMin` items, that list as a stored
 * list (partition `[id]`). All of them belong to the participant's render unit (forEachParticipant).
 */
export function renderParticipantsDetail(ctx: RenderContext, opts: ParticipantRenderOptions = DEFAULTS): void {
  ctx.forEachParticipant((r) => {
    const participant = viewOf(ctx.db, r.pid);
    if (participant === null) throw new Error(`${DETAIL_ROUTE}: ${r.pid} has no view`);
    const history = firstPageOf(ctx, HISTORY_ROUTE, r.pid);
    const events = firstPageOf(ctx, EVENTS_ROUTE, r.pid);
    const record: ParticipantRecord = { participant, history, events };
    ctx.exact(['v1', 'participants', r.pid], record);
    renderPerParticipant(ctx, HISTORY_ROUTE, r, history, opts);
    renderPerParticipant(ctx, EVENTS_ROUTE, r, events, opts);
  });
}

/** The first page of a participant's events or history at default parameters, null when empty. */
function firstPageOf(ctx: RenderContext, route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE, pid: string): RecordPage | null {
  const first = (route === EVENTS_ROUTE ? participantsEvents : participantsHistory)(ctx.db, { id: pid, limit: LIMIT_DEFAULT }, ctx.nowMs);
  if (first.status !== 200) throw new Error(`${route}: ${pid} has no first page`);
  const page = first.body as RecordPage;
  // Most participants have no events (98,548 of 101,062 at the medium demo): null, not an empty page.
  return page.items.length === 0 ? null : page;
}

/** A participant's events or history as a stored list, when it holds more than `perParticipantListMin` items. */
function renderPerParticipant(ctx: RenderContext, route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE, r: ParticipantUnit, first: RecordPage | null, opts: ParticipantRenderOptions): void {
  if (first === null) return;
  // A first page without next_cursor is the whole list; otherwise count (a participant with more than a page).
  const count =
    first.next_cursor === null
      ? first.items.length
      : (statement(ctx.db, route === EVENTS_ROUTE ? 'SELECT count(*) FROM events WHERE participant_id = ?' : 'SELECT count(*) FROM participant_history WHERE participant_id = ?')
          .pluck()
          .get(r.participant_id) as number);
  if (count <= opts.perParticipantListMin) return;
  const order = orderOf(ROUTES[route].list!, {});
  const w = ctx.list(route, [r.pid], dirsOf(order));
  if (route === EVENTS_ROUTE) {
    for (const { item } of participantEvents(ctx.db, r.pid)) {
      const e = { id: item.id, type: item.type, observed_at: tsOf(item.observed_at), payload: item.payload };
      w.add(e, sortKeyOf(order, e) as SortKey);
    }
  } else {
    for (const { item } of participantHistory(ctx.db, r.pid)) {
      const h = { fact: item.fact, valid_from: tsOf(item.valid_from), valid_to: tsOrNull(item.valid_to), detail: item.detail };
      w.add(h, sortKeyOf(order, h) as SortKey);
    }
  }
  w.finish();
}

export function renderStatsParticipants(ctx: RenderContext): void {
  ctx.exact(['v1', 'stats', 'participants'], statsOf(ctx.db, ctx.nowMs));
}

/** The family's renderers, by route id; `opts` for tests (per-participant lists at any size). */
export function participantRenderers(opts: Partial<ParticipantRenderOptions> = {}): Record<string, (ctx: RenderContext) => void> {
  const o = { ...DEFAULTS, ...opts };
  return {
    [LIST_ROUTE]: renderParticipantsList,
    // One renderer writes each participant's record (detail, first pages of history and events) and
    // its stored lists; the events and history routes have no files of their own to render.
    [DETAIL_ROUTE]: (ctx) => renderParticipantsDetail(ctx, o),
    [EVENTS_ROUTE]: () => {},
    [HISTORY_ROUTE]: () => {},
    [STATS_ROUTE]: renderStatsParticipants,
  };
}

export const PARTICIPANT_RENDERERS = participantRenderers();
