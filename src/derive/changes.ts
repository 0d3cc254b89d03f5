// The change set of derive (docs/incremental.md): which participants an incremental derive run
// changed, so that `build` re-renders only their files.
//
// An incremental run installs temporary triggers on the derived tables a participant's own files are
// rendered from (participant_list, participant_history, events); every row a step inserts, updates or
// deletes there records its participant in `derive_changes` with the run's watermark (`seq`, the highest
// segment id it derives). Rows are written in the steps' own transactions, so a crash keeps what the
// committed steps changed. Triggers see every write, whichever step makes it: a step cannot forget to
// report a change. Over-reporting (a row rewritten with equal content) only costs a re-render.
//
// A full run records nothing: it sets `meta.changes_from` to its watermark, which tells every consumer
// whose last render is older that the change set does not cover it (a full render follows).
// Consumers delete the rows they have rendered and raise `changes_from` (src/render/state.ts).
//
// The uptime buckets (uptime_hourly, uptime_daily, uptime_monthly) are recorded the same way, one kind
// per table (`uptime_hourly`, ...) keyed by the host id, with `at`: the oldest bucket_start the run
// inserted, updated or deleted for that host there (the minimum over its writes), so that `build`
// re-reads only the newer buckets of the host's uptime lists (docs/incremental.md, "Uptime").
//
// The event feed's lists (one per partition: the whole feed, a host, a seat, a type, a participant)
// are recorded as the partitions whose items may differ, in `derive_event_changes`: a write of an
// event, of its host or seat links, of its anomaly links, or of an anomaly's detector or grade (the
// event's `anomalies`) records every partition the event is listed in, before and after the write
// (docs/incremental.md, "Event lists").
import type { Db } from '../db/index.js';
import { getMeta, setMeta } from '../db/index.js';
import { ROLLUP_TABLES } from './hosts/rollup.js';
import { LIST_COLUMNS } from '../api/participants/query.js';

export const CHANGES_DDL = `
  CREATE TABLE IF NOT EXISTS derive_changes (
    kind TEXT NOT NULL,      -- 'participant', 'participant_item' (its list item may differ), or the uptime table ('uptime_hourly', ...)
    key  INTEGER NOT NULL,   -- participants.id; hosts.id for uptime
    seq  INTEGER NOT NULL,   -- derive watermark (segment id) of the run that made the change
    at   INTEGER,            -- uptime: the oldest bucket_start written (ms); null for a participant
    PRIMARY KEY (kind, key, seq)
  ) WITHOUT ROWID;
`;

/** The partitions of the event feed an event change is recorded under (derive_event_changes). */
export const EVENT_CHANGES_DDL = `
  CREATE TABLE IF NOT EXISTS derive_event_changes (
    family TEXT NOT NULL,    -- 'all', 'host', 'seat', 'type' or 'participant'
    part   TEXT NOT NULL,    -- 'all', the hostname, seat id, event type or participant id
    seq    INTEGER NOT NULL, -- derive watermark of the run that made the change
    PRIMARY KEY (family, part, seq)
  ) WITHOUT ROWID;
`;

/** The uptime bucket tables (ROLLUP_TABLES): each is a change kind of its own, named as the table. */
export const UPTIME_CHANGE_KINDS: readonly string[] = Object.values(ROLLUP_TABLES);

/** Derived tables whose rows belong to one participant: table -> the column naming it. */
const PARTICIPANT_TABLES: ReadonlyArray<readonly [table: string, column: string]> = [
  ['participant_list', 'participant_id'],
  ['participant_history', 'participant_id'],
  ['events', 'participant_id'],
];

const OPS = ['INSERT', 'UPDATE', 'DELETE'] as const;

/**
 * A recording statement of a trigger: `rows` (VALUES or a SELECT with a WHERE clause) inserted into
 * `into`, a row already there left as it is. ON CONFLICT DO NOTHING, not INSERT OR IGNORE: the
 * conflict clause of the statement that fires a trigger (an upsert, INSERT OR REPLACE) overrides an OR
 * clause in the trigger's body, and a plain insert's conflict would then abort the step's write.
 */
function recordSql(into: string, rows: string): string {
  return `INSERT INTO main.${into} ${rows} ON CONFLICT DO NOTHING;`;
}

/**
 * The change kind of a participant whose list item may differ (a participant_list row inserted,
 * deleted, or updated in a column the list item is made of, LIST_COLUMNS): a subset of the kind
 * 'participant', whose files are rendered again for any change (a new history row, an event). The
 * participant lists compare only these participants' items with the previous build's
 * (src/render/routes/participant-lists.ts).
 */
export const ITEM_CHANGE_KIND = 'participant_item';

/** The temporary triggers recording ITEM_CHANGE_KIND: operation -> the condition and the row. */
function itemTriggers(seq: number): Array<{ op: (typeof OPS)[number]; body: string; when?: string }> {
  const record = (r: 'OLD' | 'NEW'): string => recordSql('derive_changes (kind, key, seq)', `VALUES ('${ITEM_CHANGE_KIND}', ${r}.participant_id, ${seq})`);
  const differs = LIST_COLUMNS.split(', ')
    .map((c) => `OLD.${c} IS NOT NEW.${c}`)
    .join(' OR ');
  return [
    { op: 'INSERT', body: record('NEW') },
    { op: 'DELETE', body: record('OLD') },
    { op: 'UPDATE', body: `${record('OLD')} ${record('NEW')}`, when: differs },
  ];
}

function itemTriggerName(op: string): string {
  return `derive_changes_${ITEM_CHANGE_KIND}_${op.toLowerCase()}`;
}

/** A statement recording event feed partitions (`rows`: family, part, seq). */
const recordPart = (rows: string): string => recordSql('derive_event_changes (family, part, seq)', rows);

/** Records every partition of the events whose ids `ids` (a SELECT of event ids) gives, as they are now. */
function eventPartsSql(ids: string, seq: number): string {
  return [
    recordPart(`SELECT 'all', 'all', ${seq} FROM main.events WHERE id IN (${ids}) LIMIT 1`),
    recordPart(`SELECT 'type', type, ${seq} FROM main.events WHERE id IN (${ids})`),
    recordPart(`SELECT 'participant', p.pid, ${seq} FROM main.events e JOIN main.participants p ON p.id = e.participant_id WHERE e.id IN (${ids})`),
    recordPart(`SELECT 'host', hostname, ${seq} FROM main.event_hosts WHERE event_id IN (${ids})`),
    recordPart(`SELECT 'seat', seat_id, ${seq} FROM main.event_seats WHERE event_id IN (${ids})`),
  ].join(' ');
}

/** Records an event row's own partitions from its values (OLD of a deleted row: the row is gone). */
function eventRowPartsSql(r: 'OLD' | 'NEW', seq: number): string {
  return [
    recordPart(`VALUES ('all', 'all', ${seq}), ('type', ${r}.type, ${seq})`),
    recordPart(`SELECT 'participant', pid, ${seq} FROM main.participants WHERE id = ${r}.participant_id`),
    eventPartsSql(`SELECT ${r}.id`, seq),
  ].join(' ');
}

/**
 * The recording triggers of the event feed's partitions: table -> trigger body per operation (the
 * rows OLD and NEW as the operation has them). A link row names its own partition (a host or seat the
 * event may no longer be listed under) besides the event's.
 */
function eventTriggers(seq: number): Array<{ table: string; op: (typeof OPS)[number]; of?: string; body: string }> {
  const out: Array<{ table: string; op: (typeof OPS)[number]; of?: string; body: string }> = [];
  const rowsOf = (op: (typeof OPS)[number]): Array<'OLD' | 'NEW'> => (op === 'DELETE' ? ['OLD'] : op === 'INSERT' ? ['NEW'] : ['OLD', 'NEW']);
  for (const op of OPS) {
    const rows = rowsOf(op);
    out.push({ table: 'events', op, body: rows.map((r) => eventRowPartsSql(r, seq)).join(' ') });
    out.push({ table: 'event_hosts', op, body: rows.map((r) => `${recordPart(`VALUES ('host', ${r}.hostname, ${seq})`)} ${eventPartsSql(`SELECT ${r}.event_id`, seq)}`).join(' ') });
    out.push({ table: 'event_seats', op, body: rows.map((r) => `${recordPart(`VALUES ('seat', ${r}.seat_id, ${seq})`)} ${eventPartsSql(`SELECT ${r}.event_id`, seq)}`).join(' ') });
    out.push({ table: 'anomaly_events', op, body: rows.map((r) => eventPartsSql(`SELECT ${r}.event_id`, seq)).join(' ') });
    // An event item shows its anomalies' id, detector and grade (acknowledgements are not shown).
    out.push({
      table: 'anomalies',
      op,
      of: op === 'UPDATE' ? 'id, detector, grade' : undefined,
      body: rows.map((r) => eventPartsSql(`SELECT event_id FROM main.anomaly_events WHERE anomaly_id = ${r}.id`, seq)).join(' '),
    });
  }
  return out;
}

/** Tables whose triggers record event feed partitions. */
const EVENT_TRIGGER_TABLES = ['events', 'event_hosts', 'event_seats', 'anomaly_events', 'anomalies'] as const;

function eventTriggerName(table: string, op: string): string {
  return `derive_event_changes_${table}_${op.toLowerCase()}`;
}

function triggerName(table: string, op: string): string {
  return `derive_changes_${table}_${op.toLowerCase()}`;
}

/** Creates the change-set table (not a derived table: it survives a rebuild of the derived schema). */
export function ensureChangesTable(db: Db): void {
  db.exec(CHANGES_DDL);
  db.exec(EVENT_CHANGES_DDL);
  // A table created before uptime changes were recorded lacks `at`.
  const cols = db.prepare("SELECT name FROM pragma_table_info('derive_changes')").pluck().all() as string[];
  if (!cols.includes('at')) db.exec('ALTER TABLE derive_changes ADD COLUMN at INTEGER');
}

/** Installs the recording triggers for one incremental run (connection-local TEMP triggers). */
export function startRecording(db: Db, seq: number): void {
  if (!Number.isSafeInteger(seq)) throw new Error(`derive changes: bad watermark ${seq}`);
  stopRecording(db);
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  for (const [table, column] of PARTICIPANT_TABLES) {
    // A derive restricted to some steps (tests, benchmarks) may run without the participant tables.
    if (exists.get(table) === undefined) continue;
    for (const op of OPS) {
      const rows = op === 'DELETE' ? ['OLD'] : op === 'INSERT' ? ['NEW'] : ['OLD', 'NEW'];
      const body = rows
        .map((r) => recordSql('derive_changes (kind, key, seq)', `SELECT 'participant', ${r}.${column}, ${seq} WHERE ${r}.${column} IS NOT NULL`))
        .join(' ');
      db.exec(`CREATE TEMP TRIGGER ${triggerName(table, op)} AFTER ${op} ON main.${table} BEGIN ${body} END`);
    }
  }
  if (exists.get('participant_list') !== undefined) {
    for (const t of itemTriggers(seq)) {
      db.exec(`CREATE TEMP TRIGGER ${itemTriggerName(t.op)} AFTER ${t.op} ON main.participant_list ${t.when === undefined ? '' : `WHEN ${t.when} `}BEGIN ${t.body} END`);
    }
  }
  for (const table of UPTIME_CHANGE_KINDS) {
    if (exists.get(table) === undefined) continue;
    for (const op of OPS) {
      const rows = op === 'DELETE' ? ['OLD'] : op === 'INSERT' ? ['NEW'] : ['OLD', 'NEW'];
      // One row per host and run, holding the oldest bucket written (the WHERE makes the upsert parse).
      const body = rows
        .map(
          (r) =>
            `INSERT INTO main.derive_changes (kind, key, seq, at) SELECT '${table}', ${r}.host_id, ${seq}, ${r}.bucket_start WHERE true ` +
            'ON CONFLICT (kind, key, seq) DO UPDATE SET at = excluded.at WHERE excluded.at < at;',
        )
        .join(' ');
      db.exec(`CREATE TEMP TRIGGER ${triggerName(table, op)} AFTER ${op} ON main.${table} BEGIN ${body} END`);
    }
  }
  // The event feed's partitions: with the tables an event's partitions are read from.
  if (['events', 'event_hosts', 'event_seats', 'participants'].every((t) => exists.get(t) !== undefined)) {
    for (const t of eventTriggers(seq)) {
      if (exists.get(t.table) === undefined) continue;
      const on = t.of === undefined ? t.op : `${t.op} OF ${t.of}`;
      db.exec(`CREATE TEMP TRIGGER ${eventTriggerName(t.table, t.op)} AFTER ${on} ON main.${t.table} BEGIN ${t.body} END`);
    }
  }
}

export function stopRecording(db: Db): void {
  for (const table of [...PARTICIPANT_TABLES.map(([t]) => t), ...UPTIME_CHANGE_KINDS]) for (const op of OPS) db.exec(`DROP TRIGGER IF EXISTS temp.${triggerName(table, op)}`);
  for (const table of EVENT_TRIGGER_TABLES) for (const op of OPS) db.exec(`DROP TRIGGER IF EXISTS temp.${eventTriggerName(table, op)}`);
  for (const op of OPS) db.exec(`DROP TRIGGER IF EXISTS temp.${itemTriggerName(op)}`);
}

/** After a full derive: earlier change rows no longer describe the tables; nothing before `seq` is covered. */
export function resetChanges(db: Db, seq: number): void {
  db.prepare('DELETE FROM derive_changes').run();
  db.prepare('DELETE FROM derive_event_changes').run();
  setMeta(db, 'changes_from', String(seq));
}

/** The watermark up to which the change set is incomplete (a render at or after it can be incremental). */
export function changesFrom(db: Db): number {
  return Number(getMeta(db, 'changes_from') ?? 'NaN');
}

/** Drops the rows up to `seq` (rendered by their consumer) and raises changes_from to it. */
export function consumeChanges(db: Db, seq: number): void {
  db.transaction(() => {
    db.prepare('DELETE FROM derive_changes WHERE seq <= ?').run(seq);
    db.prepare('DELETE FROM derive_event_changes WHERE seq <= ?').run(seq);
    const from = changesFrom(db);
    if (!(from >= seq)) setMeta(db, 'changes_from', String(seq));
  })();
}
