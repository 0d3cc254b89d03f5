// Generates docs/feeds.md from the feed schemas (`peppol-snapshot docs feeds`, `npm run docs:feeds`).
//
// The field tables are derived by walking the JSON Schema that zod produces for each record kind
// (io: 'input', i.e. what a producer writes), so the documentation cannot drift from the parser:
// test/feeds-docs.test.ts fails when docs/feeds.md differs from renderFeedDocs(). Written here are
// only the prose, one example line per kind (checked to parse), descriptions for fields the schemas
// leave undescribed (FIELD_NOTES) and the few rules JSON Schema cannot express (refinements).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import * as feedSchema from './schema.js';
import {
  FEED_KINDS,
  FEED_SCHEMAS,
  FeedIndex,
  Hostname,
  IsoDate,
  parseFeedLine,
  Timestamp,
  type FeedKind,
  type FeedRecordInput,
} from './schema.js';

const FINGERPRINT_1 = '5d0c3f9a1e27b4c86a9f0e13d7b25c4e8f61a0b39c2d7e54f18a6b0c3e9d2f71';
const FINGERPRINT_2 = 'a41e9c07f3d2b8e65c10f9a7d34b2e8c0f5a6d19e7b3c42f80d1a5e6b9c7f203';
const AP_SUBJECT = 'CN=PBE000123,O=Example Access BV,C=BE';
const AP_ISSUER = 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE';
const BIS_BILLING_INVOICE =
  'urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1';
const BIS_BILLING_PROCESS = 'urn:fdc:peppol.eu:2017:poacc:billing:01:1.0';

/** One realistic, valid example record per kind (as a producer writes it), in field order. */
export const FEED_EXAMPLES: { [K in FeedKind]: Extract<FeedRecordInput, { kind: K }> } = {
  probe: {
    kind: 'probe',
    at: '2026-11-22T08:15:00Z',
    hostname: 'ap.example-access.be',
    role: 'AP',
    location: 'frankfurt',
    result: 'up',
    phases: { dns: 11.8, tcp: 17.2, tls: 42.5, http: 96.1, total: 167.6 },
    ips: ['203.0.113.17', '2001:db8:4a::17'],
    ptr: 'ap1.example-access.be',
    cert: {
      fingerprint: FINGERPRINT_1,
      subject: 'CN=ap.example-access.be,O=Example Access BV,C=BE',
      issuer: 'CN=GlobalSign GCC R6 AlphaSSL CA 2025,O=GlobalSign nv-sa,C=BE',
      not_before: '2026-03-02T09:41:07Z',
      not_after: '2027-04-03T09:41:06Z',
    },
    error: null,
  },
  directory: {
    kind: 'directory',
    at: '2026-11-22T03:00:12Z',
    participant: '0208::0123456789',
    present: true,
    card: { name: 'Example Trading NV', countryCode: 'BE', registrationDate: '2021-06-15' },
  },
  sml: {
    kind: 'sml',
    at: '2026-11-22T03:00:12.482Z',
    participant: 'iso6523-actorid-upis::0208:0123456789',
    registered: true,
    smp: 'smp.example-access.be',
    zone: 'edelivery.tech.ec.europa.eu',
  },
  smp: {
    kind: 'smp',
    at: '2026-11-22T03:00:14Z',
    participant: '0208::0123456789',
    smp: 'smp.example-access.be',
    endpoints: [
      {
        doctype: BIS_BILLING_INVOICE,
        process: BIS_BILLING_PROCESS,
        transport_profile: 'peppol-transport-as4-v2_0',
        url: 'https://ap.example-access.be/as4',
        cert: { fingerprint: FINGERPRINT_2, subject: AP_SUBJECT, issuer: AP_ISSUER },
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
    hostnames: ['ap.example-access.be', 'smp.example-access.be'],
    active: true,
  },
  curation: {
    kind: 'curation',
    at: '2026-11-20T14:30:00+01:00',
    slug: 'example-access',
    name: 'Example Access',
    country: 'BE',
    natural_key: 'BE0123456789',
    notes: 'Seat confirmed by the provider; certificate O= matches the member registry.',
    seats: ['PBE000123'],
    member_key: 'example-access',
  },
  zone: {
    kind: 'zone',
    at: '2026-11-22T08:15:00Z',
    zone: 'participant.sml.prod.tech.peppol.org',
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
    ns: ['ns1.sml.prod.tech.peppol.org', 'ns2.sml.prod.tech.peppol.org'],
    dname_target: null,
    management: {
      host: 'sml.prod.tech.peppol.org',
      tls_ok: true,
      tls_not_after: '2027-05-31T23:59:59Z',
      tls_issuer: "CN=R11,O=Let's Encrypt,C=US",
    },
  },
  ack: {
    kind: 'ack',
    at: '2026-11-22T09:02:31Z',
    anomaly_id: 'cert_identity_shift-3c9f1a7e5b20d84f',
    acknowledged: true,
    reason: 'Confirmed with the provider: planned move of PBE000123 to a new access point certificate.',
  },
};

/** Rules a record must satisfy that JSON Schema (and so the field table) cannot express. */
const EXTRA_RULES: Partial<Record<FeedKind, string[]>> = {
  zone: ['`existing_ok` must not exceed `existing_total`, and `nonexistent_ok` must not exceed `nonexistent_total`.'],
};

/**
 * Descriptions for fields whose schema carries none of its own (no description, or only the generic
 * one of a shared type such as Timestamp or Hostname), keyed `<kind>:<path>` (`*:` for every kind,
 * `feeds.json:` for the index). A field's own `.describe()` wins. An entry that is no longer used (the
 * field was renamed or gained a description) is reported by unusedFieldNotes(), which a test checks.
 */
const FIELD_NOTES: Record<string, string> = {
  '*:kind': 'record kind',
  'directory:at': 'when the Directory was queried',
  'sml:at': 'when the lookup was made',
  'smp:at': 'when the service metadata was fetched',
  'member:at': 'when the registry entry was read',
  'curation:at': 'when the mapping was recorded',
  'zone:at': 'when the check started',
  'ack:at': 'when the operator acknowledged (or withdrew)',
  'probe:cert.not_before': 'start of the validity period',
  'probe:cert.not_after': 'end of the validity period',
  'probe:phases.dns': 'DNS resolution',
  'probe:phases.tcp': 'TCP connect',
  'probe:phases.tls': 'TLS handshake',
  'probe:phases.http': 'HTTP request until the response was complete',
  'probe:phases.total': 'the whole check',
  'probe:cert.issuer': 'RFC 4514 issuer',
  'directory:card.name': 'business entity name',
  'directory:card.countryCode': 'ISO 3166-1 alpha-2 country code',
  'smp:endpoints[].cert.issuer': 'RFC 4514 issuer (the Peppol AP or SMP CA)',
  'member:key': 'stable member key',
  'member:trade_name': 'name the member trades under',
  'member:legal_name': 'registered legal name',
  'member:country': 'ISO 3166-1 alpha-2 country code',
  'member:flags': 'roles in the member registry',
  'member:flags.peppol_authority': 'is a Peppol Authority',
  'member:flags.ap': 'offers access point services',
  'member:flags.smp': 'offers SMP services',
  'member:flags.end_user': 'end-user member',
  'member:flags.observer': 'observer member',
  'curation:slug': 'provider slug; the provider key is `c-<slug>`',
  'curation:name': 'provider name',
  'curation:country': 'ISO 3166-1 alpha-2 country code',
  'curation:notes': "curator's notes",
  'zone:zone_kind': 'SML (the lookup zone) or SMK (its test counterpart)',
  'zone:operator': 'who operates the zone, e.g. European Commission, OpenPeppol',
  'zone:location': 'probe location',
  'zone:existing_ok': 'canaries that must exist and resolved',
  'zone:existing_total': 'canaries that must exist, checked',
  'zone:nonexistent_ok': 'canaries that must not exist and answered NXDOMAIN',
  'zone:nonexistent_total': 'canaries that must not exist, checked',
  'zone:soa_serial': 'SOA serial of the zone; null when the SOA query failed',
  'zone:ns': 'NS records of the zone',
  'zone:management.host': 'management host; null when the zone has none',
  'zone:management.tls_ok': 'TLS handshake and certificate valid; null when not checked',
  'zone:management.tls_not_after': 'expiry of the management host certificate',
  'zone:management.tls_issuer': 'issuer of the management host certificate',
  'ack:anomaly_id': 'id of the anomaly, as published by the API',
  'ack:acknowledged': 'true acknowledges the anomaly, false withdraws an earlier acknowledgement',
  'ack:reason': "operator's note",
  'feeds.json:segments[].path': 'segment path relative to feeds.json',
  'feeds.json:segments[].sha256': 'SHA-256 of the file as stored (of the gzip bytes for .gz)',
  'feeds.json:segments[].bytes': 'size of the file as stored, in bytes',
};

// --- JSON Schema walking -----------------------------------------------------------------------------

interface JsonSchema {
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  definitions?: Record<string, JsonSchema>;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  default?: unknown;
  description?: string;
}

interface FieldRow {
  path: string;
  type: string;
  required: boolean;
  default: string;
  constraints: string;
  description: string;
}

/**
 * Shared field types whose JSON Schema may not say what they are (a regex or a refinement chosen for
 * speed rather than a zod string format): the generated schema gets the standard `format` back.
 * Matched by definition, which `.describe()` / `.meta()` copies share with the original.
 */
function sharedTypes(): Map<unknown, (js: Record<string, unknown>) => void> {
  const setFormat = (format: string) => (js: Record<string, unknown>) => {
    if (js.format === undefined) js.format = format;
  };
  const map = new Map<unknown, (js: Record<string, unknown>) => void>([
    [Timestamp._zod.def, setFormat('date-time')],
    [IsoDate._zod.def, setFormat('date')],
    [Hostname._zod.def, setFormat('hostname')],
  ]);
  const ip = (feedSchema as unknown as Record<string, unknown>).IpAddress as z.ZodType | undefined;
  if (ip?._zod) {
    map.set(ip._zod.def, (js) => {
      if (js.anyOf !== undefined || js.format !== undefined) return;
      delete js.type;
      delete js.maxLength;
      delete js.pattern;
      js.anyOf = [
        { type: 'string', format: 'ipv4' },
        { type: 'string', format: 'ipv6' },
      ];
    });
  }
  return map;
}

function toJsonSchema(schema: z.ZodType): JsonSchema {
  const shared = sharedTypes();
  return z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => shared.get(ctx.zodSchema._zod.def)?.(ctx.jsonSchema as Record<string, unknown>),
  }) as JsonSchema;
}

/** Follows local `$ref`s (`#`, `#/$defs/X`, `#/definitions/X`) against the root schema. */
function deref(s: JsonSchema, root: JsonSchema, seen: Set<string> = new Set()): JsonSchema {
  if (s.$ref === undefined) return s;
  const ref = s.$ref;
  if (seen.has(ref)) return {}; // a cycle with no content of its own: document as `any`
  seen.add(ref);
  let target: unknown = root;
  if (ref !== '#') {
    if (!ref.startsWith('#/')) throw new Error(`feeds docs: cannot resolve external $ref ${ref}`);
    for (const part of ref.slice(2).split('/')) {
      const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
      target = (target as Record<string, unknown> | undefined)?.[key];
    }
  }
  if (target === undefined || target === null || typeof target !== 'object') throw new Error(`feeds docs: unresolved $ref ${ref}`);
  const { $ref: _ignored, ...rest } = s;
  // Keywords next to a $ref (e.g. a description) refine the target.
  return { ...deref(target as JsonSchema, root, seen), ...rest };
}

/** Splits a schema into its alternatives (anyOf / oneOf / type arrays / allOf merged). */
function variants(s0: JsonSchema, root: JsonSchema): JsonSchema[] {
  let s = deref(s0, root);
  if (s.allOf && s.allOf.length > 0) {
    const { allOf, ...rest } = s;
    s = allOf.reduce<JsonSchema>((acc, part) => ({ ...acc, ...deref(part, root) }), rest);
  }
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.flatMap((a) => variants(a, root));
  if (Array.isArray(s.type)) return s.type.map((t) => ({ ...s, type: t }));
  return [s];
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function baseType(v: JsonSchema): string {
  if (typeof v.type === 'string') return v.type;
  if (v.const !== undefined) return jsonTypeOf(v.const);
  if (v.enum && v.enum.length > 0) {
    const types = [...new Set(v.enum.map(jsonTypeOf))];
    return types.join('|');
  }
  if (v.properties) return 'object';
  if (v.items) return 'array';
  return 'any';
}

/** The type as JSON Schema describes it: `string (date-time)`, `number|null`, `array of string`. */
function typeText(s: JsonSchema, root: JsonSchema): string {
  return typeParts(s, root).join('|');
}

function typeParts(s: JsonSchema, root: JsonSchema): string[] {
  const vs = variants(s, root);
  const nullable = vs.some((v) => v.type === 'null');
  const nonNull = vs.filter((v) => v.type !== 'null');
  let parts: string[];
  if (nonNull.length > 1 && nonNull.every((v) => v.type === 'string' && v.format !== undefined)) {
    // e.g. an IPv4 or IPv6 address
    parts = [`string (${[...new Set(nonNull.map((v) => v.format))].join('|')})`];
  } else {
    parts = [...new Set(nonNull.map((v) => variantTypeText(v, root)))];
  }
  if (parts.length === 0 && !nullable) parts = ['any'];
  if (nullable) parts.push('null');
  return parts;
}

function variantTypeText(v: JsonSchema, root: JsonSchema): string {
  const t = baseType(v);
  if (t === 'array') {
    if (!v.items) return 'array';
    const item = typeParts(v.items, root);
    return `array of ${item.length > 1 ? `(${item.join('|')})` : item.join('')}`;
  }
  if (t === 'string' && v.format) return `string (${v.format})`;
  return t;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function range(min: number | undefined, max: number | undefined, unit: string): string | null {
  if (min !== undefined && max !== undefined) return `${unit}${min}–${max}`;
  if (min !== undefined) return `${unit}≥ ${min}`;
  if (max !== undefined) return `${unit}≤ ${max}`;
  return null;
}

function code(text: string): string {
  // A code span that contains backticks needs a longer fence.
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

function literal(value: unknown): string {
  return code(typeof value === 'string' ? value : JSON.stringify(value));
}

/** Constraints of one (non-null) alternative, as short phrases. */
function variantConstraints(v: JsonSchema, root: JsonSchema): string[] {
  const out: string[] = [];
  if (v.const !== undefined) out.push(`exactly ${literal(v.const)}`);
  if (v.enum) out.push(`one of ${v.enum.map(literal).join(', ')}`);
  const len = range(v.minLength, v.maxLength, 'length ');
  if (len) out.push(len);
  // zod emits its own (long) pattern next to a format such as date-time or ipv4: the format says it.
  if (v.pattern !== undefined && v.format === undefined) out.push(`pattern ${code(v.pattern)}`);
  const min = v.minimum !== undefined && v.minimum > -MAX_SAFE ? v.minimum : undefined;
  const max = v.maximum !== undefined && v.maximum < MAX_SAFE ? v.maximum : undefined;
  const r = range(min, max, '');
  if (r) out.push(r);
  if (v.exclusiveMinimum !== undefined) out.push(`> ${v.exclusiveMinimum}`);
  if (v.exclusiveMaximum !== undefined) out.push(`< ${v.exclusiveMaximum}`);
  if (v.multipleOf !== undefined) out.push(`multiple of ${v.multipleOf}`);
  const items = range(v.minItems, v.maxItems, '');
  if (items) out.push(`${items} items`);
  if (v.uniqueItems) out.push('unique items');
  if (baseType(v) === 'array' && v.items) {
    const each = constraintsText(v.items, root);
    if (each) out.push(`each: ${each}`);
  }
  return out;
}

function constraintsText(s: JsonSchema, root: JsonSchema): string {
  const nonNull = variants(s, root).filter((v) => v.type !== 'null');
  const per = nonNull.map((v) => variantConstraints(v, root).join(', ')).filter((t) => t.length > 0);
  return [...new Set(per)].join(' / ');
}

/** The object schema whose fields continue under this field, with the path suffix to use. */
function childObject(s: JsonSchema, root: JsonSchema): { schema: JsonSchema; suffix: string } | null {
  const nonNull = variants(s, root).filter((v) => v.type !== 'null');
  if (nonNull.length !== 1) return null;
  const v = nonNull[0]!;
  if (v.properties) return { schema: v, suffix: '.' };
  if (baseType(v) === 'array' && v.items) {
    const items = variants(v.items, root).filter((i) => i.type !== 'null');
    if (items.length === 1 && items[0]!.properties) return { schema: items[0]!, suffix: '[].' };
  }
  return null;
}

/** Rows of one table, with descriptions the schema lacks filled from FIELD_NOTES (marking them used). */
function documentedRows(scope: string, root: JsonSchema, used: Set<string>): FieldRow[] {
  const generic = new Set([Timestamp.description, Hostname.description, IsoDate.description].filter((d) => d !== undefined));
  return fieldRows(root, root).map((row) => {
    if (row.description !== '' && !generic.has(row.description)) return row;
    for (const key of [`${scope}:${row.path}`, `*:${row.path}`]) {
      const note = FIELD_NOTES[key];
      if (note !== undefined) {
        used.add(key);
        return { ...row, description: note };
      }
    }
    return row;
  });
}

/** One row per field of `object`, nested objects (and objects in arrays) following their parent. */
function fieldRows(object: JsonSchema, root: JsonSchema, prefix = '', depth = 0): FieldRow[] {
  if (depth > 16) throw new Error('feeds docs: schema nested too deeply (recursive?)');
  const rows: FieldRow[] = [];
  const required = new Set(object.required ?? []);
  for (const [name, prop0] of Object.entries(object.properties ?? {})) {
    const prop = deref(prop0, root);
    const vs = variants(prop, root).filter((v) => v.type !== 'null');
    const description = prop.description ?? (vs.length === 1 ? vs[0]!.description : undefined) ?? '';
    const def = prop.default !== undefined ? prop.default : vs.length === 1 ? vs[0]!.default : undefined;
    const path = `${prefix}${name}`;
    rows.push({
      path,
      type: typeText(prop, root),
      required: required.has(name),
      default: def === undefined ? '' : code(JSON.stringify(def)),
      constraints: constraintsText(prop, root),
      description,
    });
    const child = childObject(prop, root);
    if (child) rows.push(...fieldRows(child.schema, root, `${path}${child.suffix}`, depth + 1));
  }
  return rows;
}

function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

function fieldTable(rows: FieldRow[]): string {
  const lines = ['| Field | Type | Required | Default | Constraints | Description |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(
      `| ${[code(r.path), r.type, r.required ? 'required' : 'optional', r.default, r.constraints, r.description].map(cell).join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

// --- the document ------------------------------------------------------------------------------------

/** An example line per kind, exactly as it appears in the docs. */
export function exampleLine(kind: FeedKind): string {
  return JSON.stringify(FEED_EXAMPLES[kind]);
}

function kindSection(kind: FeedKind, used: Set<string>): string {
  const root = toJsonSchema(FEED_SCHEMAS[kind]);
  const example = exampleLine(kind);
  const parsed = parseFeedLine(example);
  if (!parsed.ok) throw new Error(`feeds docs: the ${kind} example does not parse: ${parsed.error}`);
  const out = [`### \`${kind}\``, '', root.description ?? '', '', fieldTable(documentedRows(kind, root, used))];
  const rules = EXTRA_RULES[kind];
  if (rules && rules.length > 0) out.push('', 'Also:', '', ...rules.map((r) => `- ${r}`));
  out.push('', 'Example line:', '', '```ndjson', example, '```');
  return out.join('\n');
}

function rejectExample(): { line: string; error: string } {
  const bad = { ...FEED_EXAMPLES.ack, at: '2026-11-22 09:02' };
  const line = JSON.stringify(bad);
  const r = parseFeedLine(line);
  if (r.ok) throw new Error('feeds docs: the reject example parses');
  return { line, error: r.error };
}

function intro(): string {
  const reject = rejectExample();
  const indexExample = {
    segments: [
      {
        path: '2026/11/22/probe-0001.ndjson.gz',
        sha256: '9b1f0c3e7a52d4a8c6e1f90b3d7a2c5e8f4b6d0a1c3e5f7092b4d6f8a0c2e4f6',
        bytes: 1843271,
      },
      { path: '2026/11/22/directory-0001.ndjson', sha256: '0e7c5a3b1f9d8e6c4a2b0f1e3d5c7a9b8e6f4d2c0a1b3e5f7d9c8b6a4e2f0d1c', bytes: 52914 },
    ],
  };
  return [
    '<!-- Generated from src/feeds/schema.ts by `npm run docs:feeds` (peppol-snapshot docs feeds). Do not edit by hand. -->',
    '',
    '# Feeds',
    '',
    'peppol-snapshot does not probe or scrape anything itself. Probes and scrapers publish **feeds**, and',
    '`peppol-snapshot ingest` (or `run`) pulls them into SQLite. This document is the contract between',
    'a feed producer and peppol-snapshot: where feeds live, how they are framed, and every field of every',
    'record kind. It is generated from the zod schemas the ingester parses with, so it cannot drift from them.',
    '',
    '## Sources',
    '',
    'A **source** is a directory or an `http://` / `https://` URL (given with `--source` or in',
    '`publish.config.json`) holding:',
    '',
    '- `feeds.json`, the index: `{ "segments": [{ "path", "sha256", "bytes" }] }` (schema at the end of this document);',
    '- the **segments** it lists: immutable NDJSON files, optionally gzip-compressed (path ending in `.gz`).',
    '',
    '```json',
    JSON.stringify(indexExample, null, 2),
    '```',
    '',
    '- `path` is relative to the location of `feeds.json` (`/`-separated; no leading `/`, no `..` segment,',
    '  no backslash); each path is listed once.',
    '- `sha256` (lower-case hex) and `bytes` are of the file **as stored**: for a `.gz` segment, of the gzip',
    '  bytes, not of the decompressed text. Over HTTP the file is requested with `Accept-Encoding: identity`.',
    '  Both are verified before a segment is committed: a segment whose size or hash does not match (or a',
    '  `.gz` segment that is not valid gzip) is refused whole, and ingest of that source stops there until',
    '  it is fixed, so that segments are never ingested out of order.',
    '- Segments are immutable: once listed, a segment never changes. A producer publishes new data by',
    '  writing a new segment and appending it to `segments`. A segment already ingested that `feeds.json`',
    '  later lists with a different `sha256` makes the source fail.',
    '- Segments are ingested in the order listed, each exactly once: ingest records every segment it has',
    '  ingested in SQLite and fetches only the ones it has not, so re-running is a no-op and an interrupted',
    '  run resumes where it stopped.',
    '',
    '## Lines',
    '',
    'A segment is UTF-8 NDJSON: one JSON object per line (`\\n` or `\\r\\n` line ends; blank lines are skipped),',
    'whose `kind` selects the record schema below.',
    '',
    '- A line that is not JSON, is not a JSON object, has no or an unknown `kind`, fails its schema, or is',
    '  over-long (more than a megabyte) is stored in the `rejects` table (source, segment, line number,',
    '  error, raw text) and counted in the run summary. It never aborts the segment: the other lines are',
    '  ingested.',
    '- The error names the field path and the problem, `path: message` (up to five, separated by `; `).',
    `  For example the line ${code(reject.line)} is rejected with ${code(reject.error)}.`,
    '- Unknown fields are ignored, so producers can add fields without breaking older readers.',
    '- **Required** fields must be present, even when their type allows `null`; **optional** fields may be',
    '  omitted (a default, where shown, applies then). In the tables nested fields are written as dotted',
    '  paths (`phases.dns`; `endpoints[].url` for the fields of each array element); a nested field is',
    '  required when its parent object is present.',
    '',
    '## Conventions',
    '',
    '- **Timestamps** (`string (date-time)`): ISO 8601 / RFC 3339 date-times with seconds and an explicit',
    '  `Z` or offset, e.g. `2026-11-22T08:15:00Z`, `2026-11-22T09:15:00.250+01:00`. Times without an offset',
    '  are rejected. Producers should write UTC (`Z`).',
    '- **Dates** (`string (date)`): `YYYY-MM-DD`, a valid calendar date.',
    '- **Hostnames** (`string (hostname)`): fully qualified (at least two labels, no trailing dot), labels of',
    '  letters, digits, `-` and `_` (not starting or ending with `-`, at most 63 characters), at most 253',
    '  characters. Accepted in any case and normalised to lower case.',
    '- **Participant ids**: canonical `<scheme>::<value>` (`0208::0123456789`) or the full Peppol form',
    '  `iso6523-actorid-upis::<scheme>:<value>` (prefix in any case). The scheme is the four-digit ISO 6523',
    '  ICD (`0208`, `9925`, `0192`, ...); the value is 1–200 characters without whitespace, control',
    '  characters or `::`. Surrounding whitespace is trimmed and the value lower-cased (Peppol identifiers are',
    '  case-insensitive): `iso6523-actorid-upis::0208:0123456789AB` is stored as `0208::0123456789ab`.',
    '- **Seat ids**: `P` + two upper-case letters + six digits (`PBE000123`), the CN of a Peppol access point',
    '  or SMP certificate.',
    '- **Certificates**: `subject` and `issuer` are RFC 4514 strings as presented',
    `  (${code(AP_SUBJECT)}); \`fingerprint\` is the SHA-256 of the DER certificate, 64 hex digits in any case,`,
    '  normalised to lower case.',
    '- **Countries**: ISO 3166-1 alpha-2, upper case (`BE`).',
    '- **Durations**: probe phase timings are milliseconds (fractions allowed), `null` where the phase was not reached.',
  ].join('\n');
}

function kindsOverview(): string {
  const lines = ['## Record kinds', '', '| kind | record |', '|---|---|'];
  for (const kind of FEED_KINDS) {
    const d = toJsonSchema(FEED_SCHEMAS[kind]).description ?? '';
    lines.push(`| [\`${kind}\`](#${kind}) | ${cell(d)} |`);
  }
  return lines.join('\n');
}

function indexSection(used: Set<string>): string {
  const root = toJsonSchema(FeedIndex);
  return [
    '## `feeds.json`',
    '',
    fieldTable(documentedRows('feeds.json', root, used)),
    '',
    'Also: `segments[].path` is relative to `feeds.json`, without a leading `/`, a `..` segment or a backslash, and',
    'each path appears once.',
    '',
    'JSON Schema (draft 2020-12):',
    '',
    '```json',
    JSON.stringify(root, null, 2),
    '```',
  ].join('\n');
}

function render(): { text: string; used: Set<string> } {
  const used = new Set<string>();
  const parts = [intro(), kindsOverview(), ...FEED_KINDS.map((k) => kindSection(k, used)), indexSection(used)];
  return { text: `${parts.join('\n\n')}\n`, used };
}

/** The whole of docs/feeds.md. Deterministic: depends only on the schemas and the examples above. */
export function renderFeedDocs(): string {
  return render().text;
}

/** FIELD_NOTES entries no table used (stale: the field is gone or has a description of its own). */
export function unusedFieldNotes(): string[] {
  const { used } = render();
  return Object.keys(FIELD_NOTES).filter((k) => !used.has(k));
}

export function writeFeedDocs(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, renderFeedDocs());
}
