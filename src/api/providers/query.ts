// The oracle of the providers / access points / seats / churn family: answers straight from SQLite
// through the derivation readers (src/derive/providers/read.ts, src/derive/churn.ts).
import type { Db } from '../../db/index.js';
import { apChurn, churnParticipants } from '../../derive/churn.js';
import { apDetail, apsList, providerDetail, providersList, seatView } from '../../derive/providers/read.js';
import { withApiSince } from './views.js';
import { notFoundOf, ok, type ApiResult } from '../result.js';
import type { Queries, QueryFn } from '../query/types.js';
import { unpaginatedPage } from '../page.js';

export const providersListQuery: QueryFn<'providers.list'> = (db: Db) => ok(unpaginatedPage(providersList(db)));

export const providersDetailQuery: QueryFn<'providers.detail'> = (db, params) => {
  const slug = params.slug;
  const p = providerDetail(db, slug);
  if (p === null) return notFoundOf('provider', slug);
  return ok({ ...p, seats: p.seats.map((s) => ({ seat_id: s.seat_id, hosts: s.hosts.map(withApiSince) })) });
};

export const apsListQuery: QueryFn<'aps.list'> = (db, _params, nowMs) => ok(unpaginatedPage(apsList(db, nowMs)));

export const apsDetailQuery: QueryFn<'aps.detail'> = (db, params) => {
  const key = params.key;
  const d = apDetail(db, key);
  return d === null ? notFoundOf('access-point', key) : ok(d);
};

export const apsChurnQuery: QueryFn<'aps.churn'> = (db, { key, from, to }): ApiResult => {
  const v = apChurn(db, key, from, to);
  return v === null ? notFoundOf('churn', key) : ok(v);
};

export const apsChurnParticipantsQuery: QueryFn<'aps.churn_participants'> = (db, { key, category, from, to }): ApiResult => {
  const rows = churnParticipants(db, key, category, from, to);
  return rows === null ? notFoundOf('access-point', key) : ok(unpaginatedPage(rows));
};

export const seatsDetailQuery: QueryFn<'seats.detail'> = (db, params) => {
  const id = params.seatId;
  const v = seatView(db, id);
  return v === null ? notFoundOf('seat', id) : ok({ ...v, hosts: v.hosts.map(withApiSince) });
};

export const PROVIDERS_QUERIES = {
  'providers.list': providersListQuery,
  'providers.detail': providersDetailQuery,
  'aps.list': apsListQuery,
  'aps.detail': apsDetailQuery,
  'aps.churn': apsChurnQuery,
  'aps.churn_participants': apsChurnParticipantsQuery,
  'seats.detail': seatsDetailQuery,
} satisfies Partial<Queries>;
