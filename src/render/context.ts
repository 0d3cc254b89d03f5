// What a route renderer gets: the database, the pinned clock, the file sink and list writers.
import path from 'node:path';
import type { Direction } from '../api/sort-keys.js';
import { exactFilePath, listRootPath } from '../api/paths.js';
import type { Db } from '../db/index.js';
import type { KeyOf } from '../edge/derived-keys.js';
import { ListWriter, rawChunkOf, type FileSink, type ListWriterOptions, type RawChunk } from './lists.js';
import { BUILD_UNIT, type DirectorySink } from './sink.js';
import { readStored, readStoredJson } from './stored.js';

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

/**
 * The lists kept from build to build and patched in place (src/render/list-patch.ts), each a render
 * unit of its own: the state of the output directory (src/render/state.ts).
 */
export interface ListStore {
  /** Whether the previous build's lists are on disk as the state records them (else write in full). */
  readonly patchable: boolean;
  /** Most participants whose list item changed for which the lists are patched (more: written in full); default by share. */
  readonly patchLimit?: number;
  /** The unit of a list (by root path), allocated for a new one. */
  unit(root: string): number;
  /** Whether the previous build (or this one) wrote the list. */
  has(root: string): boolean;
  /** The files the unit holds (root, chunks, index nodes). */
  paths(unit: number): Set<string>;
  /** The unit no longer holds these files (they are removed at the end unless another unit holds them). */
  retire(unit: number, paths: Iterable<string>): void;
  /** Forgets a list: all its files are retired. */
  drop(root: string): void;
  /** Root paths of the kept lists starting with `prefix`. */
  roots(prefix: string): string[];
}

/** How the participant lists were rendered (BuildSummary.render.lists). */
export interface ListsReport {
  /** Patched in place (incremental) or written in full. */
  mode: 'patched' | 'written';
  /** Lists patched or written. */
  lists: number;
  /** Chunks of the previous build read to patch them. */
  chunks_read: number;
}

/** How the uptime lists were rendered (BuildSummary.render.uptime; src/render/routes/host-uptime.ts). */
export interface UptimeReport {
  /** Why no list could be patched (every list written from all its buckets), or null. */
  full_reason: string | null;
  /** Lists written from their newest buckets and the previous build's files. */
  lists_patched: number;
  /** Lists written from every bucket. */
  lists_written: number;
  /** Bucket rows read from the database. */
  rows_read: number;
  /** Chunks of the previous build read (their older items taken). */
  chunks_read: number;
  /** Chunks of the previous build kept (neither read nor written). */
  chunks_kept: number;
}

/** How the event feed's lists were rendered (BuildSummary.render.events; src/render/routes/events.ts). */
export interface EventsReport {
  /** Why every partition was written (no change set to keep the others by), or null. */
  full_reason: string | null;
  /** Partitions (the whole feed, a host, a seat, a type, a participant) whose lists were written. */
  partitions_written: number;
}

export class RenderContext {
  /**
   * Why lists kept from the previous build cannot be reused in this one, or null when they can. The
   * build collects a renderer's change set into the temporary table `changeTable` of an incremental
   * build (src/render/state.ts); without it nothing says what to keep.
   */
  keptListsUnusable(changeTable: string, changeSet: string): string | null {
    if (this.lists === undefined) return 'no kept lists';
    if (this.participants !== 'changed') return 'a full build';
    if (!this.lists.patchable) return 'the kept lists are not known to be on disk as recorded';
    if (this.db.prepare("SELECT 1 FROM sqlite_temp_master WHERE type = 'table' AND name = ?").get(changeTable) === undefined) return `no ${changeSet} change set`;
    return null;
  }

  /** Set by the event lists' renderer. */
  eventsReport: EventsReport | null = null;
  /** Set by the participant lists' renderer. */
  listsReport: ListsReport | null = null;
  /** Set by the uptime lists' renderer. */
  uptimeReport: UptimeReport | null = null;

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
    /** The lists kept from build to build (none: every list is the build's, unit 0). */
    readonly lists?: ListStore,
    /**
     * With every participant: forEachParticipant takes ranges of participant ids from here, shared with
     * another thread rendering the same route (src/render/offload.ts), instead of walking them all.
     */
    readonly batches?: { next(): [lo: number, hi: number] | null },
  ) {}

  /**
   * A file the previous build wrote into the output directory, parsed (a kept list's root, chunks and
   * index nodes, snapshot.json). Only where the state vouches for the directory (ListStore.patchable).
   */
  readPrevious(rel: string): unknown {
    return readStoredJson(path.join(this.sink.outDir, rel));
  }

  /** A list chunk the previous build wrote, its items as written (rawChunkOf); as readPrevious. */
  readPreviousChunk(rel: string, keyOf: KeyOf | null = null): RawChunk {
    return rawChunkOf(readStored(path.join(this.sink.outDir, rel)).toString('utf8'), keyOf);
  }

  /** A sink that records every file it puts under `unit`. */
  unitSink(unit: number): FileSink {
    return {
      put: (rel, body, contentType, cacheClass) => {
        const was = this.sink.unit;
        this.sink.unit = unit;
        try {
          this.sink.put(rel, body, contentType, cacheClass);
        } finally {
          this.sink.unit = was;
        }
      },
    };
  }

  /**
   * Calls `fn` for each participant whose own files (detail, first events and history pages, their
   * lists) this build renders, in participant_id order (with shared `batches`: this thread's share,
   * in order); the files `fn` puts belong to the participant's render unit. Batched: no statement
   * stays open while `fn` queries; `onBatch` sees each batch before `fn` sees its participants.
   */
  forEachParticipant(fn: (p: ParticipantUnit) => void, onBatch?: (batch: readonly ParticipantUnit[]) => void): void {
    try {
      for (const rows of this.participantBatches()) {
        // Before the batch's participants: what `fn` reads for all of them at once (up to UNIT_BATCH).
        onBatch?.(rows);
        for (const r of rows) {
          this.sink.unit = r.participant_id;
          fn(r);
        }
      }
    } finally {
      this.sink.unit = BUILD_UNIT;
    }
  }

  /** The participants of forEachParticipant, a batch at a time. */
  private *participantBatches(): Generator<ParticipantUnit[]> {
    if (this.participants === 'all' && this.batches !== undefined) {
      const range = this.db.prepare('SELECT participant_id, pid, name, first_seen_at FROM participant_list WHERE participant_id >= ? AND participant_id < ? ORDER BY participant_id');
      for (let b = this.batches.next(); b !== null; b = this.batches.next()) yield range.all(b[0], b[1]) as ParticipantUnit[];
      return;
    }
    const q = this.db.prepare(
      this.participants === 'all'
        ? `SELECT participant_id, pid, name, first_seen_at FROM participant_list WHERE participant_id > ? ORDER BY participant_id LIMIT ${UNIT_BATCH}`
        : `SELECT l.participant_id, l.pid, l.name, l.first_seen_at FROM temp.render_participants u JOIN participant_list l ON l.participant_id = u.participant_id
           WHERE u.participant_id > ? ORDER BY u.participant_id LIMIT ${UNIT_BATCH}`,
    );
    for (let rows = q.all(-Infinity) as ParticipantUnit[]; rows.length > 0; rows = q.all(rows[rows.length - 1]!.participant_id) as ParticipantUnit[]) yield rows;
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
    layout: Pick<ListWriterOptions, 'minItems' | 'minBytes' | 'entryCounts' | 'head' | 'derivedKey'> = {},
    /** Keep the list from build to build (a unit of its own in `lists`), to patch it in place later. */
    kept = false,
  ): { add: ListWriter['add']; addPending: ListWriter['addPending']; finish: () => void } {
    const root = listRootPath(routeId, partition);
    const sink = kept && this.lists ? this.unitSink(this.lists.unit(root)) : this.sink;
    const w = new ListWriter(sink, this.listOptions(dirs, facetFields, layout));
    return { add: w.add.bind(w), addPending: w.addPending.bind(w), finish: () => void w.finish(root) };
  }

  /** A list's writer options: the configured chunk budget and the list's layout. */
  listOptions(dirs: Direction[], facetFields?: readonly string[], layout: Pick<ListWriterOptions, 'minItems' | 'minBytes' | 'entryCounts' | 'head' | 'derivedKey'> = {}): ListWriterOptions {
    return { dirs, maxItems: this.opts.chunkMaxItems, maxBytes: this.opts.chunkMaxBytes, facetFields, ...layout };
  }
}
