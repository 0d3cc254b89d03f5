// Writes rows (see rows.ts) into the raw observation tables. Dictionary entries from each encoder are
// resolved to database ids on first use and cached; participants go through a bounded cache, so
// memory stays flat however many records or participants pass through. The caller owns the
// transaction; after a rollback it must call `rolledBack()`, since cached ids may name rows that no
// longer exist (the dictionary payloads themselves stay valid).
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/index.js';
import { prunedBefore } from '../derive/hosts/step.js';
import { D_CERT, D_ENDPOINTS, D_HOST, D_LOCATION, D_NETWORK, D_RESET, DIM_TYPES, type DictEntry, KIND_BY_CODE, PROBE_NUMS, type Row, type RowBatch, unnum } from './rows.js';
import type { FeedKind } from './schema.js';

/**
 * Participant ids by canonical id, up to a bound (then it takes no more: with more participants than
 * that, feeds sweep them cyclically and any bounded cache would only churn). A lookup and an insert
 * cost about as much as the indexed SELECT they save, so the cache is consulted only while most
 * lookups hit; otherwise one flush in eight checks whether that has changed.
 */
class ParticipantCache {
  private readonly map = new Map<string, number>();
  private useful = true;
  private skipped = 0;
  constructor(private readonly max: number) {}

  /** Whether this flush should use the cache. */
  consult(): boolean {
    return this.useful || ++this.skipped % 8 === 0;
  }
  /** The hit rate of a flush that consulted the cache. */
  report(lookups: number, hits: number): void {
    this.useful = hits * 2 >= lookups;
  }
  get(pid: string): number | undefined {
    return this.map.get(pid);
  }
  set(pid: string, id: number): void {
    if (this.map.size < this.max) this.map.set(pid, id);
  }
  clear(): void {
    this.map.clear();
    this.useful = true;
  }
}

/** The dictionary of one encoder: payloads by local id, and their database ids once resolved. */
class EncoderDims {
  readonly payloads: DictEntry[][] = Array.from({ length: DIM_TYPES }, () => []);
  readonly dbIds: number[][] = Array.from({ length: DIM_TYPES }, () => []);
}

/**
 * Probe rows per multi-row INSERT, and participant observation rows per multi-row INSERT. The values
 * are passed as arguments (`run(...flat)`), not as one array: better-sqlite3 reads an array's
 * elements one by one through the V8 API, which cost a quarter of a probe insert.
 */
const PROBES_PER_INSERT = 32;
const OBS_PER_INSERT = 16;

/** Columns of a buffered probe: host, location, at, result, dns, tcp, tls, http, total, network, cert (NaN: null). */
const P_COLS = 11;
/** Buffered participant observation: [table (0 directory, 1 sml, 2 smp), at, a, b] and strings [pid, s1, s2, s3]. */
const O_COLS = 4;
const O_STRS = 4;
const T_DIRECTORY = 0;
const T_SML = 1;
const T_SMP = 2;

/** Rows buffered before they are written sorted (probes and participant observations together). */
const BUFFER_ROWS = 200_000;

function multiRow(table: string, columns: string[], rows: number): string {
  const one = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT OR IGNORE INTO ${table} (${columns.join(', ')}) VALUES ${Array(rows).fill(one).join(', ')}`;
}

const PROBE_COLUMNS = ['host_id', 'location_id', 'at', 'result', 'dns', 'tcp', 'tls', 'http', 'total', 'network_id', 'cert_id', 'error', 'segment_id'];
const OBS_COLUMNS = [
  ['participant_id', 'at', 'present', 'has_card', 'name', 'country', 'registration_date', 'segment_id'],
  ['participant_id', 'at', 'registered', 'smp_host_id', 'zone', 'segment_id'],
  ['participant_id', 'at', 'smp_host_id', 'endpoint_set_id', 'segment_id'],
];
const OBS_TABLES = ['directory_obs', 'sml_obs', 'smp_obs'];

export class FeedWriter {
  /** Earliest and latest record time written since `startSegment()` (ms), null when none. */
  minAt: number | null = null;
  maxAt: number | null = null;

  private readonly encoders = new Map<number, EncoderDims>();
  private readonly hostRoles = new Map<number, string | null>();
  private readonly participantIds = new ParticipantCache(1_000_000);
  private readonly s: Record<string, Statement>;
  /** [one row, many rows] per participant observation table. */
  private readonly obsInserts: [Statement, Statement][];
  /** Raw probes before this instant were rolled up and pruned (-Infinity: none were). */
  private horizon = -Infinity;

  constructor(private readonly db: Db) {
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
      participantIns: p('INSERT OR IGNORE INTO participants (pid, scheme, value) VALUES (?, ?, ?) RETURNING id').pluck(),
      probe: p(multiRow('probe_obs', PROBE_COLUMNS, 1)),
      probes: p(multiRow('probe_obs', PROBE_COLUMNS, PROBES_PER_INSERT)),
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
    this.obsInserts = OBS_TABLES.map((t, i) => [p(multiRow(t, OBS_COLUMNS[i]!, 1)), p(multiRow(t, OBS_COLUMNS[i]!, OBS_PER_INSERT))]);
  }

  /** Starts counting a new segment: time span, duplicates, probes past the pruning horizon. */
  startSegment(): void {
    this.minAt = null;
    this.maxAt = null;
    this.duplicates = 0;
    this.pastHorizon = 0;
    this.horizon = prunedBefore(this.db) ?? -Infinity;
  }

  /** Observations already stored (same key), counted as rows are written. */
  duplicates = 0;
  /**
   * Probe records older than the raw-probe pruning horizon (`build` rolled that period up and pruned
   * its raw checks), counted and dropped: they would never be derived, and would bring back raw
   * samples the retention removed.
   */
  pastHorizon = 0;

  // The high-volume observations are buffered and written sorted by their table's key: probes by
  // (host, location, time), participant observations by participant. Inserts then sweep the B-trees
  // in key order instead of landing on a different page each time, which is several times faster;
  // new participants are inserted in id order for the same reason. The sorts are stable, so among
  // equal keys the first row still wins (INSERT OR IGNORE). The buffers are columnar typed arrays,
  // reused from flush to flush: no object per row.
  private probeNums = new Float64Array(BUFFER_ROWS * P_COLS);
  private probeErrors: (string | null)[] = [];
  private probes = 0;
  private obsNums = new Float64Array(BUFFER_ROWS * O_COLS);
  private obsStrs: (string | null)[] = [];
  private observations = 0;
  /** The segment the buffered rows belong to (a flush never mixes segments). */
  private bufferedSegment = 0;
  /** Whether the last participants resolved were mostly new: then INSERT is tried before SELECT. */
  private mostlyNewParticipants = true;

  /** Writes buffered rows; call before reading the tables or committing. */
  flush(): void {
    if (this.probes > 0) this.flushProbes();
    if (this.observations > 0) this.flushObservations();
  }

  private flushProbes(): void {
    const n = this.probes;
    const v = this.probeNums;
    const errors = this.probeErrors;
    const seg = this.bufferedSegment;
    this.probes = 0;
    this.probeErrors = [];
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i * P_COLS;
    order.sort((a, b) => v[a]! - v[b]! || v[a + 1]! - v[b + 1]! || v[a + 2]! - v[b + 2]!);
    // Sorted probes go in 32 rows per statement: a third less per row than one by one.
    const cols = PROBE_COLUMNS.length;
    const fill = (flat: unknown[], at: number, o: number) => {
      flat[at] = v[o];
      flat[at + 1] = v[o + 1];
      flat[at + 2] = v[o + 2];
      flat[at + 3] = v[o + 3];
      flat[at + 4] = unnum(v[o + 4]!);
      flat[at + 5] = unnum(v[o + 5]!);
      flat[at + 6] = unnum(v[o + 6]!);
      flat[at + 7] = unnum(v[o + 7]!);
      flat[at + 8] = unnum(v[o + 8]!);
      flat[at + 9] = v[o + 9];
      flat[at + 10] = unnum(v[o + 10]!);
      flat[at + 11] = errors[o / P_COLS];
      flat[at + 12] = seg;
    };
    const many = this.s.probes!;
    const flat: unknown[] = new Array(PROBES_PER_INSERT * cols);
    let i = 0;
    for (; i + PROBES_PER_INSERT <= n; i += PROBES_PER_INSERT) {
      for (let j = 0; j < PROBES_PER_INSERT; j++) fill(flat, j * cols, order[i + j]!);
      this.duplicates += PROBES_PER_INSERT - many.run(...flat).changes;
    }
    const one = this.s.probe!;
    const row: unknown[] = new Array(cols);
    for (; i < n; i++) {
      fill(row, 0, order[i]!);
      this.duplicates += 1 - one.run(...row).changes;
    }
  }

  private flushObservations(): void {
    const n = this.observations;
    const v = this.obsNums;
    const strs = this.obsStrs;
    const seg = this.bufferedSegment;
    this.observations = 0;
    this.obsStrs = [];
    // Participant ids: cached, else looked up (and inserted when new) in id order, i.e. sorted.
    const ids = new Float64Array(n);
    const cache = this.participantIds;
    const consult = cache.consult();
    let missing: number[];
    if (consult) {
      missing = [];
      for (let r = 0; r < n; r++) {
        const id = cache.get(strs[r * O_STRS]!);
        if (id === undefined) missing.push(r);
        else ids[r] = id;
      }
      cache.report(n, n - missing.length);
    } else {
      missing = Array.from({ length: n }, (_, r) => r);
    }
    if (missing.length > 0) {
      missing.sort((a, b) => {
        const x = strs[a * O_STRS]!;
        const y = strs[b * O_STRS]!;
        return x < y ? -1 : x > y ? 1 : 0;
      });
      let last = '';
      let lastId = 0;
      let fresh = 0;
      let distinct = 0;
      for (const r of missing) {
        const pid = strs[r * O_STRS]!;
        if (pid !== last) {
          last = pid;
          distinct++;
          const [id, created] = this.resolveParticipant(pid);
          lastId = id;
          if (created) fresh++;
          if (consult) cache.set(pid, id);
        }
        ids[r] = lastId;
      }
      this.mostlyNewParticipants = fresh * 2 > distinct;
    }
    // Each table's rows, in key order (participant, time); stable, so the first of equal keys wins.
    for (let t = 0; t < OBS_TABLES.length; t++) {
      const rows: number[] = [];
      for (let r = 0; r < n; r++) if (v[r * O_COLS] === t) rows.push(r);
      if (rows.length === 0) continue;
      rows.sort((a, b) => ids[a]! - ids[b]! || v[a * O_COLS + 1]! - v[b * O_COLS + 1]!);
      const cols = OBS_COLUMNS[t]!.length;
      const fill = (flat: unknown[], at: number, r: number) => {
        const o = r * O_COLS;
        const so = r * O_STRS;
        flat[at] = ids[r];
        flat[at + 1] = v[o + 1];
        if (t === T_DIRECTORY) {
          flat[at + 2] = v[o + 2];
          flat[at + 3] = v[o + 3];
          flat[at + 4] = strs[so + 1];
          flat[at + 5] = strs[so + 2];
          flat[at + 6] = strs[so + 3];
          flat[at + 7] = seg;
        } else if (t === T_SML) {
          flat[at + 2] = v[o + 2];
          flat[at + 3] = unnum(v[o + 3]!);
          flat[at + 4] = strs[so + 1];
          flat[at + 5] = seg;
        } else {
          flat[at + 2] = v[o + 2];
          flat[at + 3] = v[o + 3];
          flat[at + 4] = seg;
        }
      };
      const [one, many] = this.obsInserts[t]!;
      const flat: unknown[] = new Array(OBS_PER_INSERT * cols);
      let i = 0;
      for (; i + OBS_PER_INSERT <= rows.length; i += OBS_PER_INSERT) {
        for (let j = 0; j < OBS_PER_INSERT; j++) fill(flat, j * cols, rows[i + j]!);
        this.duplicates += OBS_PER_INSERT - many.run(...flat).changes;
      }
      const row: unknown[] = new Array(cols);
      for (; i < rows.length; i++) {
        fill(row, 0, rows[i]!);
        this.duplicates += 1 - one.run(...row).changes;
      }
    }
  }

  /**
   * The database id of a participant not in the cache, and whether it was created. The canonical id
   * is `scheme::value` (the scheme never holds a colon). When most recent participants were new, the
   * INSERT is tried first (one statement instead of two); either order assigns the same ids.
   */
  private resolveParticipant(pid: string): [number, boolean] {
    const sep = pid.indexOf('::');
    if (!this.mostlyNewParticipants) {
      const id = this.s.participantSel!.get(pid) as number | undefined;
      if (id !== undefined) return [id, false];
    }
    const id = this.s.participantIns!.get(pid, pid.slice(0, sep), pid.slice(sep + 2)) as number | undefined;
    if (id !== undefined) return [id, true];
    return [this.s.participantSel!.get(pid) as number, false];
  }

  /** Forgets cached database ids and buffered rows; call after a rollback. */
  rolledBack(): void {
    this.probes = 0;
    this.probeErrors = [];
    this.observations = 0;
    this.obsStrs = [];
    for (const e of this.encoders.values()) for (const ids of e.dbIds) ids.length = 0;
    this.hostRoles.clear();
    this.participantIds.clear();
  }

  /** Forgets the dictionaries of the worker encoders (1, 2, ...: the workers were replaced). */
  forgetWorkerEncoders(): void {
    for (const id of [...this.encoders.keys()]) if (id !== 0) this.encoders.delete(id);
  }

  /** Forgets the dictionary of one encoder (it was replaced). */
  forgetEncoder(id: number): void {
    this.encoders.delete(id);
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

  private dim(e: EncoderDims, type: number, local: number): number {
    const cached = e.dbIds[type]![local];
    if (cached !== undefined) return cached;
    const entry = e.payloads[type]![local];
    if (!entry) throw new Error(`internal: dictionary entry ${type}/${local} is unknown`);
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

  private host(e: EncoderDims, local: number, role: string | null): number {
    const id = this.dim(e, D_HOST, local);
    // The role comes from probes (which know what they checked); a later probe may correct it.
    if (role !== null && this.hostRoles.get(id) !== role) {
      this.s.hostRole!.run(role, id);
      this.hostRoles.set(id, role);
    }
    return id;
  }

  /** Buffers a participant observation (its participant is resolved at flush). */
  private observe(table: number, pid: string, at: number, a: number, b: number, s1: string | null, s2: string | null, s3: string | null): void {
    let o = this.observations * O_COLS;
    if (o + O_COLS > this.obsNums.length) {
      const grown = new Float64Array(this.obsNums.length * 2);
      grown.set(this.obsNums);
      this.obsNums = grown;
    }
    const v = this.obsNums;
    v[o++] = table;
    v[o++] = at;
    v[o++] = a;
    v[o] = b;
    this.obsStrs.push(pid, s1, s2, s3);
    this.observations++;
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
    if (seg !== this.bufferedSegment) {
      this.flush();
      this.bufferedSegment = seg;
    }
    const { kinds, nums, strs, other } = batch;
    const e = this.encoders.get(encoder);
    if (!e) throw new Error(`internal: no dictionary of encoder ${encoder}`);
    let ni = 0;
    let si = 0;
    let oi = 0;
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[i]!;
      const at = kind < 4 ? nums[ni]! : (other[oi]![1] as number);
      if (kind === 0 && at < this.horizon) {
        this.pastHorizon++;
        ni += PROBE_NUMS;
        si += 1;
        continue;
      }
      this.span(at);
      counts[KIND_BY_CODE[kind]!]++;
      switch (kind) {
        case 0: {
          if (this.probes * P_COLS + P_COLS > this.probeNums.length) {
            const grown = new Float64Array(this.probeNums.length * 2);
            grown.set(this.probeNums);
            this.probeNums = grown;
          }
          const v = this.probeNums;
          const o = this.probes * P_COLS;
          v[o] = this.host(e, nums[ni + 1]!, nums[ni + 2] === 1 ? 'AP' : 'SMP');
          v[o + 1] = this.dim(e, D_LOCATION, nums[ni + 3]!);
          v[o + 2] = at;
          v[o + 3] = nums[ni + 4]!; // result
          v[o + 4] = nums[ni + 5]!; // dns .. total (NaN: null)
          v[o + 5] = nums[ni + 6]!;
          v[o + 6] = nums[ni + 7]!;
          v[o + 7] = nums[ni + 8]!;
          v[o + 8] = nums[ni + 9]!;
          v[o + 9] = this.dim(e, D_NETWORK, nums[ni + 10]!);
          v[o + 10] = nums[ni + 11]! < 0 ? NaN : this.dim(e, D_CERT, nums[ni + 11]!);
          this.probeErrors.push(strs[si]!);
          this.probes++;
          ni += PROBE_NUMS;
          si += 1;
          break;
        }
        case 1:
          this.observe(T_DIRECTORY, strs[si]!, at, nums[ni + 1]!, nums[ni + 2]!, strs[si + 1]!, strs[si + 2]!, strs[si + 3]!);
          ni += 3;
          si += 4;
          break;
        case 2: {
          const smp = nums[ni + 2]! < 0 ? NaN : this.host(e, nums[ni + 2]!, null);
          this.observe(T_SML, strs[si]!, at, nums[ni + 1]!, smp, strs[si + 1]!, null, null);
          ni += 3;
          si += 2;
          break;
        }
        case 3:
          this.observe(T_SMP, strs[si]!, at, this.host(e, nums[ni + 1]!, null), this.dim(e, D_ENDPOINTS, nums[ni + 2]!), null, null, null);
          ni += 3;
          si += 1;
          break;
        default:
          this.writeOther(other[oi++]!, e, seg);
      }
      if (this.probes + this.observations >= BUFFER_ROWS) this.flush();
    }
  }

  /** The rare kinds, written at once: [kind, at, ...fields]. */
  private writeOther(r: Row, e: EncoderDims, seg: number): void {
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
        changes = s.zone!.run(r[1], r[2], this.dim(e, D_LOCATION, r[3] as number), ...r.slice(4), seg).changes;
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
