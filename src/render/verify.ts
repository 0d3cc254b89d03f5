// `peppol-snapshot verify`: checks a snapshot directory on its own (docs/snapshot-format.md).
// - every manifest shard matches its sha256; every listed file exists with its sha256 and size, stored
//   with the encoding src/api/paths.ts storedEncoding gives its path (and its manifest entry says so);
// - every exact file validates against its route's response schema (src/api/schemas), every list
//   chunk's items against the item schema of the route's page resource;
// - every reference resolves: index entries -> chunks and inner nodes; an anomaly's event_refs ->
//   events of the event feed; a participant's seats -> seat files; a participant's stored events or
//   history list -> the first page in its record; snapshot.json, openapi.json present; the facet cube
//   counts the participant list and gives its default page's facets;
// - a record pack (src/api/participants/record.ts) holds the records of participants that hash to it, by
//   id in code-point order, each a valid detail and first pages; no participant has an object of its own
//   under v1/participants (its record and first pages are in its pack).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { matchRoute } from '../api/routes/match.js';
import { ROUTES } from '../api/routes/table.js';
import { RESOURCE_SCHEMAS } from '../api/schemas/index.js';
import { encodeSegment, storedEncoding } from '../api/paths.js';
import type { StoredAnomaly, StoredEvent } from '../api/events/feed.js';
import { verifyGramFiles } from './grams.js';
import { expandParticipant, gramCountTableOf, isGramCountTable, LIST_ROUTE, trigramOf, TRIGRAMS_FORMAT, TRIGRAMS_PATH, unregisteredGramOf, UNREGISTERED_GRAMS_FORMAT, UNREGISTERED_GRAMS_PATH, type StoredParticipant } from '../api/participants/plan.js';
import type { ChurnParticipantRow } from '../api/providers/views.js';
import { expandUptime, type UptimeTuple } from '../api/hosts/views.js';
import type { SortKey } from '../api/sort-keys.js';
import type { ParticipantView, UptimeBucket } from '../api/schemas/index.js';
import type { Chunk, IndexNode, ListRoot } from '../edge/list-format.js';
import { keyOfRoot, withKeys, type KeyOf } from '../edge/derived-keys.js';
import type { Manifest } from './manifest.js';
import { checkSite } from './site/index.js';
import { decodeStored, isGzip } from './stored.js';
import { LIMIT_DEFAULT } from '../api/params.js';
import { isParticipantRecord, isRecordPack, RECORD_PAGE, recordPackOf, recordPackPath, type RecordPack } from '../api/participants/record.js';
import { BULK_DIR, DATA_PACKAGE_FILE, SHA256SUMS_FILE } from '../bulk/index.js';
import { hashFile } from '../bulk/file.js';
import { CUBE_BINARY_FORMAT, CUBE_PATH, CUBE_STRIDE, cubeCounts, decodeCube, SCHEME_LABELS_PATH, vectorPath, vectorsOf, VECTORS_PREFIX } from '../api/participants/facets.js';

export interface VerifyProblem {
  path: string;
  message: string;
}

export interface VerifySummary {
  files: number;
  exact_files: number;
  lists: number;
  chunks: number;
  items: number;
  references: number;
  problems: VerifyProblem[];
  seconds: number;
}

const MAX_PROBLEMS = 100;

/** A path segment's value (src/api/paths.ts); a hashed segment (`~<hex>`) stays as it is. */
function decodeSegment(seg: string): string {
  return seg.startsWith('~') ? seg : decodeURIComponent(seg.replace(/_([0-9a-f]{2})/g, '%$1'));
}

/**
 * The URL path of an exact file (inverse of src/api/paths.ts encodeSegment; a hashed over-long
 * segment, `~<hex>`, stays as it is: it still matches its route's path pattern).
 */
export function urlPathOfExact(rel: string): string {
  const segs = rel.slice(0, -'.json'.length).split('/');
  return `/${segs.map(decodeSegment).join('/')}`;
}

function schemaOf(name: string): z.ZodType | null {
  return (RESOURCE_SCHEMAS as Record<string, z.ZodType>)[name] ?? null;
}

/**
 * Lists whose chunks store items in a compact or wrapped form (the renderer/composer contract of the
 * route's family): the API item a stored item stands for. Other lists store the API item itself.
 */
const STORED_ITEM_VIEWS: Record<string, (stored: unknown, key: SortKey, partition: string[]) => unknown> = {
  'events.list': (s) => (s as StoredEvent).e,
  'anomalies.list': (s) => (s as StoredAnomaly).a,
  'aps.churn_participants': (s) => (s as ChurnParticipantRow).p,
  'participants.list': (s) => expandParticipant(s as StoredParticipant),
  'hosts.uptime': (s, key, partition) => expandUptime(partition[1] as UptimeBucket['resolution'], partition[0]!, key, s as UptimeTuple),
};


/** The item schema of a page resource (`{ items: [...] }`), or null. */
function itemSchema(resource: string): z.ZodType | null {
  const s = schemaOf(resource);
  if (!(s instanceof z.ZodObject)) return null;
  const items = (s.shape as Record<string, z.ZodType>).items;
  return items instanceof z.ZodArray ? (items.element as z.ZodType) : null;
}

/** Where the record packs are (src/api/participants/record.ts recordPackPath). */
const RECORD_PACKS_PREFIX = recordPackPath(0).slice(0, recordPackPath(0).lastIndexOf('/') + 1);

/** The record's members, in the order the renderer writes them. */
const RECORD_MEMBERS = ['participant', 'history', 'events'] as const;

/**
 * Checks the record of participant `id` in the pack at `rel`: exactly its three members,
 * `participant` a ParticipantView of that id, each page null or a valid first page at default
 * parameters (1 to LIMIT_DEFAULT items; a next_cursor only on a full page). Returns the view when it
 * is valid.
 */
function checkRecord(rel: string, id: string, body: unknown, fail: (p: string, message: string) => void): ParticipantView | null {
  if (!isParticipantRecord(body)) {
    fail(rel, 'is not a participant record ({"participant", "history", "events"})');
    return null;
  }
  const keys = Object.keys(body);
  if (keys.join() !== RECORD_MEMBERS.join()) fail(rel, `record members are ${keys.join(', ')}, expected ${RECORD_MEMBERS.join(', ')}`);
  const issue = (r: { error: z.ZodError }): string => `${r.error.issues[0]?.message ?? ''} at ${r.error.issues[0]?.path.join('.') ?? ''}`;
  let view: ParticipantView | null = null;
  const v = RESOURCE_SCHEMAS.ParticipantView.safeParse(body.participant);
  if (!v.success) fail(rel, `participant does not match ParticipantView: ${issue(v)}`);
  else {
    view = v.data;
    if (view.id !== id) fail(rel, `holds participant ${view.id} as the record of ${id}`);
  }
  for (const [member, resource] of [['history', 'ParticipantHistoryPage'], ['events', 'ParticipantEventPage']] as const) {
    const page = body[member];
    if (page === null) continue;
    const r = RESOURCE_SCHEMAS[resource].safeParse(page);
    if (!r.success) fail(rel, `${member} does not match ${resource}: ${issue(r)}`);
    else if (page.items.length === 0) fail(rel, `${member} is an empty page (an empty list is null)`);
    else if (page.items.length > LIMIT_DEFAULT || (page.next_cursor !== null && page.items.length !== LIMIT_DEFAULT)) fail(rel, `${member} holds ${page.items.length} items${page.next_cursor !== null ? ' and a next_cursor' : ''}: not a first page at limit ${LIMIT_DEFAULT}`);
  }
  return view;
}

export function verifySnapshot(outDir: string): VerifySummary {
  const t0 = performance.now();
  const problems: VerifyProblem[] = [];
  const fail = (p: string, message: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push({ path: p, message });
  };
  const sum: VerifySummary = { files: 0, exact_files: 0, lists: 0, chunks: 0, items: 0, references: 0, problems, seconds: 0 };
  const read = (rel: string): Buffer | null => {
    try {
      return fs.readFileSync(path.join(outDir, rel));
    } catch {
      return null;
    }
  };
  const manifestBytes = read('manifest.json');
  if (!manifestBytes) {
    fail('manifest.json', 'missing');
    return { ...sum, seconds: (performance.now() - t0) / 1000 };
  }
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as Manifest;
  const listed = new Set<string>();
  const bulkEntries = new Map<string, { sha256: string; bytes: number }>();
  const roots: string[] = [];
  const vectors: string[] = [];
  const exact: string[] = [];
  const packs: string[] = [];
  for (const shard of manifest.shards) {
    const body = read(shard.path);
    if (!body) {
      fail(shard.path, 'manifest shard missing');
      continue;
    }
    if (createHash('sha256').update(body).digest('hex') !== shard.sha256) fail(shard.path, 'manifest shard sha256 mismatch');
    for (const line of body.toString('utf8').split('\n')) {
      if (line === '') continue;
      const e = JSON.parse(line) as { path: string; sha256: string; bytes: number; content_encoding?: string };
      sum.files++;
      listed.add(e.path);
      if (e.path.startsWith(`${BULK_DIR}/`)) {
        // A bulk file may be larger than a Buffer: hashed in blocks, and checked against its data package below.
        bulkEntries.set(e.path, e);
        const h = fs.existsSync(path.join(outDir, e.path)) ? hashFile(path.join(outDir, e.path)) : null;
        if (h === null) fail(e.path, 'listed in the manifest but missing');
        else if (h.bytes !== e.bytes || h.sha256 !== e.sha256) fail(e.path, 'sha256 or size differs from the manifest');
        else if (e.content_encoding !== undefined) fail(e.path, `content_encoding is ${e.content_encoding}, expected absent`);
        continue;
      }
      const f = read(e.path);
      if (!f) fail(e.path, 'listed in the manifest but missing');
      else if (f.length !== e.bytes || createHash('sha256').update(f).digest('hex') !== e.sha256) fail(e.path, 'sha256 or size differs from the manifest');
      else {
        const want = storedEncoding(e.path);
        if ((e.content_encoding ?? null) !== want) fail(e.path, `content_encoding is ${e.content_encoding ?? 'absent'}, expected ${want ?? 'absent'}`);
        else if ((want === 'gzip') !== isGzip(f)) fail(e.path, want === 'gzip' ? 'not stored gzip-encoded' : 'stored gzip-encoded, expected as it is');
      }
      if (e.path === CUBE_PATH) continue; // not a list: checked below
      if (e.path.startsWith(VECTORS_PREFIX)) {
        vectors.push(e.path);
        continue;
      }
      if (e.path.startsWith(RECORD_PACKS_PREFIX)) packs.push(e.path);
      else if (e.path.startsWith('i/')) roots.push(e.path);
      else if (e.path.startsWith('v1/') && e.path.endsWith('.json')) exact.push(e.path);
    }
  }
  if (sum.files !== manifest.files) fail('manifest.json', `lists ${manifest.files} files, shards hold ${sum.files}`);
  for (const need of ['snapshot.json', 'openapi.json', '.well-known/api-catalog']) if (!listed.has(need)) fail(need, 'missing from the manifest');
  checkSite(listed, read, fail);
  sum.references += verifyBulk(bulkEntries, (rel) => read(rel), fail);
  if (listed.has('v1/participants.json') && !listed.has(CUBE_PATH)) fail(CUBE_PATH, 'missing from the manifest (the participant list has no facet cube)');

  const eventIds = new Set<string>();
  const anomalyRefs: Array<{ path: string; ids: string[] }> = [];
  const seatRefs: Array<{ path: string; seat: string }> = [];
  const json = (rel: string): unknown => JSON.parse(decodeStored(read(rel)!).toString('utf8'));

  for (const rel of exact) {
    sum.exact_files++;
    const m = matchRoute(urlPathOfExact(rel));
    if (!m) {
      fail(rel, 'no route has this path');
      continue;
    }
    const body = json(rel);
    // A participant's record and first pages are in its record pack: a file of their own would never be read.
    if (m.route.id === 'participants.detail' || m.route.id === 'participants.events' || m.route.id === 'participants.history') {
      fail(rel, `a participant's record and first pages are in its record pack, not a file of their own`);
      continue;
    }
    const schema = schemaOf(m.route.response);
    const r = schema?.safeParse(body);
    if (r && !r.success) fail(rel, `does not match ${m.route.response}: ${r.error.issues[0]?.message ?? ''} at ${r.error.issues[0]?.path.join('.') ?? ''}`);
    if (m.route.id === 'anomalies.detail') anomalyRefs.push({ path: rel, ids: (body as { event_refs: string[] }).event_refs });
  }

  // The record packs: each record's participant hashes to its pack, in id order, and is valid.
  /** The ids whose path segment is a hash (too long to keep), by segment. */
  const hashedIds = new Map<string, string>();
  for (const rel of packs) {
    sum.exact_files++;
    const body = json(rel);
    if (!isRecordPack(body)) {
      fail(rel, 'is not a record pack');
      continue;
    }
    let prev: string | null = null;
    for (const [id, record] of Object.entries(body.records)) {
      if (recordPackPath(recordPackOf(id)) !== rel) fail(rel, `holds the record of ${id}, whose pack is ${recordPackPath(recordPackOf(id))}`);
      if (prev !== null && !(prev < id)) fail(rel, `records out of order at ${id}`);
      prev = id;
      const seg = encodeSegment(id);
      if (seg.startsWith('~')) hashedIds.set(seg, id);
      const view = checkRecord(rel, id, record, fail);
      for (const s of view?.seats ?? []) seatRefs.push({ path: rel, seat: s.seat_id });
    }
  }
  /** A participant's record, from its pack (read once while the lists of one pack's participants follow). */
  let lastPack: { rel: string; body: RecordPack | null } | null = null;
  const recordOf = (id: string): unknown => {
    const rel = recordPackPath(recordPackOf(id));
    if (lastPack?.rel !== rel) {
      const body = listed.has(rel) ? json(rel) : null;
      lastPack = { rel, body: isRecordPack(body) ? body : null };
    }
    return lastPack.body !== null && Object.hasOwn(lastPack.body.records, id) ? lastPack.body.records[id] : null;
  };

  let hostsBySegment: Map<string, string> | null = null;
  const hostOfSegment = (seg: string): string => {
    hostsBySegment ??= new Map(((json('v1/hosts.json') as { items: Array<{ hostname: string }> }).items ?? []).map((h) => [encodeSegment(h.hostname), h.hostname]));
    return hostsBySegment.get(seg) ?? seg;
  };

  /** The size of each trigram list, by trigram (their table is checked against them below). */
  const trigramRoots = new Map<string, number>();
  const unregisteredRoots = new Map<string, number>();
  for (const rootPath of roots) {
    sum.lists++;
    const segs = rootPath.slice(0, -'.json'.length).split('/');
    const routeId = decodeSegment(segs[1]!);
    const partition = segs[2] === '_all' && segs.length === 3 ? [] : segs.slice(2).map(decodeSegment);
    // A host's uptime items take the hostname from the partition: a hashed one is found among the hosts.
    if (routeId === 'hosts.uptime' && partition[0]?.startsWith('~')) partition[0] = hostOfSegment(partition[0]);
    // A participant's stored events or history are read only after the first page in its record:
    // without that page (no record, or a null page) the shim answers 404 or the empty page, so the list
    // would never be served.
    if ((routeId === 'participants.events' || routeId === 'participants.history') && segs.length === 3) {
      sum.references++;
      const id = hashedIds.get(segs[2]!) ?? decodeSegment(segs[2]!);
      const member = RECORD_PAGE[routeId];
      const body = recordOf(id);
      if (body === null) fail(rootPath, `belongs to a participant without a record (${id} in ${recordPackPath(recordPackOf(id))})`);
      else if (!isParticipantRecord(body) || body[member] === null) fail(rootPath, `has no first page in the record of ${id} (${member} is null)`);
    }
    const route = (ROUTES as Record<string, { response: string }>)[routeId];
    const items = route ? itemSchema(route.response) : null;
    const view = STORED_ITEM_VIEWS[routeId] ?? ((s: unknown) => s);
    const root = json(rootPath) as ListRoot;
    const trigram = routeId === LIST_ROUTE ? trigramOf(partition) : null;
    if (trigram !== null) trigramRoots.set(trigram, root.count);
    const unregistered = routeId === LIST_ROUTE ? unregisteredGramOf(partition) : null;
    if (unregistered !== null) unregisteredRoots.set(unregistered, root.count);
    let keyOf: KeyOf | null = null;
    try {
      keyOf = keyOfRoot(root);
    } catch (err) {
      fail(rootPath, (err as Error).message);
      continue;
    }
    let count = 0;
    const checkItems = (at: string, c: Chunk): void =>
      c.items.forEach((stored, i) => {
        sum.items++;
        const it = view(stored, c.keys[i] as SortKey, partition);
        const r = items?.safeParse(it);
        if (r && !r.success) fail(at, `an item does not match ${route!.response} items: ${r.error.issues[0]?.message ?? ''} at ${r.error.issues[0]?.path.join('.') ?? ''}`);
        if (routeId === 'events.list') eventIds.add((it as { id: string }).id);
      });
    // A root's inline head is the list's first chunk (docs/snapshot-format.md, "Head").
    if (root.head) {
      if (root.head.items.length !== root.head.keys.length) fail(rootPath, `its head holds ${root.head.items.length} items and ${root.head.keys.length} keys`);
      count += root.head.items.length;
      checkItems(rootPath, root.head);
    }
    const visit = (entries: IndexNode['entries'], level: number): void => {
      for (const e of entries) {
        sum.references++;
        if (!listed.has(e.path)) {
          fail(rootPath, `references ${e.path}, which is not in the snapshot`);
          continue;
        }
        if (level > 0) visit((json(e.path) as IndexNode).entries, level - 1);
        else {
          sum.chunks++;
          const stored = json(e.path) as { keys?: SortKey[]; items: unknown[] };
          // A list@3 chunk stores no keys (docs/snapshot-format.md "Lists"); a list@1 or @2 chunk must.
          if ((stored.keys === undefined) !== (keyOf !== null)) fail(e.path, keyOf === null ? 'holds no keys' : `holds keys, though its list derives them (${root.key ?? ''})`);
          if (stored.keys === undefined && keyOf === null) {
            // Reported above; without keys its items cannot be checked against its entry.
            count += e.count;
            continue;
          }
          const c = withKeys(keyOf, stored);
          if (c.items.length !== e.count || c.keys.length !== e.count) fail(e.path, `holds ${c.items.length} items, the index says ${e.count}`);
          // The index entry's first and last keys are those of the chunk's first and last items.
          else if (e.count > 0 && (JSON.stringify(c.keys[0]) !== JSON.stringify(e.first) || JSON.stringify(c.keys[e.count - 1]) !== JSON.stringify(e.last))) fail(e.path, 'its first or last key differs from its index entry');
          count += c.items.length;
          checkItems(e.path, c);
        }
      }
    };
    visit(root.entries, root.level);
    if (count !== root.count) fail(rootPath, `index count ${root.count}, chunks hold ${count}`);
  }

  // The facet cube counts every participant of the list once, and gives the default page's facets.
  if (listed.has(CUBE_PATH) && listed.has('v1/participants.json')) {
    sum.references++;
    const cube = decodeCube(new Uint8Array(decodeStored(read(CUBE_PATH)!)));
    const page = json('v1/participants.json') as { meta?: { total_count: number; facets: unknown } };
    if (cube === null) fail(CUBE_PATH, `is not a ${CUBE_BINARY_FORMAT}`);
    else {
      const all = cubeCounts(cube, {});
      if (all.total !== page.meta?.total_count) fail(CUBE_PATH, `counts ${all.total} participants, the list ${page.meta?.total_count ?? 'none'}`);
      else if (JSON.stringify(all.buckets()) !== JSON.stringify(page.meta.facets)) fail(CUBE_PATH, "its facets differ from the default page's");
      // The facet vectors are the cube's sums per value: one for every value, each with its bytes.
      const want = new Map(vectorsOf(cube).map((v) => [vectorPath(v.dim, v.value), JSON.stringify(v.vector)]));
      for (const rel of vectors) {
        sum.references++;
        const have = want.get(rel);
        if (have === undefined) fail(rel, 'is the facet vector of no value of the cube');
        else if (JSON.stringify(json(rel)) !== have) fail(rel, "differs from the cube's sums for its value");
      }
      if (vectors.length !== want.size) fail(CUBE_PATH, `has ${want.size} facet values, the snapshot ${vectors.length} facet vectors`);
      if (!listed.has(SCHEME_LABELS_PATH)) fail(SCHEME_LABELS_PATH, 'missing from the manifest');
      else if (JSON.stringify(json(SCHEME_LABELS_PATH)) !== JSON.stringify(cube.labels.scheme)) fail(SCHEME_LABELS_PATH, "differs from the cube's scheme labels");
    }
  }

  // The trigram table names every trigram list with its size, and nothing else; the unregistered
  // name lists' table likewise.
  for (const [path, format, roots] of [
    [TRIGRAMS_PATH, TRIGRAMS_FORMAT, trigramRoots],
    [UNREGISTERED_GRAMS_PATH, UNREGISTERED_GRAMS_FORMAT, unregisteredRoots],
  ] as const) {
    if (listed.has(path)) {
      sum.references++;
      const table = json(path);
      if (!isGramCountTable(table, format)) fail(path, `is not a ${format}`);
      else if (JSON.stringify(table) !== JSON.stringify(gramCountTableOf(format, roots))) fail(path, `differs from the ${roots.size} lists' sizes`);
    } else if (listed.has('v1/participants.json')) fail(path, `missing from the manifest (the participant list has no ${format})`);
  }

  // The grams index of the name searches (src/render/grams.ts verifyGramFiles).
  if (listed.has('v1/participants.json') && listed.has(CUBE_PATH)) {
    const cube = decodeCube(new Uint8Array(decodeStored(read(CUBE_PATH)!)));
    if (cube !== null) sum.references += verifyGramFiles(listed, (rel) => new Uint8Array(decodeStored(read(rel) ?? Buffer.alloc(0))), cube.cells.length / CUBE_STRIDE, trigramRoots, fail);
  }

  if (eventIds.size > 0) {
    for (const a of anomalyRefs) for (const id of a.ids) {
      sum.references++;
      if (!eventIds.has(id)) fail(a.path, `event_refs names ${id}, which is not in the event feed`);
    }
  }
  for (const s of seatRefs) {
    sum.references++;
    if (!listed.has(`v1/seats/${encodeSegment(s.seat)}.json`)) fail(s.path, `names seat ${s.seat}, which has no seat file`);
  }
  sum.seconds = Math.round(performance.now() - t0) / 1000;
  return sum;
}

/**
 * Checks the bulk downloads (docs/bulk.md): every copy `bulk/<dir>/` has a datapackage.json whose every
 * resource is a file of the copy listed in the manifest with the resource's bytes and `sha256:` hash,
 * and a SHA256SUMS naming exactly the copy's other files with their hashes. Returns the references checked.
 */
function verifyBulk(entries: ReadonlyMap<string, { sha256: string; bytes: number }>, read: (rel: string) => Buffer | null, fail: (p: string, message: string) => void): number {
  let refs = 0;
  const dirs = new Set([...entries.keys()].map((p) => p.slice(0, p.lastIndexOf('/'))));
  for (const dir of [...dirs].sort()) {
    const pkgPath = `${dir}/${DATA_PACKAGE_FILE}`;
    const pkgBytes = entries.has(pkgPath) ? read(pkgPath) : null;
    if (pkgBytes === null) {
      fail(pkgPath, 'missing: every bulk copy has a datapackage.json');
      continue;
    }
    let pkg: unknown;
    try {
      pkg = JSON.parse(pkgBytes.toString('utf8'));
    } catch {
      fail(pkgPath, 'is not JSON');
      continue;
    }
    const resources = typeof pkg === 'object' && pkg !== null && 'resources' in pkg && Array.isArray(pkg.resources) ? (pkg.resources as unknown[]) : null;
    if (resources === null || resources.length === 0) {
      fail(pkgPath, 'has no resources');
      continue;
    }
    const described = new Set<string>([pkgPath, `${dir}/${SHA256SUMS_FILE}`]);
    for (const r of resources) {
      refs++;
      const res = r as { path?: unknown; bytes?: unknown; hash?: unknown };
      if (typeof res.path !== 'string') {
        fail(pkgPath, 'a resource has no path');
        continue;
      }
      const rel = `${dir}/${res.path}`;
      described.add(rel);
      const e = entries.get(rel);
      if (e === undefined) fail(pkgPath, `resource ${res.path} is not in the snapshot`);
      else if (res.bytes !== e.bytes || res.hash !== `sha256:${e.sha256}`) fail(pkgPath, `resource ${res.path}: bytes or hash differ from the file`);
    }
    for (const p of entries.keys()) if (p.startsWith(`${dir}/`) && !described.has(p)) fail(p, `is in no resource of ${pkgPath}`);
    const sums = entries.has(`${dir}/${SHA256SUMS_FILE}`) ? read(`${dir}/${SHA256SUMS_FILE}`) : null;
    if (sums === null) fail(`${dir}/${SHA256SUMS_FILE}`, 'missing');
    else {
      const lines = sums.toString('utf8').split('\n').filter((l) => l !== '');
      const want = [...described].filter((p) => p !== `${dir}/${SHA256SUMS_FILE}`).map((p) => `${entries.get(p)?.sha256 ?? '?'}  ${p.slice(dir.length + 1)}`).sort((a, b) => (a.slice(66) < b.slice(66) ? -1 : 1));
      refs += lines.length;
      if (lines.join('\n') !== want.join('\n')) fail(`${dir}/${SHA256SUMS_FILE}`, 'does not list the copy\'s files with their hashes');
    }
  }
  return refs;
}
