// The `rosters` step: current roster sizes and mixes of the AP identities, and the participant count of
// each member of the registry (docs/methodology/providers.md, "Participant counts").
//
// It runs after the participants step, whose current state per participant (participant_list:
// registered, smp, ap_seat_id, country, scheme) it counts. One grouped pass over that table gives one
// row per (serving seat, SMP host, country, scheme) combination, a few thousand rows even at 3 million
// participants (kept in ap_roster_combos), which are then summed per identity and per member here.
// The grouped pass (16 s at 3 million participants) runs only when participant_list can have changed:
// on a full run, or when a new segment holds a participant observation (directory, SML or SMP), the
// only raw rows the participants step derives that table from. A cron cycle of probes alone re-sums
// the stored combinations (identities and members can change with certificates and curation).
//
// It also writes providers.participant_count (a column of the providers step's table: the providers
// step runs first and writes 0; the count needs the participants step, which runs in between).
import { PARTICIPANT_OBS_TABLES } from '../participants/step.js';
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';

export const ROSTERS_DDL = `
  -- Registered participants per (serving seat, SMP host, card country, scheme) of participant_list.
  CREATE TABLE ap_roster_combos (
    seat    TEXT,
    smp     TEXT,
    country TEXT,
    scheme  TEXT NOT NULL,
    n       INTEGER NOT NULL
  );
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
export const ROSTERS_TABLES = ['ap_mix', 'ap_rosters', 'ap_roster_combos'] as const;

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

/** Whether a segment of the run's range holds a participant observation. */
function participantsObserved(ctx: DeriveContext): boolean {
  for (const t of PARTICIPANT_OBS_TABLES) {
    if (ctx.db.prepare(`SELECT 1 FROM ${t} WHERE segment_id > ? AND segment_id <= ? LIMIT 1`).get(ctx.since, ctx.upTo) !== undefined) return true;
  }
  return false;
}

export function runRosters(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  db.exec('DELETE FROM ap_rosters; DELETE FROM ap_mix;');
  const regroup = ctx.full || participantsObserved(ctx);
  if (regroup) {
    // Grouped first in the order of the facet cube's covering index (participant_list_facets: read in
    // order, no sort of the list), then the few thousand groups regrouped. The LIMIT keeps SQLite from
    // pushing `registered = 1` into the inner query, where it would pick that filter's index and sort
    // the registered participants instead (1.4 s against 0.17 s at `large`).
    db.exec(`DELETE FROM ap_roster_combos;
      INSERT INTO ap_roster_combos (seat, smp, country, scheme, n)
      SELECT ap_seat_id, smp, country, scheme, sum(n) FROM (
        SELECT country, scheme, registered, provenance, smp, ap_seat_id, count(*) AS n FROM participant_list
        GROUP BY country, scheme, registered, provenance, smp, ap_seat_id LIMIT -1
      )
      WHERE registered = 1 GROUP BY ap_seat_id, smp, country, scheme ORDER BY ap_seat_id, smp, country, scheme`);
  }
  const combos = db.prepare('SELECT seat, smp, country, scheme, n FROM ap_roster_combos ORDER BY rowid').all() as Combo[];
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
  return { combos: combos.length, regrouped: regroup ? 1 : 0, identities: roster.size, members };
}

export const rostersStep: DeriveStep = {
  name: 'rosters',
  tables: ROSTERS_TABLES,
  ddl: ROSTERS_DDL,
  run: runRosters,
};
