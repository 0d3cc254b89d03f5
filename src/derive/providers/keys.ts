// Resolution of an AP key given in a URL to the current canonical identity key (stale keys included).
import type { Db } from '../../db/index.js';

/**
 * The canonical current key for `key`: the key itself when it names a current AP identity, else the
 * identity its alias points to (a seat or O= string now held by another identity), else null.
 */
export function resolveApKey(db: Db, key: string): string | null {
  const direct = db.prepare('SELECT key FROM ap_identities WHERE key = ?').pluck().get(key) as string | undefined;
  if (direct !== undefined) return direct;
  const alias = db.prepare('SELECT key FROM ap_key_aliases WHERE alias = ?').pluck().get(key) as string | undefined;
  return alias ?? null;
}

/** The seats an AP identity holds now, sorted. */
export function seatsOfKey(db: Db, key: string): string[] {
  return db.prepare('SELECT seat_id FROM seat_identities WHERE key = ? ORDER BY seat_id').pluck().all(key) as string[];
}
