// Renders the participants family into the snapshot (docs/snapshot-format.md "Participants"):
// - each participant's record (its detail and the first pages of its events and history at default
//   parameters, null when empty; src/api/participants/record.ts) in its record pack
//   `f/participants/records/<pack>.json`, and its events or history as a stored list when it holds
//   more than one default page;
// - `v1/stats/participants`;
// - the lists of `/v1/participants` and their first page: src/render/routes/participant-lists.ts.
// A participant's lists are its render unit, a record pack the pack's (RenderContext.forEachRecordPack:
// an incremental build renders only the changed participants, and writes only their packs again).
import { LIMIT_DEFAULT } from '../../api/params.js';
import { DETAIL_ROUTE, EVENTS_ROUTE, HISTORY_ROUTE, LIST_ROUTE, STATS_ROUTE } from '../../api/participants/plan.js';
import { apiViewOf, eventsPageOf, historyPageOf, statsOf } from '../../api/participants/query.js';
import type { SortKey } from '../../api/sort-keys.js';
import { orderDirs, orderOf, sortKeyOf } from '../../api/routes/request.js';
import { ROUTES } from '../../api/routes/table.js';
import { participantEvents, participantHistory, participantRowsOf, type ParticipantRows, type SeatProvider } from '../../derive/participants/read.js';
import { compareIds, recordPackUnit, type ParticipantUnit, type RenderContext } from '../context.js';
import { RECORD_PACK_FORMAT, recordPackPath, type ParticipantRecord, type RecordPage } from '../../api/participants/record.js';
import { statement } from '../../db/statements.js';
import { INDEX_LISTS_PART, renderParticipantIndexLists, renderParticipantsList, renderShortNameLists, SHORT_LISTS_PART, TRIGRAM_WRITERS_MAX } from './participant-lists.js';
import { apiTs, apiTsOrNull } from '../../api/time.js';
import { GRAMS_PART, renderGrams } from '../grams.js';

export interface ParticipantRenderOptions {
  /** A participant's events or history are also written as a list when they hold more items than this. */
  perParticipantListMin: number;
  /** Most trigram lists written at once (src/render/routes/participant-lists.ts TRIGRAM_WRITERS_MAX). */
  trigramWritersMax: number;
}
const DEFAULTS: ParticipantRenderOptions = { perParticipantListMin: LIMIT_DEFAULT, trigramWritersMax: TRIGRAM_WRITERS_MAX };

/**
 * Each participant's record (src/api/participants/record.ts: the detail and the first pages of its
 * history and events at default parameters, null when empty), in its record pack; and, when its
 * history or events hold more than `perParticipantListMin` items, that list as a stored list
 * (partition `[id]`). A participant's lists belong to its render unit, a pack to the pack's
 * (forEachRecordPack): a pack holds the records rendered now and those kept from its previous file.
 */
export function renderParticipantsDetail(ctx: RenderContext, opts: ParticipantRenderOptions = DEFAULTS): void {
  const providers = new Map<string, SeatProvider>();
  let batch = new Map<number, ParticipantRows>();
  ctx.forEachRecordPack(
    ({ pack, units, kept }) => {
      const records = new Map<string, string>(kept);
      for (const r of units) {
        const rows = batch.get(r.participant_id);
        if (rows === undefined) throw new Error(`${DETAIL_ROUTE}: ${r.pid} has no view`);
        const record = recordOf(r.pid, rows);
        records.set(r.pid, JSON.stringify(record));
        ctx.inUnit(r.participant_id, () => {
          renderPerParticipant(ctx, HISTORY_ROUTE, r, record.history, opts);
          renderPerParticipant(ctx, EVENTS_ROUTE, r, record.events, opts);
        });
      }
      if (records.size === 0) return;
      ctx.recordsReport.packs++;
      ctx.recordsReport.rendered += units.length;
      ctx.recordsReport.kept += kept.size;
      ctx.inUnit(recordPackUnit(pack), () => ctx.sink.put(recordPackPath(pack), packBody(records), 'application/json', 'mutable'));
    },
    (units) => {
      batch = participantRowsOf(ctx.db, units.map((u) => u.participant_id).sort((a, b) => a - b), RECORD_HEAD, providers);
    },
  );
}

const enc = new TextEncoder();

/** A record pack's bytes: its records (JSON texts) by id in code-point order (src/api/participants/record.ts RecordPack). */
export function packBody(records: ReadonlyMap<string, string>): Uint8Array {
  const ids = [...records.keys()].sort(compareIds);
  return enc.encode(`{"format":${JSON.stringify(RECORD_PACK_FORMAT)},"records":{${ids.map((id) => `${JSON.stringify(id)}:${records.get(id)!}`).join(',')}}}`);
}

/** The items of a participant's history or events a record is built from: a page and one more, to know whether more follow. */
export const RECORD_HEAD = LIMIT_DEFAULT + 1;

/** A participant's record from its rows (participantRowsOf with RECORD_HEAD items a list). */
export function recordOf(pid: string, rows: ParticipantRows): ParticipantRecord {
  return {
    participant: apiViewOf(rows.view),
    history: recordPage(historyPageOf(pid, rows.history, LIMIT_DEFAULT)),
    events: recordPage(eventsPageOf(pid, rows.events, LIMIT_DEFAULT)),
  };
}

/** A record's first page: the oracle's answer at default parameters, null when empty. */
export function recordPage(page: RecordPage): RecordPage | null {
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
  const w = ctx.list(route, [r.pid], orderDirs(order));
  if (route === EVENTS_ROUTE) {
    for (const { item } of participantEvents(ctx.db, r.pid)) {
      const e = { id: item.id, type: item.type, observed_at: apiTs(item.observed_at), payload: item.payload };
      w.add(e, sortKeyOf(order, e) as SortKey);
    }
  } else {
    for (const { item } of participantHistory(ctx.db, r.pid)) {
      const h = { fact: item.fact, valid_from: apiTs(item.valid_from), valid_to: apiTsOrNull(item.valid_to), detail: item.detail };
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
    [LIST_ROUTE]: (ctx) => renderParticipantsList(ctx, o.trigramWritersMax),
    // Not a route: a part of LIST_ROUTE that a full build's worker renders (src/render/offload.ts).
    [INDEX_LISTS_PART]: renderParticipantIndexLists,
    // And the short name lists, likewise.
    [SHORT_LISTS_PART]: (ctx) => renderShortNameLists(ctx, o.trigramWritersMax),
    // Not a route either: the grams index of participants.list, on the worker where there is one.
    [GRAMS_PART]: renderGrams,
    // One renderer writes each participant's record (detail, first pages of history and events) and
    // its stored lists; the events and history routes have no files of their own to render.
    [DETAIL_ROUTE]: (ctx) => renderParticipantsDetail(ctx, o),
    [EVENTS_ROUTE]: () => {},
    [HISTORY_ROUTE]: () => {},
    [STATS_ROUTE]: renderStatsParticipants,
  };
}

export const PARTICIPANT_RENDERERS = participantRenderers();
