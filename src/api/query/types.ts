// The oracle's signature: parameters -> answer, straight from SQLite (docs/architecture.md §5, "Correctness oracle").
import type { Db } from '../../db/index.js';
import type { AnyParams, DataRouteId, ParamsOf } from '../handlers.js';
import type { ApiResult } from '../result.js';

/**
 * The query of route `I`: its parsed parameters (ParsedParams of the route's ParamDefs) -> answer.
 * `nowMs` is the snapshot's clock (`build --now`, published as manifest.generated_at), never the wall
 * clock, so the shim (which reads generated_at) and the oracle agree on "the last 24 hours", "today"
 * and staleness.
 */
export type QueryFn<I extends DataRouteId> = (db: Db, params: ParamsOf<I>, nowMs: number) => ApiResult;

/** Queries of some routes, each typed by its route id. */
export type Queries<Ids extends DataRouteId = DataRouteId> = { readonly [I in Ids]: QueryFn<I> };

/** A query called with parameters parsed for its route at run time (dispatch by route id). */
export type AnyQueryFn = (db: Db, params: AnyParams, nowMs: number) => ApiResult;
