// One composer per route id (src/api/routes.ts): answers from snapshot files alone. Edge-safe.
import { EVENTS_COMPOSERS } from './events.js';
import { HOSTS_COMPOSERS } from './hosts.js';
import { MARKET_COMPOSERS } from './market.js';
import type { ComposeFn } from './types.js';
import { PARTICIPANT_COMPOSERS } from './participants.js';

export const COMPOSERS: Record<string, ComposeFn> = {
  ...EVENTS_COMPOSERS,
  ...PARTICIPANT_COMPOSERS,
  ...HOSTS_COMPOSERS,
  ...MARKET_COMPOSERS,
};
