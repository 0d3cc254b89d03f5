// One renderer per route id (src/api/routes.ts): writes its exact files and lists into the snapshot.
import type { RenderContext } from '../context.js';

export const RENDERERS: Record<string, (ctx: RenderContext) => void> = {
};
