// Reading an ingested database back in tests: whole-table dumps (small databases), a digest of every
// table (large ones, streamed), and single counts.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';

/** Tables that hold run-specific bookkeeping (attempt times, the source URL) rather than data. */
const SKIPPED_TABLES = new Set(['sources']);
/** Columns that hold clocks of the run. */
const SKIPPED_COLUMNS = new Set(['ingested_at']);

function tables(db: Database.Database): string[] {
  return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[])
    .map((t) => t.name)
    .filter((t) => !SKIPPED_TABLES.has(t));
}

/** Every table's rows except bookkeeping clocks, in key order: two databases with equal dumps hold the same data. */
export function dump(dbPath: string): Record<string, unknown[]> {
  const db = new Database(dbPath, { readonly: true });
  const out: Record<string, unknown[]> = {};
  for (const t of tables(db)) {
    const rows = db.prepare(`SELECT * FROM ${t} ORDER BY 1`).all() as Record<string, unknown>[];
    out[t] = rows.map((r) => {
      const { ingested_at: _ignored, ...rest } = r;
      return rest;
    });
  }
  db.close();
  return out;
}

/**
 * A sha256 per table of its rows (all columns but bookkeeping clocks, in the order of every column),
 * streamed: for databases too large to hold as objects. Equal digests, equal data.
 */
export function digest(dbPath: string): Record<string, { rows: number; sha256: string }> {
  const db = new Database(dbPath, { readonly: true });
  const out: Record<string, { rows: number; sha256: string }> = {};
  for (const t of tables(db)) {
    const cols = (db.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).pluck().all(t) as string[]).filter((c) => !SKIPPED_COLUMNS.has(c));
    const order = cols.map((_, i) => i + 1).join(', ');
    const h = createHash('sha256');
    let rows = 0;
    for (const r of db.prepare(`SELECT ${cols.join(', ')} FROM ${t} ORDER BY ${order}`).raw().iterate() as Iterable<unknown[]>) {
      h.update(JSON.stringify(r));
      h.update('\n');
      rows++;
    }
    out[t] = { rows, sha256: h.digest('hex') };
  }
  db.close();
  return out;
}

/** The single value of `sql` (0 when it gives null). */
export function count(dbPath: string, sql: string): number {
  const db = new Database(dbPath, { readonly: true });
  const n = (db.prepare(sql).pluck().get() as number) ?? 0;
  db.close();
  return n;
}
