// Worker threads that compute for a full derive's steps while the step's own thread writes (the hosts
// step: one host a job, src/derive/hosts/compute.ts; the participants step: one id range a job,
// src/derive/participants/range.ts). A step runs inside a synchronous SQLite transaction, so the pool
// is synchronous too: `take` blocks (Atomics.wait) until the oldest job's result is there, and reads it
// with receiveMessageOnPort. Each worker reads the ingested tables with a connection of its own; derive
// never writes them, so a worker reads what the step's connection would
// (docs/methodology/hosts.md "Threads").
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { Db } from '../db/index.js';
import type { HostJob, HostOutput } from './hosts/compute.js';
import type { PackedRange, RangeJob } from './participants/range.js';

/** What the step's thread gives a worker when it starts it. */
export interface DeriveWorkerData {
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

/** A job: a host to recompute, or a range of participant ids to derive. */
export type DeriveJob = { kind: 'host'; job: HostJob } | { kind: 'participants'; job: RangeJob };
/** What a job gives. */
export type DeriveResult = { kind: 'host'; out: HostOutput } | { kind: 'participants'; out: PackedRange };
/** The job and the result of one kind. */
export type JobOf<K extends DeriveJob['kind']> = Extract<DeriveJob, { kind: K }>['job'];
export type ResultOf<K extends DeriveJob['kind']> = Extract<DeriveResult, { kind: K }>['out'];
/** A worker's answer to a job: its result, or why it failed. */
export type DeriveWorkerMessage = { ok: true; result: DeriveResult } | { ok: false; error: string };

/** Workers at most: the step's thread mostly writes, a worker mostly reads and computes. */
export const DERIVE_WORKERS_MAX = 2;
/** Below this many jobs a step computes them itself by default (starting a worker costs tens of milliseconds). */
export const POOL_MIN_JOBS = 8;
/** Without a message for this long, a worker is taken for dead. */
const STALL_MS = 10 * 60_000;
/** A worker whose script has not run after this long failed to load. */
const START_MS = 60_000;

/** The worker script: next to the bundle in dist/, or dist/ of the project when running from source. */
function scriptUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/derive-worker.mjs', here) : new URL('./derive-worker.mjs', here);
}

/**
 * How many workers a step uses for `jobs` jobs: `asked` when given (DeriveContext.deriveWorkers);
 * otherwise, on a full run of at least POOL_MIN_JOBS jobs, one per core, at most DERIVE_WORKERS_MAX;
 * none on an incremental run (a day or so per host, a few thousand participants: little to compute
 * against the rows to write, and workers with cold caches of their own cost more than they save).
 */
export function workersFor(asked: number | undefined, full: boolean, jobs: number): number {
  if (asked !== undefined) return asked;
  return full && jobs >= POOL_MIN_JOBS ? Math.min(DERIVE_WORKERS_MAX, os.availableParallelism()) : 0;
}

export class DerivePool {
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
   * A pool of up to `workers` threads over the database file of `db` (no more than there are jobs);
   * null when the step computes itself: no workers asked, no jobs, a database in memory, or no worker
   * script (a checkout not built yet).
   */
  static open(db: Db, workers: number, jobs: number): DerivePool | null {
    if (workers < 1 || jobs < 1 || db.memory) return null;
    const script = scriptUrl();
    if (!fs.existsSync(fileURLToPath(script))) return null;
    const n = Math.min(workers, jobs);
    const signal = new SharedArrayBuffer(8 * n);
    const started: Worker[] = [];
    const ports: MessagePort[] = [];
    for (let index = 0; index < n; index++) {
      const { port1, port2 } = new MessageChannel();
      const data: DeriveWorkerData = { dbPath: db.name, port: port2, signal, workers: n, index };
      const w = new Worker(script, { workerData: data, transferList: [port2] });
      // Errors come back as messages; the event only matters to an idle event loop.
      w.on('error', () => {});
      started.push(w);
      ports.push(port1);
    }
    return new DerivePool(started, ports, signal);
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
  submit(job: DeriveJob): void {
    const w = this.next;
    this.next = (this.next + 1) % this.workers.length;
    this.pending.push(w);
    this.ports[w]!.postMessage(job);
  }

  /** The result of the oldest job not yet taken (blocks until it is there); throws what the worker threw. */
  take(): DeriveResult {
    const w = this.pending.shift();
    if (w === undefined) throw new Error('DerivePool.take: no job pending');
    const port = this.ports[w]!;
    const t0 = Date.now();
    for (;;) {
      const seen = Atomics.load(this.words, w);
      const m = receiveMessageOnPort(port);
      if (m !== undefined) {
        // The worker posts only DeriveWorkerMessage (src/derive/worker.ts).
        const msg = m.message as DeriveWorkerMessage;
        if (!msg.ok) throw new Error(`derive: a worker failed: ${msg.error}`);
        return msg.result;
      }
      const waited = Date.now() - t0;
      if (waited > START_MS && Atomics.load(this.words, this.workers.length + w) === 0) throw new Error('derive: a worker did not start (dist/derive-worker.mjs failed to load)');
      if (waited > STALL_MS) throw new Error(`derive: a worker sent nothing for ${STALL_MS / 60_000} minutes`);
      Atomics.wait(this.words, w, seen, 1000);
    }
  }

  /** Stops the workers (their jobs, if any, are dropped). */
  close(): void {
    for (const p of this.ports) p.close();
    for (const w of this.workers) void w.terminate();
  }
}

/**
 * Computes `count` jobs of one kind and hands each result to `write` in job order: on the pool's
 * workers, up to `pool.depth` jobs ahead of `write`, or without a pool one after the other with
 * `here`. `jobAt(i)` is called in order of i, and before result i is written. Closes the pool.
 */
export function computeInOrder<K extends DeriveJob['kind']>(
  pool: DerivePool | null,
  kind: K,
  count: number,
  jobAt: (i: number) => JobOf<K>,
  here: (job: JobOf<K>) => ResultOf<K>,
  write: (out: ResultOf<K>, i: number) => void,
): void {
  if (pool === null) {
    for (let i = 0; i < count; i++) write(here(jobAt(i)), i);
    return;
  }
  // { kind, job } with job of that kind is a DeriveJob; TypeScript does not relate the two generics.
  const submit = (i: number): void => pool.submit({ kind, job: jobAt(i) } as DeriveJob);
  try {
    let next = 0;
    while (next < count && next < pool.depth) submit(next++);
    for (let i = 0; i < count; i++) {
      const r = pool.take();
      if (r.kind !== kind) throw new Error(`derive: a worker answered a ${r.kind} job for a ${kind} job`);
      if (next < count) submit(next++);
      // r.kind is K (checked above); TypeScript does not narrow the generic.
      write(r.out as ResultOf<K>, i);
    }
  } finally {
    pool.close();
  }
}
