// The oracle: one query function per data route id (src/api/routes/table.ts), answering from SQLite.
import type { Db } from '../../db/index.js';
import { isDataRoute, type AnyParams } from '../handlers.js';
import type { ApiResult } from '../result.js';
import { EVENTS_QUERIES } from '../events/query.js';
import { HOSTS_QUERIES } from '../hosts/query.js';
import { PROVIDERS_QUERIES } from '../providers/query.js';
import { PARTICIPANT_QUERIES } from '../participants/query.js';
import type { AnyQueryFn, Queries } from './types.js';

/** Every data route's query; `satisfies` makes a missing or mistyped one a compile error. */
export const QUERIES = {
  ...PARTICIPANT_QUERIES,
  ...HOSTS_QUERIES,
  ...PROVIDERS_QUERIES,
  ...EVENTS_QUERIES,
} satisfies Queries;

/** The query of a route id known only at run time; throws for a route without one. */
export function queryOf(routeId: string): AnyQueryFn {
  if (!isDataRoute(routeId)) throw new Error(`route ${routeId} has no query`);
  // The one widening of the typed registry: callers pass parameters that parseRequest (or the route's
  // defaults) produced from this route's ParamDefs, which is the ParamsOf<I> the query was written for.
  return QUERIES[routeId] as AnyQueryFn;
}

/** Runs a route's query over parameters parsed for that route. */
export function runQuery(routeId: string, db: Db, params: AnyParams, nowMs: number): ApiResult {
  return queryOf(routeId)(db, params, nowMs);
}
