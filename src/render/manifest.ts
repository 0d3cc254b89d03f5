// manifest.json: every file of the snapshot with sha256, bytes, content type and cache class (and
// content_encoding for a file stored encoded: src/api/paths.ts storedEncoding; sha256 and bytes are of
// the stored bytes).
//
// At the peppol scale a snapshot holds millions of files, so the list is split into content-addressed
// shards (`m/<2 hex>/<38 hex>.ndjson`, one JSON entry per line, sorted by path) and manifest.json holds
// `generated_at` first (the edge's /health/db reads only the head of the file), totals and the shard
// list. Shard boundaries are content-defined (after a path whose hash is 0 modulo shardModulus, or at
// 8,192 entries), so one changed file changes one shard and the publish diff reads only changed shards.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { storedEncoding } from '../api/paths.js';
import { fnv1a } from '../api/fnv1a.js';
import type { DirectorySink, ManifestEntry } from './sink.js';

export const MANIFEST_FORMAT = 'peppol-snapshot/manifest@1';

export interface ManifestShard {
  path: string;
  sha256: string;
  files: number;
  first: string;
  last: string;
}

export interface Manifest {
  generated_at: string;
  format: typeof MANIFEST_FORMAT;
  files: number;
  bytes: number;
  shards: ManifestShard[];
}

const SHARD_MAX = 8192;

/**
 * A shard ends after a path whose hash is 0 modulo this (so it holds about this many entries, at most
 * SHARD_MAX). Content-addressed chunks `c/` and list roots `i/` change all over their range in every
 * cycle (new head chunks have random names; the retired ones are anywhere), so every shard of theirs is
 * rewritten whatever its size: there, shards as large as SHARD_MAX allows mean fewer objects written
 * for the same bytes (docs/benchmarks.md, "The sweep hour again"). Elsewhere a cycle
 * changes a few files here and there (participant records, host pages), and small shards keep those
 * writes small.
 */
export function shardModulus(path: string): number {
  return path.startsWith('c/') || path.startsWith('i/') ? SHARD_MAX : 1024;
}

/** Whether a shard ends after `path`, its `files`-th entry (content-defined, or full). */
function endsShard(path: string, files: number): boolean {
  return files >= SHARD_MAX || fnv1a(path) % shardModulus(path) === 0;
}

/** An entry's line in a shard. */
function manifestLine(e: ManifestEntry): string {
  const encoding = storedEncoding(e.path);
  return JSON.stringify({ path: e.path, sha256: e.sha256, bytes: e.bytes, content_type: e.content_type, cache_class: e.cache_class, ...(encoding === null ? {} : { content_encoding: encoding }) });
}

const LINE_HEAD = '{"path":"';
const BYTES_KEY = '"bytes":';

/**
 * The path and bytes of a shard's line as manifestLine writes it. Paths hold no character that JSON
 * escapes (src/api/paths.ts encodes every segment), so the path is the text between the quotes; a line
 * that is not so is parsed.
 */
function lineEntry(line: string): { path: string; bytes: number } {
  const end = line.indexOf('"', LINE_HEAD.length);
  const at = line.indexOf(BYTES_KEY, end);
  const path = line.slice(LINE_HEAD.length, end);
  const bytes = at < 0 ? NaN : Number.parseInt(line.slice(at + BYTES_KEY.length, line.indexOf(',', at)), 10);
  if (!line.startsWith(LINE_HEAD) || path.includes('\\') || !Number.isSafeInteger(bytes)) {
    // JSON.parse of a shard line this module wrote: the entry's shape.
    const e = JSON.parse(line) as ManifestEntry;
    return { path: e.path, bytes: e.bytes };
  }
  return { path, bytes };
}

/** Cuts a path-ordered stream of entries into shards and writes each (content-addressed). */
class ShardWriter {
  readonly shards: ManifestShard[] = [];
  /** Bytes of the files each shard lists, by shard path. */
  readonly shardBytes = new Map<string, number>();
  private lines: string[] = [];
  private first = '';
  private last = '';
  private bytes = 0;

  constructor(private readonly sink: DirectorySink) {}

  get pending(): boolean {
    return this.lines.length > 0;
  }

  add(e: ManifestEntry): void {
    this.addLine(e.path, manifestLine(e), e.bytes);
  }

  /** Adds an entry as its line (manifestLine) of an earlier shard, with the bytes it names. */
  addLine(path: string, line: string, bytes: number): void {
    if (this.lines.length === 0) this.first = path;
    this.lines.push(line);
    this.last = path;
    this.bytes += bytes;
    // A shard's end depends on its own entries only (never on the entry after it).
    if (endsShard(path, this.lines.length)) this.close();
  }

  /** Takes over a shard of the earlier manifest as it is. */
  keep(shard: ManifestShard, bytes: number): void {
    this.shards.push(shard);
    this.shardBytes.set(shard.path, bytes);
  }

  close(): void {
    if (this.lines.length === 0) return;
    const body = Buffer.from(`${this.lines.join('\n')}\n`);
    const sha = createHash('sha256').update(body).digest('hex');
    const path = `m/${sha.slice(0, 2)}/${sha.slice(2, 40)}.ndjson`;
    this.sink.write(path, body, 'immutable');
    this.shards.push({ path, sha256: sha, files: this.lines.length, first: this.first, last: this.last });
    this.shardBytes.set(path, this.bytes);
    this.lines = [];
    this.bytes = 0;
  }

  /** Writes manifest.json; returns the manifest and the bytes of each shard's files. */
  finish(generatedAt: string): { manifest: Manifest; shardBytes: Map<string, number> } {
    this.close();
    let files = 0;
    let bytes = 0;
    for (const s of this.shards) {
      files += s.files;
      bytes += this.shardBytes.get(s.path)!;
    }
    const manifest: Manifest = { generated_at: generatedAt, format: MANIFEST_FORMAT, files, bytes, shards: this.shards };
    this.sink.write('manifest.json', Buffer.from(`${JSON.stringify(manifest)}\n`), 'meta');
    return { manifest, shardBytes: this.shardBytes };
  }
}

/** Writes the shards and manifest.json through the sink from every entry; returns the manifest. */
export function writeManifest(sink: DirectorySink, generatedAt: string): { manifest: Manifest; shardBytes: Map<string, number> } {
  const w = new ShardWriter(sink);
  for (const e of sink.manifest()) w.add(e);
  return w.finish(generatedAt);
}

/**
 * Writes the manifest of an incremental build from the earlier one: a shard of the earlier manifest
 * whose path range holds no touched path (`temp.touched` of the sink's store: files put with another
 * hash, new files, and the files this build removes) is kept as it is; the others are cut again,
 * continuing into the next shards until a cut meets an earlier one (shard ends are content-defined).
 * A shard cut again is read from its earlier file: its lines stay as they are, and only the touched
 * paths in its range are looked up in the `files` table (a shard whose file is missing or not the
 * bytes the manifest names is read from `files` whole). The result equals writeManifest's.
 * `earlierBytes`: bytes of each earlier shard's files (the state's `shards`); null when one is unknown
 * (then write it whole).
 */
export function patchManifest(
  sink: DirectorySink,
  db: Database.Database,
  generatedAt: string,
  earlier: Manifest,
  earlierBytes: ReadonlyMap<string, number>,
): { manifest: Manifest; shardBytes: Map<string, number>; shardsCut: number; shardsRead: number } | null {
  if (earlier.shards.some((s) => !earlierBytes.has(s.path))) return null;
  db.exec('INSERT OR IGNORE INTO temp.touched (path) SELECT path FROM temp.retired r WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.path = r.path)');
  const touched = db.prepare('SELECT 1 FROM temp.touched WHERE path > ? AND path <= ? LIMIT 1').pluck();
  // A path in several units (a content-addressed file) has the same row in each.
  const range = db.prepare('SELECT path, sha256, bytes, content_type, cache_class FROM files WHERE path > ? AND path <= ? GROUP BY path ORDER BY path');
  const touchedIn = db.prepare(
    `SELECT t.path AS path, f.sha256 AS sha256, f.bytes AS bytes, f.content_type AS content_type, f.cache_class AS cache_class
     FROM temp.touched t LEFT JOIN files f ON f.path = t.path WHERE t.path > ? AND t.path <= ? GROUP BY t.path ORDER BY t.path`,
  );
  const tailTouched = db.prepare('SELECT 1 FROM temp.touched WHERE path > ? LIMIT 1').pluck();
  const tail = db.prepare('SELECT path, sha256, bytes, content_type, cache_class FROM files WHERE path > ? GROUP BY path ORDER BY path');
  const w = new ShardWriter(sink);
  let cut = 0;
  let read = 0;
  let lo = ''; // paths are never empty
  const lastShard = earlier.shards[earlier.shards.length - 1];
  // The earlier manifest's last shard may end where the paths ended rather than at a content-defined
  // end: then paths added after it belong in it, and it is cut again like a shard with a change.
  const openEnd = lastShard !== undefined && !endsShard(lastShard.last, lastShard.files) && tailTouched.get(lastShard.last) !== undefined;
  for (const s of earlier.shards) {
    if (!w.pending && !(s === lastShard && openEnd) && touched.get(lo, s.last) === undefined) w.keep(s, earlierBytes.get(s.path)!);
    else {
      cut++;
      const lines = earlierLines(sink.outDir, s);
      if (lines === null) for (const e of range.iterate(lo, s.last) as IterableIterator<ManifestEntry>) w.add(e);
      else {
        read++;
        // The touched paths of the range: an entry now (sha256 set) or gone (null), merged into the lines.
        const changes = touchedIn.all(lo, s.last) as TouchedRow[];
        let c = 0;
        const put = (ch: TouchedRow): void => {
          if (ch.sha256 !== null) w.add(ch as ManifestEntry); // a row of files: every column set
        };
        for (const line of lines) {
          const e = lineEntry(line);
          for (; c < changes.length && changes[c]!.path < e.path; c++) put(changes[c]!);
          if (c < changes.length && changes[c]!.path === e.path) put(changes[c++]!);
          else w.addLine(e.path, line, e.bytes);
        }
        for (; c < changes.length; c++) put(changes[c]!);
      }
    }
    lo = s.last;
  }
  if (w.pending || tailTouched.get(lo) !== undefined) for (const e of tail.iterate(lo) as IterableIterator<ManifestEntry>) w.add(e);
  return { ...w.finish(generatedAt), shardsCut: cut, shardsRead: read };
}

/** A touched path with its entry now (the LEFT JOIN's columns are null for a file gone). */
type TouchedRow = { path: string } & { [K in Exclude<keyof ManifestEntry, 'path'>]: ManifestEntry[K] | null };

/** The lines of an earlier shard, from its file; null when the file is missing or not the one the manifest names. */
function earlierLines(outDir: string, shard: ManifestShard): string[] | null {
  let body: Buffer;
  try {
    body = fs.readFileSync(path.join(outDir, shard.path));
  } catch {
    return null;
  }
  if (createHash('sha256').update(body).digest('hex') !== shard.sha256) return null;
  const lines = body.toString('utf8').split('\n');
  if (lines.pop() !== '' || lines.length !== shard.files) return null;
  return lines;
}
