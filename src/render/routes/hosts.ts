// Renders the network / hosts / incidents / uptime / SML family (docs/api-hosts.md):
// - exact files: /v1/network, /v1/hosts, /v1/sml, and per known host /v1/hosts/{h},
//   /v1/hosts/{h}/incidents and /v1/hosts/{h}/uptime at default parameters, /v1/incidents; every body
//   is the oracle's answer (src/api/query/hosts.ts);
// - lists: per host its state intervals (`hosts.detail`, for `at`), its incidents (`hosts.incidents`,
//   facet status), its uptime buckets per resolution (`hosts.uptime` [h, res]: compact tuples, facet
//   location counted per index entry, the open buckets in the root's head: docs/snapshot-format.md,
//   "Uptime"), and all incidents (`incidents.list`, facet status; the `host` filter reads the host's
//   own list). Every known host gets its lists, empty ones included: a missing list root means an
//   unknown host (404).
// Streaming: one host at a time, rows iterated from SQLite statements (an uptime list, which has a head,
// is held until it is finished: ~15,000 buckets at 90 days).
import { DEFAULT_LIMIT, HOST_INCIDENTS_ROUTE, HOST_ROUTE, INCIDENT_DIRS, INCIDENTS_ROUTE, STATE_DIRS, UPTIME_DIRS, UPTIME_FACETS, UPTIME_ROUTE, certApiOrNull, compactUptime, incidentApi, type HostStateItem } from '../../api/hosts-shared.js';
import type { SortKey } from '../../api/keys.js';
import { HOSTS_QUERIES, uptimeItem, uptimeSql, type UptimeRow } from '../../api/query/hosts.js';
import type { Params } from '../../api/query/types.js';
import { RESOLUTIONS } from '../../api/schemas/index.js';
import { hostIncidents, type HostRole } from '../../derive/hosts/read.js';
import type { Resolution } from '../../derive/hosts/rollup.js';
import { dayStart, HOUR, hourStart, monthStart } from '../../derive/hosts/time.js';
import { hostStateIntervals } from '../../derive/hosts/timeline.js';
import type { RenderContext } from '../context.js';
import type { ListWriterOptions } from '../lists.js';

export interface HostRow {
  id: number;
  hostname: string;
  role: HostRole | null;
}

function knownHosts(ctx: RenderContext): HostRow[] {
  // Bounded by the host count (1,200 at the peppol scale), not by participants.
  return ctx.db.prepare('SELECT id, hostname, role FROM hosts ORDER BY hostname').all() as HostRow[];
}

/** The oracle's body for a request that must succeed (the exact files). */
function body(routeId: string, ctx: RenderContext, params: Params): unknown {
  const r = HOSTS_QUERIES[routeId]!(ctx.db, params, ctx.nowMs);
  if (r.status !== 200) throw new Error(`render ${routeId}: the oracle answered ${r.status} for ${JSON.stringify(params)}`);
  return r.body;
}

function renderNetwork(ctx: RenderContext): void {
  ctx.exact(['v1', 'network'], body('network', ctx, {}));
}

function renderHostsList(ctx: RenderContext): void {
  ctx.exact(['v1', 'hosts'], body('hosts.list', ctx, {}));
}

function renderSml(ctx: RenderContext): void {
  ctx.exact(['v1', 'sml'], body('sml', ctx, {}));
}

function renderHostDetail(ctx: RenderContext): void {
  for (const h of knownHosts(ctx)) {
    ctx.exact(['v1', 'hosts', h.hostname], body(HOST_ROUTE, ctx, { hostname: h.hostname }));
    const list = ctx.list(HOST_ROUTE, [h.hostname], STATE_DIRS);
    for (const s of hostStateIntervals(ctx.db, h.id)) {
      const item: HostStateItem = { valid_to: s.valid_to, verdict: s.verdict, network: s.network, cert: certApiOrNull(s.cert) };
      list.add(item, [s.valid_from]);
    }
    list.finish();
  }
}

function renderHostIncidents(ctx: RenderContext): void {
  for (const h of knownHosts(ctx)) {
    const list = ctx.list(HOST_INCIDENTS_ROUTE, [h.hostname], INCIDENT_DIRS, ['status']);
    for (const { item, key } of hostIncidents(ctx.db, { host: h.hostname })) list.add(incidentApi(item), [key.started_at, key.id], { status: [item.status] });
    list.finish();
    ctx.exact(['v1', 'hosts', h.hostname, 'incidents'], body(HOST_INCIDENTS_ROUTE, ctx, { hostname: h.hostname, limit: DEFAULT_LIMIT }));
  }
}

function renderIncidents(ctx: RenderContext): void {
  const list = ctx.list(INCIDENTS_ROUTE, [], INCIDENT_DIRS, ['status']);
  for (const { item, key } of hostIncidents(ctx.db)) list.add(incidentApi(item), [key.started_at, key.id], { status: [item.status] });
  list.finish();
  ctx.exact(['v1', 'incidents'], body(INCIDENTS_ROUTE, ctx, { limit: DEFAULT_LIMIT }));
}

/** Most bytes of an uptime list's head besides its open buckets (docs/snapshot-format.md, "Uptime"). */
const UPTIME_HEAD_BYTES = 12 * 1024;

/** The start of the bucket of `resolution` holding `ms` (UTC). */
function bucketStart(resolution: Resolution, ms: number): number {
  return resolution === 'hourly' ? hourStart(ms) : resolution === 'daily' ? dayStart(ms) : monthStart(ms);
}

/**
 * The layout of an uptime list: chunks of at least 3/4 of the byte budget (a location-filtered page
 * reads few of them), and a head holding the buckets a next cycle may still change: those of the last
 * hour, i.e. the bucket holding now and the one before it when now is in its first hour (never one
 * after now, so that a clock behind the data cannot put the whole list in the root).
 */
function uptimeLayout(resolution: Resolution, nowMs: number, chunkMaxBytes: number): Pick<ListWriterOptions, 'minBytes' | 'head'> {
  const openFrom = bucketStart(resolution, nowMs - HOUR);
  const open = (k: SortKey): boolean => (k[0] as number) >= openFrom && (k[0] as number) <= nowMs;
  return { minBytes: Math.floor((chunkMaxBytes * 3) / 4), head: { open, maxBytes: UPTIME_HEAD_BYTES } };
}

/** One host's uptime: a list per resolution and the exact first page. */
export function renderHostUptime(ctx: RenderContext, h: HostRow): void {
  for (const resolution of RESOLUTIONS) {
    const list = ctx.list(UPTIME_ROUTE, [h.hostname, resolution], UPTIME_DIRS, UPTIME_FACETS, uptimeLayout(resolution, ctx.nowMs, ctx.opts.chunkMaxBytes));
    if (h.role !== null) {
      const role = h.role;
      for (const r of ctx.db.prepare(uptimeSql(resolution, [])).iterate(h.id) as IterableIterator<UptimeRow>) {
        const item = uptimeItem(resolution, h.hostname, role, r);
        list.add(compactUptime(item), [r.bucket_start, item.location], { location: [item.location] });
      }
    }
    list.finish();
  }
  ctx.exact(['v1', 'hosts', h.hostname, 'uptime'], body(UPTIME_ROUTE, ctx, { hostname: h.hostname, resolution: 'hourly', limit: DEFAULT_LIMIT }));
}

function renderUptime(ctx: RenderContext): void {
  const hosts = knownHosts(ctx);
  let n = 0;
  for (const h of hosts) {
    renderHostUptime(ctx, h);
    if (++n % 100 === 0) ctx.progress(`render: hosts.uptime ${n}/${hosts.length}`);
  }
}

export const HOSTS_RENDERERS: Record<string, (ctx: RenderContext) => void> = {
  network: renderNetwork,
  'hosts.list': renderHostsList,
  'hosts.detail': renderHostDetail,
  'hosts.incidents': renderHostIncidents,
  'hosts.uptime': renderUptime,
  'incidents.list': renderIncidents,
  sml: renderSml,
};
