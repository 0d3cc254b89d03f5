// The stats step and participantStats() on the small demo: every facet count equals a count computed
// directly from the raw observation tables in SQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/index.js';
import { ensureDerivedSchema, runDerive } from '../src/derive/index.js';
import { ensureChangesTable, ITEM_CHANGE_KIND, startRecording, stopRecording } from '../src/derive/changes.js';
import { participantStats, type FacetBucket } from '../src/derive/participants/read.js';
import { SCHEME_LABELS } from '../src/api/participants/schemes.js';
import { STATS_FACETS, statsStep, type StatsFacet } from '../src/derive/participants/stats.js';
import { participantsStep } from '../src/derive/participants/step.js';
import { copyOfSmallDemoDb } from './helpers/demo-fixture.js';

const STEPS = [participantsStep, statsStep];
const NOW = Date.parse('2026-11-22T00:00:00Z');

/** Facet counts straight from the raw tables (latest observation per participant and table). */
function rawCounts(db: Db): { total: number; asOf: number; facets: Record<StatsFacet, Map<string, number>> } {
  db.exec(`
    CREATE TEMP TABLE raw_state AS
    WITH ids AS (SELECT participant_id FROM directory_obs UNION SELECT participant_id FROM sml_obs UNION SELECT participant_id FROM smp_obs),
    d AS (SELECT participant_id, present, has_card, country, row_number() OVER (PARTITION BY participant_id ORDER BY at DESC) AS rn FROM directory_obs),
    ever AS (SELECT participant_id, max(present) AS ever_present FROM directory_obs GROUP BY participant_id),
    s AS (SELECT participant_id, registered, smp_host_id, row_number() OVER (PARTITION BY participant_id ORDER BY at DESC) AS rn FROM sml_obs),
    m AS (SELECT participant_id, endpoint_set_id, row_number() OVER (PARTITION BY participant_id ORDER BY at DESC) AS rn FROM smp_obs)
    SELECT ids.participant_id AS id, p.scheme,
      CASE WHEN d.present = 1 AND d.has_card = 1 THEN d.country END AS country,
      coalesce(ever.ever_present, 0) AS ever_present,
      coalesce(s.registered, 0) AS registered,
      CASE WHEN s.registered = 1 THEN h.hostname END AS smp,
      CASE WHEN s.registered = 1 THEN m.endpoint_set_id END AS set_id
    FROM ids JOIN participants p ON p.id = ids.participant_id
    LEFT JOIN d ON d.participant_id = ids.participant_id AND d.rn = 1
    LEFT JOIN ever ON ever.participant_id = ids.participant_id
    LEFT JOIN s ON s.participant_id = ids.participant_id AND s.rn = 1
    LEFT JOIN hosts h ON h.id = s.smp_host_id
    LEFT JOIN m ON m.participant_id = ids.participant_id AND m.rn = 1;
  `);
  // Serving seat of an endpoint set: the seat (CN of the signing certificate) of the most endpoints, ties
  // to the lowest seat id.
  db.exec(`
    CREATE TEMP TABLE raw_seat AS
    WITH e AS (
      SELECT es.id AS set_id, substr(json_extract(j.value, '$.cert.subject'), 4, 9) AS seat
      FROM endpoint_sets es, json_each(es.endpoints) j
      WHERE json_extract(j.value, '$.cert.subject') GLOB 'CN=P[A-Z][A-Z][0-9][0-9][0-9][0-9][0-9][0-9]*'),
    c AS (SELECT set_id, seat, count(*) AS n FROM e GROUP BY set_id, seat),
    r AS (SELECT set_id, seat, row_number() OVER (PARTITION BY set_id ORDER BY n DESC, seat ASC) AS rn FROM c)
    SELECT set_id, seat FROM r WHERE rn = 1;
  `);
  const group = (sql: string): Map<string, number> => new Map((db.prepare(sql).raw().all() as Array<[string, number]>).map(([v, n]) => [String(v), n]));
  const facets: Record<StatsFacet, Map<string, number>> = {
    country: group('SELECT country, count(*) FROM raw_state WHERE country IS NOT NULL GROUP BY country'),
    scheme: group('SELECT scheme, count(*) FROM raw_state GROUP BY scheme'),
    registered: group("SELECT CASE registered WHEN 1 THEN 'true' ELSE 'false' END, count(*) FROM raw_state GROUP BY registered"),
    provenance: group("SELECT CASE ever_present WHEN 1 THEN 'directory' ELSE 'discovered' END, count(*) FROM raw_state GROUP BY ever_present"),
    smp: group('SELECT smp, count(*) FROM raw_state WHERE smp IS NOT NULL GROUP BY smp'),
    ap: group('SELECT rs.seat, count(*) FROM raw_state s JOIN raw_seat rs ON rs.set_id = s.set_id GROUP BY rs.seat'),
  };
  const total = db.prepare('SELECT count(*) FROM raw_state').pluck().get() as number;
  const asOf = db.prepare('SELECT max(m) FROM (SELECT max(at) AS m FROM directory_obs UNION ALL SELECT max(at) FROM sml_obs UNION ALL SELECT max(at) FROM smp_obs)').pluck().get() as number;
  db.exec('DROP TABLE temp.raw_state; DROP TABLE temp.raw_seat;');
  return { total, asOf, facets };
}

/** Buckets in the published order: count DESC, value ASC. */
const ordered = (m: Map<string, number>): FacetBucket[] =>
  [...m].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));

describe('participant statistics', () => {
  let db: Db;
  let raw: ReturnType<typeof rawCounts>;

  beforeAll(() => {
    db = copyOfSmallDemoDb().open();
    runDerive(db, { full: true }, STEPS);
    raw = rawCounts(db);
  });
  afterAll(() => db?.close());

  it('stores every facet bucket with the count computed from the raw observations', () => {
    for (const f of STATS_FACETS) {
      const stored = new Map((db.prepare('SELECT value, count FROM participant_facets WHERE facet = ?').raw().all(f) as Array<[string, number]>).map(([v, n]) => [v, n]));
      expect(stored, f).toEqual(raw.facets[f]);
      expect(stored.size, f).toBeGreaterThan(f === 'registered' || f === 'provenance' ? 1 : 2);
    }
  });

  it('publishes the total, the data instant and every bucket of each facet in order', () => {
    const s = participantStats(db, NOW);
    expect(Object.keys(s)).toEqual(['total_count', 'refreshed_at', 'facets']);
    expect(Object.keys(s.facets)).toEqual(['country', 'scheme', 'registered', 'provenance', 'smp', 'ap']);
    expect(s.total_count).toBe(raw.total);
    expect(s.refreshed_at).toBe(new Date(raw.asOf).toISOString().replace('.000Z', 'Z'));
    expect(s.refreshed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/);
    for (const f of STATS_FACETS) {
      const want = ordered(raw.facets[f]);
      expect(s.facets[f].map(({ value, count }) => ({ value, count })), f).toEqual(want);
    }
    // Two-valued facets partition the participants.
    for (const f of ['registered', 'provenance'] as const) expect(s.facets[f].reduce((a, b) => a + b.count, 0)).toBe(s.total_count);
  });

  it('labels schemes from the code list and seats with their curated provider name', () => {
    const s = participantStats(db, NOW);
    const be = s.facets.scheme.find((b) => b.value === '0208')!;
    expect(be.label).toBe('Belgian enterprise number');
    for (const b of s.facets.scheme) expect(b.label).toBe(SCHEME_LABELS[b.value]);
    expect(Object.keys(be)).toEqual(['value', 'count', 'label']);
    // Without the providers step's seat identities no seat has a curated name: no label.
    for (const b of s.facets.ap) expect('label' in b).toBe(false);
    const [curated, other] = s.facets.ap;
    db.exec('CREATE TABLE seat_identities (seat_id TEXT PRIMARY KEY, key TEXT NOT NULL, name TEXT, verified INTEGER NOT NULL, slug TEXT, country TEXT) WITHOUT ROWID');
    try {
      db.prepare('INSERT INTO seat_identities VALUES (?, ?, ?, ?, ?, ?)').run(curated!.value, 'c-docugate', 'Docugate NV', 1, 'docugate', 'BE');
      db.prepare('INSERT INTO seat_identities VALUES (?, ?, ?, ?, ?, ?)').run(other!.value, 'o-other-12345678', 'Other Org', 0, null, 'BE');
      const t = participantStats(db, NOW);
      expect(t.facets.ap[0]).toEqual({ value: curated!.value, count: curated!.count, label: 'Docugate NV' });
      expect(t.facets.ap[1]).toEqual({ value: other!.value, count: other!.count });
    } finally {
      db.exec('DROP TABLE seat_identities');
    }
  });

  it('an incremental run recounts only when its change set names a participant whose list row changed (else keeps the counts, moves as_of)', () => {
    const copy = copyOfSmallDemoDb().open();
    try {
      runDerive(copy, { full: true }, STEPS);
      ensureChangesTable(copy);
      const facets = (): unknown[] => copy.prepare('SELECT facet, value, count FROM participant_facets ORDER BY facet, value').raw().all();
      const totals = (): unknown => copy.prepare('SELECT total_count, as_of FROM participant_totals').get();
      const before = { facets: facets(), totals: totals() as { total_count: number; as_of: number } };
      const upTo = 1_000_000;
      const run = () => statsStep.run({ db: copy, full: false, since: upTo - 1, upTo, progress: () => {} });
      // A participant leaves the list outside the change set, and the observation clock moves on: a
      // run without a recorded change keeps the counts (the full ones above) and takes the new clock.
      const gone = copy.prepare('SELECT participant_id FROM participant_list ORDER BY participant_id LIMIT 1').pluck().get() as number;
      copy.prepare('DELETE FROM participant_list WHERE participant_id = ?').run(gone);
      copy.prepare('UPDATE participant_as_of SET as_of = as_of + 1').run();
      expect(run()).toMatchObject({ participants: before.totals.total_count, recounted: 0 });
      expect(facets()).toEqual(before.facets);
      expect(totals()).toEqual({ total_count: before.totals.total_count, as_of: before.totals.as_of + 1 });
      // A change recorded at an earlier watermark is not this run's.
      copy.prepare("INSERT INTO derive_changes (kind, key, seq) VALUES ('participant', ?, ?)").run(gone, upTo - 1);
      expect(run()).toMatchObject({ recounted: 0 });
      // This run's change of the participant's files alone (a history row) keeps the counts too.
      copy.prepare("INSERT INTO derive_changes (kind, key, seq) VALUES ('participant', ?, ?)").run(gone, upTo);
      expect(run()).toMatchObject({ recounted: 0 });
      // A change of its list row recorded by this run: recounted, and equal to a full run's counts.
      copy.prepare('INSERT INTO derive_changes (kind, key, seq) VALUES (?, ?, ?)').run(ITEM_CHANGE_KIND, gone, upTo);
      expect(run()).toMatchObject({ participants: before.totals.total_count - 1, recounted: 1 });
      const recounted = { facets: facets(), totals: totals() };
      expect(recounted.facets).not.toEqual(before.facets);
      statsStep.run({ db: copy, full: true, since: 0, upTo, progress: () => {} });
      expect({ facets: facets(), totals: totals() }).toEqual(recounted);
    } finally {
      copy.close();
    }
  });

  it('records a list item change for a row inserted, deleted or changed in a list column, not for any other write', () => {
    const copy = copyOfSmallDemoDb().open();
    try {
      runDerive(copy, { full: true }, STEPS);
      ensureChangesTable(copy);
      const seq = 7;
      const recorded = (kind: string): number[] => copy.prepare('SELECT key FROM derive_changes WHERE kind = ? AND seq = ? ORDER BY key').pluck().all(kind, seq) as number[];
      const ids = copy.prepare('SELECT participant_id FROM participant_list ORDER BY participant_id LIMIT 4').pluck().all() as number[];
      const [seen, renamed, gone, readded] = ids as [number, number, number, number];
      startRecording(copy, seq);
      try {
        // Not a list column: the participant's files are rendered again, its list item is not compared.
        copy.prepare('UPDATE participant_list SET last_seen_at = last_seen_at + 1 WHERE participant_id = ?').run(seen);
        // Written again with equal values (the step's upsert of an unchanged participant).
        copy.prepare('UPDATE participant_list SET country = country, name = name WHERE participant_id = ?').run(readded);
        copy.prepare("UPDATE participant_list SET name = coalesce(name, '') || 'x' WHERE participant_id = ?").run(renamed);
        const row = copy.prepare('SELECT * FROM participant_list WHERE participant_id = ?').get(gone) as Record<string, unknown>;
        copy.prepare('DELETE FROM participant_list WHERE participant_id = ?').run(gone);
        const cols = Object.keys(row);
        copy.prepare(`INSERT INTO participant_list (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...cols.map((c) => row[c]));
      } finally {
        stopRecording(copy);
      }
      expect(recorded('participant')).toEqual([...ids].sort((a, b) => a - b));
      expect(recorded(ITEM_CHANGE_KIND)).toEqual([renamed, gone].sort((a, b) => a - b));
    } finally {
      copy.close();
    }
  });

  it('reads as empty before the steps have run', () => {
    const empty = copyOfSmallDemoDb().open();
    try {
      ensureDerivedSchema(empty, STEPS);
      const s = participantStats(empty, NOW);
      expect(s).toEqual({ total_count: 0, refreshed_at: '2026-11-22T00:00:00Z', facets: { country: [], scheme: [], registered: [], provenance: [], smp: [], ap: [] } });
    } finally {
      empty.close();
    }
  });
});
