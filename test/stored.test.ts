// The stored encoding (docs/snapshot-format.md, "Stored encoding"): encodeStored gzips with a window
// fitted to the body (src/render/stored.ts), which must give the bytes of the default 32 KiB window,
// so that the choice of window never changes a published file.
import { gunzipSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeStored, fittingWindowBits, STORED_GZIP_LEVEL } from '../src/render/stored.js';

/** JSON-like text with repeats (what the snapshot stores), from a few bytes to past 32 KiB. */
const body = fc
  .tuple(fc.array(fc.constantFrom('{"id":"0208::', '"name":"', 'Company BV', '"country":"BE"', '},', '[', ']', '2026-11-22T00:30:00Z', 'smp.example.com', '\u00e9'), { maxLength: 3000 }), fc.string({ maxLength: 200 }), fc.nat({ max: 40_000 }))
  .map(([parts, noise, pad]) => Buffer.from(parts.join('') + noise + 'x'.repeat(pad % 7 === 0 ? pad : 0)));

describe('stored encoding', () => {
  it('gzips to the bytes of the default window, whatever the body length', () => {
    fc.assert(
      fc.property(body, (b) => {
        const stored = encodeStored('c/00/0000.json', b);
        expect(Buffer.from(stored).equals(gzipSync(b, { level: STORED_GZIP_LEVEL }))).toBe(true);
        expect(gunzipSync(stored).equals(b)).toBe(true);
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
