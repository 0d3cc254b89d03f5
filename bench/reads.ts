// What a benchmark request reads, and the spread of a measure: shared by the API benchmark's parts
// (bench/api.ts, bench/participant-walks.ts).
import { constants, gunzipSync } from 'node:zlib';
import { SNAPSHOT_INFO_PATH } from '../src/edge/resolve.js';
import { isGzip } from '../src/edge/stored.js';
import type { FileReader } from '../src/edge/types.js';

export interface ReadLog {
  files: number;
  bytes: number;
  exact: number;
  roots: number;
  nodes: number;
  chunks: number;
  rootPaths: string[];
}

const emptyLog = (): ReadLog => ({ files: 0, bytes: 0, exact: 0, roots: 0, nodes: 0, chunks: 0, rootPaths: [] });

/** Wraps a reader: counts every read of the current request by kind (snapshot.json is the resolver's cached clock, not counted). */
export function countingReader(inner: FileReader): { reader: FileReader; begin(): void; end(): ReadLog } {
  let log = emptyLog();
  // A chunk begins `{"keys` (keys stored) or `{"items` (list@3: keys derived); an index node `{"level`.
  const isChunk = (stored: Uint8Array) => {
    const head = Buffer.from(storedHead(stored, 2048).subarray(0, 8)).toString('latin1');
    return head.startsWith('{"keys') || head.startsWith('{"items');
  };
  return {
    reader: {
      async read(p) {
        const b = await inner.read(p);
        if (b === null || p === SNAPSHOT_INFO_PATH) return b;
        log.files++;
        log.bytes += b.length;
        if (p.startsWith('i/')) {
          log.roots++;
          log.rootPaths.push(p);
        } else if (p.startsWith('c/')) {
          if (isChunk(b)) log.chunks++;
          else log.nodes++;
        } else log.exact++;
        return b;
      },
      readPrefix: inner.readPrefix ? (p, n) => inner.readPrefix!(p, n) : undefined,
    },
    begin() {
      log = emptyLog();
    },
    end() {
      return log;
    },
  };
}

/**
 * The first bytes of a stored file's content: decoded from a prefix of its gzip bytes when it is
 * stored encoded (a truncated stream decodes as far as it goes), else the bytes themselves.
 */
export function storedHead(b: Uint8Array, prefixBytes: number): Uint8Array {
  return isGzip(b) ? gunzipSync(b.subarray(0, prefixBytes), { finishFlush: constants.Z_SYNC_FLUSH }) : b;
}

export interface Dist {
  max: number;
  p50: number;
  p99: number;
}

/** Median, 99th percentile and maximum (nearest rank). */
export function dist(xs: number[]): Dist {
  if (xs.length === 0) return { max: 0, p50: 0, p99: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const q = (f: number) => s[Math.min(s.length - 1, Math.floor(f * (s.length - 1) + 0.5))]!;
  return { max: s[s.length - 1]!, p50: q(0.5), p99: q(0.99) };
}
