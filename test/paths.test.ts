// Snapshot paths stay short whatever an identifier holds: an encoded segment over SEGMENT_MAX characters
// becomes `~` + a SHA-256 prefix, so that a participant id of 200 characters (each up to 4 bytes of
// UTF-8, 3 characters encoded) or a 170-character hostname still gives a file name under 255 bytes and
// an object key under S3's 1,024 (such a participant used to stop every build with ENAMETOOLONG).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeSegment, SEGMENT_MAX } from '../src/api/paths.js';
import { recordPackOf, recordPackPath } from '../src/api/participants/record.js';
import { matchRoute } from '../src/api/routes/match.js';
import { sha256Hex } from '../src/api/sha256.js';
import { openDb } from '../src/db/index.js';
import { createResolve } from '../src/edge/resolve.js';
import { runIngest } from '../src/feeds/ingest.js';
import { runBuild } from '../src/render/build.js';
import { verifySnapshot } from '../src/render/verify.js';
import { testConfig } from './helpers/config.js';
import { lines, tempDir, writeFeedDir } from './helpers/feeds.js';
import { oracleAnswer, snapshotInfo, snapshotReader, snapshotTempDir } from './helpers/snapshot.js';
import { listFiles } from './helpers/synthetic-snapshot.js';

const enc = new TextEncoder();

/** Characters of the plain encoding: 1 for a kept character, 3 for each other UTF-8 byte. */
function plainLength(s: string): number {
  let n = 0;
  let i = 0;
  for (const ch of s) {
    n += /^[A-Za-z0-9-]$/.test(ch) || (ch === '.' && i > 0) ? 1 : 3 * enc.encode(ch).length;
    i++;
  }
  return n;
}

describe('sha256Hex', () => {
  it('equals node:crypto on any bytes (0 to 300 bytes, across the 55/56/64-byte padding edges)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (b) => {
        expect(sha256Hex(b)).toBe(createHash('sha256').update(b).digest('hex'));
      }),
      { numRuns: 500 },
    );
  });
});

describe('encodeSegment', () => {
  it('is injective, never a separator or dot segment, and at most SEGMENT_MAX characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 220 }), fc.string({ unit: 'binary', maxLength: 220 }), (a, b) => {
        const ea = encodeSegment(a);
        expect(ea.length).toBeLessThanOrEqual(SEGMENT_MAX);
        expect(ea).not.toMatch(/[/\\]/);
        expect(['.', '..', '']).not.toContain(ea);
        if (a !== b) expect(ea).not.toBe(encodeSegment(b));
        // hashed exactly when the plain encoding would be too long
        expect(ea.startsWith('~')).toBe(plainLength(a) > SEGMENT_MAX);
        if (ea.startsWith('~')) expect(ea).toMatch(/^~[0-9a-f]{32}$/);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps short segments as they were', () => {
    expect(encodeSegment('0208::0123456789')).toBe('0208_3a_3a0123456789');
    expect(encodeSegment('smp.example.com')).toBe('smp.example.com');
    expect(encodeSegment('.x')).toBe('_2ex');
  });
});

describe('a snapshot with over-long identifiers', () => {
  it('builds, verifies and answers them as the oracle does', async () => {
    // A value of 200 characters: ':' and '€' encode to 3 and 9 characters each.
    const longValue = `${'a:'.repeat(60)}${'€'.repeat(80)}`;
    const id = `0208::${longValue}`;
    const host = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(40)}.example.net`;
    const at = '2026-11-01T10:00:00Z';
    const feeds = tempDir('paths-feeds-');
    writeFeedDir(feeds, [
      {
        path: 'segments/a.ndjson',
        lines: lines([
          { kind: 'directory', at, participant: id, present: true, card: { name: 'Long Name BV', countryCode: 'BE', registrationDate: '2024-03-01' } },
          { kind: 'sml', at, participant: id, registered: true, smp: host },
          { kind: 'sml', at: '2026-11-02T10:00:00Z', participant: id, registered: false, smp: null },
          { kind: 'probe', at, hostname: host, role: 'SMP', location: 'fra', result: 'up', phases: { dns: 3, tcp: 10, tls: 25, http: 40, total: 80 }, ips: ['192.0.2.7'], ptr: null, cert: null },
        ]),
      },
    ]);
    const db = path.join(tempDir('paths-db-'), 'db.sqlite');
    const s = await runIngest({ dbPath: db, sources: [{ name: 'feeds', url: feeds }], http: { timeout_ms: 5000, retries: 0, retry_base_ms: 10 } });
    expect(s.rejects).toBe(0);
    const out = snapshotTempDir('paths-out-');
    runBuild({ config: testConfig(), dbPath: db, outDir: out, nowMs: Date.parse('2026-11-03T00:00:00Z') });
    const files = listFiles(out);
    for (const f of files) {
      for (const seg of f.split('/')) expect(Buffer.byteLength(seg), f).toBeLessThanOrEqual(SEGMENT_MAX + '.json'.length);
      expect(Buffer.byteLength(f), f).toBeLessThan(1024 - 200); // room for a prefix of 200 bytes
    }
    // The participant's record is in its pack (a path of its own no longer names it); the host's file is named by the hashed segment.
    expect(files).toContain(recordPackPath(recordPackOf(id)));
    expect(encodeSegment(host)).toMatch(/^~/);
    expect(fs.existsSync(path.join(out, `v1/hosts/${encodeSegment(host)}.json`))).toBe(true);
    expect(verifySnapshot(out).problems).toEqual([]);

    const conn = openDb(db);
    try {
      const { nowMs, base_url } = snapshotInfo(out);
      const resolve = createResolve();
      for (const target of [
        `/v1/participants/${encodeURIComponent(id)}`,
        `/v1/participants/${encodeURIComponent(id)}/events`,
        `/v1/participants/${encodeURIComponent(id)}/history`,
        `/v1/participants?q=${encodeURIComponent(longValue.slice(0, 40))}`,
        `/v1/participants?smp=${encodeURIComponent(host)}`,
        `/v1/hosts/${host}`,
        `/v1/hosts/${host}/uptime?limit=5`,
        `/v1/hosts/${host}/incidents`,
      ]) {
        const url = new URL(target, 'http://snapshot.test');
        const got = await resolve({ url, routeId: matchRoute(url.pathname)?.route.id ?? null }, snapshotReader(out));
        const want = oracleAnswer(conn, url, nowMs, base_url);
        expect({ target, status: got.status, body: new TextDecoder().decode(got.body) }).toEqual({ target, status: want.status, body: want.text });
        expect(got.status, target).toBe(200);
      }
    } finally {
      conn.close();
    }
  });
});
