// Shared and meta resources: Problem, Health, HealthDb, and the discovery documents (the problem type pages included).
import { z } from 'zod';

/** RFC 9457 problem details (spec "Shared"). */
export const Problem = z.strictObject({
  type: z.string().min(1).describe('problem type URI (see docs/api.md, "Problem catalogue"); about:blank by default'),
  title: z.string().min(1),
  status: z.int().min(400).max(599).describe('HTTP status'),
  detail: z.string().optional(),
  instance: z.string().optional().describe('the request path'),
});

export const Health = z.strictObject({ status: z.string(), service: z.string() });

export const HealthDb = z.strictObject({
  status: z.string().describe('"ok" when the snapshot reads and is fresh, else "degraded"'),
  service: z.string(),
  db: z.boolean().describe('true when the snapshot (its manifest) reads: the static counterpart of a trivial database query'),
  generated_at: z.string().nullable().describe('when the snapshot was generated (null when it does not read)'),
  age_seconds: z.int().min(0).nullable().describe('seconds since generated_at (null when the snapshot does not read)'),
  fresh: z.boolean().describe('true when the snapshot is at most the freshness bound old (default 2 hours)'),
});

/** A link target object of a linkset (RFC 9264 §4.2.3). */
export const LinkTarget = z.looseObject({ href: z.string().min(1), type: z.string().optional() });

/** RFC 9727 API catalog: an RFC 9264 linkset (application/linkset+json). */
export const ApiCatalog = z.strictObject({
  linkset: z.array(z.object({ anchor: z.string().min(1) }).catchall(z.array(LinkTarget))),
});

/** The OpenAPI 3.1 document served at /openapi.json (structure checked loosely: it is generated). */
export const OpenApiDocument = z.looseObject({
  openapi: z.string().regex(/^3\.1\.\d+$/),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

/** The page a problem type URI resolves to (`/problems/{name}`, text/html): src/api/problem-pages.ts. */
export const ProblemTypePage = z
  .string()
  .min(1)
  .describe('A short HTML page on one problem type: its title and status, when the API answers with it, what a client should do, a link to the OpenAPI document');

export type Problem = z.infer<typeof Problem>;
export type Health = z.infer<typeof Health>;
export type HealthDb = z.infer<typeof HealthDb>;
export type ApiCatalog = z.infer<typeof ApiCatalog>;
export type OpenApiDocument = z.infer<typeof OpenApiDocument>;
