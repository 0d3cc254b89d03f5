// The fast path of feed parsing: the zod schemas of schema.ts, compiled once per thread.
//
// `z.compile` generates one straight-line function per record schema from the schema itself (no
// rule is written twice): it returns the parsed record, or hands the line to zod's ordinary parser,
// which then accepts or rejects it exactly as before. A line that fails goes through
// `parseFeedValue` of schema.ts, so rejects keep the contract's error text. On the benchmark mix this
// validates a record in about a third of the time of the interpreted schemas (docs/ingest.md).
//
// Sub-objects that recur thousands of times (a host's certificate, an access point's endpoint) are
// memoised: one whose fields are all identical to one validated before is parsed as null (or the
// endpoint list as empty) and the earlier output put back. Equal input gives equal output, so the
// record is exactly what the schema gives; records are read-only, so sharing the sub-object is safe.
//
// Also here: `timestampMs`, the epoch milliseconds of a validated feed timestamp without
// `Date.parse` (which costs more than validating the whole record's timestamps).
import { z } from 'zod';
import {
  FEED_KINDS,
  FEED_SCHEMAS,
  type FeedKind,
  type FeedRecord,
  parseFeedLine,
  parseFeedValue,
  type ParseResult,
  type ProbeRecord,
  type SmpRecord,
} from './schema.js';

// Compiled clones: the schemas themselves (and docs/feeds.md, generated from them) are untouched.
const COMPILED = Object.fromEntries(FEED_KINDS.map((k) => [k, z.compile(FEED_SCHEMAS[k] as z.ZodType)])) as Record<FeedKind, z.ZodType>;

/**
 * Parses one feed line (JSON text) like `parseFeedLine` of schema.ts, with the same results and
 * error texts, through the compiled schemas. Never throws.
 */
export function parseFeedLineFast(line: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return parseFeedLine(line); // not JSON: the contract's own message
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const kind = (value as { kind?: unknown }).kind;
    // Own keys only, as in parseFeedValue: inherited names such as "toString" are not kinds.
    if (typeof kind === 'string' && Object.hasOwn(COMPILED, kind)) {
      const o = value as Obj;
      const record = kind === 'probe' ? parseProbe(o) : kind === 'smp' ? parseSmp(o) : parsed(COMPILED[kind as FeedKind].safeParse(o));
      if (record !== null) return { ok: true, record };
    }
  }
  return parseFeedValue(value);
}

type Obj = Record<string, unknown>;
type Cert = NonNullable<ProbeRecord['cert']>;
type Endpoint = SmpRecord['endpoints'][number];

const parsed = (r: { success: boolean; data?: unknown }): FeedRecord | null => (r.success ? (r.data as FeedRecord) : null);

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A bounded memo of validated sub-objects by one string field, checked against every field it reads. */
class Memo<T> {
  private readonly map = new Map<string, { input: readonly unknown[]; output: T }>();
  constructor(
    private readonly key: (o: Obj) => unknown,
    private readonly fields: (o: Obj) => readonly unknown[],
    private readonly max: number,
  ) {}

  get(v: unknown): T | undefined {
    if (!isObj(v)) return undefined;
    const k = this.key(v);
    if (typeof k !== 'string') return undefined;
    const e = this.map.get(k);
    if (e === undefined) return undefined;
    const now = this.fields(v);
    for (let i = 0; i < now.length; i++) if (now[i] !== e.input[i]) return undefined;
    return e.output;
  }

  set(v: unknown, output: T): void {
    if (!isObj(v)) return;
    const k = this.key(v);
    if (typeof k !== 'string') return;
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(k, { input: this.fields(v), output });
  }
}

// The fields each sub-schema reads (its shape): only strings are memoised, so `===` is equality.
const certs = new Memo<Cert>(
  (c) => c.fingerprint,
  (c) => [c.fingerprint, c.subject, c.issuer, c.not_before, c.not_after],
  20_000,
);
const endpointCert = (c: unknown): readonly unknown[] => (c === null ? [null] : isObj(c) ? [typeof c.fingerprint === 'string' ? c.fingerprint : NaN, c.subject, c.issuer] : [NaN]);
const endpoints = new Memo<Endpoint>(
  (e) => e.url,
  // NaN never equals anything: a certificate that is neither null nor an object is never a hit.
  (e) => [e.doctype, e.process, e.transport_profile, e.url, ...endpointCert(e.cert)],
  50_000,
);

function parseProbe(value: Obj): FeedRecord | null {
  const cert = value.cert;
  const hit = certs.get(cert);
  if (hit !== undefined) value.cert = null;
  const r = COMPILED.probe.safeParse(value);
  value.cert = cert; // a rejected line is parsed again, as it was
  if (!r.success) return null;
  const record = r.data as ProbeRecord;
  if (hit !== undefined) record.cert = hit;
  else if (record.cert !== null) certs.set(cert, record.cert);
  return record;
}

function parseSmp(value: Obj): FeedRecord | null {
  const list = value.endpoints;
  let hits: Endpoint[] | null = null;
  if (Array.isArray(list) && list.length > 0 && list.length <= 2000) {
    hits = [];
    for (const e of list) {
      const hit = endpoints.get(e);
      if (hit === undefined) {
        hits = null;
        break;
      }
      hits.push(hit);
    }
  }
  if (hits !== null) value.endpoints = [];
  const r = COMPILED.smp.safeParse(value);
  value.endpoints = list;
  if (!r.success) return null;
  const record = r.data as SmpRecord;
  if (hits !== null) record.endpoints = hits;
  else if (Array.isArray(list)) record.endpoints.forEach((e, i) => endpoints.set(list[i], e));
  return record;
}

/** Value of the decimal digit at s[i], or -1 (also past the end): OR-ing several keeps the sign. */
function digit(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/**
 * Milliseconds since the epoch of a feed timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, the
 * form the `Timestamp` schema accepts), the fraction truncated to milliseconds; NaN for anything
 * else. This is `Date.parse`, but for one V8 quirk: it misreads fractions of more than nine digits
 * that start with a zero (".0007000000" as 7 ms). A test holds it to both.
 */
export function timestampMs(s: string): number {
  const n = s.length;
  if (n < 20 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return NaN;
  const y0 = digit(s, 0), y1 = digit(s, 1), y2 = digit(s, 2), y3 = digit(s, 3);
  const mo0 = digit(s, 5), mo1 = digit(s, 6), d0 = digit(s, 8), d1 = digit(s, 9);
  const h0 = digit(s, 11), h1 = digit(s, 12), mi0 = digit(s, 14), mi1 = digit(s, 15), s0 = digit(s, 17), s1 = digit(s, 18);
  if ((y0 | y1 | y2 | y3 | mo0 | mo1 | d0 | d1 | h0 | h1 | mi0 | mi1 | s0 | s1) < 0) return NaN;
  const year = y0 * 1000 + y1 * 100 + y2 * 10 + y3;
  const month = mo0 * 10 + mo1;
  const day = d0 * 10 + d1;
  const hour = h0 * 10 + h1;
  const minute = mi0 * 10 + mi1;
  const second = s0 * 10 + s1;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return NaN;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  if (day > monthDays) return NaN;
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46) {
    // A fraction of any length; milliseconds are its first three digits.
    const start = ++i;
    while (digit(s, i) >= 0) i++;
    if (i === start) return NaN;
    ms = digit(s, start) * 100 + (i > start + 1 ? digit(s, start + 1) * 10 : 0) + (i > start + 2 ? digit(s, start + 2) : 0);
  }
  let offset = 0;
  const sign = s.charCodeAt(i);
  if (sign === 90) {
    if (i + 1 !== n) return NaN;
  } else if (sign === 43 || sign === 45) {
    if (i + 6 !== n || s.charCodeAt(i + 3) !== 58) return NaN;
    const o0 = digit(s, i + 1), o1 = digit(s, i + 2), o2 = digit(s, i + 4), o3 = digit(s, i + 5);
    if ((o0 | o1 | o2 | o3) < 0) return NaN;
    const oh = o0 * 10 + o1;
    const om = o2 * 10 + o3;
    if (oh > 23 || om > 59) return NaN;
    offset = (sign === 43 ? 1 : -1) * (oh * 60 + om) * 60_000;
  } else {
    return NaN;
  }
  return daysFromCivil(year, month, day) * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + ms - offset;
}
