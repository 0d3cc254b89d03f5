// The `participants` step: facts history, current state and the seven participant event types
// (docs/methodology/participants.md, docs/methodology/events.md).
//
// Scale (3 million participants): participants are never all in memory.
// - Full run: streams participants in id order, in id ranges of BATCH; the observations of a range are
//   three range scans of the (participant_id, at) primary keys (range.ts). The ranges are read and
//   derived on worker threads (src/derive/pool.ts) while this thread writes the ones before. The list's
//   secondary indexes are dropped for the load and built once at the end (a sorted build instead of
//   3 M random inserts).
// - Incremental run: the participants with an observation in a new segment (segment_id > since) are
//   collected in a temporary table by scanning the three observation tables (they have no index on
//   at or segment: one sequential pass each), then each is recomputed from its whole history
//   (range scan by primary key), and only what differs from the stored rows is written (Writer): the
//   list row's changed columns, the history rows when any differs, the events of the seven types
//   that are new, changed or gone. Event ids depend only on (type, participant, instant), so a
//   recomputed event keeps its id.
// Only observations of segments up to ctx.upTo are read, so a segment ingested during the run waits
// for the next one.
import type { Db } from '../../db/index.js';
import type { Statement } from 'better-sqlite3';
import { deleteEventIds, EventWriter, eventId, PARTICIPANT_EVENT_TYPES, storedEventIs } from '../events.js';
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';
import { firstSweepEnd } from './baseline.js';
import { computeInOrder, DerivePool, workersFor } from '../pool.js';
import { deriveParticipant, type HistoryRow, type ListRow, type ParticipantKey } from './derive.js';
import { EndpointSets, type EndpointSet } from './endpoints.js';
import { DIR_COLS, dirObs, HISTORY_COLUMNS, historyValues, HostNames, LIST_ROW_COLUMNS, listValues, PACKED_HISTORY_ARITY, PACKED_LIST_ARITY, packRange, RangeReader, smlObs, smpObs, type DirRaw, type PackedRange, type RangeJob, type SmlRaw, type SmpRaw } from './range.js';

/** Secondary indexes of participant_list: list sorts (each ending in the unique id) and filters. */
export const PARTICIPANT_LIST_INDEXES: ReadonlyArray<readonly [name: string, sql: string]> = [
  // Sorts: first_seen (asc and desc: scanned either way), name and country (nulls last: the non-null
  // range in index order, then the null range ordered by pid; see read.ts participantList()).
  ['participant_list_first_seen', 'CREATE INDEX participant_list_first_seen ON participant_list (first_seen_at, pid)'],
  ['participant_list_name', 'CREATE INDEX participant_list_name ON participant_list (name, pid)'],
  ['participant_list_country', 'CREATE INDEX participant_list_country ON participant_list (country, pid)'],
  // Filters, in the default order (first_seen): equality on the filter column, then a range scan.
  ['participant_list_f_country', 'CREATE INDEX participant_list_f_country ON participant_list (country, first_seen_at, pid) WHERE country IS NOT NULL'],
  ['participant_list_f_scheme', 'CREATE INDEX participant_list_f_scheme ON participant_list (scheme, first_seen_at, pid)'],
  ['participant_list_f_smp', 'CREATE INDEX participant_list_f_smp ON participant_list (smp, first_seen_at, pid) WHERE smp IS NOT NULL'],
  ['participant_list_f_ap', 'CREATE INDEX participant_list_f_ap ON participant_list (ap_seat_id, first_seen_at, pid) WHERE ap_seat_id IS NOT NULL'],
  ['participant_list_f_registered', 'CREATE INDEX participant_list_f_registered ON participant_list (registered, first_seen_at, pid)'],
  ['participant_list_f_provenance', 'CREATE INDEX participant_list_f_provenance ON participant_list (provenance, first_seen_at, pid)'],
  // The facet cube (src/api/participants/facets.ts): grouping by the six facet values reads this
  // covering index in order (0.3 s at `peppol`, against 6.2 s scanning the table and sorting).
  ['participant_list_facets', 'CREATE INDEX participant_list_facets ON participant_list (country, scheme, registered, provenance, smp, ap_seat_id)'],
];

export const PARTICIPANTS_DDL = `
  -- Current state of every participant with at least one observation (one row each).
  CREATE TABLE participant_list (
    participant_id     INTEGER PRIMARY KEY,   -- participants.id
    pid                TEXT NOT NULL,         -- canonical scheme::value (the unique sort tiebreak)
    scheme             TEXT NOT NULL,
    value              TEXT NOT NULL,
    name               TEXT,                  -- current card (null without one)
    country            TEXT,
    registration_date  TEXT,
    has_card           INTEGER NOT NULL,
    directory_present  INTEGER,               -- latest directory observation; null when never observed
    directory_since    INTEGER,
    registered         INTEGER NOT NULL,      -- latest SML observation (0 when never observed)
    registration_since INTEGER,
    smp                TEXT,                  -- current SMP hostname while registered
    ap_seat_id         TEXT,                  -- serving seat of the current endpoints
    endpoint_set_id    INTEGER,               -- current endpoints (latest SMP record while registered)
    provenance         TEXT NOT NULL,         -- directory | discovered
    first_seen_at      INTEGER NOT NULL,
    last_seen_at       INTEGER NOT NULL
  );
  ${PARTICIPANT_LIST_INDEXES.map(([, sql]) => `${sql};`).join('\n  ')}
  -- Validity intervals of the four fact families; detail in typed columns (read.ts builds the object).
  CREATE TABLE participant_history (
    participant_id    INTEGER NOT NULL,
    valid_from        INTEGER NOT NULL,
    fact              TEXT NOT NULL,          -- directory_presence | card | registration | smp
    valid_to          INTEGER,
    flag              INTEGER,                -- directory_presence: present; registration: registered
    name              TEXT,                   -- card
    country           TEXT,
    registration_date TEXT,
    hostname          TEXT,                   -- smp
    PRIMARY KEY (participant_id, valid_from DESC, fact)
  ) WITHOUT ROWID;
  -- The latest participant observation instant the tables include (ParticipantStats.refreshed_at).
  CREATE TABLE participant_as_of (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    as_of INTEGER NOT NULL
  );
`;
export const PARTICIPANTS_TABLES = ['participant_as_of', 'participant_history', 'participant_list'] as const;

/** Participants per id range of a full run. */
const BATCH = 2000;

/** The primary key order of participant_history within a participant: valid_from DESC, fact. */
const historyOrder = (a: HistoryRow, b: HistoryRow): number => b.valid_from - a.valid_from || (a.fact < b.fact ? -1 : a.fact > b.fact ? 1 : 0);

/**
 * Writes what deriveParticipant gives. A full run inserts a range at a time (writePacked: the tables
 * were emptied). An incremental run (write) writes only what differs from the stored rows: most of the
 * participants a cycle recomputes only gained an observation, and a row written again, even with the
 * same values, is a change to the recording triggers (src/derive/changes.ts): the participant's files
 * rendered again, and each event's feed partitions (the whole feed, its type, hosts, seats and
 * participant) written again. The list row is updated in the columns that changed only, so the list's
 * indexes on the others are not rewritten.
 */
class Writer {
  private readonly insList;
  private readonly delList;
  private readonly getList;
  private readonly updates = new Map<string, Statement>();
  private readonly delHist;
  private readonly getHist;
  private readonly insHist;
  private readonly getEvents;
  private readonly events;
  private readonly delEventsWhere = `participant_id = ? AND type IN (${PARTICIPANT_EVENT_TYPES.map((t) => `'${t}'`).join(', ')})`;
  participants = 0;
  historyRows = 0;
  eventsWritten = 0;
  maxAt: number | null = null;

  constructor(private readonly db: Db) {
    // An upsert, not INSERT OR REPLACE: a row written again is an UPDATE, whose recording trigger
    // tells whether the list item's columns changed (src/derive/changes.ts ITEM_CHANGE_KIND).
    const cols = LIST_ROW_COLUMNS;
    this.insList = db.prepare(
      `INSERT INTO participant_list (participant_id, ${cols.join(', ')}) VALUES (${['?', ...cols.map(() => '?')].join(', ')})
       ON CONFLICT (participant_id) DO UPDATE SET ${cols.map((c) => `${c} = excluded.${c}`).join(', ')}`,
    );
    this.delList = db.prepare('DELETE FROM participant_list WHERE participant_id = ?');
    this.getList = db.prepare(`SELECT ${cols.join(', ')} FROM participant_list WHERE participant_id = ?`).raw();
    this.delHist = db.prepare('DELETE FROM participant_history WHERE participant_id = ?');
    // In primary key order (historyOrder).
    this.getHist = db.prepare(`SELECT ${HISTORY_COLUMNS.join(', ')} FROM participant_history WHERE participant_id = ? ORDER BY valid_from DESC, fact`).raw();
    this.insHist = db.prepare(`INSERT INTO participant_history (participant_id, ${HISTORY_COLUMNS.join(', ')}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.getEvents = db.prepare(`SELECT id, type, observed_at, hostname, participant_id, payload FROM events WHERE ${this.delEventsWhere}`).raw();
    this.events = new EventWriter(db);
  }

  /** A full run's write of a range (inserts: the tables were emptied). */
  writePacked(r: PackedRange): void {
    const { lists, history } = r;
    for (let i = 0; i < lists.length; i += PACKED_LIST_ARITY) this.insList.run(lists.slice(i, i + PACKED_LIST_ARITY));
    for (let i = 0; i < history.length; i += PACKED_HISTORY_ARITY) this.insHist.run(history.slice(i, i + PACKED_HISTORY_ARITY));
    for (const e of r.events) this.events.write(e);
    this.participants += lists.length / PACKED_LIST_ARITY;
    this.historyRows += history.length / PACKED_HISTORY_ARITY;
    this.eventsWritten += r.events.length;
    if (r.maxLastSeen !== null && (this.maxAt === null || r.maxLastSeen > this.maxAt)) this.maxAt = r.maxLastSeen;
  }

  /** An incremental run's write of one participant: only the rows that differ from the stored ones. */
  write(id: number, d: { list: ListRow | null; history: HistoryRow[]; events: Parameters<EventWriter['write']>[0][] }): void {
    if (d.list !== null) {
      this.participants++;
      if (this.maxAt === null || d.list.last_seen_at > this.maxAt) this.maxAt = d.list.last_seen_at;
    }
    this.historyRows += d.history.length;
    this.eventsWritten += d.events.length;
    const stored = this.getList.get(id) as unknown[] | undefined;
    if (d.list === null) {
      if (stored !== undefined) this.delList.run(id);
    } else if (stored === undefined) this.insList.run(d.list.participant_id, ...listValues(d.list));
    else {
      const values = listValues(d.list);
      const changed = LIST_ROW_COLUMNS.flatMap((c, i) => (stored[i] === values[i] ? [] : [i]));
      if (changed.length > 0) this.update(changed).run(...changed.map((i) => values[i]), id);
    }

    const history = [...d.history].sort(historyOrder);
    const storedHistory = this.getHist.all(id) as unknown[][];
    const sameHistory =
      storedHistory.length === history.length &&
      history.every((h, i) => {
        const v = historyValues(h);
        return v.every((x, j) => storedHistory[i]![j] === x);
      });
    if (!sameHistory) {
      this.delHist.run(id);
      for (const h of history) this.insHist.run(id, ...historyValues(h));
    }

    const storedEvents = new Map((this.getEvents.all(id) as unknown[][]).map((r) => [r[0] as string, r.slice(1)]));
    const unchanged = new Set<string>();
    const write: Array<Parameters<EventWriter['write']>[0]> = [];
    for (const e of d.events) {
      const eid = eventId(e.type, e.subject, e.observedAt);
      const row = storedEvents.get(eid);
      if (row !== undefined && storedEventIs(this.db, eid, row, e)) unchanged.add(eid);
      else write.push(e);
    }
    // Gone or changed: deleted (with their links) before the changed ones are written again.
    deleteEventIds(this.db, [...storedEvents.keys()].filter((eid) => !unchanged.has(eid)));
    for (const e of write) this.events.write(e);
  }

  /** UPDATE of the list row's columns at `changed` (indexes into LIST_ROW_COLUMNS), prepared once per set. */
  private update(changed: number[]): Statement {
    const key = changed.join(',');
    let st = this.updates.get(key);
    if (st === undefined) {
      st = this.db.prepare(`UPDATE participant_list SET ${changed.map((i) => `${LIST_ROW_COLUMNS[i]!} = ?`).join(', ')} WHERE participant_id = ?`);
      this.updates.set(key, st);
    }
    return st;
  }
}

/**
 * A full run: the participants in id ranges of BATCH, derived on worker threads when a pool opens
 * (src/derive/pool.ts: up to `pool.depth` ranges ahead of the writer), otherwise here; written in id
 * order either way. The list's indexes are dropped first and built once at the end.
 */
function runFull(ctx: DeriveContext, w: Writer, sweepEnd: number | null): number {
  const { db, upTo } = ctx;
  for (const [name] of PARTICIPANT_LIST_INDEXES) db.exec(`DROP INDEX IF EXISTS ${name}`);
  const maxId = (db.prepare('SELECT coalesce(max(id), 0) FROM participants').pluck().get() as number) ?? 0;
  const ranges = Math.ceil(maxId / BATCH);
  const pool = DerivePool.open(db, workersFor(ctx.deriveWorkers, true, ranges), ranges);
  const workers = pool?.size ?? 0;
  let reader: RangeReader | null = null;
  computeInOrder(
    pool,
    'participants',
    ranges,
    (i): RangeJob => ({ lo: 1 + i * BATCH, hi: 1 + (i + 1) * BATCH, upTo, sweepEnd }),
    (job) => packRange((reader ??= new RangeReader(db)).derive(job)),
    (range, i) => {
      w.writePacked(range);
      if ((i + 1) % 100 === 0) ctx.progress(`derive: participants ${Math.min((i + 1) * BATCH, maxId)}/${maxId}`);
    },
  );
  for (const [, sql] of PARTICIPANT_LIST_INDEXES) db.exec(sql);
  return workers;
}

/** The raw observation tables participant_list and the histories are derived from. */
export const PARTICIPANT_OBS_TABLES = ['directory_obs', 'sml_obs', 'smp_obs'] as const;

function runIncremental(ctx: DeriveContext, w: Writer, sets: EndpointSets, hosts: HostNames, sweepEnd: number | null): number {
  const { db, since, upTo } = ctx;
  db.exec('CREATE TEMP TABLE IF NOT EXISTS participants_affected (id INTEGER PRIMARY KEY); DELETE FROM temp.participants_affected;');
  for (const t of PARTICIPANT_OBS_TABLES) {
    db.prepare(`INSERT OR IGNORE INTO temp.participants_affected (id) SELECT participant_id FROM ${t} WHERE segment_id > ? AND segment_id <= ?`).run(since, upTo);
  }
  const page = db.prepare('SELECT a.id, p.pid, p.scheme, p.value FROM temp.participants_affected a JOIN participants p ON p.id = a.id WHERE a.id > ? ORDER BY a.id LIMIT 1000');
  const one = 'participant_id = ? AND segment_id <= ? ORDER BY at';
  const dirQ = db.prepare(`SELECT ${DIR_COLS} FROM directory_obs WHERE ${one}`).raw();
  const smlQ = db.prepare(`SELECT participant_id, at, registered, smp_host_id FROM sml_obs WHERE ${one}`).raw();
  const smpQ = db.prepare(`SELECT participant_id, at, endpoint_set_id FROM smp_obs WHERE ${one}`).raw();
  const setOf = (id: number): EndpointSet => sets.get(id);
  let after = 0;
  let affected = 0;
  for (;;) {
    const ps = page.all(after) as ParticipantKey[];
    if (ps.length === 0) break;
    for (const p of ps) {
      const dir = (dirQ.all(p.id, upTo) as DirRaw[]).map(dirObs);
      const sml = (smlQ.all(p.id, upTo) as SmlRaw[]).map((r) => smlObs(r, hosts));
      const smp = (smpQ.all(p.id, upTo) as SmpRaw[]).map(smpObs);
      w.write(p.id, deriveParticipant(p, dir, sml, smp, setOf, sweepEnd));
      affected++;
    }
    after = ps[ps.length - 1]!.id;
    ctx.progress(`derive: participants ${affected} recomputed`);
  }
  db.exec('DELETE FROM temp.participants_affected');
  return affected;
}

export function runParticipants(ctx: DeriveContext): StepStats {
  const { db } = ctx;
  const sweepEnd = firstSweepEnd(db);
  const w = new Writer(db);
  let recomputed: number;
  let workers = 0;
  if (ctx.full) {
    db.exec('DELETE FROM participant_list; DELETE FROM participant_history; DELETE FROM participant_as_of;');
    workers = runFull(ctx, w, sweepEnd);
    recomputed = w.participants;
  } else {
    recomputed = runIncremental(ctx, w, new EndpointSets(db), new HostNames(db), sweepEnd);
  }
  // as_of: the latest observation of any participant. Every participant with a new observation was
  // recomputed, so the maximum over the old value and the recomputed ones is the global maximum.
  if (w.maxAt !== null) {
    db.prepare('INSERT INTO participant_as_of (id, as_of) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET as_of = max(as_of, excluded.as_of)').run(w.maxAt);
  }
  // workers: the threads that derived the participants of a full run (0: this one).
  return { participants: recomputed, workers, history_rows: w.historyRows, events: w.eventsWritten };
}

export const participantsStep: DeriveStep = {
  name: 'participants',
  tables: PARTICIPANTS_TABLES,
  ddl: PARTICIPANTS_DDL,
  run: runParticipants,
};
