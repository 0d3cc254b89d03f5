// `npm run bench -- records`: what a participant's record costs to read and serialise, the oracle's way
// (a statement per participant and table: viewOf, participantsHistory, participantsEvents) against the
// render's (participantRowsOf: a batch of 2,000 participants, one statement per table;
// src/render/routes/participants.ts). Both must give the same record bytes; the benchmark checks it.
// No files are written: the figures are the SQLite reads, the objects and their JSON.
import Database from 'better-sqlite3';
import { LIMIT_DEFAULT } from '../src/api/params.js';
import { participantsEvents, participantsHistory, viewOf } from '../src/api/participants/query.js';
import type { RecordPage } from '../src/api/participants/record.js';
import type { ApiResult } from '../src/api/result.js';
import { participantRowsOf, type SeatProvider } from '../src/derive/participants/read.js';
import { RECORD_HEAD, recordOf, recordPage } from '../src/render/routes/participants.js';

export interface RecordsOptions {
  db: string;
  participants: number;
  /** The first participant_id read. */
  from: number;
  rounds: number;
}

const BATCH = 2000;

/** A first page's body (the participants read are known: anything but 200 is a failure). */
function bodyOf(r: ApiResult): RecordPage {
  if (r.status !== 200) throw new Error(`records: the oracle answered ${r.status}`);
  // A participant's events and history pages (ParticipantEventPage, ParticipantHistoryPage) are RecordPages.
  return r.body as RecordPage;
}

export function benchRecords(o: RecordsOptions, log: (line: string) => void): Record<string, unknown>[] {
  const db = new Database(o.db, { readonly: true });
  try {
    const units = db.prepare('SELECT participant_id, pid FROM participant_list WHERE participant_id >= ? ORDER BY participant_id LIMIT ?').all(o.from, o.participants) as Array<{ participant_id: number; pid: string }>;
    const oracle = (): string[] =>
      units.map((u) => {
        const participant = viewOf(db, u.pid);
        const history = recordPage(bodyOf(participantsHistory(db, { id: u.pid, limit: LIMIT_DEFAULT, cursor: undefined }, 0)));
        const events = recordPage(bodyOf(participantsEvents(db, { id: u.pid, limit: LIMIT_DEFAULT, cursor: undefined }, 0)));
        return JSON.stringify({ participant, history, events });
      });
    const batched = (): string[] => {
      const out: string[] = [];
      const providers = new Map<string, SeatProvider>();
      for (let i = 0; i < units.length; i += BATCH) {
        const b = units.slice(i, i + BATCH);
        const rows = participantRowsOf(db, b.map((u) => u.participant_id), RECORD_HEAD, providers);
        for (const u of b) {
          const r = rows.get(u.participant_id);
          if (r === undefined) throw new Error(`${u.pid}: no list row`);
          out.push(JSON.stringify(recordOf(u.pid, r)));
        }
      }
      return out;
    };
    const results: Record<string, unknown>[] = [];
    // The first round reads the pages cold; the later ones are the figures.
    for (let round = 0; round < o.rounds; round++) {
      let t = performance.now();
      const a = oracle();
      const oracleUs = ((performance.now() - t) * 1000) / units.length;
      t = performance.now();
      const b = batched();
      const batchedUs = ((performance.now() - t) * 1000) / units.length;
      const identical = a.length === b.length && a.every((x, i) => x === b[i]);
      if (!identical) throw new Error('records: the batched reader gave other bytes than the oracle');
      const r = { round, participants: units.length, oracle_us_per_record: Number(oracleUs.toFixed(1)), batched_us_per_record: Number(batchedUs.toFixed(1)), identical };
      log(`round ${round}: ${units.length} records, ${r.oracle_us_per_record} µs a record the oracle's way, ${r.batched_us_per_record} µs batched`);
      results.push(r);
    }
    return results;
  } finally {
    db.close();
  }
}
