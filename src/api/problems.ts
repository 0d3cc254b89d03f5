// RFC 9457 problem documents (docs/api.md, "Problem catalogue"). Edge-safe: no Node imports.
//
// Every error of the API is one of the catalogued types below. Type URIs are `{base_url}/problems/<name>`
// (stable: the names never change meaning), except 429, which uses the IANA-registered
// `https://iana.org/assignments/http-problem-types#quota-exceeded` (draft-ietf-httpapi-ratelimit-headers).
// `instance` is the request path (no query string); `detail` says what was wrong in a sentence that
// names the parameter or resource.
import type { Problem } from './schemas/meta.js';
import type { ParamError } from './params.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

export interface ProblemTypeInfo {
  status: number;
  title: string;
  /** When the API answers with this type (docs and the type's page, src/api/problem-pages.ts). */
  when: string;
  /** What a client should do about it, one sentence (the type's page); `code` in backquotes. */
  advice: string;
}

export const PROBLEM_CATALOGUE = {
  'invalid-parameter': {
    status: 400,
    title: 'Invalid query parameter',
    when: 'a query parameter has a value outside its type, or parameters contradict each other (a range whose start is after its end, cursor with prev_cursor)',
    advice: 'Correct the parameter that `detail` names (its accepted values are in the OpenAPI document) and send the request again; the same request gets the same answer.',
  },
  'missing-parameter': { status: 400, title: 'Missing query parameter', when: 'a required query parameter is absent or empty', advice: 'Add the parameter that `detail` names, with a value, and send the request again.' },
  'invalid-cursor': {
    status: 400,
    title: 'Invalid cursor',
    when: 'a cursor or prev_cursor is malformed, damaged, or belongs to another list or ordering',
    advice: 'Start the list again without `cursor`, then pass each `next_cursor` unchanged to the same list, ordering and direction.',
  },
  'invalid-identifier': {
    status: 400,
    title: 'Invalid identifier in path',
    when: 'a path identifier the spec validates (the participant id) is not in its form',
    advice: 'Write the identifier in its form: a participant is `scheme::value`, such as `0208::0123456789`.',
  },
  'invalid-request': {
    status: 400,
    title: 'Invalid request target',
    when: 'the request target is malformed (bad percent-encoding, dot segments, encoded separators)',
    advice: 'Percent-encode the request target as RFC 3986 says, without `.` or `..` segments, encoded `/` or `\\`, control characters or empty segments.',
  },
  'api-key-required': {
    status: 403,
    title: 'API key required',
    when: 'access mode "keyed": the endpoint needs a paid key and none or an unknown one was sent',
    advice: 'Send a valid API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`; the operator of this deployment issues keys.',
  },
  'insufficient-tier': {
    status: 403,
    title: 'API key tier too low',
    when: 'access mode "keyed": the key does not cover the tier of the endpoint',
    advice: 'Use a key of the tier the endpoint needs (`x-access-tier` in the OpenAPI document); a market key covers network endpoints too.',
  },
  'not-found': { status: 404, title: 'Not found', when: 'no endpoint has this path', advice: 'Check the path against the OpenAPI document: literal segments are case-sensitive and no path ends with `/`.' },
  'host-not-found': { status: 404, title: 'Unknown host', when: 'no monitored host has this hostname', advice: 'Check the hostname; `/v1/hosts` lists every monitored host.' },
  'participant-not-found': { status: 404, title: 'Unknown participant', when: 'no participant has this identifier', advice: 'Check the identifier; `/v1/participants?q=` finds participants by identifier or name.' },
  'provider-not-found': { status: 404, title: 'Unknown provider', when: 'no curated provider has this slug', advice: 'Check the slug; `/v1/providers` lists the providers with theirs.' },
  'access-point-not-found': { status: 404, title: 'Unknown access point', when: 'no access point provider has this key (current or stale)', advice: 'Check the key; `/v1/aps` lists every access point provider under its current key.' },
  'churn-not-found': { status: 404, title: 'No churn for this access point', when: 'the access point is unknown or has no churn', advice: 'Check the key against `/v1/aps`; an access point that never gained or lost a participant has no churn to show.' },
  'seat-not-found': { status: 404, title: 'Unknown seat', when: 'no seat has this seat id', advice: 'Check the seat id (`P`, two letters, six digits); `/v1/aps` lists the seats of every provider.' },
  'anomaly-not-found': { status: 404, title: 'Unknown anomaly', when: 'no anomaly has this id', advice: 'Check the id; `/v1/anomalies` lists the anomalies.' },
  'method-not-allowed': { status: 405, title: 'Method not allowed', when: 'a method other than GET, HEAD or OPTIONS', advice: 'Use GET or HEAD: the API is read-only.' },
  'uri-too-long': { status: 414, title: 'URI too long', when: 'the request target exceeds the edge limit', advice: 'Keep the request target within 2,048 bytes: fewer filter values or a shorter `q`.' },
  'quota-exceeded': {
    status: 429,
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    when: 'the client identity exceeded its request quota for the window',
    advice: 'Wait the seconds that `Retry-After` gives before the next request, and pace requests by the `RateLimit` headers; a valid API key raises the quota.',
  },
  'internal-error': { status: 500, title: 'Internal error', when: 'an unexpected failure at the edge', advice: 'Try again later, waiting longer after each failure; if it persists, tell the operator of this deployment.' },
} as const satisfies Record<string, ProblemTypeInfo>;

export type ProblemName = keyof typeof PROBLEM_CATALOGUE;
export const PROBLEM_NAMES = Object.keys(PROBLEM_CATALOGUE) as ProblemName[];

/** True for a name of the catalogue. */
export function isProblemName(v: unknown): v is ProblemName {
  return typeof v === 'string' && Object.hasOwn(PROBLEM_CATALOGUE, v);
}

/** Kinds of resource a 404 can name, with their problem names (spec "Errors" 3). */
export const NOT_FOUND_PROBLEMS = {
  host: 'host-not-found',
  participant: 'participant-not-found',
  provider: 'provider-not-found',
  'access-point': 'access-point-not-found',
  churn: 'churn-not-found',
  seat: 'seat-not-found',
  anomaly: 'anomaly-not-found',
  /** A problem type page (`/problems/{name}`) of a name the catalogue does not have: the plain 404. */
  'problem-type': 'not-found',
} as const satisfies Record<string, ProblemName>;
export type NotFoundKind = keyof typeof NOT_FOUND_PROBLEMS;

const NOT_FOUND_NOUN: Record<NotFoundKind, string> = {
  host: 'monitored host with hostname',
  participant: 'participant with identifier',
  provider: 'curated provider with slug',
  'access-point': 'access point provider with key',
  churn: 'churn for an access point with key',
  seat: 'seat with seat id',
  anomaly: 'anomaly with id',
  'problem-type': 'problem type named',
};

/** `{base_url}/problems/<name>` (quota-exceeded: the IANA URI). A trailing "/" of the base is ignored. */
export function problemTypeUri(name: ProblemName, baseUrl: string): string {
  if (name === 'quota-exceeded') return QUOTA_EXCEEDED_TYPE;
  return `${baseUrl.replace(/\/+$/, '')}/problems/${name}`;
}

export interface ProblemContext {
  /** render.base_url */
  baseUrl: string;
  /** The request path (no query string). */
  instance?: string;
}

/** A problem document of a catalogued type. Keys in RFC 9457 order: type, title, status, detail, instance. */
export function problem(name: ProblemName, ctx: ProblemContext, detail?: string): Problem {
  const info: ProblemTypeInfo = PROBLEM_CATALOGUE[name];
  const doc: Problem = { type: problemTypeUri(name, ctx.baseUrl), title: info.title, status: info.status };
  if (detail !== undefined) doc.detail = detail;
  if (ctx.instance !== undefined) doc.instance = ctx.instance;
  return doc;
}

/** A value as shown in a detail: JSON-quoted, cut to 60 characters. */
export function showValue(v: string): string {
  const s = JSON.stringify(v);
  return s.length <= 60 ? s : `${s.slice(0, 56)}..."`;
}

/** The sentence a parameter error contributes to `detail`. */
export function paramErrorDetail(e: ParamError): string {
  if (e.status === 404) {
    const kind = (Object.keys(NOT_FOUND_PROBLEMS) as NotFoundKind[]).find((k) => NOT_FOUND_PROBLEMS[k] === e.problem);
    const noun = kind ? NOT_FOUND_NOUN[kind] : 'resource named';
    return `There is no ${noun} ${showValue(e.got ?? '')}.`;
  }
  if (e.sentence !== undefined) return e.sentence;
  const where = e.in === 'path' ? `Path parameter "${e.param}"` : `Query parameter "${e.param}"`;
  if (e.problem === 'missing-parameter') return `${where} is required: expected ${e.expected}.`;
  return e.got === undefined ? `${where}: expected ${e.expected}.` : `${where}: expected ${e.expected}, got ${showValue(e.got)}.`;
}

/**
 * The problem for a request's parameter errors (non-empty, in the route's order: path parameters, then
 * query parameters as declared, then cross-parameter rules). 400 errors win over 404 ones (a malformed
 * request is reported before a lookup); the first error of the winning status gives type and title,
 * and `detail` holds one sentence per error of that status.
 */
export function problemForParamErrors(errors: readonly ParamError[], ctx: ProblemContext): Problem {
  if (errors.length === 0) throw new Error('problemForParamErrors: no errors');
  const bad = errors.filter((e) => e.status === 400);
  const chosen = bad.length > 0 ? bad : errors;
  return problem(chosen[0]!.problem, ctx, chosen.map(paramErrorDetail).join(' '));
}

/** 404 for an unknown resource of a kind, named by its (canonical) identifier. */
export function notFoundProblem(kind: NotFoundKind, value: string, ctx: ProblemContext): Problem {
  return problem(NOT_FOUND_PROBLEMS[kind], ctx, `There is no ${NOT_FOUND_NOUN[kind]} ${showValue(value)}.`);
}

/** 404 for a path no endpoint has. */
export function noRouteProblem(ctx: ProblemContext): Problem {
  return problem('not-found', ctx, 'No endpoint of this API has this path; see /openapi.json for the list.');
}

export function methodNotAllowedProblem(method: string, ctx: ProblemContext): Problem {
  return problem('method-not-allowed', ctx, `The method ${showValue(method)} is not allowed: this API is read-only (GET, HEAD, OPTIONS).`);
}

export function keyRequiredProblem(ctx: ProblemContext): Problem {
  return problem('api-key-required', ctx, 'This endpoint needs a paid API key, sent as "Authorization: Bearer <key>" or "X-API-Key: <key>".');
}

export function insufficientTierProblem(needed: 'network' | 'market' | 'any', ctx: ProblemContext): Problem {
  const what = needed === 'any' ? 'a key of the network or the market tier' : `a key of the ${needed} tier`;
  return problem('insufficient-tier', ctx, `This endpoint needs ${what}; the key sent does not cover it.`);
}

export function quotaExceededProblem(limit: number, windowSeconds: number, retryAfterSeconds: number, ctx: ProblemContext): Problem {
  return problem(
    'quota-exceeded',
    ctx,
    `At most ${limit} requests per ${windowSeconds} seconds are allowed for this client; retry after ${retryAfterSeconds} seconds.`,
  );
}
