// Reading snapshot manifests (src/render/manifest.ts writes them) for the publish diff: the local one
// in the snapshot directory and the one already in the target. A manifest's shards are
// content-addressed and sorted by path, so two manifests share every shard whose files did not change,
// and the entries of the shards they do not share are two sorted streams to merge.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MANIFEST_FORMAT, type Manifest, type ManifestShard } from '../render/manifest.js';
import type { CacheClass } from '../render/sink.js';

export const MANIFEST_PATH = 'manifest.json';
export const SHARD_CONTENT_TYPE = 'application/x-ndjson';

export interface Entry {
  path: string;
  sha256: string;
  bytes: number;
  content_type: string;
  cache_class: CacheClass;
  /** Optional: the body is stored encoded (e.g. gzip); publish sets Content-Encoding. */
  content_encoding?: string;
}

export interface LoadedManifest {
  manifest: Manifest;
  /** The bytes of manifest.json and their sha256 (the publish commit is recognised by it). */
  body: Uint8Array;
  sha256: string;
}

export class ManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestError';
  }
}

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

const dec = new TextDecoder();

/** Parses manifest.json; `where` names it in errors. */
export function parseManifest(body: Uint8Array, where: string): LoadedManifest {
  let m: Manifest;
  try {
    m = JSON.parse(dec.decode(body)) as Manifest;
  } catch (e) {
    throw new ManifestError(`${where}: not JSON (${(e as Error).message})`);
  }
  if (m === null || typeof m !== 'object' || m.format !== MANIFEST_FORMAT || !Array.isArray(m.shards)) {
    throw new ManifestError(`${where}: not a manifest of format ${MANIFEST_FORMAT}`);
  }
  return { manifest: m, body, sha256: sha256Hex(body) };
}

/** Parses a shard's bytes, checking them against the manifest's hash first. */
export function parseShard(body: Uint8Array, shard: ManifestShard, where: string): Entry[] {
  if (sha256Hex(body) !== shard.sha256) throw new ManifestError(`${where}: manifest shard ${shard.path} does not match its sha256`);
  const out: Entry[] = [];
  for (const line of dec.decode(body).split('\n')) if (line !== '') out.push(JSON.parse(line) as Entry);
  return out;
}

/** The local snapshot's manifest, or an error saying to build first. */
export function readLocalManifest(outDir: string): LoadedManifest {
  let body: Uint8Array;
  try {
    body = new Uint8Array(fs.readFileSync(path.join(outDir, MANIFEST_PATH)));
  } catch {
    throw new ManifestError(`${outDir} holds no snapshot (no ${MANIFEST_PATH}); run peppol-snapshot build first`);
  }
  return parseManifest(body, path.join(outDir, MANIFEST_PATH));
}

export function readLocalShard(outDir: string, shard: ManifestShard): Entry[] {
  const file = path.join(outDir, shard.path);
  let body: Uint8Array;
  try {
    body = new Uint8Array(fs.readFileSync(file));
  } catch {
    throw new ManifestError(`${file}: manifest shard missing; the snapshot is incomplete (run peppol-snapshot build)`);
  }
  return parseShard(body, shard, file);
}

/**
 * Entries of a manifest whose shards are in `shards` (their manifest order), read through `load`
 * up to `ahead` shards in advance; yields entries in path order.
 */
export async function* shardEntries(shards: readonly ManifestShard[], load: (shard: ManifestShard) => Promise<Entry[]>, ahead: number): AsyncGenerator<Entry> {
  const queue: Promise<Entry[]>[] = [];
  let next = 0;
  const fill = () => {
    while (queue.length < ahead && next < shards.length) {
      const p = load(shards[next++]!);
      p.catch(() => {}); // awaited in order below; avoid an unhandled rejection while queued
      queue.push(p);
    }
  };
  fill();
  while (queue.length > 0) {
    const entries = await queue.shift()!;
    fill();
    yield* entries;
  }
}

/** Finds the entries of `paths` (sorted) in a manifest, reading only the shards whose range holds one. */
export async function lookupEntries(shards: readonly ManifestShard[], paths: readonly string[], load: (shard: ManifestShard) => Promise<Entry[]>): Promise<Map<string, Entry>> {
  const found = new Map<string, Entry>();
  let s = 0;
  let i = 0;
  while (i < paths.length && s < shards.length) {
    const p = paths[i]!;
    const shard = shards[s]!;
    if (p > shard.last) {
      s++;
      continue;
    }
    if (p < shard.first) {
      i++;
      continue;
    }
    const byPath = new Map((await load(shard)).map((e) => [e.path, e]));
    while (i < paths.length && paths[i]! <= shard.last) {
      const e = byPath.get(paths[i]!);
      if (e) found.set(e.path, e);
      i++;
    }
    s++;
  }
  return found;
}
