// Writes rows (see rows.ts) into the raw observation tables. Dictionary entries from each encoder are
// resolved to database ids on first use and cached; participants go through a bounded cache, so
// memory stays flat however many records or participants pass through. The caller owns the
// transaction; after a rollback it must call `rolledBack()`, since cached ids may name rows that no
// longer exist (the dictionary payloads themselves stay valid).
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/index.js';
import { D_CERT, D_ENDPOINTS, D_HOST, D_LOCATION, D_NETWORK, D_RESET, DIM_TYPES, type DictEntry, KIND_BY_CODE, PROBE_NUMS, type Row, type RowBatch, unnum } from './rows.js';
import type { FeedKind } from './schema.js';

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

/** The dictionary of one encoder: payloads by local id, and their database ids once resolved. */
class EncoderDims {
  readonly payloads: DictEntry[][] = Array.from({ length: DIM_TYPES }, () => []);
  readonly dbIds: number[][] = Array.from({ length: DIM_TYPES }, () => []);
}

const PROBES_PER_INSERT = 32;

export class FeedWriter {
  /** Earliest and latest record time written since `startSegment()` (ms), null when none. */
  minAt: number | null = null;
  maxAt: number | null = null;

  private readonly encoders = new Map<number, EncoderDims>();
  private readonly hostRoles = new Map<number, string | null>();
  private readonly participantIds = new BoundedCache<number>(1_000_000);
  private readonly s: Record<string, Statement>;

  constructor(db: Db) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      host: p('INSERT INTO hosts (hostname) VALUES (?) ON CONFLICT (hostname) DO UPDATE SET hostname = hostname RETURNING id, role'),
      hostRole: p('UPDATE hosts SET role = ? WHERE id = ?'),
      location: p('INSERT INTO locations (name) VALUES (?) ON CONFLICT (name) DO UPDATE SET name = name RETURNING id').pluck(),
      network: p('INSERT INTO networks (key, ips, ptr) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET key = key RETURNING id').pluck(),
      cert: p(
        `INSERT INTO certs (fingerprint, subject, issuer, not_before, not_after) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (fingerprint) DO UPDATE SET fingerprint = fingerprint RETURNING id`,
      ).pluck(),
      endpoints: p('INSERT INTO endpoint_sets (hash, endpoints) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET hash = hash RETURNING id').pluck(),
      participantSel: p('SELECT id FROM participants WHERE pid = ?').pluck(),
      participantIns: p('INSERT INTO participants (pid, scheme, value) VALUES (?, ?, ?)'),
      probe: p(
        `INSERT OR IGNORE INTO probe_obs (host_id, location_id, at, result, dns, tcp, tls, http, total, network_id, cert_id, error, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      probes: p(
        `INSERT OR IGNORE INTO probe_obs (host_id, location_id, at, result, dns, tcp, tls, http, total, network_id, cert_id, error, segment_id)
         VALUES ${Array(PROBES_PER_INSERT).fill('(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      ),
      directory: p(
        `INSERT OR IGNORE INTO directory_obs (participant_id, at, present, has_card, name, country, registration_date, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      sml: p('INSERT OR IGNORE INTO sml_obs (participant_id, at, registered, smp_host_id, zone, segment_id) VALUES (?, ?, ?, ?, ?, ?)'),
      smp: p('INSERT OR IGNORE INTO smp_obs (participant_id, at, smp_host_id, endpoint_set_id, segment_id) VALUES (?, ?, ?, ?, ?)'),
      member: p(
        `INSERT OR IGNORE INTO member_obs (at, key, trade_name, legal_name, country, url, peppol_authority, ap, smp, end_user, observer, hostnames, active, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      curation: p(
        `INSERT OR IGNORE INTO curation_obs (at, slug, name, country, natural_key, notes, seats, member_key, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      zone: p(
        `INSERT OR IGNORE INTO zone_obs (at, zone, location_id, zone_kind, env, operator, existing_ok, existing_total, nonexistent_ok,
           nonexistent_total, critical_nxdomain, soa_serial, ns, dname_target, mgmt_host, mgmt_tls_ok, mgmt_tls_not_after, mgmt_tls_issuer, segment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      ack: p('INSERT OR IGNORE INTO ack_obs (at, anomaly_id, acknowledged, reason, segment_id) VALUES (?, ?, ?, ?, ?)'),
    };
  }

  /** Starts counting a new segment: time span and duplicates. */
  startSegment(): void {
    this.minAt = null;
    this.maxAt = null;
    this.duplicates = 0;
  }

  /** Observations already stored (same key), counted as rows are written. */
  duplicates = 0;

  // The high-volume observations are buffered and written sorted by their table's key: probes by
  // (host, location, time), participant observations by participant. Inserts then sweep the B-trees
  // in key order instead of landing on a different page each time, which is several times faster;
  // participants are resolved in id order for the same reason. The sorts are stable, so among equal
  // keys the first row still wins (INSERT OR IGNORE).
  private probes: { host: number; loc: number; at: number; args: unknown[] }[] = [];
  private observations: { stmt: Statement; pid: string; scheme: string; value: string; at: number; id: number; args: unknown[] }[] = [];
  private static readonly BUFFER_ROWS = 50_000;

  /** Writes buffered rows; call before reading the tables or committing. */
  flush(): void {
    const probes = this.probes;
    this.probes = [];
    probes.sort((a, b) => a.host - b.host || a.loc - b.loc || a.at - b.at);
    // Sorted probes go in 32 rows per statement: a third less per row than one by one.
    const many = this.s.probes!;
    const flat: unknown[] = new Array(PROBES_PER_INSERT * 13);
    let i = 0;
    for (; i + PROBES_PER_INSERT <= probes.length; i += PROBES_PER_INSERT) {
      for (let j = 0; j < PROBES_PER_INSERT; j++) {
        const args = probes[i + j]!.args;
        for (let k = 0; k < 13; k++) flat[j * 13 + k] = args[k];
      }
      this.duplicates += PROBES_PER_INSERT - many.run(flat).changes;
    }
    const probe = this.s.probe!;
    for (; i < probes.length; i++) if (probe.run(probes[i]!.args).changes === 0) this.duplicates++;

    const obs = this.observations;
    this.observations = [];
    obs.sort((a, b) => (a.pid < b.pid ? -1 : a.pid > b.pid ? 1 : a.at - b.at));
    let last = '';
    let lastId = 0;
    for (const o of obs) {
      if (o.pid !== last) {
        last = o.pid;
        lastId = this.participant(o.pid, o.scheme, o.value);
      }
      o.id = lastId;
      o.args[0] = lastId;
    }
    obs.sort((a, b) => a.id - b.id || a.at - b.at);
    for (const o of obs) if (o.stmt.run(...o.args).changes === 0) this.duplicates++;
  }

  /** Forgets cached database ids and buffered rows; call after a rollback. */
  rolledBack(): void {
    this.probes = [];
    this.observations = [];
    for (const e of this.encoders.values()) for (const ids of e.dbIds) ids.length = 0;
    this.hostRoles.clear();
    this.participantIds.clear();
  }

  /** Forgets every encoder's dictionary (its workers were replaced). */
  forgetEncoders(): void {
    this.encoders.clear();
  }

  /** Records the dictionary entries an encoder emitted (in emission order). */
  register(encoder: number, entries: DictEntry[]): void {
    let e = this.encoders.get(encoder);
    if (!e) this.encoders.set(encoder, (e = new EncoderDims()));
    for (const entry of entries) {
      const type = entry[0] as number;
      if (type === D_RESET) {
        for (let t = 0; t < DIM_TYPES; t++) {
          e.payloads[t]!.length = 0;
          e.dbIds[t]!.length = 0;
        }
        continue;
      }
      e.payloads[type]![entry[1] as number] = entry;
    }
  }

  private dim(encoder: number, type: number, local: number): number {
    const e = this.encoders.get(encoder)!;
    const cached = e.dbIds[type]![local];
    if (cached !== undefined) return cached;
    const entry = e.payloads[type]![local];
    if (!entry) throw new Error(`internal: dictionary entry ${type}/${local} of encoder ${encoder} is unknown`);
    let id: number;
    switch (type) {
      case D_HOST: {
        const row = this.s.host!.get(entry[2]) as { id: number; role: string | null };
        id = row.id;
        this.hostRoles.set(id, row.role);
        break;
      }
      case D_LOCATION:
        id = this.s.location!.get(entry[2]) as number;
        break;
      case D_NETWORK:
        id = this.s.network!.get(`${entry[2]}|${entry[3] ?? ''}`, entry[2], entry[3]) as number;
        break;
      case D_CERT:
        id = this.s.cert!.get(entry[2], entry[3], entry[4], entry[5], entry[6]) as number;
        break;
      case D_ENDPOINTS:
        id = this.s.endpoints!.get(entry[2], entry[3]) as number;
        break;
      default:
        throw new Error(`internal: unknown dictionary type ${type}`);
    }
    e.dbIds[type]![local] = id;
    return id;
  }

  private host(encoder: number, local: number, role: string | null): number {
    const id = this.dim(encoder, D_HOST, local);
    // The role comes from probes (which know what they checked); a later probe may correct it.
    if (role !== null && this.hostRoles.get(id) !== role) {
      this.s.hostRole!.run(role, id);
      this.hostRoles.set(id, role);
    }
    return id;
  }

  private participant(pid: string, scheme: string, value: string): number {
    let id = this.participantIds.get(pid);
    if (id === undefined) {
      id = (this.s.participantSel!.get(pid) as number | undefined) ?? Number(this.s.participantIns!.run(pid, scheme, value).lastInsertRowid);
      this.participantIds.set(pid, id);
    }
    return id;
  }

  /** Buffers a participant observation; args[0] becomes the participant id at flush. */
  private observe(stmt: Statement, pid: string, scheme: string, value: string, at: number, args: unknown[]): void {
    this.observations.push({ stmt, pid, scheme, value, at, id: 0, args });
  }

  private span(at: number): void {
    if (this.minAt === null || at < this.minAt) this.minAt = at;
    if (this.maxAt === null || at > this.maxAt) this.maxAt = at;
  }

  /**
   * Writes a batch (the high-volume kinds later, sorted: see `flush`), counting records by kind.
   * Layout: see RowBatch in rows.ts.
   */
  writeBatch(batch: RowBatch, encoder: number, seg: number, counts: Record<FeedKind, number>): void {
    const { kinds, nums, strs, other } = batch;
    const s = this.s;
    let ni = 0;
    let si = 0;
    let oi = 0;
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[i]!;
      const at = kind < 4 ? nums[ni]! : (other[oi]![1] as number);
      this.span(at);
      counts[KIND_BY_CODE[kind]!]++;
      switch (kind) {
        case 0: {
          const host = this.host(encoder, nums[ni + 1]!, nums[ni + 2] === 1 ? 'AP' : 'SMP');
          const loc = this.dim(encoder, D_LOCATION, nums[ni + 3]!);
          const net = this.dim(encoder, D_NETWORK, nums[ni + 10]!);
          const cert = nums[ni + 11]! < 0 ? null : this.dim(encoder, D_CERT, nums[ni + 11]!);
          const args = [host, loc, at, nums[ni + 4], unnum(nums[ni + 5]!), unnum(nums[ni + 6]!), unnum(nums[ni + 7]!), unnum(nums[ni + 8]!), unnum(nums[ni + 9]!), net, cert, strs[si], seg];
          this.probes.push({ host, loc, at, args });
          ni += PROBE_NUMS;
          si += 1;
          break;
        }
        case 1:
          this.observe(s.directory!, strs[si]!, strs[si + 1]!, strs[si + 2]!, at, [0, at, nums[ni + 1], nums[ni + 2], strs[si + 3], strs[si + 4], strs[si + 5], seg]);
          ni += 3;
          si += 6;
          break;
        case 2: {
          const smp = nums[ni + 2]! < 0 ? null : this.host(encoder, nums[ni + 2]!, null);
          this.observe(s.sml!, strs[si]!, strs[si + 1]!, strs[si + 2]!, at, [0, at, nums[ni + 1], smp, strs[si + 3], seg]);
          ni += 3;
          si += 4;
          break;
        }
        case 3:
          this.observe(s.smp!, strs[si]!, strs[si + 1]!, strs[si + 2]!, at, [0, at, this.host(encoder, nums[ni + 1]!, null), this.dim(encoder, D_ENDPOINTS, nums[ni + 2]!), seg]);
          ni += 3;
          si += 3;
          break;
        default:
          this.writeOther(other[oi++]!, encoder, seg);
      }
      if (this.probes.length + this.observations.length >= FeedWriter.BUFFER_ROWS) this.flush();
    }
  }

  /** The rare kinds, written at once: [kind, at, ...fields]. */
  private writeOther(r: Row, encoder: number, seg: number): void {
    const s = this.s;
    let changes: number;
    switch (r[0]) {
      case 4: // member
        changes = s.member!.run(...r.slice(1), seg).changes;
        break;
      case 5: // curation
        changes = s.curation!.run(...r.slice(1), seg).changes;
        break;
      case 6: // zone: [6, at, zone, location, ...]
        changes = s.zone!.run(r[1], r[2], this.dim(encoder, D_LOCATION, r[3] as number), ...r.slice(4), seg).changes;
        break;
      case 7: // ack
        changes = s.ack!.run(...r.slice(1), seg).changes;
        break;
      default:
        throw new Error(`internal: unknown row kind ${String(r[0])}`);
    }
    if (changes === 0) this.duplicates++;
  }
}
