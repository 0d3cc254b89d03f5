// Composers of the providers / access points / seats / churn family: answers from snapshot files only.
// Edge-safe (no Node imports). Layout and rules: src/api/market-shared.ts, src/render/routes/market.ts.
import { compareKeys, type SortKey } from '../../api/keys.js';
import {
  CHURN_DAY_DIRS,
  churnViewFromDays,
  unpaginatedPage,
  type ChurnDayRow,
  type ChurnParticipantRow,
} from '../../api/market-shared.js';
import { exactFilePath, listRootPath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { canonicalQuery, ROUTES } from '../../api/routes.js';
import { CHURN_PARTICIPANTS_MAX } from '../../api/schemas/constants.js';
import { composePage, ListReader } from '../list-reader.js';
import type { ComposeContext, ComposeFn, Params } from './types.js';

const dec = new TextDecoder();

/** Reads and parses one snapshot file, counting it in the request's stats; null when absent. */
export async function readJson(ctx: ComposeContext, path: string): Promise<unknown | null> {
  const body = await ctx.read(path);
  if (body === null) return null;
  ctx.stats.files++;
  ctx.stats.bytes += body.length;
  return JSON.parse(dec.decode(body)) as unknown;
}

/** Opens a list and adds its reads to the request's stats when done (call `done`). */
export async function openList(ctx: ComposeContext, routeId: string, partition: readonly string[]): Promise<{ list: ListReader; done: () => void } | null> {
  const list = await ListReader.open(ctx.read, listRootPath(routeId, partition));
  if (list === null) return null;
  return {
    list,
    done: () => {
      ctx.stats.files += list.stats.files;
      ctx.stats.bytes += list.stats.bytes;
      ctx.stats.chunks += list.stats.chunks;
    },
  };
}

/** A single-resource route: its exact file, or the route's 404. */
function exactOr404(segments: (p: Params) => string[], kind: Parameters<typeof notFoundOf>[0], id: (p: Params) => string): ComposeFn {
  return async (params, ctx) => {
    const body = await readJson(ctx, exactFilePath(segments(params)));
    return body === null ? notFoundOf(kind, id(params)) : ok(body);
  };
}

/** A route without parameters: always its exact file. */
function exactAlways(segments: string[]): ComposeFn {
  return async (_params, ctx) => {
    const body = await readJson(ctx, exactFilePath(segments));
    if (body === null) throw new Error(`snapshot file ${exactFilePath(segments)} is missing`);
    return ok(body);
  };
}

/** The canonical key and name of an AP key (stale keys resolve), from the aps.detail exact file. */
async function apIdentity(ctx: ComposeContext, key: string): Promise<{ key: string; name: string } | null> {
  const d = (await readJson(ctx, exactFilePath(['v1', 'aps', key]))) as { key: string; name: string } | null;
  return d === null ? null : { key: d.key, name: d.name };
}

const composeChurn: ComposeFn = async (params, ctx): Promise<ApiResult> => {
  const key = params.key as string;
  if (canonicalQuery(ROUTES['aps.churn'], params, { now: ctx.nowMs }) === '') {
    const body = await readJson(ctx, exactFilePath(['v1', 'aps', key, 'churn']));
    return body === null ? notFoundOf('churn', key) : ok(body);
  }
  const from = params.from as string;
  const to = params.to as string;
  const id = await apIdentity(ctx, key);
  if (id === null) return notFoundOf('churn', key);
  const opened = await openList(ctx, 'aps.churn', [id.key]);
  // No list: the identity has no churn on any day (404 per spec "Errors" 3).
  if (opened === null) return notFoundOf('churn', key);
  const dirs = [...CHURN_DAY_DIRS];
  const rows: ChurnDayRow[] = [];
  for await (const { key: k, item } of opened.list.scan({ start: (k) => compareKeys(k, [from], dirs) >= 0 })) {
    if (compareKeys(k, [to], dirs) > 0) break;
    rows.push(item as ChurnDayRow);
  }
  opened.done();
  return ok(churnViewFromDays(id.key, id.name, from, to, rows));
};

const composeChurnParticipants: ComposeFn = async (params, ctx): Promise<ApiResult> => {
  const key = params.key as string;
  const id = await apIdentity(ctx, key);
  if (id === null) return notFoundOf('access-point', key);
  const opened = await openList(ctx, 'aps.churn_participants', [id.key, params.category as string]);
  if (opened === null) return ok(unpaginatedPage([]));
  const from = params.from as string;
  const to = params.to as string;
  // Newest day first: start at the first row of day <= to, stop before the first row of day < from.
  const page = await composePage(opened.list, {
    start: (k: SortKey) => (k[0] as string) <= to,
    stop: (k: SortKey) => (k[0] as string) < from,
    limit: CHURN_PARTICIPANTS_MAX,
  });
  opened.done();
  return ok(unpaginatedPage((page.items as ChurnParticipantRow[]).map((r) => r.p)));
};

export const MARKET_COMPOSERS: Record<string, ComposeFn> = {
  'providers.list': exactAlways(['v1', 'providers']),
  'providers.detail': exactOr404((p) => ['v1', 'providers', p.slug as string], 'provider', (p) => p.slug as string),
  'aps.list': exactAlways(['v1', 'aps']),
  'aps.detail': exactOr404((p) => ['v1', 'aps', p.key as string], 'access-point', (p) => p.key as string),
  'aps.churn': composeChurn,
  'aps.churn_participants': composeChurnParticipants,
  'seats.detail': exactOr404((p) => ['v1', 'seats', p.seatId as string], 'seat', (p) => p.seatId as string),
};
