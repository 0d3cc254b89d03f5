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

/**
 * Text is decoded in pieces of about this many bytes, each cut after a newline (a byte that never
 * occurs inside a multi-byte UTF-8 sequence, so the text is the same). Below V8's large-object size
 * (128 KiB) a piece's string is allocated in the young generation; a string of the whole chunk
 * (512 KiB) would be mapped fresh from the OS every time, and the page faults cost a twentieth of a
 * worker's time.
 */
const PIECE_BYTES = 64 * 1024;

/** Parses `bytes`: UTF-8 text of whole lines, each terminated by '\n'. */
export function parseChunk(bytes: Uint8Array, encoder: RowEncoder): ChunkResult {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rejects: Reject[] = [];
  let index = 0;
  for (let from = 0; from < buf.length; ) {
    let to = buf.length;
    if (from + PIECE_BYTES < buf.length) {
      to = buf.lastIndexOf(10, from + PIECE_BYTES - 1) + 1;
      if (to <= from) {
        // One line longer than a piece: the piece is that line.
        const nl = buf.indexOf(10, from + PIECE_BYTES);
        to = nl < 0 ? buf.length : nl + 1;
      }
    }
    const text = buf.toString('utf8', from, to);
    from = to;
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
  }
  return { lines: index, ...encoder.take(), rejects };
}
