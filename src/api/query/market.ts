// The oracle of the providers / access points / seats / churn family: answers straight from SQLite
// through the derivation readers (src/derive/providers/read.ts, src/derive/churn.ts).
import type { Db } from '../../db/index.js';
import { apChurn, churnParticipants, defaultChurnPeriod, type ChurnCategory } from '../../derive/churn.js';
import { apDetail, apsList, providerDetail, providersList, seatView } from '../../derive/providers/read.js';
import { unpaginatedPage, withApiSince } from '../market-shared.js';
import { notFoundOf, ok, type ApiResult } from '../result.js';
import type { Params, QueryFn } from './types.js';

function window(params: Params, nowMs: number): { from: string; to: string } {
  const d = defaultChurnPeriod(nowMs);
  const to = (params.to as string | undefined) ?? d.to;
  // `from` defaults to 29 days before `to` (parseRequest fills both; this keeps direct calls honest).
  const from = (params.from as string | undefined) ?? new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
  return { from, to };
}

export const providersListQuery: QueryFn = (db: Db) => ok(unpaginatedPage(providersList(db)));

export const providersDetailQuery: QueryFn = (db, params) => {
  const slug = params.slug as string;
  const p = providerDetail(db, slug);
  if (p === null) return notFoundOf('provider', slug);
  return ok({ ...p, seats: p.seats.map((s) => ({ seat_id: s.seat_id, hosts: s.hosts.map(withApiSince) })) });
};

export const apsListQuery: QueryFn = (db, _params, nowMs) => ok(unpaginatedPage(apsList(db, nowMs)));

export const apsDetailQuery: QueryFn = (db, params) => {
  const key = params.key as string;
  const d = apDetail(db, key);
  return d === null ? notFoundOf('access-point', key) : ok(d);
};

export const apsChurnQuery: QueryFn = (db, params, nowMs): ApiResult => {
  const key = params.key as string;
  const { from, to } = window(params, nowMs);
  const v = apChurn(db, key, from, to);
  return v === null ? notFoundOf('churn', key) : ok(v);
};

export const apsChurnParticipantsQuery: QueryFn = (db, params, nowMs): ApiResult => {
  const key = params.key as string;
  const { from, to } = window(params, nowMs);
  const rows = churnParticipants(db, key, params.category as ChurnCategory, from, to);
  return rows === null ? notFoundOf('access-point', key) : ok(unpaginatedPage(rows));
};

export const seatsDetailQuery: QueryFn = (db, params) => {
  const id = params.seatId as string;
  const v = seatView(db, id);
  return v === null ? notFoundOf('seat', id) : ok({ ...v, hosts: v.hosts.map(withApiSince) });
};

export const MARKET_QUERIES: Record<string, QueryFn> = {
  'providers.list': providersListQuery,
  'providers.detail': providersDetailQuery,
  'aps.list': apsListQuery,
  'aps.detail': apsDetailQuery,
  'aps.churn': apsChurnQuery,
  'aps.churn_participants': apsChurnParticipantsQuery,
  'seats.detail': seatsDetailQuery,
};
