// The `stats` step: global facet counts of the participant list (ParticipantStats,
// docs/methodology/participants.md "Statistics"). Recounted whole from participant_list by every run
// that changed it (a probe-only run keeps the counts):
// one grouped pass per facet, each over an index of the list (no table scan), so reading
// /v1/stats/participants costs a few hundred rows at any scale.
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';
import { ITEM_CHANGE_KIND } from '../changes.js';

export const STATS_FACETS = ['country', 'scheme', 'registered', 'provenance', 'smp', 'ap'] as const;
export type StatsFacet = (typeof STATS_FACETS)[number];

export const STATS_DDL = `
  -- Every bucket of every facet (no top-N here: the reader cuts).
  CREATE TABLE participant_facets (
    facet TEXT NOT NULL,
    value TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (facet, value)
  ) WITHOUT ROWID;
  CREATE TABLE participant_totals (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    total_count INTEGER NOT NULL,
    as_of       INTEGER               -- latest participant observation counted (participant_as_of)
  );
`;
export const STATS_TABLES = ['participant_totals', 'participant_facets'] as const;

/** Per facet: the grouped count over participant_list (null values are not a bucket). */
const FACET_SQL: Record<StatsFacet, string> = {
  country: 'SELECT country, count(*) FROM participant_list WHERE country IS NOT NULL GROUP BY country',
  scheme: 'SELECT scheme, count(*) FROM participant_list GROUP BY scheme',
  registered: "SELECT CASE registered WHEN 1 THEN 'true' ELSE 'false' END, count(*) FROM participant_list GROUP BY registered",
  provenance: 'SELECT provenance, count(*) FROM participant_list GROUP BY provenance',
  smp: 'SELECT smp, count(*) FROM participant_list WHERE smp IS NOT NULL GROUP BY smp',
  ap: 'SELECT ap_seat_id, count(*) FROM participant_list WHERE ap_seat_id IS NOT NULL GROUP BY ap_seat_id',
};

/**
 * Whether this run may have changed the counted columns of participant_list: a full run, or an
 * incremental one whose change set names a participant whose list row changed in them
 * (src/derive/changes.ts ITEM_CHANGE_KIND: a row inserted, deleted, or changed in a list item's
 * columns, by any step).
 */
function listChanged(ctx: DeriveContext): boolean {
  if (ctx.full) return true;
  const changes = ctx.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'derive_changes'").get() !== undefined;
  return !changes || ctx.db.prepare('SELECT 1 FROM derive_changes WHERE kind = ? AND seq = ? LIMIT 1').get(ITEM_CHANGE_KIND, ctx.upTo) !== undefined;
}

export function runStats(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  const asOf = (db.prepare('SELECT as_of FROM participant_as_of WHERE id = 1').pluck().get() as number | undefined) ?? null;
  const kept = db.prepare('SELECT total_count FROM participant_totals WHERE id = 1').pluck().get() as number | undefined;
  if (kept !== undefined && !listChanged(ctx)) {
    // The counts stand (a probe-only run): only the observation clock may have moved.
    db.prepare('UPDATE participant_totals SET as_of = ? WHERE id = 1').run(asOf);
    return { participants: kept, buckets: db.prepare('SELECT count(*) FROM participant_facets').pluck().get() as number, recounted: 0 };
  }
  db.exec('DELETE FROM participant_facets; DELETE FROM participant_totals;');
  let buckets = 0;
  for (const f of STATS_FACETS) {
    buckets += db.prepare(`INSERT INTO participant_facets (facet, value, count) SELECT '${f}', * FROM (${FACET_SQL[f]})`).run().changes;
  }
  const total = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
  db.prepare('INSERT INTO participant_totals (id, total_count, as_of) VALUES (1, ?, ?)').run(total, asOf);
  return { participants: total, buckets, recounted: 1 };
}

export const statsStep: DeriveStep = {
  name: 'stats',
  tables: STATS_TABLES,
  ddl: STATS_DDL,
  run: runStats,
};
