// What a route renderer gets: the database, the pinned clock, the file sink and list writers.
import type { Direction } from '../api/keys.js';
import { exactFilePath, listRootPath } from '../api/paths.js';
import type { Db } from '../db/index.js';
import { ListWriter, type ListWriterOptions } from './lists.js';
import { BUILD_UNIT, type DirectorySink } from './sink.js';

export interface RenderOptions {
  chunkMaxItems: number;
  chunkMaxBytes: number;
}

/** A participant whose own files are rendered (see RenderContext.forEachParticipant). */
export interface ParticipantUnit {
  participant_id: number;
  pid: string;
  name: string | null;
  first_seen_at: number;
}

const UNIT_BATCH = 2000;

export class RenderContext {
  constructor(
    readonly db: Db,
    readonly nowMs: number,
    readonly sink: DirectorySink,
    readonly opts: RenderOptions,
    /** Serialises a response body (src/api/json.ts): the one serialisation shared with the shim. */
    readonly serialise: (body: unknown) => Uint8Array,
    readonly progress: (message: string) => void = () => {},
    /**
     * Whose own files this build renders: every participant, or only those in
     * `temp.render_participants` (an incremental build, src/render/state.ts).
     */
    readonly participants: 'all' | 'changed' = 'all',
  ) {}

  /**
   * Calls `fn` for each participant whose own files (detail, first events and history pages, their
   * lists) this build renders, in participant_id order; the files `fn` puts belong to the
   * participant's render unit. Batched: no statement stays open while `fn` queries.
   */
  forEachParticipant(fn: (p: ParticipantUnit) => void): void {
    const q = this.db.prepare(
      this.participants === 'all'
        ? `SELECT participant_id, pid, name, first_seen_at FROM participant_list WHERE participant_id > ? ORDER BY participant_id LIMIT ${UNIT_BATCH}`
        : `SELECT l.participant_id, l.pid, l.name, l.first_seen_at FROM temp.render_participants u JOIN participant_list l ON l.participant_id = u.participant_id
           WHERE u.participant_id > ? ORDER BY u.participant_id LIMIT ${UNIT_BATCH}`,
    );
    let last = -Infinity;
    try {
      for (;;) {
        const rows = q.all(last) as ParticipantUnit[];
        if (rows.length === 0) return;
        for (const r of rows) {
          this.sink.unit = r.participant_id;
          fn(r);
        }
        last = rows[rows.length - 1]!.participant_id;
      }
    } finally {
      this.sink.unit = BUILD_UNIT;
    }
  }

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
