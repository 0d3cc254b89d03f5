// parseChunk (src/feeds/chunk.ts) decodes a chunk in pieces cut after a newline. Its result must be
// what decoding the whole chunk at once and parsing it line by line gives: the same line count, the
// same rows and dictionary entries, and the same rejects (line index within the chunk, error, raw
// text), whatever falls on a piece boundary: multi-byte UTF-8 characters, bytes that are not UTF-8, a
// line longer than a piece, CRLF line ends, blank lines.
import { isUtf8 } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { parseChunk, rejectOf, type ChunkResult, type Reject, TOO_LONG, MAX_LINE_BYTES, NOT_UTF8 } from '../src/feeds/chunk.js';
import { RowEncoder } from '../src/feeds/rows.js';
import { parseFeedLineFast } from '../src/feeds/validate.js';
import { lines, sampleRecords } from './helpers/feeds.js';

/** The chunk cut into lines, each decoded on its own, then parsed (the algorithm before pieces). */
function reference(bytes: Uint8Array, encoder: RowEncoder): ChunkResult {
  const buf = Buffer.from(bytes);
  const rejects: Reject[] = [];
  const parts: Buffer[] = [];
  for (let start = 0, nl = buf.indexOf(10); nl >= 0; start = nl + 1, nl = buf.indexOf(10, start)) parts.push(buf.subarray(start, nl));
  // (after the last '\n': nothing, or a line without its end, which is not counted)
  parts.forEach((bytes, index) => {
    const raw = bytes.toString('utf8');
    if (bytes.length > MAX_LINE_BYTES) return void rejects.push(rejectOf(index, TOO_LONG, raw));
    if (!isUtf8(bytes)) return void rejects.push(rejectOf(index, NOT_UTF8, raw));
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim().length === 0) return;
    const r = parseFeedLineFast(line);
    if (r.ok) encoder.encode(r.record);
    else rejects.push(rejectOf(index, r.error, line));
  });
  return { lines: parts.length, ...encoder.take(), rejects };
}

describe('parseChunk', () => {
  it('gives what decoding the whole chunk gives, whatever falls on a piece boundary', () => {
    const records = lines(sampleRecords(4_000));
    const out: string[] = [];
    records.forEach((l, i) => {
      // Non-ASCII text in some records (2-, 3- and 4-byte UTF-8), valid and rejected.
      if (i % 7 === 0) l = l.replace('"kind":', '"note":"Société générale – ÆØÅ 😀","kind":');
      if (i % 11 === 0) l = `{"kind":"directory","at":"bad ✓ ${'é'.repeat(i % 5)}"}`;
      if (i % 13 === 0) l = `${l}\r`;
      if (i % 17 === 0) out.push('');
      // Lines longer than a piece (64 KiB): one rejected for its field, one not JSON.
      if (i === 1_000) l = JSON.stringify({ kind: 'ack', at: '2026-11-22T00:00:00Z', anomaly_id: 'a', acknowledged: true, reason: 'ü'.repeat(70_000) });
      if (i === 2_000) l = `not json ${'€'.repeat(50_000)}`;
      out.push(l);
    });
    // Some lines with bytes that are not UTF-8: a lone continuation byte, a truncated sequence.
    const bad = [Buffer.from([0x80]), Buffer.from([0xe2, 0x82])];
    const bytes = Buffer.concat(out.flatMap((l, i) => (i % 23 === 5 ? [Buffer.from(l.slice(0, 9)), bad[i % 2]!, Buffer.from(`${l.slice(9)}\n`)] : [Buffer.from(`${l}\n`)])));
    expect(bytes.length).toBeGreaterThan(4 * 64 * 1024);
    // Every offset of the chunk start shifts where the piece boundaries fall.
    for (const shift of [0, 1, 2, 3, 5, 8, 13]) {
      const chunk = new Uint8Array(Buffer.concat([Buffer.from('\n'.repeat(shift)), bytes]));
      const got = parseChunk(chunk, new RowEncoder());
      const want = reference(chunk, new RowEncoder());
      expect(got.lines).toBe(want.lines);
      expect(got.rejects).toEqual(want.rejects);
      expect(got.dict).toEqual(want.dict);
      expect(got.batch.kinds).toEqual(want.batch.kinds);
      expect(got.batch.nums).toEqual(want.batch.nums);
      expect(got.batch.strs).toEqual(want.batch.strs);
      expect(got.batch.other).toEqual(want.batch.other);
      expect(got.rejects.length).toBeGreaterThan(300);
      expect(got.rejects.some(([, error, raw]) => raw.includes('😀') && error !== NOT_UTF8)).toBe(false); // the note is ignored, not rejected
      expect(got.rejects.some(([, error, raw]) => raw.startsWith('not json') && error.length > 0)).toBe(true);
      expect(got.rejects.filter(([, error]) => error === NOT_UTF8).length).toBeGreaterThan(100);
    }
  });
});
