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
