// A full participants run's unit of work (step.ts runFull): the participants of an id range derived
// from their observations, as data. The step writes them; on a full run it derives ranges on worker
// threads (src/derive/pool.ts), each with a read connection of its own, and in its own thread
// otherwise. Both run this code, so the rows are the same either way.
import type { Db } from '../../db/index.js';
import { deriveParticipant, type DirObs, type ParticipantDerivation, type ParticipantKey, type SmlObs, type SmpObs } from './derive.js';
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
