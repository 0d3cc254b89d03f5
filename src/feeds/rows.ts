// Compact row form of validated feed records, the hand-off between the parse workers and the writer.
//
// A record becomes a flat array of primitives (cheap to pass between threads): `[kind, at, ...]`.
// Values shared by many records (hosts, locations, networks, certificates, endpoint sets) are replaced
// by small ids of the encoder's dictionary; each new dictionary entry is emitted once, before the first
// row that uses it, and the writer resolves entries to database ids. The dictionary is bounded: when
// full it starts over and says so with a reset entry.
import { createHash } from 'node:crypto';
import type { FeedKind, FeedRecord, SmpRecord } from './schema.js';

export const KIND_CODES: Record<FeedKind, number> = { probe: 0, directory: 1, sml: 2, smp: 3, member: 4, curation: 5, zone: 6, ack: 7 };
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
  /** Dictionary entries emitted since the last `takeDict()`. */
  private dict: DictEntry[] = [];

  takeDict(): DictEntry[] {
    const d = this.dict;
    this.dict = [];
    return d;
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

  encode(r: FeedRecord): Row {
    const at = toMs(r.at);
    switch (r.kind) {
      case 'probe': {
        const p = r.phases;
        const ips = JSON.stringify(r.ips);
        const net = this.id(D_NETWORK, `${ips}|${r.ptr ?? ''}`, () => [ips, r.ptr]);
        const c = r.cert;
        const cert = c ? this.id(D_CERT, c.fingerprint, () => [c.fingerprint, c.subject, c.issuer, toMs(c.not_before), toMs(c.not_after)]) : -1;
        return [0, at, this.host(r.hostname), r.role, this.location(r.location), RESULT[r.result], p.dns, p.tcp, p.tls, p.http, p.total, net, cert, r.error ?? null];
      }
      case 'directory': {
        const c = r.card;
        return [1, at, r.participant.id, r.participant.scheme, r.participant.value, b(r.present), c ? 1 : 0, c?.name ?? null, c?.countryCode ?? null, c?.registrationDate ?? null];
      }
      case 'sml':
        return [2, at, r.participant.id, r.participant.scheme, r.participant.value, b(r.registered), r.smp ? this.host(r.smp) : -1, r.zone ?? null];
      case 'smp': {
        const json = canonicalEndpoints(r.endpoints);
        const eps = this.id(D_ENDPOINTS, json, () => [createHash('sha256').update(json).digest('hex'), json]);
        return [3, at, r.participant.id, r.participant.scheme, r.participant.value, this.host(r.smp), eps];
      }
      case 'member': {
        const f = r.flags;
        return [4, at, r.key, r.trade_name, r.legal_name, r.country, r.url, b(f.peppol_authority), b(f.ap), b(f.smp), b(f.end_user), b(f.observer), JSON.stringify(r.hostnames), b(r.active)];
      }
      case 'curation':
        return [5, at, r.slug, r.name, r.country, r.natural_key, r.notes, JSON.stringify(r.seats), r.member_key];
      case 'zone': {
        const m = r.management;
        return [
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
        ];
      }
      case 'ack':
        return [7, at, r.anomaly_id, b(r.acknowledged), r.reason];
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
