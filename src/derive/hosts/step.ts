// The `hosts` derivation step: probe rollups, host state (verdict, network, certificate validity
// intervals), host incidents and host events, plus raw-probe pruning (docs/methodology/hosts.md).
//
// Incremental: the earliest instant A of the new segments (segments.min_at) bounds what can change.
// Every host with checks at or after A is recomputed from its latest checkpoint C <= A (a UTC day
// start): its rows from C on are deleted and written again by the machine (machine.ts) fed with the
// raw checks from C on. A full run does the same from the beginning, or from the raw-pruning horizon
// when raw checks were pruned (pruneRawProbes): history before the horizon is kept, never rebuilt.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../../db/index.js';
import { getMeta, setMeta } from '../../db/index.js';
import { deleteEvents, EventWriter, HOST_EVENT_TYPES } from '../events.js';
import type { DeriveContext, DeriveStep, StepStats } from '../step.js';
import { BUCKET_FIELDS, computeHost, HOURLY, ProbeReader, type HostJob, type HostOutput } from './compute.js';
import { incidentId } from './incidents.js';
import { EMPTY_CHECKPOINT, HostMachine, type HostCheckpoint, type HostSink } from './machine.js';
import { computeInOrder, DerivePool, workersFor } from '../pool.js';
import { ROLLUP_DDL, ROLLUP_TABLES, rollUpMonths, rollupStatements } from './rollup.js';
import { dayStart, monthStart } from './time.js';

export const HOSTS_STEP = 'hosts';
/** meta key: raw checks before this instant (ms, a UTC day start) have been pruned. */
export const PRUNED_META = 'probe_pruned_before';
/** "Before everything": the start of a host recomputed from scratch. */
const SCRATCH = -Number.MAX_SAFE_INTEGER;

const HOST_TABLES = ['uptime_monthly', 'uptime_daily', 'uptime_hourly', 'host_events', 'host_checkpoints', 'host_incidents', 'host_state'] as const;

const HOSTS_DDL = `
  -- Validity intervals of a host's state: [valid_from, valid_to) (valid_to null: until further notice).
  CREATE TABLE host_state (
    host_id    INTEGER NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to   INTEGER,
    verdict    TEXT,                 -- up | degraded | down; null = unknown (stale)
    network_id INTEGER,              -- networks.id of the latest check
    cert_id    INTEGER,              -- certs.id of the latest non-null certificate
    PRIMARY KEY (host_id, valid_from)
  ) WITHOUT ROWID;
  CREATE TABLE host_incidents (
    id         INTEGER PRIMARY KEY,  -- incidentId('host', hostname, started_at)
    host_id    INTEGER NOT NULL,
    status     TEXT NOT NULL,        -- open | closed
    severity   TEXT NOT NULL,        -- worst verdict of the timeline
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,              -- first slot of the sustained return to up
    closed_at  INTEGER,              -- the slot that confirmed it
    timeline   TEXT NOT NULL         -- JSON [[at ms, severity], ...]
  );
  CREATE INDEX host_incidents_time ON host_incidents (started_at DESC, id DESC);
  CREATE INDEX host_incidents_host ON host_incidents (host_id, started_at DESC, id DESC);
  CREATE INDEX host_incidents_status ON host_incidents (status, started_at DESC, id DESC);
  -- The host events this step emitted (copied into the shared events table); kept so that a full
  -- rebuild after raw pruning can emit the events of the pruned period again.
  CREATE TABLE host_events (
    host_id     INTEGER NOT NULL,
    observed_at INTEGER NOT NULL,
    type        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    seats       TEXT NOT NULL,       -- JSON array of seat ids
    PRIMARY KEY (host_id, observed_at, type)
  ) WITHOUT ROWID;
  -- The machine state of a host at a UTC day start (machine.ts), where recomputation resumes.
  CREATE TABLE host_checkpoints (
    host_id INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    state   TEXT NOT NULL,
    PRIMARY KEY (host_id, at)
  ) WITHOUT ROWID;
  ${ROLLUP_DDL}
`;

/** The raw-pruning horizon, or null when nothing was pruned. */
export function prunedBefore(db: Db): number | null {
  const v = getMeta(db, PRUNED_META);
  return v === null ? null : Number(v);
}

interface Stmts {
  delState: Statement;
  delIncidents: Statement;
  delEvents: Statement;
  delCheckpoints: Statement;
  delHourly: Statement;
  delDaily: Statement;
  insState: Statement;
  insIncident: Statement;
  insEvent: Statement;
  insCheckpoint: Statement;
  checkpointAtOrBefore: Statement;
  hostEvents: Statement;
  hostname: Statement;
}

function statements(db: Db): Stmts {
  const p = (sql: string) => db.prepare(sql);
  return {
    delState: p('DELETE FROM host_state WHERE host_id = ? AND valid_from >= ?'),
    delIncidents: p('DELETE FROM host_incidents WHERE host_id = ? AND started_at >= ?'),
    delEvents: p('DELETE FROM host_events WHERE host_id = ? AND observed_at >= ?'),
    delCheckpoints: p('DELETE FROM host_checkpoints WHERE host_id = ? AND at > ?'),
    delHourly: p(`DELETE FROM ${ROLLUP_TABLES.hourly} WHERE host_id = ? AND bucket_start >= ?`),
    delDaily: p(`DELETE FROM ${ROLLUP_TABLES.daily} WHERE host_id = ? AND bucket_start >= ?`),
    insState: p('INSERT INTO host_state (host_id, valid_from, valid_to, verdict, network_id, cert_id) VALUES (?, ?, ?, ?, ?, ?)'),
    insIncident: p('INSERT INTO host_incidents (id, host_id, status, severity, started_at, ended_at, closed_at, timeline) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    insEvent: p('INSERT OR REPLACE INTO host_events (host_id, observed_at, type, payload, seats) VALUES (?, ?, ?, ?, ?)'),
    insCheckpoint: p('INSERT OR REPLACE INTO host_checkpoints (host_id, at, state) VALUES (?, ?, ?)'),
    checkpointAtOrBefore: p('SELECT at, state FROM host_checkpoints WHERE host_id = ? AND at <= ? ORDER BY at DESC LIMIT 1'),
    hostEvents: p('SELECT observed_at, type, payload, seats FROM host_events WHERE host_id = ? AND observed_at >= ? ORDER BY observed_at, type'),
    hostname: p('SELECT hostname FROM hosts WHERE id = ?').pluck(),
  };
}

/** Deletes a host's derived rows from checkpoint C on (what a machine resumed at C writes again). */
function rewind(db: Db, s: Stmts, hostId: number, c: number, state: HostCheckpoint): void {
  s.delState.run(hostId, state.open ? Math.min(state.open[0], c) : c);
  s.delIncidents.run(hostId, state.incident ? Math.min(state.incident.startedAt, c) : c);
  s.delEvents.run(hostId, c);
  s.delCheckpoints.run(hostId, c);
  s.delHourly.run(hostId, c);
  s.delDaily.run(hostId, c);
  db.prepare(`DELETE FROM ${ROLLUP_TABLES.monthly} WHERE host_id = ? AND bucket_start >= ?`).run(hostId, c === SCRATCH ? SCRATCH : monthStart(c));
}

function latestCheckpoint(s: Stmts, hostId: number, atOrBefore: number): { at: number; state: HostCheckpoint } | null {
  if (atOrBefore === SCRATCH) return null;
  const row = s.checkpointAtOrBefore.get(hostId, atOrBefore) as { at: number; state: string } | undefined;
  return row ? { at: row.at, state: JSON.parse(row.state) as HostCheckpoint } : null;
}

class HostsRun {
  readonly s: Stmts;
  readonly reader: ProbeReader;
  readonly rollups;
  readonly events: EventWriter;
  /** workers: the threads that computed the hosts (0: this one). */
  readonly stats = { hosts: 0, workers: 0, checks: 0, intervals: 0, incidents: 0, events: 0, hourly: 0, daily: 0, monthly: 0 };

  constructor(private readonly db: Db) {
    this.s = statements(db);
    this.reader = new ProbeReader(db);
    this.rollups = rollupStatements(db);
    this.events = new EventWriter(db);
  }

  /**
   * Readies one host for recomputation from its latest checkpoint at or before `a`: deletes its rows
   * from there on, and returns what the machine starts from.
   */
  prepare(hostId: number, a: number): HostJob {
    const cp = latestCheckpoint(this.s, hostId, a);
    const c = cp ? cp.at : SCRATCH;
    const state = cp ? cp.state : EMPTY_CHECKPOINT;
    rewind(this.db, this.s, hostId, c, state);
    return { hostId, resumeAt: cp ? c : null, state };
  }

  /** Writes a prepared host's recomputed rows (computeHost), its monthly buckets and its events. */
  write(out: HostOutput, full: boolean): void {
    const { s, db, stats } = this;
    const hostId = out.hostId;
    const hostname = s.hostname.get(hostId) as string;
    const ins = this.rollups.insert;
    const b = out.buckets;
    // Sketches cross threads as a Uint8Array; better-sqlite3 binds a Buffer as a blob (a view, no copy).
    const blob = Buffer.from(out.sketches.buffer, out.sketches.byteOffset, out.sketches.byteLength);
    let from = 0;
    for (let i = 0; i < b.length; i += BUCKET_FIELDS) {
      const to = b[i + 6]!;
      const daily = b[i] !== HOURLY;
      (daily ? ins.daily : ins.hourly).run(hostId, b[i + 1], out.locations[b[i + 2]!], b[i + 3], b[i + 4], b[i + 5], blob.subarray(from, to));
      from = to;
      if (daily) stats.daily++;
      else stats.hourly++;
    }
    for (const [f, t, verdict, net, cert] of out.intervals) s.insState.run(hostId, f, t, verdict, net, cert);
    stats.intervals += out.intervals.length;
    for (const inc of out.incidents) {
      s.insIncident.run(incidentId('host', hostname, inc.startedAt), hostId, inc.status, inc.severity, inc.startedAt, inc.endedAt, inc.closedAt, JSON.stringify(inc.timeline));
    }
    stats.incidents += out.incidents.length;
    for (const [type, at, payload, seats] of out.events) s.insEvent.run(hostId, at, type, payload, seats);
    for (const [at, state] of out.checkpoints) s.insCheckpoint.run(hostId, at, state);
    stats.checks += out.checks;
    const c = out.resumeAt ?? SCRATCH;
    stats.monthly += rollUpMonths(db, hostId, c, ins.monthly);

    // The shared events table gets this host's events from C on (all of them on a full run, whose
    // shared table was emptied, including events kept from before a pruning horizon).
    const emitFrom = full ? SCRATCH : c;
    deleteEvents(db, `hostname = ? AND type IN (${HOST_EVENT_TYPES.map((t) => `'${t}'`).join(', ')}) AND observed_at >= ?`, hostname, emitFrom);
    const evs = s.hostEvents.all(hostId, emitFrom) as { observed_at: number; type: 'host_cert_rotated' | 'hosting_changed'; payload: string; seats: string }[];
    for (const e of evs) {
      this.events.write({
        type: e.type,
        observedAt: e.observed_at,
        subject: `host:${hostname}`,
        hostname,
        participantId: null,
        payload: JSON.parse(e.payload) as Record<string, unknown>,
        hosts: [hostname],
        seats: JSON.parse(e.seats) as string[],
      });
    }
    stats.events += evs.length;
    stats.hosts++;
  }
}

export const hostsStep: DeriveStep = {
  name: HOSTS_STEP,
  tables: HOST_TABLES,
  ddl: HOSTS_DDL,

  // A full rebuild keeps what lies before the raw-pruning horizon: per host, everything up to its
  // latest checkpoint at or before the horizon (the run then resumes there).
  reset(db: Db): void {
    const horizon = prunedBefore(db);
    if (horizon === null) {
      for (const t of HOST_TABLES) db.exec(`DELETE FROM ${t}`);
      return;
    }
    const s = statements(db);
    const hostIds = db.prepare('SELECT id FROM hosts ORDER BY id').pluck().all() as number[];
    for (const id of hostIds) {
      const cp = latestCheckpoint(s, id, horizon);
      rewind(db, s, id, cp ? cp.at : SCRATCH, cp ? cp.state : EMPTY_CHECKPOINT);
    }
  },

  run(ctx: DeriveContext): StepStats {
    const { db } = ctx;
    const floor = prunedBefore(db) ?? SCRATCH;
    let a: number;
    let hostIds: number[];
    if (ctx.full) {
      a = floor;
      hostIds = db
        .prepare(
          `SELECT id FROM hosts h WHERE EXISTS (SELECT 1 FROM probe_obs p WHERE p.host_id = h.id)
             OR EXISTS (SELECT 1 FROM host_checkpoints c WHERE c.host_id = h.id) ORDER BY id`,
        )
        .pluck()
        .all() as number[];
    } else {
      const min = db.prepare('SELECT min(min_at) FROM segments WHERE id > ? AND id <= ?').pluck().get(ctx.since, ctx.upTo) as number | null;
      if (min === null) return { hosts: 0 };
      a = Math.max(min, floor);
      const run = new HostsRun(db);
      const locs = run.reader.locationIds.join(',') || 'NULL';
      hostIds = db
        .prepare(`SELECT id FROM hosts h WHERE EXISTS (SELECT 1 FROM probe_obs p WHERE p.host_id = h.id AND p.location_id IN (${locs}) AND p.at >= ?) ORDER BY id`)
        .pluck()
        .all(a) as number[];
      return runHosts(ctx, run, hostIds, a);
    }
    return runHosts(ctx, new HostsRun(db), hostIds, a);
  },
};

/**
 * Recomputes the hosts: on worker threads when a pool opens (src/derive/pool.ts: by default on a full
 * run), which compute up to `pool.depth` hosts ahead while this thread writes the rows of the oldest;
 * otherwise here, one after the other. Either way the hosts are prepared and written in `hostIds` order.
 */
function runHosts(ctx: DeriveContext, run: HostsRun, hostIds: number[], a: number): StepStats {
  const pool = DerivePool.open(ctx.db, workersFor(ctx.deriveWorkers, ctx.full, hostIds.length), hostIds.length);
  run.stats.workers = pool?.size ?? 0;
  computeInOrder(
    pool,
    'host',
    hostIds.length,
    (i) => run.prepare(hostIds[i]!, a),
    (job) => computeHost(run.reader, job),
    (out, i) => {
      run.write(out, ctx.full);
      if ((i + 1) % 100 === 0) ctx.progress(`derive: hosts ${i + 1}/${hostIds.length}`);
    },
  );
  return run.stats;
}

/** What a prune of raw probes did: its horizon (null before the first), rows deleted, hosts replayed. */
export interface PruneSummary {
  horizon: number | null;
  deleted: number;
  hosts: number;
}

/**
 * Deletes raw checks older than `beforeMs` (floored to a UTC day start: the horizon) that have been
 * derived: rows of segments up to the derive watermark (meta derive_upto). Before deleting, each host's
 * machine state at the horizon is stored as a checkpoint, so later runs (and a full rebuild) resume
 * there and keep the rollups, state intervals, incidents and events of the pruned period.
 * Observations older than the horizon that arrive after pruning are not derived.
 */
export function pruneRawProbes(db: Db, beforeMs: number): PruneSummary {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'host_checkpoints'").get();
  if (!exists) throw new Error('pruneRawProbes: the derived tables do not exist yet; run derive first');
  const watermark = Number(getMeta(db, 'derive_upto') ?? '0');
  const old = prunedBefore(db);
  const coverage = db.prepare('SELECT max(max_at) FROM segments WHERE id <= ?').pluck().get(watermark) as number | null;
  if (watermark === 0 || coverage === null) return { horizon: old, deleted: 0, hosts: 0 };
  const horizon = dayStart(Math.min(beforeMs, coverage + 1));
  if (old !== null && horizon <= old) return { horizon: old, deleted: 0, hosts: 0 };
  return db.transaction(() => {
    const s = statements(db);
    const reader = new ProbeReader(db);
    const locs = reader.locationIds.join(',') || 'NULL';
    const hostIds = db
      .prepare(`SELECT id FROM hosts h WHERE EXISTS (SELECT 1 FROM probe_obs p WHERE p.host_id = h.id AND p.location_id IN (${locs}) AND p.at < ?) ORDER BY id`)
      .pluck()
      .all(horizon) as number[];
    const del = db.prepare(`DELETE FROM probe_obs WHERE host_id = ? AND location_id IN (${locs}) AND at < ? AND segment_id <= ?`);
    const dry: HostSink = { interval: () => {}, incident: () => {}, event: () => {}, checkpoint: () => {}, check: () => {} };
    let deleted = 0;
    for (const id of hostIds) {
      const cp = latestCheckpoint(s, id, horizon);
      if (!cp || cp.at < horizon) {
        const machine = new HostMachine(cp ? cp.state : EMPTY_CHECKPOINT, dry, reader);
        const span = reader.span(id);
        const from = cp ? cp.at : (span?.min ?? horizon);
        reader.feed(id, from, horizon, watermark, (r) => machine.check(r));
        s.insCheckpoint.run(id, horizon, machine.snapshot(horizon));
      }
      deleted += del.run(id, horizon, watermark).changes;
    }
    setMeta(db, PRUNED_META, String(horizon));
    return { horizon, deleted, hosts: hostIds.length };
  })();
}
