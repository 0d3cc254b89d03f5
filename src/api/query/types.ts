// The oracle's signature: parameters -> answer, straight from SQLite (DESIGN §5 "Correctness oracle").
import type { Db } from '../../db/index.js';
import type { ApiResult } from '../result.js';

/** Canonical parameters of one request: path parameters and parsed query parameters by name. */
export type Params = Readonly<Record<string, unknown>>;

/**
 * `nowMs` is the snapshot's clock (`build --now`, published as manifest.generated_at), never the wall
 * clock, so the shim (which reads generated_at) and the oracle agree on "the last 24 hours", "today"
 * and staleness.
 */
export type QueryFn = (db: Db, params: Params, nowMs: number) => ApiResult;
