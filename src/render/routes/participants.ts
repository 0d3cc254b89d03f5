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
import type { RenderContext } from '../context.js';
import { renderParticipantsList } from './participant-lists.js';

export interface ParticipantRenderOptions {
  /** A participant's events or history are also written as a list when they hold more items than this. */
  perParticipantListMin: number;
}
const DEFAULTS: ParticipantRenderOptions = { perParticipantListMin: LIMIT_DEFAULT };

export function renderParticipantsDetail(ctx: RenderContext): void {
  ctx.forEachParticipant((r) => ctx.exact(['v1', 'participants', r.pid], viewOf(ctx.db, r.pid)));
}

/** True for a page without items (`{"items":[],"next_cursor":null}`). */
function isEmptyPage(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'items' in body && Array.isArray(body.items) && body.items.length === 0;
}

function renderPerParticipant(ctx: RenderContext, route: typeof EVENTS_ROUTE | typeof HISTORY_ROUTE, opts: ParticipantRenderOptions): void {
  const order = orderOf(ROUTES[route].list!, {});
  const dirs = dirsOf(order);
  const segment = route === EVENTS_ROUTE ? 'events' : 'history';
  const query = route === EVENTS_ROUTE ? participantsEvents : participantsHistory;
  const count = ctx.db.prepare(route === EVENTS_ROUTE ? 'SELECT count(*) FROM events WHERE participant_id = ?' : 'SELECT count(*) FROM participant_history WHERE participant_id = ?').pluck();
  ctx.forEachParticipant((r) => {
    const first = query(ctx.db, { id: r.pid, limit: LIMIT_DEFAULT }, ctx.nowMs);
    if (first.status !== 200) throw new Error(`${route}: ${r.pid} has no first page`);
    // An empty list gets no file: the shim answers the empty page from the participant's detail file
    // (most participants have no events: 98,548 of 101,062 at the medium demo).
    if (isEmptyPage(first.body)) return;
    ctx.exact(['v1', 'participants', r.pid, segment], first.body);
    if ((count.get(r.participant_id) as number) <= opts.perParticipantListMin) return;
    const w = ctx.list(route, [r.pid], dirs);
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
  });
}

export function renderStatsParticipants(ctx: RenderContext): void {
  ctx.exact(['v1', 'stats', 'participants'], statsOf(ctx.db, ctx.nowMs));
}

/** The family's renderers, by route id; `opts` for tests (per-participant lists at any size). */
export function participantRenderers(opts: Partial<ParticipantRenderOptions> = {}): Record<string, (ctx: RenderContext) => void> {
  const o = { ...DEFAULTS, ...opts };
  return {
    [LIST_ROUTE]: renderParticipantsList,
    [DETAIL_ROUTE]: renderParticipantsDetail,
    [EVENTS_ROUTE]: (ctx) => renderPerParticipant(ctx, EVENTS_ROUTE, o),
    [HISTORY_ROUTE]: (ctx) => renderPerParticipant(ctx, HISTORY_ROUTE, o),
    [STATS_ROUTE]: renderStatsParticipants,
  };
}

export const PARTICIPANT_RENDERERS = participantRenderers();
