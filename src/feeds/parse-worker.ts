// Worker thread entry of ingest, in one of two roles (workerData.role):
// - 'parse': parses chunks of feed bytes into rows (see chunk.ts). One encoder per worker, so
//   dictionary ids are per worker; results go back with the chunk's sequence number.
// - 'reader': reads segments ahead of the writer (see readSegments in source.ts) and posts their
//   chunks, transferred, with back pressure by credits (see ReaderThread in parser-pool.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { parseChunk } from './chunk.js';
import type { FromReader, ToReader } from './parser-pool.js';
import { RowEncoder } from './rows.js';
import { openSource, readSegments } from './source.js';

const port = parentPort!;

if ((workerData as { role?: string } | null)?.role === 'reader') {
  let gen = 0;
  let credits = 0;
  let stopped = false;
  let wake: (() => void) | null = null;
  const post = (m: FromReader, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer);
  const resume = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  port.on('message', (m: ToReader) => {
    if (m.type === 'read') {
      gen = m.gen;
      credits = m.credits;
      stopped = false;
      void read(m);
    } else if (m.gen === gen) {
      if (m.type === 'credit') credits++;
      else stopped = true;
      resume();
    }
  });
  const read = async (m: Extract<ToReader, { type: 'read' }>) => {
    const g = m.gen;
    const isStopped = () => stopped || g !== gen;
    const source = openSource(m.url, m.http);
    try {
      await readSegments(
        source,
        m.segments,
        m.first,
        {
          start: (index) => post({ gen: g, type: 'start', index }),
          chunk: async (index, bytes) => {
            post({ gen: g, type: 'chunk', index, bytes }, [bytes.buffer as ArrayBuffer]);
            credits--;
            while (credits <= 0 && !isStopped()) await new Promise<void>((r) => (wake = r));
          },
          tooLong: (index, start) => post({ gen: g, type: 'tooLong', index, start }),
          end: (index, bytes) => post({ gen: g, type: 'end', index, bytes }),
          error: (index, error) => post({ gen: g, type: 'error', index, error }),
          retry: (index, message) => post({ gen: g, type: 'retry', index, message }),
        },
        isStopped,
        m.http,
      );
    } finally {
      await source.close().catch(() => {});
      post({ gen: g, type: 'done' });
    }
  };
} else {
  const encoder = new RowEncoder();
  port.on('message', (msg: { seq: number; bytes: Uint8Array }) => {
    const result = parseChunk(msg.bytes, encoder);
    port.postMessage({ seq: msg.seq, result }, [result.batch.nums.buffer as ArrayBuffer, result.batch.kinds.buffer as ArrayBuffer]);
  });
}
