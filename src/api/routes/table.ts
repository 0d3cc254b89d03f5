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
import { isKeylessPath } from '../../config/patterns.js';
import { HTML_CONTENT_TYPE, JSON_CONTENT_TYPE, LINKSET_CONTENT_TYPE } from '../json.js';
import { PROBLEM_NAMES } from '../problems.js';
import {
  booleanType,
  countryItem,
  exactEnumType,
  cursorType,
  dateType,
  enumItem,
  enumType,
  foldApKey,
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
  type ParamProblem,
  type ParamType,
} from '../params.js';
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
} from '../schemas/constants.js';
import type { AnyRoute, KeyFieldSpec, OrderSpec, ParamDef, ParamMap, RouteDef, Rule } from './types.js';

// ---------------------------------------------------------------------------------------------
// Parameters

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
// Routes

function defineRoute<const P extends ParamMap, const E extends boolean = true>(
  r: Omit<RouteDef<P, E>, 'method' | 'contentType' | 'keyless' | 'exactFile'> & { contentType?: string; exactFile?: E },
): RouteDef<P, E> {
  // E is inferred from `exactFile` when given and is its default, true, when not.
  const exactFile = (r.exactFile ?? true) as E;
  return { method: 'GET', contentType: JSON_CONTENT_TYPE, keyless: isKeylessPath(r.path), ...r, exactFile };
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
    description: 'Keyset-paginated participant list with filters and search; `meta` (counts and facets) on the first page only. A page holds `limit` items whenever that many further matches exist, for any filters, search and order; `next_cursor` is null on the last page. A list filter of more than 8 values is matched item by item, and a name search looks up at most 8 of its trigrams. `meta.filter_count` (capped at 50,000) and `meta.facets` count the matches exactly (every facet value, by count) for any filter combination and any search.',
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
    params: { key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED, foldApKey), 'Provider key: c-<slug>, o-<slug>-<hash> or s-<seatid>.', 'access-point-not-found') },
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
      key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED, foldApKey), 'Provider key.', 'churn-not-found'),
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
      key: pathParam(patternType('ap-key', AP_KEY, AP_KEY_EXPECTED, foldApKey), 'Provider key.', 'access-point-not-found'),
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
    description: 'Change events across the network, newest first, with the anomalies each triggered. `cursor` walks toward older events; `prev_cursor` returns the events just newer than it (live polling; when nothing is newer, an empty page whose `prev_cursor` is the one polled). Pages are full under any filters: a page holds `limit` events whenever that many more match, and `next_cursor` is set exactly when more match.',
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
  // The one answer that is not JSON: the page every problem type URI resolves to, generated by the
  // resolver from the problem catalogue (no file).
  'discovery.problem_type': defineRoute({
    id: 'discovery.problem_type',
    path: '/problems/{name}',
    tag: 'meta',
    summary: 'Problem type page',
    description:
      'A short HTML page on one problem type: its title and status, when the API answers with it, and what a client should do. ' +
      'Every `type` URI of a problem document, `{base_url}/problems/<name>`, resolves here; `quota-exceeded`, whose type is the IANA URI, has its page too.',
    params: { name: pathParam(exactEnumType(PROBLEM_NAMES, 'a problem type name:'), 'Problem type name: the last path segment of a `type` URI.', 'not-found') },
    response: 'ProblemTypePage',
    contentType: HTML_CONTENT_TYPE,
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

