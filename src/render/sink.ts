// Writes snapshot files into the output directory and records the manifest.
//
// - Content-addressed files (cache class `immutable`) are written only when absent: same path, same bytes.
// - Other files are rewritten only when their bytes differ, so a rebuild with the same database and
//   `--now` rewrites nothing (file mtimes stay, and the publish diff is empty). An incremental build
//   knows the hash each file had (src/render/state.ts) and skips an unchanged one without reading it.
// - Each file is written to a temporary name and renamed into place, so a reader never sees half a file.
// - Manifest entries are rows of a SQLite table (not in JS memory: a peppol-scale snapshot has millions
//   of files), each with the render unit that wrote it: the build's state file (src/render/state.ts), or
//   an anonymous temporary database for a sink without one. They are written out sorted by path as
//   content-addressed shards (src/render/manifest.ts).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { FileSink } from './lists.js';
import { storedEncoding } from '../api/paths.js';
import { decodeStored, encodeStored, isGzip } from './stored.js';

export type CacheClass = 'mutable' | 'immutable' | 'meta';

export interface ManifestEntry {
  path: string;
  sha256: string;
  bytes: number;
  content_type: string;
  cache_class: CacheClass;
}

export interface SinkStats {
  files: number;
  written: number;
  bytes: number;
  /** Files written, by cache class (what a publish of this build uploads, before the manifest). */
  written_by_class: Record<CacheClass, number>;
}

/** Where the sink records its files: a database with the state's `files` table, in a transaction. */
export interface SinkStore {
  db: Database.Database;
  /**
   * The hash a file had at the earlier build, when it can be trusted (incremental builds). With it the
   * sink also records the paths whose entry may differ from the earlier manifest in `temp.touched`
   * (src/render/manifest.ts patchManifest).
   */
  previousSha?: (rel: string) => string | undefined;
  /**
   * The output directory was empty when the build began: a file put once is not on disk yet, so the
   * sink writes it without reading it first (the read of an absent file was 3% of a first build).
   */
  fresh?: boolean;
}

export const FILES_DDL = `CREATE TABLE IF NOT EXISTS files (
  path TEXT NOT NULL, unit INTEGER NOT NULL, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL,
  content_type TEXT NOT NULL, cache_class TEXT NOT NULL,
  PRIMARY KEY (path, unit)
) WITHOUT ROWID`;

/** Unit of the files every build renders again (src/render/state.ts). */
export const BUILD_UNIT = 0;

/** Directories remembered as made (see write). */
const MADE_DIRS_MAX = 4096;

export class DirectorySink implements FileSink {
  readonly stats: SinkStats = { files: 0, written: 0, bytes: 0, written_by_class: { immutable: 0, mutable: 0, meta: 0 } };
  private readonly entries: Database.Database;
  private readonly ownsEntries: boolean;
  private readonly insert: Database.Statement;
  private readonly hasPath: Database.Statement;
  private readonly previousSha: ((rel: string) => string | undefined) | undefined;
  private readonly fresh: boolean;
  private readonly touch: Database.Statement | undefined;
  private readonly madeDirs = new Set<string>();
  /** Files written outside the manifest (the manifest and its shards). */
  private readonly unlisted = new Set<string>();
  /** The render unit of the files put now (src/render/state.ts). */
  unit = BUILD_UNIT;

  constructor(
    readonly outDir: string,
    store?: SinkStore,
  ) {
    fs.mkdirSync(outDir, { recursive: true });
    this.ownsEntries = store === undefined;
    if (store === undefined) {
      this.entries = new Database(''); // anonymous temporary database on disk, removed on close
      this.entries.pragma('journal_mode = OFF');
      this.entries.pragma('synchronous = OFF');
      this.entries.exec(FILES_DDL);
      this.entries.exec('BEGIN');
    } else {
      this.entries = store.db;
      if (!this.entries.inTransaction) throw new Error('DirectorySink: the store must be in a transaction');
    }
    this.previousSha = store?.previousSha;
    this.fresh = store?.fresh === true;
    this.insert = this.entries.prepare('INSERT OR REPLACE INTO files (path, unit, sha256, bytes, content_type, cache_class) VALUES (?, ?, ?, ?, ?, ?)');
    if (this.previousSha) {
      this.entries.exec('CREATE TEMP TABLE IF NOT EXISTS touched (path TEXT PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.touched');
      this.touch = this.entries.prepare('INSERT OR IGNORE INTO temp.touched (path) VALUES (?)');
    }
    this.hasPath = this.entries.prepare('SELECT 1 FROM files WHERE path = ? LIMIT 1');
  }

  /**
   * Puts a file: `body` is its content, stored as encodeStored says (gzip for the parts the shim reads,
   * docs/snapshot-format.md "Stored encoding"); the manifest's sha256 and bytes are those of the
   * stored bytes.
   */
  put(rel: string, content: Uint8Array, contentType: string, cacheClass: CacheClass): void {
    // The hash the earlier build recorded, looked up once for both uses below.
    const was = this.previousSha?.(rel);
    // A content-addressed file already on disk (not in a directory that was empty: nothing is).
    const onDisk = cacheClass === 'immutable' && !this.fresh ? this.putKept(rel, content, contentType, was) : 'absent';
    if (onDisk === 'kept') return;
    // In a directory that was empty, a content-addressed file this sink has put is on disk already
    // (same name, same bytes): recorded for this unit too, not written again (no stat per file).
    const written = this.fresh && cacheClass === 'immutable' && this.has(rel);
    const body = encodeStored(rel, content);
    const sha = createHash('sha256').update(body).digest('hex');
    this.record(rel, sha, body.length, contentType, cacheClass);
    if (this.previousSha !== undefined) {
      // A file put again with its earlier hash leaves its manifest entry as it was. (A file of a unit
      // that was not retired, e.g. a new chunk of a list patched in place, may be new: touched.)
      if (was !== sha) this.touch!.run(rel);
      else if (cacheClass !== 'immutable') return;
    }
    if (!written) this.write(rel, body, cacheClass, true, onDisk === 'spoiled');
  }

  /**
   * A content-addressed file that is on disk is put again as the bytes already there: its name is the
   * hash of its content, so those bytes are the content, and the manifest names them, without
   * encoding the content again or writing it. (An uptime list re-cuts the chunks behind its head every
   * cycle, mostly into the chunks it had, and a full render over a tree finds most chunks there: gzip
   * and SHA-256 of those were a tenth of a sweep cycle's render worker at `peppol`, and most of the
   * list writer's time.)
   *
   * - Where the state vouches for the directory (`previousSha`; `recorded` is its hash for `rel`): the
   *   file the earlier build recorded is taken with that hash and its size on disk, unread.
   * - Otherwise (`--full`, a build after a killed one): the file is read and decoded, and kept when it
   *   is stored gzip-encoded with this content (hashed as read); else it is `spoiled` and written again.
   *
   * So the manifest names the bytes on disk even where this code would encode them otherwise (another
   * zlib, another level). 'absent': put as new.
   */
  private putKept(rel: string, content: Uint8Array, contentType: string, recorded: string | undefined): 'kept' | 'absent' | 'spoiled' {
    const abs = path.join(this.outDir, rel);
    let sha: string;
    let size: number;
    if (this.previousSha !== undefined) {
      const st = recorded === undefined ? undefined : fs.statSync(abs, { throwIfNoEntry: false });
      if (recorded === undefined || st === undefined) return 'absent';
      sha = recorded;
      size = st.size;
    } else {
      let disk: Buffer;
      try {
        disk = fs.readFileSync(abs);
      } catch {
        return 'absent';
      }
      const wanted = storedEncoding(rel) === 'gzip';
      let same = false;
      try {
        same = isGzip(disk) === wanted && decodeStored(disk).equals(content);
      } catch {
        // not a gzip stream after all: spoiled
      }
      if (!same) return 'spoiled';
      sha = createHash('sha256').update(disk).digest('hex');
      size = disk.length;
    }
    this.record(rel, sha, size, contentType, 'immutable');
    return 'kept';
  }

  /** A manifest entry of this build, counted. */
  private record(rel: string, sha: string, bytes: number, contentType: string, cacheClass: CacheClass): void {
    this.insert.run(rel, this.unit, sha, bytes, contentType, cacheClass);
    this.stats.files++;
    this.stats.bytes += bytes;
  }

  /**
   * Puts a file that was written streaming to a temporary name (a bulk download, src/bulk/): `file`
   * gives its temporary path, sha256 and size. Stored as it is (no encoding). When `previous` (the
   * hash the path had) equals the new hash and the file is there with that size, the temporary file
   * is removed and the earlier bytes stay (mtime included); otherwise it is renamed into place.
   * Returns whether it was written.
   */
  putFile(rel: string, file: { tmp: string; sha256: string; bytes: number }, contentType: string, cacheClass: CacheClass, previous?: string): boolean {
    this.record(rel, file.sha256, file.bytes, contentType, cacheClass);
    if (this.previousSha !== undefined && this.previousSha(rel) !== file.sha256) this.touch!.run(rel);
    const abs = path.join(this.outDir, rel);
    if (previous === file.sha256 && fs.statSync(abs, { throwIfNoEntry: false })?.size === file.bytes) {
      fs.rmSync(file.tmp, { force: true });
      return false;
    }
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.renameSync(file.tmp, abs);
    this.stats.written++;
    this.stats.written_by_class[cacheClass]++;
    return true;
  }

  /**
   * Adds the counts of files another sink put for this build (the render worker's, src/render/offload.ts),
   * less `twice` content-addressed files both wrote (counted once, as one sink writes them).
   */
  absorb(other: SinkStats, twice = 0): void {
    this.stats.files += other.files;
    this.stats.written += other.written - twice;
    this.stats.written_by_class.immutable -= twice;
    this.stats.bytes += other.bytes;
    for (const c of ['immutable', 'mutable', 'meta'] as const) this.stats.written_by_class[c] += other.written_by_class[c];
  }

  /** Whether a file belongs to this build (listed in the manifest, or the manifest itself). */
  keeps(rel: string): boolean {
    return this.unlisted.has(rel) || this.has(rel);
  }

  /** Writes a file that the manifest does not list (the manifest's own shards and manifest.json). */
  write(rel: string, body: Uint8Array, cacheClass: CacheClass, listed = false, spoiled = false): void {
    if (!listed) this.unlisted.add(rel);
    const abs = path.join(this.outDir, rel);
    if (cacheClass === 'immutable') {
      // Same name, same bytes; unless put found other bytes under the name (spoiled). In a directory
      // that was empty, only this build's threads write: put knows this sink's own, and a file both
      // threads write is renamed into place whole by each.
      if (!spoiled && !this.fresh && fs.existsSync(abs)) return;
    } else if (!this.fresh) {
      try {
        const old = fs.readFileSync(abs);
        if (old.length === body.length && Buffer.compare(old, body) === 0) return;
      } catch {
        // absent: write it
      }
    }
    const dir = path.dirname(abs);
    if (!this.madeDirs.has(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      // Bounded: a directory per participant (its events and history) would make this set grow with
      // the network; forgetting one only costs a repeated (idempotent) mkdir.
      if (this.madeDirs.size >= MADE_DIRS_MAX) this.madeDirs.clear();
      this.madeDirs.add(dir);
    }
    if (this.fresh && cacheClass !== 'immutable') {
      // A directory that was empty when the build began is no snapshot until the build commits: a file
      // only this build writes goes straight to its name (a rename per file was 5% of a first build).
      // A build that dies leaves no state, so the next one is full and compares every such file.
      // Content-addressed files keep the rename: being there must mean being whole.
      fs.writeFileSync(abs, body);
    } else {
      // Per thread: a full build's render worker (src/render/offload.ts) may write the same content-addressed file.
      const tmp = `${abs}.tmp-${process.pid}-${threadId}`;
      fs.writeFileSync(tmp, body);
      fs.renameSync(tmp, abs);
    }
    this.stats.written++;
    this.stats.written_by_class[cacheClass]++;
  }

  /** Manifest entries sorted by path (one per path: a content-addressed file may have several units). */
  *manifest(): Generator<ManifestEntry> {
    const q = this.entries.prepare('SELECT path, sha256, bytes, content_type, cache_class FROM files GROUP BY path ORDER BY path');
    for (const row of q.iterate()) yield row as ManifestEntry;
  }

  /** Whether a path belongs to the snapshot (this build's files and the earlier builds' it kept). */
  has(rel: string): boolean {
    return this.hasPath.get(rel) !== undefined;
  }

  close(): void {
    if (!this.ownsEntries) return;
    if (this.entries.inTransaction) this.entries.exec('COMMIT');
    this.entries.close();
  }
}
