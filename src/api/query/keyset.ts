// Keyset SQL of the oracle: the ORDER BY of a list order and the condition "row after a key", for
// every list the oracle pages (participants, events, uptime). Nulls sort last in both directions
// (src/api/sort-keys.ts), so a nullable column orders by `c IS NULL` first.
import type { Direction, SortKey } from '../sort-keys.js';
import type { OrderSpec } from '../routes/types.js';

/** One column of a keyset: its SQL expression, direction and whether it may hold null. */
export interface KeysetColumn {
  readonly sql: string;
  readonly dir: Direction;
  readonly nullable?: boolean;
}

/** The keyset columns of a declared order, each field mapped to its SQL expression. */
export function keysetOf(order: OrderSpec, column: Readonly<Record<string, string>>): KeysetColumn[] {
  return order.fields.map((f) => {
    const sql = column[f.field];
    if (sql === undefined) throw new Error(`keysetOf: no column for ${f.field}`);
    return { sql, dir: f.dir, nullable: f.nullable === true };
  });
}

/** The same columns read in the opposite direction (a walk toward the other end of the list). */
export function reversed(cols: readonly KeysetColumn[]): KeysetColumn[] {
  return cols.map((c) => ({ ...c, dir: c.dir === 'asc' ? 'desc' : 'asc' }));
}

/** ORDER BY of the columns. */
export function orderBySql(cols: readonly KeysetColumn[]): string {
  return cols
    .map((c) => {
      const d = c.dir === 'desc' ? 'DESC' : 'ASC';
      return c.nullable ? `${c.sql} IS NULL, ${c.sql} ${d}` : `${c.sql} ${d}`;
    })
    .join(', ');
}

/**
 * SQL condition "row after `key`" in the columns' order, with its arguments; `inclusive`: at or
 * after. On a nullable column nothing lies after a null, and after a value lie the further values and
 * null.
 */
export function afterSql(cols: readonly KeysetColumn[], key: SortKey, opts: { inclusive?: boolean } = {}): { sql: string; args: unknown[] } {
  const ors: string[] = [];
  const args: unknown[] = [];
  const eqs: string[] = [];
  const eqArgs: unknown[] = [];
  cols.forEach((c, i) => {
    const k = key[i] ?? null;
    const last = i === cols.length - 1;
    if (k !== null) {
      const op = (c.dir === 'desc' ? '<' : '>') + (last && opts.inclusive ? '=' : '');
      const beyond = c.nullable ? `(${c.sql} ${op} ? OR ${c.sql} IS NULL)` : `${c.sql} ${op} ?`;
      ors.push(eqs.length === 0 ? beyond : `(${[...eqs, beyond].join(' AND ')})`);
      args.push(...eqArgs, k);
    } else if (last && opts.inclusive) {
      ors.push(eqs.length === 0 ? `${c.sql} IS NULL` : `(${[...eqs, `${c.sql} IS NULL`].join(' AND ')})`);
      args.push(...eqArgs);
    }
    if (k === null) eqs.push(`${c.sql} IS NULL`);
    else {
      eqs.push(`${c.sql} = ?`);
      eqArgs.push(k);
    }
  });
  return ors.length === 0 ? { sql: '0', args: [] } : { sql: `(${ors.join(' OR ')})`, args };
}
