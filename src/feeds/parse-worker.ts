// Worker thread entry: parses chunks of feed bytes into rows (see chunk.ts). One encoder per worker,
// so dictionary ids are per worker; results go back with the chunk's sequence number.
import { parentPort } from 'node:worker_threads';
import { parseChunk } from './chunk.js';
import { RowEncoder } from './rows.js';

const encoder = new RowEncoder();
parentPort!.on('message', (msg: { seq: number; bytes: Uint8Array }) => {
  const result = parseChunk(msg.bytes, encoder);
  parentPort!.postMessage({ seq: msg.seq, result }, [result.batch.nums.buffer as ArrayBuffer, result.batch.kinds.buffer as ArrayBuffer]);
});
