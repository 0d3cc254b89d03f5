// The oracle: one query function per route id (src/api/routes.ts), answering from SQLite.
import type { QueryFn } from './types.js';
import { PARTICIPANT_QUERIES } from './participants.js';
import { HOSTS_QUERIES } from './hosts.js';
import { EVENTS_QUERIES } from './events.js';
import { MARKET_QUERIES } from './market.js';

export const QUERIES: Record<string, QueryFn> = {
  ...PARTICIPANT_QUERIES,
  ...HOSTS_QUERIES,
  ...MARKET_QUERIES,
  ...EVENTS_QUERIES,
};
