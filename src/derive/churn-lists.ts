// Streaming readers of the churn tables for the renderer: every AP identity's churn per UTC day and the
// participants behind each category, ordered by identity key so that one pass writes one list per
// identity (src/render/routes/providers.ts). Same resolution rules as the readers of churn.ts: seats
// resolve to their current identity; movers whose counterpart resolves to the same identity are no churn.
import type { Db } from '../db/index.js';
import type { ChurnCategory } from './churn.js';

export interface ChurnDailyRow {
  owner: string;
  day: string;
  category: ChurnCategory;
  n: number;
  /** Counterpart identity key (movers), null for joiners and leavers. */
  ckey: string | null;
  /** Counterpart identity's current name (a bare seat's name is its seat id). */
  cname: string | null;
}

/** churn_daily resolved to identities, by owner key then day (rows of one day not merged). */
export function* churnDailyByIdentity(db: Db): Generator<ChurnDailyRow> {
  const rows = db
    .prepare(
      `SELECT owner, day, category, n, ckey,
              CASE WHEN ckey IS NULL THEN NULL ELSE coalesce(a.name, CASE WHEN substr(ckey, 1, 2) = 's-' THEN substr(ckey, 3) ELSE ckey END) END AS cname
       FROM (
         SELECT s.key AS owner, d.day, d.category, d.n,
                CASE WHEN d.counterpart_seat = '' THEN NULL ELSE coalesce(c.key, 's-' || d.counterpart_seat) END AS ckey
         FROM churn_daily d
         JOIN seat_identities s ON s.seat_id = d.seat_id
         LEFT JOIN seat_identities c ON c.seat_id = d.counterpart_seat
         WHERE d.counterpart_seat = '' OR coalesce(c.key, 's-' || d.counterpart_seat) <> s.key
       ) LEFT JOIN ap_identities a ON a.key = ckey
       ORDER BY owner, day, ckey`,
    )
    .iterate() as IterableIterator<ChurnDailyRow>;
  yield* rows;
}

export interface ChurnFactRow {
  owner: string;
  id: string;
  scheme: string;
  value: string;
  day: string;
  event_id: string;
  counterpart_key: string | null;
  counterpart_name: string | null;
}

/**
 * The participants behind one category for every identity: by owner key, then day DESC, participant id
 * ASC, event id ASC (the order of churnParticipants()).
 */
export function* churnFactsByIdentity(db: Db, category: ChurnCategory): Generator<ChurnFactRow> {
  const own = category === 'joiner' || category === 'mover_in' ? 'to_seat' : 'from_seat';
  const other = category === 'mover_in' ? 'from_seat' : category === 'mover_out' ? 'to_seat' : null;
  const kind = category === 'joiner' ? 'joiner' : category === 'leaver' ? 'leaver' : 'mover';
  const cp = other === null ? 'NULL' : `coalesce(c.key, 's-' || f.${other})`;
  const cname = other === null ? 'NULL' : `coalesce(a.name, f.${other})`;
  const rows = db
    .prepare(
      `SELECT s.key AS owner, p.pid AS id, p.scheme, p.value, f.day, f.event_id, ${cp} AS counterpart_key, ${cname} AS counterpart_name
       FROM churn_facts f
       JOIN seat_identities s ON s.seat_id = f.${own}
       JOIN participants p ON p.id = f.participant_id
       ${other === null ? '' : `LEFT JOIN seat_identities c ON c.seat_id = f.${other} LEFT JOIN ap_identities a ON a.key = c.key`}
       WHERE f.kind = ? ${other === null ? '' : `AND ${cp} <> s.key`}
       ORDER BY s.key, f.day DESC, p.pid ASC, f.event_id ASC`,
    )
    .iterate(kind) as IterableIterator<ChurnFactRow>;
  yield* rows;
}
