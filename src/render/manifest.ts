// manifest.json: every file of the snapshot with sha256, bytes, content type and cache class.
//
// At the peppol scale a snapshot holds millions of files, so the list is split into content-addressed
// shards (`m/<2 hex>/<38 hex>.ndjson`, one JSON entry per line, sorted by path) and manifest.json holds
// `generated_at` first (the edge's /health/db reads only the head of the file), totals and the shard
// list. Shard boundaries are content-defined (after a path whose hash is 0 modulo 1024, or at 8,192
// entries), so one changed file changes one shard and the publish diff reads only changed shards.
import { createHash } from 'node:crypto';
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

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Writes the shards and manifest.json through the sink; returns the manifest. */
export function writeManifest(sink: DirectorySink, generatedAt: string): Manifest {
  const shards: ManifestShard[] = [];
  let files = 0;
  let bytes = 0;
  let lines: string[] = [];
  let first = '';
  let last = '';
  const close = (): void => {
    if (lines.length === 0) return;
    const body = Buffer.from(`${lines.join('\n')}\n`);
    const sha = createHash('sha256').update(body).digest('hex');
    const path = `m/${sha.slice(0, 2)}/${sha.slice(2, 40)}.ndjson`;
    sink.write(path, body, 'immutable');
    shards.push({ path, sha256: sha, files: lines.length, first, last });
    lines = [];
  };
  for (const e of sink.manifest() as Iterable<ManifestEntry>) {
    if (lines.length === 0) first = e.path;
    lines.push(JSON.stringify({ path: e.path, sha256: e.sha256, bytes: e.bytes, content_type: e.content_type, cache_class: e.cache_class }));
    last = e.path;
    files++;
    bytes += e.bytes;
    if (lines.length >= SHARD_MAX || fnv1a(e.path) % 1024 === 0) close();
  }
  close();
  const manifest: Manifest = { generated_at: generatedAt, format: MANIFEST_FORMAT, files, bytes, shards };
  sink.write('manifest.json', Buffer.from(`${JSON.stringify(manifest)}\n`), 'meta');
  return manifest;
}
