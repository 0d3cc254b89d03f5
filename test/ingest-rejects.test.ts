// Any line, however deep, long or malformed, becomes a `rejects` row (or a record, when it is one):
// never a crash, never a run that stops at the same line every time.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { NOT_UTF8 } from '../src/feeds/chunk.js';
import { runIngest, type IngestSummary } from '../src/feeds/ingest.js';
import { readSegments, type FeedSource } from '../src/feeds/source.js';
import { runCli } from './helpers/cli.js';
import { count, dump } from './helpers/db-dump.js';
import { lines, sampleRecords, tempDir, writeFeedDirBytes } from './helpers/feeds.js';

const http = { timeout_ms: 5_000, retries: 0, retry_base_ms: 10 };

function ingestWith(workers: number, dbPath: string, url: string): Promise<IngestSummary> {
  return runIngest({ dbPath, sources: [{ name: 'src', url }], http, workers, inlineBelowBytes: 0 });
}

const nested = (depth: number, open: string, close: string, inner = '') => `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
const ack = (id: string, extra = '') => `{"kind":"ack","at":"2026-10-01T00:00:00Z","anomaly_id":"${id}","acknowledged":true,"reason":null${extra}}`;

/** Bad lines and the error each must be rejected with (null: it is a valid record). */
const CASES: { name: string; line: Buffer; error: RegExp | null }[] = [
  { name: 'kind nested 5,000 deep in arrays', line: Buffer.from(`{"kind":${nested(5_000, '[', ']')}}`), error: /^kind: expected one of .*, got an array$/ },
  { name: 'kind nested 100,000 deep in objects', line: Buffer.from(`{"kind":${nested(100_000, '{"a":', '}', '1')}}`), error: /^kind: expected one of .*, got an object$/ },
  { name: 'a record field nested 50,000 deep', line: Buffer.from(ack('deep-field').replace('"reason":null', `"reason":${nested(50_000, '[', ']')}`)), error: /^reason: / },
  { name: 'an unknown field nested 50,000 deep (ignored)', line: Buffer.from(ack('deep-unknown', `,"extra":${nested(50_000, '[', ']')}`)), error: null },
  { name: 'a line that is only brackets', line: Buffer.from(nested(100_000, '[', ']')), error: /^not a JSON object$/ },
  { name: 'unbalanced brackets', line: Buffer.from(`{"kind":${'['.repeat(100_000)}`), error: /^not JSON/ },
  { name: 'kind a string of 900 KB', line: Buffer.from(`{"kind":"${'k'.repeat(900_000)}"}`), error: /^kind: expected one of .*, got "k{40}…"$/ },
  { name: 'invalid UTF-8 inside a string', line: Buffer.concat([Buffer.from(ack('bad-utf8').slice(0, -1)), Buffer.from(',"note":"\xff\xfe"}', 'latin1')]), error: new RegExp(`^${NOT_UTF8}$`) },
  { name: 'a NUL byte', line: Buffer.from(`${ack('nul').slice(0, 20)}\0${ack('nul').slice(20)}`), error: /^not JSON/ },
  { name: 'a byte order mark mid-line', line: Buffer.from(`{\uFEFF${ack('bom-mid').slice(1)}`), error: /^not JSON/ },
  { name: 'a byte order mark starting a line that does not start the segment', line: Buffer.from(`\uFEFF${ack('bom-line')}`), error: /^not JSON/ },
  { name: 'a number of 400 digits', line: Buffer.from(ack('huge-number').replace('"reason":null', `"reason":1${'0'.repeat(400)}`)), error: /^reason: / },
];

/** Segment bytes: a BOM, then good and bad lines alternating, CRLF line ends on some. */
function segment(): { bytes: Buffer; good: number } {
  const good = lines(sampleRecords(CASES.length + 1));
  const parts: Buffer[] = [Buffer.from('\uFEFF')];
  good.forEach((g, i) => {
    parts.push(Buffer.from(`${g}${i % 2 ? '\r\n' : '\n'}`));
    if (i < CASES.length) parts.push(CASES[i]!.line, Buffer.from('\n'));
  });
  return { bytes: Buffer.concat(parts), good: good.length };
}

describe('lines that once crashed ingest', () => {
  it('become rejects with a clear error, the segment goes on, and 0 or 1 workers give the same database', async () => {
    const dir = tempDir();
    const seg = segment();
    writeFeedDirBytes(dir, [{ path: 'bad.ndjson', bytes: seg.bytes }]);
    const valid = CASES.filter((c) => c.error === null).length;
    const dumps = [];
    for (const workers of [0, 1]) {
      const dbPath = join(tempDir(), 'db.sqlite');
      const s = await ingestWith(workers, dbPath, dir);
      expect(s.failed_sources).toEqual([]);
      expect(s.segments).toBe(1);
      // The first record is kept although its line starts with the segment's byte order mark.
      expect(s.records_total).toBe(seg.good + valid);
      expect(s.rejects).toBe(CASES.length - valid);
      const db = new Database(dbPath, { readonly: true });
      const rejects = db.prepare('SELECT line, error FROM rejects ORDER BY line').all() as { line: number; error: string }[];
      db.close();
      const expected = CASES.map((c, i) => ({ ...c, line: 2 * i + 2 })).filter((c) => c.error !== null);
      expect(rejects.map((r) => r.line)).toEqual(expected.map((c) => c.line));
      rejects.forEach((r, i) => {
        expect(r.error, expected[i]!.name).toMatch(expected[i]!.error!);
        expect(r.error.length, expected[i]!.name).toBeLessThan(300);
      });
      // A second run changes nothing: the source is not stuck at one of these lines.
      const again = await ingestWith(workers, dbPath, dir);
      expect(again.segments).toBe(0);
      expect(again.failed_sources).toEqual([]);
      dumps.push(dump(dbPath));
    }
    expect(dumps[1]).toEqual(dumps[0]);
  });

  it('the CLI ends normally with exit 0 and a summary when parsing on the main thread', async () => {
    const dir = tempDir();
    const seg = segment();
    writeFeedDirBytes(dir, [{ path: 'bad.ndjson', bytes: seg.bytes }]);
    for (const workers of [0]) {
      const cfg = join(tempDir(), 'publish.config.json');
      writeFileSync(cfg, JSON.stringify({ ingest: { workers } }));
      const dbPath = join(tempDir(), 'db.sqlite');
      const r = await runCli(['ingest', '--config', cfg, '--db', dbPath, '--source', dir, '--json']);
      expect(r.stderr).not.toMatch(/failed|internal error/);
      expect(r.code).toBe(0);
      const s = JSON.parse(r.stdout.trim()) as IngestSummary;
      expect(s.rejects).toBe(CASES.filter((c) => c.error !== null).length);
      expect(count(dbPath, 'SELECT count(*) FROM ack_obs')).toBeGreaterThan(0);
    }
  });
});

describe('a byte order mark at the start of a segment', () => {
  /** The lines readSegments hands on for `reads` (the segment's bytes, as the source delivers them). */
  async function linesRead(reads: Buffer[]): Promise<string[]> {
    const bytes = Buffer.concat(reads);
    const seg = { path: 's.ndjson', bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    const source: FeedSource = {
      url: 'test:',
      readIndex: () => Promise.resolve({ segments: [seg] }),
      openSegment: () => Promise.resolve(Readable.from(reads)),
      close: () => Promise.resolve(),
    };
    const chunks: Buffer[] = [];
    const errors: string[] = [];
    await readSegments(
      source,
      [seg],
      0,
      { start: () => {}, chunk: (_i, b) => void chunks.push(Buffer.from(b)), tooLong: () => {}, end: () => {}, error: (_i, e) => void errors.push(e.message) },
      () => false,
    );
    expect(errors).toEqual([]);
    return Buffer.concat(chunks).toString('utf8').split('\n').slice(0, -1);
  }

  it('is dropped, also when it arrives split over several reads; elsewhere it stays', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(await linesRead([bom, Buffer.from('{"a":1}\n\uFEFF{"b":2}\n')])).toEqual(['{"a":1}', '\uFEFF{"b":2}']);
    expect(await linesRead([bom.subarray(0, 1), bom.subarray(1, 2), Buffer.from([0xbf, 0x7b, 0x7d])])).toEqual(['{}']);
    // Not a byte order mark after all, or only part of one: the bytes are kept as they are.
    expect(await linesRead([bom.subarray(0, 2), Buffer.from('x\n')])).toEqual([Buffer.concat([bom.subarray(0, 2), Buffer.from('x')]).toString('utf8')]);
    expect(await linesRead([bom.subarray(0, 2)])).toEqual([bom.subarray(0, 2).toString('utf8')]);
    expect(await linesRead([bom])).toEqual([]);
  });
});
