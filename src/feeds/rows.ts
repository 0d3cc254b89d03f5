// Compact form of validated feed records, the hand-off between the parse workers and the writer.
//
// Records are packed column-wise into a batch that is cheap to pass between threads: the numbers of
// the high-volume kinds (probe, directory, sml, smp) go into one Float64Array (transferred, not copied;
// null as NaN), their strings into one array, and the rare kinds (member, curation, zone, ack) travel
// as flat rows `[kind, at, ...]`. Values shared by many records (hosts, locations, networks,
// certificates, endpoint sets) are replaced by small ids of the encoder's dictionary; each new entry is
// emitted once, before the first batch that uses it, and the writer resolves entries to database ids.
// The dictionary is bounded: when full it starts over and says so with a reset entry.
import { createHash } from 'node:crypto';
import type { FeedKind, FeedRecord, SmpRecord } from './schema.js';

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
 * - directory: nums [at, present, has_card], strs [pid, scheme, value, name, country, registration_date]
 * - sml:       nums [at, registered, smp host (-1: none)], strs [pid, scheme, value, zone]
 * - smp:       nums [at, smp host, endpoint set], strs [pid, scheme, value]
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
export function toMs(iso: string): number {
  return Date.parse(iso);
}

const DICT_LIMIT = 100_000;

export class RowEncoder {
  private readonly ids: Map<string, number>[] = Array.from({ length: DIM_TYPES }, () => new Map());
  private size = 0;
  private dict: DictEntry[] = [];
  private kinds = new Uint8Array(1024);
  private n = 0;
  private nums = new Float64Array(16 * 1024);
  private nn = 0;
  private strs: (string | null)[] = [];
  private other: Row[] = [];

  /** The records encoded since the last call, and the dictionary entries they introduced. */
  take(): { batch: RowBatch; dict: DictEntry[] } {
    const batch: RowBatch = { kinds: this.kinds.slice(0, this.n), nums: this.nums.slice(0, this.nn), strs: this.strs, other: this.other };
    const dict = this.dict;
    this.n = 0;
    this.nn = 0;
    this.strs = [];
    this.other = [];
    this.dict = [];
    return { batch, dict };
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
      if (this.size >= DICT_LIMIT) {
        for (const m of this.ids) m.clear();
        this.size = 0;
        this.dict.push([D_RESET]);
      }
      id = map.size;
      map.set(key, id);
      this.size++;
      this.dict.push([type, id, ...payload()]);
    }
    return id;
  }

  private host(hostname: string): number {
    return this.id(D_HOST, hostname, () => [hostname]);
  }

  private location(name: string): number {
    return this.id(D_LOCATION, name, () => [name]);
  }

  encode(r: FeedRecord): void {
    const at = toMs(r.at);
    switch (r.kind) {
      case 'probe': {
        const p = r.phases;
        const ptr = r.ptr;
        const ips = r.ips;
        const net = this.id(D_NETWORK, `${ips.join(' ')}|${ptr ?? ''}`, () => [JSON.stringify(ips), ptr]);
        const c = r.cert;
        const cert = c ? this.id(D_CERT, c.fingerprint, () => [c.fingerprint, c.subject, c.issuer, toMs(c.not_before), toMs(c.not_after)]) : -1;
        const host = this.host(r.hostname);
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
        this.strs.push(r.participant.id, r.participant.scheme, r.participant.value, c?.name ?? null, c?.countryCode ?? null, c?.registrationDate ?? null);
        return;
      }
      case 'sml':
        this.kind(2);
        this.push3(at, b(r.registered), r.smp ? this.host(r.smp) : -1);
        this.strs.push(r.participant.id, r.participant.scheme, r.participant.value, r.zone ?? null);
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
        this.strs.push(r.participant.id, r.participant.scheme, r.participant.value);
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
