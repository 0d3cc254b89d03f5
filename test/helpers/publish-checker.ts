// Checks, from a record of the writes a bucket carried out, that at no moment did the bucket's manifest
// or any index a reader can reach name an object that was not there (docs/architecture.md §6, docs/publish.md).
//
// The record (test/helpers/s3.ts for the S3 server, RecordingTarget below for a directory) has
// server-side start and end times. Conservatively, a written object exists only from the end of its
// write, while a manifest's or index's new content may be read from the start of its write; a deleted
// object is gone from the start of its delete. References: manifest.json names its shards and every
// path its shards list; an index root (`i/…`) or inner node (`{"level":…}`) names its entries' paths.
// Reachable: manifest.json, every index root present, and what they name, transitively (an inner node
// or chunk that nothing reachable names is garbage waiting for deletion, which no reader can reach).
import type { ObjectMeta, PublishTarget, PutBody } from '../../src/publish/target.js';
import { decodeStored } from '../../src/render/stored.js';

export interface WriteOp {
  kind: 'put' | 'delete';
  key: string;
  start: number;
  end: number;
  /** Kept for manifests, manifest shards and index files (the checker reads their references). */
  body?: Uint8Array;
  /** A put written as a copy of this key inside the store (S3 CopyObject), no body sent. */
  copyOf?: string;
}

const dec = new TextDecoder();

export class ReferenceChecker {
  private readonly exists = new Set<string>();
  /** Referrer key -> the keys its current content names. */
  private readonly refsOf = new Map<string, Set<string>>();
  /** Key -> referrers naming it. */
  private readonly referrers = new Map<string, Set<string>>();
  /** Manifest shard bodies seen, by key. */
  private readonly shards = new Map<string, Uint8Array>();
  readonly violations: string[] = [];
  /** Manifests and indexes whose references were checked. */
  checkedReferrers = 0;

  constructor(private readonly prefix = '') {}

  /** Replays writes (those of one or more publishes, after everything replayed before). */
  replay(ops: readonly WriteOp[]): void {
    type Ev = { t: number; order: number; op: WriteOp; phase: 'start' | 'end' };
    const evs: Ev[] = [];
    for (const op of ops) {
      if (!op.key.startsWith(this.prefix)) continue;
      evs.push({ t: op.start, order: op.kind === 'delete' ? 1 : 2, op, phase: 'start' });
      if (op.kind === 'put') evs.push({ t: op.end, order: 0, op, phase: 'end' });
    }
    // At equal times: writes that finish first, then deletes, then writes that start.
    evs.sort((a, b) => a.t - b.t || a.order - b.order);
    for (const { op, phase } of evs) {
      if (op.kind === 'delete') this.gone(op.key);
      else if (phase === 'start') this.starting(op);
      else this.written(op);
    }
  }

  private rel(key: string): string {
    return key.slice(this.prefix.length);
  }

  /** The keys a referrer's body names, or null when the key is not a referrer. */
  private references(key: string, body: Uint8Array | undefined): Set<string> | null {
    const rel = this.rel(key);
    if (!body) return null;
    body = decodeStored(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    if (rel === 'manifest.json') {
      const m = JSON.parse(dec.decode(body)) as { shards: { path: string }[] };
      const out = new Set<string>();
      for (const s of m.shards) {
        out.add(this.prefix + s.path);
        const shard = this.shards.get(this.prefix + s.path);
        if (!shard) {
          this.violations.push(`manifest.json names shard ${s.path}, which was never written`);
          continue;
        }
        for (const line of dec.decode(shard).split('\n')) if (line !== '') out.add(this.prefix + (JSON.parse(line) as { path: string }).path);
      }
      return out;
    }
    const isIndex = rel.startsWith('i/') || dec.decode(body.subarray(0, 9)) === '{"level":';
    if (!isIndex) return null;
    const node = JSON.parse(dec.decode(body)) as { entries: { path: string }[] };
    return new Set(node.entries.map((e) => this.prefix + e.path));
  }

  private isRoot(key: string): boolean {
    const rel = this.rel(key);
    return rel === 'manifest.json' || rel.startsWith('i/');
  }

  /** Whether a reader can reach `key`: a root, or named by something reachable. */
  private reachable(key: string, seen = new Set<string>()): boolean {
    if (this.isRoot(key)) return this.exists.has(key) || this.refsOf.has(key);
    if (seen.has(key)) return false;
    seen.add(key);
    for (const r of this.referrers.get(key) ?? []) if (this.reachable(r, seen)) return true;
    return false;
  }

  private starting(op: WriteOp): void {
    const refs = this.references(op.key, op.body);
    if (!refs) return;
    this.checkedReferrers++;
    for (const r of refs) {
      let s = this.referrers.get(r);
      if (!s) this.referrers.set(r, (s = new Set()));
      s.add(op.key);
    }
    // Until the write ends, old and new content may be read: keep both sets of references.
    const old = this.refsOf.get(op.key);
    this.refsOf.set(op.key, old ? new Set([...old, ...refs]) : refs);
    if (!this.isRoot(op.key) && !this.reachable(op.key)) return; // a node nothing reachable names yet
    // Everything the new content names, and what named nodes name in turn, must be there.
    let missing = 0;
    let example = '';
    const seen = new Set<string>();
    const stack = [...refs];
    while (stack.length > 0) {
      const r = stack.pop()!;
      if (seen.has(r)) continue;
      seen.add(r);
      if (!this.exists.has(r)) {
        missing++;
        example ||= this.rel(r);
        continue;
      }
      const below = this.refsOf.get(r);
      if (below) stack.push(...below);
    }
    if (missing > 0) this.violations.push(`${this.rel(op.key)} is being written naming ${missing} object(s) not there, e.g. ${example}`);
  }

  private written(op: WriteOp): void {
    this.exists.add(op.key);
    if (this.rel(op.key).startsWith('m/') && op.body) this.shards.set(op.key, op.body);
    const refs = this.references(op.key, op.body);
    if (!refs) return;
    const both = this.refsOf.get(op.key) ?? new Set<string>();
    for (const r of both) if (!refs.has(r)) this.referrers.get(r)?.delete(op.key);
    this.refsOf.set(op.key, refs);
  }

  private gone(key: string): void {
    const by = [...(this.referrers.get(key) ?? [])].filter((r) => this.reachable(r));
    if (by.length > 0 && this.exists.has(key)) this.violations.push(`${this.rel(key)} deleted while ${this.rel(by[0]!)} names it`);
    this.exists.delete(key);
    const refs = this.refsOf.get(key);
    if (refs) for (const r of refs) this.referrers.get(r)?.delete(key);
    this.refsOf.delete(key);
  }
}

/**
 * A target that records what its inner target carried out (for ReferenceChecker) and can be made to
 * die: after `dieAfter` successful writes every further call throws, as if the process had been killed
 * (writes already under way still finish, as they would at a real server).
 */
export class RecordingTarget implements PublishTarget {
  dieAfter = Infinity;
  private writes = 0;

  constructor(
    private readonly inner: PublishTarget,
    readonly ops: WriteOp[] = [],
  ) {}

  get name(): string {
    return this.inner.name;
  }
  get stats() {
    return this.inner.stats;
  }

  private alive(): void {
    if (this.writes >= this.dieAfter) throw new Error('killed (test)');
  }

  async get(key: string): Promise<Uint8Array | null> {
    this.alive();
    return this.inner.get(key);
  }

  async put(key: string, body: PutBody, meta: ObjectMeta): Promise<void> {
    this.alive();
    this.writes++;
    const start = performance.now();
    await this.inner.put(key, body, meta);
    const bytes = 'bytes' in body ? body.bytes : undefined;
    const rel = key;
    const keep = bytes && (rel === 'manifest.json' || rel.startsWith('m/') || rel.startsWith('i/') || dec.decode(bytes.subarray(0, 9)) === '{"level":');
    this.ops.push({ kind: 'put', key, start, end: performance.now(), ...(keep ? { body: bytes } : {}) });
  }

  async copy(from: string, key: string, meta: ObjectMeta): Promise<boolean> {
    this.alive();
    this.writes++;
    const start = performance.now();
    const copied = await this.inner.copy(from, key, meta);
    if (copied) this.ops.push({ kind: 'put', key, start, end: performance.now(), copyOf: from });
    return copied;
  }

  async delete(keys: readonly string[]): Promise<void> {
    this.alive();
    this.writes++;
    const start = performance.now();
    await this.inner.delete(keys);
    for (const key of keys) this.ops.push({ kind: 'delete', key, start, end: performance.now() });
  }

  async close(): Promise<void> {
    await this.inner.close();
  }
}
