// Prepared statements reused per connection: the per-participant reads of a full build run for every
// participant (3 million at the peppol scale), and preparing their SQL each time was about a tenth of
// a build's CPU. `statement` is for statements run with get()/all(); an iterating statement is busy
// until its iterator ends, so `iterating` gives a fresh one while the shared one is busy (nested or
// unfinished iterations).
import type Database from 'better-sqlite3';

type Prepare = (db: Database.Database, sql: string) => Database.Statement;
type Cache = WeakMap<Database.Database, Map<string, Database.Statement>>;

/** The statement `cache` holds for `sql` on the connection, prepared once by `prepare`. */
function cached(cache: Cache, prepare: Prepare, db: Database.Database, sql: string): Database.Statement {
  let m = cache.get(db);
  if (m === undefined) cache.set(db, (m = new Map()));
  let s = m.get(sql);
  if (s === undefined) m.set(sql, (s = prepare(db, sql)));
  return s;
}

/** The cached statement to iterate, or a fresh one while it is busy. */
function idle(cache: Cache, prepare: Prepare, db: Database.Database, sql: string): Database.Statement {
  const s = cached(cache, prepare, db, sql);
  return s.busy ? prepare(db, sql) : s;
}

const caches: Cache = new WeakMap();
const plain: Prepare = (db, sql) => db.prepare(sql);

/** The connection's prepared statement for `sql` (prepared once). */
export function statement(db: Database.Database, sql: string): Database.Statement {
  return cached(caches, plain, db, sql);
}

/** The connection's prepared statement for `sql` to iterate, or a fresh one while it is busy. */
export function iterating(db: Database.Database, sql: string): Database.Statement {
  return idle(caches, plain, db, sql);
}

/**
 * Iterates the rows of `stmt` as plain objects built here from its raw arrays. better-sqlite3 builds a
 * row object property by property in C++, which cost a quarter to a third more per row: measured at
 * `peppol` over the participant list's rows (ten columns) and the participants' history rows
 * (docs/benchmarks.md "Rows read as arrays; chunks at zlib level 1"). Switches the statement to raw mode for good: give it a
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

const rawCaches: Cache = new WeakMap();
const raw: Prepare = (db, sql) => db.prepare(sql).raw(true);

/** The connection's prepared statement for `sql` in raw mode, for rowObjects (prepared once; a fresh one while it is busy). */
export function rawStatement(db: Database.Database, sql: string): Database.Statement {
  return idle(rawCaches, raw, db, sql);
}
