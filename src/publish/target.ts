// Where `publish` puts a snapshot (docs/publish.md): a directory or an S3-compatible bucket. A target
// stores objects by key (the snapshot-relative path) and knows nothing about manifests or retention;
// src/publish/index.ts decides what to write and delete, and in which order.
import type { PublishTarget as TargetConfig } from '../config/index.js';
import { DirectoryTarget } from './directory.js';
import { S3Target } from './s3.js';

export interface ObjectMeta {
  contentType: string;
  cacheControl: string;
  /** Set only for encoded bodies (gzip, br); never "identity", which would stop CDNs from compressing. */
  contentEncoding?: string;
}

/** A body in memory, or a file streamed from disk (large files). */
export type PutBody = { bytes: Uint8Array } | { file: string; size: number };

export interface TargetStats {
  /** Requests retried after a transient failure (5xx, throttling, timeouts, connection errors). */
  retries: number;
  requests: number;
}

export interface PublishTarget {
  /** Human name: the directory, or s3://bucket/prefix. */
  readonly name: string;
  readonly stats: TargetStats;
  /** The object's bytes, or null when there is none. */
  get(key: string): Promise<Uint8Array | null>;
  /** Writes an object whole (a reader sees the old or the new object, never a part). */
  put(key: string, body: PutBody, meta: ObjectMeta): Promise<void>;
  /**
   * Writes `key` as a copy of the object `from` holds, inside the store (S3 CopyObject: no bytes pass
   * through this machine), with `meta` as its headers. `from` must exist; it is left unchanged.
   * False, with nothing written, when the store cannot copy: the caller uploads the bytes instead.
   */
  copy(from: string, key: string, meta: ObjectMeta): Promise<boolean>;
  /** Deletes objects; keys that do not exist are not an error. */
  delete(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export interface TargetOptions {
  /** Retries of a transient failure, and the first backoff delay (doubling). */
  retries: number;
  retry_base_ms: number;
  /** Timeout of one request, in ms. */
  timeout_ms: number;
  /** Told about every retry (for the log). */
  onRetry?: (what: string, attempt: number, error: unknown, delayMs: number) => void;
}

export async function openTarget(config: TargetConfig, opts: TargetOptions): Promise<PublishTarget> {
  return config.type === 'directory' ? new DirectoryTarget(config.path) : S3Target.open(config, opts);
}
