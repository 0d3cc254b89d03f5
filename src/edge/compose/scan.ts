// The page of a route's stored list, driven by the route's list descriptor (ListSpec in
// src/api/routes/types.ts). Edge-safe. From the descriptor and the request's parameters one scan
// derives where the page starts (after the cursor, and past the bounds that lie before the range in
// list order), where it stops (the first key past a bound that lies after it), which items match (the
// `eq` and `any` filters) and which index entries it passes over unread (those whose facet counts
// hold no accepted value, for the facets the list's index counts). A route's composer only says how
// its stored items read (StoredList) and, where it has one, which list a request reads.
import type { AnyParams, ComposedRouteId, ParamsOf } from '../../api/handlers.js';
import { compareKeys, keysAfter, type SortKey } from '../../api/sort-keys.js';
import { pageBody, unpaginatedPage, type PageBody } from '../../api/page.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { listPartition, orderDirs, routeOrder, sortKeyOf } from '../../api/routes/request.js';
import type { AnyRoute, BoundSpec, KeyFieldSpec } from '../../api/routes/types.js';
import { facetCount, type IndexEntry } from '../list-format.js';
import { composePage, SnapshotFormatError, type ListReader, type PageRequest } from '../list-reader.js';
import type { Source } from './source.js';
import { ROUTES } from '../../api/routes/table.js';
import type { ComposeFn } from './types.js';

/** How the items of a route's stored lists read. */
export interface StoredList<P = AnyParams> {
  /** The value (or values) of a filter's facet on a stored item at `key`. */
  facet(item: unknown, key: SortKey, facet: string): string | readonly string[];
  /** Facets the lists' index entries count: a filter on one of them skips entries without its values. */
  readonly counted: readonly string[];
  /** The published item of a stored one (default: as stored). */
  item?(stored: unknown, key: SortKey, params: P): unknown;
  /**
   * Which index entries a request passes over unread, where the index counts more than single facets
   * (default: an entry whose count of a counted facet's accepted values is zero).
   */
  skip?(params: P): ((entry: IndexEntry) => boolean) | undefined;
  /**
   * The list's first page at default parameters where the snapshot holds it in another file (a
   * participant's record): undefined when the resource is unknown (the route's 404), null when the
   * list is empty. A request without filters or bounds whose answer lies within it is paged from it,
   * without reading the list.
   */
  firstPage?(params: P, src: Source): Promise<PageBody<Readonly<Record<string, unknown>>> | null | undefined>;
}

/** The values a filter accepts, printed as the stored facets hold them; undefined when the filter is not set. */
function accepted(route: AnyRoute, param: string, params: AnyParams): readonly string[] | undefined {
  const v = params[param];
  if (v === undefined) return undefined;
  // A list parameter's parsed value is its values; any other prints as one value.
  return Array.isArray(v) ? v.map(String) : [route.params[param]!.type.print(v)];
}

/** Where a bound lies in list order: before the range (the page starts past it) or after it (the page stops). */
function boundTest(field: KeyFieldSpec, b: BoundSpec, value: unknown): { where: 'start' | 'stop'; past: (k: SortKey) => boolean } {
  // Bounds are timestamps (ms) or dates (YYYY-MM-DD) after parsing.
  if (typeof value !== 'number' && typeof value !== 'string') throw new Error(`bound ${b.param} is not a number or a date`);
  const cmp = (k: SortKey): number => compareKeys([k[0] ?? null], [value], ['asc']);
  // Along the list the leading field ascends or descends; lower bounds (ge, gt) lie at its start when
  // it ascends, at its end when it descends, and upper bounds (le, lt) the other way round.
  const lower = b.op === 'ge' || b.op === 'gt';
  const outside = (k: SortKey): boolean => {
    const c = cmp(k);
    return b.op === 'ge' ? c < 0 : b.op === 'gt' ? c <= 0 : b.op === 'le' ? c > 0 : c >= 0;
  };
  return { where: lower === (field.dir === 'asc') ? 'start' : 'stop', past: outside };
}

/** The key of the request's cursor (parseRequest checked that it fits the list's order). */
function cursorKey(params: AnyParams): SortKey | undefined {
  const c = params.cursor;
  return typeof c === 'object' && c !== null && 'key' in c && Array.isArray(c.key) ? c.key : undefined;
}

/** The scan of a request over one of the route's stored lists (without the limit). */
export function scanOf<P extends AnyParams>(route: AnyRoute, params: P, stored: StoredList<P>): Omit<PageRequest, 'limit'> & { start: (key: SortKey) => boolean } {
  const list = route.list;
  if (!list) throw new Error(`route ${route.id} has no list`);
  const order = routeOrder(route, params);
  const afterCursor = keysAfter(orderDirs(order), cursorKey(params));
  const starts: Array<(k: SortKey) => boolean> = [];
  const stops: Array<(k: SortKey) => boolean> = [];
  for (const b of list.bounds) {
    const v = params[b.param];
    if (v === undefined) continue;
    if (order.fields[0]?.field !== b.field) throw new Error(`route ${route.id}: bound ${b.param} is not on the leading key field`);
    const t = boundTest(order.fields[0], b, v);
    (t.where === 'start' ? starts : stops).push(t.past);
  }
  const filters = list.filters.flatMap((f) => {
    if (f.match === 'search') throw new Error(`route ${route.id}: a search filter needs a composer of its own`);
    const values = accepted(route, f.param, params);
    return values === undefined ? [] : [{ facet: f.facet, values }];
  });
  const counted = filters.filter((f) => stored.counted.includes(f.facet));
  return {
    start: (k) => afterCursor(k) && !starts.some((past) => past(k)),
    stop: stops.length === 0 ? undefined : (k) => stops.some((past) => past(k)),
    match:
      filters.length === 0
        ? undefined
        : (item, k) =>
            filters.every((f) => {
              const v = stored.facet(item, k, f.facet);
              return typeof v === 'string' ? f.values.includes(v) : v.some((x) => f.values.includes(x));
            }),
    skip: stored.skip
      ? stored.skip(params)
      : counted.length === 0
        ? undefined
        : (e: IndexEntry) => counted.some((f) => f.values.every((v) => facetCount(e.counts, f.facet, v) === 0)),
  };
}

/** The route's 404 for the value of its first path parameter (an unknown resource). */
export function notFoundOfRoute(route: AnyRoute, params: AnyParams): ApiResult {
  const kind = route.notFound?.[0];
  const id = Object.keys(route.params).find((name) => route.params[name]!.in === 'path');
  if (kind === undefined || id === undefined) throw new Error(`route ${route.id} has no 404`);
  return notFoundOf(kind, route.params[id]!.type.print(params[id]));
}

/**
 * A page of `list` for a request of `route`: `limit` items (an unpaginated list: at most its
 * maxItems) in the route's envelope.
 */
export async function pageOf<P extends AnyParams>(route: AnyRoute, params: P, list: ListReader, stored: StoredList<P>): Promise<ApiResult> {
  const spec = route.list;
  if (!spec) throw new Error(`route ${route.id} has no list`);
  const paged = spec.pagination === 'cursor';
  // Every paginated route declares `limit` (LIMIT in src/api/routes/table.ts): a number after parsing.
  const limit = paged ? Number(params.limit) : spec.maxItems ?? Number.MAX_SAFE_INTEGER;
  const page = await composePage(list, { ...scanOf(route, params, stored), limit });
  const items = stored.item ? page.items.map((x, i) => stored.item!(x, page.keys[i]!, params)) : page.items;
  return ok(paged ? pageBody(route.id, listPartition(route, params), items, page.keys, page.more) : unpaginatedPage(items));
}

/** The stored list a request reads: a route id and partition values. */
export interface ListSource {
  routeId: string;
  partition: readonly string[];
}

/**
 * The composer of a list route whose pages need no planning of their own: the stored list of the
 * request's partition, paged by its descriptor. `source` may name another list (null: the resource
 * is unknown, the route's 404); then a missing list is the empty page. Without `source` a missing list
 * is the route's 404 when it has one (an unknown resource), else the empty page.
 */
export function listComposer<I extends ComposedRouteId>(
  id: I,
  stored: StoredList<ParamsOf<I>>,
  source?: (params: ParamsOf<I>, src: Source) => ListSource | null | Promise<ListSource | null>,
): ComposeFn<I> {
  const route: AnyRoute = ROUTES[id];
  const empty = (params: AnyParams): ApiResult => ok(route.list!.pagination === 'cursor' ? pageBody(route.id, listPartition(route, params), [], [], false) : unpaginatedPage([]));
  return async (params, src) => {
    let known = false;
    if (stored.firstPage) {
      const first = await stored.firstPage(params, src);
      if (first === undefined) return notFoundOfRoute(route, params);
      if (first === null) return empty(params);
      const answer = fromFirstPage(route, params, first, stored);
      if (answer !== null) return ok(answer);
      known = true;
    }
    const named = source === undefined ? undefined : await source(params, src);
    if (named === null) return notFoundOfRoute(route, params);
    const from = named ?? { routeId: route.id, partition: listPartition(route, params) };
    const list = await src.list(from.routeId, from.partition);
    if (list !== null) return pageOf(route, params, list, stored);
    if (known) throw new SnapshotFormatError(`missing list ${from.routeId} ${from.partition.join('/')}: its first page says more items follow`);
    if (named === undefined && route.notFound !== undefined && route.notFound.length > 0) return notFoundOfRoute(route, params);
    return empty(params);
  };
}

/**
 * The page of a request without filters or bounds from the list's first page: the items after the
 * cursor in it begin the answer, which it holds when it holds the whole list or `limit` of them (then
 * more follow); null otherwise.
 */
function fromFirstPage<P extends AnyParams>(route: AnyRoute, params: P, first: PageBody<Readonly<Record<string, unknown>>>, stored: StoredList<P>): PageBody<unknown> | null {
  const spec = route.list!;
  if (spec.filters.some((f) => params[f.param] !== undefined) || spec.bounds.some((b) => params[b.param] !== undefined)) return null;
  const order = routeOrder(route, params);
  // Without filters and bounds the scan's start is the cursor's alone.
  const afterCursor = scanOf(route, params, stored).start;
  const rest = first.items.map((item) => ({ item, key: sortKeyOf(order, item) })).filter((e) => afterCursor(e.key));
  const whole = first.next_cursor === null;
  const limit = Number(params.limit);
  if (!whole && rest.length < limit) return null;
  const page = rest.slice(0, limit);
  return pageBody(route.id, listPartition(route, params), page.map((e) => e.item), page.map((e) => e.key), rest.length > limit || !whole);
}
