// What a route renderer gets: the database, the pinned clock, the file sink and list writers.
import type { Direction } from '../api/keys.js';
import { exactFilePath, listRootPath } from '../api/paths.js';
import type { Db } from '../db/index.js';
import { ListWriter, type ListWriterOptions } from './lists.js';
import type { DirectorySink } from './sink.js';

export interface RenderOptions {
  chunkMaxItems: number;
  chunkMaxBytes: number;
}

export class RenderContext {
  constructor(
    readonly db: Db,
    readonly nowMs: number,
    readonly sink: DirectorySink,
    readonly opts: RenderOptions,
    /** Serialises a response body (src/api/json.ts): the one serialisation shared with the shim. */
    readonly serialise: (body: unknown) => Uint8Array,
    readonly progress: (message: string) => void = () => {},
  ) {}

  /** Writes the exact file of a URL path (segments after the leading slash, unencoded). */
  exact(segments: readonly string[], body: unknown): void {
    this.sink.put(exactFilePath(segments), this.serialise(body), 'application/json', 'mutable');
  }

  /**
   * A writer for one list; call finish() with no argument through the returned handle. `layout`: see
   * ListWriterOptions (minItems, minBytes, entryCounts, head).
   */
  list(
    routeId: string,
    partition: readonly string[],
    dirs: Direction[],
    facetFields?: readonly string[],
    layout: Pick<ListWriterOptions, 'minItems' | 'minBytes' | 'entryCounts' | 'head'> = {},
  ): { add: ListWriter['add']; finish: () => void } {
    const w = new ListWriter(this.sink, { dirs, maxItems: this.opts.chunkMaxItems, maxBytes: this.opts.chunkMaxBytes, facetFields, ...layout });
    const root = listRootPath(routeId, partition);
    return { add: w.add.bind(w), finish: () => void w.finish(root) };
  }
}
