// Parses chunks of feed text on worker threads and delivers the results in submission order.
//
// JSON parsing and schema validation are most of the CPU cost of ingest; SQLite writes must stay on one
// connection. So the ingesting thread cuts the bytes into chunks of whole lines, the workers parse them,
// and the results come back to the ingesting thread, which applies them strictly in order. With
// `workers: 0` the same parsing runs inline (same code, same results).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ChunkResult, parseChunk } from './chunk.js';
import { RowEncoder } from './rows.js';

/** Called in submission order with each chunk's result and the encoder (worker) that made it. */
export type Deliver = (result: ChunkResult, encoder: number) => void;

/** The worker script: next to the bundle in dist/, or dist/ of the project when running from source. */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/parse-worker.mjs', here) : new URL('./parse-worker.mjs', here);
}

/** Default number of parse workers: one per CPU core. */
export function defaultWorkers(): number {
  return availableParallelism();
}

interface Pending {
  result: ChunkResult | null;
  encoder: number;
}

export class ParserPool {
  private readonly workers: Worker[] = [];
  private readonly inflight: number[] = [];
  private readonly inline = new RowEncoder();
  private readonly pending = new Map<number, Pending>();
  private nextSeq = 0;
  private nextDeliver = 0;
  private deliver: Deliver = () => {};
  private waiters: (() => void)[] = [];
  private readonly maxInflight: number;
  /** Set when a worker died: the pool is unusable (its dictionaries are lost) and must be replaced. */
  failure: Error | null = null;

  constructor(workers: number) {
    for (let i = 0; i < workers; i++) {
      const w = new Worker(workerUrl());
      const encoder = i + 1; // 0 is the inline encoder
      w.on('message', (m: { seq: number; result: ChunkResult }) => {
        this.inflight[i]!--;
        this.pending.set(m.seq, { result: m.result, encoder });
        this.flush();
      });
      w.on('error', (e) => this.fail(new Error(`parse worker failed: ${e.message}`)));
      w.on('exit', (code) => {
        if (code !== 0) this.fail(new Error(`parse worker exited with code ${code}`));
      });
      this.workers.push(w);
      this.inflight.push(0);
    }
    this.maxInflight = Math.max(2, workers * 3);
  }

  /** Sets where results go from now on. `deliver` must not throw. */
  onResult(deliver: Deliver): void {
    this.deliver = deliver;
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private flush(): void {
    for (let p = this.pending.get(this.nextDeliver); p?.result; p = this.pending.get(this.nextDeliver)) {
      this.pending.delete(this.nextDeliver);
      this.nextDeliver++;
      this.deliver(p.result, p.encoder);
    }
    this.wake();
  }

  private async until(done: () => boolean): Promise<void> {
    while (!done()) {
      if (this.failure) throw this.failure;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.failure) throw this.failure;
  }

  /**
   * Queues a chunk of whole lines; resolves when there is room for more. The chunk's memory is
   * transferred to the worker: `bytes` must own its ArrayBuffer whole and is unusable afterwards.
   * `inline` parses it on this thread instead (still delivered in order): for a small segment the
   * round trip to a worker costs more than it saves.
   */
  async submit(bytes: Uint8Array, inline = false): Promise<void> {
    if (this.failure) throw this.failure;
    const seq = this.nextSeq++;
    if (inline || this.workers.length === 0) {
      this.pending.set(seq, { result: parseChunk(bytes, this.inline), encoder: 0 });
      this.flush();
      return;
    }
    let i = 0;
    for (let j = 1; j < this.workers.length; j++) if (this.inflight[j]! < this.inflight[i]!) i = j;
    this.inflight[i]!++;
    this.pending.set(seq, { result: null, encoder: i + 1 });
    this.workers[i]!.postMessage({ seq, bytes }, [bytes.buffer as ArrayBuffer]);
    await this.until(() => this.nextSeq - this.nextDeliver < this.maxInflight);
  }

  /** Queues a result made by the caller (e.g. a line rejected before parsing), in order with the rest. */
  submitResult(result: ChunkResult): void {
    const seq = this.nextSeq++;
    this.pending.set(seq, { result, encoder: 0 });
    this.flush();
  }

  /** Waits until every submitted chunk has been delivered; throws when a worker died. */
  async drain(): Promise<void> {
    await this.until(() => this.nextSeq === this.nextDeliver);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
