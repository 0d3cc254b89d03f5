// Node's gzip decoder for the shim's stored files (src/edge/stored.ts): zlib's synchronous inflate
// takes about 55 µs for a 26 KB list chunk on this machine, DecompressionStream about 250 µs
// (streams around the same zlib). `serve` and the Lambda pass it; the Worker keeps the Web stream.
import { gunzipSync } from 'node:zlib';
import type { Inflate } from '../edge/stored.js';

export const inflateSync: Inflate = (gz) => gunzipSync(gz);
