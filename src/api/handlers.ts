// The typed shape of a route's handlers: the oracle's query (src/api/query) and the shim's composer
// (src/edge/compose) of every data route take that route's parsed parameters (ParsedParams of its
// ParamDefs), so a missing or mistyped handler is a compile error. Edge-safe.
import type { Route, RouteId } from './routes/table.js';
import type { ParsedParams } from './routes/types.js';

/** Routes answered by the HTTP layer, served as files, or generated from code (the problem type pages), not by a query and a composer. */
type SelfAnsweredRouteId = 'health' | 'health.db' | 'discovery.openapi' | 'discovery.api_catalog' | 'discovery.problem_type';

/** The routes with a query in the oracle and a composer in the shim. */
export type DataRouteId = Exclude<RouteId, SelfAnsweredRouteId>;

/** The names of a parameter map's query parameters. */
type QueryParamName<P> = { [K in keyof P]: P[K] extends { readonly in: 'query' } ? K : never }[keyof P];

/**
 * Data routes whose every request is answered by its exact file (RouteDef.exactFile, no query
 * parameters): they need no composer.
 */
export type ExactOnlyRouteId = {
  [I in DataRouteId]: Route<I> extends { readonly exactFile: true } ? ([QueryParamName<Route<I>['params']>] extends [never] ? I : never) : never;
}[DataRouteId];

/** The data routes with a composer of their own. */
export type ComposedRouteId = Exclude<DataRouteId, ExactOnlyRouteId>;

/** The parameters of a request of route `I`, as parseRequest gives them. */
export type ParamsOf<I extends RouteId> = ParsedParams<Route<I>['params']>;

/** Parameters of some route, seen from code that dispatches on the route id at run time. */
export type AnyParams = Readonly<Record<string, unknown>>;

const SELF_ANSWERED: ReadonlySet<string> = new Set<SelfAnsweredRouteId>(['health', 'health.db', 'discovery.openapi', 'discovery.api_catalog', 'discovery.problem_type']);

/** True for a route id with a query and a composer. */
export function isDataRoute(id: string): id is DataRouteId {
  return !SELF_ANSWERED.has(id);
}
