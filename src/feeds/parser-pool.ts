// The threads of ingest: parse workers, which turn chunks of feed bytes into rows, and a reader,
// which reads, verifies and chunks segments ahead of the writer (see source.ts).
//
// JSON parsing and schema validation are most of the CPU cost of ingest; SQLite writes must stay on one
// connection. So the ingesting thread hands chunks of whole lines to the workers, and their results
// come back to it, which applies them strictly in submission order, interleaved with the markers it
// submitted in between (segment starts and ends). With `workers: 0` the same parsing runs inline
// (same code, same results).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ChunkResult, parseChunk } from './chunk.js';
import { RowEncoder } from './rows.js';
import type { HttpOptions, ReadError, SegmentRef, SegmentSink } from './source.js';

/** One item of the ordered stream: a parsed chunk (and the encoder that made it), or a marker. */
export type Delivery<M> = { result: ChunkResult; encoder: number; marker?: undefined } | { marker: M; result?: undefined };

/** The worker script: next to the bundle in dist/, or dist/ of the project when running from source. */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/parse-worker.mjs', here) : new URL('./parse-worker.mjs', here);
}

/** Default number of parse workers: one per CPU core. */
export function defaultWorkers(): number {
  return availableParallelism();
}

export class ParserPool<M> {
  private readonly workers: Worker[] = [];
  private readonly inflight: number[] = [];
  private readonly inline = new RowEncoder();
  /** Delivered items by sequence number; null while a worker still has the chunk. */
  private readonly pending = new Map<number, Delivery<M> | null>();
  private nextSeq = 0;
  private nextDeliver = 0;
  private deliver: (d: Delivery<M>) => void = () => {};
  private waiters: (() => void)[] = [];
  /** Set when a worker died: the pool is unusable (its dictionaries are lost) and must be replaced. */
  failure: Error | null = null;
  /** Rejects when a worker dies (for racing against other waits). */
  readonly failed: Promise<never>;
  private rejectFailed: (e: Error) => void = () => {};

  constructor(workers: number) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {}); // observed through `failure` when nobody races it
    for (let i = 0; i < workers; i++) {
      const w = new Worker(workerUrl(), { workerData: { role: 'parse' } });
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
  }

  get threads(): number {
    return this.workers.length;
  }

  /** Sets where items go, in submission order. `deliver` must not throw. */
  onDeliver(deliver: (d: Delivery<M>) => void): void {
    this.deliver = deliver;
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.rejectFailed(this.failure);
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private flush(): void {
    for (let d = this.pending.get(this.nextDeliver); d; d = this.pending.get(this.nextDeliver)) {
      this.pending.delete(this.nextDeliver);
      this.nextDeliver++;
      this.deliver(d);
    }
    this.wake();
  }

  /** Items submitted and not yet delivered. */
  get outstanding(): number {
    return this.nextSeq - this.nextDeliver;
  }

  /**
   * Queues a chunk of whole lines. Its memory is transferred to a worker: `bytes` must own its
   * ArrayBuffer whole and is unusable afterwards. Without workers it is parsed (and delivered) now.
   * The caller bounds how much it submits (see `outstanding`).
   */
  submit(bytes: Uint8Array): void {
    if (this.failure) throw this.failure;
    if (this.workers.length === 0) {
      let result: ChunkResult;
      try {
        result = parseChunk(bytes, this.inline);
      } catch (e) {
        // As if a worker died (parseChunk rejects bad lines, so this is a bug): the pool fails and
        // whoever waits on it hears so, instead of waiting forever for this chunk's result.
        const failure = new Error(`parsing failed: ${e instanceof Error ? e.message : String(e)}`);
        this.fail(failure);
        throw failure;
      }
      this.pending.set(this.nextSeq++, { result, encoder: 0 });
      this.flush();
      return;
    }
    const seq = this.nextSeq++;
    let i = 0;
    for (let j = 1; j < this.workers.length; j++) if (this.inflight[j]! < this.inflight[i]!) i = j;
    this.inflight[i]!++;
    this.pending.set(seq, null);
    this.workers[i]!.postMessage({ seq, bytes }, [bytes.buffer as ArrayBuffer]);
  }

  /** Queues a result made by the caller (e.g. a line rejected before parsing), in order with the rest. */
  submitResult(result: ChunkResult): void {
    this.pending.set(this.nextSeq++, { result, encoder: 0 });
    this.flush();
  }

  /** Queues a marker, delivered in order with the rest. */
  submitMarker(marker: M): void {
    this.pending.set(this.nextSeq++, { marker });
    this.flush();
  }

  /** Waits until at most `n` items are outstanding; throws when a worker died. */
  async until(n: number): Promise<void> {
    while (this.outstanding > n) {
      if (this.failure) throw this.failure;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.failure) throw this.failure;
  }

  /** Waits until every submitted item has been delivered; throws when a worker died. */
  async drain(): Promise<void> {
    await this.until(0);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Messages of the reader thread (see parse-worker.ts). */
export type ToReader =
  | { type: 'read'; gen: number; url: string; http: HttpOptions; segments: SegmentRef[]; first: number; credits: number }
  | { type: 'credit'; gen: number }
  | { type: 'stop'; gen: number };
export type FromReader =
  | { gen: number; type: 'start'; index: number }
  | { gen: number; type: 'chunk'; index: number; bytes: Uint8Array }
  | { gen: number; type: 'tooLong'; index: number; start: string }
  | { gen: number; type: 'end'; index: number; bytes: number }
  | { gen: number; type: 'error'; index: number; error: ReadError }
  | { gen: number; type: 'retry'; index: number; message: string }
  | { gen: number; type: 'done' };

/**
 * The reader thread, seen from the ingesting thread: one read at a time, its events passed to a
 * sink in order. The reader runs ahead by at most `credits` chunks; the caller returns a credit
 * (`credit()`) for each chunk it is done with.
 */
export class ReaderThread {
  private readonly worker: Worker;
  private gen = 0;
  private sink: SegmentSink | null = null;
  private finished: (() => void) | null = null;
  private failure: ((e: Error) => void) | null = null;

  constructor() {
    this.worker = new Worker(workerUrl(), { workerData: { role: 'reader' } });
    this.worker.on('message', (m: FromReader) => {
      const sink = this.sink;
      if (m.gen !== this.gen || !sink) return; // a read that was stopped
      switch (m.type) {
        case 'start':
          return sink.start(m.index);
        case 'chunk':
          return void sink.chunk(m.index, m.bytes);
        case 'tooLong':
          return sink.tooLong(m.index, m.start);
        case 'end':
          return sink.end(m.index, m.bytes);
        case 'error':
          return sink.error(m.index, m.error);
        case 'retry':
          return sink.retry?.(m.index, m.message);
        case 'done':
          this.sink = null;
          return this.finished?.();
      }
    });
    const fail = (e: Error) => {
      this.sink = null;
      this.failure?.(e);
    };
    this.worker.on('error', (e) => fail(new Error(`segment reader failed: ${e.message}`)));
    this.worker.on('exit', (code) => fail(new Error(`segment reader exited with code ${code}`)));
  }

  /** Reads segments from `first` on into `sink`; resolves when the reader has finished or was stopped. */
  read(url: string, http: HttpOptions, segments: SegmentRef[], first: number, credits: number, sink: SegmentSink): Promise<void> {
    const gen = ++this.gen;
    this.sink = sink;
    return new Promise<void>((resolve, reject) => {
      this.finished = resolve;
      this.failure = reject;
      this.post({ type: 'read', gen, url, http, segments, first, credits });
    });
  }

  credit(): void {
    this.post({ type: 'credit', gen: this.gen });
  }

  /** Asks the current read to stop; its `read()` promise resolves once it has. */
  stop(): void {
    this.post({ type: 'stop', gen: this.gen });
  }

  private post(m: ToReader): void {
    this.worker.postMessage(m);
  }

  async close(): Promise<void> {
    this.worker.removeAllListeners('exit');
    await this.worker.terminate();
  }
}
