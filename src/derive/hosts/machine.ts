// The per-host state machine: reads one host's checks in time order and produces its verdict
// validity intervals, incidents, host events, rollup buckets and daily checkpoints
// (docs/methodology/hosts.md). Its whole state at a UTC day boundary is a checkpoint
// (host_checkpoints), so a host is recomputed from the latest checkpoint at or before the earliest new
// observation instead of from the beginning, and a full rebuild after raw pruning resumes at the
// pruning horizon with the history before it kept.
import { seatIdFromSubject } from '../../feeds/ids.js';
import { incidentSlot, openIncidentRow, type FinishedIncident, type OpenIncident } from './incidents.js';
import { evaluate, KNOWN_WINDOW_MS, RESULT_VERDICT, type LocationCheck, type Verdict } from './quorum.js';
import { dayStart, isoTime } from './time.js';

/** One raw check, as read from probe_obs (ordered by at, then location id). */
export type ProbeRow = [
  locationId: number,
  at: number,
  result: number,
  dns: number | null,
  tcp: number | null,
  tls: number | null,
  http: number | null,
  total: number | null,
  networkId: number | null,
  certId: number | null,
];

/** The machine state after every slot before a checkpoint instant (stored as JSON). */
export interface HostCheckpoint {
  /** Latest check per location within 24 h: [location id, at, result code], by location id. */
  locs: [number, number, number][];
  /** networks.id of the latest check, certs.id of the latest non-null certificate. */
  net: number | null;
  cert: number | null;
  lastSlot: number | null;
  /** When the verdict of the last slot goes stale (quorum.ts). */
  staleAt: number | null;
  /** The interval not yet closed: [valid_from, verdict, network id, cert id]. */
  open: [number, Verdict | null, number | null, number | null] | null;
  incident: OpenIncident | null;
}

export const EMPTY_CHECKPOINT: HostCheckpoint = { locs: [], net: null, cert: null, lastSlot: null, staleAt: null, open: null, incident: null };

export interface CertInfo {
  fingerprint: string;
  subject: string;
  issuer: string;
  not_before: number;
  not_after: number;
}
export interface NetworkInfo {
  ips: string[];
  ptr: string | null;
}

/** Where the machine's output goes (the step writes rows; pruning only wants the final state). */
export interface HostSink {
  interval(from: number, to: number | null, verdict: Verdict | null, networkId: number | null, certId: number | null): void;
  incident(inc: FinishedIncident): void;
  event(type: 'host_cert_rotated' | 'hosting_changed', at: number, payload: Record<string, unknown>, seats: string[]): void;
  checkpoint(at: number, state: string): void;
  check(row: ProbeRow): void;
}

export interface Lookups {
  cert(id: number): CertInfo;
  network(id: number): NetworkInfo;
}

export function certView(c: CertInfo): Record<string, string> {
  return { fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, not_before: isoTime(c.not_before), not_after: isoTime(c.not_after) };
}

export class HostMachine {
  private locs = new Map<number, LocationCheck>();
  private net: number | null;
  private cert: number | null;
  private lastSlot: number | null;
  private staleAt: number | null;
  private open: HostCheckpoint['open'];
  private incident: OpenIncident | null;
  private slotAt: number | null = null;

  constructor(
    state: HostCheckpoint,
    private readonly sink: HostSink,
    private readonly lookups: Lookups,
  ) {
    for (const [loc, at, code] of state.locs) this.locs.set(loc, { at, verdict: RESULT_VERDICT[code]! });
    this.net = state.net;
    this.cert = state.cert;
    this.lastSlot = state.lastSlot;
    this.staleAt = state.staleAt;
    this.open = state.open ? [...state.open] : null;
    this.incident = state.incident ? { ...state.incident, timeline: state.incident.timeline.map(([a, v]) => [a, v] as [number, Verdict]) } : null;
  }

  /** Feeds one check; checks must come ordered by (at, location id). */
  check(row: ProbeRow): void {
    const [loc, at, result, , , , , , networkId, certId] = row;
    if (at !== this.slotAt) {
      if (this.slotAt !== null) this.endSlot(this.slotAt);
      this.beginSlot(at);
      this.slotAt = at;
    }
    // Host events compare each check with the previous one (hosting) or the previous certificate seen.
    if (networkId !== null) {
      if (this.net !== null && networkId !== this.net) {
        const before = this.lookups.network(this.net);
        const after = this.lookups.network(networkId);
        this.sink.event('hosting_changed', at, { before: { ips: before.ips, ptr: before.ptr }, after: { ips: after.ips, ptr: after.ptr } }, []);
      }
      this.net = networkId;
    }
    if (certId !== null) {
      if (this.cert !== null && certId !== this.cert) {
        const before = this.lookups.cert(this.cert);
        const after = this.lookups.cert(certId);
        const seatBefore = seatIdFromSubject(before.subject);
        const seatAfter = seatIdFromSubject(after.subject);
        const seats = [...new Set([seatBefore, seatAfter].filter((s): s is string => s !== null))];
        this.sink.event('host_cert_rotated', at, { before: certView(before), after: certView(after), seat_before: seatBefore, seat_after: seatAfter }, seats);
      }
      this.cert = certId;
    }
    const verdict = RESULT_VERDICT[result];
    if (verdict === undefined) throw new Error(`probe_obs.result ${result} is not 0, 1 or 2`);
    this.locs.set(loc, { at, verdict });
    this.sink.check(row);
  }

  /** The state after every check fed so far (closes the current slot: call only between slots). */
  snapshot(at: number): string {
    if (this.slotAt !== null) {
      this.endSlot(this.slotAt);
      this.slotAt = null;
    }
    return this.serialise(at);
  }

  /** Ends the data: writes the open interval (going stale after the last slot) and the open incident. */
  finish(): void {
    if (this.slotAt !== null) {
      this.endSlot(this.slotAt);
      this.slotAt = null;
    }
    if (this.staleAt !== null) this.push(this.staleAt, null);
    if (this.open) this.sink.interval(this.open[0], null, this.open[1], this.open[2], this.open[3]);
    this.open = null;
    if (this.incident) this.sink.incident(openIncidentRow(this.incident));
    this.incident = null;
  }

  private serialise(at: number): string {
    const locs: [number, number, number][] = [...this.locs]
      .filter(([, c]) => c.at > at - KNOWN_WINDOW_MS)
      .sort((a, b) => a[0] - b[0])
      .map(([loc, c]) => [loc, c.at, RESULT_VERDICT.indexOf(c.verdict)]);
    const state: HostCheckpoint = { locs, net: this.net, cert: this.cert, lastSlot: this.lastSlot, staleAt: this.staleAt, open: this.open, incident: this.incident };
    return JSON.stringify(state);
  }

  private beginSlot(t: number): void {
    // A checkpoint at the start of the UTC day of the first slot of a new day: the state after every
    // earlier slot (taken before the stale interval below is written, as a resumed run does it).
    if (this.lastSlot !== null && dayStart(t) > dayStart(this.lastSlot)) this.sink.checkpoint(dayStart(t), this.serialise(dayStart(t)));
    if (this.staleAt !== null && this.staleAt < t) this.push(this.staleAt, null);
  }

  private endSlot(t: number): void {
    const ev = evaluate(this.locs.values(), t);
    this.push(t, ev.verdict);
    this.staleAt = ev.staleAt;
    this.lastSlot = t;
    const r = incidentSlot(this.incident, t, ev.verdict);
    this.incident = r.open;
    if (r.closed) this.sink.incident(r.closed);
  }

  /** A change point of the state: closes the open interval when anything differs. */
  private push(from: number, verdict: Verdict | null): void {
    const o = this.open;
    if (o && o[1] === verdict && o[2] === this.net && o[3] === this.cert) return;
    if (o) this.sink.interval(o[0], from, o[1], o[2], o[3]);
    this.open = [from, verdict, this.net, this.cert];
  }
}
