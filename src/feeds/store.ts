// Writes validated feed records into the raw observation tables. Dimension ids (hosts, locations,
// networks, certs, participants, endpoint sets) are resolved through bounded caches, so memory stays
// flat however many records or participants pass through. The caller owns the transaction; after a
// rollback it must call `reset()`, since cached ids may name rows that no longer exist.
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/index.js';
import type {
  AckRecord,
  CurationRecord,
  DirectoryRecord,
  FeedRecord,
  MemberRecord,
  ProbeRecord,
  SmlRecord,
  SmpRecord,
  ZoneRecord,
} from './schema.js';

/** A Map that forgets everything when it reaches its bound: simple, and flat in memory. */
class BoundedCache<V> {
  private map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    return this.map.get(k);
  }
  set(k: string, v: V): void {
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(k, v);
  }
  clear(): void {
    this.map.clear();
  }
}

const RESULT_CODE = { up: 0, degraded: 1, down: 2 } as const;

const ms = (iso: string): number => Date.parse(iso);
const bool = (b: boolean): number => (b ? 1 : 0);

export type WriteOutcome = 'inserted' | 'duplicate';

export class FeedWriter {
  /** Earliest and latest record time written since `resetSpan()` (ms), null when none. */
  minAt: number | null = null;
  maxAt: number | null = null;

  private readonly hostIds = new BoundedCache<{ id: number; role: string | null }>(50_000);
  private readonly locationIds = new BoundedCache<number>(1_000);
  private readonly networkIds = new BoundedCache<number>(50_000);
  private readonly certIds = new BoundedCache<number>(50_000);
  private readonly participantIds = new BoundedCache<number>(500_000);
  private readonly endpointSetIds = new BoundedCache<number>(100_000);

  private readonly s: Record<string, Statement>;

  constructor(private readonly db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      hostSel: p('SELECT id, role FROM hosts WHERE hostname = ?'),
      hostIns: p('INSERT INTO hosts (hostname, role) VALUES (?, ?)'),
      hostRole: p('UPDATE hosts SET role = ? WHERE id = ?'),
      locSel: p('SELECT id FROM locations WHERE name = ?'),
      locIns: p('INSERT INTO locations (name) VALUES (?)'),
      netSel: p('SELECT id FROM networks WHERE key = ?'),
      netIns: p('INSERT INTO networks (key, ips, ptr) VALUES (?, ?, ?)'),
      certSel: p('SELECT id FROM certs WHERE fingerprint = ?'),
      certIns: p('INSERT INTO certs (fingerprint, subject, issuer, not_before, not_after) VALUES (?, ?, ?, ?, ?)'),
      partUpsert: p('INSERT INTO participants (pid, scheme, value) VALUES (?, ?, ?) ON CONFLICT (pid) DO UPDATE SET pid = pid RETURNING id').pluck(),
      epsSel: p('SELECT id FROM endpoint_sets WHERE hash = ?'),
      epsIns: p('INSERT INTO endpoint_sets (hash, endpoints) VALUES (?, ?)'),
      probe: p(
        `INSERT OR IGNORE INTO probe_obs (host_id, location_id, at, result, dns, tcp, tls, http, total, network_id, cert_id, error, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      directory: p(
        `INSERT OR IGNORE INTO directory_obs (participant_id, at, present, has_card, name, country, registration_date, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      sml: p('INSERT OR IGNORE INTO sml_obs (participant_id, at, registered, smp_host_id, zone, segment_id) VALUES (?, ?, ?, ?, ?, ?)'),
      smp: p('INSERT OR IGNORE INTO smp_obs (participant_id, at, smp_host_id, endpoint_set_id, segment_id) VALUES (?, ?, ?, ?, ?)'),
      member: p(
        `INSERT OR IGNORE INTO member_obs (key, at, trade_name, legal_name, country, url, peppol_authority, ap, smp, end_user, observer, hostnames, active, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      curation: p(
        `INSERT OR IGNORE INTO curation_obs (slug, at, name, country, natural_key, notes, seats, member_key, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      zone: p(
        `INSERT OR IGNORE INTO zone_obs (zone, location_id, at, zone_kind, env, operator, existing_ok, existing_total, nonexistent_ok,
           nonexistent_total, critical_nxdomain, soa_serial, ns, dname_target, mgmt_host, mgmt_tls_ok, mgmt_tls_not_after, mgmt_tls_issuer, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      ack: p('INSERT OR IGNORE INTO ack_obs (anomaly_id, at, acknowledged, reason, segment_id) VALUES (?, ?, ?, ?, ?)'),
    };
  }

  resetSpan(): void {
    this.minAt = null;
    this.maxAt = null;
  }

  private span(at: number): number {
    if (this.minAt === null || at < this.minAt) this.minAt = at;
    if (this.maxAt === null || at > this.maxAt) this.maxAt = at;
    return at;
  }

  /** Forgets cached ids; call after a rollback. */
  reset(): void {
    this.hostIds.clear();
    this.locationIds.clear();
    this.networkIds.clear();
    this.certIds.clear();
    this.participantIds.clear();
    this.endpointSetIds.clear();
  }

  write(r: FeedRecord, segmentId: number): WriteOutcome {
    let changes: number;
    switch (r.kind) {
      case 'probe':
        changes = this.probe(r, segmentId);
        break;
      case 'directory':
        changes = this.directory(r, segmentId);
        break;
      case 'sml':
        changes = this.sml(r, segmentId);
        break;
      case 'smp':
        changes = this.smp(r, segmentId);
        break;
      case 'member':
        changes = this.member(r, segmentId);
        break;
      case 'curation':
        changes = this.curation(r, segmentId);
        break;
      case 'zone':
        changes = this.zone(r, segmentId);
        break;
      case 'ack':
        changes = this.ack(r, segmentId);
        break;
    }
    return changes > 0 ? 'inserted' : 'duplicate';
  }

  private hostId(hostname: string, role: 'SMP' | 'AP' | null): number {
    let h = this.hostIds.get(hostname);
    if (!h) {
      const row = this.s.hostSel!.get(hostname) as { id: number; role: string | null } | undefined;
      h = row ?? { id: Number(this.s.hostIns!.run(hostname, role).lastInsertRowid), role };
      this.hostIds.set(hostname, h);
    }
    // The role comes from probes (which know what they checked); a later probe may correct it.
    if (role !== null && h.role !== role) {
      this.s.hostRole!.run(role, h.id);
      h.role = role;
    }
    return h.id;
  }

  private locationId(name: string): number {
    let id = this.locationIds.get(name);
    if (id === undefined) {
      const row = this.s.locSel!.get(name) as { id: number } | undefined;
      id = row ? row.id : Number(this.s.locIns!.run(name).lastInsertRowid);
      this.locationIds.set(name, id);
    }
    return id;
  }

  private networkId(ips: string[], ptr: string | null): number {
    const ipsJson = JSON.stringify(ips);
    const key = `${ipsJson}|${ptr ?? ''}`;
    let id = this.networkIds.get(key);
    if (id === undefined) {
      const row = this.s.netSel!.get(key) as { id: number } | undefined;
      id = row ? row.id : Number(this.s.netIns!.run(key, ipsJson, ptr).lastInsertRowid);
      this.networkIds.set(key, id);
    }
    return id;
  }

  private certId(c: NonNullable<ProbeRecord['cert']>): number {
    let id = this.certIds.get(c.fingerprint);
    if (id === undefined) {
      const row = this.s.certSel!.get(c.fingerprint) as { id: number } | undefined;
      id = row ? row.id : Number(this.s.certIns!.run(c.fingerprint, c.subject, c.issuer, ms(c.not_before), ms(c.not_after)).lastInsertRowid);
      this.certIds.set(c.fingerprint, id);
    }
    return id;
  }

  private participantId(p: { id: string; scheme: string; value: string }): number {
    let id = this.participantIds.get(p.id);
    if (id === undefined) {
      id = this.s.partUpsert!.get(p.id, p.scheme, p.value) as number;
      this.participantIds.set(p.id, id);
    }
    return id;
  }

  private endpointSetId(endpoints: SmpRecord['endpoints']): number {
    // Canonical form: fixed key order, sorted, so equal lists share one row whatever the feed order.
    const canon = endpoints
      .map((e) => ({
        doctype: e.doctype,
        process: e.process,
        transport_profile: e.transport_profile,
        url: e.url,
        cert: e.cert ? { fingerprint: e.cert.fingerprint, subject: e.cert.subject, issuer: e.cert.issuer } : null,
      }))
      .map((e) => JSON.stringify(e))
      .sort();
    const json = `[${canon.join(',')}]`;
    let id = this.endpointSetIds.get(json);
    if (id === undefined) {
      const hash = createHash('sha256').update(json).digest('hex');
      const row = this.s.epsSel!.get(hash) as { id: number } | undefined;
      id = row ? row.id : Number(this.s.epsIns!.run(hash, json).lastInsertRowid);
      this.endpointSetIds.set(json, id);
    }
    return id;
  }

  private probe(r: ProbeRecord, seg: number): number {
    const p = r.phases;
    return this.s.probe!.run(
      this.hostId(r.hostname, r.role),
      this.locationId(r.location),
      this.span(ms(r.at)),
      RESULT_CODE[r.result],
      p.dns,
      p.tcp,
      p.tls,
      p.http,
      p.total,
      this.networkId(r.ips, r.ptr),
      r.cert ? this.certId(r.cert) : null,
      r.error ?? null,
      seg,
    ).changes;
  }

  private directory(r: DirectoryRecord, seg: number): number {
    const c = r.card;
    return this.s.directory!.run(
      this.participantId(r.participant),
      this.span(ms(r.at)),
      bool(r.present),
      c ? 1 : 0,
      c?.name ?? null,
      c?.countryCode ?? null,
      c?.registrationDate ?? null,
      seg,
    ).changes;
  }

  private sml(r: SmlRecord, seg: number): number {
    return this.s.sml!.run(
      this.participantId(r.participant),
      this.span(ms(r.at)),
      bool(r.registered),
      r.smp ? this.hostId(r.smp, null) : null,
      r.zone ?? null,
      seg,
    ).changes;
  }

  private smp(r: SmpRecord, seg: number): number {
    return this.s.smp!.run(this.participantId(r.participant), this.span(ms(r.at)), this.hostId(r.smp, null), this.endpointSetId(r.endpoints), seg).changes;
  }

  private member(r: MemberRecord, seg: number): number {
    const f = r.flags;
    return this.s.member!.run(
      r.key,
      this.span(ms(r.at)),
      r.trade_name,
      r.legal_name,
      r.country,
      r.url,
      bool(f.peppol_authority),
      bool(f.ap),
      bool(f.smp),
      bool(f.end_user),
      bool(f.observer),
      JSON.stringify(r.hostnames),
      bool(r.active),
      seg,
    ).changes;
  }

  private curation(r: CurationRecord, seg: number): number {
    return this.s.curation!.run(r.slug, this.span(ms(r.at)), r.name, r.country, r.natural_key, r.notes, JSON.stringify(r.seats), r.member_key, seg).changes;
  }

  private zone(r: ZoneRecord, seg: number): number {
    const m = r.management;
    return this.s.zone!.run(
      r.zone,
      this.locationId(r.location),
      this.span(ms(r.at)),
      r.zone_kind,
      r.env,
      r.operator,
      r.existing_ok,
      r.existing_total,
      r.nonexistent_ok,
      r.nonexistent_total,
      bool(r.critical_nxdomain),
      r.soa_serial,
      JSON.stringify(r.ns),
      r.dname_target,
      m?.host ?? null,
      m && m.tls_ok !== null ? bool(m.tls_ok) : null,
      m?.tls_not_after ? ms(m.tls_not_after) : null,
      m?.tls_issuer ?? null,
      seg,
    ).changes;
  }

  private ack(r: AckRecord, seg: number): number {
    return this.s.ack!.run(r.anomaly_id, this.span(ms(r.at)), bool(r.acknowledged), r.reason, seg).changes;
  }
}
