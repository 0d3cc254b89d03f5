// Parameter types: parse, validate and canonicalise query and path values (docs/api.md, "Parameters").
// Edge-safe: no Node imports.
//
// A ParamType turns one raw string (already percent-decoded) into a canonical value, or says what it
// expected; `print` writes the canonical value back, so parse(print(parse(x))) equals parse(x). The route
// table (src/api/routes/table.ts) attaches types to parameter names and decides what absence, repetition and an
// invalid value mean (docs/api.md). Rules common to all types:
// - surrounding whitespace is ignored (`limit= 5` is 5);
// - values are case-folded where the value space has one case: hostnames lower, seat ids and country
//   codes upper, enums and booleans lower, participant id values lower;
// - comma lists are split on ",", items trimmed, empty items dropped, duplicates removed, and the items
//   sorted by Unicode code point (also for `type`: one rule for every list);
// - a "lenient" type never rejects: the spec answers those parameters with an empty result rather than
//   400 (e.g. `country=Belgium` matches nothing).
import { parseParticipantId, SEAT_ID_RE } from '../feeds/ids.js';
import { compareCodePoints } from './sort-keys.js';
import { decodeCursor, encodeCursor, type CursorPosition } from './cursor.js';
import { DAY_MS } from './time.js';

export type ParamResult<T> = { ok: true; value: T } | { ok: false; expected: string };

/** A JSON Schema fragment (OpenAPI parameter schema). */
export type JsonSchema = Record<string, unknown>;

export interface ParamType<T> {
  /** Short name of the type (docs). */
  readonly kind: string;
  /** What a valid value looks like, as a phrase ("an ISO 8601 date-time ..."). */
  readonly expected: string;
  /** True when the value is a comma-separated list (repeated parameters are merged). */
  readonly list: boolean;
  /** False when parse never rejects (the value is canonicalised only). */
  readonly strict: boolean;
  /** JSON Schema of the raw value (for a list: of one item). */
  readonly schema: JsonSchema;
  // Method syntax (not property functions): a ParamType<string> is then usable where a
  // ParamType<unknown> is expected (the route table holds parameters of many types).
  parse(raw: string): ParamResult<T>;
  print(value: T): string;
}

const ok = <T>(value: T): ParamResult<T> => ({ ok: true, value });

/** Trims spaces, tabs and line breaks (not other Unicode spaces: they are part of a value). */
function trim(s: string): string {
  return s.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
}

/** ASCII-only lower/upper casing: identifiers here are ASCII, and full Unicode folding could map a
 * non-ASCII letter onto an ASCII one (the Kelvin sign K lower-cases to "k"). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}
function asciiUpper(s: string): string {
  return s.replace(/[a-z]+/g, (m) => m.toUpperCase());
}

// ---------------------------------------------------------------------------------------------
// Scalars

export function enumType<const V extends string>(values: readonly V[], what = 'one of'): ParamType<V> {
  const set = new Set<string>(values);
  const expected = `${what} ${values.map((v) => `"${v}"`).join(', ')}`;
  return {
    kind: 'enum',
    expected,
    list: false,
    strict: true,
    schema: { type: 'string', enum: [...values] },
    parse(raw) {
      const v = asciiLower(trim(raw));
      return set.has(v) ? ok(v as V) : { ok: false, expected };
    },
    print: (v) => v,
  };
}

/**
 * One of `values` exactly as written: no trimming, no case folding. For names that are the last
 * segment of a URI another document holds (the problem types), where one spelling is the name.
 */
export function exactEnumType<const V extends string>(values: readonly V[], what = 'one of'): ParamType<V> {
  const base = enumType(values, what);
  const set = new Set<string>(values);
  const isValue = (v: string): v is V => set.has(v);
  return { ...base, parse: (raw) => (isValue(raw) ? ok(raw) : { ok: false, expected: base.expected }) };
}

const BOOL_EXPECTED = '"true" or "false"';

/** `true` or `false`, any letter case. Not 1/0/yes/no: one spelling per value. */
export const booleanType: ParamType<boolean> = {
  kind: 'boolean',
  expected: BOOL_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'boolean' },
  parse(raw) {
    const v = asciiLower(trim(raw));
    if (v === 'true') return ok(true);
    if (v === 'false') return ok(false);
    return { ok: false, expected: BOOL_EXPECTED };
  },
  print: (v) => (v ? 'true' : 'false'),
};

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function validYmd(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const max = m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m - 1]!;
  return d <= max;
}

/** Milliseconds of a UTC calendar instant; years 0–99 are not shifted to 19xx. */
function utcMs(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  const t = new Date(Date.UTC(2000, mo - 1, d, h, mi, s, ms));
  t.setUTCFullYear(y);
  return t.getTime();
}

// A space before the offset is read as "+": an unencoded "+01:00" arrives as " 01:00" after
// form-decoding of the query string (the surrounding trim never removes an inner space).
// Seconds may be left out (`08:15Z`), a fraction needs them (`.` or `,`); the offset is `±hh:mm`,
// `±hhmm` or `±hh` (ISO 8601's extended and basic forms).
const TS_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2})(?::?(\d{2}))?)$/;
const TS_EXPECTED = 'an ISO 8601 date-time with a time zone, in the years 0000–9999 (UTC), e.g. "2026-11-22T08:15:00Z", "2026-11-22T08:15Z" or "2026-11-22T09:15:00+01:00" (+0100 and +01 too)';

/**
 * The instants a timestamp parameter may name: the years 0000–9999 in UTC, the range that
 * `toISOString()` prints with four-digit years (beyond it, `-000001-…` and `+010000-…`, the canonical
 * value would not parse again). An offset can push a written 0000 or 9999 outside: rejected.
 */
export const TIMESTAMP_MIN_MS = utcMs(0, 1, 1, 0, 0, 0, 0);
export const TIMESTAMP_MAX_MS = utcMs(9999, 12, 31, 23, 59, 59, 999);

/** Parses an RFC 3339 / ISO 8601 date-time with `Z` or an offset to epoch ms; null when invalid. */
export function parseTimestamp(raw: string): number | null {
  const m = TS_RE.exec(trim(raw));
  if (!m) return null;
  // Absent seconds and offset minutes are 0 (Number(undefined ?? 0)).
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  if (!validYmd(y, mo, d) || h > 23 || mi > 59 || s > 59) return null;
  // Fractions beyond milliseconds are truncated (the API's resolution is 1 ms).
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  let offset = 0;
  if (!m[8]) {
    const oh = Number(m[10]);
    const om = Number(m[11] ?? '0');
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const t = utcMs(y, mo, d, h, mi, s, ms) - offset;
  return t < TIMESTAMP_MIN_MS || t > TIMESTAMP_MAX_MS ? null : t;
}

/** An instant, canonically printed as `Date.prototype.toISOString()` (UTC, milliseconds, Z). */
export const timestampType: ParamType<number> = {
  kind: 'timestamp',
  expected: TS_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', description: 'An ISO 8601 date-time with a zone (Z, ±HH:MM, ±HHMM or ±HH); seconds may be left out; an instant of the years 0000–9999 (UTC).' },
  parse(raw) {
    const ms = parseTimestamp(raw);
    return ms === null ? { ok: false, expected: TS_EXPECTED } : ok(ms);
  },
  print: (ms) => new Date(ms).toISOString(),
};

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_EXPECTED = 'a calendar date YYYY-MM-DD from 0001-01-01 to 9999-12-31, e.g. "2026-11-22"';

/**
 * A calendar date `YYYY-MM-DD` (UTC day) of the years 0001–9999. Year 0000 is left out so that a
 * window default a few weeks before a given date (the churn window's `from`) is still a four-digit
 * year.
 */
export const dateType: ParamType<string> = {
  kind: 'date',
  expected: DATE_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', format: 'date', description: 'A calendar date of the years 0001–9999.' },
  parse(raw) {
    const v = trim(raw);
    const m = DATE_RE.exec(v);
    if (!m || Number(m[1]) < 1 || !validYmd(Number(m[1]), Number(m[2]), Number(m[3]))) return { ok: false, expected: DATE_EXPECTED };
    return ok(v);
  },
  print: (v) => v,
};

function dateMs(date: string): number {
  // A validated YYYY-MM-DD: three numbers.
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return utcMs(y, m, d, 0, 0, 0, 0);
}

/** Adds `days` (may be negative) to a YYYY-MM-DD date. */
export function addDays(date: string, days: number): string {
  return new Date(dateMs(date) + days * DAY_MS).toISOString().slice(0, 10);
}

/** The UTC day of an instant. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export const LIMIT_MIN = 1;
export const LIMIT_MAX = 200;
export const LIMIT_DEFAULT = 50;
const LIMIT_EXPECTED = `an integer (values outside ${LIMIT_MIN}–${LIMIT_MAX} are clamped)`;

/**
 * Page size. Any integer is accepted and clamped into 1–200 (0 and negatives become 1, 500 becomes
 * 200); anything that is not an integer in decimal digits ("abc", "1.5", "1e2", "0x10") is invalid.
 */
export const limitType: ParamType<number> = {
  kind: 'limit',
  expected: LIMIT_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'integer', minimum: LIMIT_MIN, maximum: LIMIT_MAX, default: LIMIT_DEFAULT },
  parse(raw) {
    const v = trim(raw);
    if (!/^[+-]?[0-9]+$/.test(v)) return { ok: false, expected: LIMIT_EXPECTED };
    const n = Number(v);
    return ok(n < LIMIT_MIN ? LIMIT_MIN : n > LIMIT_MAX ? LIMIT_MAX : n);
  },
  print: (n) => String(n),
};

const PID_EXPECTED = 'a participant identifier scheme::value (e.g. "0208::0123456789") or iso6523-actorid-upis::scheme:value';

/** A participant id in canonical or full Peppol form, normalised to canonical `scheme::value`. */
export const participantIdType: ParamType<string> = {
  kind: 'participant-id',
  expected: PID_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', pattern: '^(?:[0-9]{4}::|iso6523-actorid-upis::[0-9]{4}:).+$' },
  parse(raw) {
    const p = parseParticipantId(trim(raw));
    return p ? ok(p.id) : { ok: false, expected: PID_EXPECTED };
  },
  print: (v) => v,
};

const HOST_RE = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)+$/;
const HOST_EXPECTED = 'a fully-qualified hostname, e.g. "smp.example.com"';

/**
 * Lower-cases a hostname and drops trailing dots (the absolute form `example.com.` names the same host).
 * A value of dots only is kept as it is: folded to nothing it would read as an absent filter.
 */
export function foldHostname(raw: string): string {
  const v = asciiLower(trim(raw));
  return v.replace(/([^.])\.+$/, '$1');
}

/** A fully-qualified DNS hostname (the feeds' rule: letters, digits, `-`, `_`; at least two labels). */
export const hostnameType: ParamType<string> = {
  kind: 'hostname',
  expected: HOST_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', maxLength: 254 },
  parse(raw) {
    // One trailing dot (the absolute form) is accepted; `a.example..` is not a hostname.
    let v = asciiLower(trim(raw));
    if (v.endsWith('.')) v = v.slice(0, -1);
    return v.length <= 253 && HOST_RE.test(v) ? ok(v) : { ok: false, expected: HOST_EXPECTED };
  },
  print: (v) => v,
};

/** A hostname filter that never rejects: folded like hostnameType; a value that is no hostname matches nothing. */
export const hostFilterType: ParamType<string> = {
  kind: 'hostname-filter',
  expected: HOST_EXPECTED,
  list: false,
  strict: false,
  schema: { type: 'string' },
  parse: (raw) => ok(foldHostname(raw)),
  print: (v) => v,
};

const SEAT_EXPECTED = 'a seat id P + two letters + six digits, e.g. "PBE000123"';

export const seatIdType: ParamType<string> = {
  kind: 'seat-id',
  expected: SEAT_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', pattern: '^[Pp][A-Za-z]{2}[0-9]{6}$' },
  parse(raw) {
    const v = asciiUpper(trim(raw));
    return SEAT_ID_RE.test(v) ? ok(v) : { ok: false, expected: SEAT_EXPECTED };
  },
  print: (v) => v,
};

/** A seat filter that never rejects: upper-cased; a value that is no seat id matches nothing. */
export const seatFilterType: ParamType<string> = {
  kind: 'seat-filter',
  expected: SEAT_EXPECTED,
  list: false,
  strict: false,
  schema: { type: 'string' },
  parse: (raw) => ok(asciiUpper(trim(raw))),
  print: (v) => v,
};

/** An opaque identifier checked against a pattern (case kept unless `fold` says otherwise). */
/**
 * The canonical case of an access point provider key: `c-<slug>` and `o-<slug>-<hash>` are lower case
 * (slugs and hashes are), `s-<SEATID>` upper case after its prefix (seat ids are); so keys are
 * case-insensitive, as seat ids are.
 */
export function foldApKey(raw: string): string {
  const prefix = asciiLower(raw.slice(0, 2));
  return prefix === 's-' ? prefix + asciiUpper(raw.slice(2)) : asciiLower(raw);
}

export function patternType(kind: string, re: RegExp, expected: string, fold: 'lower' | 'upper' | 'none' | ((s: string) => string) = 'none'): ParamType<string> {
  const f = typeof fold === 'function' ? fold : fold === 'lower' ? asciiLower : fold === 'upper' ? asciiUpper : (s: string) => s;
  return {
    kind,
    expected,
    list: false,
    strict: true,
    schema: { type: 'string', pattern: re.source },
    parse(raw) {
      const v = f(trim(raw));
      return re.test(v) ? ok(v) : { ok: false, expected };
    },
    print: (v) => v,
  };
}

/**
 * Folds free text for matching (`q`): Unicode NFC, whitespace runs collapsed to one space, trimmed,
 * lower-cased (full Unicode lower case). Name search must fold the indexed names with the same function.
 */
export function foldText(raw: string): string {
  return raw.normalize('NFC').replace(/\s+/gu, ' ').trim().toLowerCase();
}

export const textType: ParamType<string> = {
  kind: 'text',
  expected: 'text',
  list: false,
  strict: false,
  schema: { type: 'string' },
  parse: (raw) => ok(foldText(raw)),
  print: (v) => v,
};

/** A probe location or `__all__`: lower-cased, never rejected (an unknown location matches nothing). */
export const locationType: ParamType<string> = {
  kind: 'location',
  expected: 'a probe location or "__all__"',
  list: false,
  strict: false,
  schema: { type: 'string' },
  parse: (raw) => ok(asciiLower(trim(raw))),
  print: (v) => v,
};

const CURSOR_EXPECTED = 'a cursor copied unchanged from a previous response of the same list';

/** The raw cursor, checked for format and integrity; parseRequest (src/api/routes/request.ts) then checks it belongs to the list. */
export const cursorType: ParamType<CursorPosition> = {
  kind: 'cursor',
  expected: CURSOR_EXPECTED,
  list: false,
  strict: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
  parse(raw) {
    const r = decodeCursor(trim(raw));
    return r.ok ? ok(r.cursor) : { ok: false, expected: `${CURSOR_EXPECTED}; this one is ${r.reason}` };
  },
  print: (c) => encodeCursor(c),
};

// ---------------------------------------------------------------------------------------------
// Lists

export interface ListItemType {
  readonly expected: string;
  readonly schema: JsonSchema;
  /** The canonical item, or null when the item is invalid (strict lists only). */
  canon(item: string): string | null;
}

/** A comma list of items; `strict` lists reject an invalid item, lenient ones keep it (it matches nothing). */
export function listType(kind: string, item: ListItemType, strict: boolean): ParamType<readonly string[]> {
  const expected = `a comma-separated list of ${item.expected}`;
  return {
    kind,
    expected,
    list: true,
    strict,
    schema: item.schema,
    parse(raw) {
      const seen = new Set<string>();
      for (const part of raw.split(',')) {
        const t = trim(part);
        if (t === '') continue;
        const c = item.canon(t);
        if (c === null) return { ok: false, expected: `${expected}; "${t}" is not one` };
        seen.add(c);
      }
      return ok([...seen].sort(compareCodePoints));
    },
    print: (v) => v.join(','),
  };
}

export const countryItem: ListItemType = {
  expected: 'ISO 3166-1 alpha-2 country codes',
  schema: { type: 'string', pattern: '^[A-Za-z]{2}$' },
  canon: (s) => asciiUpper(s),
};
export const schemeItem: ListItemType = {
  expected: 'participant identifier schemes (ISO 6523 ICDs such as 0208)',
  schema: { type: 'string', pattern: '^[0-9]{4}$' },
  canon: (s) => s,
};
export const hostnameItem: ListItemType = {
  expected: 'SMP hostnames',
  schema: { type: 'string' },
  canon: (s) => foldHostname(s),
};
export const seatItem: ListItemType = {
  expected: 'seat ids (PBE000123)',
  schema: { type: 'string', pattern: '^[Pp][A-Za-z]{2}[0-9]{6}$' },
  canon: (s) => asciiUpper(s),
};

export function enumItem(values: readonly string[], what: string): ListItemType {
  const set = new Set(values);
  return {
    expected: `${what} (${values.map((v) => `"${v}"`).join(', ')})`,
    schema: { type: 'string', enum: [...values] },
    canon: (s) => {
      const v = asciiLower(s);
      return set.has(v) ? v : null;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Errors

/** Problem names of parameter errors (problems.ts catalogue). */
export type ParamProblem =
  | 'invalid-parameter'
  | 'missing-parameter'
  | 'invalid-cursor'
  | 'invalid-identifier'
  | 'host-not-found'
  | 'participant-not-found'
  | 'provider-not-found'
  | 'access-point-not-found'
  | 'churn-not-found'
  | 'seat-not-found'
  | 'anomaly-not-found'
  | 'not-found';

/** One invalid parameter: names the parameter, says what was expected and what was given. */
export interface ParamError {
  param: string;
  in: 'path' | 'query';
  status: 400 | 404;
  problem: ParamProblem;
  /** What a valid value looks like (or the rule broken), as a phrase. */
  expected: string;
  /** The value as given (decoded), absent for a missing parameter. */
  got?: string;
  /** The whole sentence of the detail, for a rule over two parameters that the standard form cannot say. */
  sentence?: string;
}
