// Publishing a built snapshot into an R2 bucket for the Worker tests (test/edge-worker.test.ts), with
// the real publish engine (src/publish) over an R2 binding: the Worker then reads the bucket exactly as
// `publish` fills it (keys under the prefix, the manifest last, publish's own state beside).
import { defaultConfig } from '../../src/config/index.js';
import { runPublish, type PublishSummary } from '../../src/publish/index.js';
import type { ObjectMeta, PublishTarget, PutBody, TargetStats } from '../../src/publish/target.js';

/** The part of an R2 bucket publish writes through (R2Bucket's get/put/delete). */
export interface BucketWriter {
  put(key: string, value: Uint8Array, meta?: ObjectMeta): Promise<unknown>;
  get(key: string): Promise<Uint8Array | null>;
  delete(keys: string[]): Promise<unknown>;
}

/** A publish target over an R2 binding (production publishes to R2 through its S3 API instead). */
class R2Target implements PublishTarget {
  readonly stats: TargetStats = { retries: 0, requests: 0 };
  constructor(
    private readonly bucket: BucketWriter,
    private readonly prefix: string,
  ) {}
  get name(): string {
    return `r2://SNAPSHOT/${this.prefix}`;
  }
  async get(key: string): Promise<Uint8Array | null> {
    this.stats.requests++;
    return this.bucket.get(this.prefix + key);
  }
  async put(key: string, body: PutBody, meta: ObjectMeta): Promise<void> {
    this.stats.requests++;
    if (!('bytes' in body)) throw new Error('R2Target: files are not streamed in the tests');
    await this.bucket.put(this.prefix + key, body.bytes, meta);
  }
  /** R2's binding has no copy: publish uploads the bytes instead (what it does with an S3 store that answers 501). */
  async copy(): Promise<boolean> {
    return false;
  }
  async delete(keys: readonly string[]): Promise<void> {
    this.stats.requests++;
    await this.bucket.delete(keys.map((k) => this.prefix + k));
  }
  async close(): Promise<void> {}
}

/**
 * Publishes the snapshot directory `outDir` into `bucket` under `prefix` ("" or ending in "/", as
 * SNAPSHOT_PREFIX) with `peppol-snapshot publish`'s engine.
 */
export async function fillBucket(bucket: BucketWriter, outDir: string, prefix: string): Promise<PublishSummary> {
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  const config = defaultConfig();
  return runPublish({ config: { ...config, publish: { ...config.publish, concurrency: 256 } }, outDir, target: new R2Target(bucket, p) });
}

/**
 * A Worker over its R2 binding `BUCKET`: POST writes a batch of objects, each
 * [u32 key length][key][u32 metadata length][metadata JSON][u32 value length][value] (metadata:
 * ObjectMeta, stored as R2 httpMetadata); GET ?key=K reads one (404 when absent); DELETE deletes the
 * keys of its JSON array body. Miniflare's bucket proxy costs about a millisecond per put from Node; a
 * snapshot of the small demo has some 29,000 files, so the tests write through this Worker, in batches,
 * into the same (real) R2 bucket the Worker under test reads.
 */
export const BUCKET_LOADER_SCRIPT = `export default {
  async fetch(request, env) {
    if (request.method === 'GET') {
      const obj = await env.BUCKET.get(new URL(request.url).searchParams.get('key'));
      return obj ? new Response(await obj.arrayBuffer()) : new Response('absent', { status: 404 });
    }
    if (request.method === 'DELETE') {
      await env.BUCKET.delete(await request.json());
      return new Response('deleted');
    }
    const buf = new Uint8Array(await request.arrayBuffer());
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const dec = new TextDecoder();
    const puts = [];
    for (let o = 0; o < buf.length; ) {
      const kl = view.getUint32(o); o += 4;
      const key = dec.decode(buf.subarray(o, o + kl)); o += kl;
      const ml = view.getUint32(o); o += 4;
      const meta = ml > 0 ? JSON.parse(dec.decode(buf.subarray(o, o + ml))) : null; o += ml;
      const n = view.getUint32(o); o += 4;
      const httpMetadata = meta ? { contentType: meta.contentType, cacheControl: meta.cacheControl, contentEncoding: meta.contentEncoding } : undefined;
      puts.push(env.BUCKET.put(key, buf.slice(o, o + n), httpMetadata ? { httpMetadata } : undefined)); o += n;
    }
    await Promise.all(puts);
    return new Response(String(puts.length));
  },
};`;

/**
 * A BucketWriter over the loader Worker: the puts of one event-loop turn (up to `maxBatchBytes`) go in
 * one request, sent by `send`; each put resolves when its batch is stored.
 */
export function batchingBucket(send: (method: 'POST' | 'GET' | 'DELETE', body: Uint8Array | string | null, key?: string) => Promise<Response>, maxBatchBytes = 8 * 1024 * 1024): BucketWriter {
  const enc = new TextEncoder();
  let pending: { key: Uint8Array; meta: Uint8Array; value: Uint8Array; done: () => void; fail: (e: unknown) => void }[] = [];
  let size = 0;
  let scheduled = false;
  const check = async (res: Response): Promise<Response> => {
    if (res.status !== 200 && res.status !== 404) throw new Error(`bucket loader: ${res.status} ${await res.text()}`);
    return res;
  };
  const flush = (): void => {
    scheduled = false;
    const batch = pending;
    pending = [];
    size = 0;
    if (batch.length === 0) return;
    const body = new Uint8Array(batch.reduce((n, b) => n + 12 + b.key.length + b.meta.length + b.value.length, 0));
    const view = new DataView(body.buffer);
    let o = 0;
    for (const part of batch.flatMap((b) => [b.key, b.meta, b.value])) {
      view.setUint32(o, part.length);
      body.set(part, o + 4);
      o += 4 + part.length;
    }
    send('POST', body).then(check).then(
      async (res) => {
        await res.text();
        batch.forEach((b) => b.done());
      },
      (e: unknown) => batch.forEach((b) => b.fail(e)),
    );
  };
  return {
    put(key, value, meta) {
      return new Promise<void>((done, fail) => {
        const k = enc.encode(key);
        const m = meta ? enc.encode(JSON.stringify(meta)) : new Uint8Array(0);
        pending.push({ key: k, meta: m, value, done, fail });
        size += 12 + k.length + m.length + value.length;
        if (size >= maxBatchBytes) flush();
        else if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    async get(key) {
      const res = await check(await send('GET', null, key));
      if (res.status === 404) {
        await res.text();
        return null;
      }
      return new Uint8Array(await res.arrayBuffer());
    },
    async delete(keys) {
      await (await check(await send('DELETE', JSON.stringify(keys)))).text();
    },
  };
}
