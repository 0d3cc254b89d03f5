// The edge policy from JSON (the Worker's EDGE_POLICY variable): the `edge` section of
// publish.config.json, validated by the same zod schema, defaults filled in. Edge-safe: zod only.
import { configSchema } from '../config/schema.js';
import type { EdgePolicy } from './types.js';

export class EdgePolicyError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid edge policy: ${problems.join('; ')}`);
    this.name = 'EdgePolicyError';
  }
}

/** Validates an `edge` section (an object, or JSON text of one; empty text: the defaults). */
export function parseEdgePolicy(value: unknown): EdgePolicy {
  let v = value;
  if (typeof v === 'string') {
    if (v.trim() === '') v = {};
    else {
      try {
        v = JSON.parse(v);
      } catch (e) {
        throw new EdgePolicyError([`invalid JSON: ${(e as Error).message}`]);
      }
    }
  }
  const r = configSchema.shape.edge.safeParse(v ?? {});
  if (!r.success) throw new EdgePolicyError(r.error.issues.map((i) => `edge.${i.path.join('.')}: expected ${i.message}`));
  return r.data;
}
