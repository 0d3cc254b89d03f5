// Putting a built snapshot into an R2 bucket for the Worker tests (test/edge-worker.test.ts).
//
// fillBucket is THE one way the tests publish a snapshot into a bucket: when `peppol-snapshot publish`
// lands, its body becomes the publish engine, with the same arguments.
import fs from 'node:fs';
import path from 'node:path';

/** The part of an R2 bucket a snapshot is written through (R2Bucket.put's shape). */
export interface BucketWriter {
  put(key: string, value: Uint8Array): Promise<unknown>;
}

/** Puts in flight at once. */
const CONCURRENCY = 256;

/**
 * Puts every file of the snapshot directory `outDir` into `bucket`, under `prefix` ("" or ending in
 * "/", as SNAPSHOT_PREFIX), keyed by its path relative to `outDir` with "/" separators.
 */
export async function fillBucket(bucket: BucketWriter, outDir: string, prefix: string): Promise<{ files: number; bytes: number }> {
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  const files = (fs.readdirSync(outDir, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => fs.statSync(path.join(outDir, f)).isFile());
  let next = 0;
  let bytes = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const rel = files[next++]!;
      const body = new Uint8Array(fs.readFileSync(path.join(outDir, rel)));
      bytes += body.length;
      await bucket.put(p + rel.split(path.sep).join('/'), body);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, files.length) }, worker));
  return { files: files.length, bytes };
}

/**
 * A Worker that writes batches of objects into its R2 binding `BUCKET`: the body of a POST is a
 * sequence of [u32 key length][key, UTF-8][u32 value length][value]. Miniflare's bucket proxy costs
 * about a millisecond per put from Node; a snapshot of the small demo has some 29,000 files, so the
 * tests write through this Worker, in batches, into the same (real) R2 bucket the Worker under test reads.
 */
export const BUCKET_LOADER_SCRIPT = `export default {
  async fetch(request, env) {
    const buf = new Uint8Array(await request.arrayBuffer());
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const dec = new TextDecoder();
    const puts = [];
    for (let o = 0; o < buf.length; ) {
      const kl = view.getUint32(o); o += 4;
      const key = dec.decode(buf.subarray(o, o + kl)); o += kl;
      const n = view.getUint32(o); o += 4;
      puts.push(env.BUCKET.put(key, buf.slice(o, o + n))); o += n;
    }
    await Promise.all(puts);
    return new Response(String(puts.length));
  },
};`;

/**
 * A BucketWriter over the loader Worker: the puts of one event-loop turn (up to `maxBatchBytes`) go in
 * one request, sent by `post`; each put resolves when its batch is stored.
 */
export function batchingBucket(post: (body: Uint8Array) => Promise<void>, maxBatchBytes = 8 * 1024 * 1024): BucketWriter {
  const enc = new TextEncoder();
  let pending: { key: Uint8Array; value: Uint8Array; done: () => void; fail: (e: unknown) => void }[] = [];
  let size = 0;
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch = pending;
    pending = [];
    size = 0;
    if (batch.length === 0) return;
    const body = new Uint8Array(batch.reduce((n, b) => n + 8 + b.key.length + b.value.length, 0));
    const view = new DataView(body.buffer);
    let o = 0;
    for (const b of batch) {
      view.setUint32(o, b.key.length);
      body.set(b.key, o + 4);
      o += 4 + b.key.length;
      view.setUint32(o, b.value.length);
      body.set(b.value, o + 4);
      o += 4 + b.value.length;
    }
    post(body).then(
      () => batch.forEach((b) => b.done()),
      (e: unknown) => batch.forEach((b) => b.fail(e)),
    );
  };
  return {
    put(key, value) {
      return new Promise<void>((done, fail) => {
        const k = enc.encode(key);
        pending.push({ key: k, value, done, fail });
        size += 8 + k.length + value.length;
        if (size >= maxBatchBytes) flush();
        else if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}
