// What `build` keeps of the previous build of an output directory, so that the next one renders only
// what changed (docs/incremental.md). A SQLite file beside the directory, `<out>.state.sqlite`:
//
// - `files`: every file of the snapshot (the manifest) with the render unit that wrote it: unit 0 for
//   the files every build renders again, a participant's id for its own files (detail, first events and
//   history pages, its event and history lists). A content-addressed path may belong to several units.
// - `lists`: the lists patched in place from build to build (the participant lists), each with a render
//   unit of its own (negative) for its root, chunks and index nodes (src/render/list-patch.ts).
// - `seats`: the seat identities the participant files were rendered with (a change re-renders the
//   participants whose endpoints name the seat).
// - `info`: the database's id, its derive watermark (`upto`), a fingerprint of the code and the
//   configuration, the sha256 of the manifest.json written, and `in_progress` while a build runs.
//
// An incremental build is allowed when all of these still describe the directory and the database; any
// doubt gives a full render, which is always correct. A killed build leaves `in_progress` set: the next
// build re-renders every changed unit again (the change rows are deleted only after the state that
// includes them is committed), compares file bytes instead of trusting recorded hashes, and walks the
// directory for leftovers.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import { getMeta, setMeta } from '../db/index.js';
import { changesFrom, ITEM_CHANGE_KIND, UPTIME_CHANGE_KINDS } from '../derive/changes.js';
import { parseEndpointSet } from '../derive/participants/endpoints.js';
import { recordPackOf } from '../api/participants/record.js';
import { LIST_COLUMNS, type ListRow } from '../api/participants/query.js';
import type { ListStore } from './context.js';
import { FILES_DDL } from './sink.js';
import { BULK_LATEST_UNIT, BULK_UNIT_MAX } from '../bulk/units.js';

/** Bumped when the meaning of the state changes (forces one full render). */
const STATE_VERSION = 2;


export type RenderPlan =
  /**
   * trusted: the state vouches for the directory (its last build finished and left the manifest it
   * recorded), so a file rendered again with the hash the state recorded for its path is on disk as it
   * is, unread: a render made full by new code or another database. Never for `--full`, which reads
   * and compares every file on disk.
   */
  | { mode: 'full'; reason: string; trusted: boolean }
  | { mode: 'incremental'; reason: string; since: number; recovering: boolean };

/**
 * What a state recorded, as its last build committed it: the hashes of its files, the files of each
 * unit, its kept lists.
 */
export interface RecordedState {
  sha(rel: string): string | undefined;
  /** The files a render unit held (path -> sha256): a kept list's, for the worker of an incremental build (src/render/offload.ts). */
  unitFiles(unit: number): Map<string, string>;
  /** The unit of a kept list (by root path), if the last build kept it. */
  listUnit(root: string): number | undefined;
  /** Root paths of the kept lists starting with `prefix`, sorted. */
  listRoots(prefix: string): string[];
  /** The smallest unit of a kept list (0 when none). */
  minListUnit(): number;
  close(): void;
}

/** Path of the state file of an output directory. */
export function statePath(outDir: string): string {
  return `${path.resolve(outDir).replace(/[/\\]+$/, '')}.state.sqlite`;
}

let codeHash: string | undefined;
/** sha256 of the code that renders (the bundle when run from dist/, this module's file otherwise). */
function codeIdentity(): string {
  if (codeHash === undefined) {
    const h = createHash('sha256');
    try {
      h.update(fs.readFileSync(fileURLToPath(import.meta.url)));
    } catch {
      h.update('unknown');
    }
    codeHash = h.digest('hex');
  }
  return codeHash;
}

/** What the rendered bytes depend on besides the database: the code and the render and edge settings. */
export function renderFingerprint(config: Pick<Config, 'render' | 'edge'>): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: STATE_VERSION, code: codeIdentity(), render: config.render, edge: config.edge }))
    .digest('hex');
}

/** The database's identity (created once): a state file never mixes two databases. */
export function databaseId(db: Db): string {
  let id = getMeta(db, 'db_id');
  if (id === null) {
    id = randomUUID();
    setMeta(db, 'db_id', id);
  }
  return id;
}

function fileSha(p: string): string | null {
  try {
    return createHash('sha256').update(fs.readFileSync(p)).digest('hex');
  } catch {
    return null;
  }
}

/**
 * What the last build recorded, as it committed it: a read-only connection of its own whose snapshot
 * is taken now, so what this build deletes or writes in its transaction is not seen. Each thread of a
 * full render the state vouches for opens its own, and so does the worker of an incremental build
 * (src/render/offload.ts).
 */
export function recordedState(file: string): RecordedState {
  const ro = new Database(file, { readonly: true, fileMustExist: true });
  ro.exec('BEGIN');
  // A path may belong to several units (a content-addressed file): the same bytes in each.
  const q = ro.prepare('SELECT sha256 FROM files WHERE path = ? LIMIT 1').pluck();
  const byUnit = ro.prepare('SELECT path, sha256 FROM files WHERE unit = ?').raw();
  const listUnit = ro.prepare('SELECT unit FROM lists WHERE root = ?').pluck();
  const listRoots = ro.prepare('SELECT root FROM lists WHERE substr(root, 1, length(?)) = ? ORDER BY root').pluck();
  const minListUnit = ro.prepare('SELECT min(unit) FROM lists').pluck();
  q.get(''); // the read transaction (and its snapshot) begins with the first read
  let open = true;
  // A list's files are asked for twice in a row (ListStore.paths, then retire): the last unit's are kept.
  let last: { unit: number; files: Map<string, string> } | null = null;
  return {
    sha: (rel) => (open ? (q.get(rel) as string | undefined) : undefined),
    unitFiles: (unit) => {
      if (!open) return new Map();
      if (last?.unit !== unit) last = { unit, files: new Map(byUnit.all(unit) as Array<[string, string]>) };
      return last.files;
    },
    listUnit: (root) => (open ? (listUnit.get(root) as number | undefined) : undefined),
    listRoots: (prefix) => (open ? (listRoots.all(prefix, prefix) as string[]) : []),
    minListUnit: () => Math.min(0, (open ? (minListUnit.get() as number | null) : null) ?? 0),
    close: () => {
      if (!open) return;
      open = false;
      ro.exec('COMMIT');
      ro.close();
    },
  };
}

export class RenderState {
  readonly db: Database.Database;
  private readonly info = new Map<string, string>();
  /** Set when the previous build did not finish. */
  readonly interrupted: boolean;

  private constructor(
    readonly outDir: string,
    readonly file: string,
  ) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma(`cache_size = ${-64 * 1024}`);
    // A state file of another version is started over (its fingerprint differs too: a full render).
    const version = this.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'info'").get() === undefined ? null : (this.db.prepare("SELECT value FROM info WHERE key = 'state_version'").pluck().get() as string | undefined);
    if (version !== null && version !== String(STATE_VERSION)) {
      for (const t of this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]) this.db.exec(`DROP TABLE "${t}"`);
    }
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      ${FILES_DDL};
      CREATE INDEX IF NOT EXISTS files_unit ON files (unit);
      CREATE TABLE IF NOT EXISTS seats (seat_id TEXT PRIMARY KEY, identity TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS shards (path TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS lists (root TEXT PRIMARY KEY, unit INTEGER NOT NULL UNIQUE) WITHOUT ROWID;
    `);
    this.db.prepare("INSERT OR REPLACE INTO info (key, value) VALUES ('state_version', ?)").run(String(STATE_VERSION));
    for (const r of this.db.prepare('SELECT key, value FROM info').all() as Array<{ key: string; value: string }>) this.info.set(r.key, r.value);
    this.interrupted = this.info.get('in_progress') === '1';
  }

  static open(outDir: string): RenderState {
    return new RenderState(path.resolve(outDir), statePath(outDir));
  }

  /** Decides between a full and an incremental render. */
  plan(opts: { db: Db; fingerprint: string; forceFull: boolean; upto: number }): RenderPlan {
    const i = this.info;
    const leftAsRecorded = (): boolean => fileSha(path.join(this.outDir, 'manifest.json')) === i.get('manifest_sha256');
    // A full render the state vouches for (RenderPlan): not after a killed build.
    const full = (reason: string, vouched = false): RenderPlan => ({ mode: 'full', reason, trusted: vouched && !this.interrupted && leftAsRecorded() });
    if (opts.forceFull) return full('requested (--full)');
    if (!i.has('manifest_sha256')) return full('no earlier build of this directory');
    if (i.get('db_id') !== databaseId(opts.db)) return full('the earlier build was of another database', true);
    if (i.get('fingerprint') !== opts.fingerprint) return full('the code or the render settings changed', true);
    const since = Number(i.get('upto'));
    if (!(since >= changesFrom(opts.db))) return full('the change set does not reach back to the earlier build', true);
    if (since > opts.upto) return full('the database is older than the earlier build', true);
    if (!leftAsRecorded()) return full('the directory is not the one the earlier build left');
    return { mode: 'incremental', reason: this.interrupted ? 'changes since the earlier build (which did not finish)' : 'changes since the earlier build', since, recovering: this.interrupted };
  }

  /** Marks a build as running (committed before any file is written) and opens the state transaction. */
  begin(): void {
    this.setInfo('in_progress', '1');
    this.db.exec('BEGIN');
  }

  /**
   * A full render: forget every file (the directory walk removes what this build does not write),
   * except the bulk downloads' (src/bulk/units.ts): dated copies of earlier days cannot be made again,
   * and src/bulk decides what to keep of them.
   */
  forgetAll(): void {
    this.db.prepare('DELETE FROM files WHERE unit NOT BETWEEN ? AND ?').run(BULK_LATEST_UNIT, BULK_UNIT_MAX);
    this.db.exec('DELETE FROM seats; DELETE FROM lists');
  }

  /** A value the state keeps (`info`), as committed by the previous build or set by this one. */
  infoValue(key: string): string | undefined {
    return this.info.get(key);
  }

  /** Sets a value of `info` within the build's transaction (committed with the build). */
  setInfoValue(key: string, value: string): void {
    this.setInfo(key, value);
  }

  /** The lists of this directory kept from build to build, by root path (src/render/context.ts ListStore). */
  listStore(patchable: boolean, patchLimit?: number): ListStore {
    this.ensureRetired();
    const unitOf = this.db.prepare('SELECT unit FROM lists WHERE root = ?').pluck();
    const insert = this.db.prepare('INSERT INTO lists (root, unit) VALUES (?, ?)');
    const paths = this.db.prepare('SELECT path FROM files WHERE unit = ?').pluck();
    const keep = this.db.prepare('INSERT OR IGNORE INTO temp.retired (path, sha256) SELECT path, sha256 FROM files WHERE unit = ? AND path = ?');
    const del = this.db.prepare('DELETE FROM files WHERE unit = ? AND path = ?');
    const roots = this.db.prepare("SELECT root FROM lists WHERE substr(root, 1, length(?)) = ? ORDER BY root").pluck();
    const drop = this.db.prepare('DELETE FROM lists WHERE root = ?');
    let next: number | undefined;
    const store: ListStore = {
      patchable,
      patchLimit,
      unit: (root) => {
        const u = unitOf.get(root) as number | undefined;
        if (u !== undefined) return u;
        next ??= Math.min(0, (this.db.prepare('SELECT min(unit) FROM lists').pluck().get() as number | null) ?? 0) - 1;
        insert.run(root, next);
        return next--;
      },
      has: (root) => unitOf.get(root) !== undefined,
      paths: (unit) => new Set(paths.all(unit) as string[]),
      retire: (unit, rels) => {
        for (const rel of rels) {
          keep.run(unit, rel);
          del.run(unit, rel);
        }
      },
      drop: (root) => {
        const u = unitOf.get(root) as number | undefined;
        if (u === undefined) return;
        this.retireUnits([u]);
        drop.run(root);
      },
      roots: (prefix) => roots.all(prefix, prefix) as string[],
    };
    return store;
  }

  /**
   * Retires the files of units this build renders again: their rows move to a temporary table (path,
   * sha256), whose paths no unit writes again are removed from the directory at the end.
   */
  retireUnits(units: Iterable<number>): void {
    this.ensureRetired();
    // Prepared once: a build retires a unit per event partition it writes again (thousands).
    this.retireStatements ??= {
      keep: this.db.prepare('INSERT OR IGNORE INTO temp.retired (path, sha256) SELECT path, sha256 FROM files WHERE unit = ?'),
      del: this.db.prepare('DELETE FROM files WHERE unit = ?'),
    };
    const { keep, del } = this.retireStatements;
    for (const u of units) {
      keep.run(u);
      del.run(u);
    }
  }

  /** The sha256 a retired file had (a mutable file with the same hash need not be read or written). */
  retiredSha(): (rel: string) => string | undefined {
    this.ensureRetired();
    const q = this.db.prepare('SELECT sha256 FROM temp.retired WHERE path = ?').pluck();
    return (rel) => q.get(rel) as string | undefined;
  }

  /**
   * Records this build's manifest shards (path -> bytes of the files it lists); returns the earlier
   * build's shards it no longer has (the manifest lists neither, so only the state knows them).
   */
  replaceShards(shards: ReadonlyMap<string, number>): string[] {
    const old = this.db.prepare('SELECT path FROM shards').pluck().all() as string[];
    this.db.exec('DELETE FROM shards');
    const ins = this.db.prepare('INSERT OR IGNORE INTO shards (path, bytes) VALUES (?, ?)');
    for (const [p, b] of shards) ins.run(p, b);
    return old.filter((p) => !shards.has(p));
  }

  /** Bytes of the files each of the earlier build's manifest shards lists. */
  shardBytes(): Map<string, number> {
    return new Map((this.db.prepare('SELECT path, bytes FROM shards').all() as Array<{ path: string; bytes: number }>).map((r) => [r.path, r.bytes]));
  }

  /** Deletes the retired files no unit wrote again, and `extra` paths; returns how many. */
  removeRetired(extra: readonly string[] = []): number {
    let n = 0;
    const rows = this.db.prepare('SELECT path FROM temp.retired r WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.path = r.path)').pluck().all() as string[];
    for (const rel of [...rows, ...extra]) {
      const abs = path.join(this.outDir, rel);
      try {
        fs.unlinkSync(abs);
        n++;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
      // As the full build's walk does: no empty directory stays behind.
      for (let dir = path.dirname(abs); dir.startsWith(this.outDir) && dir !== path.resolve(this.outDir); dir = path.dirname(dir)) {
        try {
          fs.rmdirSync(dir);
        } catch {
          break; // not empty (or gone)
        }
      }
    }
    return n;
  }

  /** Seat identities recorded at the earlier build: seat_id -> JSON of the identity row. */
  seats(): Map<string, string> {
    return new Map((this.db.prepare('SELECT seat_id, identity FROM seats').all() as Array<{ seat_id: string; identity: string }>).map((r) => [r.seat_id, r.identity]));
  }

  /** Records this build's state and commits it; clears `in_progress`. */
  commit(opts: { dbId: string; upto: number; fingerprint: string; manifestSha: string; seats: Map<string, string> }): void {
    this.db.exec('DELETE FROM seats');
    const ins = this.db.prepare('INSERT INTO seats (seat_id, identity) VALUES (?, ?)');
    for (const [s, v] of opts.seats) ins.run(s, v);
    this.setInfo('db_id', opts.dbId);
    this.setInfo('upto', String(opts.upto));
    this.setInfo('fingerprint', opts.fingerprint);
    this.setInfo('manifest_sha256', opts.manifestSha);
    this.setInfo('in_progress', '0');
    this.db.exec('COMMIT');
  }

  close(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
    this.db.close();
  }

  private retireStatements: { keep: Database.Statement; del: Database.Statement } | undefined;
  private retiredMade = false;

  private ensureRetired(): void {
    if (this.retiredMade) return;
    this.db.exec('CREATE TEMP TABLE IF NOT EXISTS retired (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID');
    this.retiredMade = true;
  }

  private setInfo(key: string, value: string): void {
    this.db.prepare('INSERT INTO info (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
    this.info.set(key, value);
  }
}

// ---------------------------------------------------------------------------------------------
// Which participants' own files a build renders again

/** The seat identities participant files show (src/derive/participants/read.ts seatProvider). */
export function currentSeats(db: Db): Map<string, string> {
  const out = new Map<string, string>();
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'seat_identities'").get() !== undefined;
  if (!has) return out;
  for (const r of db.prepare('SELECT seat_id, name, verified, slug, country FROM seat_identities').all() as Array<Record<string, unknown> & { seat_id: string }>) {
    out.set(r.seat_id, JSON.stringify([r.name, r.verified, r.slug, r.country]));
  }
  return out;
}

/** Seats whose identity differs between two recordings (added, removed or changed). */
export function changedSeats(before: Map<string, string>, after: Map<string, string>): Set<string> {
  const out = new Set<string>();
  for (const [s, v] of after) if (before.get(s) !== v) out.add(s);
  for (const s of before.keys()) if (!after.has(s)) out.add(s);
  return out;
}

/** `temp.render_participants`, created empty (collectChangedParticipants, useChangedParticipants). */
const RENDER_PARTICIPANTS_DDL = 'DROP TABLE IF EXISTS temp.render_participants; CREATE TEMP TABLE render_participants (participant_id INTEGER PRIMARY KEY)';
const RENDER_LIST_PARTICIPANTS_DDL = 'DROP TABLE IF EXISTS temp.render_list_participants; CREATE TEMP TABLE render_list_participants (participant_id INTEGER PRIMARY KEY)';

/**
 * Fills `temp.render_participants` with the participants whose own files this build renders again:
 * those the change set names after `since`, and those whose endpoints name a seat whose identity
 * changed; and `temp.render_list_participants` with those of them whose list item may differ (a
 * changed list row, or a changed name of their serving seat). Returns how many of the first.
 */
export function collectChangedParticipants(db: Db, since: number, upto: number, seats: Set<string>): number {
  db.exec(RENDER_PARTICIPANTS_DDL);
  db.prepare("INSERT OR IGNORE INTO temp.render_participants SELECT key FROM derive_changes WHERE kind = 'participant' AND seq > ? AND seq <= ?").run(since, upto);
  // Of these, the participants whose list item may differ (src/derive/changes.ts ITEM_CHANGE_KIND),
  // and below those who show a changed seat's name.
  db.exec(RENDER_LIST_PARTICIPANTS_DDL);
  db.prepare('INSERT OR IGNORE INTO temp.render_list_participants SELECT key FROM derive_changes WHERE kind = ? AND seq > ? AND seq <= ?').run(ITEM_CHANGE_KIND, since, upto);
  if (seats.size > 0) {
    // Rare (a seat's curation or organisation changed): the endpoint sets that name it, then their
    // participants (a scan of the list: no index on endpoint_set_id).
    const sets: number[] = [];
    for (const r of db.prepare('SELECT id, endpoints FROM endpoint_sets').iterate() as IterableIterator<{ id: number; endpoints: string }>) {
      if (parseEndpointSet(r.id, r.endpoints).seats.some((s) => seats.has(s))) sets.push(r.id);
    }
    db.exec('DROP TABLE IF EXISTS temp.render_sets; CREATE TEMP TABLE render_sets (id INTEGER PRIMARY KEY)');
    const ins = db.prepare('INSERT INTO temp.render_sets (id) VALUES (?)');
    for (const id of sets) ins.run(id);
    db.exec('INSERT OR IGNORE INTO temp.render_participants SELECT participant_id FROM participant_list WHERE endpoint_set_id IN (SELECT id FROM temp.render_sets)');
    // The list items show the serving seat's curated name (ap_provider).
    const bySeat = db.prepare('INSERT OR IGNORE INTO temp.render_list_participants SELECT participant_id FROM participant_list WHERE ap_seat_id = ?');
    for (const s of seats) bySeat.run(s);
    db.exec('DROP TABLE temp.render_sets');
  }
  // A participant whose list item may differ is rendered again too (derive records a list row's change
  // under both kinds; the seat's participants are added here).
  db.exec('INSERT OR IGNORE INTO temp.render_participants SELECT participant_id FROM temp.render_list_participants');
  return db.prepare('SELECT count(*) FROM temp.render_participants').pluck().get() as number;
}

/**
 * A participant of `temp.render_list_participants`: its id, canonical id and value, and its list row
 * now (`present` null, and the row's fields with it: no longer listed).
 */
export type ChangedListRow = { id: number; id_pid: string; id_value: string; present: number | null } & { [K in keyof ListRow]: ListRow[K] | null };

/** The participants whose list item may differ (collectChangedParticipants), with their list rows now. */
export function changedListRows(db: Db): ChangedListRow[] {
  const cols = LIST_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ');
  return db
    .prepare(
      `SELECT u.participant_id AS id, p.pid AS id_pid, p.value AS id_value, l.participant_id AS present, ${cols}
       FROM temp.render_list_participants u JOIN participants p ON p.id = u.participant_id
       LEFT JOIN participant_list l ON l.participant_id = u.participant_id`,
    )
    .all() as ChangedListRow[];
}

/**
 * Fills `temp.render_participants` with the given participants, and `temp.render_list_participants`
 * with those whose list item may differ: the sets the main thread collected
 * (collectChangedParticipants), on another connection (the worker of an incremental build).
 */
export function useChangedParticipants(db: Db, ids: readonly number[], listIds: readonly number[]): void {
  db.exec(RENDER_PARTICIPANTS_DDL);
  const ins = db.prepare('INSERT OR IGNORE INTO temp.render_participants (participant_id) VALUES (?)');
  for (const id of ids) ins.run(id);
  db.exec(RENDER_LIST_PARTICIPANTS_DDL);
  const insList = db.prepare('INSERT OR IGNORE INTO temp.render_list_participants (participant_id) VALUES (?)');
  for (const id of listIds) insList.run(id);
}

/**
 * Fills `temp.render_packs` with the record packs (src/api/participants/record.ts) of the participants
 * in `temp.render_participants` (collectChangedParticipants): the packs this build writes again.
 * Returns them, ascending (the order RenderContext.forEachRecordPack takes them in).
 */
export function collectChangedPacks(db: Db): number[] {
  db.exec('DROP TABLE IF EXISTS temp.render_packs; CREATE TEMP TABLE render_packs (pack INTEGER PRIMARY KEY)');
  const packs = new Set<number>();
  for (const pid of db.prepare('SELECT p.pid FROM temp.render_participants u JOIN participants p ON p.id = u.participant_id').pluck().iterate() as IterableIterator<string>) packs.add(recordPackOf(pid));
  const ins = db.prepare('INSERT INTO temp.render_packs (pack) VALUES (?)');
  const sorted = [...packs].sort((a, b) => a - b);
  for (const k of sorted) ins.run(k);
  return sorted;
}

/**
 * Fills `temp.render_uptime` with, per host and uptime table (kind `uptime_hourly`, ...), the oldest
 * bucket_start the change set records after `since` (src/derive/changes.ts): the host's uptime list of
 * that resolution is re-read from there on (src/render/routes/host-uptime.ts). Returns how many rows.
 */
export function collectUptimeChanges(db: Db, since: number, upto: number): number {
  db.exec('DROP TABLE IF EXISTS temp.render_uptime; CREATE TEMP TABLE render_uptime (host_id INTEGER NOT NULL, kind TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (host_id, kind)) WITHOUT ROWID');
  const kinds = UPTIME_CHANGE_KINDS.map((k) => `'${k}'`).join(', ');
  // A row without `at` (none is written so) counts as a change of every bucket.
  return db
    .prepare(`INSERT INTO temp.render_uptime (host_id, kind, at) SELECT key, kind, min(coalesce(at, ${-Number.MAX_SAFE_INTEGER})) FROM derive_changes WHERE kind IN (${kinds}) AND seq > ? AND seq <= ? GROUP BY key, kind`)
    .run(since, upto).changes;
}

/**
 * Fills `temp.render_events` with the event feed's partitions (family, part) the change set records
 * after `since` (src/derive/changes.ts): their lists are written again, the others kept
 * (src/render/routes/events.ts). Returns how many.
 */
export function collectEventChanges(db: Db, since: number, upto: number): number {
  db.exec('DROP TABLE IF EXISTS temp.render_events; CREATE TEMP TABLE render_events (family TEXT NOT NULL, part TEXT NOT NULL, PRIMARY KEY (family, part)) WITHOUT ROWID');
  return db.prepare('INSERT OR IGNORE INTO temp.render_events (family, part) SELECT family, part FROM derive_event_changes WHERE seq > ? AND seq <= ?').run(since, upto).changes;
}
