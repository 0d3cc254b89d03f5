// One host's recomputation as data: the machine (machine.ts) fed with the host's raw checks from its
// checkpoint on, its output collected instead of written. The hosts step (step.ts) writes the output;
// it computes hosts on worker threads when it can (src/derive/pool.ts), each with a read connection of its own, and
// in its own thread otherwise. Both run this code, so the rows are the same either way.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../../db/index.js';
import type { FinishedIncident } from './incidents.js';
import { HostMachine, type CertInfo, type HostCheckpoint, type HostSink, type Lookups, type NetworkInfo, type ProbeRow } from './machine.js';
import type { Verdict } from './quorum.js';
import { BucketAccumulator, phaseIndex } from './rollup.js';
import { DAY, dayStart, hourStart } from './time.js';

/** Raw checks and the lookups of the machine, read from the ingested tables (which derive never writes). */
export class ProbeReader implements Lookups {
  private readonly certs = new Map<number, CertInfo>();
  private readonly networks = new Map<number, NetworkInfo>();
  private readonly certStmt: Statement;
  private readonly netStmt: Statement;
  readonly locationIds: number[];
  readonly locationNames: Map<number, string>;
  private readonly day: Statement;
  private readonly dayUpTo: Statement;
  private readonly minAt: Statement;
  private readonly maxAt: Statement;

  constructor(db: Db) {
    this.certStmt = db.prepare('SELECT fingerprint, subject, issuer, not_before, not_after FROM certs WHERE id = ?');
    this.netStmt = db.prepare('SELECT ips, ptr FROM networks WHERE id = ?');
    const locs = db.prepare('SELECT id, name FROM locations ORDER BY id').all() as { id: number; name: string }[];
    this.locationIds = locs.map((l) => l.id);
    this.locationNames = new Map(locs.map((l) => [l.id, l.name]));
    // One primary-key range (host, location, at) per location, merged here: cheaper than letting
    // SQLite sort the rows of all locations.
    const cols = 'location_id, at, result, dns, tcp, tls, http, total, network_id, cert_id';
    this.day = db.prepare(`SELECT ${cols} FROM probe_obs WHERE host_id = ? AND location_id = ? AND at >= ? AND at < ?`).raw();
    this.dayUpTo = db.prepare(`SELECT ${cols} FROM probe_obs WHERE host_id = ? AND location_id = ? AND at >= ? AND at < ? AND segment_id <= ?`).raw();
    this.minAt = db.prepare('SELECT min(at) FROM probe_obs WHERE host_id = ? AND location_id = ?').pluck();
    this.maxAt = db.prepare('SELECT max(at) FROM probe_obs WHERE host_id = ? AND location_id = ?').pluck();
  }

  cert(id: number): CertInfo {
    let c = this.certs.get(id);
    if (!c) {
      c = this.certStmt.get(id) as CertInfo | undefined;
      if (!c) throw new Error(`certs row ${id} is missing`);
      this.certs.set(id, c);
    }
    return c;
  }

  network(id: number): NetworkInfo {
    let n = this.networks.get(id);
    if (!n) {
      const row = this.netStmt.get(id) as { ips: string; ptr: string | null } | undefined;
      if (!row) throw new Error(`networks row ${id} is missing`);
      n = { ips: JSON.parse(row.ips) as string[], ptr: row.ptr };
      this.networks.set(id, n);
    }
    return n;
  }

  /** Earliest and latest check of a host (null when it has none). */
  span(hostId: number): { min: number; max: number } | null {
    let min = Infinity;
    let max = -Infinity;
    for (const loc of this.locationIds) {
      const a = this.minAt.get(hostId, loc) as number | null;
      const b = this.maxAt.get(hostId, loc) as number | null;
      if (a !== null && a < min) min = a;
      if (b !== null && b > max) max = b;
    }
    return min === Infinity ? null : { min, max };
  }

  /**
   * Feeds a host's checks in [from, to) to `feed`, one UTC day per query (bounded memory; no
   * statement stays open while the caller writes). maxSegment: only rows of segments up to it.
   */
  feed(hostId: number, from: number, to: number, maxSegment: number | null, feed: (row: ProbeRow) => void): number {
    let n = 0;
    for (let d = dayStart(from); d < to; d += DAY) {
      const lo = Math.max(d, from);
      const hi = Math.min(d + DAY, to);
      let rows: ProbeRow[] = [];
      for (const loc of this.locationIds) {
        const part = (maxSegment === null ? this.day.all(hostId, loc, lo, hi) : this.dayUpTo.all(hostId, loc, lo, hi, maxSegment)) as ProbeRow[];
        rows = rows.length === 0 ? part : rows.concat(part);
      }
      rows.sort((x, y) => x[1] - y[1] || x[0] - y[0]);
      for (const r of rows) feed(r);
      n += rows.length;
    }
    return n;
  }
}

/** What a host's recomputation starts from: its latest checkpoint (instant and state), or scratch. */
export interface HostJob {
  hostId: number;
  /** The checkpoint's instant; null from scratch (the host's first check on). */
  resumeAt: number | null;
  state: HostCheckpoint;
}

/** Numbers per bucket row in HostOutput.buckets. */
export const BUCKET_FIELDS = 7;
export const HOURLY = 0;
export const DAILY = 1;

/**
 * A host's rows, in the order the machine produced them. The rollup buckets are packed (a host has
 * about 15,000 of them over 90 days, and they cross threads): BUCKET_FIELDS numbers per row, namely
 * resolution (HOURLY, DAILY), bucket start, index into `locations`, up, degraded, down and the end
 * offset of its sketches in `sketches` (they start where the previous row's end).
 */
export interface HostOutput {
  hostId: number;
  /** The job's resumeAt: the instant the host's rows were rewritten from (null: all of them). */
  resumeAt: number | null;
  checks: number;
  buckets: Float64Array;
  locations: string[];
  sketches: Uint8Array;
  intervals: [from: number, to: number | null, verdict: Verdict | null, networkId: number | null, certId: number | null][];
  incidents: FinishedIncident[];
  events: [type: 'host_cert_rotated' | 'hosting_changed', at: number, payload: string, seats: string][];
  checkpoints: [at: number, state: string][];
}

/** Runs the machine over a host's checks from its checkpoint on (to its last check), collecting its rows. */
export function computeHost(reader: ProbeReader, job: HostJob): HostOutput {
  const nums: number[] = [];
  const blobs: Buffer[] = [];
  const locations: string[] = [];
  const locIndex = new Map<string, number>();
  let offset = 0;
  const bucketWriter =
    (resolution: number) =>
    (b: number, loc: string, up: number, dg: number, dn: number, sk: Buffer): void => {
      let li = locIndex.get(loc);
      if (li === undefined) {
        li = locations.length;
        locations.push(loc);
        locIndex.set(loc, li);
      }
      offset += sk.length;
      blobs.push(sk);
      nums.push(resolution, b, li, up, dg, dn, offset);
    };
  const hourly = new BucketAccumulator(hourStart, bucketWriter(HOURLY));
  const daily = new BucketAccumulator(dayStart, bucketWriter(DAILY));
  const names = reader.locationNames;
  const out: HostOutput = { hostId: job.hostId, resumeAt: job.resumeAt, checks: 0, buckets: new Float64Array(0), locations, sketches: new Uint8Array(0), intervals: [], incidents: [], events: [], checkpoints: [] };
  const sink: HostSink = {
    interval: (from, to, verdict, net, cert) => out.intervals.push([from, to, verdict, net, cert]),
    incident: (inc) => out.incidents.push(inc),
    event: (type, at, payload, seats) => out.events.push([type, at, JSON.stringify(payload), JSON.stringify(seats)]),
    checkpoint: (at, st) => out.checkpoints.push([at, st]),
    check: (row) => {
      const name = names.get(row[0]) ?? String(row[0]);
      const phases = [phaseIndex(row[3]), phaseIndex(row[4]), phaseIndex(row[5]), phaseIndex(row[6]), phaseIndex(row[7])];
      hourly.add(row[1], name, row[2], phases);
      daily.add(row[1], name, row[2], phases);
    },
  };
  const machine = new HostMachine(job.state, sink, reader);
  const span = reader.span(job.hostId);
  if (span) {
    const from = job.resumeAt ?? span.min;
    if (from <= span.max) out.checks = reader.feed(job.hostId, from, span.max + 1, null, (r) => machine.check(r));
  }
  machine.finish();
  hourly.flush();
  daily.flush();
  out.buckets = Float64Array.from(nums);
  // A buffer of its own (Buffer.concat may return a slice of Node's shared pool), so that a worker can
  // move it to the step's thread.
  const sketches = new Uint8Array(offset);
  let at = 0;
  for (const b of blobs) {
    sketches.set(b, at);
    at += b.length;
  }
  out.sketches = sketches;
  return out;
}
