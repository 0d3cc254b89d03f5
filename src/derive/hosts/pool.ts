// Worker threads that compute hosts for the hosts step (compute.ts) while its own thread writes the
// rows of the hosts before (docs/architecture.md "Derive"). The step runs inside a synchronous SQLite
// transaction, so the pool is synchronous too: `take` blocks (Atomics.wait) until the oldest job's
// result is there, and reads it with receiveMessageOnPort. Each worker reads the ingested tables with a
// connection of its own; derive never writes them, so it reads what the step's connection would.
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { Db } from '../../db/index.js';
import type { HostJob, HostOutput } from './compute.js';

/** What the step's thread gives a worker when it starts it. */
export interface HostWorkerData {
  dbPath: string;
  port: MessagePort;
  /**
   * Two words per worker: [index] is bumped after each message the worker posts, [workers + index]
   * set to 1 once its script runs.
   */
  signal: SharedArrayBuffer;
  workers: number;
  index: number;
}

/** A worker's answer to a job: the host's rows, or why it failed. */
export type HostWorkerMessage = { ok: true; out: HostOutput } | { ok: false; error: string };

/** Workers at most: the machine's cores less none (the step's thread mostly writes, a worker mostly computes). */
export const HOST_WORKERS_MAX = 2;
/** Below this many hosts the step computes them itself (starting a worker costs tens of milliseconds). */
export const POOL_MIN_HOSTS = 8;
/** Without a message for this long, a worker is taken for dead. */
const STALL_MS = 10 * 60_000;
/** A worker whose script has not run after this long failed to load. */
const START_MS = 60_000;

/** The worker script: next to the bundle in dist/, or dist/ of the project when running from source. */
function scriptUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../../dist/derive-hosts.mjs', here) : new URL('./derive-hosts.mjs', here);
}

/** How many workers the step uses by default: one per core beyond the first's share, at most HOST_WORKERS_MAX. */
export function defaultHostWorkers(): number {
  return Math.min(HOST_WORKERS_MAX, os.availableParallelism());
}

export class HostPool {
  private readonly words: Int32Array;
  /** The worker of each job not yet taken, oldest first. */
  private readonly pending: number[] = [];
  private next = 0;

  private constructor(
    private readonly workers: Worker[],
    private readonly ports: MessagePort[],
    signal: SharedArrayBuffer,
  ) {
    this.words = new Int32Array(signal);
  }

  /**
   * A pool of `workers` threads over the database file of `db`; null when the step should compute the
   * hosts itself: no workers asked, fewer than POOL_MIN_HOSTS hosts, a database in memory, or no worker
   * script (a checkout not built yet).
   */
  static open(db: Db, workers: number, hosts: number): HostPool | null {
    if (workers < 1 || hosts < POOL_MIN_HOSTS || db.memory) return null;
    const script = scriptUrl();
    if (!fs.existsSync(fileURLToPath(script))) return null;
    const n = Math.min(workers, Math.ceil(hosts / POOL_MIN_HOSTS));
    const signal = new SharedArrayBuffer(8 * n);
    const started: Worker[] = [];
    const ports: MessagePort[] = [];
    for (let index = 0; index < n; index++) {
      const { port1, port2 } = new MessageChannel();
      const data: HostWorkerData = { dbPath: db.name, port: port2, signal, workers: n, index };
      const w = new Worker(script, { workerData: data, transferList: [port2] });
      // Errors come back as messages; the event only matters to an idle event loop.
      w.on('error', () => {});
      started.push(w);
      ports.push(port1);
    }
    return new HostPool(started, ports, signal);
  }

  /** The number of workers. */
  get size(): number {
    return this.workers.length;
  }

  /** How many jobs to keep ahead of the writer: two per worker. */
  get depth(): number {
    return this.workers.length * 2;
  }

  /** Hands a job to the next worker in turn. */
  submit(job: HostJob): void {
    const w = this.next;
    this.next = (this.next + 1) % this.workers.length;
    this.pending.push(w);
    this.ports[w]!.postMessage(job);
  }

  /** The result of the oldest job not yet taken (blocks until it is there); throws what the worker threw. */
  take(): HostOutput {
    const w = this.pending.shift();
    if (w === undefined) throw new Error('HostPool.take: no job pending');
    const port = this.ports[w]!;
    const t0 = Date.now();
    for (;;) {
      const seen = Atomics.load(this.words, w);
      const m = receiveMessageOnPort(port);
      if (m !== undefined) {
        // The worker posts only HostWorkerMessage (src/derive/hosts/worker.ts).
        const msg = m.message as HostWorkerMessage;
        if (!msg.ok) throw new Error(`derive: a hosts worker failed: ${msg.error}`);
        return msg.out;
      }
      const waited = Date.now() - t0;
      if (waited > START_MS && Atomics.load(this.words, this.workers.length + w) === 0) throw new Error('derive: a hosts worker did not start (dist/derive-hosts.mjs failed to load)');
      if (waited > STALL_MS) throw new Error(`derive: a hosts worker sent nothing for ${STALL_MS / 60_000} minutes`);
      Atomics.wait(this.words, w, seen, 1000);
    }
  }

  /** Stops the workers (their jobs, if any, are dropped). */
  close(): void {
    for (const p of this.ports) p.close();
    for (const w of this.workers) void w.terminate();
  }
}
