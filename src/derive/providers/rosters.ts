// The `rosters` step: current roster sizes and mixes of the AP identities, and the participant count of
// each member of the registry (docs/methodology/providers.md, "Participant counts").
//
// It runs after the participants step, whose current state per participant (participant_list:
// registered, smp, ap_seat_id, country, scheme) it counts. One grouped pass over that table per run:
// the result has one row per (serving seat, SMP host, country, scheme) combination, a few thousand
// rows even at 3 million participants, which are then summed per identity and per member here.
//
// It also writes providers.participant_count (a column of the providers step's table: the providers
// step runs first and writes 0; the count needs the participants step, which runs in between).
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';

export const ROSTERS_DDL = `
  CREATE TABLE ap_rosters (
    key               TEXT PRIMARY KEY,
    participant_count INTEGER NOT NULL
  ) WITHOUT ROWID;
  -- Country and scheme mix of an identity's current roster (facet 'country' | 'scheme').
  CREATE TABLE ap_mix (
    key   TEXT NOT NULL,
    facet TEXT NOT NULL,
    value TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (key, facet, value)
  ) WITHOUT ROWID;
`;
export const ROSTERS_TABLES = ['ap_mix', 'ap_rosters'] as const;

interface Combo {
  seat: string | null;
  smp: string | null;
  country: string | null;
  scheme: string;
  n: number;
}

function bump(m: Map<string, number>, k: string, n: number): void {
  m.set(k, (m.get(k) ?? 0) + n);
}

export function runRosters(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  db.exec('DELETE FROM ap_rosters; DELETE FROM ap_mix;');
  const combos = db
    .prepare(
      `SELECT ap_seat_id AS seat, smp, country, scheme, count(*) AS n FROM participant_list
       WHERE registered = 1 GROUP BY ap_seat_id, smp, country, scheme`,
    )
    .all() as Combo[];
  const keyOf = new Map((db.prepare('SELECT seat_id, key FROM seat_identities').all() as Array<{ seat_id: string; key: string }>).map((r) => [r.seat_id, r.key]));

  // AP identities: participants whose serving seat resolves to the identity.
  const roster = new Map<string, number>();
  const mix = new Map<string, Map<string, number>>();
  for (const c of combos) {
    if (c.seat === null) continue;
    const key = keyOf.get(c.seat) ?? `s-${c.seat}`;
    bump(roster, key, c.n);
    const m = mix.get(key) ?? new Map<string, number>();
    // Participants without a card country (discovered ones) are not in the country mix.
    if (c.country !== null) bump(m, `country\n${c.country}`, c.n);
    bump(m, `scheme\n${c.scheme}`, c.n);
    mix.set(key, m);
  }
  const insRoster = db.prepare('INSERT INTO ap_rosters (key, participant_count) VALUES (?, ?)');
  const insMix = db.prepare('INSERT INTO ap_mix (key, facet, value, count) VALUES (?, ?, ?, ?)');
  for (const [k, n] of roster) insRoster.run(k, n);
  for (const [k, m] of mix) {
    for (const [fv, n] of m) {
      const [facet, value] = fv.split('\n') as [string, string];
      insMix.run(k, facet, value, n);
    }
  }

  // Members: participants served by one of the member's seats (AP) or registered on one of its
  // declared hostnames (SMP), each participant once.
  const seatsOf = new Map<string, Set<string>>();
  for (const r of db.prepare('SELECT key, seat_id FROM provider_seats').all() as Array<{ key: string; seat_id: string }>) {
    const s = seatsOf.get(r.key) ?? new Set<string>();
    s.add(r.seat_id);
    seatsOf.set(r.key, s);
  }
  const hostsOf = new Map<string, Set<string>>();
  for (const r of db.prepare('SELECT key, hostname FROM provider_hosts').all() as Array<{ key: string; hostname: string }>) {
    const s = hostsOf.get(r.key) ?? new Set<string>();
    s.add(r.hostname);
    hostsOf.set(r.key, s);
  }
  const upd = db.prepare('UPDATE providers SET participant_count = ? WHERE key = ?');
  let members = 0;
  for (const key of db.prepare('SELECT key FROM providers').pluck().all() as string[]) {
    const seats = seatsOf.get(key) ?? new Set<string>();
    const hosts = hostsOf.get(key) ?? new Set<string>();
    let n = 0;
    for (const c of combos) if ((c.seat !== null && seats.has(c.seat)) || (c.smp !== null && hosts.has(c.smp))) n += c.n;
    upd.run(n, key);
    members++;
  }
  return { combos: combos.length, identities: roster.size, members };
}

export const rostersStep: DeriveStep = {
  name: 'rosters',
  tables: ROSTERS_TABLES,
  ddl: ROSTERS_DDL,
  run: runRosters,
};
