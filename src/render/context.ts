// What a route renderer gets: the database, the pinned clock, the file sink and list writers.
import path from 'node:path';
import type { Direction } from '../api/sort-keys.js';
import { exactFilePath, listRootPath } from '../api/paths.js';
import type { Db } from '../db/index.js';
import type { KeyOf } from '../edge/derived-keys.js';
import { ListWriter, rawChunkOf, type FileSink, type ListWriterOptions, type RawChunk } from './lists.js';
import { BUILD_UNIT, type DirectorySink } from './sink.js';
import { readStored, readStoredJson } from './stored.js';
import { isRecordPack, RECORD_PACK_FORMAT, RECORD_PACKS, recordPackOf, recordPackPath } from '../api/participants/record.js';
import { rawStatement, rowObjects } from '../db/statements.js';

export interface RenderOptions {
  chunkMaxItems: number;
  chunkMaxBytes: number;
}

/** A participant whose own files are rendered (see RenderContext.forEachRecordPack). */
export interface ParticipantUnit {
  participant_id: number;
  pid: string;
  name: string | null;
  first_seen_at: number;
}

/** The columns of a ParticipantUnit in participant_list. */
const UNIT_COLUMNS = 'participant_id, pid, name, first_seen_at';
const UNIT_COLUMNS_L = 'l.participant_id, l.pid, l.name, l.first_seen_at';

/** Page cache of SQLite's temporary database (sorts, the trigram table) while rendering, in KiB. */
const RENDER_TEMP_CACHE_KIB = 64 * 1024;

/**
 * Readies a render connection's temporary database: rendering sorts whole lists (the orders no index
 * serves) and builds the name trigram table on disk, with a bounded cache, so memory does not grow with
 * the number of participants (in memory, a sort of the 3 million participants at `peppol` held about
 * 500 MB). The main thread's connection (src/render/build.ts) and the worker's
 * (src/render/render-worker.ts); before any temporary table is made (changing temp_store drops them).
 */
export function renderTempStore(db: Db): void {
  db.pragma('temp_store = FILE');
  db.pragma(`temp.cache_size = ${-RENDER_TEMP_CACHE_KIB}`);
}

/** Record packs per batch of forEachRecordPack (about 1,500 participants at `peppol`). */
export const PACK_BATCH = 64;

/** The render unit of a record pack's file: above every participant's (a participant's unit is its id). */
export const RECORD_PACK_UNIT_BASE = 1_000_000_000_000;
export const recordPackUnit = (pack: number): number => RECORD_PACK_UNIT_BASE + pack;
/** The render unit of the grams index's files (src/render/grams.ts): above every record pack's. */
export const GRAMS_UNIT = 2 * RECORD_PACK_UNIT_BASE;

/** A record pack a build writes (RenderContext.forEachRecordPack). */
export interface RecordPackUnits {
  pack: number;
  /** Its participants whose own files this build renders, by id in code-point order. */
  units: ParticipantUnit[];
  /** The previous build's records of its other participants, by id, as the JSON texts written (an incremental build). */
  kept: Map<string, string>;
}

/** Code-point order of two ids (the order of a pack's records). */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The participant ids of every record pack: pack k's are ids[start[k], start[k + 1]). */
interface PackMembers {
  start: Int32Array;
  ids: Int32Array;
}

/** Every listed participant's id by pack (a pass over the list's ids, hashing each). */
function packMembers(db: Db): PackMembers {
  const n = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
  const ids = new Int32Array(n);
  const packs = new Int32Array(n);
  const start = new Int32Array(RECORD_PACKS + 1);
  let i = 0;
  for (const [id, pid] of db.prepare('SELECT participant_id, pid FROM participant_list').raw().iterate() as IterableIterator<[number, string]>) {
    if (i === n) break;
    ids[i] = id;
    packs[i] = recordPackOf(pid);
    start[packs[i]! + 1] = start[packs[i]! + 1]! + 1;
    i++;
  }
  for (let k = 0; k < RECORD_PACKS; k++) start[k + 1] = start[k + 1]! + start[k]!;
  const fill = start.slice(0, RECORD_PACKS);
  const out = new Int32Array(i);
  for (let j = 0; j < i; j++) {
    const k = packs[j]!;
    out[fill[k]!] = ids[j]!;
    fill[k] = fill[k]! + 1;
  }
  return { start, ids: out };
}

/** The index after the JSON string that starts at `i` (a '"'), or -1. */
function stringEnd(t: string, i: number): number {
  for (let k = i + 1; k < t.length; k++) {
    const c = t.charCodeAt(k);
    if (c === 0x5c) k++;
    else if (c === 0x22) return k + 1;
  }
  return -1;
}

/**
 * A record pack's records by id, each as the JSON text it holds (sliced, not parsed and serialised
 * again: a cycle keeps about 23 records of every pack it writes); parsed when the text is not as
 * packBody (src/render/routes/participants.ts) writes it. Throws when it is not a record pack.
 */
export function packRecordTexts(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const head = `{"format":${JSON.stringify(RECORD_PACK_FORMAT)},"records":{`;
  sliced: if (text.startsWith(head) && text.endsWith('}}')) {
    let i = head.length;
    const end = text.length - 2;
    while (i < end) {
      if (text.charCodeAt(i) !== 0x22) break sliced;
      const keyEnd = stringEnd(text, i);
      if (keyEnd < 0 || text.charCodeAt(keyEnd) !== 0x3a) break sliced;
      const id = JSON.parse(text.slice(i, keyEnd)) as string;
      // The value: an object, to its balanced end (strings skipped).
      const start = keyEnd + 1;
      if (text.charCodeAt(start) !== 0x7b) break sliced;
      let depth = 0;
      let k = start;
      for (; k < end; k++) {
        const c = text.charCodeAt(k);
        if (c === 0x22) {
          k = stringEnd(text, k) - 1;
          if (k < 0) break sliced;
        } else if (c === 0x7b || c === 0x5b) depth++;
        else if (c === 0x7d || c === 0x5d) {
          depth--;
          if (depth === 0) break;
        }
      }
      if (depth !== 0) break sliced;
      out.set(id, text.slice(start, k + 1));
      i = k + 1;
      if (i < end && text.charCodeAt(i++) !== 0x2c) break sliced;
    }
    if (i === end) return out;
  }
  const pack: unknown = JSON.parse(text);
  if (!isRecordPack(pack)) throw new Error('not a record pack');
  out.clear();
  for (const [id, record] of Object.entries(pack.records)) out.set(id, JSON.stringify(record));
  return out;
}

/** Participants by record pack. */
function groupByPack(units: Iterable<ParticipantUnit>): Map<number, ParticipantUnit[]> {
  const m = new Map<number, ParticipantUnit[]>();
  for (const u of units) {
    const k = recordPackOf(u.pid);
    const list = m.get(k);
    if (list === undefined) m.set(k, [u]);
    else list.push(u);
  }
  return m;
}

/** Participants grouped by record pack, in pack order, each pack's by id. */
function byPack(units: readonly ParticipantUnit[]): RecordPackUnits[] {
  const m = groupByPack(units);
  return [...m.keys()].sort((a, b) => a - b).map((pack) => ({ pack, units: m.get(pack)!.sort((a, b) => compareIds(a.pid, b.pid)), kept: new Map<string, string>() }));
}

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

/** How the record packs were rendered (BuildSummary.render.records; src/render/routes/participants.ts). */
export interface RecordsReport {
  /** Record packs written. */
  packs: number;
  /** Records rendered from the database. */
  rendered: number;
  /** Records taken from the previous build's packs (an incremental build). */
  kept: number;
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
  /** Set by the grams index's renderer: whether it wrote the index or kept the previous build's (gramsDue). */
  gramsReport: 'written' | 'updated' | 'kept' | null = null;
  /** Counted by the record packs' renderer (this thread's share). */
  readonly recordsReport: RecordsReport = { packs: 0, rendered: 0, kept: 0 };
  /** Set by the participant lists' renderer. */
  listsReport: ListsReport | null = null;
  /**
   * Parts of routes that another thread renders in this build (src/render/offload.ts: a full build's
   * worker), which the route's renderer here leaves out.
   */
  elsewhere: ReadonlySet<string> = new Set();
  /**
   * Whether the grams index is written (src/render/grams.ts): in a full build, and in an incremental
   * one whose change set names a participant whose list item may differ. Otherwise its files (unit
   * GRAMS_UNIT) are kept as the previous build wrote them: the index is made of the list items only.
   */
  gramsDue = true;
  /**
   * Where the grams index keeps its state between builds (src/render/grams-model.ts, beside the build's
   * state file); null: none, the index is mined from every name.
   */
  gramsStatePath: string | null = null;
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
     * forEachRecordPack takes ranges from here, shared with another thread rendering the same route
     * (src/render/offload.ts), instead of walking them all: of record packs with every participant,
     * of positions in the changed packs (ascending) with the changed ones.
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
   * Calls `fn` for each record pack this build writes (src/api/participants/record.ts), in pack order
   * (with shared `batches`: this thread's share, in order), with the pack's participants whose own
   * files (record, their events and history lists) it renders and the records it keeps from the
   * previous build's pack. `fn` puts a participant's files under its unit (inUnit(participant_id))
   * and the pack under the pack's (recordPackUnit). Batched: no statement stays open while `fn`
   * queries; `onBatch` sees each batch's participants before `fn` sees its packs.
   *
   * - Every participant: the packs in ranges, each pack's participants found from one pass over the
   *   list's ids (packMembers).
   * - Only the changed ones (`temp.render_packs`, `temp.render_participants`: collectChangedPacks):
   *   the packs they hash to; a pack's other records are kept from its previous file (readPrevious),
   *   or, where that file is absent (a pack nobody hashed to), its other participants are rendered.
   */
  forEachRecordPack(fn: (p: RecordPackUnits) => void, onBatch?: (batch: readonly ParticipantUnit[]) => void): void {
    try {
      for (const packs of this.recordPackBatches()) {
        onBatch?.(packs.flatMap((p) => p.units));
        for (const p of packs) fn(p);
      }
    } finally {
      this.sink.unit = BUILD_UNIT;
    }
  }

  /** Runs `fn` with the files it puts under render unit `unit`. */
  inUnit(unit: number, fn: () => void): void {
    const was = this.sink.unit;
    this.sink.unit = unit;
    try {
      fn();
    } finally {
      this.sink.unit = was;
    }
  }

  /**
   * The ranges [lo, hi) of PACK_BATCH positions among `count` that this thread takes: from the shared
   * batches when there are, else all of them in order (`hi` may pass `count`).
   */
  private batchRanges(count: number): () => [number, number] | null {
    const shared = this.batches;
    if (shared !== undefined) return () => shared.next();
    let lo = 0;
    return () => {
      if (lo >= count) return null;
      lo += PACK_BATCH;
      return [lo - PACK_BATCH, lo];
    };
  }

  /** The packs of forEachRecordPack, a batch at a time. */
  private *recordPackBatches(): Generator<RecordPackUnits[]> {
    const unitsOf = (ids: ArrayLike<number>): ParticipantUnit[] =>
      ids.length === 0 ? [] : [...rowObjects<ParticipantUnit>(rawStatement(this.db, `SELECT ${UNIT_COLUMNS} FROM participant_list WHERE participant_id IN (SELECT value FROM json_each(?))`), JSON.stringify(Array.from(ids)))];
    if (this.participants === 'all') {
      const members = packMembers(this.db);
      const next = this.batchRanges(RECORD_PACKS);
      for (let b = next(); b !== null; b = next()) {
        const lo = Math.min(b[0], RECORD_PACKS);
        const hi = Math.min(b[1], RECORD_PACKS);
        const packs = byPack(unitsOf(members.ids.subarray(members.start[lo], members.start[hi])));
        if (packs.length > 0) yield packs;
      }
      return;
    }
    // The changed participants (their ids as the ingested table has them: a participant no longer
    // listed leaves its pack too), and the listed ones among them, by pack.
    const changedIds = new Set(this.db.prepare('SELECT p.pid FROM temp.render_participants u JOIN participants p ON p.id = u.participant_id').pluck().all() as string[]);
    const changed = groupByPack(rowObjects<ParticipantUnit>(rawStatement(this.db, `SELECT ${UNIT_COLUMNS_L} FROM temp.render_participants u JOIN participant_list l ON l.participant_id = u.participant_id`)));
    const affected = this.db.prepare('SELECT pack FROM temp.render_packs ORDER BY pack').pluck().all() as number[];
    let members: PackMembers | null = null;
    // Positions in `affected` (with shared batches, the other thread lists the same packs).
    const next = this.batchRanges(affected.length);
    for (let b = next(); b !== null; b = next()) {
      const batch: RecordPackUnits[] = [];
      for (const pack of affected.slice(b[0], b[1])) {
        const kept = new Map<string, string>();
        const units = changed.get(pack) ?? [];
        let previous: Map<string, string> | null = null;
        try {
          previous = packRecordTexts(readStored(path.join(this.sink.outDir, recordPackPath(pack))).toString('utf8'));
        } catch {
          // absent: no participant hashed to the pack at the previous build (or its file is lost)
        }
        if (previous !== null) {
          for (const [id, text] of previous) if (!changedIds.has(id)) kept.set(id, text);
        } else {
          // Every other participant of the pack is rendered (its record is nowhere else).
          members ??= packMembers(this.db);
          const others = Array.from(members.ids.subarray(members.start[pack], members.start[pack + 1]));
          const listed = new Set(units.map((u) => u.participant_id));
          units.push(...unitsOf(others.filter((id) => !listed.has(id))));
        }
        batch.push({ pack, units: units.sort((a, b) => compareIds(a.pid, b.pid)), kept });
      }
      yield batch;
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
    layout: Pick<ListWriterOptions, 'minItems' | 'minBytes' | 'entryCounts' | 'head' | 'derivedKey' | 'indexFanout'> = {},
    /** Keep the list from build to build (a unit of its own in `lists`), to patch it in place later. */
    kept = false,
  ): { add: ListWriter['add']; addPending: ListWriter['addPending']; finish: () => void } {
    const root = listRootPath(routeId, partition);
    const sink = kept && this.lists ? this.unitSink(this.lists.unit(root)) : this.sink;
    const w = new ListWriter(sink, this.listOptions(dirs, facetFields, layout));
    return { add: w.add.bind(w), addPending: w.addPending.bind(w), finish: () => void w.finish(root) };
  }

  /** A list's writer options: the configured chunk budget and the list's layout. */
  listOptions(dirs: Direction[], facetFields?: readonly string[], layout: Pick<ListWriterOptions, 'minItems' | 'minBytes' | 'entryCounts' | 'head' | 'derivedKey' | 'indexFanout'> = {}): ListWriterOptions {
    return { dirs, maxItems: this.opts.chunkMaxItems, maxBytes: this.opts.chunkMaxBytes, facetFields, ...layout };
  }
}
