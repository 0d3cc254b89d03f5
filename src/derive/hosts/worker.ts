// Worker thread entry of the hosts step's pool (pool.ts; bundled as dist/derive-hosts.mjs): computes
// the hosts it is sent (compute.ts) over a read connection of its own and posts their rows back, in
// the order the jobs came.
import { workerData, type MessagePort } from 'node:worker_threads';
import { openDb } from '../../db/index.js';
import { computeHost, ProbeReader, type HostJob } from './compute.js';
import type { HostWorkerData, HostWorkerMessage } from './pool.js';

// The data HostPool.open started this worker with.
const data = workerData as HostWorkerData;
const words = new Int32Array(data.signal);
Atomics.store(words, data.workers + data.index, 1);

function post(port: MessagePort, msg: HostWorkerMessage): void {
  // The sketches' buffer is the output's own (computeHost concatenates them): moved, not copied.
  const transfer = msg.ok ? [msg.out.buckets.buffer, msg.out.sketches.buffer].filter((b) => b instanceof ArrayBuffer) : [];
  port.postMessage(msg, transfer);
  Atomics.add(words, data.index, 1);
  Atomics.notify(words, data.index);
}

let reader: ProbeReader | null = null;
const port = data.port;
port.on('message', (job: HostJob) => {
  try {
    if (reader === null) {
      const db = openDb(data.dbPath, { readonly: true, cacheMiB: 64 });
      reader = new ProbeReader(db);
    }
    post(port, { ok: true, out: computeHost(reader, job) });
  } catch (e) {
    post(port, { ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  }
});
