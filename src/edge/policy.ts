// The Cloudflare Worker's edge policy: the `edge` section of publish.config.json as `build` wrote it
// into snapshot.json, or the defaults for a snapshot built before build wrote it there (docs/edge.md,
// "Worker"). Edge-safe and zod-free: the config schema validated the section on Node when the snapshot
// was built. This only checks the shape the handler relies on, so that a damaged snapshot.json gives
// a 500 answer instead of a silently different policy.
import { defaultEdgeConfig } from '../config/edge-defaults.js';
import type { EdgePolicy } from './types.js';

export class EdgePolicyError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid edge policy in snapshot.json: ${problems.join('; ')}`);
    this.name = 'EdgePolicyError';
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown, min: number): boolean => Number.isInteger(v) && (v as number) >= min; // v is a number once isInteger holds
const isStrings = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isDeprecation = (d: unknown): boolean =>
  isObj(d) && typeof d.path === 'string' && typeof d.deprecation === 'string' && typeof d.sunset === 'string' && (d.link === undefined || typeof d.link === 'string');

/** The policy of a snapshot: its snapshot.json `edge` member; `undefined` (an older build) gives the defaults. */
export function edgePolicyOf(edge: unknown): EdgePolicy {
  if (edge === undefined) return defaultEdgeConfig();
  if (!isObj(edge)) throw new EdgePolicyError(['edge: expected an object']);
  const { cors, rate_limit: rl, access, deprecations } = edge;
  const problems: string[] = [];
  if (!(isObj(cors) && cors.allow_origin === '*' && isInt(cors.max_age_seconds, 0))) problems.push('edge.cors: expected { allow_origin: "*", max_age_seconds }');
  if (!(rl === 'off' || (isObj(rl) && isInt(rl.requests, 1) && isInt(rl.window_seconds, 1) && typeof rl.keyed_multiplier === 'number' && rl.keyed_multiplier >= 1))) {
    problems.push('edge.rate_limit: expected "off" or { requests, window_seconds, keyed_multiplier }');
  }
  if (!(isObj(access) && (access.mode === 'open' || access.mode === 'keyed') && isObj(access.tiers) && isStrings(access.tiers.network) && isStrings(access.tiers.market))) {
    problems.push('edge.access: expected { mode: "open" | "keyed", tiers: { network, market } }');
  }
  if (!(Array.isArray(deprecations) && deprecations.every(isDeprecation))) problems.push('edge.deprecations: expected an array of { path, deprecation, sunset, link? }');
  if (problems.length > 0) throw new EdgePolicyError(problems);
  return edge as unknown as EdgePolicy; // its shape was checked just above
}
