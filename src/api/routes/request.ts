// A request of a route: parsing and validating its parameters (parseRequest), the route's rules and
// their wording, its list's order and partition, and its canonical URL. Edge-safe.
import type { CursorPosition } from '../cursor.js';
import type { Direction, SortKey } from '../sort-keys.js';
import { addDays, utcDay, type ParamError, type ParamProblem } from '../params.js';
import { NOT_FOUND_PROBLEMS, PROBLEM_CATALOGUE, type ProblemName } from '../problems.js';
import type { AnyRoute, KeyFieldSpec, ListSpec, OrderSpec, ParamDef, ParamMap, ParsedParams, RouteDef, Rule } from './types.js';

// ---------------------------------------------------------------------------------------------
// Rules

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
