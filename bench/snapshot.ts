// `npm run bench -- snapshot --out DIR`: a built snapshot's objects and bytes by kind, from the state
// file beside it (src/render/state.ts: every file with its render unit; the kept lists with theirs).
// A content-addressed file held by several units is counted once, under the first kind met in path order.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { UPTIME_ROUTE } from '../src/api/hosts/views.js';
import { ID_INDEX_PARTITION, LIST_ROUTE, ORDERED_POSTINGS, postingPartition, POSTING_DIMENSIONS, TRIGRAM_ORDERS, trigramPartition } from '../src/api/participants/plan.js';
import { listRootPath, listRootPrefix } from '../src/api/paths.js';
import { statePath } from '../src/render/state.js';
import { RECORD_PACK_UNIT_BASE } from '../src/render/context.js';

export interface SnapshotBytes {
  out: string;
  participants: number | null;
  kinds: Array<{ kind: string; files: number; bytes: number }>;
  files: number;
  bytes: number;
}

/** The kind of a kept list, from its root path (the partitions of src/api/participants/plan.ts). */
function kindOfRoot(root: string): string {
  const under = (route: string, partitionPrefix: readonly string[] = []): boolean => root.startsWith(listRootPrefix(route, partitionPrefix));
  if (under(UPTIME_ROUTE)) return 'uptime lists';
  if (under(LIST_ROUTE, trigramPartition('').slice(0, -1))) return 'name trigram lists';
  if (TRIGRAM_ORDERS.some((sort) => under(LIST_ROUTE, trigramPartition('', sort).slice(0, -1)))) return 'name trigram lists (name and country orders)';
  if (root === listRootPath(LIST_ROUTE, ID_INDEX_PARTITION)) return 'identifier index';
  if (POSTING_DIMENSIONS.some((dim) => under(LIST_ROUTE, postingPartition(dim, '').slice(0, -1)))) return 'posting lists';
  if (POSTING_DIMENSIONS.some((dim) => ORDERED_POSTINGS[dim].some((sort) => under(LIST_ROUTE, postingPartition(dim, '', sort).slice(0, -1))))) return 'posting lists (name and country orders)';
  if (under(LIST_ROUTE)) return 'main participant lists';
  return 'other kept lists';
}

export function snapshotBytes(outDir: string): SnapshotBytes {
  const db = new Database(statePath(outDir), { readonly: true, fileMustExist: true });
  try {
    const lists = new Map(db.prepare('SELECT unit, root FROM lists').raw().all() as Array<[number, string]>);
    const kinds = new Map<string, { files: number; bytes: number }>();
    let last = '';
    for (const [path, unit, bytes] of db.prepare('SELECT path, unit, bytes FROM files ORDER BY path, unit').raw().iterate() as IterableIterator<[string, number, number]>) {
      if (path === last) continue;
      last = path;
      const kind = unit >= RECORD_PACK_UNIT_BASE ? 'record packs' : unit > 0 ? "participants' event and history lists" : unit === 0 ? 'everything else (unit 0)' : kindOfRoot(lists.get(unit) ?? '');
      const k = kinds.get(kind) ?? { files: 0, bytes: 0 };
      k.files++;
      k.bytes += bytes;
      kinds.set(kind, k);
    }
    const all = [...kinds].map(([kind, k]) => ({ kind, ...k })).sort((a, b) => b.bytes - a.bytes);
    // The participants: the participant list's total (its first page, an answer stored as it is).
    let participants: number | null = null;
    try {
      participants = (JSON.parse(fs.readFileSync(path.join(outDir, 'v1', 'participants.json'), 'utf8')) as { meta: { total_count: number } }).meta.total_count;
    } catch {
      // no participant list
    }
    return { out: outDir, participants, kinds: all, files: all.reduce((n, k) => n + k.files, 0), bytes: all.reduce((n, k) => n + k.bytes, 0) };
  } finally {
    db.close();
  }
}
