// The oracle of the network / hosts / incidents / uptime / SML family: answers straight from SQLite
// (the derivation readers of src/derive/hosts and src/derive/zones, plus keyset SQL for uptime pages).
// Rules and decisions: docs/api-hosts.md; shared pure pieces: src/api/hosts/views.ts.
import type { Db } from '../../db/index.js';
import { anomalyCount } from '../../derive/anomalies.js';
import { hostIncidents, hostsResponse, hostVerdictCounts, hostView, openIncidentCount, phasePercentiles, round3, uptimePct, type HostRole, type IncidentView, type UptimeBucket } from '../../derive/hosts/read.js';
import { ROLLUP_TABLES, type Resolution } from '../../derive/hosts/rollup.js';
import type { CursorPosition } from '../cursor.js';
import { smlResponse } from '../../derive/zones.js';
import { ALL_LOCATIONS, HOST_INCIDENTS_ROUTE, hostsResponseApi, hostViewApi, incidentApi, INCIDENTS_ROUTE, networkSummary, smlApi, UPTIME_ROUTE } from './views.js';
import type { SortKey } from '../sort-keys.js';
import { notFoundOf, ok } from '../result.js';
import { routeOrder } from '../routes/request.js';
import { ROUTES } from '../routes/table.js';
import { afterSql, keysetOf, orderBySql } from '../query/keyset.js';
import type { Queries, QueryFn } from '../query/types.js';
import { apiTs, HOUR_MS } from '../time.js';
import { type PageBody, pageBody } from '../page.js';


interface HostRow {
  id: number;
  hostname: string;
  role: HostRole | null;
}

/** The row of a known host (in `hosts`: probed or named), or undefined. Hostnames arrive canonical. */
export function hostRow(db: Db, hostname: string): HostRow | undefined {
  return db.prepare('SELECT id, hostname, role FROM hosts WHERE hostname = ?').get(hostname) as HostRow | undefined;
}

function cursorKey(params: { cursor?: CursorPosition }): SortKey | undefined {
  const c = params.cursor;
  return c === undefined ? undefined : c.key;
}

// ---------------------------------------------------------------------------------------------
// Incidents

export interface IncidentRequest {
  host?: string;
  status?: 'open' | 'closed';
  sinceMs?: number;
  after?: SortKey;
  limit: number;
}

/** The keyset position of an incident cursor (parseRequest accepted it: its key fits [started_at ms, id]). */
function incidentAfter(k: SortKey): { started_at: number; id: number } {
  const [started_at, id] = k;
  if (typeof started_at !== 'number' || typeof id !== 'number') throw new Error(`not an incident key: ${JSON.stringify(k)}`);
  return { started_at, id };
}

/** One page of host incidents, newest first, from the derivation's keyset reader. */
export function incidentPage(db: Db, route: string, partition: readonly string[], q: IncidentRequest): PageBody<IncidentView> {
  const items: IncidentView[] = [];
  const keys: SortKey[] = [];
  let more = false;
  const after = q.after === undefined ? null : incidentAfter(q.after);
  for (const { item, key } of hostIncidents(db, { host: q.host ?? null, status: q.status ?? null, sinceMs: q.sinceMs ?? null, after })) {
    if (items.length === q.limit) {
      more = true;
      break;
    }
    items.push(incidentApi(item));
    keys.push([key.started_at, key.id]);
  }
  return pageBody(route, partition, items, keys, more);
}

export const hostIncidentsQuery: QueryFn<'hosts.incidents'> = (db, params) => {
  const hostname = params.hostname;
  if (!hostRow(db, hostname)) return notFoundOf('host', hostname);
  return ok(
    incidentPage(db, HOST_INCIDENTS_ROUTE, [hostname], {
      host: hostname,
      status: params.status,
      sinceMs: params.since,
      after: cursorKey(params),
      limit: params.limit,
    }),
  );
};

export const incidentsQuery: QueryFn<'incidents.list'> = (db, params) =>
  ok(
    incidentPage(db, INCIDENTS_ROUTE, [], {
      // An unknown (or malformed) host filter matches nothing: the reader's WHERE finds no row.
      host: params.host,
      status: params.status,
      sinceMs: params.since,
      after: cursorKey(params),
      limit: params.limit,
    }),
  );

// ---------------------------------------------------------------------------------------------
// Uptime

/** Stored location ('' = the rollup) as published. */
const LOCATION_SQL = `CASE location WHEN '' THEN '${ALL_LOCATIONS}' ELSE location END`;
/** The uptime list's keyset (its declared order: bucket_start, then the published location). */
const UPTIME_KEYSET = keysetOf(routeOrder(ROUTES['hosts.uptime']), { bucket_start: 'bucket_start', location: LOCATION_SQL });

export interface UptimeRow {
  bucket_start: number;
  location: string;
  up: number;
  degraded: number;
  down: number;
  sketches: Uint8Array;
}

/** An uptime bucket as published (the mapping of src/derive/hosts/read.ts uptimeBuckets, API timestamps). */
export function uptimeItem(resolution: Resolution, hostname: string, role: HostRole, r: UptimeRow): UptimeBucket {
  return {
    resolution,
    hostname,
    role,
    location: r.location === '' ? ALL_LOCATIONS : r.location,
    bucket_start: apiTs(r.bucket_start),
    checks_total: r.up + r.degraded + r.down,
    up: r.up,
    degraded: r.degraded,
    down: r.down,
    uptime_pct: round3(uptimePct(r.up, r.degraded, r.down)),
    phases: phasePercentiles(r.sketches),
  };
}

/**
 * SQL of a host's buckets of one resolution in list order: bucket_start DESC, then the published
 * location ascending (the primary key walks bucket_start; SQLite sorts only the few rows of one bucket).
 */
export function uptimeSql(resolution: Resolution, where: readonly string[]): string {
  return `SELECT bucket_start, location, up, degraded, down, sketches FROM ${ROLLUP_TABLES[resolution]}
    WHERE ${['host_id = ?', ...where].join(' AND ')} ORDER BY ${orderBySql(UPTIME_KEYSET)}`;
}

export const uptimeQuery: QueryFn<'hosts.uptime'> = (db, params) => {
  const hostname = params.hostname;
  const resolution = params.resolution;
  const limit = params.limit;
  const host = hostRow(db, hostname);
  if (!host) return notFoundOf('host', hostname);
  const partition = [hostname, resolution];
  // A host only named (never probed) has no role and no buckets.
  if (host.role === null) return ok(pageBody(UPTIME_ROUTE, partition, [], [], false));
  const where: string[] = [];
  const args: unknown[] = [host.id];
  if (params.from !== undefined) {
    where.push('bucket_start >= ?');
    args.push(params.from);
  }
  if (params.to !== undefined) {
    where.push('bucket_start < ?');
    args.push(params.to);
  }
  if (params.location !== undefined) {
    const loc = params.location;
    where.push('location = ?');
    args.push(loc === ALL_LOCATIONS ? '' : loc);
  }
  const after = cursorKey(params);
  if (after !== undefined) {
    const keyset = afterSql(UPTIME_KEYSET, after);
    where.push(keyset.sql);
    args.push(...keyset.args);
  }
  const rows = db.prepare(`${uptimeSql(resolution, where)} LIMIT ?`).all(...args, limit + 1) as UptimeRow[];
  const page = rows.slice(0, limit);
  const items = page.map((r) => uptimeItem(resolution, host.hostname, host.role as HostRole, r));
  return ok(
    pageBody(
      UPTIME_ROUTE,
      partition,
      items,
      items.map((b) => [Date.parse(b.bucket_start), b.location]),
      rows.length > limit,
    ),
  );
};

// ---------------------------------------------------------------------------------------------
// Single resources

export const networkQuery: QueryFn<'network'> = (db, _params, nowMs) =>
  ok(networkSummary(hostVerdictCounts(db, nowMs), openIncidentCount(db), anomalyCount(db, nowMs - 24 * HOUR_MS, nowMs), nowMs));

export const hostsQuery: QueryFn<'hosts.list'> = (db, _params, nowMs) => ok(hostsResponseApi(hostsResponse(db, nowMs), nowMs));

export const hostQuery: QueryFn<'hosts.detail'> = (db, params, nowMs) => {
  const hostname = params.hostname;
  const v = hostView(db, hostname, params.at ?? null, nowMs);
  return v === null ? notFoundOf('host', hostname) : ok(hostViewApi(v));
};

export const smlQuery: QueryFn<'sml'> = (db, _params, nowMs) => ok(smlApi(smlResponse(db, nowMs)));

export const HOSTS_QUERIES = {
  network: networkQuery,
  'hosts.list': hostsQuery,
  'hosts.detail': hostQuery,
  'hosts.incidents': hostIncidentsQuery,
  'hosts.uptime': uptimeQuery,
  'incidents.list': incidentsQuery,
  sml: smlQuery,
} satisfies Partial<Queries>;
