// Compact form of validated feed records, the hand-off between the parse workers and the writer.
//
// Records are packed column-wise into a batch that is cheap to pass between threads: the numbers of
// the high-volume kinds (probe, directory, sml, smp) go into one Float64Array (transferred, not copied;
// null as NaN), their strings into one array, and the rare kinds (member, curation, zone, ack) travel
// as flat rows `[kind, at, ...]`. Values shared by many records (hosts, locations, networks,
// certificates, endpoint sets) are replaced by small ids of the encoder's dictionary; each new entry is
// emitted once, before the first batch that uses it, and the writer resolves entries to database ids.
// The dictionary is bounded: when full it starts over, between two chunks, and says so with a reset
// entry at the start of the next chunk's entries (never in the middle of a chunk: the writer registers
// a chunk's entries before it writes the chunk's rows, so ids made before a reset would be misread).
import { createHash } from 'node:crypto';
import type { FeedKind, FeedRecord, ProbeRecord, SmpRecord } from './schema.js';
import { timestampMs } from './validate.js';

export const KIND_BY_CODE: FeedKind[] = ['probe', 'directory', 'sml', 'smp', 'member', 'curation', 'zone', 'ack'];

/** Dictionary entry types. */
export const D_RESET = 0;
export const D_HOST = 1;
export const D_LOCATION = 2;
export const D_NETWORK = 3;
export const D_CERT = 4;
export const D_ENDPOINTS = 5;
export const DIM_TYPES = 6;

export type Row = (string | number | null)[];
export type DictEntry = (string | number | null)[];

/**
 * Per record, in order: its kind in `kinds`; then, by kind,
 * - probe:     nums [at, host, role (0 SMP, 1 AP), location, result, dns, tcp, tls, http, total, network, cert (-1: none)], strs [error]
 * - directory: nums [at, present, has_card], strs [pid, name, country, registration_date]
 * - sml:       nums [at, registered, smp host (-1: none)], strs [pid, zone]
 * - smp:       nums [at, smp host, endpoint set], strs [pid]
 * (pid is the canonical participant id `scheme::value`: the writer splits it when it is new.)
 * - others:    one row in `other`: [kind, at, ...fields]
 */
export interface RowBatch {
  kinds: Uint8Array;
  nums: Float64Array;
  strs: (string | null)[];
  other: Row[];
}

export const PROBE_NUMS = 12;

/** A nullable number as stored in `nums`. */
export const num = (x: number | null): number => (x === null ? NaN : x);
export const unnum = (x: number): number | null => (Number.isNaN(x) ? null : x);

const RESULT = { up: 0, degraded: 1, down: 2 } as const;
const b = (x: boolean): number => (x ? 1 : 0);

/** Milliseconds since the epoch of a validated ISO 8601 timestamp. */
export const toMs = timestampMs;

const DICT_LIMIT = 100_000;

/** What a host's previous probe used: a fleet reports the same addresses and certificate for hours. */
interface HostProbeState {
  ips: readonly string[];
  ptr: string | null;
  network: number;
  fingerprint: string | null;
  cert: number;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class RowEncoder {
  /** `limit`: dictionary entries after which it starts over (at the next chunk). */
  constructor(private readonly limit = DICT_LIMIT) {}

  private readonly ids: Map<string, number>[] = Array.from({ length: DIM_TYPES }, () => new Map());
  private size = 0;
  private dict: DictEntry[] = [];
  private kinds = new Uint8Array(1024);
  private n = 0;
  private nums = new Float64Array(16 * 1024);
  private nn = 0;
  private strs: (string | null)[] = [];
  private other: Row[] = [];
  /** By local host id: see HostProbeState. */
  private probeState: (HostProbeState | undefined)[] = [];
  private lastAtText = '';
  private lastAt = NaN;

  /** The records encoded since the last call, and the dictionary entries they introduced. */
  take(): { batch: RowBatch; dict: DictEntry[] } {
    const batch: RowBatch = { kinds: this.kinds.slice(0, this.n), nums: this.nums.slice(0, this.nn), strs: this.strs, other: this.other };
    const dict = this.dict;
    this.n = 0;
    this.nn = 0;
    this.strs = [];
    this.other = [];
    this.dict = [];
    if (this.size >= this.limit) {
      // Full: start over before the next chunk (see the top of this file).
      for (const m of this.ids) m.clear();
      this.size = 0;
      this.probeState = [];
      this.lastHostId = -1;
      this.dict.push([D_RESET]);
    }
    return { batch, dict };
  }

  /** Records of a batch mostly share their time: the last conversion is kept. */
  private at(text: string): number {
    if (text !== this.lastAtText) {
      this.lastAtText = text;
      this.lastAt = timestampMs(text);
    }
    return this.lastAt;
  }

  private kind(k: number): void {
    if (this.n === this.kinds.length) {
      const grown = new Uint8Array(this.kinds.length * 2);
      grown.set(this.kinds);
      this.kinds = grown;
    }
    this.kinds[this.n++] = k;
  }

  /** Makes room for `n` more numbers. */
  private room(n: number): Float64Array {
    if (this.nn + n > this.nums.length) {
      const grown = new Float64Array(Math.max(this.nums.length * 2, this.nn + n));
      grown.set(this.nums);
      this.nums = grown;
    }
    return this.nums;
  }

  private push3(a: number, b: number, c: number): void {
    const nums = this.room(3);
    nums[this.nn++] = a;
    nums[this.nn++] = b;
    nums[this.nn++] = c;
  }

  private id(type: number, key: string, payload: () => (string | number | null)[]): number {
    const map = this.ids[type]!;
    let id = map.get(key);
    if (id === undefined) {
      id = map.size;
      map.set(key, id);
      this.size++;
      this.dict.push([type, id, ...payload()]);
    }
    return id;
  }

  private lastHost = '';
  private lastHostId = -1;

  /** Consecutive probes are often of one host: the last lookup is kept. */
  private host(hostname: string): number {
    if (hostname !== this.lastHost || this.lastHostId < 0) {
      this.lastHostId = this.id(D_HOST, hostname, () => [hostname]);
      this.lastHost = hostname;
    }
    return this.lastHostId;
  }

  private location(name: string): number {
    return this.id(D_LOCATION, name, () => [name]);
  }

  /** Network and certificate ids of a probe, through the host's previous probe when they are the same. */
  private probeDims(host: number, r: ProbeRecord): HostProbeState {
    let st = this.probeState[host];
    if (st === undefined) this.probeState[host] = st = { ips: [], ptr: null, network: -1, fingerprint: null, cert: -1 };
    const { ips, ptr } = r;
    if (st.network < 0 || ptr !== st.ptr || !sameStrings(ips, st.ips)) {
      st.network = this.id(D_NETWORK, `${ips.join(' ')}|${ptr ?? ''}`, () => [JSON.stringify(ips), ptr]);
      st.ips = ips;
      st.ptr = ptr;
    }
    const c = r.cert;
    if (c === null) {
      st.fingerprint = null;
      st.cert = -1;
    } else if (c.fingerprint !== st.fingerprint) {
      st.cert = this.id(D_CERT, c.fingerprint, () => [c.fingerprint, c.subject, c.issuer, toMs(c.not_before), toMs(c.not_after)]);
      st.fingerprint = c.fingerprint;
    }
    return st;
  }

  encode(r: FeedRecord): void {
    const at = this.at(r.at);
    switch (r.kind) {
      case 'probe': {
        const p = r.phases;
        const host = this.host(r.hostname);
        const { network: net, cert } = this.probeDims(host, r);
        const location = this.location(r.location);
        this.kind(0);
        const nums = this.room(PROBE_NUMS);
        let i = this.nn;
        nums[i++] = at;
        nums[i++] = host;
        nums[i++] = r.role === 'AP' ? 1 : 0;
        nums[i++] = location;
        nums[i++] = RESULT[r.result];
        nums[i++] = num(p.dns);
        nums[i++] = num(p.tcp);
        nums[i++] = num(p.tls);
        nums[i++] = num(p.http);
        nums[i++] = num(p.total);
        nums[i++] = net;
        nums[i++] = cert;
        this.nn = i;
        this.strs.push(r.error ?? null);
        return;
      }
      case 'directory': {
        const c = r.card;
        this.kind(1);
        this.push3(at, b(r.present), c ? 1 : 0);
        this.strs.push(r.participant.id, c?.name ?? null, c?.countryCode ?? null, c?.registrationDate ?? null);
        return;
      }
      case 'sml':
        this.kind(2);
        this.push3(at, b(r.registered), r.smp ? this.host(r.smp) : -1);
        this.strs.push(r.participant.id, r.zone ?? null);
        return;
      case 'smp': {
        // Keyed by the endpoints as given (cheap); the canonical form is computed once per new key.
        let raw = '';
        for (const e of r.endpoints) raw += `${e.doctype}\u0001${e.process}\u0001${e.transport_profile}\u0001${e.url}\u0001${e.cert ? `${e.cert.fingerprint}\u0001${e.cert.subject}\u0001${e.cert.issuer}` : '-'}\u0002`;
        const eps = this.id(D_ENDPOINTS, raw, () => {
          const json = canonicalEndpoints(r.endpoints);
          return [createHash('sha256').update(json).digest('hex'), json];
        });
        const host = this.host(r.smp);
        this.kind(3);
        this.push3(at, host, eps);
        this.strs.push(r.participant.id);
        return;
      }
      case 'member': {
        const f = r.flags;
        this.kind(4);
        this.other.push([4, at, r.key, r.trade_name, r.legal_name, r.country, r.url, b(f.peppol_authority), b(f.ap), b(f.smp), b(f.end_user), b(f.observer), JSON.stringify(r.hostnames), b(r.active)]);
        return;
      }
      case 'curation':
        this.kind(5);
        this.other.push([5, at, r.slug, r.name, r.country, r.natural_key, r.notes, JSON.stringify(r.seats), r.member_key]);
        return;
      case 'zone': {
        const m = r.management;
        this.kind(6);
        this.other.push([
          6,
          at,
          r.zone,
          this.location(r.location),
          r.zone_kind,
          r.env,
          r.operator,
          r.existing_ok,
          r.existing_total,
          r.nonexistent_ok,
          r.nonexistent_total,
          b(r.critical_nxdomain),
          r.soa_serial,
          JSON.stringify(r.ns),
          r.dname_target,
          m?.host ?? null,
          m && m.tls_ok !== null ? b(m.tls_ok) : null,
          m?.tls_not_after ? toMs(m.tls_not_after) : null,
          m?.tls_issuer ?? null,
        ]);
        return;
      }
      case 'ack':
        this.kind(7);
        this.other.push([7, at, r.anomaly_id, b(r.acknowledged), r.reason]);
        return;
    }
  }
}

/** Canonical JSON of an endpoint list: fixed key order, sorted, so equal lists are equal strings. */
export function canonicalEndpoints(endpoints: SmpRecord['endpoints']): string {
  const items = endpoints.map((e) =>
    JSON.stringify({
      doctype: e.doctype,
      process: e.process,
      transport_profile: e.transport_profile,
      url: e.url,
      cert: e.cert ? { fingerprint: e.cert.fingerprint, subject: e.cert.subject, issuer: e.cert.issuer } : null,
    }),
  );
  items.sort();
  return `[${items.join(',')}]`;
}
