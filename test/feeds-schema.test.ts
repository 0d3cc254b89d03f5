// The feed contract (src/feeds/schema.ts) and identifier rules (src/feeds/ids.ts): every record kind
// parses and normalises a valid line and rejects bad ones with an error naming the field path.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  organisationFromSubject,
  parseParticipantId,
  PEPPOL_ID_PREFIX,
  seatIdFromSubject,
} from '../src/feeds/ids.js';
import { FEED_KINDS, FEED_SCHEMAS, FeedIndex, parseFeedLine, type FeedKind, type FeedRecord } from '../src/feeds/schema.js';

const FP_UPPER = '5D0C3F9A1E27B4C86A9F0E13D7B25C4E8F61A0B39C2D7E54F18A6B0C3E9D2F71';
const FP_LOWER = FP_UPPER.toLowerCase();
const SHA = 'a41e9c07f3d2b8e65c10f9a7d34b2e8c0f5a6d19e7b3c42f80d1a5e6b9c7f203';
const FULL_ID = 'iso6523-actorid-upis::0208:0123456789AB';
const CANONICAL = { id: '0208::0123456789ab', scheme: '0208', value: '0123456789ab' };
const DOCTYPE =
  'urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1';

/** A valid record per kind, written with the variations normalisation must undo. */
const VALID: Record<FeedKind, Record<string, unknown>> = {
  probe: {
    kind: 'probe',
    at: '2026-11-22T09:15:00.250+01:00',
    hostname: 'AP.Example-Access.BE',
    role: 'AP',
    location: 'frankfurt',
    result: 'up',
    phases: { dns: 11.8, tcp: 17.2, tls: 42.5, http: 96.1, total: 167.6 },
    ips: ['203.0.113.17', '2001:db8:4a::17'],
    ptr: 'AP1.example-access.be',
    cert: {
      fingerprint: FP_UPPER,
      subject: 'CN=ap.example-access.be,O=Example Access BV,C=BE',
      issuer: 'CN=GlobalSign GCC R6 AlphaSSL CA 2025,O=GlobalSign nv-sa,C=BE',
      not_before: '2026-03-02T09:41:07Z',
      not_after: '2027-04-03T09:41:06Z',
    },
  },
  directory: {
    kind: 'directory',
    at: '2026-11-22T03:00:12Z',
    participant: FULL_ID,
    present: true,
    card: { name: 'Example Trading NV', countryCode: 'BE', registrationDate: '2021-06-15' },
  },
  sml: {
    kind: 'sml',
    at: '2026-11-22T03:00:12Z',
    participant: FULL_ID,
    registered: true,
    smp: 'SMP.Example-Access.be',
    zone: 'edelivery.tech.ec.europa.eu',
  },
  smp: {
    kind: 'smp',
    at: '2026-11-22T03:00:14Z',
    participant: FULL_ID,
    smp: 'SMP.EXAMPLE-ACCESS.BE',
    endpoints: [
      {
        doctype: DOCTYPE,
        process: 'urn:fdc:peppol.eu:2017:poacc:billing:01:1.0',
        transport_profile: 'peppol-transport-as4-v2_0',
        url: 'https://ap.example-access.be/as4',
        cert: {
          fingerprint: FP_UPPER,
          subject: 'CN=PBE000123,O=Example Access BV,C=BE',
          issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE',
        },
      },
    ],
  },
  member: {
    kind: 'member',
    at: '2026-11-21T22:00:00Z',
    key: 'example-access',
    trade_name: 'Example Access',
    legal_name: 'Example Access BV',
    country: 'BE',
    url: 'https://www.example-access.be',
    flags: { peppol_authority: false, ap: true, smp: true, end_user: false, observer: false },
    hostnames: ['AP.example-access.be'],
    active: true,
  },
  curation: {
    kind: 'curation',
    at: '2026-11-20T14:30:00+01:00',
    slug: 'example-access',
    name: 'Example Access',
    country: 'BE',
    natural_key: 'BE0123456789',
    notes: null,
    seats: ['PBE000123', 'PNO000042'],
    member_key: 'example-access',
  },
  zone: {
    kind: 'zone',
    at: '2026-11-22T08:15:00Z',
    zone: 'Participant.SML.prod.tech.peppol.org',
    zone_kind: 'SML',
    env: 'production',
    operator: 'OpenPeppol',
    location: 'frankfurt',
    existing_ok: 20,
    existing_total: 20,
    nonexistent_ok: 10,
    nonexistent_total: 10,
    critical_nxdomain: false,
    soa_serial: 2026112207,
    ns: ['NS1.sml.prod.tech.peppol.org'],
    dname_target: null,
    management: { host: 'SML.prod.tech.peppol.org', tls_ok: true, tls_not_after: '2027-05-31T23:59:59Z', tls_issuer: 'CN=R11,O=Let\'s Encrypt,C=US' },
  },
  ack: {
    kind: 'ack',
    at: '2026-11-22T09:02:31Z',
    anomaly_id: 'cert_identity_shift-3c9f1a7e5b20d84f',
    acknowledged: true,
    reason: null,
  },
};

const DELETE = Symbol('delete');

/** A deep copy of `base` with the value at dotted `path` replaced (or deleted). */
function variant(base: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(base);
  const keys = path.split('.');
  let o = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) o = o[k] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === DELETE) delete o[last];
  else o[last] = value;
  return copy;
}

function parse(value: unknown): FeedRecord {
  const r = parseFeedLine(JSON.stringify(value));
  if (!r.ok) throw new Error(`expected a valid record, got: ${r.error}`);
  return r.record;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Asserts the line is rejected and the error names `errorPath` (zod path joined with dots). */
function expectRejected(value: unknown, errorPath: string): string {
  const r = parseFeedLine(JSON.stringify(value));
  expect(r.ok, `expected rejection at ${errorPath}`).toBe(false);
  const error = r.ok ? '' : r.error;
  expect(error).toMatch(new RegExp(`(^|; )${escapeRe(errorPath)}: `));
  return error;
}

// [mutated path, new value (DELETE to remove), path the error must name]
type Bad = [string, unknown, string];

const INVALID: Record<FeedKind, Bad[]> = {
  probe: [
    ['hostname', DELETE, 'hostname'],
    ['hostname', 'localhost', 'hostname'],
    ['hostname', 'ap..example.be', 'hostname'],
    ['hostname', 'ap.example.be.', 'hostname'],
    ['hostname', 42, 'hostname'],
    ['role', 'ap', 'role'],
    ['role', 'SMK', 'role'],
    ['result', 'unknown', 'result'],
    ['at', '2026-11-22T08:15:00', 'at'],
    ['at', '2026-02-30T08:15:00Z', 'at'],
    ['at', '22/11/2026 08:15', 'at'],
    ['at', 1763799300, 'at'],
    ['location', 'Frankfurt', 'location'],
    ['phases.dns', -1, 'phases.dns'],
    ['phases.total', '167', 'phases.total'],
    ['phases.tls', DELETE, 'phases.tls'],
    ['phases', null, 'phases'],
    ['ips', '203.0.113.17', 'ips'],
    ['ips.0', '300.1.1.1', 'ips.0'],
    ['ips.1', 'ap.example.be', 'ips.1'],
    ['ptr', DELETE, 'ptr'],
    ['cert', DELETE, 'cert'],
    ['cert.fingerprint', 'abc123', 'cert.fingerprint'],
    ['cert.fingerprint', 'g'.repeat(64), 'cert.fingerprint'],
    ['cert.subject', '', 'cert.subject'],
    ['cert.not_after', 'tomorrow', 'cert.not_after'],
    ['error', 42, 'error'],
  ],
  directory: [
    ['participant', '0123456789', 'participant'],
    ['participant', '208::0123456789', 'participant'],
    ['participant', '0208::', 'participant'],
    ['participant', 208, 'participant'],
    ['participant', DELETE, 'participant'],
    ['present', 'yes', 'present'],
    ['card', DELETE, 'card'],
    ['card.name', DELETE, 'card.name'],
    ['card.countryCode', 'be', 'card.countryCode'],
    ['card.countryCode', 'BEL', 'card.countryCode'],
    ['card.registrationDate', '2021-13-01', 'card.registrationDate'],
    ['card.registrationDate', '2021-06-15T00:00:00Z', 'card.registrationDate'],
  ],
  sml: [
    ['registered', DELETE, 'registered'],
    ['registered', 1, 'registered'],
    ['smp', 'not a host', 'smp'],
    ['smp', DELETE, 'smp'],
    ['participant', '0208::abc def', 'participant'],
    ['participant', 'iso6523-actorid-upis::0208', 'participant'],
    ['zone', 7, 'zone'],
    ['at', '2026-11-22', 'at'],
  ],
  smp: [
    ['smp', null, 'smp'],
    ['endpoints', DELETE, 'endpoints'],
    ['endpoints', 'none', 'endpoints'],
    ['endpoints.0.url', 'ftp://ap.example-access.be/as4', 'endpoints.0.url'],
    ['endpoints.0.url', 'mailto:peppol@example-access.be', 'endpoints.0.url'],
    ['endpoints.0.url', 'ap.example-access.be/as4', 'endpoints.0.url'],
    ['endpoints.0.transport_profile', '', 'endpoints.0.transport_profile'],
    ['endpoints.0.doctype', DELETE, 'endpoints.0.doctype'],
    ['endpoints.0.cert', DELETE, 'endpoints.0.cert'],
    ['endpoints.0.cert.fingerprint', 'zz', 'endpoints.0.cert.fingerprint'],
    ['endpoints.0.cert.subject', 7, 'endpoints.0.cert.subject'],
  ],
  member: [
    ['key', 'Example Access', 'key'],
    ['key', '-example', 'key'],
    ['trade_name', '', 'trade_name'],
    ['legal_name', DELETE, 'legal_name'],
    ['country', 'BEL', 'country'],
    ['url', 'javascript:alert(1)', 'url'],
    ['url', 'not a url', 'url'],
    ['flags', 'ap', 'flags'],
    ['flags.ap', DELETE, 'flags.ap'],
    ['flags.observer', 'no', 'flags.observer'],
    ['hostnames.0', 'bad host', 'hostnames.0'],
    ['active', 'yes', 'active'],
  ],
  curation: [
    ['slug', 'Example Access', 'slug'],
    ['name', DELETE, 'name'],
    ['seats', 'PBE000123', 'seats'],
    ['seats.0', 'PBE00012', 'seats.0'],
    ['seats.0', 'pbe000123', 'seats.0'],
    ['seats.1', 'XNO000042', 'seats.1'],
    ['seats.1', 'PNO0000421', 'seats.1'],
    ['member_key', DELETE, 'member_key'],
    ['country', 'Belgium', 'country'],
    ['notes', DELETE, 'notes'],
  ],
  zone: [
    ['existing_ok', 21, 'existing_ok'],
    ['nonexistent_ok', 11, 'nonexistent_ok'],
    ['existing_total', -1, 'existing_total'],
    ['existing_ok', 1.5, 'existing_ok'],
    ['zone_kind', 'DNS', 'zone_kind'],
    ['zone', 'not a zone', 'zone'],
    ['env', '', 'env'],
    ['soa_serial', 2 ** 32, 'soa_serial'],
    ['soa_serial', '2026112207', 'soa_serial'],
    ['ns.0', 'ns1', 'ns.0'],
    ['dname_target', 'x', 'dname_target'],
    ['critical_nxdomain', DELETE, 'critical_nxdomain'],
    ['management', DELETE, 'management'],
    ['management.tls_ok', 'yes', 'management.tls_ok'],
    ['management.tls_not_after', 'soon', 'management.tls_not_after'],
    ['management.host', 'sml', 'management.host'],
  ],
  ack: [
    ['anomaly_id', '', 'anomaly_id'],
    ['anomaly_id', DELETE, 'anomaly_id'],
    ['acknowledged', 'true', 'acknowledged'],
    ['reason', DELETE, 'reason'],
    ['at', '2026-11-22', 'at'],
    ['at', null, 'at'],
  ],
};

describe('feed records: every kind', () => {
  it('covers all eight kinds', () => {
    expect([...FEED_KINDS].sort()).toEqual(Object.keys(FEED_SCHEMAS).sort());
    expect([...FEED_KINDS].sort()).toEqual(Object.keys(VALID).sort());
    expect(FEED_KINDS).toHaveLength(8);
  });

  for (const kind of FEED_KINDS) {
    describe(kind, () => {
      it('parses a valid record', () => {
        const r = parse(VALID[kind]);
        expect(r.kind).toBe(kind);
      });

      it('ignores unknown fields, at the top level and nested', () => {
        const withExtra = { ...structuredClone(VALID[kind]), producer_version: '1.4.2', x_debug: { a: 1 } };
        const r = parse(withExtra) as Record<string, unknown>;
        expect(r).not.toHaveProperty('producer_version');
        expect(r).not.toHaveProperty('x_debug');
      });

      it('rejects a record without `at`', () => {
        expectRejected(variant(VALID[kind], 'at', DELETE), 'at');
      });

      it.each(INVALID[kind].map(([path, value, errorPath]) => ({ path, value, errorPath, shown: value === DELETE ? '(missing)' : JSON.stringify(value) })))(
        'rejects $path = $shown (error names $errorPath)',
        ({ path, value, errorPath }) => {
          expectRejected(variant(VALID[kind], path, value), errorPath);
        },
      );
    });
  }
});

describe('feed records: normalisation and details', () => {
  it('probe: lower-cases hostname, ptr and fingerprint; keeps the instant as written', () => {
    const r = parse(VALID.probe);
    if (r.kind !== 'probe') throw new Error('kind');
    expect(r.hostname).toBe('ap.example-access.be');
    expect(r.ptr).toBe('ap1.example-access.be');
    expect(r.cert?.fingerprint).toBe(FP_LOWER);
    expect(r.at).toBe('2026-11-22T09:15:00.250+01:00');
    expect(r.error).toBeUndefined();
  });

  it('probe: a down check with unreached phases, no certificate and no addresses is valid', () => {
    const down = {
      ...VALID.probe,
      result: 'down',
      phases: { dns: 3.1, tcp: null, tls: null, http: null, total: 10000 },
      ips: [],
      ptr: null,
      cert: null,
      error: 'connect ETIMEDOUT 203.0.113.17:443',
    };
    const r = parse(down);
    if (r.kind !== 'probe') throw new Error('kind');
    expect(r.cert).toBeNull();
    expect(r.phases.tcp).toBeNull();
    expect(r.error).toBe('connect ETIMEDOUT 203.0.113.17:443');
  });

  it('directory: the full participant form becomes the canonical id with scheme and value', () => {
    const r = parse(VALID.directory);
    if (r.kind !== 'directory') throw new Error('kind');
    expect(r.participant).toEqual(CANONICAL);
  });

  it('directory: an absent participant may have no card', () => {
    const r = parse({ ...VALID.directory, present: false, card: null, participant: '9925::BE0123456789' });
    if (r.kind !== 'directory') throw new Error('kind');
    expect(r.card).toBeNull();
    expect(r.participant.id).toBe('9925::be0123456789');
  });

  it('sml: normalises participant and SMP hostname; zone is optional; unregistered has smp null', () => {
    const r = parse(VALID.sml);
    if (r.kind !== 'sml') throw new Error('kind');
    expect(r.participant).toEqual(CANONICAL);
    expect(r.smp).toBe('smp.example-access.be');
    const u = parse({ kind: 'sml', at: '2026-11-22T03:00:12Z', participant: '0208::0123456789', registered: false, smp: null });
    if (u.kind !== 'sml') throw new Error('kind');
    expect(u.smp).toBeNull();
    expect(u.zone).toBeUndefined();
  });

  it('smp: normalises participant, SMP host and endpoint fingerprints; http URLs and empty lists are valid', () => {
    const r = parse(VALID.smp);
    if (r.kind !== 'smp') throw new Error('kind');
    expect(r.participant).toEqual(CANONICAL);
    expect(r.smp).toBe('smp.example-access.be');
    expect(r.endpoints[0]!.cert?.fingerprint).toBe(FP_LOWER);
    expect(r.endpoints[0]!.doctype).toBe(DOCTYPE); // identifiers are kept as written
    parse(variant(VALID.smp, 'endpoints.0.url', 'http://ap.example-access.be:8080/as4'));
    parse(variant(VALID.smp, 'endpoints.0.cert', null));
    parse({ ...VALID.smp, endpoints: [] });
  });

  it('member: lower-cases hostnames; hostnames and active have defaults', () => {
    const r = parse(VALID.member);
    if (r.kind !== 'member') throw new Error('kind');
    expect(r.hostnames).toEqual(['ap.example-access.be']);
    const { hostnames: _h, active: _a, ...minimal } = VALID.member;
    const m = parse({ ...minimal, url: null, legal_name: null, country: null });
    if (m.kind !== 'member') throw new Error('kind');
    expect(m.hostnames).toEqual([]);
    expect(m.active).toBe(true);
  });

  it('curation: keeps seat ids and nullable fields', () => {
    const r = parse(VALID.curation);
    if (r.kind !== 'curation') throw new Error('kind');
    expect(r.seats).toEqual(['PBE000123', 'PNO000042']);
    expect(r.notes).toBeNull();
    parse({ ...VALID.curation, seats: [], member_key: null, country: null, natural_key: null });
  });

  it('zone: lower-cases zone, NS and management host; ok equal to total is valid; management may be null', () => {
    const r = parse(VALID.zone);
    if (r.kind !== 'zone') throw new Error('kind');
    expect(r.zone).toBe('participant.sml.prod.tech.peppol.org');
    expect(r.ns).toEqual(['ns1.sml.prod.tech.peppol.org']);
    expect(r.management?.host).toBe('sml.prod.tech.peppol.org');
    parse({ ...VALID.zone, management: null, soa_serial: null, existing_ok: 0, nonexistent_ok: 0 });
  });

  it('zone: ok greater than total names the ok field and its total', () => {
    const e = expectRejected({ ...VALID.zone, existing_ok: 21, nonexistent_ok: 11 }, 'existing_ok');
    expect(e).toMatch(/existing_total/);
    expect(e).toMatch(/(^|; )nonexistent_ok: .*nonexistent_total/);
  });

  it('ack: a withdrawal with a reason is valid', () => {
    const r = parse({ ...VALID.ack, acknowledged: false, reason: 'acknowledged by mistake' });
    if (r.kind !== 'ack') throw new Error('kind');
    expect(r.acknowledged).toBe(false);
  });

  it('reports several problems of one line, each with its path', () => {
    const r = parseFeedLine(JSON.stringify({ ...VALID.probe, role: 'X', result: 'Y' }));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toMatch(/(^|; )role: /);
      expect(r.error).toMatch(/(^|; )result: /);
    }
  });
});

describe('feed lines: framing', () => {
  it.each(['not json', '', '{"kind":"probe"', "{'kind':'ack'}", '{"kind":"ack",}'])('rejects non-JSON %j', (line) => {
    const r = parseFeedLine(line);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^not JSON/);
  });

  it.each(['[1,2]', '[]', '42', '"probe"', 'null', 'true'])('rejects the JSON value %s (not an object)', (line) => {
    const r = parseFeedLine(line);
    expect(r).toEqual({ ok: false, error: 'not a JSON object' });
  });

  it('rejects a missing kind', () => {
    const { kind: _k, ...rest } = VALID.ack;
    const r = parseFeedLine(JSON.stringify(rest));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^kind: expected one of probe, directory, sml, smp, member, curation, zone, ack, got nothing$/);
  });

  it.each(['probes', 'PROBE', 'event', '', 'toString', 'constructor', '__proto__', 'hasOwnProperty'])('rejects the unknown kind %j without throwing', (kind) => {
    const line = JSON.stringify({ ...VALID.ack, kind });
    let r: ReturnType<typeof parseFeedLine> | undefined;
    expect(() => (r = parseFeedLine(line))).not.toThrow();
    expect(r?.ok).toBe(false);
    if (r && !r.ok) {
      expect(r.error).toContain('kind: expected one of');
      expect(r.error).toContain(JSON.stringify(kind));
    }
  });

  it('rejects a non-string kind', () => {
    const r = parseFeedLine(JSON.stringify({ ...VALID.ack, kind: 7 }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^kind: .*got 7$/);
  });

  it('never throws on arbitrary JSON objects', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...FEED_KINDS), fc.string()),
        fc.dictionary(fc.string(), fc.jsonValue()),
        (kind, rest) => {
          const r = parseFeedLine(JSON.stringify({ ...rest, kind }));
          expect(typeof r.ok).toBe('boolean');
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('FeedIndex (feeds.json)', () => {
  const seg = (path: string, sha256 = SHA, bytes: unknown = 1843271) => ({ segments: [{ path, sha256, bytes }] });

  it('accepts relative segment paths, .gz included, and an empty list', () => {
    expect(FeedIndex.safeParse(seg('2026/11/22/probe-0001.ndjson.gz')).success).toBe(true);
    expect(FeedIndex.safeParse(seg('directory-0001.ndjson', SHA, 0)).success).toBe(true);
    expect(FeedIndex.safeParse({ segments: [] }).success).toBe(true);
    // unknown fields are ignored here too
    expect(FeedIndex.safeParse({ ...seg('a.ndjson'), generated_at: '2026-11-22T08:00:00Z' }).success).toBe(true);
  });

  it.each(['../x.ndjson', 'a/../../x.ndjson', '..', '/etc/passwd', '/abs/x.ndjson', 'a\\b.ndjson', 'x\0.ndjson', ''])('rejects the path %j', (path) => {
    const r = FeedIndex.safeParse(seg(path));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['segments', 0, 'path']);
  });

  it.each([SHA.toUpperCase(), SHA.slice(1), `${SHA}0`, 'z'.repeat(64), ''])('rejects the sha256 %j', (sha) => {
    const r = FeedIndex.safeParse(seg('a.ndjson', sha));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['segments', 0, 'sha256']);
  });

  it.each([-1, 1.5, '12', null])('rejects bytes %j', (bytes) => {
    const r = FeedIndex.safeParse(seg('a.ndjson', SHA, bytes));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['segments', 0, 'bytes']);
  });

  it('rejects a missing or non-array segments list', () => {
    expect(FeedIndex.safeParse({}).success).toBe(false);
    expect(FeedIndex.safeParse({ segments: 'a.ndjson' }).success).toBe(false);
    expect(FeedIndex.safeParse({ segments: [{ path: 'a.ndjson', sha256: SHA }] }).success).toBe(false);
  });
});

describe('ids: parseParticipantId', () => {
  it('accepts the canonical form', () => {
    expect(parseParticipantId('0208::0123456789')).toEqual({ id: '0208::0123456789', scheme: '0208', value: '0123456789' });
    expect(parseParticipantId('9925::BE0123456789')).toEqual({ id: '9925::be0123456789', scheme: '9925', value: 'be0123456789' });
  });

  it('accepts the full Peppol form, prefix in any case', () => {
    expect(parseParticipantId(FULL_ID)).toEqual(CANONICAL);
    expect(parseParticipantId('ISO6523-ACTORID-UPIS::0208:0123456789AB')).toEqual(CANONICAL);
    expect(parseParticipantId('iso6523-actorid-upis::0192:991825827')?.id).toBe('0192::991825827');
  });

  it('keeps single colons inside the value, in both forms', () => {
    expect(parseParticipantId('0088::urn:gln:5790000435975')?.value).toBe('urn:gln:5790000435975');
    expect(parseParticipantId('iso6523-actorid-upis::0088:urn:gln:5790000435975')?.id).toBe('0088::urn:gln:5790000435975');
  });

  it('trims surrounding whitespace', () => {
    expect(parseParticipantId('  0208::0123456789\n')?.id).toBe('0208::0123456789');
  });

  it.each([
    ['no scheme', '0123456789'],
    ['empty scheme', '::0123456789'],
    ['single colon', '0208:0123456789'],
    ['3-digit scheme', '208::0123456789'],
    ['5-digit scheme', '02080::0123456789'],
    ['non-digit scheme', 'abcd::0123456789'],
    ['scheme with space', '0208 ::0123456789'],
    ['empty value', '0208::'],
    ['empty value (full form)', 'iso6523-actorid-upis::0208:'],
    ['no value separator (full form)', 'iso6523-actorid-upis::0208'],
    ['bad scheme (full form)', 'iso6523-actorid-upis::208:0123456789'],
    ['leading space in value', '0208:: 0123456789'],
    ['space in value', '0208::0123 456789'],
    ['tab in value', '0208::0123\t456789'],
    ['NUL in value', '0208::0123\u0000456789'],
    ['DEL in value', '0208::0123\u007f456789'],
    ['non-breaking space in value', '0208::0123\u00a0456789'],
    ['double colon in value', '0208::a::b'],
    ['empty', ''],
    ['whitespace only', '   '],
    ['value too long', `0208::${'a'.repeat(201)}`],
  ])('rejects %s', (_what, input) => {
    expect(parseParticipantId(input)).toBeNull();
  });

  it('accepts a value of 200 characters', () => {
    expect(parseParticipantId(`0208::${'a'.repeat(200)}`)?.value).toHaveLength(200);
  });

  const scheme = fc.stringMatching(/^[0-9]{4}$/);
  // Realistic identifier characters, upper and lower case, with single colons and a few others.
  const value = fc
    .string({ unit: fc.constantFrom(...'abcdefxyzABCDEFXYZ0123456789-._:@+'.split('')), minLength: 1, maxLength: 60 })
    .filter((v) => !v.includes('::'));

  it('property: canonical and full forms normalise to the same lower-cased id', () => {
    fc.assert(
      fc.property(scheme, value, (s, v) => {
        const canonical = parseParticipantId(`${s}::${v}`);
        const full = parseParticipantId(`${PEPPOL_ID_PREFIX}${s}:${v}`);
        const fullUpper = parseParticipantId(`${PEPPOL_ID_PREFIX.toUpperCase()}${s}:${v}`);
        expect(canonical).toEqual({ id: `${s}::${v.toLowerCase()}`, scheme: s, value: v.toLowerCase() });
        expect(full).toEqual(canonical);
        expect(fullUpper).toEqual(canonical);
      }),
      { numRuns: 200 },
    );
  });

  it('property: normalisation is idempotent, and both forms agree on any input', () => {
    // (A scheme with surrounding whitespace is trimmed away only in the canonical form, so leave it out.)
    const anyScheme = fc.oneof(scheme, fc.string({ maxLength: 5 }).filter((s) => s.trim() === s));
    const anyValue = fc.oneof(value, fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }));
    fc.assert(
      fc.property(anyScheme, anyValue, (s, v) => {
        const canonical = parseParticipantId(`${s}::${v}`);
        const full = parseParticipantId(`${PEPPOL_ID_PREFIX}${s}:${v}`);
        expect(full).toEqual(canonical);
        for (const p of [canonical, full]) {
          if (p === null) continue;
          expect(parseParticipantId(p.id)).toEqual(p);
          expect(parseParticipantId(`${PEPPOL_ID_PREFIX}${p.scheme}:${p.value}`)).toEqual(p);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('ids: seatIdFromSubject', () => {
  it.each([
    ['CN=PBE000123,O=Example Access BV,C=BE', 'PBE000123'],
    ['C=NO, O=Example Norge AS, CN=PNO000042', 'PNO000042'],
    ['CN = PDK000777 , O=Example ApS, C=DK', 'PDK000777'],
    ['/C=SE/O=Example AB/CN=PSE000001', 'PSE000001'],
    ['CN=PBE000123+SERIALNUMBER=42,O=Example,C=BE', 'PBE000123'],
    ['cn=PBE000123,o=Example,c=BE', 'PBE000123'],
    ['CN=ap.example-access.be,CN=PBE000123,O=Example', 'PBE000123'],
  ])('%s -> %s', (subject, seat) => {
    expect(seatIdFromSubject(subject)).toBe(seat);
  });

  it.each([
    'CN=ap.example-access.be,O=Example Access BV,C=BE',
    'CN=PBE0001234,O=Example,C=BE',
    'CN=PBE00012,O=Example,C=BE',
    'CN=pbe000123,O=Example,C=BE',
    'CN=XBE000123,O=Example,C=BE',
    'O=PBE000123,C=BE',
    'OU=CN=PBE000123,O=Example',
    'OU=Ops\\,CN=PBE000123,O=Example,C=BE',
    'CN=PEPPOL ACCESS POINT CA - G2,OU=FOR TEST ONLY,O=OpenPEPPOL AISBL,C=BE',
    '',
  ])('%j has no seat id', (subject) => {
    expect(seatIdFromSubject(subject)).toBeNull();
  });
});

describe('ids: organisationFromSubject', () => {
  it.each([
    ['CN=PBE000123,O=Example Access BV,C=BE', 'Example Access BV'],
    ['CN=PBE000123,O=Example\\, Inc.,C=US', 'Example, Inc.'],
    ['CN=PBE000123,O=Example\\,Inc\\, Ltd,C=GB', 'Example,Inc, Ltd'],
    ['CN=PBE000123, O = OpenPEPPOL AISBL , C=BE', 'OpenPEPPOL AISBL'],
    ['CN=PEPPOL ACCESS POINT CA - G2,OU=FOR TEST ONLY,O=OpenPEPPOL AISBL,C=BE', 'OpenPEPPOL AISBL'],
    ['O=First BV,O=Second BV', 'First BV'],
    ['CN=PBE000123,O=A\\+B Solutions,C=BE', 'A+B Solutions'],
    ['CN=PBE000123,O=A+B Solutions,C=BE', 'A+B Solutions'],
    ['CN=PBE000123,O=Example, Inc.,C=US', 'Example, Inc.'],
    ['CN=PBE000123,O=Back\\\\slash BV,C=BE', 'Back\\slash BV'],
    ['CN=PBE000123,O=\\"Quoted\\" NV,C=BE', '"Quoted" NV'],
    ['/C=DK/O=A/S Example/CN=PDK000777', 'A/S Example'],
    // an escaped separator never starts an attribute
    ['OU=Ops\\,O=Spoofed BV,O=Real BV,C=BE', 'Real BV'],
  ])('%s -> %s', (subject, org) => {
    expect(organisationFromSubject(subject)).toBe(org);
  });

  it.each(['CN=PBE000123,C=BE', 'CN=PBE000123,O=,C=BE', 'CN=PBE000123,OU=Example,C=BE', ''])('%j has no organisation', (subject) => {
    expect(organisationFromSubject(subject)).toBeNull();
  });
});
