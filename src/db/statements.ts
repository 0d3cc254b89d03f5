// Prepared statements reused per connection: the per-participant reads of a full build run for every
// participant (3 million at the peppol scale), and preparing their SQL each time was about a tenth of
// a build's CPU. `statement` is for statements run with get()/all(); an iterating statement is busy
// until its iterator ends, so `iterating` gives a fresh one while the shared one is busy (nested or
// unfinished iterations).
import type Database from 'better-sqlite3';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** The connection's prepared statement for `sql` (prepared once). */
export function statement(db: Database.Database, sql: string): Database.Statement {
  let m = caches.get(db);
  if (m === undefined) caches.set(db, (m = new Map()));
  let s = m.get(sql);
  if (s === undefined) m.set(sql, (s = db.prepare(sql)));
  return s;
}

/** The connection's prepared statement for `sql` to iterate, or a fresh one while it is busy. */
export function iterating(db: Database.Database, sql: string): Database.Statement {
  const s = statement(db, sql);
  return s.busy ? db.prepare(sql) : s;
}

/**
 * Iterates the rows of `stmt` as plain objects built here from its raw arrays. better-sqlite3 builds a
 * row object property by property in C++, which cost a quarter to a third more per row: measured at
 * `peppol` over the participant list's rows (ten columns) and the participants' history rows
 * (docs/benchmarks.md "Rows read as arrays"). Switches the statement to raw mode for good: give it a
 * statement of its own (`rawStatement`, or one prepared for this use).
 */
export function* rowObjects<T>(stmt: Database.Statement, ...args: unknown[]): Generator<T> {
  stmt.raw(true);
  const names = stmt.columns().map((c) => c.name);
  const n = names.length;
  for (const a of stmt.iterate(...args) as IterableIterator<unknown[]>) {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) o[names[i]!] = a[i];
    // The caller names the row its SQL selects, as a cast of better-sqlite3's own rows would.
    yield o as T;
  }
}

const rawCaches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** The connection's prepared statement for `sql` in raw mode, for rowObjects (prepared once; a fresh one while it is busy). */
export function rawStatement(db: Database.Database, sql: string): Database.Statement {
  let m = rawCaches.get(db);
  if (m === undefined) rawCaches.set(db, (m = new Map()));
  let s = m.get(sql);
  if (s === undefined) m.set(sql, (s = db.prepare(sql).raw(true)));
  return s.busy ? db.prepare(sql).raw(true) : s;
}
