// Renders the providers / access points / seats / churn family (src/api/providers/views.ts for the layout):
// - exact files: /v1/providers, /v1/providers/{slug}, /v1/aps, /v1/aps/{key} and
//   /v1/aps/{key}/churn (default window) for every current AND stale key (a stale key's file holds the
//   canonical answer), /v1/seats/{seatId};
// - lists: `aps.churn` per canonical key (one row per UTC day with churn) and `aps.churn_participants`
//   per canonical key and category.
// Bodies are the oracle's answers (src/api/providers/query.ts), so exact files equal the oracle by construction.
import { CHURN_CATEGORIES, defaultChurnPeriod } from '../../derive/churn.js';
import { churnDailyByIdentity, churnFactsByIdentity } from '../../derive/churn-lists.js';
import {
  CHURN_DAY_DIRS,
  CHURN_PARTICIPANT_DIRS,
  churnDayKey,
  churnParticipantKey,
  type ChurnDayRow,
  type ChurnParticipantRow,
} from '../../api/providers/views.js';
import type { ParamsOf } from '../../api/handlers.js';
import { PROVIDERS_QUERIES } from '../../api/providers/query.js';
import type { Queries } from '../../api/query/types.js';
import type { RenderContext } from '../context.js';

type ProvidersRouteId = keyof typeof PROVIDERS_QUERIES;
const QUERY: Queries<ProvidersRouteId> = PROVIDERS_QUERIES;

function answer<I extends ProvidersRouteId>(ctx: RenderContext, routeId: I, params: ParamsOf<I>): unknown | null {
  const r = QUERY[routeId](ctx.db, params, ctx.nowMs);
  return r.status === 200 ? r.body : null;
}

function renderProvidersList(ctx: RenderContext): void {
  ctx.exact(['v1', 'providers'], answer(ctx, 'providers.list', {}));
}

function renderProvidersDetail(ctx: RenderContext): void {
  for (const slug of ctx.db.prepare('SELECT slug FROM curated_providers ORDER BY slug').pluck().iterate() as Iterable<string>) {
    const body = answer(ctx, 'providers.detail', { slug });
    if (body !== null) ctx.exact(['v1', 'providers', slug], body);
  }
}

function renderApsList(ctx: RenderContext): void {
  ctx.exact(['v1', 'aps'], answer(ctx, 'aps.list', {}));
}

/** Every key a request may name: current identities and stale aliases. */
function allApKeys(ctx: RenderContext): string[] {
  // Thousands of keys at the peppol scale (identities and aliases), not participant-sized.
  return ctx.db.prepare('SELECT key FROM ap_identities UNION SELECT alias FROM ap_key_aliases ORDER BY 1').pluck().all() as string[];
}

function renderApsDetail(ctx: RenderContext): void {
  for (const key of allApKeys(ctx)) {
    const body = answer(ctx, 'aps.detail', { key });
    if (body !== null) ctx.exact(['v1', 'aps', key], body);
  }
}

function renderApsChurn(ctx: RenderContext): void {
  // Default-window exact files for every key with churn (stale keys included): the window parseRequest
  // fills for a request without from / to (the trailing 30 UTC days ending on the snapshot's day).
  const { from, to } = defaultChurnPeriod(ctx.nowMs);
  for (const key of allApKeys(ctx)) {
    const body = answer(ctx, 'aps.churn', { key, from, to });
    if (body !== null) ctx.exact(['v1', 'aps', key, 'churn'], body);
  }
  // Day rows per canonical key.
  let owner: string | null = null;
  let list: ReturnType<RenderContext['list']> | null = null;
  let day: ChurnDayRow | null = null;
  const flushDay = (): void => {
    if (day && list) {
      day.counterparts.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      list.add(day, churnDayKey(day));
    }
    day = null;
  };
  for (const r of churnDailyByIdentity(ctx.db)) {
    if (r.owner !== owner) {
      flushDay();
      list?.finish();
      owner = r.owner;
      list = ctx.list('aps.churn', [owner], [...CHURN_DAY_DIRS]);
    }
    if (!day || day.day !== r.day) {
      flushDay();
      day = { day: r.day, joiners: 0, movers_in: 0, movers_out: 0, leavers: 0, counterparts: [] };
    }
    const d: ChurnDayRow = day;
    if (r.category === 'joiner') d.joiners += r.n;
    else if (r.category === 'leaver') d.leavers += r.n;
    else {
      let c = d.counterparts.find((x) => x.key === r.ckey);
      if (!c) d.counterparts.push((c = { key: r.ckey!, name: r.cname!, won: 0, lost: 0 }));
      if (r.category === 'mover_in') {
        d.movers_in += r.n;
        c.won += r.n;
      } else {
        d.movers_out += r.n;
        c.lost += r.n;
      }
    }
  }
  flushDay();
  list?.finish();
}

function renderChurnParticipants(ctx: RenderContext): void {
  for (const category of CHURN_CATEGORIES) {
    let owner: string | null = null;
    let list: ReturnType<RenderContext['list']> | null = null;
    for (const r of churnFactsByIdentity(ctx.db, category)) {
      if (r.owner !== owner) {
        list?.finish();
        owner = r.owner;
        list = ctx.list('aps.churn_participants', [owner, category], [...CHURN_PARTICIPANT_DIRS]);
      }
      const row: ChurnParticipantRow = {
        p: { id: r.id, scheme: r.scheme, value: r.value, day: r.day, counterpart_key: r.counterpart_key, counterpart_name: r.counterpart_name },
        event_id: r.event_id,
      };
      list!.add(row, churnParticipantKey(row));
    }
    list?.finish();
  }
}

function renderSeats(ctx: RenderContext): void {
  for (const seatId of ctx.db.prepare('SELECT seat_id FROM seat_identities ORDER BY seat_id').pluck().all() as string[]) {
    const body = answer(ctx, 'seats.detail', { seatId });
    if (body !== null) ctx.exact(['v1', 'seats', seatId], body);
  }
}

export const PROVIDERS_RENDERERS: Record<string, (ctx: RenderContext) => void> = {
  'providers.list': renderProvidersList,
  'providers.detail': renderProvidersDetail,
  'aps.list': renderApsList,
  'aps.detail': renderApsDetail,
  'aps.churn': renderApsChurn,
  'aps.churn_participants': renderChurnParticipants,
  'seats.detail': renderSeats,
};
