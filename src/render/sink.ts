// Writes snapshot files into the output directory and collects the manifest.
//
// - Content-addressed files (cache class `immutable`) are written only when absent: same path, same bytes.
// - Other files are rewritten only when their bytes differ, so a rebuild with the same database and
//   `--now` rewrites nothing (file mtimes stay, and the publish diff is empty).
// - Each file is written to a temporary name and renamed into place, so a reader never sees half a file.
// - Manifest entries are kept in a temporary SQLite table (not in JS memory: a peppol-scale snapshot has
//   millions of files) and written out sorted by path as content-addressed shards (src/render/manifest.ts).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { FileSink } from './lists.js';

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
}

/** Directories remembered as made (see write). */
const MADE_DIRS_MAX = 4096;

export class DirectorySink implements FileSink {
  readonly stats: SinkStats = { files: 0, written: 0, bytes: 0 };
  private readonly entries: Database.Database;
  private readonly insert: Database.Statement;
  private readonly madeDirs = new Set<string>();
  /** Files written outside the manifest (the manifest and its shards). */
  private readonly unlisted = new Set<string>();

  constructor(readonly outDir: string) {
    fs.mkdirSync(outDir, { recursive: true });
    this.entries = new Database(''); // anonymous temporary database on disk, removed on close
    this.entries.pragma('journal_mode = OFF');
    this.entries.pragma('synchronous = OFF');
    this.entries.exec('CREATE TABLE m (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, content_type TEXT NOT NULL, cache_class TEXT NOT NULL) WITHOUT ROWID');
    this.insert = this.entries.prepare('INSERT OR REPLACE INTO m VALUES (?, ?, ?, ?, ?)');
    this.entries.exec('BEGIN');
  }

  put(rel: string, body: Uint8Array, contentType: string, cacheClass: CacheClass): void {
    const sha = createHash('sha256').update(body).digest('hex');
    this.insert.run(rel, sha, body.length, contentType, cacheClass);
    this.stats.files++;
    this.stats.bytes += body.length;
    this.write(rel, body, cacheClass, true);
  }

  /** Whether a file belongs to this build (listed in the manifest, or the manifest itself). */
  keeps(rel: string): boolean {
    return this.unlisted.has(rel) || this.has(rel);
  }

  /** Writes a file that the manifest does not list (the manifest's own shards and manifest.json). */
  write(rel: string, body: Uint8Array, cacheClass: CacheClass, listed = false): void {
    if (!listed) this.unlisted.add(rel);
    const abs = path.join(this.outDir, rel);
    if (cacheClass === 'immutable') {
      if (fs.existsSync(abs)) return;
    } else {
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
    const tmp = `${abs}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, body);
    fs.renameSync(tmp, abs);
    this.stats.written++;
  }

  /** Manifest entries sorted by path. */
  *manifest(): Generator<ManifestEntry> {
    this.entries.exec('COMMIT');
    for (const row of this.entries.prepare('SELECT path, sha256, bytes, content_type, cache_class FROM m ORDER BY path').iterate()) yield row as ManifestEntry;
    this.entries.exec('BEGIN');
  }

  /** Whether a path was put in this build. */
  has(rel: string): boolean {
    return this.entries.prepare('SELECT 1 FROM m WHERE path = ?').get(rel) !== undefined;
  }

  close(): void {
    if (this.entries.inTransaction) this.entries.exec('COMMIT');
    this.entries.close();
  }
}
