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
import type { Db } from '../db/index.js';
import { getMeta, setMeta } from '../db/index.js';
import { ROLLUP_TABLES } from './hosts/rollup.js';

export const CHANGES_DDL = `
  CREATE TABLE IF NOT EXISTS derive_changes (
    kind TEXT NOT NULL,      -- 'participant', or the uptime table ('uptime_hourly', ...)
    key  INTEGER NOT NULL,   -- participants.id; hosts.id for uptime
    seq  INTEGER NOT NULL,   -- derive watermark (segment id) of the run that made the change
    at   INTEGER,            -- uptime: the oldest bucket_start written (ms); null for a participant
    PRIMARY KEY (kind, key, seq)
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

function triggerName(table: string, op: string): string {
  return `derive_changes_${table}_${op.toLowerCase()}`;
}

/** Creates the change-set table (not a derived table: it survives a rebuild of the derived schema). */
export function ensureChangesTable(db: Db): void {
  db.exec(CHANGES_DDL);
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
        .map((r) => `INSERT OR IGNORE INTO main.derive_changes (kind, key, seq) SELECT 'participant', ${r}.${column}, ${seq} WHERE ${r}.${column} IS NOT NULL;`)
        .join(' ');
      db.exec(`CREATE TEMP TRIGGER ${triggerName(table, op)} AFTER ${op} ON main.${table} BEGIN ${body} END`);
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
}

export function stopRecording(db: Db): void {
  for (const table of [...PARTICIPANT_TABLES.map(([t]) => t), ...UPTIME_CHANGE_KINDS]) for (const op of OPS) db.exec(`DROP TRIGGER IF EXISTS temp.${triggerName(table, op)}`);
}

/** After a full derive: earlier change rows no longer describe the tables; nothing before `seq` is covered. */
export function resetChanges(db: Db, seq: number): void {
  db.prepare('DELETE FROM derive_changes').run();
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
    const from = changesFrom(db);
    if (!(from >= seq)) setMeta(db, 'changes_from', String(seq));
  })();
}
