// The fast path of feed parsing (src/feeds/validate.ts) against the contract (the zod schemas run
// by zod's own parser): for random valid and near-valid lines of every kind, both accept or both
// reject, accepted lines give the identical normalised record, and rejected lines the identical error
// text as `parseFeedLine`. Lines come in runs that share sub-objects (certificates, endpoints) with
// small changes, so the memoised sub-objects are tested against near misses. Also `timestampMs`
// against `Date.parse` and the Timestamp schema.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FEED_KINDS, FEED_SCHEMAS, formatIssues, parseFeedLine, Timestamp, type FeedKind, type ParseResult } from '../src/feeds/schema.js';
import { parseFeedLineFast, timestampMs } from '../src/feeds/validate.js';

/** The contract: zod's interpreted parser on the parsed JSON, no memo, no compilation. */
function reference(line: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return parseFeedLine(line);
  }
  const kind = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as { kind?: unknown }).kind : undefined;
  if (typeof kind !== 'string' || !Object.hasOwn(FEED_SCHEMAS, kind)) return parseFeedLine(line);
  const r = FEED_SCHEMAS[kind as FeedKind].safeParse(value);
  return r.success ? { ok: true, record: r.data } : { ok: false, error: formatIssues(r.error.issues) };
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

// --- field values: valid ones and near misses on each rule's edge ---------------------------------

/** Mostly `valid`, sometimes `near`: records are then often valid, and often just not. */
const mostly = <T, U>(valid: fc.Arbitrary<T>, near: fc.Arbitrary<U>) => fc.oneof({ weight: 12, arbitrary: valid as fc.Arbitrary<T | U> }, { weight: 1, arbitrary: near });

const validTimestamp = fc.oneof(
  fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .record({
      date: fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true }),
      frac: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 12 })),
      zone: fc.oneof(fc.constant('Z'), fc.record({ sign: fc.constantFrom('+', '-'), oh: fc.integer({ min: 0, max: 23 }), om: fc.integer({ min: 0, max: 59 }) }).map((o) => `${o.sign}${pad(o.oh, 2)}:${pad(o.om, 2)}`)),
    })
    .map((t) => `${t.date.toISOString().slice(0, 19).replace(/^\+?0*(\d{4})/, '$1')}${t.frac === null ? '' : `.${t.frac}`}${t.zone}`),
);

/** Timestamps: mostly well-formed, with out-of-range parts, odd fractions and offsets. */
const timestamp = fc.oneof(
  { weight: 3, arbitrary: fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  {
    weight: 4,
    arbitrary: fc
      .record({
        y: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1600, 1900, 2000, 2024, 2100)),
        mo: fc.integer({ min: 0, max: 13 }),
        d: fc.oneof(fc.integer({ min: 0, max: 32 }), fc.constantFrom(28, 29, 30, 31)),
        h: fc.integer({ min: 0, max: 24 }),
        mi: fc.integer({ min: 0, max: 60 }),
        s: fc.integer({ min: 0, max: 60 }),
        frac: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 12 })),
        zone: fc.oneof(
          fc.constantFrom('Z', 'z', '', '+0100', '+01', ' Z', 'Z '),
          fc.record({ sign: fc.constantFrom('+', '-'), oh: fc.integer({ min: 0, max: 24 }), om: fc.integer({ min: 0, max: 60 }) }).map((o) => `${o.sign}${pad(o.oh, 2)}:${pad(o.om, 2)}`),
        ),
      })
      .map((t) => `${pad(t.y, 4)}-${pad(t.mo, 2)}-${pad(t.d, 2)}T${pad(t.h, 2)}:${pad(t.mi, 2)}:${pad(t.s, 2)}${t.frac === null ? '' : `.${t.frac}`}${t.zone}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('2026-11-22', '2026-11-22T08:15Z', '2026-11-22 08:15:00Z', '2026-11-22T08:15:00', '1763799300', '') },
);

const validHostname = fc.oneof(fc.domain(), fc.array(fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/), { minLength: 2, maxLength: 4 }).map((ls) => ls.join('.').toUpperCase()));
const label = fc.stringMatching(/^[a-zA-Z0-9_]([a-zA-Z0-9_-]{0,8}[a-zA-Z0-9])?$/);
const hostname = fc.oneof(
  { weight: 4, arbitrary: fc.domain() },
  { weight: 3, arbitrary: fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.')) },
  { weight: 1, arbitrary: fc.constantFrom('localhost', 'a..b', 'a.b.', '-a.b', 'a-.b', 'A.EXAMPLE.NET', `${'a'.repeat(63)}.be`, `${'a'.repeat(64)}.be`, `${'a.'.repeat(126)}be`, `${'ab.'.repeat(84)}b`) },
);
const ip = fc.oneof(fc.ipV4(), fc.ipV6(), fc.ipV4Extended(), fc.constantFrom('300.1.1.1', '1.2.3', '::', '::ffff:1.2.3.4', '1::2::3', 'ap.example.be', ''));
const fingerprint = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 }),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefg'), minLength: 63, maxLength: 65 }),
);
const participant = fc.oneof(
  fc.tuple(fc.constantFrom('0208', '9925', '0088', '208', '02080'), fc.string({ unit: fc.constantFrom(...'abcXYZ0123456789-.:'), minLength: 0, maxLength: 14 })).map(([s, v]) => `${s}::${v}`),
  fc.tuple(fc.constantFrom('iso6523-actorid-upis::', 'ISO6523-ACTORID-UPIS::'), fc.constantFrom('0208', '9925', 'x'), fc.string({ minLength: 0, maxLength: 10 })).map(([p, s, v]) => `${p}${s}:${v}`),
  fc.constantFrom('0208::a b', ' 0208::abc ', '0208::', '0208:abc', `0208::${'x'.repeat(201)}`, `0208::${'x'.repeat(200)}`),
);
const url = fc.oneof(fc.webUrl({ validSchemes: ['http', 'https'] }), fc.webUrl({ validSchemes: ['ftp', 'https'] }), fc.constantFrom('http:example.com', 'https:/x', ' https://a.example/as4 ', 'https://a.example/\tas4', 'not a url', 'javascript:alert(1)', 'HTTPS://A.EXAMPLE'));
/** Strings around the limits the schemas use (128 ... 4096), in UTF-16 units and in code points. */
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 1, 64, 100, 128, 253, 256, 512, 1024, 4096).chain((n) => fc.string({ unit: 'binary', minLength: Math.max(0, n - 2), maxLength: n + 1 })) },
  { weight: 1, arbitrary: fc.constantFrom('', 'PBE000123', 'pbe000123', 'BE', 'be', 'BEL', 'SML', 'SMK', 'up', 'AP', 'SMP', 'frankfurt', 'Frankfurt', 'a-b') },
);
const number = fc.oneof(
  fc.integer({ min: -5, max: 4_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1.5, 3_600_000, 3_600_000.5, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 1e300, -1),
);
const ms = fc.option(fc.double({ min: 0, max: 5000, noNaN: true }), { nil: null });
const str = (max: number, min = 0) => mostly(fc.string({ minLength: min, maxLength: Math.min(max, 30) }), text);
const ts = mostly(validTimestamp, timestamp);
const host = mostly(validHostname, hostname);
const pid = mostly(fc.tuple(fc.constantFrom('0208', '9925', '0088'), fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9:.-]{0,15}$/)).map(([s, v]) => `${s}::${v}`), participant);
const validIp = fc.oneof(fc.ipV4(), fc.ipV6());
const validUrl = fc.webUrl({ validSchemes: ['http', 'https'] });
const validFingerprint = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 });

/** Any value a field might be replaced with. */
const nasty = fc.oneof(
  timestamp,
  hostname,
  ip,
  fingerprint,
  participant,
  url,
  text,
  number,
  fc.constantFrom(null, true, false, [], {}, '1'),
  fc.jsonValue({ maxDepth: 2 }),
);

// --- records of every kind ---------------------------------------------------------------------

const fp = mostly(validFingerprint, fingerprint);
const cert = fc.record({ fingerprint: fp, subject: str(1024, 1), issuer: str(1024, 1), not_before: ts, not_after: ts });
const endpoint = fc.record({
  doctype: str(1024, 1),
  process: str(1024, 1),
  transport_profile: str(256, 1),
  url: mostly(validUrl, url),
  cert: fc.option(fc.record({ fingerprint: fp, subject: str(1024, 1), issuer: str(1024, 1) }), { nil: null }),
});
const country = mostly(fc.constantFrom('BE', 'NO', 'SE'), fc.constantFrom('be', 'BEL', ''));

const RECORDS: Record<FeedKind, fc.Arbitrary<Record<string, unknown>>> = {
  probe: fc.record(
    {
      kind: fc.constant('probe'),
      at: ts,
      hostname: host,
      role: mostly(fc.constantFrom('SMP', 'AP'), fc.constant('ap')),
      location: mostly(fc.constantFrom('fra', 'ams-2', 'a'.repeat(63)), fc.constantFrom('Frankfurt', '-x', 'a'.repeat(64))),
      result: mostly(fc.constantFrom('up', 'degraded', 'down'), fc.constant('Up')),
      phases: fc.record({ dns: ms, tcp: ms, tls: ms, http: ms, total: ms }),
      ips: fc.array(mostly(validIp, ip), { maxLength: 3 }),
      ptr: fc.option(host, { nil: null }),
      cert: fc.option(cert, { nil: null, freq: 4 }),
      error: fc.option(str(1024), { nil: null }),
    },
    { requiredKeys: ['kind', 'at', 'hostname', 'role', 'location', 'result', 'phases', 'ips', 'ptr', 'cert'] },
  ),
  directory: fc.record({
    kind: fc.constant('directory'),
    at: ts,
    participant: pid,
    present: fc.boolean(),
    card: fc.option(
      fc.record({
        name: fc.option(str(1024), { nil: null }),
        countryCode: fc.option(country, { nil: null }),
        registrationDate: fc.option(mostly(validTimestamp.map((t) => t.slice(0, 10)), fc.constantFrom('2024-02-29', '2023-02-29', '2021-13-01', '2021-06-15T00:00:00Z')), { nil: null }),
      }),
      { nil: null },
    ),
  }),
  sml: fc.record(
    {
      kind: fc.constant('sml'),
      at: ts,
      participant: pid,
      registered: fc.boolean(),
      smp: fc.option(host, { nil: null }),
      zone: fc.option(str(253), { nil: null }),
    },
    { requiredKeys: ['kind', 'at', 'participant', 'registered', 'smp'] },
  ),
  smp: fc.record({ kind: fc.constant('smp'), at: ts, participant: pid, smp: host, endpoints: fc.array(endpoint, { maxLength: 3 }) }),
  member: fc.record(
    {
      kind: fc.constant('member'),
      at: ts,
      key: mostly(fc.constantFrom('example-access', 'x', 'a'.repeat(100)), fc.constantFrom('-x', 'Example', 'a'.repeat(101))),
      trade_name: str(512, 1),
      legal_name: fc.option(str(512), { nil: null }),
      country: fc.option(country, { nil: null }),
      url: fc.option(mostly(validUrl, url), { nil: null }),
      flags: fc.record({ peppol_authority: fc.boolean(), ap: fc.boolean(), smp: fc.boolean(), end_user: fc.boolean(), observer: fc.boolean() }),
      hostnames: fc.array(host, { maxLength: 3 }),
      active: fc.boolean(),
    },
    { requiredKeys: ['kind', 'at', 'key', 'trade_name', 'legal_name', 'country', 'url', 'flags'] },
  ),
  curation: fc.record({
    kind: fc.constant('curation'),
    at: ts,
    slug: mostly(fc.constantFrom('example-access', 'x'), fc.constantFrom('-x', 'Example')),
    name: str(512, 1),
    country: fc.option(country, { nil: null }),
    natural_key: fc.option(str(256), { nil: null }),
    notes: fc.option(str(4096), { nil: null }),
    seats: fc.array(mostly(fc.constantFrom('PBE000123', 'PNO000042'), fc.constantFrom('pbe000123', 'PBE00012', 'XNO000042')), { maxLength: 3 }),
    member_key: fc.option(str(100), { nil: null }),
  }),
  zone: fc
    .record({ existing_total: fc.integer({ min: 0, max: 20 }), nonexistent_total: fc.integer({ min: 0, max: 10 }), over: fc.integer({ min: -1, max: 12 }), over2: fc.integer({ min: -1, max: 12 }) })
    .chain(({ existing_total, nonexistent_total, over, over2 }) =>
      fc.record({
        kind: fc.constant('zone'),
        at: ts,
        zone: host,
        zone_kind: mostly(fc.constantFrom('SML', 'SMK'), fc.constant('DNS')),
        env: str(64, 1),
        operator: str(128, 1),
        location: mostly(fc.constant('fra'), fc.constant('Frankfurt')),
        // ok <= total mostly; one more than the total sometimes
        existing_ok: fc.constant(over > 10 ? existing_total + 1 : Math.max(0, Math.min(existing_total, over))),
        existing_total: fc.constant(existing_total),
        nonexistent_ok: fc.constant(over2 > 10 ? nonexistent_total + 1 : Math.max(0, Math.min(nonexistent_total, over2))),
        nonexistent_total: fc.constant(nonexistent_total),
        critical_nxdomain: fc.boolean(),
        soa_serial: fc.option(mostly(fc.nat(), fc.constantFrom(2 ** 32 - 1, 2 ** 32, 1.5, -1)), { nil: null }),
        ns: fc.array(host, { maxLength: 3 }),
        dname_target: fc.option(host, { nil: null }),
        management: fc.option(
          fc.record({ host: fc.option(host, { nil: null }), tls_ok: fc.option(fc.boolean(), { nil: null }), tls_not_after: fc.option(ts, { nil: null }), tls_issuer: fc.option(str(1024), { nil: null }) }),
          { nil: null },
        ),
      }),
    ),
  ack: fc.record({ kind: fc.constant('ack'), at: ts, anomaly_id: str(128, 1), acknowledged: fc.boolean(), reason: fc.option(str(4096), { nil: null }) }),
};

/** Every path to a value inside `v` (object keys and array indexes), parents first. */
function paths(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof v !== 'object' || v === null) return [];
  const out: (string | number)[][] = [];
  for (const [k, child] of Object.entries(v)) {
    const p = [...prefix, Array.isArray(v) ? Number(k) : k];
    out.push(p, ...paths(child, p));
  }
  return out;
}

/** A change to a record: at the `pick`-th path, delete the value, set `value`, or add an unknown key. */
const change = fc.record({ pick: fc.nat(), op: fc.constantFrom('set', 'set', 'delete', 'extra'), value: nasty });
type Change = { pick: number; op: string; value: unknown };

function applyChange(record: Record<string, unknown>, c: Change): Record<string, unknown> {
  const copy = structuredClone(record);
  const all = paths(copy).filter((p) => p[0] !== 'kind');
  if (c.op === 'extra' || all.length === 0) {
    const objects = [[], ...all].filter((p) => {
      const v = p.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], copy);
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    });
    const at = objects[c.pick % objects.length]!.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], copy) as Record<string, unknown>;
    at.x_extra = c.value;
    return copy;
  }
  const path = all[c.pick % all.length]!;
  const parent = path.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], copy) as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (c.op === 'delete' && !Array.isArray(parent)) delete parent[last];
  else parent[last] = c.value;
  return copy;
}

/** A run of lines: a record, then variants of it with zero to two changes each. */
const run = (kind: FeedKind) =>
  fc.tuple(RECORDS[kind], fc.array(fc.array(change, { maxLength: 2 }), { minLength: 1, maxLength: 5 })).map(([base, variants]) =>
    [base, ...variants.map((cs) => cs.reduce(applyChange, base))].map((r) => JSON.stringify(r)),
  );

describe('fast path: the compiled schemas with memoised sub-objects', () => {
  for (const kind of FEED_KINDS) {
    it(`${kind}: accepts and rejects exactly what zod does, with the identical record or error text`, () => {
      let accepted = 0;
      let rejected = 0;
      fc.assert(
        fc.property(run(kind), (lines) => {
          for (const line of lines) {
            const fast = parseFeedLineFast(line);
            expect(fast).toStrictEqual(reference(line));
            if (!fast.ok) expect(fast).toStrictEqual(parseFeedLine(line));
            if (fast.ok) accepted++;
            else rejected++;
          }
        }),
        { numRuns: 250 },
      );
      // Both sides of every rule get exercised, not just one.
      expect(accepted).toBeGreaterThan(50);
      expect(rejected).toBeGreaterThan(50);
    });
  }

  it('does not take a memoised certificate for one that differs in any field', () => {
    const cert = { fingerprint: 'AB'.repeat(32), subject: 'CN=PBE000001,O=A,C=BE', issuer: 'CN=CA', not_before: '2026-01-01T00:00:00Z', not_after: '2027-01-01T00:00:00Z' };
    const probe = (c: unknown) =>
      JSON.stringify({ kind: 'probe', at: '2026-11-22T00:00:00Z', hostname: 'ap.example.be', role: 'AP', location: 'fra', result: 'up', phases: { dns: 1, tcp: 1, tls: 1, http: 1, total: 4 }, ips: [], ptr: null, cert: c });
    const first = parseFeedLineFast(probe(cert));
    expect(first.ok && first.record.kind === 'probe' && first.record.cert?.fingerprint).toBe('ab'.repeat(32));
    for (const [field, value] of [
      ['subject', 'CN=PBE000002,O=B,C=BE'],
      ['issuer', ''],
      ['not_after', '2027-02-30T00:00:00Z'],
      ['not_before', 1],
    ] as const) {
      const line = probe({ ...cert, [field]: value });
      expect(parseFeedLineFast(line)).toStrictEqual(reference(line));
    }
    const missing = probe({ ...cert, not_after: undefined });
    expect(parseFeedLineFast(missing)).toStrictEqual(parseFeedLine(missing));
    expect(parseFeedLineFast(missing).ok).toBe(false);
  });

  it('keeps the text of lines that are not JSON objects or name no kind', () => {
    for (const line of ['not json', '', '[1]', 'null', '{"kind":"teleport"}', '{"kind":"toString"}', '{"at":"2026-11-22T00:00:00Z"}']) {
      expect(parseFeedLineFast(line)).toStrictEqual(parseFeedLine(line));
    }
  });
});

describe('timestampMs', () => {
  // Date.parse truncates a fraction to milliseconds, except that V8 misreads fractions longer than
  // nine digits that start with a zero (".0007000000" gives 7 ms): the oracle cuts the fraction to
  // its first three digits before calling it.
  const dateParse = (s: string) => Date.parse(s.replace(/(\.\d{3})\d+/, '$1'));

  it('is Date.parse (milliseconds truncated) for every string the Timestamp schema accepts, and NaN for every other', () => {
    let valid = 0;
    fc.assert(
      fc.property(fc.oneof(timestamp, validTimestamp), (s) => {
        const ok = Timestamp.safeParse(s).success;
        const ms = timestampMs(s);
        if (ok) {
          valid++;
          expect(ms).toBe(dateParse(s));
        } else {
          expect(ms).toBeNaN();
        }
      }),
      { numRuns: 3000 },
    );
    expect(valid).toBeGreaterThan(1000);
  });

  it('handles leap days, offsets across midnight and long fractions', () => {
    expect(timestampMs('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12));
    expect(timestampMs('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(timestampMs('1900-02-29T00:00:00Z')).toBeNaN();
    expect(timestampMs('2023-02-29T00:00:00Z')).toBeNaN();
    expect(timestampMs('2026-11-22T00:30:00+01:00')).toBe(Date.UTC(2026, 10, 21, 23, 30));
    expect(timestampMs('2026-11-22T23:30:00-02:00')).toBe(Date.UTC(2026, 10, 23, 1, 30));
    expect(timestampMs('2026-11-22T08:15:00.123987654Z')).toBe(Date.UTC(2026, 10, 22, 8, 15, 0, 123));
    expect(timestampMs('2026-11-22T08:15:00.5Z')).toBe(Date.UTC(2026, 10, 22, 8, 15, 0, 500));
    expect(timestampMs('2026-11-22T08:15:00.0007000000Z')).toBe(Date.UTC(2026, 10, 22, 8, 15, 0, 0));
    expect(timestampMs('0000-01-01T00:00:00Z')).toBe(Date.parse('0000-01-01T00:00:00Z'));
    expect(timestampMs('2026-11-22T08:15:00.Z')).toBeNaN();
    expect(timestampMs('2026-11-22T24:00:00Z')).toBeNaN();
  });
});
