// The zod schema of publish.config.json (docs/architecture.md §2). Every section is optional, so
// `{}` is a valid config. Each leaf carries an `error` that returns the phrase naming what is expected
// ("a positive integer"); src/config/index.ts turns issues into one line per problem,
// `<key path>: expected <phrase>, got <JSON of the value>`.
//
// The schema only checks shapes. Paths are resolved and cross-key rules (unique source names,
// keyless endpoints outside the tiers, sunset after deprecation, secrets) are checked in index.ts.
import { z } from 'zod';
import { DEFAULT_ACCESS_MODE, DEFAULT_CORS_MAX_AGE_SECONDS, DEFAULT_MARKET_TIER, DEFAULT_NETWORK_TIER, DEFAULT_RATE_LIMIT } from './edge-defaults.js';
import { isPathPattern, isRouteId } from './patterns.js';

const expect = (phrase: string) => ({ error: () => phrase });

function int(min: number, max?: number) {
  const phrase =
    max !== undefined
      ? `an integer from ${min} to ${max}`
      : min === 1
        ? 'a positive integer'
        : min === 0
          ? 'a non-negative integer'
          : `an integer >= ${min}`;
  const s = z.number(expect(phrase)).int(expect(phrase)).min(min, expect(phrase));
  return max !== undefined ? s.max(max, expect(phrase)) : s;
}

function nonEmpty(phrase: string) {
  return z.string(expect(phrase)).min(1, expect(phrase));
}

const bool = () => z.boolean(expect('true or false'));

/** An absolute http(s) URL. User info is accepted here and rejected by the secrets check. */
export function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** A URL-ish string: starts with a scheme such as `s3:` or `https:` (a Windows drive letter is not one). */
export function hasUrlScheme(value: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]+:/.test(value);
}

/** A feed source location: an http(s) URL, a file: URL, or a directory path. */
export function isSourceLocation(value: string): boolean {
  if (value.trim() === '') return false;
  if (isHttpUrl(value)) return true;
  if (/^file:/i.test(value)) {
    try {
      return new URL(value).protocol === 'file:';
    } catch {
      return false;
    }
  }
  return !hasUrlScheme(value);
}

function httpUrl(phrase: string) {
  return z
    .string(expect(phrase))
    .refine(isHttpUrl, expect(phrase))
    .meta({ format: 'uri' });
}

const SOURCE_LOCATION = 'a directory path or an http(s) URL';
const sourceLocation = z
  .string(expect(SOURCE_LOCATION))
  .refine(isSourceLocation, expect(SOURCE_LOCATION))
  .describe('A directory holding feeds.json (relative to the config file) or an http(s) URL of one.');

const sourceObject = z
  .object(
    {
      name: nonEmpty('a non-empty source name').describe('Unique name of the source (recorded with every ingested segment).'),
      url: sourceLocation,
    },
    expect('an object { "name", "url" }'),
  )
  .strict();

const source = z.union([sourceLocation, sourceObject], expect('a directory path, an http(s) URL or an object { "name", "url" }'));

export const DEFAULT_SOURCES = [{ name: 'demo', url: 'data/demo-feeds' }];

// ---------------------------------------------------------------------------------------------

const ingest = z
  .object(
    {
      timeout_ms: int(1, 600_000).default(30_000).describe('Timeout of one HTTP request, in milliseconds.'),
      retries: int(0, 10).default(4).describe('Retries of a transient HTTP failure (connection error, timeout, 429, 5xx).'),
      retry_base_ms: int(0, 60_000)
        .default(250)
        .describe('First backoff delay, in milliseconds; it doubles with every retry (with +/-25% jitter).'),
      concurrency: int(1, 64)
        .default(8)
        .describe(
          'Segment requests of an HTTP source in flight at once. Segments are fetched ahead of the one being ingested (bounded in bytes) and applied in feed order; a request waiting for its retry holds no place.',
        ),
      workers: int(0, 32)
        .optional()
        .describe('Parse worker threads (JSON parsing and validation); 0 parses on the main thread. Default: one per CPU core.'),
    },
    expect('an object'),
  )
  .strict();

/** The shim reads at most 3 chunks and 256 KiB per request: one chunk may hold a third of that. */
export const CHUNK_MAX_BYTES_LIMIT = Math.floor(262_144 / 3); // 87381

const render = z
  .object(
    {
      base_url: httpUrl('an http(s) URL without query or fragment')
        .refine((v) => isHttpUrl(v) && !/[?#]/.test(v), expect('an http(s) URL without query or fragment'))
        .default('http://127.0.0.1:8787')
        .describe('Public base URL of the API ({base_url} of the spec); used in links, cursors and the OpenAPI servers list.'),
      chunk_max_items: int(1, 100_000).default(1000).describe('Most items in one list chunk.'),
      chunk_max_bytes: int(1024, CHUNK_MAX_BYTES_LIMIT)
        .default(65_536)
        .describe('Most bytes in one list chunk (uncompressed); at most floor(262144 / 3) because the shim reads up to 3 chunks per request.'),
    },
    expect('an object'),
  )
  .strict();

const BUCKET = 'an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens)';
const directoryTarget = z
  .object(
    {
      type: z.literal('directory'),
      path: nonEmpty('a directory path').default('publish').describe('Directory the snapshot is published into (relative to the config file).'),
    },
    expect('an object'),
  )
  .strict();
const s3Target = z
  .object(
    {
      type: z.literal('s3'),
      bucket: z
        .string(expect(BUCKET))
        .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, expect(BUCKET))
        .refine((v) => !v.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(v), expect(BUCKET))
        .describe('Bucket name.'),
      prefix: z
        .string(expect('a key prefix not starting with "/" (e.g. "peppol/")'))
        .refine((v) => !v.startsWith('/'), expect('a key prefix not starting with "/" (e.g. "peppol/")'))
        .default('')
        .describe('Prefix of every object key; a trailing "/" is added when missing. Empty: the bucket root.'),
      region: nonEmpty('a non-empty region name').default('us-east-1').describe('Region (use "auto" for Cloudflare R2).'),
      endpoint: httpUrl('an http(s) URL')
        .optional()
        .describe('Endpoint of an S3-compatible server (MinIO, R2, Ceph ...); omit for AWS S3.'),
      force_path_style: bool().default(false).describe('Address the bucket in the path instead of the host name (MinIO and most self-hosted servers need true).'),
      checksums: z
        .enum(['when_supported', 'when_required'], expect('"when_supported" or "when_required"'))
        .default('when_supported')
        .describe(
          'When the SDK adds and checks request/response checksums: "when_supported" (the SDK default: every upload), or "when_required" for stores that reject the newer checksum headers (older MinIO, Ceph, s3rver ...).',
        ),
    },
    expect('an object'),
  )
  .strict();

const publish = z
  .object(
    {
      target: z
        .discriminatedUnion('type', [directoryTarget, s3Target], {
          error: (iss) =>
            iss.code === 'invalid_union' ? '"directory" or "s3"' : 'an object with "type": "directory" or "s3"',
        })
        .prefault({ type: 'directory' })
        .describe('Where the snapshot is published: a directory or an S3-compatible bucket.'),
      concurrency: int(1, 64).default(8).describe('Uploads in flight at once.'),
      retries: int(0, 10).default(4).describe('Retries of a request that failed transiently (5xx, throttling, timeout, connection error).'),
      retry_base_ms: int(0, 60_000)
        .default(250)
        .describe('First backoff delay before a retry, in milliseconds; it doubles with every retry (with +/-25% jitter).'),
      timeout_ms: int(1, 600_000).default(30_000).describe('Timeout of one request to the target, in milliseconds.'),
      retention_hours: int(0, 8760)
        .default(48)
        .describe('Objects no longer referenced by the manifest are deleted only after this many hours (cursor and cache lifetime).'),
    },
    expect('an object'),
  )
  .strict();

// ---------------------------------------------------------------------------------------------

// The defaults of the edge section live in edge-defaults.ts (plain values the edge shim can use too).
export { DEFAULT_MARKET_TIER, DEFAULT_NETWORK_TIER } from './edge-defaults.js';

const TIER_ENTRY = 'a path pattern starting with "/" (e.g. "/v1/aps/*") or a route id';
const tierEntry = z.string(expect(TIER_ENTRY)).refine((v) => isPathPattern(v) || isRouteId(v), expect(TIER_ENTRY));
const tierList = (dflt: string[], what: string) =>
  z
    .array(tierEntry, expect('an array of path patterns or route ids'))
    .default(dflt)
    .describe(`Endpoints of the ${what} tier: path patterns ("*" matches any characters, "/" included) or route ids.`);

const PATTERN = 'a path pattern starting with "/" (e.g. "/v1/hosts/*")';
const DATE_TIME = 'an ISO 8601 date-time with a time zone (e.g. "2027-01-01T00:00:00Z")';
const deprecation = z
  .object(
    {
      path: z.string(expect(PATTERN)).refine(isPathPattern, expect(PATTERN)).describe('Path pattern of the deprecated endpoint(s).'),
      deprecation: z.iso
        .datetime({ offset: true, error: () => DATE_TIME })
        .describe('When the endpoint is (or was) deprecated: the Deprecation header (RFC 9745).'),
      sunset: z.iso
        .datetime({ offset: true, error: () => DATE_TIME })
        .describe('When the endpoint goes away: the Sunset header (RFC 8594); must be after deprecation.'),
      link: httpUrl('an http(s) URL')
        .optional()
        .describe('Documentation of the deprecation: sent as Link: <url>; rel="deprecation".'),
    },
    expect('an object { "path", "deprecation", "sunset", "link"? }'),
  )
  .strict();

const rateLimitObject = z
  .object(
    {
      requests: int(1).default(DEFAULT_RATE_LIMIT.requests).describe('Requests allowed per window per client identity (per IP when anonymous).'),
      window_seconds: int(1, 86_400).default(DEFAULT_RATE_LIMIT.window_seconds).describe('Length of the window, in seconds.'),
      keyed_multiplier: z
        .number(expect('a number >= 1'))
        .min(1, expect('a number >= 1'))
        .default(DEFAULT_RATE_LIMIT.keyed_multiplier)
        .describe('A request with a valid API key gets requests x keyed_multiplier per window.'),
    },
    expect('an object'),
  )
  .strict();

const edge = z
  .object(
    {
      cors: z
        .object(
          {
            allow_origin: z
              .literal('*', expect('"*" (the spec requires Access-Control-Allow-Origin: * on every response)'))
              .default('*')
              .describe('Access-Control-Allow-Origin; only "*" is accepted (the spec requires it).'),
            max_age_seconds: int(0, 86_400).default(DEFAULT_CORS_MAX_AGE_SECONDS).describe('Access-Control-Max-Age of preflight answers.'),
          },
          expect('an object'),
        )
        .strict()
        .prefault({}),
      rate_limit: z
        .union(
          [z.literal('off'), rateLimitObject],
          expect('an object { "requests", "window_seconds", "keyed_multiplier" } or "off"'),
        )
        .prefault({})
        .describe('Rate limit applied by the edge, or "off".'),
      access: z
        .object(
          {
            mode: z
              .enum(['open', 'keyed'], expect('"open" or "keyed"'))
              .default(DEFAULT_ACCESS_MODE)
              .describe('"open" (spec model A: keys optional) or "keyed" (model B: paid key required outside the keyless endpoints).'),
            tiers: z
              .object(
                {
                  network: tierList(DEFAULT_NETWORK_TIER, 'Network (operational data)'),
                  market: tierList(DEFAULT_MARKET_TIER, 'Market (commercial data)'),
                },
                expect('an object { "network", "market" }'),
              )
              .strict()
              .prefault({}),
          },
          expect('an object'),
        )
        .strict()
        .prefault({}),
      deprecations: z
        .array(deprecation, expect('an array of deprecations'))
        .default([])
        .describe('Endpoints announced for removal: they send Deprecation, Sunset and Link headers.'),
    },
    expect('an object'),
  )
  .strict();

const retention = z
  .object(
    {
      raw_probe_days: int(1, 3650)
        .default(14)
        .describe('Raw probe samples older than this many days are pruned once rolled up.'),
      rejects_days: int(1, 3650).default(90).describe('Rejected feed lines are kept this many days.'),
    },
    expect('an object'),
  )
  .strict();

const LICENSE = 'an object { "name"?, "path"?, "title"? } with a name or a path';
const license = z
  .object(
    {
      name: nonEmpty('a license identifier (e.g. "CC-BY-4.0", an Open Definition or SPDX id)').optional().describe('Identifier of the licence (Open Definition or SPDX), e.g. "CC-BY-4.0".'),
      path: httpUrl('an http(s) URL').optional().describe('URL of the licence text.'),
      title: nonEmpty('a non-empty title').optional().describe('Human-readable title of the licence.'),
    },
    expect(LICENSE),
  )
  .strict()
  .refine((l) => l.name !== undefined || l.path !== undefined, expect(LICENSE));

const bulkSource = z
  .object(
    {
      title: nonEmpty('a non-empty title').describe('Title of the source.'),
      path: httpUrl('an http(s) URL').optional().describe('URL of the source.'),
    },
    expect('an object { "title", "path"? }'),
  )
  .strict();

export const DEFAULT_BULK_LICENSES = [{ name: 'CC-BY-4.0', path: 'https://creativecommons.org/licenses/by/4.0/', title: 'Creative Commons Attribution 4.0' }];
export const DEFAULT_BULK_SOURCES = [{ title: 'Peppol network monitoring: probes of SMP and AP hosts, Peppol Directory, SML and SMP lookups, the OpenPeppol member registry, SML/SMK zone canaries' }];

const bulk = z
  .object(
    {
      enabled: bool().default(true).describe('Write the bulk downloads (bulk/: NDJSON, Parquet, CSV, SQLite, datapackage.json) once per UTC day.'),
      keep_days: int(1, 366).default(7).describe('Dated copies bulk/YYYY-MM-DD/ are kept for this many days (the current one included); bulk/latest/ always holds the newest.'),
      row_group_rows: int(1000, 10_000_000)
        .default(122_880)
        .describe('Rows per Parquet row group (DuckDB\'s own default): a few MB compressed per group, so a reader over HTTP range requests fetches only the groups and columns it needs.'),
      licenses: z.array(license, expect('an array of licences')).min(1, expect('a non-empty array of licences')).default(DEFAULT_BULK_LICENSES).describe('Licences of the data package (datapackage.json "licenses").'),
      sources: z.array(bulkSource, expect('an array of sources')).default(DEFAULT_BULK_SOURCES).describe('Sources of the data package (datapackage.json "sources").'),
    },
    expect('an object'),
  )
  .strict();

export const configSchema = z
  .object(
    {
      $schema: z.string(expect('a string (the JSON schema of this file)')).optional().describe('JSON schema of this file, for editors.'),
      sources: z
        .array(source, expect('an array of sources'))
        .min(1, expect('a non-empty array of sources'))
        .default(DEFAULT_SOURCES)
        .describe('Feed sources: directories (relative to the config file) or http(s) URLs holding feeds.json.'),
      database: nonEmpty('a file path').default('data/peppol.sqlite').describe('SQLite database file (relative to the config file).'),
      out: nonEmpty('a directory path').default('out').describe('Directory the snapshot is rendered into (relative to the config file).'),
      ingest: ingest.prefault({}).describe('Fetching feeds.'),
      render: render.prefault({}).describe('Rendering the snapshot.'),
      publish: publish.prefault({}).describe('Uploading the snapshot.'),
      edge: edge.prefault({}).describe('Policy of the edge shim: CORS, rate limit, API keys, deprecations.'),
      retention: retention.prefault({}).describe('Pruning the database.'),
      bulk: bulk.prefault({}).describe('Bulk downloads (docs/bulk.md).'),
    },
    expect('a JSON object'),
  )
  .strict()
  .meta({
    title: 'peppol-snapshot configuration (publish.config.json)',
    description: 'See docs/config.md. Secrets never belong here: S3 credentials come from the environment, API keys from serve --keys.',
  });

export type ParsedConfig = z.output<typeof configSchema>;
