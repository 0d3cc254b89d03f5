// The types of the route table (src/api/routes/table.ts): parameters, list descriptors, cross-parameter
// rules and routes. Data only, edge-safe.
import type { Direction } from '../sort-keys.js';
import type { ParamProblem, ParamType } from '../params.js';
import type { NotFoundKind } from '../problems.js';
import type { ResourceName } from '../schemas/index.js';

// ---------------------------------------------------------------------------------------------
// Parameters

export interface ParamDef<T = unknown, Always extends boolean = boolean, In extends 'path' | 'query' = 'path' | 'query'> {
  readonly in: In;
  readonly type: ParamType<T>;
  /** A required query parameter: absent or empty is a 400 (missing-parameter). Path parameters are always present. */
  readonly required: boolean;
  /** Value used when the parameter is absent. */
  readonly default?: T;
  readonly description: string;
  /** Problem of an invalid value: query parameters invalid-parameter / invalid-cursor; path parameters per route. */
  readonly invalid: ParamProblem;
  /** Phantom: true when the parsed value is never undefined (required or defaulted). */
  readonly _always?: Always;
}

export type ParamMap = Readonly<Record<string, ParamDef>>;

export type ParsedParams<P extends ParamMap> = {
  -readonly [K in keyof P]: P[K] extends ParamDef<infer T, infer A> ? (A extends true ? T : T | undefined) : never;
};

// ---------------------------------------------------------------------------------------------
// List descriptors (data only)

/** One field of a sort key: the item field it is read from, its type, and its direction. */
export interface KeyFieldSpec {
  readonly field: string;
  /** ts: an ISO timestamp field, keyed as epoch ms; date: YYYY-MM-DD string; int/number; string (code-point order). */
  readonly type: 'ts' | 'date' | 'int' | 'number' | 'string';
  readonly dir: Direction;
  /** Null sorts last in both directions (src/api/sort-keys.ts). */
  readonly nullable?: boolean;
}

/** An order of a list; the last field is unique within a partition, so the order is total. */
export interface OrderSpec {
  readonly fields: readonly KeyFieldSpec[];
}

/**
 * A filter over items: `facet` names the value set each item carries for it (an item field, or a
 * relation the renderer attaches to each item, such as every hostname an event relates to).
 * eq: the item's value equals the parameter; any: the item's value (or one of its values) is in the
 * parameter's list; search: the `q` rules of the participant list.
 */
export interface FilterSpec {
  readonly param: string;
  readonly facet: string;
  readonly match: 'eq' | 'any' | 'search';
}

/** A bound on a sort key field by a range parameter (ge: at or after, lt: before, le: at or before). */
export interface BoundSpec {
  readonly param: string;
  readonly field: string;
  readonly op: 'ge' | 'gt' | 'le' | 'lt';
}

export interface ListSpec {
  /** Parameters whose canonical values select one stored list (path parameters, or the order parameter). */
  readonly partition: readonly string[];
  /** Orders by name; `orderParam` picks one, else there is exactly one named "default". */
  readonly orders: Readonly<Record<string, OrderSpec>>;
  readonly orderParam?: string;
  readonly filters: readonly FilterSpec[];
  readonly bounds: readonly BoundSpec[];
  /** cursor: keyset pages of `limit` items; none: every item in one response (`next_cursor` null). */
  readonly pagination: 'cursor' | 'none';
  /** The parameter carrying a newer-direction cursor (event feed `prev_cursor`): items just above it. */
  readonly newer?: { readonly param: string };
  /** Facets of `meta`, sent on the first page only (no cursor, no prev_cursor). */
  readonly meta?: { readonly facets: readonly string[] };
  /** Most items of an unpaginated list. */
  readonly maxItems?: number;
}

// ---------------------------------------------------------------------------------------------
// Cross-parameter rules (data only)

export type Rule =
  /** `from` must not be after `to` (both present after defaults). */
  | { readonly kind: 'not-after'; readonly from: string; readonly to: string }
  /** At most one of the two parameters. */
  | { readonly kind: 'exclusive'; readonly params: readonly [string, string] }
  /** Date window defaults: `to` = today (UTC) when absent, `from` = `to` − (days − 1) when absent. */
  | { readonly kind: 'date-window'; readonly from: string; readonly to: string; readonly days: number }
  /** At most `days` calendar days from `from` to `to`, both included (date parameters, after the defaults). */
  | { readonly kind: 'max-span'; readonly from: string; readonly to: string; readonly days: number };

// ---------------------------------------------------------------------------------------------
// Routes

export interface RouteDef<P extends ParamMap = ParamMap, E extends boolean = boolean> {
  readonly id: string;
  readonly method: 'GET';
  /** Path pattern; `{name}` is one path segment (the OpenAPI path template). */
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  readonly params: P;
  readonly response: ResourceName;
  readonly contentType: string;
  /** Keyless in every access mode (spec "Authentication"): its path matches a pattern of config KEYLESS_PATHS. */
  readonly keyless: boolean;
  /** Takes `limit` and `cursor`. */
  readonly paginated: boolean;
  readonly list?: ListSpec;
  /** Point-in-time parameter: the answer is the state in force at that instant (omitted: current state). */
  readonly asOf?: string;
  readonly rules?: readonly Rule[];
  /** 404s the route answers for a well-formed but unknown resource (spec "Errors" 3). */
  readonly notFound?: readonly NotFoundKind[];
  /**
   * The snapshot holds the answer to every request with the default query (canonicalQuery '') as the
   * exact file of its path (src/api/paths.ts), so the shim reads that file before any composer: a
   * missing one is the route's first 404 kind, or a broken snapshot for a route without a 404.
   */
  readonly exactFile: E;
}

export type AnyRoute = RouteDef<ParamMap>;

