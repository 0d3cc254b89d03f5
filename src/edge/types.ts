// Interfaces of the edge shim (docs/edge.md). Edge-safe: type-only imports, no Node APIs.
import type { EdgeConfig } from '../config/index.js';

/** Reads a file of the snapshot. `path` is relative to the snapshot root, e.g. "manifest.json". */
export interface FileReader {
  /** The file's bytes, or null when it does not exist. */
  read(path: string): Promise<Uint8Array | null>;
  /**
   * Optional: at most the first `length` bytes of the file, or null when it does not exist. Lets
   * /health/db read `generated_at` without loading a manifest of millions of entries.
   */
  readPrefix?(path: string, length: number): Promise<Uint8Array | null>;
  /**
   * Optional, with `readRange`: the file's size and a strong validator of its content (quoted), or
   * null when it does not exist. Site files (the bulk downloads: hundreds of MB) are answered through
   * these two, never read whole into memory (src/edge/site.ts).
   */
  stat?(path: string): Promise<FileStat | null>;
  /**
   * Optional, with `stat`: `length` bytes of the file from `start` as a stream, or null when the file
   * does not exist or is no longer the version `etag` names (rewritten since `stat`).
   */
  readRange?(path: string, start: number, length: number, etag: string): Promise<ReadableStream<Uint8Array> | null>;
}

/** What `FileReader.stat` tells of a file. */
export interface FileStat {
  size: number;
  /** Strong validator (quoted), e.g. the store's ETag. */
  etag: string;
}

/** How long caches may keep an answer (docs/edge.md, "Caching"); `none` is never stored. */
export type CacheClass = 'mutable' | 'immutable' | 'meta' | 'none';

/** What the resolver answers for a request: the edge adds CORS, rate-limit, caching and access headers. */
export interface Answer {
  status: number;
  body: Uint8Array;
  contentType: string;
  cacheClass: CacheClass;
  /** Strong validator of the body, quoted (`"…"`); computed from the body when absent. */
  etag?: string;
  /** Extra headers (e.g. Link for pagination). The edge's own headers take precedence, Link is merged. */
  headers?: Record<string, string>;
}

/** Maps a request onto the snapshot's files (exact file or a page composed from chunks). */
export type Resolve = (req: { url: URL; routeId: string | null }, files: FileReader) => Promise<Answer>;

/** The `edge` section of publish.config.json. */
export type EdgePolicy = EdgeConfig;

export type Tier = 'network' | 'market';

/** One API key, held as the SHA-256 of the key (never in clear). */
export interface KeyEntry {
  /** Lower-case hex SHA-256 of the key's UTF-8 bytes. */
  sha256: string;
  /** Tiers the key opens in keyed mode; any valid key raises the rate limit. */
  tiers: Tier[];
  label?: string;
}

export interface KeyStore {
  /** The entry of a presented key (clear text), or null when the key is unknown. */
  lookup(key: string): Promise<KeyEntry | null>;
  readonly size: number;
}
