// The stored encoding (docs/snapshot-format.md, "Stored encoding"): encodeStored gzips with a window
// fitted to the body (src/render/stored.ts), which must give the bytes of the default 32 KiB window,
// so that the choice of window never changes a published file.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DirectorySink, FILES_DDL } from '../src/render/sink.js';
import { CHUNK_GZIP_LEVEL, encodeStored, fittingWindowBits, STORED_GZIP_LEVEL } from '../src/render/stored.js';
import { snapshotTempDir } from './helpers/snapshot.js';

/** JSON-like text with repeats (what the snapshot stores), from a few bytes to past 32 KiB. */
const body = fc
  .tuple(fc.array(fc.constantFrom('{"id":"0208::', '"name":"', 'Company BV', '"country":"BE"', '},', '[', ']', '2026-11-22T00:30:00Z', 'smp.example.com', '\u00e9'), { maxLength: 3000 }), fc.string({ maxLength: 200 }), fc.nat({ max: 40_000 }))
  .map(([parts, noise, pad]) => Buffer.from(parts.join('') + noise + 'x'.repeat(pad % 7 === 0 ? pad : 0)));

describe('stored encoding', () => {
  it('gzips to the bytes of the default window, whatever the body length', () => {
    fc.assert(
      fc.property(body, (b) => {
        // A chunk (content-addressed) and a list root: each at its level.
        for (const [rel, level] of [['c/00/0000.json', CHUNK_GZIP_LEVEL], ['i/participants.list/_5fids.json', STORED_GZIP_LEVEL]] as const) {
          const stored = encodeStored(rel, b);
          expect(Buffer.from(stored).equals(gzipSync(b, { level })), rel).toBe(true);
          expect(gunzipSync(stored).equals(b), rel).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('fits the window to the body: the smallest with room for it, at most 32 KiB', () => {
    expect(fittingWindowBits(0)).toBe(9);
    expect(fittingWindowBits(512 - 262)).toBe(9);
    expect(fittingWindowBits(512 - 261)).toBe(10);
    expect(fittingWindowBits(2000)).toBe(12);
    expect(fittingWindowBits(32768 - 262)).toBe(15);
    expect(fittingWindowBits(10_000_000)).toBe(15);
  });
});

describe('a content-addressed file put again', () => {
  const CHUNK = 'c/ab/cdef.json';
  const body = Buffer.from(JSON.stringify({ keys: [[1]], items: Array.from({ length: 200 }, (_, i) => ({ id: `0208::${i}`, name: 'Company BV' })) }));
  // The earlier build's bytes of the same content, encoded otherwise (another level, as another zlib might).
  const earlier = gzipSync(body, { level: 9 });
  const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
  type Row = { sha256: string; bytes: number };

  /** A directory holding the earlier build's files (path -> bytes), and a store as a build holds it. */
  function withEarlierFiles(files: Record<string, Uint8Array>, test: (dir: string, db: Database.Database, row: (p: string) => Row) => void): void {
    const dir = snapshotTempDir('sink-kept-');
    const db = new Database('');
    try {
      db.exec(FILES_DDL);
      db.exec('BEGIN');
      const at = (p: string): string => path.join(dir, p);
      for (const [p, b] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(at(p)), { recursive: true });
        fs.writeFileSync(at(p), b);
      }
      test(dir, db, (p) => db.prepare('SELECT sha256, bytes FROM files WHERE path = ?').get(p) as Row);
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it('keeps the bytes on disk and names them in the manifest when the earlier build recorded it; encodes it when the file is gone', () => {
    expect(Buffer.from(earlier).equals(Buffer.from(encodeStored(CHUNK, body)))).toBe(false);
    withEarlierFiles({ [CHUNK]: earlier }, (dir, db, row) => {
      const at = (p: string): string => path.join(dir, p);
      const before = fs.statSync(at(CHUNK)).mtimeMs;
      const recorded = new Map([[CHUNK, sha(earlier)], ['c/ab/gone.json', 'f'.repeat(64)]]);
      const sink = new DirectorySink(dir, { db, previousSha: (rel) => recorded.get(rel) });
      sink.put(CHUNK, body, 'application/json', 'immutable');
      sink.put('c/ab/gone.json', body, 'application/json', 'immutable');
      // Kept: not written again, and the manifest's entry is of the bytes on disk.
      expect(fs.readFileSync(at(CHUNK)).equals(earlier)).toBe(true);
      expect(fs.statSync(at(CHUNK)).mtimeMs).toBe(before);
      expect(row(CHUNK)).toEqual({ sha256: sha(earlier), bytes: earlier.length });
      // Recorded but gone from disk: encoded and written as new.
      const written = fs.readFileSync(at('c/ab/gone.json'));
      expect(gunzipSync(written).equals(body)).toBe(true);
      expect(row('c/ab/gone.json')).toEqual({ sha256: sha(written), bytes: written.length });
      expect(sink.stats).toMatchObject({ files: 2, written: 1, bytes: earlier.length + written.length });
      sink.close();
    });
  });

  it('without the state (--full, after a killed build): kept when the file on disk decodes to the content, written again when it does not', () => {
    const spoiled = { 'c/ab/other.json': gzipSync(Buffer.from('{"keys":[],"items":[]}')), 'c/ab/plain.json': body, 'c/ab/broken.json': earlier.subarray(0, 40) };
    withEarlierFiles({ [CHUNK]: earlier, ...spoiled }, (dir, db, row) => {
      const at = (p: string): string => path.join(dir, p);
      const sink = new DirectorySink(dir, { db });
      for (const p of [CHUNK, ...Object.keys(spoiled)]) sink.put(p, body, 'application/json', 'immutable');
      expect(fs.readFileSync(at(CHUNK)).equals(earlier)).toBe(true);
      expect(row(CHUNK)).toEqual({ sha256: sha(earlier), bytes: earlier.length });
      // Other content under the name, the content not gzip-encoded, a cut stream: written again, encoded.
      for (const p of Object.keys(spoiled)) {
        const now = fs.readFileSync(at(p));
        expect(now.equals(Buffer.from(encodeStored(p, body))), p).toBe(true);
        expect(row(p)).toEqual({ sha256: sha(now), bytes: now.length });
      }
      expect(sink.stats).toMatchObject({ files: 4, written: 3 });
      sink.close();
    });
  });
});
