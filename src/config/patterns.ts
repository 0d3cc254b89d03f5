// Path patterns used by the edge policy of the config (access tiers, deprecations).
// No Node-only imports: the edge shim may import this module.
//
// A pattern is a URL path starting with "/". `*` matches any run of characters, "/" included, so
// "/v1/aps/*" matches "/v1/aps/c-acme" and "/v1/aps/c-acme/churn" but not "/v1/aps" itself.
// Matching is on the path only (no query string) and is case-sensitive.

/** Endpoints the spec makes keyless: they never belong to an access tier. */
export const KEYLESS_PATHS: readonly string[] = [
  '/health',
  '/health/db',
  '/v1/network',
  '/v1/stats/participants',
  '/openapi.json',
  '/.well-known/api-catalog',
];

/** Characters allowed in a path pattern: RFC 3986 path characters plus `*`. */
const PATTERN_RE = /^\/[A-Za-z0-9\-._~!$&'()+,;=:@%/*]*$/;
/** A route id from the route table, e.g. `hosts.detail` or `participants_list`. */
const ROUTE_ID_RE = /^[A-Za-z][A-Za-z0-9_.:-]*$/;

export function isPathPattern(value: string): boolean {
  return PATTERN_RE.test(value);
}

export function isRouteId(value: string): boolean {
  return ROUTE_ID_RE.test(value);
}

const compiled = new Map<string, RegExp>();

function compile(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (!re) {
    const body = pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    re = new RegExp(`^${body}$`);
    compiled.set(pattern, re);
  }
  return re;
}

/** True when `path` (no query string) matches `pattern`. */
export function matchPathPattern(pattern: string, path: string): boolean {
  return compile(pattern).test(path);
}
