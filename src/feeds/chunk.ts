// Parsing of a chunk of feed bytes (whole lines) into rows and rejects. Runs in the parse workers, or
// in the ingesting thread itself when there are none; either way the result is the same.
import { isUtf8 } from 'node:buffer';
import { type DictEntry, type RowBatch, RowEncoder } from './rows.js';
import type { ParseResult } from './schema.js';
import { parseFeedLineFast } from './validate.js';

/** Longest line accepted, in bytes; a longer one is rejected (and only its start is kept). */
export const MAX_LINE_BYTES = 1 << 20;
/** How much of a rejected line's raw text is stored, in characters. */
export const MAX_REJECT_RAW_CHARS = 64 * 1024;

export const TOO_LONG = `line longer than ${MAX_LINE_BYTES} bytes`;
/** The error of a line whose bytes are not UTF-8 (its raw text is kept with U+FFFD in their place). */
export const NOT_UTF8 = 'not valid UTF-8';

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

/**
 * Parses one line (without its '\n') whatever it holds: a line that is not a valid record, or that
 * the parser could not cope with, is a reject. Nothing a line holds can end the segment: the
 * validator never throws for bad input (and never recurses into a value), and should anything throw
 * all the same (a bug), the line is rejected with the error's text instead of stopping the feed at
 * that line on every run.
 */
export function parseLine(line: string): ParseResult {
  try {
    return parseFeedLineFast(line);
  } catch (e) {
    return { ok: false, error: `could not be validated (${e instanceof Error ? e.message : String(e)})` };
  }
}

/**
 * Parses `bytes`: text of whole lines, each terminated by '\n'. A line whose bytes are not UTF-8 is
 * rejected (decoding would silently replace them and store text that was never sent), unless it is
 * rejected for its length.
 */
export function parseChunk(bytes: Uint8Array, encoder: RowEncoder): ChunkResult {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rejects: Reject[] = [];
  let index = 0;
  const take = (raw: string) => {
    if (tooLong(raw)) return void rejects.push(rejectOf(index, TOO_LONG, raw));
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim().length === 0) return; // blank lines carry nothing
    const r = parseLine(line);
    if (r.ok) encoder.encode(r.record);
    else rejects.push(rejectOf(index, r.error, line));
  };
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
    if (isUtf8(buf.subarray(from, to))) {
      const text = buf.toString('utf8', from, to);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start), index++) {
        take(text.slice(start, nl));
        start = nl + 1;
      }
    } else {
      // Rare: line by line, so that only the lines with bad bytes are rejected.
      for (let start = from, nl = buf.indexOf(10, from); nl >= 0 && nl < to; start = nl + 1, nl = buf.indexOf(10, start), index++) {
        const line = buf.subarray(start, nl);
        // (an over-long line is that first, as when the reader cuts it short)
        if (line.length <= MAX_LINE_BYTES && !isUtf8(line)) rejects.push(rejectOf(index, NOT_UTF8, line.toString('utf8')));
        else take(line.toString('utf8'));
      }
    }
    from = to;
  }
  return { lines: index, ...encoder.take(), rejects };
}
