// Matching a request path to its route (the table's path patterns). Edge-safe.
import { ROUTE_LIST } from './table.js';
import type { AnyRoute } from './types.js';

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

