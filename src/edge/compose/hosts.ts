// The shim's composers of the network / hosts / incidents / uptime / SML family: answers from snapshot
// files alone (docs/api-hosts.md). Edge-safe: no Node imports, no database.
//
// A request at default parameters is answered by its exact file before any composer
// (src/edge/compose/index.ts); the list routes page their stored lists by their descriptors
// (./scan.ts). A missing exact file or list root of a host means the host is unknown (404): the
// renderer writes them for every known host.
import { expandUptime, HOST_INCIDENTS_ROUTE, HOST_ROUTE, hostInstant, hostViewAt, INCIDENTS_ROUTE, type HostStateItem, type UptimeTuple } from '../../api/hosts/views.js';
import { notFoundOf, ok } from '../../api/result.js';
import type { ParamsOf } from '../../api/handlers.js';
import type { HostView } from '../../derive/hosts/read.js';
import { SnapshotFormatError } from '../list-reader.js';
import { listComposer, type StoredList } from './scan.js';
import type { ComposeFn, Composers } from './types.js';

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

/** Incident lists: items as published; the index counts `status`. */
const INCIDENTS: StoredList = {
  facet: (item, _key, facet) => (item as Record<string, string>)[facet]!,
  counted: ['status'],
};

/**
 * Uptime lists: one per host and resolution holds every location; the key carries bucket_start and
 * the location, the item a compact tuple (src/api/hosts/views.ts); the index counts `location`, so a
 * location filter passes over entries without it (docs/api-hosts.md).
 */
const UPTIME: StoredList<ParamsOf<'hosts.uptime'>> = {
  facet: (_item, key) => key[1] as string,
  counted: ['location'],
  item: (t, key, { resolution, hostname }) => expandUptime(resolution, hostname, key, t as UptimeTuple),
};

export const HOSTS_COMPOSERS = {
  'hosts.detail': composeHost,
  'hosts.incidents': listComposer('hosts.incidents', INCIDENTS),
  // The host filter reads that host's own list (same order, same items); an unknown host has none.
  'incidents.list': listComposer('incidents.list', INCIDENTS, ({ host }) =>
    host === undefined ? { routeId: INCIDENTS_ROUTE, partition: [] } : { routeId: HOST_INCIDENTS_ROUTE, partition: [host] },
  ),
  'hosts.uptime': listComposer('hosts.uptime', UPTIME),
} satisfies Partial<Composers>;
