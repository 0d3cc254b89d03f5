// Locks that survive crashes: one `peppol-snapshot` process at a time works on a database or a
// snapshot directory (`run`, `ingest`, `build`, `publish`; docs/publish.md, "Locks").
//
// The lock is an operating-system lock, not the existence of a file: the process holds an exclusive
// SQLite transaction on `<resource>.lock` (a POSIX advisory lock, released by the kernel when the
// process ends in any way, SIGKILL and power loss included). A lock left by a dead process is
// therefore free at once, with no PID checks that could be fooled by a reused PID. Beside it,
// `<resource>.lock.json` says who holds it (pid, host, command, since): a second process that finds the
// lock taken names the holder, and a process that takes over from a crashed one says whose lock it
// was. Locks are reentrant within a process: `run` holds both of its locks while it calls ingest,
// build and publish, which take them again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { EXIT_LOCKED } from './errors.js';

export interface LockHolder {
  pid: number;
  host: string;
  command: string;
  started_at: string;
}

export class LockedError extends Error {
  readonly exitCode = EXIT_LOCKED;
  constructor(
    readonly lockFile: string,
    readonly holder: LockHolder | null,
  ) {
    const who = holder ? `${holder.command} (pid ${holder.pid} on ${holder.host}, since ${holder.started_at})` : 'another process';
    super(`${lockFile} is held by ${who}; try again when it has finished`);
    this.name = 'LockedError';
  }
}

export interface Lock {
  readonly file: string;
  /** The holder of a lock its process left behind when it died (taken over), else null. */
  readonly tookOver: LockHolder | null;
  release(): void;
}

interface Held {
  db: Database.Database;
  count: number;
  info: string;
}

const held = new Map<string, Held>();

/** The lock file of a database file or a directory: `<path>.lock` beside it. */
export function lockFileOf(resource: string): string {
  return `${path.resolve(resource).replace(/[/\\]+$/, '')}.lock`;
}

function readHolder(infoFile: string): LockHolder | null {
  try {
    const v = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as Partial<LockHolder>;
    if (typeof v.pid === 'number' && typeof v.host === 'string' && typeof v.command === 'string' && typeof v.started_at === 'string') {
      return { pid: v.pid, host: v.host, command: v.command, started_at: v.started_at };
    }
  } catch {
    // absent or being replaced: unknown holder
  }
  return null;
}

/**
 * Takes the lock of `resource` (a database file or a directory) for `command`, or throws LockedError
 * at once when another process holds it.
 */
export function acquireLock(resource: string, command: string): Lock {
  const file = lockFileOf(resource);
  const info = `${file}.json`;
  const mine = held.get(file);
  if (mine) {
    mine.count++;
    return { file, tookOver: null, release: () => release(file) };
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 0');
    db.exec('BEGIN EXCLUSIVE');
  } catch (e) {
    db.close();
    if ((e as { code?: unknown }).code === 'SQLITE_BUSY') throw new LockedError(file, readHolder(info));
    throw e;
  }
  // A holder file of someone else's means that process ended without releasing the lock.
  const before = readHolder(info);
  const tookOver = before && !(before.pid === process.pid && before.host === os.hostname()) ? before : null;
  const me: LockHolder = { pid: process.pid, host: os.hostname(), command, started_at: new Date().toISOString() };
  const tmp = `${info}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `${JSON.stringify(me)}\n`);
  fs.renameSync(tmp, info);
  held.set(file, { db, count: 1, info });
  return { file, tookOver, release: () => release(file) };
}

function release(file: string): void {
  const h = held.get(file);
  if (!h) return;
  if (--h.count > 0) return;
  held.delete(file);
  try {
    fs.rmSync(h.info, { force: true });
  } finally {
    h.db.exec('ROLLBACK');
    h.db.close();
  }
}

/** Runs `fn` holding the locks of `resources` (taken in order; released in reverse, also on failure). */
export async function withLocks<T>(resources: readonly string[], command: string, fn: (locks: Lock[]) => Promise<T> | T): Promise<T> {
  const locks: Lock[] = [];
  try {
    for (const r of resources) locks.push(acquireLock(r, command));
    return await fn(locks);
  } finally {
    for (const l of locks.reverse()) l.release();
  }
}
