// The defaults of the config's `edge` section, as plain values (no zod), so the edge shim can use them:
// the config schema (schema.ts) takes its `edge` defaults from here, and the Cloudflare Worker applies
// them to a snapshot whose snapshot.json has no `edge` (one built before build wrote it there).
// Edge-safe: type-only imports.
import type { EdgeConfig, RateLimitConfig } from './index.js';

/** Endpoints of the network tier by default (path patterns, see patterns.ts). */
export const DEFAULT_NETWORK_TIER = [
  '/v1/hosts',
  '/v1/hosts/*',
  '/v1/incidents',
  '/v1/sml',
  '/v1/events',
  '/v1/anomalies',
  '/v1/anomalies/*',
];

/** Endpoints of the market tier by default. */
export const DEFAULT_MARKET_TIER = [
  '/v1/participants',
  '/v1/participants/*',
  '/v1/providers',
  '/v1/providers/*',
  '/v1/aps',
  '/v1/aps/*',
  '/v1/seats/*',
];

export const DEFAULT_RATE_LIMIT: Readonly<RateLimitConfig> = { requests: 60, window_seconds: 60, keyed_multiplier: 10 };
export const DEFAULT_CORS_MAX_AGE_SECONDS = 86_400;
export const DEFAULT_ACCESS_MODE = 'open';

/** The `edge` section of a config that has none (a fresh copy): what the schema gives for `{}`. */
export function defaultEdgeConfig(): EdgeConfig {
  return {
    cors: { allow_origin: '*', max_age_seconds: DEFAULT_CORS_MAX_AGE_SECONDS },
    rate_limit: { ...DEFAULT_RATE_LIMIT },
    access: { mode: DEFAULT_ACCESS_MODE, tiers: { network: [...DEFAULT_NETWORK_TIER], market: [...DEFAULT_MARKET_TIER] } },
    deprecations: [],
  };
}
