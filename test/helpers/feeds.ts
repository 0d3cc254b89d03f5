// Test helpers: write feed sources (feeds.json + segments) and make valid records of every kind.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll } from 'vitest';
import type { FeedRecordInput } from '../../src/feeds/schema.js';

const made: string[] = [];
afterAll(() => {
  for (const d of made.splice(0)) removeWithSiblings(d);
});

/**
 * Removes a temporary directory and what a build or publish leaves beside a directory it writes: the
 * render state (`<out>.state.sqlite` and its journal files, src/render/state.ts), the lock
 * (src/util/lock.ts), and the bulk writer's staging directory and its lock (src/bulk/).
 */
export function removeWithSiblings(d: string): void {
  rmSync(d, { recursive: true, force: true });
  for (const suffix of ['.state.sqlite', '.state.sqlite-wal', '.state.sqlite-shm', '.state.sqlite-journal', '.lock', '.lock.json', '.bulk-staging', '.bulk-staging.lock', '.bulk-staging.lock.json']) {
    rmSync(`${d}${suffix}`, { recursive: true, force: true });
  }
}

/** A new temporary directory, removed after the test file's tests (with a state or lock beside it). */
export function tempDir(prefix = 'peppol-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/**
 * Where large temporary trees go: the RAM disk (/dev/shm) when there is one with room to spare, else
 * the ordinary temporary directory. Writing, copying and above all deleting a built snapshot (tens of
 * thousands of small files) or a SQLite database that is written to costs several times more on a real
 * disk (test/global-setup.ts picks its directory the same way).
 */
export function ramTempBase(): string {
  try {
    const st = statfsSync('/dev/shm');
    if (st.bavail * st.bsize > 4 * 1024 ** 3) return '/dev/shm';
  } catch {
    // no /dev/shm: the ordinary temporary directory
  }
  return tmpdir();
}

/**
 * A new temporary directory under ramTempBase(), removed after the test file's tests (with a state or
 * lock beside it). Not for copies of feed directories: their segments are hard-linked from the fixture
 * (test/helpers/snapshot.ts copyFeedDir), which needs the same file system.
 */
export function ramTempDir(prefix = 'peppol-test-'): string {
  const d = mkdtempSync(join(ramTempBase(), prefix));
  made.push(d);
  return d;
}

export interface SegmentSpec {
  path: string;
  /** Lines of the segment, written joined by '\n' with a trailing newline. */
  lines: string[];
}

export interface WrittenSegment {
  path: string;
  sha256: string;
  bytes: number;
}

export function segmentBytes(spec: SegmentSpec): Buffer {
  const text = Buffer.from(spec.lines.map((l) => `${l}\n`).join(''), 'utf8');
  return spec.path.endsWith('.gz') ? gzipSync(text) : text;
}

/** Writes the segments and a matching feeds.json into dir; returns the index entries. */
export function writeFeedDir(dir: string, segments: SegmentSpec[]): WrittenSegment[] {
  const index: WrittenSegment[] = [];
  for (const s of segments) {
    const bytes = segmentBytes(s);
    const file = join(dir, s.path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
    index.push({ path: s.path, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length });
  }
  writeIndex(dir, index);
  return index;
}

/** Writes segments given as their bytes (as stored) and a matching feeds.json into dir. */
export function writeFeedDirBytes(dir: string, segments: { path: string; bytes: Buffer }[]): WrittenSegment[] {
  const index: WrittenSegment[] = [];
  for (const s of segments) {
    const file = join(dir, s.path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, s.bytes);
    index.push({ path: s.path, sha256: createHash('sha256').update(s.bytes).digest('hex'), bytes: s.bytes.length });
  }
  writeIndex(dir, index);
  return index;
}

export function writeIndex(dir: string, segments: WrittenSegment[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'feeds.json'), `${JSON.stringify({ segments }, null, 1)}\n`);
}

const FP = (n: number) => createHash('sha256').update(`cert-${n}`).digest('hex');
const iso = (minutes: number) => new Date(Date.UTC(2026, 9, 1) + minutes * 60_000).toISOString();

/** A deterministic mix of valid records of all eight kinds; `n` records, offset by `start`. */
export function sampleRecords(n: number, start = 0): FeedRecordInput[] {
  const out: FeedRecordInput[] = [];
  for (let i = start; i < start + n; i++) {
    const k = i % 16;
    const at = iso(i);
    const participant = `0208::${String(1000000000 + (i % 997)).padStart(10, '0')}`;
    if (k < 8) {
      out.push({
        kind: 'probe',
        at,
        hostname: `ap${i % 13}.example.net`,
        role: i % 2 ? 'AP' : 'SMP',
        location: ['fra', 'ams', 'dub'][i % 3]!,
        result: i % 11 === 0 ? 'down' : i % 7 === 0 ? 'degraded' : 'up',
        phases: i % 11 === 0 ? { dns: 3, tcp: null, tls: null, http: null, total: null } : { dns: 3, tcp: 10, tls: 25, http: 40 + (i % 50), total: 80 + (i % 50) },
        ips: [`192.0.2.${i % 13}`],
        ptr: `host${i % 13}.example.net`,
        cert:
          i % 11 === 0
            ? null
            : { fingerprint: FP(i % 13), subject: `CN=PBE${String(i % 13).padStart(6, '0')},O=Example ${i % 13} BV,C=BE`, issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE', not_before: '2025-06-01T00:00:00Z', not_after: '2027-06-01T00:00:00Z' },
      });
    } else if (k === 8 || k === 9) {
      out.push({ kind: 'directory', at, participant, present: true, card: { name: `Firma ${i % 997} BV`, countryCode: 'BE', registrationDate: '2024-03-01' } });
    } else if (k === 10) {
      out.push({ kind: 'sml', at, participant, registered: i % 5 !== 0, smp: i % 5 !== 0 ? 'smp1.example.net' : null });
    } else if (k === 11) {
      out.push({
        kind: 'smp',
        at,
        participant,
        smp: 'smp1.example.net',
        endpoints: [
          {
            doctype: 'urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1',
            process: 'urn:fdc:peppol.eu:2017:poacc:billing:01:1.0',
            transport_profile: 'peppol-transport-as4-v2_0',
            url: `https://ap${i % 13}.example.net/as4`,
            cert: { fingerprint: FP(i % 13), subject: `CN=PBE${String(i % 13).padStart(6, '0')},O=Example ${i % 13} BV,C=BE`, issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE' },
          },
        ],
      });
    } else if (k === 12) {
      out.push({
        kind: 'member',
        at,
        key: `member-${i % 5}`,
        trade_name: `Member ${i % 5}`,
        legal_name: null,
        country: 'BE',
        url: 'https://member.example.org/',
        flags: { peppol_authority: false, ap: true, smp: true, end_user: false, observer: false },
        hostnames: [`ap${i % 13}.example.net`],
      });
    } else if (k === 13) {
      out.push({ kind: 'curation', at, slug: `provider-${i % 5}`, name: `Provider ${i % 5}`, country: 'BE', natural_key: null, notes: null, seats: [`PBE${String(i % 13).padStart(6, '0')}`], member_key: `member-${i % 5}` });
    } else if (k === 14) {
      out.push({
        kind: 'zone',
        at,
        zone: 'participant.sml.prod.tech.peppol.org',
        zone_kind: 'SML',
        env: 'production',
        operator: 'OpenPeppol',
        location: 'fra',
        existing_ok: 5,
        existing_total: 5,
        nonexistent_ok: 3,
        nonexistent_total: 3,
        critical_nxdomain: false,
        soa_serial: 2026100100 + i,
        ns: ['ns1.example.net'],
        dname_target: null,
        management: { host: 'smk.example.net', tls_ok: true, tls_not_after: '2027-01-01T00:00:00Z', tls_issuer: 'CN=Example CA' },
      });
    } else {
      out.push({ kind: 'ack', at, anomaly_id: `off_cadence_rotation-${i}`, acknowledged: true, reason: 'planned rotation' });
    }
  }
  return out;
}

export const lines = (records: unknown[]): string[] => records.map((r) => JSON.stringify(r));
