// Path patterns used by the edge policy of the config (access tiers, deprecations).
// No Node-only imports: the edge shim may import this module.
//
// A pattern is a URL path starting with "/". `*` matches any run of characters, "/" included, so
// "/v1/aps/*" matches "/v1/aps/c-acme" and "/v1/aps/c-acme/churn" but not "/v1/aps" itself.
// Matching is on the path only (no query string) and is case-sensitive.

/**
 * The site: the status page (`/`) and its pages and stylesheet, the readable API description, the Atom
 * feed and the bulk downloads (src/edge/site.ts). Files for people and open-data tools, not API
 * endpoints: no route of the table matches them, and they are keyless (public open data).
 */
export const SITE_PATHS: readonly string[] = ['/', '/status/*', '/api.html', '/feed.atom', '/bulk/*'];

/**
 * Endpoints the spec makes keyless, as path patterns, and the site: they never belong to an access
 * tier. The discovery endpoints include the problem type pages (`/problems/<name>`), which every
 * problem's `type` links to, so a client without a key can read why it was refused.
 */
export const KEYLESS_PATHS: readonly string[] = [
  '/health',
  '/health/db',
  '/v1/network',
  '/v1/stats/participants',
  '/openapi.json',
  '/.well-known/api-catalog',
  '/problems/*',
  ...SITE_PATHS,
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

/** True when a request path (or a route's path template) is keyless: it matches a KEYLESS_PATHS pattern. */
export function isKeylessPath(path: string): boolean {
  return KEYLESS_PATHS.some((k) => matchPathPattern(k, path));
}

/** True when some path matches both patterns (`*` matches any run of characters in either). */
export function patternsOverlap(a: string, b: string): boolean {
  const memo = new Map<number, boolean>();
  const from = (i: number, j: number): boolean => {
    const key = i * (b.length + 1) + j;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let r: boolean;
    if (i === a.length && j === b.length) r = true;
    else if (i < a.length && a[i] === '*') r = from(i + 1, j) || (j < b.length && from(i, j + 1)); // a's * ends, or takes b's next
    else if (j < b.length && b[j] === '*') r = from(i, j + 1) || (i < a.length && from(i + 1, j));
    else r = i < a.length && j < b.length && a[i] === b[j] && from(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return from(0, 0);
}
