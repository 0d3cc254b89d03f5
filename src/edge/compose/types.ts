// The shim's side of one route: canonical parameters -> answer, from snapshot files only. Edge-safe.
import type { ApiResult } from '../../api/result.js';
import type { ReadFile, ReadStats } from '../list-reader.js';

export type Params = Readonly<Record<string, unknown>>;

export interface ComposeContext {
  read: ReadFile;
  /** The snapshot's clock: manifest.generated_at in ms. */
  nowMs: number;
  /** Files and bytes read for this answer (cost budget; docs/snapshot-format.md). */
  stats: ReadStats;
}

export type ComposeFn = (params: Params, ctx: ComposeContext) => Promise<ApiResult>;
