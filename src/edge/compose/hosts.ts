// The shim's composers of the network / hosts / incidents / uptime / SML family: answers from snapshot
// files alone (docs/api-hosts.md). Edge-safe: no Node imports, no database.
//
// A request at default parameters is answered by its exact file before any composer
// (src/edge/compose/index.ts); the others read the list root and the chunks they need
// (src/edge/list-reader.ts). A missing exact file or list root of a host means the host is unknown
// (404): the renderer writes them for every known host.
import { expandUptime, HOST_INCIDENTS_ROUTE, HOST_ROUTE, hostInstant, hostViewAt, INCIDENT_DIRS, INCIDENTS_ROUTE, UPTIME_DIRS, UPTIME_ROUTE, type HostStateItem, type UptimeTuple } from '../../api/hosts-shared.js';
import { keysAfter, type SortKey } from '../../api/keys.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import type { HostView } from '../../derive/hosts/read.js';
import { facetCount } from '../list-format.js';
import { composePage, ListReader, SnapshotFormatError } from '../list-reader.js';
import type { ComposeFn, Composers } from './types.js';
import { pageBody } from '../../api/page.js';

// ---------------------------------------------------------------------------------------------
// A host at an instant

const composeHost: ComposeFn<'hosts.detail'> = async ({ hostname, at }, src) => {
  // Without `at` the exact file answers (src/edge/compose/index.ts); it is also the state at now.
  const current = await src.exact<HostView>(['v1', 'hosts', hostname]);
  if (current === null) return notFoundOf('host', hostname);
  const t = hostInstant(at, src.nowMs);
  if (t === src.nowMs) return ok(current);
  const list = await src.list(HOST_ROUTE, [hostname]);
  if (list === null) throw new SnapshotFormatError(`missing state intervals of host ${hostname}`);
  // Newest interval first: the first one whose valid_from is at or before t holds t (if any does).
  for await (const { key, item } of list.scan({ start: (k) => (k[0] as number) <= t })) {
    return ok(hostViewAt(current, { from: key[0] as number, state: item as HostStateItem }, t));
  }
  return ok(hostViewAt(current, null, t));
};

// ---------------------------------------------------------------------------------------------
// Incidents

/** The parameters of both incident lists (the host filter of incidents.list picks the list read). */
interface IncidentParams {
  status?: 'open' | 'closed';
  since?: number;
  limit: number;
  cursor?: { key: SortKey };
}

async function incidentPageFrom(list: ListReader, route: string, partition: readonly string[], p: IncidentParams): Promise<ApiResult> {
  const { status, since } = p;
  const page = await composePage(list, {
    start: keysAfter(INCIDENT_DIRS, p.cursor?.key),
    // started_at descends: the first item before `since` ends the range.
    stop: since === undefined ? undefined : (k) => (k[0] as number) < since,
    match: status === undefined ? undefined : (item) => (item as { status: string }).status === status,
    skip: status === undefined ? undefined : (e) => (e.counts?.status?.[status] ?? 0) === 0,
    limit: p.limit,
  });
  return ok(pageBody(route, partition, page.items, page.keys, page.more));
}

const composeHostIncidents: ComposeFn<'hosts.incidents'> = async (params, src) => {
  const { hostname } = params;
  const list = await src.list(HOST_INCIDENTS_ROUTE, [hostname]);
  return list === null ? notFoundOf('host', hostname) : incidentPageFrom(list, HOST_INCIDENTS_ROUTE, [hostname], params);
};

const composeIncidents: ComposeFn<'incidents.list'> = async (params, src) => {
  const { host } = params;
  // The host filter reads that host's own list (same order, same items); an unknown host has none.
  const list = host === undefined ? await src.list(INCIDENTS_ROUTE, []) : await src.list(HOST_INCIDENTS_ROUTE, [host]);
  return list === null ? ok(pageBody(INCIDENTS_ROUTE, [], [], [], false)) : incidentPageFrom(list, INCIDENTS_ROUTE, [], params);
};

// ---------------------------------------------------------------------------------------------
// Uptime

const composeUptime: ComposeFn<'hosts.uptime'> = async ({ hostname, resolution, location, from, to, cursor, limit }, src) => {
  const after = cursor?.key;
  const partition = [hostname, resolution];
  const started = keysAfter(UPTIME_DIRS, after);
  const list = await src.list(UPTIME_ROUTE, partition);
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
  const items = page.items.map((t, i) => expandUptime(resolution, hostname, page.keys[i]!, t as UptimeTuple));
  return ok(pageBody(UPTIME_ROUTE, partition, items, page.keys, page.more));
};

export const HOSTS_COMPOSERS = {
  'hosts.detail': composeHost,
  'hosts.incidents': composeHostIncidents,
  'hosts.uptime': composeUptime,
  'incidents.list': composeIncidents,
} satisfies Partial<Composers>;

