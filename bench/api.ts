// API cost benchmark (issue 5, docs/benchmarks.md "API read cost and serve throughput"):
//
// 1. Read cost: for every route of the route table answered by the resolver, a bounded, seeded set of
//    requests (default page, random limits, the filters / sorts / ranges the route declares, pages
//    after cursors deep in the list and after real next_cursors, pages at the far end) is resolved
//    in-process through createResolve() over the snapshot directory. Every file read is counted by a
//    wrapping FileReader (exact files, list roots, inner index nodes, chunks, bytes) and compared with
//    what the composer reports through onStats. Target per composed answer: at most 3 chunk reads plus
//    the index (root and inner nodes), at most 256 KiB read.
// 2. serve throughput: the built CLI `serve` runs as a child process on 127.0.0.1 (rate limit off);
//    keep-alive clients (undici Pool) hammer an exact file and composed pages for a fixed duration each.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { encodeCursor } from '../src/api/cursor.js';
import { anomalyPartition, eventPartition } from '../src/api/events/feed.js';
import type { SortKey } from '../src/api/sort-keys.js';
import { keyOfRoot, withKeys } from '../src/edge/derived-keys.js';
import { dateType, LIMIT_DEFAULT, timestampType } from '../src/api/params.js';
import { expandParticipant, type StoredParticipant } from '../src/api/participants/plan.js';
import { listRootPath } from '../src/api/paths.js';
import { matchRoute } from '../src/api/routes/match.js';
import { listPartition, parseRequest } from '../src/api/routes/request.js';
import { ROUTE_LIST } from '../src/api/routes/table.js';
import type { AnyRoute } from '../src/api/routes/types.js';
import { CHURN_CATEGORIES, DETECTORS, EVENT_TYPES, GRADES, INCIDENT_STATUSES, PARTICIPANT_SORTS, PROVENANCES, RESOLUTIONS } from '../src/api/schemas/index.js';
import type { Chunk, IndexNode, ListRoot } from '../src/edge/list-format.js';
import type { ReadStats } from '../src/edge/list-reader.js';
import { createResolve, SNAPSHOT_INFO_PATH } from '../src/edge/resolve.js';
import { inflateSync } from '../src/serve/inflate.js';
import { readStoredJson } from '../src/render/stored.js';
import type { FileReader } from '../src/edge/types.js';
import { directoryReader } from '../src/serve/index.js';
import { benchParticipantWalks, walksMarkdown } from './participant-walks.js';
import { countingReader, dist, storedHead, type ReadLog } from './reads.js';

export interface ApiBenchOptions {
  /** Snapshot directory written by `peppol-snapshot build`. */
  out: string;
  /** Its database (opened read-only), to pick identifiers; else they come from the snapshot. */
  db?: string;
  /** Requests per route (routes without parameters: 1). */
  requests: number;
  seed: number;
  /** Seconds of load per serve target. */
  duration: number;
  connections: number;
  /** Wall-clock budget of one route's requests (seconds): a route stops generating requests past it. */
  routeBudget: number;
  /** Run the serve part. */
  serve: boolean;
  /** The built CLI (dist/peppol-snapshot.mjs). */
  cli: string;
  /** Run the participant list's walks (bench/participant-walks.ts); pages per walk at most. */
  walks: boolean;
  walkPages: number;
}

/** Target of one composed answer (issue 5). */
export const MAX_CHUNKS = 3;
export const MAX_BYTES = 256 * 1024;
const MAX_REQUESTS = 5000;
const MAX_DURATION_S = 120;
const MAX_CONNECTIONS = 256;
const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------
// Seeded randomness (mulberry32)

class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.next() * xs.length)];
  }
  some<T>(xs: readonly T[], max: number): T[] {
    const n = Math.min(xs.length, this.int(1, max));
    const pool = [...xs];
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]!);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Identifier pools

interface Pools {
  hosts: string[];
  heavyHosts: string[];
  locations: string[];
  participants: Array<{ id: string; value: string; name: string | null }>;
  heavyParticipants: string[];
  anomalies: string[];
  slugs: string[];
  apKeys: string[];
  churnKeys: string[];
  seats: string[];
  facets: Record<string, string[]>;
  eventTypes: string[];
  source: string;
}

const dec = new TextDecoder();

/** Inverse of encodeSegment (src/api/paths.ts). */
function decodeSegment(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '_' && /^[0-9a-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(s.charCodeAt(i));
  }
  return dec.decode(new Uint8Array(bytes));
}

function readJsonFile<T>(out: string, rel: string): T | null {
  try {
    return readStoredJson(path.join(out, rel)) as T;
  } catch {
    return null;
  }
}

function listDir(dir: string, max: number): string[] {
  try {
    const d = fs.opendirSync(dir);
    const out: string[] = [];
    try {
      for (let e = d.readSync(); e !== null && out.length < max; e = d.readSync()) out.push(e.name);
    } finally {
      d.closeSync();
    }
    return out.sort();
  } catch {
    return [];
  }
}

/** One random leaf chunk of a list (or the last one), descending inner nodes; read straight from disk. */
function sampleChunk(out: string, rootRel: string, rng: Rng, far: boolean): Chunk | null {
  const root = readJsonFile<ListRoot>(out, rootRel);
  if (root === null) return null;
  let entries = root.entries;
  for (let depth = 0; depth < 8 && entries.length > 0; depth++) {
    const e = far ? entries[entries.length - 1]! : rng.pick(entries)!;
    const f = readJsonFile<{ keys?: SortKey[]; items: unknown[] } | IndexNode>(out, e.path);
    if (f === null) return null;
    // A chunk (with its keys, or a list@3 chunk whose keys its items give), or an inner node.
    if ('items' in f) return withKeys(keyOfRoot(root), f);
    entries = f.entries;
  }
  return null;
}

function uniq<T>(xs: Iterable<T>): T[] {
  return [...new Set(xs)];
}

function poolsFromSnapshot(out: string, rng: Rng): Pools {
  const hosts = (readJsonFile<{ items: Array<{ hostname: string }> }>(out, 'v1/hosts.json')?.items ?? []).map((h) => h.hostname);
  const locations = new Set<string>(['__all__']);
  for (const h of hosts.slice(0, 3)) {
    const c = sampleChunk(out, listRootPath('hosts.uptime', [h, 'hourly']), rng, false);
    for (const k of c?.keys ?? []) if (typeof k[1] === 'string') locations.add(k[1]);
  }
  const participants: Pools['participants'] = [];
  const main = listRootPath('participants.list', ['first_seen.desc']);
  for (let i = 0; i < 25; i++) {
    const c = sampleChunk(out, main, rng, false);
    for (const it of ((c?.items ?? []) as StoredParticipant[]).map(expandParticipant)) participants.push({ id: it.id, value: it.value, name: it.name });
  }
  const heavyParticipants = uniq([
    ...listDir(path.join(out, 'i/participants.events'), 500),
    ...listDir(path.join(out, 'i/participants.history'), 500),
    ...listDir(path.join(out, 'i/events.list/participant'), 500),
  ]).map((f) => decodeSegment(f.replace(/\.json$/, '')));
  const heavyHosts = listDir(path.join(out, 'i/events.list/host'), 200).map((f) => decodeSegment(f.replace(/\.json$/, '')));
  const anomalies = (readJsonFile<{ items: Array<{ id: string }> }>(out, 'v1/anomalies.json')?.items ?? []).map((a) => a.id);
  const slugs = (readJsonFile<{ items: Array<{ slug: string | null }> }>(out, 'v1/providers.json')?.items ?? []).flatMap((p) => (p.slug ? [p.slug] : []));
  const aps = readJsonFile<{ items: Array<{ key: string; seats: string[] }> }>(out, 'v1/aps.json')?.items ?? [];
  const churnKeys = listDir(path.join(out, 'i/aps.churn'), 1000).map((f) => decodeSegment(f.replace(/\.json$/, '')));
  const stats = readJsonFile<{ facets: Record<string, Array<{ value: string; count: number }>> }>(out, 'v1/stats/participants.json');
  const facets: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(stats?.facets ?? {})) facets[k] = v.map((b) => b.value);
  const ev = readJsonFile<{ meta?: { facets?: { type?: Array<{ value: string }> } } }>(out, 'v1/events.json');
  return {
    hosts,
    heavyHosts,
    locations: [...locations],
    participants,
    heavyParticipants,
    anomalies,
    slugs,
    apKeys: aps.map((a) => a.key),
    churnKeys,
    seats: uniq(aps.flatMap((a) => a.seats)),
    facets,
    eventTypes: (ev?.meta?.facets?.type ?? []).map((t) => t.value),
    source: 'snapshot',
  };
}

/** Adds identifiers from the database (read-only): uniform participants, the busiest ones, every host, seat and key. */
function addPoolsFromDb(p: Pools, dbPath: string, rng: Rng): void {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const max = (db.prepare('SELECT max(participant_id) AS m FROM participant_list').get() as { m: number | null }).m ?? 0;
    const one = db.prepare('SELECT pid, value, name FROM participant_list WHERE participant_id >= ? ORDER BY participant_id LIMIT 1');
    for (let i = 0; i < 1000 && max > 0; i++) {
      const r = one.get(rng.int(1, max)) as { pid: string; value: string; name: string | null } | undefined;
      if (r) p.participants.push({ id: r.pid, value: r.value, name: r.name });
    }
    const heavy = db
      .prepare('SELECT p.pid AS pid FROM (SELECT participant_id, count(*) AS n FROM events WHERE participant_id IS NOT NULL GROUP BY participant_id ORDER BY n DESC LIMIT 100) e JOIN participants p ON p.id = e.participant_id')
      .all() as Array<{ pid: string }>;
    p.heavyParticipants = uniq([...heavy.map((r) => r.pid), ...p.heavyParticipants]);
    const busyHosts = db
      .prepare('SELECT h.hostname AS hostname FROM host_incidents i JOIN hosts h ON h.id = i.host_id GROUP BY i.host_id ORDER BY count(*) DESC LIMIT 50')
      .all() as Array<{ hostname: string }>;
    p.heavyHosts = uniq([...busyHosts.map((r) => r.hostname), ...p.heavyHosts]);
    p.anomalies = uniq([...p.anomalies, ...(db.prepare('SELECT id FROM anomalies ORDER BY id').all() as Array<{ id: string }>).map((r) => r.id)]);
    p.seats = uniq([...p.seats, ...(db.prepare('SELECT seat_id FROM seat_identities').all() as Array<{ seat_id: string }>).map((r) => r.seat_id)]);
    p.apKeys = uniq([...p.apKeys, ...(db.prepare('SELECT key FROM ap_identities').all() as Array<{ key: string }>).map((r) => r.key)]);
    p.slugs = uniq([...p.slugs, ...(db.prepare('SELECT slug FROM curated_providers').all() as Array<{ slug: string }>).map((r) => r.slug)]);
    p.locations = uniq([...p.locations, ...(db.prepare('SELECT name FROM locations').all() as Array<{ name: string }>).map((r) => r.name)]);
    p.source = 'snapshot + database';
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Request generation

type Kind = 'default' | 'limit' | 'filter' | 'deep' | 'next' | 'far';

interface Draft {
  kind: Kind;
  pathParams: Record<string, string>;
  query: Record<string, string>;
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

function pathValue(route: AnyRoute, name: string, p: Pools, rng: Rng): string | undefined {
  if (name === 'hostname') return rng.chance(0.3) ? (rng.pick(p.heavyHosts) ?? rng.pick(p.hosts)) : rng.pick(p.hosts);
  if (name === 'id' && route.id.startsWith('participants.')) return rng.chance(0.4) ? (rng.pick(p.heavyParticipants) ?? rng.pick(p.participants)?.id) : rng.pick(p.participants)?.id;
  if (name === 'id') return rng.pick(p.anomalies);
  if (name === 'slug') return rng.pick(p.slugs);
  if (name === 'key') return route.id.startsWith('aps.churn') && rng.chance(0.7) ? (rng.pick(p.churnKeys) ?? rng.pick(p.apKeys)) : rng.pick(p.apKeys);
  if (name === 'seatId') return rng.pick(p.seats);
  return undefined;
}

function searchText(p: Pools, rng: Rng): string | undefined {
  const x = rng.pick(p.participants);
  if (!x) return undefined;
  const r = rng.next();
  if (r < 0.25) return x.id;
  if (r < 0.45 && /\d{4}/.test(x.value)) return x.value;
  const name = x.name ?? 'bv';
  const len = rng.int(3, Math.max(3, Math.min(10, name.length)));
  const at = rng.int(0, Math.max(0, name.length - len));
  return name.slice(at, at + len).trim() || name;
}

function queryValue(route: AnyRoute, name: string, p: Pools, rng: Rng, nowMs: number): string | undefined {
  const def = route.params[name]!;
  switch (name) {
    case 'limit':
      return String(rng.int(1, 200));
    case 'status':
      return rng.pick(INCIDENT_STATUSES);
    case 'resolution':
      return rng.pick(RESOLUTIONS);
    case 'location':
      return rng.pick(p.locations);
    case 'host':
      return rng.chance(0.5) ? (rng.pick(p.heavyHosts) ?? rng.pick(p.hosts)) : rng.pick(p.hosts);
    case 'seat':
      return rng.pick(p.seats);
    case 'participant':
      return rng.chance(0.6) ? (rng.pick(p.heavyParticipants) ?? rng.pick(p.participants)?.id) : rng.pick(p.participants)?.id;
    case 'type':
      return rng.some(rng.chance(0.5) && p.eventTypes.length > 0 ? p.eventTypes : EVENT_TYPES, 3).join(',');
    case 'detector':
      return rng.pick(DETECTORS);
    case 'grade':
      return rng.pick(GRADES);
    case 'acknowledged':
    case 'registered':
      return rng.chance(0.5) ? 'true' : 'false';
    case 'sort':
      return rng.pick(PARTICIPANT_SORTS);
    case 'provenance':
      return rng.pick(PROVENANCES);
    case 'category':
      return rng.pick(CHURN_CATEGORIES);
    case 'country':
    case 'scheme':
    case 'smp':
    case 'ap': {
      const values = p.facets[name] ?? [];
      // Half the time among the three most common values (long walks), else any value (small sets).
      return rng.some(rng.chance(0.5) ? values.slice(0, 3) : values, 3).join(',') || undefined;
    }
    case 'q':
      return searchText(p, rng);
  }
  if (def.type === (timestampType as unknown)) return iso(nowMs - rng.int(0, 95) * DAY_MS - rng.int(0, DAY_MS - 1));
  if (def.type === (dateType as unknown)) return iso(nowMs - rng.int(0, 60) * DAY_MS).slice(0, 10);
  return undefined;
}

const KINDS: Array<[Kind, number]> = [
  ['limit', 0.15],
  ['filter', 0.3],
  ['deep', 0.25],
  ['next', 0.2],
  ['far', 0.1],
];

function pickKind(rng: Rng): Kind {
  let r = rng.next();
  for (const [k, w] of KINDS) {
    if (r < w) return k;
    r -= w;
  }
  return 'filter';
}

function draft(route: AnyRoute, kind: Kind, p: Pools, rng: Rng, nowMs: number): Draft | null {
  const pathParams: Record<string, string> = {};
  const query: Record<string, string> = {};
  for (const [name, def] of Object.entries(route.params)) {
    if (def.in === 'path') {
      const v = pathValue(route, name, p, rng);
      if (v === undefined) return null;
      pathParams[name] = v;
      continue;
    }
    if (name === 'cursor' || name === 'prev_cursor') continue;
    const wanted = def.required || (name === 'limit' ? kind !== 'default' && rng.chance(0.8) : kind !== 'default' && kind !== 'limit' && rng.chance(name === 'q' ? 0.15 : 0.3));
    if (!wanted) continue;
    const v = queryValue(route, name, p, rng, nowMs);
    if (v !== undefined) query[name] = v;
  }
  // Ranges in order.
  for (const [a, b] of [
    ['since', 'until'],
    ['from', 'to'],
  ] as const) {
    const x = query[a];
    const y = query[b];
    if (x !== undefined && y !== undefined && x > y) [query[a], query[b]] = [y, x];
  }
  return { kind, pathParams, query };
}

function targetOf(route: AnyRoute, d: Draft): string {
  const p = route.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(d.pathParams[name] ?? ''));
  const q = new URLSearchParams(d.query).toString();
  return q === '' ? p : `${p}?${q}`;
}

/** A cursor standing on a real item of the list the request walks: uniformly deep, or at the far end. */
function mintCursor(out: string, route: AnyRoute, d: Draft, rng: Rng, nowMs: number, far: boolean): string | null {
  if (!route.list || route.list.pagination !== 'cursor') return null;
  const match = matchRoute(targetOf(route, { ...d, query: {} }));
  if (!match) return null;
  const parsed = parseRequest(route, match.pathParams, new URLSearchParams(d.query), { now: nowMs });
  if (!parsed.ok) return null;
  const params = parsed.params as Record<string, unknown>;
  const partition = listPartition(route, params);
  const stored =
    route.id === 'events.list'
      ? listRootPath(route.id, eventPartition(params as { participant?: string; seat?: string; host?: string }))
      : route.id === 'anomalies.list'
        ? listRootPath(route.id, anomalyPartition(params as { seat?: string; host?: string }))
        : listRootPath(route.id, partition);
  const chunk = sampleChunk(out, stored, rng, far);
  if (chunk === null || chunk.keys.length === 0) return null;
  const key: SortKey = far ? chunk.keys[chunk.keys.length - 1 - rng.int(0, Math.min(2, chunk.keys.length - 1))]! : rng.pick(chunk.keys)!;
  return encodeCursor({ route: route.id, partition, key, hint: '', dir: 'next' });
}

// ---------------------------------------------------------------------------------------------
// Read cost

interface Sample {
  url: string;
  kind: Kind;
  status: number;
  log: ReadLog;
  composer: ReadStats | null;
  answerBytes: number;
  ms: number;
  /** A paginated 200 answer: items returned, the page size asked for, and whether a next page follows. */
  page: { items: number; limit: number; more: boolean } | null;
}

const overTarget = (l: ReadLog) => l.chunks > MAX_CHUNKS || l.bytes > MAX_BYTES;

function summarise(samples: Sample[]) {
  const ok = samples.filter((s) => s.status !== 500);
  const worstBy = (f: (s: Sample) => number) => ok.reduce<Sample | null>((w, s) => (w === null || f(s) > f(w) ? s : w), null);
  const wb = worstBy((s) => s.log.bytes);
  const wc = worstBy((s) => s.log.chunks * 1e9 + s.log.bytes);
  const statuses: Record<string, number> = {};
  for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  const over = ok.filter((s) => overTarget(s.log));
  const mismatch = ok.filter((s) => s.composer !== null && (s.composer.files !== s.log.files || s.composer.bytes !== s.log.bytes || s.composer.chunks !== s.log.chunks));
  return {
    requests: samples.length,
    statuses,
    files: dist(ok.map((s) => s.log.files)),
    bytes: dist(ok.map((s) => s.log.bytes)),
    chunks: dist(ok.map((s) => s.log.chunks)),
    index_nodes: dist(ok.map((s) => s.log.roots + s.log.nodes)),
    answer_bytes: dist(ok.map((s) => s.answerBytes)),
    ms: dist(ok.map((s) => s.ms)),
    worst_bytes: wb ? { url: wb.url, kind: wb.kind, status: wb.status, files: wb.log.files, bytes: wb.log.bytes, chunks: wb.log.chunks, index_nodes: wb.log.roots + wb.log.nodes } : null,
    worst_chunks: wc ? { url: wc.url, kind: wc.kind, status: wc.status, files: wc.log.files, bytes: wc.log.bytes, chunks: wc.log.chunks, index_nodes: wc.log.roots + wc.log.nodes } : null,
    over_target: over.length,
    over_chunks: ok.filter((s) => s.log.chunks > MAX_CHUNKS).length,
    over_bytes: ok.filter((s) => s.log.bytes > MAX_BYTES).length,
    over_target_by_kind: over.reduce<Record<string, number>>((m, s) => ((m[s.kind] = (m[s.kind] ?? 0) + 1), m), {}),
    over_target_examples: over
      .sort((a, b) => b.log.bytes - a.log.bytes)
      .slice(0, 5)
      .map((s) => ({ url: s.url, chunks: s.log.chunks, bytes: s.log.bytes, files: s.log.files })),
    stats_mismatch: mismatch.length,
    stats_mismatch_examples: mismatch.slice(0, 3).map((s) => ({ url: s.url, counted: { files: s.log.files, bytes: s.log.bytes, chunks: s.log.chunks }, reported: s.composer })),
    server_errors: samples.filter((s) => s.status === 500).map((s) => s.url).slice(0, 10),
    // Pages followed by a next page but holding fewer items than asked (the participant list's window).
    pages: {
      with_next: ok.filter((s) => s.page?.more).length,
      short: ok.filter((s) => s.page !== null && s.page.more && s.page.items < s.page.limit).length,
      empty: ok.filter((s) => s.page !== null && s.page.more && s.page.items === 0).length,
    },
  };
}

/** Every list root with its item count (reads the first bytes of each root only). */
function listRoots(out: string, maxFiles = 2_000_000): Array<{ path: string; count: number }> {
  const roots: Array<{ path: string; count: number }> = [];
  const buf = Buffer.alloc(4096);
  const walk = (rel: string): void => {
    for (const name of listDir(path.join(out, rel), maxFiles)) {
      if (roots.length >= maxFiles) return;
      const r = `${rel}/${name}`;
      const abs = path.join(out, r);
      if (fs.statSync(abs).isDirectory()) {
        walk(r);
        continue;
      }
      const fd = fs.openSync(abs, 'r');
      try {
        const n = fs.readSync(fd, buf, 0, buf.length, 0);
        const m = /"count":(\d+)/.exec(Buffer.from(storedHead(buf.subarray(0, n), n)).toString('utf8'));
        if (m) roots.push({ path: r, count: Number(m[1]) });
      } finally {
        fs.closeSync(fd);
      }
    }
  };
  walk('i');
  return roots;
}

export interface ReadCostResult {
  routes: Record<string, ReturnType<typeof summarise>>;
  largest: { roots: string[]; count: number; route: string; requests: number; summary: ReturnType<typeof summarise> | null };
  roots: number;
  /** Routes whose requests stopped at the time budget. */
  budgetRoutes: string[];
  pools: Record<string, number | string>;
  serveTargets: ServeTarget[];
}

/** A URL of the serve part, with its read cost. */
export interface ServeTarget {
  name: string;
  url: string;
  status: number;
  files: number;
  chunks: number;
  index_nodes: number;
  bytes: number;
}

async function resolveOne(
  resolve: ReturnType<typeof createResolve>,
  counting: ReturnType<typeof countingReader>,
  lastStats: { v: ReadStats | null },
  url: string,
  kind: Kind,
): Promise<{ sample: Sample; body: Record<string, unknown> | null }> {
  counting.begin();
  lastStats.v = null;
  const t0 = performance.now();
  let status = 500;
  let answerBytes = 0;
  let body: Record<string, unknown> | null = null;
  try {
    const a = await resolve({ url: new URL(`http://bench.invalid${url}`), routeId: null }, counting.reader);
    status = a.status;
    answerBytes = a.body.length;
    if (a.status === 200 && a.contentType.includes('json')) body = JSON.parse(dec.decode(a.body)) as Record<string, unknown>;
  } catch (e) {
    process.stderr.write(`api bench: 500 ${url}: ${e instanceof Error ? e.message : String(e)}\n`);
  }
  let page: Sample['page'] = null;
  if (body !== null && Array.isArray(body.items) && 'next_cursor' in body) {
    const limit = Number(new URL(`http://bench.invalid${url}`).searchParams.get('limit') ?? LIMIT_DEFAULT);
    page = { items: body.items.length, limit: Math.min(200, Math.max(1, limit)), more: body.next_cursor !== null };
  }
  return { sample: { url, kind, status, log: counting.end(), composer: lastStats.v, answerBytes, ms: performance.now() - t0, page }, body };
}

export async function benchReadCost(o: ApiBenchOptions, log: (s: string) => void): Promise<ReadCostResult> {
  const out = path.resolve(o.out);
  const snap = readJsonFile<{ generated_at: string }>(out, SNAPSHOT_INFO_PATH);
  if (snap === null) throw new Error(`${out}/${SNAPSHOT_INFO_PATH} not found: not a snapshot built by peppol-snapshot build`);
  const nowMs = Date.parse(snap.generated_at);
  const rng = new Rng(o.seed);
  const pools = poolsFromSnapshot(out, rng);
  if (o.db) addPoolsFromDb(pools, o.db, rng);
  log(`pools (${pools.source}): ${pools.hosts.length} hosts, ${pools.participants.length} participants (${pools.heavyParticipants.length} with lists of events), ${pools.anomalies.length} anomalies, ${pools.apKeys.length} AP keys, ${pools.seats.length} seats`);

  const counting = countingReader(directoryReader(out));
  const lastStats: { v: ReadStats | null } = { v: null };
  const resolve = createResolve({ onStats: (_route, s) => (lastStats.v = { ...s }), inflate: inflateSync });
  const byRoute = new Map<string, Sample[]>();
  const budgetRoutes: string[] = [];
  const n = Math.max(1, Math.min(MAX_REQUESTS, o.requests));
  for (const route of ROUTE_LIST) {
    if (route.id === 'health' || route.id === 'health.db' || route.id === 'discovery.openapi') continue; // answered by the edge, not the resolver
    const samples: Sample[] = [];
    const hasParams = Object.keys(route.params).length > 0;
    const count = hasParams ? n : 1;
    const followed: Array<{ query: Record<string, string>; pathParams: Record<string, string>; cursor: string; prev: boolean }> = [];
    const rr = new Rng(o.seed * 7919 + route.id.length * 104729 + route.id.charCodeAt(route.id.length - 1));
    let attempts = 0;
    const started = performance.now();
    const budgetMs = Math.max(1, Math.min(3600, o.routeBudget)) * 1000;
    let budgetHit = false;
    while (samples.length < count && attempts++ < count * 5) {
      if (performance.now() - started > budgetMs) {
        budgetHit = true;
        break;
      }
      const kind: Kind = samples.length === 0 ? 'default' : route.paginated ? pickKind(rr) : rr.chance(0.2) ? 'default' : 'filter';
      let d: Draft | null;
      if (kind === 'next') {
        const f = followed.length > 0 ? followed.splice(rr.int(0, followed.length - 1), 1)[0]! : null;
        if (f === null) continue;
        d = { kind, pathParams: f.pathParams, query: { ...f.query, [f.prev ? 'prev_cursor' : 'cursor']: f.cursor } };
      } else {
        d = draft(route, kind, pools, rr, nowMs);
        if (d === null) break; // no identifiers for this route's path parameters
        if (kind === 'deep' || kind === 'far') {
          const c = mintCursor(out, route, d, rr, nowMs, kind === 'far');
          if (c === null) continue;
          d.query.cursor = c;
        }
      }
      const url = targetOf(route, d);
      const { sample, body } = await resolveOne(resolve, counting, lastStats, url, kind);
      samples.push(sample);
      if (body && route.paginated) {
        const base = { ...d.query };
        delete base.cursor;
        delete base.prev_cursor;
        if (typeof body.next_cursor === 'string') followed.push({ query: base, pathParams: d.pathParams, cursor: body.next_cursor, prev: false });
        if (typeof body.prev_cursor === 'string' && rr.chance(0.3)) followed.push({ query: base, pathParams: d.pathParams, cursor: body.prev_cursor, prev: true });
        if (followed.length > 200) followed.splice(0, followed.length - 200);
      }
    }
    byRoute.set(route.id, samples);
    if (budgetHit) budgetRoutes.push(route.id);
    const s = summarise(samples);
    log(
      `  ${route.id.padEnd(24)} ${String(samples.length).padStart(5)} req  chunks p50/max ${s.chunks.p50}/${s.chunks.max}  bytes p50/max ${fmtBytes(s.bytes.p50)}/${fmtBytes(s.bytes.max)}  over target ${s.over_target}${s.pages.with_next > 0 ? `  short pages ${s.pages.short} (empty ${s.pages.empty}) of ${s.pages.with_next} with a next page` : ''}${budgetHit ? ' (time budget reached)' : ''}  ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }

  // The largest list (most items) and the requests that read its root.
  const roots = listRoots(out);
  const top = roots.reduce((m, r) => Math.max(m, r.count), 0);
  const largestRoots = roots.filter((r) => r.count === top).map((r) => r.path);
  const largestSet = new Set(largestRoots);
  const largestRoute = largestRoots[0]?.split('/')[1] ?? '';
  const touching: Sample[] = [];
  for (const samples of byRoute.values()) for (const s of samples) if (s.log.rootPaths.some((p) => largestSet.has(p))) touching.push(s);

  // Serve targets: a real next_cursor deep in the participant list, with a country filter; the event feed.
  const country = pools.facets.country?.[0] ?? 'BE';
  let participantsDeep: string | null = null;
  const route = ROUTE_LIST.find((r) => r.id === 'participants.list')!;
  for (let i = 0; i < 20 && participantsDeep === null; i++) {
    const d: Draft = { kind: 'deep', pathParams: {}, query: { country, limit: '50' } };
    const c = mintCursor(out, route, { ...d, query: {} }, rng, nowMs, false);
    if (c === null) break;
    const { body } = await resolveOne(resolve, counting, lastStats, `/v1/participants?country=${country}&limit=50&cursor=${c}`, 'deep');
    if (body && typeof body.next_cursor === 'string') participantsDeep = `/v1/participants?country=${country}&limit=50&cursor=${body.next_cursor}`;
  }
  const events = `/v1/events?type=${pools.eventTypes[0] ?? EVENT_TYPES[0]}&limit=200`;
  const targets = [
    { name: 'exact /v1/network', url: '/v1/network' },
    { name: 'exact /v1/participants', url: '/v1/participants' },
    ...(participantsDeep ? [{ name: 'composed participants', url: participantsDeep }] : []),
    { name: 'composed events', url: events },
  ];
  const serveTargets: ServeTarget[] = [];
  for (const t of targets) {
    const { sample } = await resolveOne(resolve, counting, lastStats, t.url, 'filter');
    serveTargets.push({ ...t, status: sample.status, files: sample.log.files, chunks: sample.log.chunks, index_nodes: sample.log.roots + sample.log.nodes, bytes: sample.log.bytes });
  }

  return {
    routes: Object.fromEntries([...byRoute].map(([id, s]) => [id, summarise(s)])),
    largest: { roots: largestRoots, count: top, route: largestRoute, requests: touching.length, summary: touching.length > 0 ? summarise(touching) : null },
    roots: roots.length,
    budgetRoutes,
    pools: {
      source: pools.source,
      hosts: pools.hosts.length,
      participants: pools.participants.length,
      heavy_participants: pools.heavyParticipants.length,
      anomalies: pools.anomalies.length,
      ap_keys: pools.apKeys.length,
      seats: pools.seats.length,
    },
    serveTargets,
  };
}

// ---------------------------------------------------------------------------------------------
// serve throughput

export function loadavg(): string {
  try {
    return fs.readFileSync('/proc/loadavg', 'utf8').trim();
  } catch {
    return os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  }
}

interface LoadResult {
  name: string;
  url: string;
  seconds: number;
  requests: number;
  rps: number;
  errors: number;
  statuses: Record<string, number>;
  body_bytes: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

async function hammer(origin: string, name: string, url: string, seconds: number, connections: number): Promise<LoadResult> {
  const pool = new Pool(origin, { connections, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000, keepAliveTimeout: 30_000 });
  try {
    const lat: number[] = [];
    const statuses: Record<string, number> = {};
    let errors = 0;
    let bodyBytes = 0;
    const run = async (until: number, record: boolean) => {
      const worker = async () => {
        while (performance.now() < until) {
          const t0 = performance.now();
          try {
            const r = await pool.request({ path: url, method: 'GET', headers: { 'user-agent': 'peppol-snapshot-bench' } });
            const b = Buffer.from(await r.body.arrayBuffer());
            if (!record) continue;
            lat.push(performance.now() - t0);
            statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
            if (r.statusCode !== 200) errors++;
            bodyBytes = b.length;
          } catch {
            if (record) errors++;
            await new Promise((ok) => setTimeout(ok, 10));
          }
        }
      };
      await Promise.all(Array.from({ length: connections }, worker));
    };
    await run(performance.now() + Math.min(1000, seconds * 200), false); // warm-up
    const t0 = performance.now();
    await run(t0 + seconds * 1000, true);
    const elapsed = (performance.now() - t0) / 1000;
    const d = dist(lat);
    return {
      name,
      url,
      seconds: Math.round(elapsed * 10) / 10,
      requests: lat.length,
      rps: Math.round(lat.length / elapsed),
      errors,
      statuses,
      body_bytes: bodyBytes,
      p50_ms: Math.round(d.p50 * 100) / 100,
      p99_ms: Math.round(d.p99 * 100) / 100,
      max_ms: Math.round(d.max * 100) / 100,
    };
  } finally {
    await pool.close();
  }
}

async function startServe(cli: string, out: string, logFile: string): Promise<{ child: ChildProcess; origin: string }> {
  const fd = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, [cli, 'serve', '--out', out, '--host', '127.0.0.1', '--port', '0', '--rate-limit', 'off', '--access', 'open'], { stdio: ['ignore', 'ignore', fd] });
  fs.closeSync(fd);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const text = fs.readFileSync(logFile, 'utf8');
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
    if (m) return { child, origin: m[1]! };
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}: ${text.slice(0, 2000)}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  child.kill('SIGKILL');
  throw new Error('serve did not start within 30 s');
}

async function stopServe(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
  const [code] = (await exited) as [number | null];
  clearTimeout(t);
  return code;
}

export async function benchServe(o: ApiBenchOptions, targets: Array<{ name: string; url: string }>, log: (s: string) => void) {
  const out = path.resolve(o.out);
  const logFile = path.join(os.tmpdir(), `api-bench-serve-${process.pid}.log`);
  const seconds = Math.max(1, Math.min(MAX_DURATION_S, o.duration));
  const connections = Math.max(1, Math.min(MAX_CONNECTIONS, o.connections));
  const { child, origin } = await startServe(o.cli, out, logFile);
  const results: LoadResult[] = [];
  let exitCode: number | null = null;
  try {
    for (const t of targets) {
      const r = await hammer(origin, t.name, t.url, seconds, connections);
      log(`  ${t.name.padEnd(22)} ${String(r.rps).padStart(6)} req/s  p50 ${r.p50_ms} ms  p99 ${r.p99_ms} ms  errors ${r.errors}  (${r.body_bytes} B)`);
      results.push(r);
    }
  } finally {
    exitCode = await stopServe(child);
  }
  // The access log: 5xx answers and errors the server logged.
  let serverErrors: string[] = [];
  let logged5xx = 0;
  try {
    const text = fs.readFileSync(logFile, 'utf8');
    serverErrors = text.split('\n').filter((l) => l.startsWith('error:')).slice(0, 5);
    logged5xx = (text.match(/HTTP\/1\.1" 5\d\d /g) ?? []).length;
  } finally {
    fs.rmSync(logFile, { force: true });
  }
  return { origin, seconds, connections, results, server_exit: exitCode, logged_5xx: logged5xx, server_errors: serverErrors };
}

// ---------------------------------------------------------------------------------------------

export function fmtBytes(b: number): string {
  return b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`;
}

/** A cursor shortened for display (the JSON line keeps the whole URL). */
const shortUrl = (u: string) => u.replace(/(cursor=)([A-Za-z0-9_-]{12})[A-Za-z0-9_-]+/g, '$1$2…');

/** The human summary: markdown tables (pasted into docs/benchmarks.md). */
export function markdownSummary(cost: ReadCostResult, serve: Awaited<ReturnType<typeof benchServe>> | null): string {
  const lines: string[] = [];
  lines.push('| route | requests | non-200 | files max | chunks p50 / max | index nodes max | bytes p50 / max | over target (chunks / bytes) | request with the most bytes |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const [id, r] of Object.entries(cost.routes)) {
    const non200 = Object.entries(r.statuses)
      .filter(([k]) => k !== '200')
      .map(([k, v]) => `${v}× ${k}`)
      .join(', ');
    const over = r.over_target === 0 ? '0' : `**${r.over_target}** (${r.over_chunks} / ${r.over_bytes})`;
    lines.push(
      `| ${id} | ${r.requests} | ${non200 || '–'} | ${r.files.max} | ${r.chunks.p50} / ${r.chunks.max} | ${r.index_nodes.max} | ${fmtBytes(r.bytes.p50)} / ${fmtBytes(r.bytes.max)} | ${over} | ${r.requests > 1 && r.worst_bytes ? `\`${shortUrl(r.worst_bytes.url)}\`` : ''} |`,
    );
  }
  const lg = cost.largest;
  if (lg.summary) {
    const s = lg.summary;
    lines.push('');
    lines.push(
      `Largest list: ${lg.count.toLocaleString('en-US')} items (${lg.roots.length} list(s) of \`${lg.route}\` tied, e.g. \`${lg.roots[0]}\`); ${s.requests} requests read it: files max ${s.files.max}, chunks p50 / max ${s.chunks.p50} / ${s.chunks.max}, index nodes max ${s.index_nodes.max}, bytes p50 / max ${fmtBytes(s.bytes.p50)} / ${fmtBytes(s.bytes.max)}; over target: ${s.over_target} (${s.over_chunks} by chunks, ${s.over_bytes} by bytes). Most bytes: \`${shortUrl(s.worst_bytes?.url ?? '-')}\`.`,
    );
  }
  if (serve) {
    lines.push('');
    lines.push(`| serve target (${serve.connections} keep-alive connections, ${serve.seconds} s each) | reads (files, chunks, bytes) | body | requests/s | p50 ms | p99 ms | errors |`);
    lines.push('|---|---|---|---|---|---|---|');
    for (const r of serve.results) {
      const t = cost.serveTargets.find((x) => x.url === r.url);
      const reads = t ? `${t.files}, ${t.chunks}, ${fmtBytes(t.bytes)}` : '';
      lines.push(`| ${r.name}: \`${shortUrl(r.url)}\` | ${reads} | ${fmtBytes(r.body_bytes)} | ${r.rps.toLocaleString('en-US')} | ${r.p50_ms} | ${r.p99_ms} | ${r.errors} |`);
    }
  }
  return lines.join('\n');
}

export async function benchApi(o: ApiBenchOptions, log: (s: string) => void): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const loadBefore = loadavg();
  log(`read cost: ${o.requests} requests per route, seed ${o.seed}, snapshot ${path.resolve(o.out)}${o.db ? `, database ${o.db}` : ''}`);
  const cost = await benchReadCost(o, log);
  const lg = cost.largest;
  log(`largest list: ${lg.count} items (${lg.roots.length} root(s) of ${lg.route}, e.g. ${lg.roots[0] ?? '-'}), ${lg.requests} requests read it`);
  if (lg.summary) log(`  files max ${lg.summary.files.max}, chunks max ${lg.summary.chunks.max}, index nodes max ${lg.summary.index_nodes.max}, bytes max ${fmtBytes(lg.summary.bytes.max)} (${lg.summary.worst_bytes?.url ?? '-'}); over target: ${lg.summary.over_target}`);
  let serve: Awaited<ReturnType<typeof benchServe>> | null = null;
  const loadMid = loadavg();
  if (o.serve) {
    const targets = cost.serveTargets.map((t) => ({ name: t.name, url: t.url }));
    log(`serve: ${targets.length} targets, ${o.duration} s each, ${o.connections} keep-alive connections`);
    serve = await benchServe(o, targets, log);
  }
  let walks: Awaited<ReturnType<typeof benchParticipantWalks>> | null = null;
  if (o.walks) {
    log(`participant list walks: the query mix of bench/participant-walks.ts, at most ${o.walkPages} pages per walk`);
    const pools = poolsFromSnapshot(path.resolve(o.out), new Rng(o.seed));
    const fromSnapshot = pools.participants.length;
    if (o.db) addPoolsFromDb(pools, o.db, new Rng(o.seed));
    // With a database, its sample first: the texts and ids of the mix are then the same over any
    // snapshot of that database (the snapshot's sample comes from chunks drawn at random, which
    // differ with the lists' chunking), so two snapshots can be compared request by request.
    const sample = [...pools.participants.slice(fromSnapshot), ...pools.participants.slice(0, fromSnapshot)];
    const named = sample.filter((p) => p.name !== null);
    walks = await benchParticipantWalks({ out: o.out, maxPages: Math.max(1, o.walkPages), walkBudgetMs: 120_000, names: named.map((p) => p.name!), ids: sample }, log);
  }
  const loadAfter = loadavg();
  log('');
  log(markdownSummary(cost, serve));
  if (walks) {
    log('');
    log(walksMarkdown(walks.summary));
  }
  const overall = Object.values(cost.routes).reduce((n, r) => n + r.over_target, 0);
  const errors = Object.values(cost.routes).flatMap((r) => r.server_errors);
  log(`over target: ${overall} answer(s); 500s: ${errors.length}; loadavg before ${loadBefore}, after ${loadAfter}`);
  return {
    bench: 'api',
    out: path.resolve(o.out),
    db: o.db ?? null,
    requests_per_route: o.requests,
    seed: o.seed,
    target: { max_chunks: MAX_CHUNKS, max_bytes: MAX_BYTES },
    list_roots: cost.roots,
    route_budget_reached: cost.budgetRoutes,
    pools: cost.pools,
    routes: cost.routes,
    largest_list: cost.largest,
    serve_targets: cost.serveTargets,
    over_target_total: overall,
    resolver_500: errors,
    serve,
    participant_walks: walks,
    loadavg: { before: loadBefore, after_read_cost: loadMid, after: loadAfter },
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}
