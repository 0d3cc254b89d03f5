// A full participants run's unit of work (step.ts runFull): the participants of an id range derived
// from their observations, as data. The step writes them; on a full run it derives ranges on worker
// threads (src/derive/pool.ts), each with a read connection of its own, and in its own thread
// otherwise. Both run this code, so the rows are the same either way.
import type { Db } from '../../db/index.js';
import type { NewEvent } from '../events.js';
import { deriveParticipant, type DirObs, type HistoryRow, type ListRow, type ParticipantDerivation, type ParticipantKey, type SmlObs, type SmpObs } from './derive.js';
import { EndpointSets, type EndpointSet } from './endpoints.js';

export const DIR_COLS = 'participant_id, at, present, has_card, name, country, registration_date';

/** Hostnames by hosts.id (a few thousand hosts: memoised for the run). */
export class HostNames {
  private readonly memo = new Map<number, string>();
  private readonly q;
  constructor(db: Db) {
    this.q = db.prepare('SELECT hostname FROM hosts WHERE id = ?').pluck();
  }
  get(id: number | null): string | null {
    if (id === null) return null;
    let h = this.memo.get(id);
    if (h === undefined) {
      h = this.q.get(id) as string;
      this.memo.set(id, h);
    }
    return h;
  }
}

// Rows are read in raw (array) mode and turned into objects here: cheaper than named rows.
export type DirRaw = [participant_id: number, at: number, present: number, has_card: number, name: string | null, country: string | null, registration_date: string | null];
export type SmlRaw = [participant_id: number, at: number, registered: number, smp_host_id: number | null];
export type SmpRaw = [participant_id: number, at: number, endpoint_set_id: number];
export const dirObs = (r: DirRaw): DirObs => ({ at: r[1], present: r[2], has_card: r[3], name: r[4], country: r[5], registration_date: r[6] });
export const smlObs = (r: SmlRaw, hosts: HostNames): SmlObs => ({ at: r[1], registered: r[2], smp: hosts.get(r[3]) });
export const smpObs = (r: SmpRaw): SmpObs => ({ at: r[1], set: r[2] });

/** Participant ids [lo, hi), their observations of segments up to `upTo`, the first sweep's end (baseline.ts). */
export interface RangeJob {
  lo: number;
  hi: number;
  upTo: number;
  sweepEnd: number | null;
}

/** The participants of a range that have an observation, in id order, with what deriveParticipant gives. */
export type ParticipantRange = [id: number, derived: ParticipantDerivation][];

/** The columns of participant_list after participant_id, in the order the step binds them. */
export const LIST_ROW_COLUMNS = ['pid', 'scheme', 'value', 'name', 'country', 'registration_date', 'has_card', 'directory_present', 'directory_since', 'registered', 'registration_since', 'smp', 'ap_seat_id', 'endpoint_set_id', 'provenance', 'first_seen_at', 'last_seen_at'] as const;
export const HISTORY_COLUMNS = ['valid_from', 'fact', 'valid_to', 'flag', 'name', 'country', 'registration_date', 'hostname'] as const;

/** A list row's values in LIST_ROW_COLUMNS order. */
export function listValues(l: ListRow): unknown[] {
  return [l.pid, l.scheme, l.value, l.name, l.country, l.registration_date, l.has_card, l.directory_present, l.directory_since, l.registered, l.registration_since, l.smp, l.ap_seat_id, l.endpoint_set_id, l.provenance, l.first_seen_at, l.last_seen_at];
}

/** A history row's values in HISTORY_COLUMNS order. */
export const historyValues = (h: HistoryRow): unknown[] => [h.valid_from, h.fact, h.valid_to, h.flag, h.name, h.country, h.registration_date, h.hostname];

/** Values per list row of a PackedRange: participant_id, then LIST_ROW_COLUMNS. */
export const PACKED_LIST_ARITY = 1 + LIST_ROW_COLUMNS.length;
/** Values per history row of a PackedRange: participant_id, then HISTORY_COLUMNS. */
export const PACKED_HISTORY_ARITY = 1 + HISTORY_COLUMNS.length;

/**
 * A range's derivation as a full run writes it (inserts only): each table's rows as one flat array of
 * column values, PACKED_LIST_ARITY and PACKED_HISTORY_ARITY values a row, in the order of the range's
 * participants. A range crosses from a worker to the step's thread, the step's bottleneck (the
 * workers waited on it about half the time): receiving a structured clone of its row objects (an
 * object and its property names each, about 7,500 rows a range at `peppol`) took about a fifth of that
 * thread's time, besides their conversion back to values for the inserts; a flat array of values
 * moves and binds as it is.
 */
export interface PackedRange {
  lists: unknown[];
  history: unknown[];
  events: NewEvent[];
  /** The latest last_seen_at of the range's listed participants (null: none listed). */
  maxLastSeen: number | null;
}

export function packRange(range: ParticipantRange): PackedRange {
  const out: PackedRange = { lists: [], history: [], events: [], maxLastSeen: null };
  for (const [id, d] of range) {
    if (d.list !== null) {
      out.lists.push(d.list.participant_id, ...listValues(d.list));
      if (out.maxLastSeen === null || d.list.last_seen_at > out.maxLastSeen) out.maxLastSeen = d.list.last_seen_at;
    }
    for (const h of d.history) out.history.push(id, ...historyValues(h));
    for (const e of d.events) out.events.push(e);
  }
  return out;
}

/** Reads and derives id ranges (the raw tables only: participants, observations, endpoint sets, hosts). */
export class RangeReader {
  private readonly parts;
  private readonly dirQ;
  private readonly smlQ;
  private readonly smpQ;
  private readonly sets: EndpointSets;
  private readonly hosts: HostNames;

  constructor(db: Db) {
    this.parts = db.prepare('SELECT id, pid, scheme, value FROM participants WHERE id >= ? AND id < ? ORDER BY id');
    const range = 'participant_id >= ? AND participant_id < ? AND segment_id <= ? ORDER BY participant_id, at';
    this.dirQ = db.prepare(`SELECT ${DIR_COLS} FROM directory_obs WHERE ${range}`).raw();
    this.smlQ = db.prepare(`SELECT participant_id, at, registered, smp_host_id FROM sml_obs WHERE ${range}`).raw();
    this.smpQ = db.prepare(`SELECT participant_id, at, endpoint_set_id FROM smp_obs WHERE ${range}`).raw();
    this.sets = new EndpointSets(db);
    this.hosts = new HostNames(db);
  }

  derive(job: RangeJob): ParticipantRange {
    const { lo, hi, upTo, sweepEnd } = job;
    const ps = this.parts.all(lo, hi) as ParticipantKey[];
    const dirs = this.dirQ.all(lo, hi, upTo) as DirRaw[];
    const smls = this.smlQ.all(lo, hi, upTo) as SmlRaw[];
    const smps = this.smpQ.all(lo, hi, upTo) as SmpRaw[];
    const setOf = (id: number): EndpointSet => this.sets.get(id);
    const out: ParticipantRange = [];
    let i = 0;
    let j = 0;
    let k = 0;
    for (const p of ps) {
      const dir: DirObs[] = [];
      for (; i < dirs.length && dirs[i]![0] === p.id; i++) dir.push(dirObs(dirs[i]!));
      const sml: SmlObs[] = [];
      for (; j < smls.length && smls[j]![0] === p.id; j++) sml.push(smlObs(smls[j]!, this.hosts));
      const smp: SmpObs[] = [];
      for (; k < smps.length && smps[k]![0] === p.id; k++) smp.push(smpObs(smps[k]!));
      if (dir.length === 0 && sml.length === 0 && smp.length === 0) continue;
      out.push([p.id, deriveParticipant(p, dir, sml, smp, setOf, sweepEnd)]);
    }
    return out;
  }
}
