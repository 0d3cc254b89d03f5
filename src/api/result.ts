// What an endpoint answers, before serialisation: shared by the query functions (the oracle over
// SQLite), the renderer and the shim's composers. Edge-safe.
//
// Problems inside an ApiResult are built with an EMPTY base URL and no instance — use
// `problemOf(name, detail)` / `notFoundOf(kind, value)` below (or the src/api/problems.ts functions
// with `{ baseUrl: '' }`). finishResult() then sets the deployment's base URL and the request path, in
// the resolver and in the oracle's test harness alike, so both give the same bytes.
import { notFoundProblem, problem, problemForParamErrors, type NotFoundKind, type ProblemName } from './problems.js';
import type { ParamError } from './params.js';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
}

export type ApiResult = { status: 200; body: unknown } | { status: 400 | 404; problem: ProblemBody };

export function ok(body: unknown): ApiResult {
  return { status: 200, body };
}

/** A catalogued problem (400 or 404) with a base-less type URI. */
export function problemOf(name: ProblemName, detail?: string): ApiResult {
  const p = problem(name, { baseUrl: '' }, detail);
  return { status: p.status as 400 | 404, problem: p };
}

/** 404 for an unknown resource of a kind. */
export function notFoundOf(kind: NotFoundKind, value: string): ApiResult {
  return { status: 404, problem: notFoundProblem(kind, value, { baseUrl: '' }) };
}

/** The problem of a request's parameter errors (parseRequest). */
export function paramErrorsOf(errors: readonly ParamError[]): ApiResult {
  const p = problemForParamErrors(errors, { baseUrl: '' });
  return { status: p.status as 400 | 404, problem: p };
}

/** Sets the base URL of problem types and the request path as `instance` (RFC 9457 key order kept). */
export function finishResult(r: ApiResult, ctx: { baseUrl: string; instance: string }): ApiResult {
  if (r.status === 200) return r;
  const p = r.problem;
  const type = p.type.startsWith('/problems/') ? `${ctx.baseUrl.replace(/\/+$/, '')}${p.type}` : p.type;
  const out: ProblemBody = { type, title: p.title, status: p.status };
  if (p.detail !== undefined) out.detail = p.detail;
  out.instance = ctx.instance;
  return { status: r.status, problem: out };
}
