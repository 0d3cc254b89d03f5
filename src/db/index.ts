// SQLite connection (better-sqlite3): WAL, foreign keys, migrations by PRAGMA user_version.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';

export type Db = Database.Database;

export interface OpenOptions {
  readonly?: boolean;
  /** Page cache in MiB (default 256). */
  cacheMiB?: number;
}

export function openDb(path: string, opts: OpenOptions = {}): Db {
  if (!opts.readonly && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
  if (!opts.readonly) {
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a crash can lose the last transactions but never corrupts the database;
    // ingest is idempotent, so a lost segment is simply ingested again on the next run.
    db.pragma('synchronous = NORMAL');
  }
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 10000');
  db.pragma(`cache_size = ${-1024 * (opts.cacheMiB ?? 256)}`);
  db.pragma('temp_store = MEMORY');
  if (!opts.readonly) migrate(db);
  else {
    const v = userVersion(db);
    if (v !== SCHEMA_VERSION) {
      db.close();
      throw new Error(`${path}: database schema version ${v}, this build needs ${SCHEMA_VERSION}; run ingest or build once to migrate`);
    }
  }
  return db;
}

/**
 * Copies the write-ahead log into the database and empties it, without waiting on a reader: one that
 * holds an older snapshot (the background bulk writer, docs/bulk.md "Cadence") would make TRUNCATE wait
 * the busy timeout, then give up all the same. The frames it still reads stay in the log until a later
 * checkpoint finds no such reader. The connection's busy timeout is restored.
 */
export function emptyWal(db: Db): void {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

export function userVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Applies every migration newer than the database's user_version, each in its own transaction. */
export function migrate(db: Db): number {
  const current = userVersion(db);
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this build (${SCHEMA_VERSION}); upgrade peppol-snapshot`);
  }
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
  return SCHEMA_VERSION - current;
}

export function getMeta(db: Db, key: string): string | null {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row ? row.value : null;
}

export function setMeta(db: Db, key: string, value: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
}
