// Worker thread entry of a full derive's pool (pool.ts; bundled as dist/derive-worker.mjs): computes
// the jobs it is sent (a host: src/derive/hosts/compute.ts; a range of participant ids:
// src/derive/participants/range.ts) over a read connection of its own and posts their results back, in
// the order the jobs came.
import { workerData, type MessagePort } from 'node:worker_threads';
import { openDb, type Db } from '../db/index.js';
import { computeHost, ProbeReader } from './hosts/compute.js';
import { packRange, RangeReader } from './participants/range.js';
import type { DeriveJob, DeriveResult, DeriveWorkerData, DeriveWorkerMessage } from './pool.js';

// The data DerivePool.open started this worker with.
const data = workerData as DeriveWorkerData;
const words = new Int32Array(data.signal);
Atomics.store(words, data.workers + data.index, 1);

function post(port: MessagePort, msg: DeriveWorkerMessage): void {
  // A host's packed buckets and sketches are buffers of their own (computeHost): moved, not copied.
  const transfer = msg.ok && msg.result.kind === 'host' ? [msg.result.out.buckets.buffer, msg.result.out.sketches.buffer].filter((b) => b instanceof ArrayBuffer) : [];
  port.postMessage(msg, transfer);
  Atomics.add(words, data.index, 1);
  Atomics.notify(words, data.index);
}

let db: Db | null = null;
let probes: ProbeReader | null = null;
let ranges: RangeReader | null = null;
const conn = (): Db => (db ??= openDb(data.dbPath, { readonly: true, cacheMiB: 64 }));

function run(job: DeriveJob): DeriveResult {
  switch (job.kind) {
    case 'host':
      probes ??= new ProbeReader(conn());
      return { kind: 'host', out: computeHost(probes, job.job) };
    case 'participants':
      ranges ??= new RangeReader(conn());
      return { kind: 'participants', out: packRange(ranges.derive(job.job)) };
  }
}

const port = data.port;
port.on('message', (job: DeriveJob) => {
  try {
    post(port, { ok: true, result: run(job) });
  } catch (e) {
    post(port, { ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  }
});
