// The S3 target: any S3-compatible store (AWS S3, Cloudflare R2, MinIO, Ceph, ...) through
// @aws-sdk/client-s3. Credentials come only from the SDK's default chain (environment, shared
// profile, instance or container role), never from the configuration.
//
// The SDK's own retries are off (maxAttempts 1): every request is retried here, with the
// configured count and backoff, on 5xx, throttling (429, SlowDown), timeouts and connection errors,
// so the log and the summary can say what was retried. Other errors (access denied, no such bucket,
// missing credentials) fail at once with the store's message.
import fs from 'node:fs';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3Target as S3Config } from '../config/index.js';
import { retrying } from '../util/retry.js';
import type { ObjectMeta, PublishTarget, PutBody, TargetOptions, TargetStats } from './target.js';

/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

const RETRYABLE_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'InternalError',
  'ServiceUnavailable',
  'BandwidthLimitExceeded',
]);
const RETRYABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/** A failure the same request may survive a moment later. */
export function isRetryableS3(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const err = e as SdkErrorShape;
  const status = err.$metadata?.httpStatusCode;
  // 501 NotImplemented is an answer, not a failure: the store lacks the operation (copy, multi-delete).
  if (typeof status === 'number' && ((status >= 500 && status !== 501) || status === 429 || status === 408)) return true;
  if (err.$retryable) return true;
  if (typeof err.name === 'string' && RETRYABLE_NAMES.has(err.name)) return true;
  return typeof err.code === 'string' && RETRYABLE_CODES.has(err.code);
}

function isNotFound(e: unknown): boolean {
  const err = e as SdkErrorShape;
  return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404;
}

function isNotImplemented(e: unknown): boolean {
  const err = e as SdkErrorShape;
  return err.name === 'NotImplemented' || err.$metadata?.httpStatusCode === 501;
}

/** The SDK, loaded on first use: it costs every other command of the CLI 0.1 s to load. */
type Sdk = typeof import('@aws-sdk/client-s3');

export class S3Target implements PublishTarget {
  readonly stats: TargetStats = { retries: 0, requests: 0 };
  readonly name: string;
  private readonly client: S3Client;

  static async open(config: S3Config, opts: TargetOptions): Promise<S3Target> {
    return new S3Target(await import('@aws-sdk/client-s3'), config, opts);
  }
  /** Stores without DeleteObjects (e.g. Google Cloud Storage's XML API) get one DeleteObject per key. */
  private multiDelete = true;

  private constructor(
    private readonly sdk: Sdk,
    private readonly config: S3Config,
    private readonly opts: TargetOptions,
  ) {
    this.name = `s3://${config.bucket}/${config.prefix}`;
    const checksums = config.checksums === 'when_required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED';
    const clientConfig: S3ClientConfig = {
      region: config.region,
      forcePathStyle: config.force_path_style,
      maxAttempts: 1,
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
      requestHandler: { requestTimeout: opts.timeout_ms, connectionTimeout: opts.timeout_ms },
    };
    if (config.endpoint !== undefined) clientConfig.endpoint = config.endpoint;
    this.client = new sdk.S3Client(clientConfig);
  }

  private key(key: string): string {
    return this.config.prefix + key;
  }

  private retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return retrying(
      this.opts,
      isRetryableS3,
      () => {
        this.stats.requests++;
        return fn();
      },
      {
        onRetry: (attempt, error, delay) => {
          this.stats.retries++;
          this.opts.onRetry?.(what, attempt, error, delay);
        },
        giveUp: (error, attempts) => new Error(`${what}: still failing after ${attempts} attempts: ${describe(error)}`, { cause: error }),
      },
    ).catch((e: unknown) => {
      throw e instanceof Error && e.message.startsWith(what) ? e : new Error(`${what}: ${describe(e)}`, { cause: e });
    });
  }

  async get(key: string): Promise<Uint8Array | null> {
    const k = this.key(key);
    try {
      return await this.retry(`GET ${this.name}${key}`, async () => {
        const res = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.config.bucket, Key: k }));
        if (!res.Body) return new Uint8Array(0);
        return await res.Body.transformToByteArray();
      });
    } catch (e) {
      if (isNotFound((e as Error).cause ?? e)) return null;
      throw e;
    }
  }

  async put(key: string, body: PutBody, meta: ObjectMeta): Promise<void> {
    const k = this.key(key);
    await this.retry(`PUT ${this.name}${key}`, async () => {
      await this.client.send(
        new this.sdk.PutObjectCommand({
          Bucket: this.config.bucket,
          Key: k,
          // A file is opened anew for every attempt.
          Body: 'bytes' in body ? body.bytes : fs.createReadStream(body.file),
          ContentLength: 'bytes' in body ? body.bytes.length : body.size,
          ContentType: meta.contentType,
          CacheControl: meta.cacheControl,
          ...(meta.contentEncoding !== undefined ? { ContentEncoding: meta.contentEncoding } : {}),
        }),
      );
    });
  }

  /** Cleared when the store answers CopyObject with 501: the bytes are uploaded instead. */
  private serverCopy = true;

  async copy(from: string, key: string, meta: ObjectMeta): Promise<boolean> {
    if (!this.serverCopy) return false;
    try {
      await this.retry(`COPY ${this.name}${from} to ${key}`, async () => {
        await this.client.send(
          new this.sdk.CopyObjectCommand({
            Bucket: this.config.bucket,
            Key: this.key(key),
            // The header is a URL path: the key URL-encoded, its slashes kept.
            CopySource: `${this.config.bucket}/${encodeURIComponent(this.key(from)).replace(/%2F/g, '/')}`,
            MetadataDirective: 'REPLACE',
            ContentType: meta.contentType,
            CacheControl: meta.cacheControl,
            ...(meta.contentEncoding !== undefined ? { ContentEncoding: meta.contentEncoding } : {}),
          }),
        );
      });
      return true;
    } catch (e) {
      if (!isNotImplemented((e as Error).cause ?? e)) throw e;
      this.serverCopy = false;
      return false;
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      if (this.multiDelete) {
        try {
          await this.deleteBatch(batch);
          continue;
        } catch (e) {
          if (!isNotImplemented((e as Error).cause ?? e)) throw e;
          this.multiDelete = false;
        }
      }
      for (const key of batch) {
        await this.retry(`DELETE ${this.name}${key}`, async () => {
          try {
            await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.key(key) }));
          } catch (e) {
            if (!isNotFound(e)) throw e;
          }
        });
      }
    }
  }

  private async deleteBatch(batch: readonly string[]): Promise<void> {
    let todo = batch;
    await this.retry(`DELETE ${batch.length} objects in ${this.name}`, async () => {
      const res = await this.client.send(
        new this.sdk.DeleteObjectsCommand({ Bucket: this.config.bucket, Delete: { Objects: todo.map((k) => ({ Key: this.key(k) })), Quiet: true } }),
      );
      const errors = (res.Errors ?? []).filter((er) => er.Code !== 'NoSuchKey');
      if (errors.length === 0) return;
      // Keys the store could not delete this time are tried again (a per-key InternalError or
      // SlowDown); any other per-key error ends the publish with the store's words.
      const failed = new Set(errors.map((er) => er.Key));
      todo = todo.filter((k) => failed.has(this.key(k)));
      const first = errors[0]!;
      const retryable = errors.every((er) => er.Code !== undefined && RETRYABLE_NAMES.has(er.Code));
      throw Object.assign(new Error(`${errors.length} key(s) not deleted, e.g. ${first.Key}: ${first.Code} ${first.Message ?? ''}`.trim()), {
        $retryable: retryable ? {} : undefined,
      });
    });
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const status = (e as SdkErrorShape).$metadata?.httpStatusCode;
  const name = e.name && e.name !== 'Error' ? `${e.name}: ` : '';
  return `${name}${e.message || 'no message'}${status ? ` (HTTP ${status})` : ''}`;
}
