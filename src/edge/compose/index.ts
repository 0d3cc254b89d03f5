// One composer per route id (src/api/routes.ts): answers from snapshot files alone. Edge-safe.
import type { ComposeFn } from './types.js';

export const COMPOSERS: Record<string, ComposeFn> = {
};
