// One renderer per route id (src/api/routes/table.ts): writes its exact files and lists into the snapshot.
import { EVENTS_RENDERERS } from './events.js';
import { HOSTS_RENDERERS } from './hosts.js';
import { PROVIDERS_RENDERERS } from './providers.js';
import type { RenderContext } from '../context.js';
import { PARTICIPANT_RENDERERS } from './participants.js';

export const RENDERERS: Record<string, (ctx: RenderContext) => void> = {
  ...EVENTS_RENDERERS,
  ...PARTICIPANT_RENDERERS,
  ...HOSTS_RENDERERS,
  ...PROVIDERS_RENDERERS,
};
