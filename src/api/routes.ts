// The route table: THE single description of every endpoint (docs/architecture.md §2; docs/api.md, "Routes").
// The renderer enumerates it, the edge shim dispatches on it, the OpenAPI document is generated from it.
// Edge-safe and zod-free: the schemas' enumerations come from schemas/constants.ts, response schemas by name.
//
// Per route: a stable id, the path pattern (OpenAPI template syntax, `{name}` = one path segment),
// the parameters (path parameters in path order, then query parameters; each with its type, default
// and description), the response schema (a RESOURCE_SCHEMAS name), the 404 kinds, whether the route is
// keyless and paginated, cross-parameter rules, and — for lists and ranges — a data-only `list`
// descriptor: the partition (parameters selecting one stored list), the orders (sort key fields,
// directions, the last field a unique tiebreak), which parameters filter items and which bound the
// sort key, and whether `meta` is sent (first page only).
import { KEYLESS_PATHS } from '../config/patterns.js';
import type { CursorPosition } from './cursor.js';
import type { Direction, SortKey } from './keys.js';
import {
  booleanType,
  countryItem,
  cursorType,
  dateType,
  enumItem,
  enumType,
  hostFilterType,
  hostnameItem,
  hostnameType,
  LIMIT_DEFAULT,
  limitType,
  listType,
  locationType,
  participantIdType,
  patternType,
  schemeItem,
  seatFilterType,
  seatIdType,
  seatItem,
  textType,
  timestampType,
  addDays,
  utcDay,
  type ParamError,
  type ParamProblem,
  type ParamType,
} from './params.js';
import { NOT_FOUND_PROBLEMS, PROBLEM_CATALOGUE, type NotFoundKind, type ProblemName } from './problems.js';
import { JSON_CONTENT_TYPE, LINKSET_CONTENT_TYPE } from './json.js';
import {
  AP_KEY_PATTERN,
  CHURN_CATEGORIES,
  CHURN_PARTICIPANTS_MAX,
  DETECTORS,
  EVENT_TYPES,
  GRADES,
  INCIDENT_STATUSES,
  PARTICIPANT_SORTS,
  PROVENANCES,
  RESOLUTIONS,
} from './schemas/constants.js';
import type { ResourceName } from './schemas/index.js';

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

type ParamMap = Readonly<Record<string, ParamDef>>;

export type ParsedParams<P extends ParamMap> = {
  -readonly [K in keyof P]: P[K] extends ParamDef<infer T, infer A> ? (A extends true ? T : T | undefined) : never;
};

function pathParam<T>(type: ParamType<T>, description: string, invalid: ParamProblem): ParamDef<T, true, 'path'> {
  return { in: 'path', type, required: true, description, invalid };
}
function query<T>(type: ParamType<T>, description: string): ParamDef<T, false, 'query'> {
  return { in: 'query', type, required: false, description, invalid: type === (cursorType as ParamType<unknown>) ? 'invalid-cursor' : 'invalid-parameter' };
}
function queryDefault<T>(type: ParamType<T>, dflt: T, description: string): ParamDef<T, true, 'query'> {
  return { in: 'query', type, required: false, default: dflt, description, invalid: 'invalid-parameter' };
}
/** An optional query parameter that a `date-window` rule of its route fills when absent: always set after parsing. */
function windowQuery<T>(type: ParamType<T>, description: string): ParamDef<T, true, 'query'> {
  return { in: 'query', type, required: false, description, invalid: 'invalid-parameter' };
}
function queryRequired<T>(type: ParamType<T>, description: string): ParamDef<T, true, 'query'> {
  return { in: 'query', type, required: true, description, invalid: 'invalid-parameter' };
}

const LIMIT = queryDefault(limitType, LIMIT_DEFAULT, 'Page size, 1–200 (values outside are clamped), default 50.');
const CURSOR = query(cursorType, 'Opaque position from a previous next_cursor of the same list.');

// ---------------------------------------------------------------------------------------------
// List descriptors (data only)

/** One field of a sort key: the item field it is read from, its type, and its direction. */
export interface KeyFieldSpec {
  readonly field: string;
  /** ts: an ISO timestamp field, keyed as epoch ms; date: YYYY-MM-DD string; int/number; string (code-point order). */
  readonly type: 'ts' | 'date' | 'int' | 'number' | 'string';
  readonly dir: Direction;
  /** Null sorts last in both directions (src/api/keys.ts). */
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

/** Days from one YYYY-MM-DD date to another, both included (ISO date strings parse as UTC days). */
function daySpan(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
}

/** Groups the digits of a count in threes for a detail sentence (3652059 -> "3,652,059"). */
function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** One sentence saying what a rule asks of a request (OpenAPI operation descriptions, docs). */
export function ruleSentence(rule: Rule): string {
  switch (rule.kind) {
    case 'not-after':
      return `\`${rule.from}\` must not be after \`${rule.to}\`.`;
    case 'exclusive':
      return `\`${rule.params[0]}\` and \`${rule.params[1]}\` are mutually exclusive.`;
    case 'date-window':
      return `\`${rule.to}\` defaults to today (UTC, the snapshot's day) and \`${rule.from}\` to ${rule.days - 1} days before \`${rule.to}\`.`;
    case 'max-span':
      return `From \`${rule.from}\` to \`${rule.to}\`, both included, at most ${grouped(rule.days)} days; a longer window is a 400 (invalid-parameter).`;
  }
}

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
  /** Keyless in every access mode (spec "Authentication"; equals config KEYLESS_PATHS). */
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

function defineRoute<const P extends ParamMap, const E extends boolean = true>(
  r: Omit<RouteDef<P, E>, 'method' | 'contentType' | 'keyless' | 'exactFile'> & { contentType?: string; exactFile?: E },
): RouteDef<P, E> {
  // E is inferred from `exactFile` when given and is its default, true, when not.
  const exactFile = (r.exactFile ?? true) as E;
  return { method: 'GET', contentType: JSON_CONTENT_TYPE, keyless: KEYLESS_PATHS.includes(r.path), ...r, exactFile };
}

const one = (fields: KeyFieldSpec[]): Readonly<Record<string, OrderSpec>> => ({ default: { fields } });
const NEWEST_FIRST_EVENTS = one([
  { field: 'observed_at', type: 'ts', dir: 'desc' },
  { field: 'id', type: 'string', dir: 'desc' },
]);
const INCIDENT_ORDER = one([
  { field: 'started_at', type: 'ts', dir: 'desc' },
  { field: 'id', type: 'int', dir: 'desc' },
]);
const BUSIEST_FIRST = one([
  { field: 'participant_count', type: 'int', dir: 'desc' },
  { field: 'key', type: 'string', dir: 'asc' },
]);

/** Participant list orders (the `sort` values); `id` (canonical, unique) breaks ties in the same direction. */
const PARTICIPANT_ORDERS: Record<(typeof PARTICIPANT_SORTS)[number], OrderSpec> = {
  'first_seen.desc': { fields: [{ field: 'first_seen_at', type: 'ts', dir: 'desc' }, { field: 'id', type: 'string', dir: 'desc' }] },
  'first_seen.asc': { fields: [{ field: 'first_seen_at', type: 'ts', dir: 'asc' }, { field: 'id', type: 'string', dir: 'asc' }] },
  'name.asc': { fields: [{ field: 'name', type: 'string', dir: 'asc', nullable: true }, { field: 'id', type: 'string', dir: 'asc' }] },
  'name.desc': { fields: [{ field: 'name', type: 'string', dir: 'desc', nullable: true }, { field: 'id', type: 'string', dir: 'desc' }] },
  'country.asc': {
    fields: [
      { field: 'country', type: 'string', dir: 'asc', nullable: true },
      { field: 'name', type: 'string', dir: 'asc', nullable: true },
      { field: 'id', type: 'string', dir: 'asc' },
    ],
  },
  'country.desc': {
    fields: [
      { field: 'country', type: 'string', dir: 'desc', nullable: true },
      { field: 'name', type: 'string', dir: 'desc', nullable: true },
      { field: 'id', type: 'string', dir: 'desc' },
    ],
  },
};

const HOSTNAME_PATH = pathParam(hostnameType, 'Fully-qualified hostname of the host (case-insensitive; a trailing dot is ignored).', 'host-not-found');
const PARTICIPANT_PATH = pathParam(participantIdType, 'Participant identifier, canonical scheme::value (the full form iso6523-actorid-upis::scheme:value is accepted).', 'invalid-identifier');
const AP_KEY = new RegExp(AP_KEY_PATTERN);
const AP_KEY_EXPECTED = 'a provider key c-<slug>, o-<slug>-<hash> or s-<seatid>';

/**
 * The churn window of both churn routes: the trailing 30 days by default, at most 400 days (the series
 * has a point per day; 400 days hold a year and its seasons, and keep an answer near 50 KB).
 */
export const CHURN_WINDOW_DEFAULT_DAYS = 30;
export const CHURN_WINDOW_MAX_DAYS = 400;
const CHURN_RULES: readonly Rule[] = [
  { kind: 'date-window', from: 'from', to: 'to', days: CHURN_WINDOW_DEFAULT_DAYS },
  { kind: 'not-after', from: 'from', to: 'to' },
  { kind: 'max-span', from: 'from', to: 'to', days: CHURN_WINDOW_MAX_DAYS },
];

export const ROUTES = {
  health: defineRoute({
    id: 'health',
    path: '/health',
    tag: 'meta',
    summary: 'Liveness',
    description: 'Static marker; does not touch the database.',
    params: {},
    response: 'Health',
    paginated: false,
    exactFile: false,
  }),
  'health.db': defineRoute({
    id: 'health.db',
    path: '/health/db',
    tag: 'meta',
    summary: 'Database reachability',
    description: 'Proves the database (the snapshot) is reachable.',
    params: {},
    response: 'HealthDb',
    paginated: false,
    exactFile: false,
  }),
  network: defineRoute({
    id: 'network',
    path: '/v1/network',
    tag: 'network',
    summary: 'Network summary',
    description: 'Current host verdict counts, open incidents, anomalies in the last 24h.',
    params: {},
    response: 'NetworkSummary',
    paginated: false,
  }),
  'hosts.list': defineRoute({
    id: 'hosts.list',
    path: '/v1/hosts',
    tag: 'hosts',
    summary: 'Monitored hosts',
    description: 'Every monitored host with verdict, latest hourly all-locations latency and 24h uptime, ordered worst-first, plus a network-wide rollup.',
    params: {},
    response: 'HostsResponse',
    paginated: false,
  }),
  'hosts.detail': defineRoute({
    id: 'hosts.detail',
    path: '/v1/hosts/{hostname}',
    tag: 'hosts',
    summary: 'One host',
    description: 'The host\'s current state, or its state at the instant `at`.',
    params: {
      hostname: HOSTNAME_PATH,
      at: query(timestampType, 'Point in time (ISO 8601 date-time with Z or an offset); omitted returns the current state.'),
    },
    response: 'HostView',
    paginated: false,
    asOf: 'at',
    notFound: ['host'],
  }),
  'hosts.incidents': defineRoute({
    id: 'hosts.incidents',
    path: '/v1/hosts/{hostname}/incidents',
    tag: 'hosts',
    summary: 'Incidents of one host',
    description: 'Incidents of the host, newest first.',
    params: {
      hostname: HOSTNAME_PATH,
      status: query(enumType(INCIDENT_STATUSES), 'open or closed.'),
      since: query(timestampType, 'Incidents that started at or after this instant.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'IncidentPage',
    paginated: true,
    notFound: ['host'],
    list: {
      partition: ['hostname'],
      orders: INCIDENT_ORDER,
      filters: [{ param: 'status', facet: 'status', match: 'eq' }],
      bounds: [{ param: 'since', field: 'started_at', op: 'ge' }],
      pagination: 'cursor',
    },
  }),
  'hosts.uptime': defineRoute({
    id: 'hosts.uptime',
    path: '/v1/hosts/{hostname}/uptime',
    tag: 'hosts',
    summary: 'Uptime buckets of one host',
    description: 'Per-location buckets plus the __all__ rollup, windowed by [from, to), newest bucket first (locations in code-point order within a bucket).',
    params: {
      hostname: HOSTNAME_PATH,
      resolution: queryDefault(enumType(RESOLUTIONS), 'hourly', 'hourly, daily or monthly; default hourly.'),
      from: query(timestampType, 'Window start, inclusive; must not be after `to`.'),
      to: query(timestampType, 'Window end, exclusive.'),
      location: query(locationType, 'One probe location, or __all__ for the rollup across locations.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'UptimePage',
    paginated: true,
    notFound: ['host'],
    rules: [{ kind: 'not-after', from: 'from', to: 'to' }],
    list: {
      partition: ['hostname', 'resolution'],
      orders: one([
        { field: 'bucket_start', type: 'ts', dir: 'desc' },
        { field: 'location', type: 'string', dir: 'asc' },
      ]),
      filters: [{ param: 'location', facet: 'location', match: 'eq' }],
      bounds: [
        { param: 'from', field: 'bucket_start', op: 'ge' },
        { param: 'to', field: 'bucket_start', op: 'lt' },
      ],
      pagination: 'cursor',
    },
  }),
  'incidents.list': defineRoute({
    id: 'incidents.list',
    path: '/v1/incidents',
    tag: 'incidents',
    summary: 'Incidents',
    description: 'Host incidents across the network, newest first.',
    params: {
      host: query(hostFilterType, 'Only incidents of this hostname.'),
      status: query(enumType(INCIDENT_STATUSES), 'open or closed.'),
      since: query(timestampType, 'Incidents that started at or after this instant.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'IncidentPage',
    paginated: true,
    list: {
      partition: [],
      orders: INCIDENT_ORDER,
      filters: [
        { param: 'host', facet: 'hostname', match: 'eq' },
        { param: 'status', facet: 'status', match: 'eq' },
      ],
      bounds: [{ param: 'since', field: 'started_at', op: 'ge' }],
      pagination: 'cursor',
    },
  }),
  'participants.list': defineRoute({
    id: 'participants.list',
    path: '/v1/participants',
    tag: 'participants',
    summary: 'Participants',
    description: 'Keyset-paginated participant list with filters and search; `meta` (counts and facets) on the first page only. A filtered page examines at most 256 participants of its source list and may hold fewer than `limit` items (even none) with a `next_cursor`: follow it until it is null. A list filter of more than 8 values is matched item by item (a lone `smp` or `ap` filter of more values then has `filter_count` null), and a name search looks up at most 8 of its trigrams.',
    params: {
      sort: queryDefault(enumType(PARTICIPANT_SORTS), 'first_seen.desc', 'Order: first_seen.desc (default), first_seen.asc, name.asc, name.desc, country.asc, country.desc.'),
      country: query(listType('countries', countryItem, false), 'Comma-separated ISO country codes (current card country).'),
      scheme: query(listType('schemes', schemeItem, false), 'Comma-separated identifier schemes.'),
      smp: query(listType('hostnames', hostnameItem, false), 'Comma-separated current SMP hostnames.'),
      ap: query(listType('seats', seatItem, false), 'Comma-separated serving SeatIDs.'),
      registered: query(booleanType, 'Current SML registration: true or false.'),
      provenance: query(enumType(PROVENANCES), 'directory or discovered.'),
      q: query(textType, 'Search: a scheme::value or bare identifier value matches the identifier index; other text is a case-insensitive name-contains match.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'ParticipantListPage',
    paginated: true,
    list: {
      partition: ['sort'],
      orders: PARTICIPANT_ORDERS,
      orderParam: 'sort',
      filters: [
        { param: 'country', facet: 'country', match: 'any' },
        { param: 'scheme', facet: 'scheme', match: 'any' },
        { param: 'smp', facet: 'smp', match: 'any' },
        { param: 'ap', facet: 'ap', match: 'any' },
        { param: 'registered', facet: 'registered', match: 'eq' },
        { param: 'provenance', facet: 'provenance', match: 'eq' },
        { param: 'q', facet: 'q', match: 'search' },
      ],
      bounds: [],
      pagination: 'cursor',
      meta: { facets: ['country', 'scheme', 'registered', 'provenance', 'smp', 'ap'] },
    },
  }),
  'participants.detail': defineRoute({
    id: 'participants.detail',
    path: '/v1/participants/{id}',
    tag: 'participants',
    summary: 'One participant',
    description: 'The participant\'s directory presence, registration, card, endpoints and seats.',
    params: { id: PARTICIPANT_PATH },
    response: 'ParticipantView',
    paginated: false,
    exactFile: false,
    notFound: ['participant'],
  }),
  'participants.events': defineRoute({
    id: 'participants.events',
    path: '/v1/participants/{id}/events',
    tag: 'participants',
    summary: 'Change events of one participant',
    description: 'The participant\'s change events, newest first.',
    params: { id: PARTICIPANT_PATH, limit: LIMIT, cursor: CURSOR },
    response: 'ParticipantEventPage',
    paginated: true,
    exactFile: false,
    notFound: ['participant'],
    list: { partition: ['id'], orders: NEWEST_FIRST_EVENTS, filters: [], bounds: [], pagination: 'cursor' },
  }),
  'participants.history': defineRoute({
    id: 'participants.history',
    path: '/v1/participants/{id}/history',
    tag: 'participants',
    summary: 'Fact history of one participant',
    description: 'Validity intervals of the directory, card, registration and SMP facts, newest first.',
    params: { id: PARTICIPANT_PATH, limit: LIMIT, cursor: CURSOR },
    response: 'ParticipantHistoryPage',
    paginated: true,
    exactFile: false,
    notFound: ['participant'],
    list: {
      partition: ['id'],
      orders: one([
        { field: 'valid_from', type: 'ts', dir: 'desc' },
        { field: 'fact', type: 'string', dir: 'asc' },
      ]),
      filters: [],
      bounds: [],
      pagination: 'cursor',
    },
  }),
  'stats.participants': defineRoute({
    id: 'stats.participants',
    path: '/v1/stats/participants',
    tag: 'participants',
    summary: 'Participant statistics',
    description: 'Global facet counts from the hourly rollup plus an estimated total.',
    params: {},
    response: 'ParticipantStats',
    paginated: false,
  }),
  'providers.list': defineRoute({
    id: 'providers.list',
    path: '/v1/providers',
    tag: 'providers',
    summary: 'Member registry',
    description: 'Providers with role flags, country, mapped hostnames and participant counts, busiest first. Not paginated.',
    params: {},
    response: 'ProviderPage',
    paginated: false,
    list: { partition: [], orders: BUSIEST_FIRST, filters: [], bounds: [], pagination: 'none' },
  }),
  'providers.detail': defineRoute({
    id: 'providers.detail',
    path: '/v1/providers/{slug}',
    tag: 'providers',
    summary: 'One curated provider',
    description: 'A verified provider with its seats and their hosts.',
    params: { slug: pathParam(patternType('slug', /^[a-z0-9][a-z0-9-]{0,99}$/, 'a provider slug [a-z0-9-]', 'lower'), 'Provider slug.', 'provider-not-found') },
    response: 'ProviderDetailView',
    paginated: false,
    notFound: ['provider'],
  }),
  'aps.list': defineRoute({
    id: 'aps.list',
    path: '/v1/aps',
    tag: 'access points',
    summary: 'Access point providers',
    description: 'Every provider in its serving role with member seats and current roster size, busiest first. Not paginated.',
    params: {},
    response: 'ApPage',
    paginated: false,
    list: { partition: [], orders: BUSIEST_FIRST, filters: [], bounds: [], pagination: 'none' },
  }),
  'aps.detail': defineRoute({
    id: 'aps.detail',
    path: '/v1/aps/{key}',
    tag: 'access points',
    summary: 'One access point provider',
    description: 'A stale key resolves to the current provider; the returned key is always the canonical current one.',
    params: { key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED), 'Provider key: c-<slug>, o-<slug>-<hash> or s-<seatid>.', 'access-point-not-found') },
    response: 'ApProviderDetail',
    paginated: false,
    notFound: ['access-point'],
  }),
  'aps.churn': defineRoute({
    id: 'aps.churn',
    path: '/v1/aps/{key}/churn',
    tag: 'access points',
    summary: 'Churn of one access point provider',
    description: `Joiners, movers and leavers per UTC day over [from, to]: the trailing ${CHURN_WINDOW_DEFAULT_DAYS} days by default, at most ${CHURN_WINDOW_MAX_DAYS} days.`,
    params: {
      key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED), 'Provider key.', 'churn-not-found'),
      from: windowQuery(dateType, `First UTC day, inclusive; default ${CHURN_WINDOW_DEFAULT_DAYS - 1} days before \`to\`; at most ${CHURN_WINDOW_MAX_DAYS - 1} days before \`to\`.`),
      to: windowQuery(dateType, 'Last UTC day, inclusive; default today (UTC, the snapshot\'s day).'),
    },
    response: 'ApChurnView',
    paginated: false,
    notFound: ['churn'],
    rules: CHURN_RULES,
  }),
  'aps.churn_participants': defineRoute({
    id: 'aps.churn_participants',
    path: '/v1/aps/{key}/churn/participants',
    tag: 'access points',
    summary: 'Participants behind one churn count',
    description: `At most ${CHURN_PARTICIPANTS_MAX} rows, newest day first; never paginated (\`next_cursor\` null). The window [from, to] is the trailing ${CHURN_WINDOW_DEFAULT_DAYS} days by default, at most ${CHURN_WINDOW_MAX_DAYS} days.`,
    params: {
      key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED), 'Provider key.', 'access-point-not-found'),
      category: queryRequired(enumType(CHURN_CATEGORIES), 'Required: joiner, mover_in, mover_out or leaver.'),
      from: windowQuery(dateType, `First UTC day, inclusive; default ${CHURN_WINDOW_DEFAULT_DAYS - 1} days before \`to\`; at most ${CHURN_WINDOW_MAX_DAYS - 1} days before \`to\`.`),
      to: windowQuery(dateType, 'Last UTC day, inclusive; default today (UTC).'),
    },
    response: 'ChurnParticipantPage',
    paginated: false,
    exactFile: false,
    notFound: ['access-point'],
    rules: CHURN_RULES,
    list: {
      partition: ['key', 'category'],
      orders: one([
        { field: 'day', type: 'date', dir: 'desc' },
        { field: 'id', type: 'string', dir: 'asc' },
      ]),
      filters: [],
      bounds: [
        { param: 'from', field: 'day', op: 'ge' },
        { param: 'to', field: 'day', op: 'le' },
      ],
      pagination: 'none',
      maxItems: CHURN_PARTICIPANTS_MAX,
    },
  }),
  'seats.detail': defineRoute({
    id: 'seats.detail',
    path: '/v1/seats/{seatId}',
    tag: 'seats',
    summary: 'One seat',
    description: 'The seat\'s provider (verified mapping or unverified fallback) and hosts.',
    params: { seatId: pathParam(seatIdType, 'Seat id (certificate CN), e.g. PBE000123; case-insensitive.', 'seat-not-found') },
    response: 'SeatView',
    paginated: false,
    notFound: ['seat'],
  }),
  'events.list': defineRoute({
    id: 'events.list',
    path: '/v1/events',
    tag: 'events',
    summary: 'Change events',
    description: 'Change events across the network, newest first, with the anomalies each triggered. `cursor` walks toward older events; `prev_cursor` returns the events just newer than it (live polling). A page filtered by two or more types, or by `type`, `seat` or `host` besides the list it reads, examines at most 101 events from the first event of a wanted type and may hold fewer than `limit`: follow the cursors until they are null.',
    params: {
      type: query(listType('event-types', enumItem(EVENT_TYPES, 'change-event types'), true), 'Comma-separated change-event types; a single value is valid.'),
      host: query(hostFilterType, 'Events relating to this hostname.'),
      seat: query(seatFilterType, 'Events relating to this seat id.'),
      participant: query(participantIdType, 'Events of this participant (scheme::value).'),
      since: query(timestampType, 'Events observed at or after this instant.'),
      until: query(timestampType, 'Events observed at or before this instant.'),
      prev_cursor: query(cursorType, 'Newer-direction cursor (a previous prev_cursor): events newer than it. Not with `cursor`.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'EventFeedPage',
    paginated: true,
    rules: [
      { kind: 'not-after', from: 'since', to: 'until' },
      { kind: 'exclusive', params: ['cursor', 'prev_cursor'] },
    ],
    list: {
      partition: [],
      orders: NEWEST_FIRST_EVENTS,
      filters: [
        { param: 'type', facet: 'type', match: 'any' },
        { param: 'host', facet: 'hosts', match: 'eq' },
        { param: 'seat', facet: 'seats', match: 'eq' },
        { param: 'participant', facet: 'participant', match: 'eq' },
      ],
      bounds: [
        { param: 'since', field: 'observed_at', op: 'ge' },
        { param: 'until', field: 'observed_at', op: 'le' },
      ],
      pagination: 'cursor',
      newer: { param: 'prev_cursor' },
      meta: { facets: ['type'] },
    },
  }),
  'anomalies.list': defineRoute({
    id: 'anomalies.list',
    path: '/v1/anomalies',
    tag: 'anomalies',
    summary: 'Anomalies',
    description: 'Anomalies raised by the detectors, newest first. The filters combine (an anomaly matches when it meets all of them). Every page holds `limit` anomalies whenever that many more match, under any combination of filters, and carries `next_cursor` exactly when more match.',
    params: {
      detector: query(enumType(DETECTORS), 'One detector.'),
      grade: query(enumType(GRADES), 'notice or warning.'),
      host: query(hostFilterType, 'Anomalies whose target involves this hostname.'),
      seat: query(seatFilterType, 'Anomalies whose target involves this seat id.'),
      acknowledged: query(booleanType, 'true or false.'),
      since: query(timestampType, 'Anomalies observed at or after this instant.'),
      limit: LIMIT,
      cursor: CURSOR,
    },
    response: 'AnomalyPage',
    paginated: true,
    list: {
      partition: [],
      orders: NEWEST_FIRST_EVENTS,
      filters: [
        { param: 'detector', facet: 'detector', match: 'eq' },
        { param: 'grade', facet: 'grade', match: 'eq' },
        { param: 'host', facet: 'hosts', match: 'eq' },
        { param: 'seat', facet: 'seats', match: 'eq' },
        { param: 'acknowledged', facet: 'acknowledged', match: 'eq' },
      ],
      bounds: [{ param: 'since', field: 'observed_at', op: 'ge' }],
      pagination: 'cursor',
    },
  }),
  'anomalies.detail': defineRoute({
    id: 'anomalies.detail',
    path: '/v1/anomalies/{id}',
    tag: 'anomalies',
    summary: 'One anomaly',
    description: 'An anomaly with its target, evidence, event references and acknowledgement.',
    params: { id: pathParam(patternType('anomaly-id', /^[a-z0-9][a-z0-9-]{0,99}$/, 'an anomaly id such as "cis-0123456789abcdef"', 'lower'), 'Anomaly id.', 'anomaly-not-found') },
    response: 'AnomalyView',
    paginated: false,
    notFound: ['anomaly'],
  }),
  sml: defineRoute({
    id: 'sml',
    path: '/v1/sml',
    tag: 'sml',
    summary: 'SML/SMK zones',
    description: 'One entry per monitored zone with quorum verdict, per-location canaries, DNAME cutover state, management-host TLS snapshot and zone incidents.',
    params: {},
    response: 'SmlResponse',
    paginated: false,
  }),
  'discovery.openapi': defineRoute({
    id: 'discovery.openapi',
    path: '/openapi.json',
    tag: 'meta',
    summary: 'OpenAPI document',
    description: 'This API described in OpenAPI 3.1, generated from the route table.',
    params: {},
    response: 'OpenApiDocument',
    paginated: false,
    exactFile: false,
  }),
  'discovery.api_catalog': defineRoute({
    id: 'discovery.api_catalog',
    path: '/.well-known/api-catalog',
    tag: 'meta',
    summary: 'API catalog (RFC 9727)',
    description: 'Linkset pointing at the OpenAPI document and the health endpoint.',
    params: {},
    response: 'ApiCatalog',
    contentType: LINKSET_CONTENT_TYPE,
    paginated: false,
    exactFile: false,
  }),
} as const;

export type RouteId = keyof typeof ROUTES;
export type Route<I extends RouteId = RouteId> = (typeof ROUTES)[I];

/** Every route, in table order. */
export const ROUTE_LIST: readonly AnyRoute[] = Object.values(ROUTES) as AnyRoute[];

export function routeById(id: string): AnyRoute | null {
  return Object.hasOwn(ROUTES, id) ? (ROUTES[id as RouteId] as AnyRoute) : null;
}

/** The route's 400 cases: parameters whose invalid values are a 400 (strict types, required ones, rule participants). */
export function badRequestParams(route: AnyRoute): string[] {
  const names = new Set<string>();
  for (const [name, def] of Object.entries(route.params)) {
    if (def.in === 'path' ? def.invalid === 'invalid-identifier' : def.type.strict || def.required) names.add(name);
  }
  for (const r of route.rules ?? []) {
    if (r.kind === 'not-after') names.add(r.from);
    if (r.kind === 'max-span') names.add(r.from);
    if (r.kind === 'exclusive') r.params.forEach((p) => names.add(p));
  }
  return Object.keys(route.params).filter((n) => names.has(n));
}

/** 404 problem names a route can answer. */
export function notFoundProblems(route: AnyRoute): ProblemName[] {
  const out = new Set<ProblemName>();
  for (const def of Object.values(route.params)) if (def.in === 'path' && PROBLEM_CATALOGUE[def.invalid].status === 404) out.add(def.invalid);
  for (const k of route.notFound ?? []) out.add(NOT_FOUND_PROBLEMS[k]);
  return [...out];
}

// ---------------------------------------------------------------------------------------------
// Matching

interface Compiled {
  route: AnyRoute;
  /** Static segment text, or null for a parameter. */
  segments: Array<{ literal: string } | { param: string }>;
  statics: number;
}

const COMPILED: Compiled[] = ROUTE_LIST.map((route) => {
  const segments = route.path
    .slice(1)
    .split('/')
    .map((s) => (s.startsWith('{') && s.endsWith('}') ? { param: s.slice(1, -1) } : { literal: s }));
  return { route, segments, statics: segments.filter((s) => 'literal' in s).length };
}).sort((a, b) => b.statics - a.statics);

export interface RouteMatch {
  route: AnyRoute;
  /** Path parameter values, percent-decoded; null when a segment is not valid percent-encoded UTF-8. */
  pathParams: Record<string, string | null>;
}

/**
 * The route of a request path (no query string), or null when no endpoint has this path (a 404
 * "not-found"). Matching is exact and case-sensitive on the literal segments: no trailing slash, no
 * empty segments. A parameter segment matches any non-empty text; whether the text is a valid
 * identifier is parseRequest's job (400 for the participant id, 404 for the others).
 */
export function matchRoute(pathname: string): RouteMatch | null {
  if (!pathname.startsWith('/')) return null;
  const parts = pathname.slice(1).split('/');
  for (const c of COMPILED) {
    if (c.segments.length !== parts.length) continue;
    const params: Record<string, string | null> = {};
    let hit = true;
    for (let i = 0; i < parts.length && hit; i++) {
      const seg = c.segments[i]!;
      const part = parts[i]!;
      if ('literal' in seg) hit = seg.literal === part;
      else if (part === '') hit = false;
      else {
        try {
          params[seg.param] = decodeURIComponent(part);
        } catch {
          params[seg.param] = null;
        }
      }
    }
    if (hit) return { route: c.route, pathParams: params };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Parsing a request

export interface ParseOptions {
  /** Clock (ms) for defaults that depend on "today" (the churn window): the snapshot's time. */
  now?: number;
}

export type ParseResult<P extends ParamMap> = { ok: true; params: ParsedParams<P> } | { ok: false; status: 400 | 404; errors: ParamError[] };

function statusOf(problem: ParamProblem): 400 | 404 {
  return PROBLEM_CATALOGUE[problem].status as 400 | 404;
}

/** The order a list request uses (the `sort` value, or the single order). */
export function orderOf(list: ListSpec, params: Readonly<Record<string, unknown>>): OrderSpec {
  const name = list.orderParam ? String(params[list.orderParam]) : 'default';
  const o = list.orders[name];
  if (!o) throw new Error(`no order ${JSON.stringify(name)}`);
  return o;
}

/** The order of a list route's request (its only or default order when `params` has no order parameter). */
export function routeOrder(route: AnyRoute, params: Readonly<Record<string, unknown>> = {}): OrderSpec {
  if (!route.list) throw new Error(`route ${route.id} has no list`);
  if (route.list.orderParam !== undefined && params[route.list.orderParam] === undefined) {
    const dflt = route.params[route.list.orderParam]?.default;
    return orderOf(route.list, { [route.list.orderParam]: dflt });
  }
  return orderOf(route.list, params);
}

/** The directions of an order's key fields, in key order. */
export function orderDirs(order: OrderSpec): Direction[] {
  return order.fields.map((f) => f.dir);
}

/** Canonical values of the list's partition parameters (cursor partition, list index path). */
export function listPartition(route: AnyRoute, params: Readonly<Record<string, unknown>>): string[] {
  if (!route.list) throw new Error(`route ${route.id} has no list`);
  return route.list.partition.map((name) => {
    const def = route.params[name]!;
    return def.type.print(params[name]);
  });
}

function keyFieldOk(f: KeyFieldSpec, v: unknown): boolean {
  if (v === null) return f.nullable === true;
  switch (f.type) {
    case 'ts':
    case 'int':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'date':
      return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);
    case 'string':
      return typeof v === 'string';
  }
}

/**
 * Validates and canonicalises a request's parameters (docs/api.md, "Parameters"):
 * - path parameters come from matchRoute; an invalid one is 400 (participant id) or the route's 404;
 * - a query parameter that is absent or empty takes its default; a required one is then a 400;
 * - repeated: list parameters merge all occurrences, scalar parameters take the first non-empty one;
 * - parameters the route does not declare are ignored;
 * - then the rules (date window defaults, ranges, exclusive cursors), then cursors are checked to
 *   belong to this list (route, partition, order and direction).
 */
export function parseRequest<P extends ParamMap>(
  route: RouteDef<P>,
  pathParams: Readonly<Record<string, string | null>>,
  search: URLSearchParams,
  opts: ParseOptions = {},
): ParseResult<P> {
  const errors: ParamError[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(route.params) as Array<[string, ParamDef]>) {
    if (def.in === 'path') {
      const raw = pathParams[name];
      const r = raw == null ? null : def.type.parse(raw);
      if (!r || !r.ok) {
        errors.push({ param: name, in: 'path', status: statusOf(def.invalid), problem: def.invalid, expected: r ? r.expected : def.type.expected, got: raw ?? '' });
      } else out[name] = r.value;
      continue;
    }
    const values = search.getAll(name).filter((v) => v.trim() !== '');
    let raw: string | undefined;
    if (values.length > 0) raw = def.type.list ? values.join(',') : values[0];
    let value: unknown;
    if (raw !== undefined) {
      const r = def.type.parse(raw);
      if (!r.ok) {
        errors.push({ param: name, in: 'query', status: 400, problem: def.invalid, expected: r.expected, got: raw });
        continue;
      }
      value = r.value;
      if (def.type.list && (value as readonly unknown[]).length === 0) value = undefined;
    }
    if (value === undefined) {
      if (def.required) {
        errors.push({ param: name, in: 'query', status: 400, problem: 'missing-parameter', expected: def.type.expected });
        continue;
      }
      value = def.default;
    }
    out[name] = value;
  }
  const bad = new Set(errors.map((e) => e.param));

  for (const rule of route.rules ?? []) {
    if (rule.kind === 'date-window') {
      if (bad.has(rule.from) || bad.has(rule.to)) continue;
      if (out[rule.to] === undefined) out[rule.to] = utcDay(opts.now ?? Date.now());
      if (out[rule.from] === undefined) out[rule.from] = addDays(out[rule.to] as string, -(rule.days - 1));
    } else if (rule.kind === 'not-after') {
      const a = out[rule.from];
      const b = out[rule.to];
      if (a !== undefined && b !== undefined && (a as number | string) > (b as number | string)) {
        const def = route.params[rule.from]!;
        errors.push({
          param: rule.from,
          in: 'query',
          status: 400,
          problem: 'invalid-parameter',
          expected: `a value not after "${rule.to}" (${def.type.print(b)})`,
          got: def.type.print(a),
        });
        bad.add(rule.from);
      }
    } else if (rule.kind === 'max-span') {
      const a = out[rule.from];
      const b = out[rule.to];
      if (bad.has(rule.from) || bad.has(rule.to) || typeof a !== 'string' || typeof b !== 'string') continue;
      const span = daySpan(a, b);
      if (span > rule.days) {
        errors.push({
          param: rule.from,
          in: 'query',
          status: 400,
          problem: 'invalid-parameter',
          expected: `a date at most ${rule.days - 1} days before "${rule.to}" (${b})`,
          got: a,
          sentence: `Query parameters "${rule.from}" and "${rule.to}" span ${grouped(span)} days (${a} to ${b}); at most ${grouped(rule.days)} are allowed.`,
        });
        bad.add(rule.from);
      }
    } else {
      const [a, b] = rule.params;
      if (out[a] !== undefined && out[b] !== undefined) {
        errors.push({ param: b, in: 'query', status: 400, problem: 'invalid-parameter', expected: `no "${b}" together with "${a}" (they are mutually exclusive)` });
        bad.add(b);
      }
    }
  }

  if (route.list && route.list.pagination === 'cursor' && errors.length === 0) {
    const partition = listPartition(route, out);
    const order = orderOf(route.list, out);
    const checks: Array<[string, 'next' | 'prev']> = [['cursor', 'next']];
    if (route.list.newer) checks.push([route.list.newer.param, 'prev']);
    for (const [name, dir] of checks) {
      const c = out[name] as CursorPosition | undefined;
      if (c === undefined) continue;
      const why =
        c.route !== route.id
          ? 'it belongs to another endpoint'
          : c.partition.length !== partition.length || c.partition.some((p, i) => p !== partition[i])
            ? 'it belongs to another list or ordering of this endpoint'
            : c.dir !== dir
              ? dir === 'next'
                ? 'it is a prev_cursor'
                : 'it is a next_cursor'
              : c.key.length !== order.fields.length || !order.fields.every((f, i) => keyFieldOk(f, c.key[i]))
                ? 'its position does not fit this list'
                : null;
      if (why !== null) {
        errors.push({
          param: name,
          in: 'query',
          status: 400,
          problem: 'invalid-cursor',
          expected: `a cursor copied unchanged from a previous response of the same list; ${why}`,
          got: search.get(name)?.trim() ?? '',
        });
      }
    }
  }

  if (errors.length > 0) return { ok: false, status: errors.some((e) => e.status === 400) ? 400 : 404, errors };
  return { ok: true, params: out as ParsedParams<P> };
}

// ---------------------------------------------------------------------------------------------
// Canonical URLs

/** Percent-encodes a value for a URL, keeping the characters that are safe and readable (`:`, `@`, `,`). */
function encodeValue(s: string): string {
  return encodeURIComponent(s).replace(/%3A/g, ':').replace(/%40/g, '@').replace(/%2C/g, ',');
}

/** The segments of a request's canonical path: path parameters printed canonically, not percent-encoded. */
export function pathSegments(route: AnyRoute, params: Readonly<Record<string, unknown>>): string[] {
  return route.path
    .slice(1)
    .split('/')
    .map((s) => (s.startsWith('{') && s.endsWith('}') ? route.params[s.slice(1, -1)]!.type.print(params[s.slice(1, -1)]) : s));
}

/** The canonical path of a request (path parameters printed canonically). */
export function buildPath(route: AnyRoute, params: Readonly<Record<string, unknown>>): string {
  return route.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeValue(route.params[name]!.type.print(params[name])));
}

/**
 * The canonical query string (without "?"): every query parameter that is set and differs from its
 * default, in the route's declared order; date-window values equal to their defaults (`to` = today,
 * `from` = `to` − (days − 1)) are left out too. Equal requests give equal strings; '' means all defaults.
 */
export function canonicalQuery(route: AnyRoute, params: Readonly<Record<string, unknown>>, opts: ParseOptions = {}): string {
  const implied = new Set<string>();
  for (const rule of route.rules ?? []) {
    if (rule.kind !== 'date-window') continue;
    const to = params[rule.to];
    if (typeof to !== 'string') continue;
    if (to === utcDay(opts.now ?? Date.now())) implied.add(rule.to);
    if (params[rule.from] === addDays(to, -(rule.days - 1))) implied.add(rule.from);
  }
  const parts: string[] = [];
  for (const [name, def] of Object.entries(route.params)) {
    if (def.in !== 'query' || implied.has(name)) continue;
    const v = params[name];
    if (v === undefined) continue;
    const printed = def.type.print(v);
    if (def.default !== undefined && def.type.print(def.default) === printed) continue;
    parts.push(`${name}=${encodeValue(printed)}`);
  }
  return parts.join('&');
}

/** Path plus canonical query: the canonical request target of parsed parameters. */
export function canonicalTarget(route: AnyRoute, params: Readonly<Record<string, unknown>>, opts: ParseOptions = {}): string {
  const q = canonicalQuery(route, params, opts);
  return q === '' ? buildPath(route, params) : `${buildPath(route, params)}?${q}`;
}

/** True for a list request that starts at the top (no cursor of either direction): `meta` is sent. */
export function isFirstPage(route: AnyRoute, params: Readonly<Record<string, unknown>>): boolean {
  if (!route.list) return true;
  if (params.cursor !== undefined) return false;
  return !(route.list.newer && params[route.list.newer.param] !== undefined);
}

/** The sort key of an item under an order: ts fields as epoch ms, other fields as they are. */
export function sortKeyOf(order: OrderSpec, item: Readonly<Record<string, unknown>>): SortKey {
  return order.fields.map((f) => {
    const v = item[f.field];
    if (v === null || v === undefined) {
      if (f.nullable) return null;
      throw new Error(`sortKeyOf: item has no ${f.field}`);
    }
    if (f.type === 'ts') {
      const ms = Date.parse(String(v));
      if (Number.isNaN(ms)) throw new Error(`sortKeyOf: ${f.field} is not a timestamp`);
      return ms;
    }
    if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`sortKeyOf: ${f.field} is not a scalar`);
    return v;
  });
}
