// The oracle: one query function per route id (src/api/routes.ts), answering from SQLite.
import type { QueryFn } from './types.js';

export const QUERIES: Record<string, QueryFn> = {
};
