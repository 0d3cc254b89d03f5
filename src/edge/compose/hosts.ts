// The shim's composers of the network / hosts / incidents / uptime / SML family: answers from snapshot
// files alone (docs/api-hosts.md). Edge-safe: no Node imports, no database.
//
// A request at default parameters reads its exact file; any other reads the list root and the chunks
// it needs (src/edge/list-reader.ts). A missing exact file or list root of a host means the host is
// unknown (404): the renderer writes them for every known host.
import {
  afterCursor,
  DEFAULT_LIMIT,
  expandUptime,
  HOST_INCIDENTS_ROUTE,
  HOST_ROUTE,
  hostInstant,
  hostViewAt,
  INCIDENT_DIRS,
  INCIDENTS_ROUTE,
  pageBody,
  UPTIME_DIRS,
  UPTIME_ROUTE,
  type HostStateItem,
  type UptimeTuple,
} from '../../api/hosts-shared.js';
import type { CursorPosition } from '../../api/cursor.js';
import type { SortKey } from '../../api/keys.js';
import { exactFilePath, listRootPath } from '../../api/paths.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import type { HostView, UptimeBucket } from '../../derive/hosts/read.js';
import { facetCount } from '../list-format.js';
import { composePage, ListReader, SnapshotFormatError } from '../list-reader.js';
import type { ComposeContext, ComposeFn, Params } from './types.js';

const dec = new TextDecoder();

async function readExact(ctx: ComposeContext, segments: readonly string[]): Promise<unknown> {
  const b = await ctx.read(exactFilePath(segments));
  if (b === null) return null;
  ctx.stats.files++;
  ctx.stats.bytes += b.length;
  return JSON.parse(dec.decode(b)) as unknown;
}

async function requireExact(ctx: ComposeContext, segments: readonly string[]): Promise<unknown> {
  const body = await readExact(ctx, segments);
  if (body === null) throw new SnapshotFormatError(`missing snapshot file ${exactFilePath(segments)}`);
  return body;
}

/** Runs `use` over a list (null when its root is missing), counting what it reads. */
async function withList<T>(ctx: ComposeContext, routeId: string, partition: readonly string[], use: (list: ListReader | null) => Promise<T>): Promise<T> {
  const list = await ListReader.open(ctx.read, listRootPath(routeId, partition));
  try {
    return await use(list);
  } finally {
    if (list) {
      ctx.stats.files += list.stats.files;
      ctx.stats.bytes += list.stats.bytes;
      ctx.stats.chunks += list.stats.chunks;
    }
  }
}

function cursorKey(params: Params): SortKey | undefined {
  const c = params.cursor as CursorPosition | undefined;
  return c === undefined ? undefined : c.key;
}

// ---------------------------------------------------------------------------------------------
// Single resources

const composeNetwork: ComposeFn = async (_params, ctx) => ok(await requireExact(ctx, ['v1', 'network']));
const composeHosts: ComposeFn = async (_params, ctx) => ok(await requireExact(ctx, ['v1', 'hosts']));
const composeSml: ComposeFn = async (_params, ctx) => ok(await requireExact(ctx, ['v1', 'sml']));

const composeHost: ComposeFn = async (params, ctx) => {
  const hostname = params.hostname as string;
  const current = (await readExact(ctx, ['v1', 'hosts', hostname])) as HostView | null;
  if (current === null) return notFoundOf('host', hostname);
  const t = hostInstant(params.at as number | undefined, ctx.nowMs);
  // The exact file is the state at now.
  if (t === ctx.nowMs) return ok(current);
  return withList(ctx, HOST_ROUTE, [hostname], async (list) => {
    if (list === null) throw new SnapshotFormatError(`missing state intervals of host ${hostname}`);
    // Newest interval first: the first one whose valid_from is at or before t holds t (if any does).
    for await (const { key, item } of list.scan({ start: (k) => (k[0] as number) <= t })) {
      return ok(hostViewAt(current, { from: key[0] as number, state: item as HostStateItem }, t));
    }
    return ok(hostViewAt(current, null, t));
  });
};

// ---------------------------------------------------------------------------------------------
// Incidents

interface IncidentFilter {
  after?: SortKey;
  sinceMs?: number;
  status?: 'open' | 'closed';
  limit: number;
}

async function incidentPageFrom(list: ListReader, route: string, partition: readonly string[], f: IncidentFilter): Promise<ApiResult> {
  const status = f.status;
  const since = f.sinceMs;
  const page = await composePage(list, {
    start: afterCursor(INCIDENT_DIRS, f.after),
    // started_at descends: the first item before `since` ends the range.
    stop: since === undefined ? undefined : (k) => (k[0] as number) < since,
    match: status === undefined ? undefined : (item) => (item as { status: string }).status === status,
    skip: status === undefined ? undefined : (e) => (e.counts?.status?.[status] ?? 0) === 0,
    limit: f.limit,
  });
  return ok(pageBody(route, partition, page.items, page.keys, page.more));
}

function incidentFilter(params: Params): IncidentFilter {
  return {
    after: cursorKey(params),
    sinceMs: params.since as number | undefined,
    status: params.status as 'open' | 'closed' | undefined,
    limit: params.limit as number,
  };
}

function isDefaultIncidents(params: Params): boolean {
  return params.status === undefined && params.since === undefined && params.cursor === undefined && params.limit === DEFAULT_LIMIT;
}

const composeHostIncidents: ComposeFn = async (params, ctx) => {
  const hostname = params.hostname as string;
  if (isDefaultIncidents(params)) {
    const body = await readExact(ctx, ['v1', 'hosts', hostname, 'incidents']);
    return body === null ? notFoundOf('host', hostname) : ok(body);
  }
  return withList(ctx, HOST_INCIDENTS_ROUTE, [hostname], (list) =>
    list === null ? Promise.resolve(notFoundOf('host', hostname)) : incidentPageFrom(list, HOST_INCIDENTS_ROUTE, [hostname], incidentFilter(params)),
  );
};

const composeIncidents: ComposeFn = async (params, ctx) => {
  const host = params.host as string | undefined;
  if (host === undefined && isDefaultIncidents(params)) return ok(await requireExact(ctx, ['v1', 'incidents']));
  // The host filter reads that host's own list (same order, same items); an unknown host has none.
  const [routeId, partition] = host === undefined ? [INCIDENTS_ROUTE, []] : [HOST_INCIDENTS_ROUTE, [host]];
  return withList(ctx, routeId, partition, (list) =>
    list === null ? Promise.resolve(ok(pageBody(INCIDENTS_ROUTE, [], [], [], false))) : incidentPageFrom(list, INCIDENTS_ROUTE, [], incidentFilter(params)),
  );
};

// ---------------------------------------------------------------------------------------------
// Uptime

const composeUptime: ComposeFn = async (params, ctx) => {
  const hostname = params.hostname as string;
  const resolution = params.resolution as string;
  const location = params.location as string | undefined;
  const from = params.from as number | undefined;
  const to = params.to as number | undefined;
  const after = cursorKey(params);
  const limit = params.limit as number;
  const partition = [hostname, resolution];
  if (resolution === 'hourly' && location === undefined && from === undefined && to === undefined && after === undefined && limit === DEFAULT_LIMIT) {
    const body = await readExact(ctx, ['v1', 'hosts', hostname, 'uptime']);
    return body === null ? notFoundOf('host', hostname) : ok(body);
  }
  const started = afterCursor(UPTIME_DIRS, after);
  return withList(ctx, UPTIME_ROUTE, partition, async (list) => {
    if (list === null) return notFoundOf('host', hostname);
    const page = await composePage(list, {
      // bucket_start descends: `to` (exclusive) and the cursor bound where the range starts, `from` where it ends.
      start: (k) => (to === undefined || (k[0] as number) < to) && started(k),
      stop: from === undefined ? undefined : (k) => (k[0] as number) < from,
      // One list holds every location: the filter passes over entries whose counts lack the location
      // (an unknown one: all of them) and matches the rest item by item (docs/api-hosts.md).
      match: location === undefined ? undefined : (_item, k) => k[1] === location,
      skip: location === undefined ? undefined : (e) => facetCount(e.counts, 'location', location) === 0,
      limit,
    });
    const res = resolution as UptimeBucket['resolution'];
    const items = page.items.map((t, i) => expandUptime(res, hostname, page.keys[i]!, t as UptimeTuple));
    return ok(pageBody(UPTIME_ROUTE, partition, items, page.keys, page.more));
  });
};

export const HOSTS_COMPOSERS: Record<string, ComposeFn> = {
  network: composeNetwork,
  'hosts.list': composeHosts,
  'hosts.detail': composeHost,
  'hosts.incidents': composeHostIncidents,
  'hosts.uptime': composeUptime,
  'incidents.list': composeIncidents,
  sml: composeSml,
};

