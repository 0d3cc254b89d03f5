// Parameter types (src/api/params.ts) and cursors (src/api/cursor.ts): values are validated and
// canonicalised; canonicalisation is idempotent; valid values round-trip; invalid ones are rejected
// with the parameter's name; a cursor decodes to the position it encodes and any single-character
// change to it is rejected.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64urlDecode, base64urlEncode, crc32, decodeCursor, encodeCursor, type CursorPosition } from '../src/api/cursor.js';
import {
  foldApKey,
  booleanType,
  countryItem,
  cursorType,
  dateType,
  enumItem,
  enumType,
  foldText,
  hostFilterType,
  hostnameItem,
  hostnameType,
  limitType,
  listType,
  locationType,
  participantIdType,
  patternType,
  schemeItem,
  seatFilterType,
  seatIdType,
  seatItem,
  textType,
  timestampType,
  type ParamType,
} from '../src/api/params.js';
import { matchRoute } from '../src/api/routes/match.js';
import { parseRequest } from '../src/api/routes/request.js';
import { EVENT_TYPES } from '../src/api/schemas/index.js';

const RUNS = { numRuns: 300 };

const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0');

/** Random ASCII case of a string. */
const randomCase = (s: string) =>
  fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length }).map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
const spaces = fc.constantFrom('', ' ', '  ', '\t');
const padded = (a: fc.Arbitrary<string>) => fc.tuple(spaces, a, spaces).map(([l, s, r]) => l + s + r);

// ---------------------------------------------------------------------------------------------
// Generators of valid raw values, with the canonical value they must parse to

const MIN_MS = Date.UTC(1970, 0, 1);
const MAX_MS = Date.UTC(2200, 0, 1);

/** An RFC 3339 date-time in a random offset and precision, and the epoch ms it denotes (truncated to ms). */
const timestampArb = fc
  .record({
    ms: fc.integer({ min: MIN_MS, max: MAX_MS }),
    offsetMin: fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
    digits: fc.integer({ min: 0, max: 9 }),
    extra: fc.integer({ min: 0, max: 999_999 }),
    zone: fc.constantFrom('Z', 'z', 'offset', 'space-offset'),
    t: fc.constantFrom('T', 't'),
  })
  .map(({ ms, offsetMin, digits, extra, zone, t }) => {
    const off = zone === 'Z' || zone === 'z' ? 0 : offsetMin;
    const local = new Date(ms + off * 60_000);
    const msPart = local.getUTCMilliseconds();
    const frac3 = pad(msPart, 3);
    const frac = digits === 0 ? '' : `.${(frac3 + pad(extra, 6)).slice(0, digits)}`;
    const expectedMs = ms - msPart + (digits === 0 ? 0 : Number(frac3.slice(0, Math.min(digits, 3)).padEnd(3, '0')));
    const sign = off < 0 ? '-' : zone === 'space-offset' ? ' ' : '+';
    const zoneText = zone === 'Z' || zone === 'z' ? zone : `${sign}${pad(Math.trunc(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
    const raw = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}${t}${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${frac}${zoneText}`;
    return { raw, expectedMs };
  });

const dateArb = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2200, 0, 1) }).map((ms) => new Date(ms).toISOString().slice(0, 10));

const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?$/);
const hostnameArb = fc.array(label, { minLength: 2, maxLength: 4 }).map((l) => l.join('.'));
const seatArb = fc.tuple(fc.stringMatching(/^[A-Z]{2}$/), fc.integer({ min: 0, max: 999_999 })).map(([cc, n]) => `P${cc}${pad(n, 6)}`);
const schemeArb = fc.integer({ min: 0, max: 9999 }).map((n) => pad(n, 4));
const pidValueArb = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/);

// ---------------------------------------------------------------------------------------------

/** Every parameter type of the API (lists with their item kinds). */
const TYPES: Array<[string, ParamType<unknown>]> = [
  ['timestamp', timestampType],
  ['date', dateType],
  ['limit', limitType],
  ['boolean', booleanType],
  ['enum', enumType(['open', 'closed'])],
  ['participant id', participantIdType],
  ['hostname', hostnameType],
  ['host filter', hostFilterType],
  ['seat id', seatIdType],
  ['seat filter', seatFilterType],
  ['slug', patternType('slug', /^[a-z0-9][a-z0-9-]{0,99}$/, 'a slug', 'lower')],
  ['text', textType],
  ['location', locationType],
  ['cursor', cursorType],
  ['country list', listType('countries', countryItem, false)],
  ['scheme list', listType('schemes', schemeItem, false)],
  ['hostname list', listType('hostnames', hostnameItem, false)],
  ['seat list', listType('seats', seatItem, false)],
  ['type list', listType('types', enumItem(EVENT_TYPES, 'types'), true)],
] as Array<[string, ParamType<unknown>]>;

/** Raw inputs that are sometimes valid for the type and sometimes not. */
function rawArb(type: ParamType<unknown>): fc.Arbitrary<string> {
  const some = [
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    padded(timestampArb.map((t) => t.raw)),
    dateArb,
    fc.integer({ min: -1000, max: 1000 }).map(String),
    randomCase('true'),
    randomCase('CLOSED'),
    fc.tuple(schemeArb, pidValueArb).chain(([s, v]) => fc.constantFrom(`${s}::${v}`, `iso6523-actorid-upis::${s}:${v}`)).chain(randomCase),
    hostnameArb.chain(randomCase).map((h) => `${h}.`),
    seatArb.chain(randomCase),
    fc.array(fc.constantFrom(...EVENT_TYPES, 'be', 'NL', ' 0208', 'PBE000123', '', 'x'), { maxLength: 6 }).map((a) => a.join(',')),
  ];
  if (type === cursorType) {
    some.push(
      fc.record({ a: fc.integer(), b: fc.string() }).map(({ a, b }) => encodeCursor({ route: 'events.list', partition: [], key: [a, b], hint: '', dir: 'next' })),
    );
  }
  return fc.oneof(...some);
}

describe('canonicalisation', () => {
  it.each(TYPES)('%s: parse(print(parse(x))) equals parse(x), and print is a fixed point', (_name, type) => {
    fc.assert(
      fc.property(rawArb(type), (raw) => {
        const first = type.parse(raw);
        if (!first.ok) return;
        const printed = type.print(first.value);
        const second = type.parse(printed);
        expect(second.ok).toBe(true);
        if (second.ok) {
          expect(second.value).toEqual(first.value);
          expect(type.print(second.value)).toBe(printed);
        }
      }),
      RUNS,
    );
  });

  it('lenient types never reject; strict ones say what they expected', () => {
    for (const [name, type] of TYPES) {
      fc.assert(
        fc.property(rawArb(type), (raw) => {
          const r = type.parse(raw);
          if (!type.strict) expect(r.ok, `${name} ${JSON.stringify(raw)}`).toBe(true);
          else if (!r.ok) expect(r.expected.length).toBeGreaterThan(3);
        }),
        { numRuns: 100 },
      );
    }
  });
});

describe('timestamps', () => {
  it('accept any RFC 3339 date-time with Z or an offset and normalise it to the instant (ms)', () => {
    fc.assert(
      fc.property(padded(timestampArb.map((t) => t.raw)), timestampArb, (_p, t) => {
        const r = timestampType.parse(t.raw);
        expect(r).toEqual({ ok: true, value: t.expectedMs });
        expect(timestampType.print(t.expectedMs)).toBe(new Date(t.expectedMs).toISOString());
      }),
      { numRuns: 1000 },
    );
  });

  it('agree with the calendar: a date-time is valid exactly when its fields name a real instant', () => {
    const digits = (n: number) => fc.integer({ min: 0, max: 10 ** n - 1 }).map((v) => pad(v, n));
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 2999 }), digits(2), digits(2), digits(2), digits(2), digits(2), (y, mo, d, h, mi, s) => {
        const raw = `${y}-${mo}-${d}T${h}:${mi}:${s}Z`;
        const t = new Date(Date.UTC(y, Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
        const real =
          t.getUTCFullYear() === y &&
          t.getUTCMonth() + 1 === Number(mo) &&
          t.getUTCDate() === Number(d) &&
          t.getUTCHours() === Number(h) &&
          t.getUTCMinutes() === Number(mi) &&
          t.getUTCSeconds() === Number(s);
        const r = timestampType.parse(raw);
        expect(r.ok, raw).toBe(real);
        if (r.ok) expect(r.value).toBe(t.getTime());
      }),
      { numRuns: 2000 },
    );
  });

  it('reject impossible dates, missing zones and other forms', () => {
    for (const bad of [
      '2026-02-30T00:00:00Z',
      '2026-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-00-10T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T23:60:00Z',
      '2026-01-01T23:59:60Z',
      '2026-01-01T00:00:00',
      '2026-01-01T00:00',
      '2026-01-01T00Z',
      '2026-01-01T00:00.5Z',
      '2026-01-01',
      '2026-01-01T00:00:00+24:00',
      '2026-01-01T00:00:00+01:60',
      '2026-01-01T00:00:00+010',
      '2026-01-01T00:00:00+01:0',
      '2026-01-01T00:00:00+0160',
      '2026-01-01 00:00:00Z',
      '1767225600000',
      'yesterday',
    ]) {
      expect(timestampType.parse(bad).ok, bad).toBe(false);
    }
    expect(timestampType.parse('2024-02-29T12:00:00.5+01:00')).toEqual({ ok: true, value: Date.parse('2024-02-29T11:00:00.500Z') });
  });

  it('accept the ISO 8601 forms people write: minutes without seconds, offsets ±hhmm and ±hh, a decimal comma', () => {
    const at = Date.parse('2026-11-20T00:00:00.000Z');
    for (const good of ['2026-11-20T00:00Z', '2026-11-20T02:00+02:00', '2026-11-20T02:00:00+0200', '2026-11-20T02:00+02', '2026-11-19T22:30-0130', '2026-11-20T02:00:00 0200']) {
      expect(timestampType.parse(good), good).toEqual({ ok: true, value: at });
    }
    expect(timestampType.parse('2026-11-20T00:00:00,25Z')).toEqual({ ok: true, value: at + 250 });
  });
});

describe('access point keys', () => {
  it('are case-insensitive: c- and o- keys fold to lower case, s- keys to an upper-case seat id', () => {
    for (const [raw, canon] of [
      ['C-Example-Access', 'c-example-access'],
      ['o-ACME-Ab12Cd34', 'o-acme-ab12cd34'],
      ['S-pbe000123', 's-PBE000123'],
      ['s-PBE000123', 's-PBE000123'],
    ]) {
      expect(foldApKey(raw!), raw).toBe(canon);
    }
  });
});

describe('dates', () => {
  it('are YYYY-MM-DD calendar dates, kept as given', () => {
    const digits = (n: number) => fc.integer({ min: 0, max: 10 ** n - 1 }).map((v) => pad(v, n));
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 2999 }), digits(2), digits(2), (y, mo, d) => {
        const raw = `${y}-${mo}-${d}`;
        const t = new Date(Date.UTC(y, Number(mo) - 1, Number(d)));
        const real = t.getUTCFullYear() === y && t.getUTCMonth() + 1 === Number(mo) && t.getUTCDate() === Number(d);
        expect(dateType.parse(raw)).toEqual(real ? { ok: true, value: raw } : { ok: false, expected: dateType.expected });
      }),
      { numRuns: 1000 },
    );
    for (const bad of ['2026-1-05', '20261105', '2026-11-05T00:00:00Z', '']) expect(dateType.parse(bad).ok).toBe(false);
  });
});

describe('calendar edges', () => {
  it('dates lie in the years 0001–9999', () => {
    for (const good of ['0001-01-01', '9999-12-31', '0004-02-29']) expect(dateType.parse(good)).toEqual({ ok: true, value: good });
    for (const bad of ['0000-01-01', '0000-12-31', '10000-01-01']) expect(dateType.parse(bad).ok, bad).toBe(false);
  });

  it('timestamps name instants of the years 0000–9999 (UTC), whose canonical form parses again', () => {
    for (const good of ['0000-01-01T00:00:00Z', '0000-01-01T00:59:59-01:00', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59+23:59']) {
      const r = timestampType.parse(good);
      expect(r.ok, good).toBe(true);
      if (r.ok) expect(timestampType.parse(timestampType.print(r.value))).toEqual(r);
    }
    // An offset pushing the instant out of year 0000 or 9999: toISOString would print -000001-… or +010000-….
    for (const bad of ['0000-01-01T00:00:00+00:01', '9999-12-31T23:59:59-00:01']) expect(timestampType.parse(bad).ok, bad).toBe(false);
  });
});

describe('hostname filters', () => {
  it('a hostname filter of dots only stays that text (folded to nothing it would read as no filter)', () => {
    const list = listType('hostnames', hostnameItem, false);
    expect(list.parse(' . ')).toEqual({ ok: true, value: ['.'] });
    expect(list.parse('A.example.,..')).toEqual({ ok: true, value: ['..', 'a.example'] });
    expect(hostFilterType.parse('..')).toEqual({ ok: true, value: '..' });
    expect(hostFilterType.parse('Smp.Example..')).toEqual({ ok: true, value: 'smp.example' });
  });
});

describe('limit', () => {
  it('clamps every integer into 1–200', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n })), spaces, (n, sp) => {
        const r = limitType.parse(`${sp}${n}${sp}`);
        const v = Number(n);
        expect(r).toEqual({ ok: true, value: v < 1 ? 1 : v > 200 ? 200 : v });
      }),
      RUNS,
    );
    expect(limitType.parse('0')).toEqual({ ok: true, value: 1 });
    expect(limitType.parse('500')).toEqual({ ok: true, value: 200 });
    expect(limitType.parse('-7')).toEqual({ ok: true, value: 1 });
    expect(limitType.parse('007')).toEqual({ ok: true, value: 7 });
  });

  it('rejects anything that is not an integer in decimal digits', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d)), (d) => {
        expect(limitType.parse(String(d)).ok).toBe(false);
      }),
      RUNS,
    );
    for (const bad of ['abc', '1.5', '1e2', '0x10', '10 items', '1,000', '--1', 'Infinity', 'NaN']) expect(limitType.parse(bad).ok, bad).toBe(false);
  });
});

describe('identifiers and enums', () => {
  it('participant ids in canonical or full Peppol form normalise to scheme::value, value lower-cased', () => {
    fc.assert(
      fc.property(schemeArb, pidValueArb, fc.boolean(), (scheme, value, full) => {
        fc.pre(!value.includes('::'));
        const upper = value.toUpperCase();
        const raw = full ? `ISO6523-ACTORID-UPIS::${scheme}:${upper}` : `${scheme}::${upper}`;
        expect(participantIdType.parse(` ${raw} `)).toEqual({ ok: true, value: `${scheme}::${value}` });
      }),
      RUNS,
    );
    for (const bad of ['not-an-id', '0208:0123', '208::0123', 'abcd::0123', '0208::', '0208::a b', '0208::a::b']) {
      expect(participantIdType.parse(bad).ok, bad).toBe(false);
    }
  });

  it('hostnames are lower-cased, lose a trailing dot, and must be fully qualified DNS names', () => {
    fc.assert(
      fc.property(hostnameArb, fc.boolean(), (h, dot) => {
        expect(hostnameType.parse(`${h.toUpperCase()}${dot ? '.' : ''}`)).toEqual({ ok: true, value: h });
      }),
      RUNS,
    );
    for (const bad of ['localhost', 'a..b', '-a.example', 'a-.example', 'a b.example', 'ex@mple.com', `${'a'.repeat(64)}.example`, 'bücher.example']) {
      expect(hostnameType.parse(bad).ok, bad).toBe(false);
    }
  });

  it('seat ids are upper-cased and must be P + two letters + six digits', () => {
    fc.assert(
      fc.property(seatArb, (s) => {
        expect(seatIdType.parse(s.toLowerCase())).toEqual({ ok: true, value: s });
      }),
      RUNS,
    );
    for (const bad of ['PBE00012', 'XBE000123', 'PB1000123', 'PBE0001234']) expect(seatIdType.parse(bad).ok, bad).toBe(false);
  });

  it('enums and booleans accept any letter case and nothing else', () => {
    const status = enumType(['open', 'closed']);
    fc.assert(
      fc.property(fc.constantFrom('open', 'closed'), fc.boolean(), (v, b) => {
        fc.assert(
          fc.property(randomCase(v), (raw) => {
            expect(status.parse(raw)).toEqual({ ok: true, value: v });
          }),
          { numRuns: 5 },
        );
        fc.assert(
          fc.property(randomCase(String(b)), (raw) => {
            expect(booleanType.parse(raw)).toEqual({ ok: true, value: b });
          }),
          { numRuns: 5 },
        );
      }),
      { numRuns: 20 },
    );
    for (const bad of ['1', '0', 'yes', 'no', 't', 'truee']) expect(booleanType.parse(bad).ok, bad).toBe(false);
    expect(status.parse('opened').ok).toBe(false);
  });

  it('free text folds case, Unicode form and whitespace', () => {
    expect(foldText('  ACME\t  Corp\n')).toBe('acme corp');
    expect(foldText('Cafe\u0301')).toBe(foldText('CAFÉ'));
  });
});

describe('comma lists', () => {
  it('split, trim, drop empty items, fold case, deduplicate and sort', () => {
    const countries = listType('countries', countryItem, false);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.stringMatching(/^[A-Z]{2}$/), fc.boolean(), spaces), { maxLength: 12 }), fc.boolean(), (items, trailing) => {
        const raw = items.map(([c, lower, sp]) => `${sp}${lower ? c.toLowerCase() : c}${sp}`).join(',') + (trailing ? ',' : '');
        const expected = [...new Set(items.map(([c]) => c))].sort();
        expect(countries.parse(raw)).toEqual({ ok: true, value: expected });
      }),
      RUNS,
    );
  });

  it('the type list rejects an unknown type, naming it; other lists keep any value (it matches nothing)', () => {
    const types = listType('types', enumItem(EVENT_TYPES, 'types'), true);
    expect(types.parse('HOST_CERT_ROTATED, participant_registered,host_cert_rotated')).toEqual({ ok: true, value: ['host_cert_rotated', 'participant_registered'] });
    const bad = types.parse('host_cert_rotated,cert_rotated');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.expected).toContain('"cert_rotated"');
    expect(listType('countries', countryItem, false).parse('Belgium')).toEqual({ ok: true, value: ['BELGIUM'] });
  });
});

describe('invalid parameters name the parameter (through the route table)', () => {
  const cases: Array<[string, string, fc.Arbitrary<string>]> = [
    ['/v1/events', 'since', fc.string().filter((s) => s.trim() !== '' && !timestampType.parse(s).ok)],
    ['/v1/events', 'until', fc.constantFrom('2026-02-30T00:00:00Z', '2026-01-01', 'now')],
    ['/v1/events', 'type', fc.string({ minLength: 1 }).filter((s) => !listType('t', enumItem(EVENT_TYPES, 't'), true).parse(s).ok)],
    ['/v1/events', 'participant', fc.string({ minLength: 1 }).filter((s) => s.trim() !== '' && !participantIdType.parse(s).ok)],
    ['/v1/anomalies', 'acknowledged', fc.string({ minLength: 1 }).filter((s) => s.trim() !== '' && !booleanType.parse(s).ok)],
    ['/v1/anomalies', 'grade', fc.string({ minLength: 1 }).filter((s) => !['notice', 'warning'].includes(s.trim().toLowerCase()) && s.trim() !== '')],
    ['/v1/incidents', 'limit', fc.string({ minLength: 1 }).filter((s) => s.trim() !== '' && !/^\s*[+-]?\d+\s*$/.test(s))],
    ['/v1/participants', 'sort', fc.constantFrom('name', 'first_seen', 'relevance', 'name.up')],
    ['/v1/incidents', 'cursor', fc.string({ minLength: 1 }).filter((s) => s.trim() !== '')],
    ['/v1/aps/c-acme/churn', 'from', fc.constantFrom('2026-02-29', '26-01-01', 'last-month')],
  ];
  it.each(cases)('%s?%s=<invalid> is a 400 naming "%s"', (path, param, arb) => {
    const m = matchRoute(path)!;
    fc.assert(
      fc.property(arb, (raw) => {
        const r = parseRequest(m.route, m.pathParams, new URLSearchParams([[param, raw]]), { now: Date.parse('2026-11-22T00:00:00Z') });
        expect(r.ok, `${param}=${JSON.stringify(raw)}`).toBe(false);
        if (!r.ok) {
          expect(r.status).toBe(400);
          expect(r.errors.map((e) => e.param)).toEqual([param]);
          expect(r.errors[0]!.got).toBe(raw);
        }
      }),
      { numRuns: 100 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Cursors

const keyField = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
  fc.constant(null),
);
const positionArb: fc.Arbitrary<CursorPosition> = fc.record({
  route: fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }),
  partition: fc.array(fc.string({ unit: 'binary', maxLength: 20 }), { maxLength: 3 }),
  key: fc.array(keyField, { minLength: 1, maxLength: 4 }),
  hint: fc.string({ maxLength: 60 }),
  dir: fc.constantFrom('next' as const, 'prev' as const),
});

describe('cursors', () => {
  it('decode(encode(x)) equals x, and the cursor is base64url', () => {
    fc.assert(
      fc.property(positionArb, (p) => {
        const c = encodeCursor(p);
        expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(c)).toEqual({ ok: true, cursor: p });
      }),
      { numRuns: 1000 },
    );
  });

  it('any single-character substitution is rejected (never another position, never the same)', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. ';
    fc.assert(
      fc.property(positionArb, fc.nat(), fc.constantFrom(...alphabet), (p, at, ch) => {
        const c = encodeCursor(p);
        const i = at % c.length;
        fc.pre(c[i] !== ch);
        const changed = c.slice(0, i) + ch + c.slice(i + 1);
        expect(decodeCursor(changed).ok, changed).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it('rejects truncated, extended and foreign strings', () => {
    fc.assert(
      fc.property(positionArb, fc.nat(), (p, at) => {
        const c = encodeCursor(p);
        const i = at % c.length;
        expect(decodeCursor(c.slice(0, i) + c.slice(i + 1)).ok).toBe(false);
        expect(decodeCursor(c.slice(0, i) + 'A' + c.slice(i)).ok).toBe(false);
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        expect(decodeCursor(s).ok).toBe(false);
      }),
      RUNS,
    );
    expect(decodeCursor('x'.repeat(3000)).ok).toBe(false);
  });

  it('refuses to encode a key that has no JSON form', () => {
    for (const bad of [Number.NaN, Infinity]) {
      expect(() => encodeCursor({ route: 'events.list', partition: [], key: [bad], hint: '', dir: 'next' })).toThrow(TypeError);
    }
  });

  it('uses standard CRC-32 and base64url (RFC 4648 §5)', () => {
    // The CRC-32 check value of the ISO-HDLC / zip CRC.
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const s = base64urlEncode(bytes);
        expect(s).toBe(Buffer.from(bytes).toString('base64url'));
        expect(base64urlDecode(s)).toEqual(bytes);
      }),
      RUNS,
    );
  });
});
