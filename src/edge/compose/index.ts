// One composer per data route id (src/api/routes/table.ts): answers from snapshot files alone. Edge-safe.
//
// Before any composer, a request with the default query of a route whose answers the snapshot holds as
// exact files (RouteDef.exactFile) is answered by that file; so composers see only the other requests.
import type { AnyParams } from '../../api/handlers.js';
import { exactFilePath } from '../../api/paths.js';
import { ok, type ApiResult } from '../../api/result.js';
import { canonicalQuery, pathSegments } from '../../api/routes/request.js';
import type { AnyRoute } from '../../api/routes/types.js';
import { SnapshotFormatError, type ReadFile, type ReadStats } from '../list-reader.js';
import { EVENTS_COMPOSERS } from './events.js';
import { HOSTS_COMPOSERS } from './hosts.js';
import { PROVIDERS_COMPOSERS } from './providers.js';
import { PARTICIPANT_COMPOSERS } from './participants.js';
import { notFoundOfRoute } from './scan.js';
import { Source } from './source.js';
import type { Inflate } from '../stored.js';
import type { AnyComposeFn, Composers } from './types.js';

/** Every data route's composer; `satisfies` makes a missing or mistyped one a compile error. */
export const COMPOSERS = {
  ...EVENTS_COMPOSERS,
  ...PARTICIPANT_COMPOSERS,
  ...HOSTS_COMPOSERS,
  ...PROVIDERS_COMPOSERS,
} satisfies Composers;

/** The composer of a route id known only at run time; throws for a route without one. */
export function composerOf(routeId: string): AnyComposeFn {
  if (!Object.hasOwn(COMPOSERS, routeId)) throw new Error(`route ${routeId} has no composer`);
  // The one widening of the typed registry: callers pass parameters that parseRequest produced from
  // this route's ParamDefs, which is the ParamsOf<I> the composer was written for.
  return COMPOSERS[routeId as keyof typeof COMPOSERS] as AnyComposeFn;
}

/** The exact file of a request's path; missing: the route's 404 for its first path parameter, else a broken snapshot. */
async function exactAnswer(route: AnyRoute, params: AnyParams, src: Source): Promise<ApiResult> {
  const segments = pathSegments(route, params);
  const body = await src.exact(segments);
  if (body !== null) return ok(body);
  if (route.notFound === undefined || route.notFound.length === 0) throw new SnapshotFormatError(`missing snapshot file ${exactFilePath(segments)}`);
  return notFoundOfRoute(route, params);
}

export interface ComposeOptions {
  read: ReadFile;
  /** The snapshot's clock: manifest.generated_at in ms. */
  nowMs: number;
  /** Receives the files, bytes and chunks read for this answer. */
  stats?: ReadStats;
  /** Decodes a file stored gzip-encoded; default DecompressionStream (src/edge/stored.ts). */
  inflate?: Inflate;
}

/** Answers a request of a route from the snapshot's files, counting what it reads into `opts.stats`. */
export async function compose(route: AnyRoute, params: AnyParams, opts: ComposeOptions): Promise<ApiResult> {
  const src = new Source(opts.read, opts.nowMs, opts.stats, opts.inflate);
  try {
    if (route.exactFile && canonicalQuery(route, params, { now: opts.nowMs }) === '') return await exactAnswer(route, params, src);
    return await composerOf(route.id)(params, src);
  } finally {
    await src.finish();
  }
}
