// Parsing of a chunk of feed bytes (whole lines) into rows and rejects. Runs in the parse workers, or
// in the ingesting thread itself when there are none; either way the result is the same.
import { type DictEntry, type RowBatch, RowEncoder } from './rows.js';
import { parseFeedLineFast } from './validate.js';

/** Longest line accepted, in bytes; a longer one is rejected (and only its start is kept). */
export const MAX_LINE_BYTES = 1 << 20;
/** How much of a rejected line's raw text is stored, in characters. */
export const MAX_REJECT_RAW_CHARS = 64 * 1024;

export const TOO_LONG = `line longer than ${MAX_LINE_BYTES} bytes`;

/** A rejected line: [line index within the chunk (0-based), error, raw text (maybe cut), cut?]. */
export type Reject = [number, string, string, number];

export interface ChunkResult {
  /** Lines in the chunk (every line ends with '\n'). */
  lines: number;
  batch: RowBatch;
  dict: DictEntry[];
  rejects: Reject[];
}

export function rejectOf(index: number, error: string, text: string): Reject {
  const cut = text.length > MAX_REJECT_RAW_CHARS;
  return [index, error, cut ? text.slice(0, MAX_REJECT_RAW_CHARS) : text, cut ? 1 : 0];
}

/** True when `line` takes more than MAX_LINE_BYTES in UTF-8 (measured only when it might). */
function tooLong(line: string): boolean {
  return line.length > MAX_LINE_BYTES || (line.length > MAX_LINE_BYTES / 3 && Buffer.byteLength(line) > MAX_LINE_BYTES);
}

/** A result that carries only rejects (for lines refused before parsing). */
export function rejectsOnly(lines: number, rejects: Reject[]): ChunkResult {
  return { lines, batch: { kinds: new Uint8Array(0), nums: new Float64Array(0), strs: [], other: [] }, dict: [], rejects };
}

/** Parses `bytes`: UTF-8 text of whole lines, each terminated by '\n'. */
export function parseChunk(bytes: Uint8Array, encoder: RowEncoder): ChunkResult {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const rejects: Reject[] = [];
  let index = 0;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start), index++) {
    let line = text.slice(start, nl);
    start = nl + 1;
    if (tooLong(line)) {
      rejects.push(rejectOf(index, TOO_LONG, line));
      continue;
    }
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim().length === 0) continue; // blank lines carry nothing
    const r = parseFeedLineFast(line);
    if (r.ok) encoder.encode(r.record);
    else rejects.push(rejectOf(index, r.error, line));
  }
  return { lines: index, ...encoder.take(), rejects };
}
