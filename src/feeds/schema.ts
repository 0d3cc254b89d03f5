// The feed contract (docs/architecture.md §4): one zod schema per record kind. A feed line is one
// JSON object whose `kind` selects the schema. docs/feeds.md is generated from these schemas
// (`peppol-snapshot docs feeds`).
//
// Conventions: timestamps are ISO 8601 date-times with `Z` or an offset; dates are `YYYY-MM-DD`;
// hostnames are fully qualified and compared lower-case; participant ids are accepted in canonical
// (`0208::0123456789`) or full Peppol form (`iso6523-actorid-upis::0208:0123456789`) and normalised.
// Unknown fields are ignored, so producers can add fields without breaking older readers.
import { z } from 'zod';
import { isIPv6 } from './ip.js';
import { parseParticipantId, SEAT_ID_RE, type ParticipantId } from './ids.js';

// The patterns are exported for the fast validator (validate.ts), which must apply exactly these rules.
export const HOSTNAME_RE = /^(?=.{1,253}$)[a-zA-Z0-9_](?:[a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9_](?:[a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?)+$/;
export const LOCATION_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

// Hostnames, fingerprints and addresses use one anchored regex (and `overwrite` for lower-casing):
// feeds carry millions of them, and zod's pipe/transform machinery costs several times more per field.
export const Timestamp = z.iso
  .datetime({ offset: true })
  .describe('ISO 8601 date-time with Z or an offset, e.g. 2026-11-22T08:15:00Z');
export const IsoDate = z.iso.date().describe('calendar date YYYY-MM-DD');

export const Hostname = z
  .string()
  .max(253)
  .regex(HOSTNAME_RE, 'expected a fully-qualified hostname')
  .overwrite((s) => s.toLowerCase())
  .describe('fully-qualified hostname (normalised to lower case)');

export const Participant = z
  .string()
  .max(300)
  .transform((s, ctx): ParticipantId => {
    const p = parseParticipantId(s);
    if (!p) {
      ctx.addIssue({ code: 'custom', message: 'expected a participant id scheme::value or iso6523-actorid-upis::scheme:value' });
      return z.NEVER;
    }
    return p;
  })
  .describe('participant id, canonical `scheme::value` or full Peppol form; normalised to lower-case canonical');

export const SeatId = z.string().regex(SEAT_ID_RE, 'expected a seat id P[A-Z]{2}[0-9]{6}').describe('Peppol seat id (certificate CN)');

export const Role = z.enum(['SMP', 'AP']).describe('host role');
export const ProbeResult = z.enum(['up', 'degraded', 'down']);

export const FINGERPRINT_RE = /^[0-9a-fA-F]{64}$/;
export const COUNTRY_RE = /^[A-Z]{2}$/;
/** Member keys and curation slugs. */
export const KEY_RE = /^[a-z0-9][a-z0-9-]{0,99}$/;

const Fingerprint = z
  .string()
  .regex(FINGERPRINT_RE, 'expected a SHA-256 fingerprint (64 hex digits)')
  .overwrite((s) => s.toLowerCase())
  .describe('SHA-256 fingerprint, hex (normalised to lower case)');

export const IPV4_RE = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
export const IpAddress = z
  .string()
  .max(45)
  .refine((s) => IPV4_RE.test(s) || isIPv6(s), 'expected an IPv4 or IPv6 address')
  .describe('IPv4 or IPv6 address');

const Ms = z.number().nonnegative().max(3_600_000).nullable();

export const Certificate = z
  .object({
    fingerprint: Fingerprint,
    subject: z.string().min(1).max(1024).describe('RFC 4514 subject, e.g. CN=PBE000123,O=Example BV,C=BE'),
    issuer: z.string().min(1).max(1024),
    not_before: Timestamp,
    not_after: Timestamp,
  })
  .describe('X.509 certificate presented by the host');

export const ProbeRecord = z
  .object({
    kind: z.literal('probe'),
    at: Timestamp.describe('when the check started'),
    hostname: Hostname,
    role: Role,
    location: z.string().regex(LOCATION_RE, 'expected a probe location name [a-z0-9-]').describe('probe location'),
    result: ProbeResult.describe('up: all phases fine; degraded: answered but slow or partially failing; down: no usable answer'),
    phases: z
      .object({ dns: Ms, tcp: Ms, tls: Ms, http: Ms, total: Ms })
      .describe('phase timings in milliseconds, null where the phase was not reached'),
    ips: z.array(IpAddress).max(64).describe('addresses the hostname resolved to'),
    ptr: Hostname.nullable().describe('reverse DNS name of the first address'),
    cert: Certificate.nullable().describe('server certificate; null when TLS was not reached'),
    error: z.string().max(1024).nullable().optional().describe('probe error text, when not up'),
  })
  .describe('One check of one host from one probe location.');

export const BusinessCard = z
  .object({
    name: z.string().max(1024).nullable(),
    countryCode: z
      .string()
      .regex(COUNTRY_RE, 'expected an ISO 3166-1 alpha-2 country code')
      .nullable(),
    registrationDate: IsoDate.nullable(),
  })
  .describe('Peppol Directory business card');

export const DirectoryRecord = z
  .object({
    kind: z.literal('directory'),
    at: Timestamp,
    participant: Participant,
    present: z.boolean().describe('listed in the Peppol Directory'),
    card: BusinessCard.nullable().describe('business card; null when absent or not published'),
  })
  .describe('A Peppol Directory observation of one participant.');

export const SmlRecord = z
  .object({
    kind: z.literal('sml'),
    at: Timestamp,
    participant: Participant,
    registered: z.boolean().describe('the participant has an SML registration'),
    smp: Hostname.nullable().describe('SMP hostname the registration points to; null when not registered'),
    zone: z.string().max(253).nullable().optional().describe('SML zone the lookup went to'),
  })
  .describe('An SML lookup of one participant.');

export const EndpointCert = z
  .object({
    fingerprint: Fingerprint,
    subject: z.string().min(1).max(1024).describe('AP certificate subject; its CN carries the seat id'),
    issuer: z.string().min(1).max(1024),
  })
  .describe('certificate of the access point behind an endpoint');

export const SmpEndpoint = z.object({
  doctype: z.string().min(1).max(1024).describe('document type identifier'),
  process: z.string().min(1).max(1024).describe('process identifier'),
  transport_profile: z.string().min(1).max(256).describe('e.g. peppol-transport-as4-v2_0'),
  url: z.url({ protocol: /^https?$/ }).max(2048).describe('endpoint URL of the access point (http or https)'),
  cert: EndpointCert.nullable(),
});

export const SmpRecord = z
  .object({
    kind: z.literal('smp'),
    at: Timestamp,
    participant: Participant,
    smp: Hostname.describe('SMP host the service metadata was fetched from'),
    endpoints: z.array(SmpEndpoint).max(2000).describe('every endpoint published for the participant; empty when none'),
  })
  .describe('A deep SMP fetch of one participant: its complete endpoint list.');

export const MemberRecord = z
  .object({
    kind: z.literal('member'),
    at: Timestamp,
    key: z.string().regex(KEY_RE, 'expected a URL-safe member key [a-z0-9-]'),
    trade_name: z.string().min(1).max(512),
    legal_name: z.string().max(512).nullable(),
    country: z.string().regex(COUNTRY_RE, 'expected an ISO 3166-1 alpha-2 country code').nullable(),
    url: z.url({ protocol: /^https?$/ }).max(2048).nullable().describe('website (http or https)'),
    flags: z.object({
      peppol_authority: z.boolean(),
      ap: z.boolean(),
      smp: z.boolean(),
      end_user: z.boolean(),
      observer: z.boolean(),
    }),
    hostnames: z.array(Hostname).max(1000).default([]).describe('hostnames the member declares (SMP and AP hosts)'),
    active: z.boolean().default(true).describe('false when the member left the registry'),
  })
  .describe('A member registry entry; the latest record per key is the current one.');

export const CurationRecord = z
  .object({
    kind: z.literal('curation'),
    at: Timestamp,
    slug: z.string().regex(KEY_RE, 'expected a URL-safe slug [a-z0-9-]'),
    name: z.string().min(1).max(512),
    country: z.string().regex(COUNTRY_RE, 'expected an ISO 3166-1 alpha-2 country code').nullable(),
    natural_key: z.string().max(256).nullable().describe('e.g. the company registration number'),
    notes: z.string().max(4096).nullable(),
    seats: z.array(SeatId).max(1000).describe('seat ids verified to belong to this provider'),
    member_key: z.string().max(100).nullable().describe('member registry key of the same organisation'),
  })
  .describe('A verified provider mapping; the latest record per slug is the current one.');

export const ZoneRecord = z
  .object({
    kind: z.literal('zone'),
    at: Timestamp,
    zone: Hostname.describe('DNS zone, e.g. edelivery.tech.ec.europa.eu'),
    zone_kind: z.enum(['SML', 'SMK']),
    env: z.string().min(1).max(64).describe('e.g. production, test'),
    operator: z.string().min(1).max(128),
    location: z.string().regex(LOCATION_RE, 'expected a probe location name [a-z0-9-]'),
    existing_ok: z.int().nonnegative(),
    existing_total: z.int().nonnegative(),
    nonexistent_ok: z.int().nonnegative(),
    nonexistent_total: z.int().nonnegative(),
    critical_nxdomain: z.boolean().describe('a canary that must exist answered NXDOMAIN'),
    soa_serial: z.int().nonnegative().max(4294967295).nullable(),
    ns: z.array(Hostname).max(64),
    dname_target: Hostname.nullable().describe('target of a DNAME at the zone apex, when one is present'),
    management: z
      .object({
        host: Hostname.nullable(),
        tls_ok: z.boolean().nullable(),
        tls_not_after: Timestamp.nullable(),
        tls_issuer: z.string().max(1024).nullable(),
      })
      .nullable()
      .describe('TLS check of the zone management host'),
  })
  .refine((r) => r.existing_ok <= r.existing_total, { message: 'must not exceed existing_total', path: ['existing_ok'] })
  .refine((r) => r.nonexistent_ok <= r.nonexistent_total, { message: 'must not exceed nonexistent_total', path: ['nonexistent_ok'] })
  .describe('An SML/SMK canary check of one zone from one probe location.');

export const AckRecord = z
  .object({
    kind: z.literal('ack'),
    at: Timestamp,
    anomaly_id: z.string().min(1).max(128),
    acknowledged: z.boolean(),
    reason: z.string().max(4096).nullable(),
  })
  .describe("An operator's acknowledgement (or withdrawal of one) of an anomaly.");

export const FEED_KINDS = ['probe', 'directory', 'sml', 'smp', 'member', 'curation', 'zone', 'ack'] as const;
export type FeedKind = (typeof FEED_KINDS)[number];

export const FEED_SCHEMAS = {
  probe: ProbeRecord,
  directory: DirectoryRecord,
  sml: SmlRecord,
  smp: SmpRecord,
  member: MemberRecord,
  curation: CurationRecord,
  zone: ZoneRecord,
  ack: AckRecord,
} as const;

export type ProbeRecord = z.output<typeof ProbeRecord>;
export type DirectoryRecord = z.output<typeof DirectoryRecord>;
export type SmlRecord = z.output<typeof SmlRecord>;
export type SmpRecord = z.output<typeof SmpRecord>;
export type MemberRecord = z.output<typeof MemberRecord>;
export type CurationRecord = z.output<typeof CurationRecord>;
export type ZoneRecord = z.output<typeof ZoneRecord>;
export type AckRecord = z.output<typeof AckRecord>;
export type FeedRecord = { [K in FeedKind]: z.output<(typeof FEED_SCHEMAS)[K]> }[FeedKind];
/** A record as a producer writes it (participant ids as strings, before normalisation). */
export type FeedRecordInput = { [K in FeedKind]: z.input<(typeof FEED_SCHEMAS)[K]> }[FeedKind];

export type ParseResult = { ok: true; record: FeedRecord } | { ok: false; error: string };

/** Formats zod issues as `path: message; path: message`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(record)'}: ${i.message}`)
    .join('; ');
}

/**
 * Parses one feed line (JSON text). Never throws: a bad line yields an error message.
 * Records are read-only: sub-objects (certificates, endpoints) may be shared between records.
 */
export function parseFeedLine(line: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { ok: false, error: `not JSON: ${(e as Error).message}` };
  }
  return parseFeedValue(value);
}

export function parseFeedValue(value: unknown): ParseResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'not a JSON object' };
  const kind = (value as { kind?: unknown }).kind;
  // Own keys only: `kind in FEED_SCHEMAS` would accept inherited names such as "toString" and throw.
  if (typeof kind !== 'string' || !Object.hasOwn(FEED_SCHEMAS, kind)) {
    return { ok: false, error: `kind: expected one of ${FEED_KINDS.join(', ')}, got ${preview(kind)}` };
  }
  if (kind === 'probe') return parseProbe(value as Record<string, unknown>);
  if (kind === 'smp') return parseSmp(value as Record<string, unknown>);
  return finish(FEED_SCHEMAS[kind as FeedKind].safeParse(value));
}

/**
 * A short description of a value for an error text: scalars as JSON (strings cut to 40 characters),
 * arrays and objects by their type only. Never walks into the value: a line may nest thousands of
 * levels deep, and JSON.stringify of that exhausts the stack.
 */
export function preview(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  return JSON.stringify(v);
}

function finish(r: { success: true; data: unknown } | { success: false; error: z.ZodError }): ParseResult {
  if (!r.success) return { ok: false, error: formatIssues(r.error.issues) };
  return { ok: true, record: r.data as FeedRecord };
}

// Memoised sub-objects. A probe fleet reports the same certificate of a host thousands of times, and
// an SMP serves the same endpoint to thousands of participants. Equal input gives equal output, so a
// sub-object whose exact content was validated before is taken from the memo: the record is parsed
// with that field emptied (null / []) and the memoised output put back. The key holds every field the
// schema reads, so the result is exactly what zod would give. Bounded: cleared when full.
class Memo<T> {
  private readonly map = new Map<string, T>();
  constructor(private readonly max: number) {}
  get(key: string | null): T | undefined {
    return key === null ? undefined : this.map.get(key);
  }
  set(key: string | null, value: T): void {
    if (key === null) return;
    if (this.map.size >= this.max) this.map.clear();
    this.map.set(key, value);
  }
}

const probeCerts = new Memo<ProbeRecord['cert']>(20_000);
const endpoints = new Memo<SmpRecord['endpoints'][number]>(50_000);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Content key of an object whose listed fields must all be strings (else null: no memo). */
function stringsKey(o: unknown, fields: readonly string[]): string | null {
  if (!isObject(o)) return null;
  let key = '';
  for (const f of fields) {
    const v = o[f];
    if (typeof v !== 'string') return null;
    key += `${v}\u0000`;
  }
  return key;
}

const CERT_FIELDS = ['fingerprint', 'subject', 'issuer', 'not_before', 'not_after'] as const;
const ENDPOINT_FIELDS = ['doctype', 'process', 'transport_profile', 'url'] as const;
const ENDPOINT_CERT_FIELDS = ['fingerprint', 'subject', 'issuer'] as const;

function endpointKey(e: unknown): string | null {
  const base = stringsKey(e, ENDPOINT_FIELDS);
  if (base === null) return null;
  const cert = (e as Record<string, unknown>).cert;
  if (cert === null) return `${base}-`;
  const c = stringsKey(cert, ENDPOINT_CERT_FIELDS);
  return c === null ? null : `${base}+${c}`;
}

function parseProbe(value: Record<string, unknown>): ParseResult {
  const key = stringsKey(value.cert, CERT_FIELDS);
  const hit = probeCerts.get(key);
  const cert = value.cert;
  if (hit !== undefined) value.cert = null;
  const r = ProbeRecord.safeParse(value);
  value.cert = cert; // the caller's object is left as it was
  if (!r.success) return finish(r);
  if (hit !== undefined) r.data.cert = hit;
  else if (r.data.cert) probeCerts.set(key, r.data.cert);
  return { ok: true, record: r.data };
}

function parseSmp(value: Record<string, unknown>): ParseResult {
  const list = value.endpoints;
  let hits: SmpRecord['endpoints'] | null = null;
  if (Array.isArray(list) && list.length > 0 && list.length <= 2000) {
    hits = [];
    for (const e of list) {
      const hit = endpoints.get(endpointKey(e));
      if (hit === undefined) {
        hits = null;
        break;
      }
      hits.push(hit);
    }
  }
  if (hits) value.endpoints = [];
  const r = SmpRecord.safeParse(value);
  value.endpoints = list; // the caller's object is left as it was
  if (!r.success) return finish(r);
  if (hits) r.data.endpoints = hits;
  else if (Array.isArray(list)) r.data.endpoints.forEach((e, i) => endpoints.set(endpointKey(list[i]), e));
  return { ok: true, record: r.data };
}

/** The index file of a source: `feeds.json`. */
export const FeedIndex = z.object({
  segments: z
    .array(
      z.object({
        path: z
          .string()
          .min(1)
          .max(1024)
          .refine((p) => !p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\\') && !p.includes('\0'), 'expected a relative path inside the source'),
        sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected a lower-case hex SHA-256'),
        bytes: z.int().nonnegative(),
      }),
    )
    .describe('immutable NDJSON segments (optionally .gz) in the order they should be ingested'),
});
export type FeedIndex = z.output<typeof FeedIndex>;
