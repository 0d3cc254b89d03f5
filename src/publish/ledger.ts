// What `publish` remembers in the target between runs (docs/publish.md, "Retention and recovery"):
// `.publish/state.json` and one ledger per publish, `.publish/ledgers/<sha256>.ndjson.gz`.
//
// A ledger lists what one publish changed: the paths it added (not in the target's manifest before),
// changed (overwrote in place) and retired (in the old manifest, not in the new one), each with its
// cache class. It is written, and named in `state.pending`, before the first upload; once the new
// manifest is in place the publish is committed and the ledger moves to `state.ledgers`. The state
// names the ledger before the ledger is written, and uploads start after both: a pending publish
// whose ledger is missing was cut off before it changed anything.
//
// A run that finds `pending` set looks at the target's manifest: if it is the one the pending publish
// meant to write, that publish committed (the process died after the manifest); otherwise it was cut
// off, and its ledger is kept as "aborted": the paths it changed in place are uploaded again, and the
// objects it added are doomed like retired ones (the objects a later publish needs again are spared).
//
// Doomed objects (retired by a committed publish, added by an aborted one) are deleted:
// - mutable and meta objects right after the commit: their path now answers "absent", and a stale
//   copy would be served as if it still existed;
// - immutable (content-addressed) objects after `publish.retention_hours`: CDN caches and requests in
//   flight may still hold an index naming them.
// An object a newer committed publish added again is never deleted on behalf of an older ledger.
// Deletion is idempotent and recorded only after it happened, so a run killed in the middle of it is
// completed by the next.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import type { CacheClass } from '../render/sink.js';
import type { PublishTarget } from './target.js';

export const STATE_PATH = '.publish/state.json';
export const LEDGER_DIR = '.publish/ledgers';
export const STATE_FORMAT = 'peppol-snapshot/publish-state@1';

export type LedgerOp = 'added' | 'changed' | 'retired';

export interface LedgerLine {
  op: LedgerOp;
  path: string;
  class: CacheClass;
  /** The object's size (retired: as the old manifest listed it). */
  bytes: number;
}

/** Objects and their bytes. */
export interface ClassCount {
  objects: number;
  bytes: number;
}

/** Per cache class, and in all. */
export type ClassCounts = ClassCount & Record<CacheClass, ClassCount>;

export const zeroCounts = (): ClassCounts => ({ objects: 0, bytes: 0, immutable: { objects: 0, bytes: 0 }, mutable: { objects: 0, bytes: 0 }, meta: { objects: 0, bytes: 0 } });

/** Adds `n` objects of `bytes` to class `cls` and to the total. */
export function addCount(c: ClassCounts, cls: CacheClass, n: number, bytes: number): void {
  c[cls].objects += n;
  c[cls].bytes += bytes;
  c.objects += n;
  c.bytes += bytes;
}

export interface LedgerRef {
  path: string;
  /** When the publish committed (aborted: when the cut-off was found). */
  committed_at: string;
  outcome: 'committed' | 'aborted';
  added: number;
  changed: number;
  retired: number;
  /** Immutable objects it dooms (retired when committed, added when aborted) and their bytes: kept until retention ends. */
  doomed_immutable: number;
  doomed_immutable_bytes: number;
  /** Its doomed mutable and meta objects are deleted. */
  mutable_done: boolean;
}

export interface PendingPublish {
  ledger: string;
  /** sha256 of the manifest.json this publish writes last. */
  manifest_sha256: string;
  generated_at: string;
  started_at: string;
  /**
   * How far the uploads got: every planned object of an earlier class, and of this class up to and
   * including `after` (path order), is written. A rerun of the same snapshot resumes from there.
   */
  done?: { class: CacheClass; after: string };
}

export interface PublishState {
  format: typeof STATE_FORMAT;
  pending: PendingPublish | null;
  ledgers: LedgerRef[];
}

export const emptyState = (): PublishState => ({ format: STATE_FORMAT, pending: null, ledgers: [] });

const enc = new TextEncoder();
const dec = new TextDecoder();

export async function readState(target: PublishTarget): Promise<PublishState> {
  const body = await target.get(STATE_PATH);
  if (!body) return emptyState();
  let s: PublishState;
  try {
    s = JSON.parse(dec.decode(body)) as PublishState;
  } catch (e) {
    throw new Error(`${target.name}${STATE_PATH}: not JSON (${(e as Error).message}); it is publish's own bookkeeping, do not edit it`);
  }
  if (s?.format !== STATE_FORMAT || !Array.isArray(s.ledgers)) throw new Error(`${target.name}${STATE_PATH}: not of format ${STATE_FORMAT}`);
  return s;
}

export async function writeState(target: PublishTarget, state: PublishState): Promise<void> {
  await target.put(STATE_PATH, { bytes: enc.encode(`${JSON.stringify(state)}\n`) }, { contentType: 'application/json', cacheControl: 'no-store' });
}

/** Lines per gzip member: a ledger is a concatenation of members, so memory holds one batch of lines. */
const LEDGER_BATCH = 20_000;

/**
 * A new ledger's path. Not named by content: two publishes with the same plan (a run cut off and its
 * rerun) have a ledger each, and finishing one must not delete the other's.
 */
export function newLedgerPath(nowMs: number): string {
  return `${LEDGER_DIR}/${new Date(nowMs).toISOString().replace(/[-:.]/g, '')}-${randomUUID()}.ndjson.gz`;
}

/** Writes a ledger (gzipped NDJSON) at `path`. */
export async function writeLedger(target: PublishTarget, path: string, lines: Iterable<LedgerLine>): Promise<void> {
  const members: Buffer[] = [];
  let batch: string[] = [];
  const flush = () => {
    members.push(gzipSync(batch.length > 0 ? `${batch.join('\n')}\n` : ''));
    batch = [];
  };
  for (const l of lines) {
    batch.push(JSON.stringify(l));
    if (batch.length >= LEDGER_BATCH) flush();
  }
  if (batch.length > 0 || members.length === 0) flush();
  await target.put(path, { bytes: Buffer.concat(members) }, { contentType: 'application/gzip', cacheControl: 'no-store' });
}

/**
 * A ledger's lines, read as they are decompressed (a first publish's ledger lists every file of the
 * snapshot: millions of lines), or null when the object is gone.
 */
export async function readLedger(target: PublishTarget, path: string): Promise<AsyncIterable<LedgerLine> | null> {
  const body = await target.get(path);
  if (!body) return null;
  return (async function* () {
    let rest = '';
    const text = new TextDecoder();
    for await (const chunk of Readable.from([body]).pipe(createGunzip()) as AsyncIterable<Buffer>) {
      const lines = (rest + text.decode(chunk, { stream: true })).split('\n');
      rest = lines.pop()!;
      for (const line of lines) if (line !== '') yield JSON.parse(line) as LedgerLine;
    }
    if (rest !== '') yield JSON.parse(rest) as LedgerLine;
  })();
}

/** A commit time after every recorded one (registration order is time order, whatever the clocks). */
export function commitTime(state: PublishState, nowMs: number): string {
  const last = state.ledgers.length > 0 ? Date.parse(state.ledgers[state.ledgers.length - 1]!.committed_at) : -Infinity;
  return new Date(Math.max(nowMs, last)).toISOString();
}

export interface RetentionResult {
  /** Objects deleted (or, in a dry run, due for deletion) by cache class. */
  deleted: ClassCounts;
  /** Immutable objects doomed but kept until their retention ends. */
  waiting: ClassCount;
  /** Ledgers finished and removed from the state. */
  ledgers_done: number;
  /** The state was changed (the caller writes it). */
  changed: boolean;
}

const DELETE_PAGE = 1000;
const LINES_PER_TX = 50_000;

/**
 * Deletes what the recorded ledgers doom and is due at `nowMs` (see the top of this file), oldest
 * ledger first; updates `state` (the caller writes it). In a dry run nothing is deleted or changed:
 * the result says what would be.
 */
export async function applyRetention(target: PublishTarget, state: PublishState, nowMs: number, retentionMs: number, dryRun: boolean): Promise<RetentionResult> {
  const result: RetentionResult = { deleted: zeroCounts(), waiting: { objects: 0, bytes: 0 }, ledgers_done: 0, changed: false };
  const refs = state.ledgers;
  const due = (r: LedgerRef) => Date.parse(r.committed_at) + retentionMs <= nowMs;
  const work = refs.map((r, i) => ({ r, i })).filter(({ r }) => !r.mutable_done || due(r));
  const tmp = new Database(''); // anonymous, on disk: a ledger may list millions of paths
  try {
    tmp.exec('CREATE TABLE cand (path TEXT NOT NULL, idx INTEGER NOT NULL, class TEXT NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (path, idx)) WITHOUT ROWID');
    tmp.exec('CREATE INDEX cand_idx ON cand (idx, class)');
    const insert = tmp.prepare('INSERT OR IGNORE INTO cand VALUES (?, ?, ?, ?)');
    /** Runs `each` over a ledger's lines in transactions of LINES_PER_TX (a ledger that is gone, removed by hand, has none). */
    const each = async (i: number, fn: (l: LedgerLine) => void): Promise<void> => {
      const lines = await readLedger(target, refs[i]!.path);
      if (!lines) return;
      let n = 0;
      tmp.exec('BEGIN');
      for await (const l of lines) {
        fn(l);
        if (++n % LINES_PER_TX === 0) {
          tmp.exec('COMMIT');
          tmp.exec('BEGIN');
        }
      }
      tmp.exec('COMMIT');
    };
    for (const { r, i } of work) {
      const doomedOp: LedgerOp = r.outcome === 'committed' ? 'retired' : 'added';
      await each(i, (l) => {
        if (l.op === doomedOp && (l.class === 'immutable' ? due(r) : !r.mutable_done)) insert.run(l.path, i, l.class, l.bytes ?? 0);
      });
    }
    const candidates = (tmp.prepare('SELECT count(*) AS n FROM cand').get() as { n: number }).n;
    if (candidates > 0) {
      // Spare what a newer committed publish added again.
      const spare = tmp.prepare('DELETE FROM cand WHERE path = ? AND idx < ?');
      for (let j = work[0]!.i + 1; j < refs.length; j++) {
        if (refs[j]!.outcome !== 'committed') continue;
        await each(j, (l) => {
          if (l.op === 'added') spare.run(l.path, j);
        });
      }
    }
    // Referring objects before the objects they refer to: mutable and meta first, then immutable.
    for (const cls of ['meta', 'mutable', 'immutable'] as const) {
      const page = tmp.prepare('SELECT path, max(bytes) AS bytes FROM cand WHERE class = ? AND path > ? GROUP BY path ORDER BY path LIMIT ?');
      let after = '';
      for (;;) {
        const rows = page.all(cls, after, DELETE_PAGE) as { path: string; bytes: number }[];
        if (rows.length === 0) break;
        if (!dryRun) await target.delete(rows.map((row) => row.path));
        addCount(result.deleted, cls, rows.length, rows.reduce((n, row) => n + row.bytes, 0));
        after = rows[rows.length - 1]!.path;
      }
    }
  } finally {
    tmp.close();
  }
  for (const r of refs) {
    if (due(r)) continue;
    result.waiting.objects += r.doomed_immutable;
    result.waiting.bytes += r.doomed_immutable_bytes ?? 0;
  }
  if (dryRun) return result;
  const keep: LedgerRef[] = [];
  const finished: string[] = [];
  for (const r of refs) {
    const w = work.some((x) => x.r === r);
    if (w && due(r)) finished.push(r.path);
    else keep.push(w ? { ...r, mutable_done: true } : r);
  }
  if (finished.length > 0) await target.delete(finished);
  state.ledgers = keep;
  result.ledgers_done = finished.length;
  result.changed = work.length > 0;
  return result;
}
