// Renders the network / hosts / incidents / uptime / SML family: the exact files at default
// parameters (the oracle's answers) and, per known host, its lists (empty ones included: a missing
// list root means an unknown host). The files are stated once in docs/api-hosts.md, "Files".
// Streaming: one host at a time; the uptime lists are written by ./host-uptime.ts.
import { HOST_INCIDENTS_ROUTE, HOST_ROUTE, INCIDENT_DIRS, INCIDENTS_ROUTE, STATE_DIRS, certApiOrNull, incidentApi, type HostStateItem } from '../../api/hosts/views.js';
import type { ParamsOf } from '../../api/handlers.js';
import { HOSTS_QUERIES } from '../../api/hosts/query.js';
import type { Queries } from '../../api/query/types.js';
import { hostIncidents, type HostRole } from '../../derive/hosts/read.js';
import { hostStateIntervals } from '../../derive/hosts/timeline.js';
import type { RenderContext } from '../context.js';
import { renderUptime as renderHostsUptime } from './host-uptime.js';
import { LIMIT_DEFAULT } from '../../api/params.js';

export { renderHostUptime } from './host-uptime.js';

export interface HostRow {
  id: number;
  hostname: string;
  role: HostRole | null;
}

function knownHosts(ctx: RenderContext): HostRow[] {
  // Bounded by the host count (1,200 at the peppol scale), not by participants.
  return ctx.db.prepare('SELECT id, hostname, role FROM hosts ORDER BY hostname').all() as HostRow[];
}

type HostsRouteId = keyof typeof HOSTS_QUERIES;
const QUERY: Queries<HostsRouteId> = HOSTS_QUERIES;

/** The oracle's body for a request that must succeed (the exact files). */
function body<I extends HostsRouteId>(routeId: I, ctx: RenderContext, params: ParamsOf<I>): unknown {
  const r = QUERY[routeId](ctx.db, params, ctx.nowMs);
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
    ctx.exact(['v1', 'hosts', h.hostname], body(HOST_ROUTE, ctx, { hostname: h.hostname, at: undefined }));
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
    ctx.exact(['v1', 'hosts', h.hostname, 'incidents'], body(HOST_INCIDENTS_ROUTE, ctx, { hostname: h.hostname, status: undefined, since: undefined, limit: LIMIT_DEFAULT, cursor: undefined }));
  }
}

function renderIncidents(ctx: RenderContext): void {
  const list = ctx.list(INCIDENTS_ROUTE, [], INCIDENT_DIRS, ['status']);
  for (const { item, key } of hostIncidents(ctx.db)) list.add(incidentApi(item), [key.started_at, key.id], { status: [item.status] });
  list.finish();
  ctx.exact(['v1', 'incidents'], body(INCIDENTS_ROUTE, ctx, { host: undefined, status: undefined, since: undefined, limit: LIMIT_DEFAULT, cursor: undefined }));
}

function renderUptime(ctx: RenderContext): void {
  renderHostsUptime(ctx, knownHosts(ctx));
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
