// The shim's side of one route: canonical parameters -> answer, from snapshot files only. Edge-safe.
import type { AnyParams, ComposedRouteId, ParamsOf } from '../../api/handlers.js';
import type { ApiResult } from '../../api/result.js';
import type { Source } from './source.js';

/** The composer of route `I`: its parsed parameters (ParsedParams of its ParamDefs) and the request's Source. */
export type ComposeFn<I extends ComposedRouteId> = (params: ParamsOf<I>, src: Source) => Promise<ApiResult>;

/**
 * Composers of some routes, each typed by its route id. Routes whose every answer is an exact file
 * (ExactOnlyRouteId) have none: src/edge/compose/index.ts reads the file.
 */
export type Composers<Ids extends ComposedRouteId = ComposedRouteId> = { readonly [I in Ids]: ComposeFn<I> };

/** A composer called with parameters parsed for its route at run time (dispatch by route id). */
export type AnyComposeFn = (params: AnyParams, src: Source) => Promise<ApiResult>;
