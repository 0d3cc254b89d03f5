// publish.config.json: sources, paths, render options, publish target and edge policy, validated
// by zod (docs/architecture.md §2). Reference: docs/config.md; JSON schema for editors:
// docs/config.schema.json.
//
// A bad config gives one line per problem, `<key path>: <what was expected>, got <value>`, all
// problems at once, and a UsageError (exit code 2).
import fs from 'node:fs';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { UsageError } from '../util/errors.js';
import { scanJson, type JsonPath } from './json-scan.js';
import { KEYLESS_PATHS, isPathPattern, patternsOverlap } from './patterns.js';
import { configSchema, hasUrlScheme, isHttpUrl, type ParsedConfig } from './schema.js';

export { KEYLESS_PATHS, matchPathPattern, isPathPattern, isRouteId } from './patterns.js';
export { configSchema, DEFAULT_NETWORK_TIER, DEFAULT_MARKET_TIER, CHUNK_MAX_BYTES_LIMIT, DEFAULT_BULK_LICENSES, DEFAULT_BULK_SOURCES } from './schema.js';

/** The default of `--config`; when this file does not exist the built-in defaults are used. */
export const DEFAULT_CONFIG_FILE = 'publish.config.json';

export interface SourceConfig {
  name: string;
  /** An absolute directory path (resolved relative to the config file's directory) or an http(s) URL. */
  url: string;
}

export interface IngestConfig {
  timeout_ms: number;
  retries: number;
  retry_base_ms: number;
  /** Segment requests of an HTTP source in flight at once. */
  concurrency: number;
  /** Parse worker threads; 0 parses on the ingesting thread. */
  workers: number;
}

export interface RenderConfig {
  /** Public base URL, without a trailing "/". */
  base_url: string;
  chunk_max_items: number;
  chunk_max_bytes: number;
}

export interface DirectoryTarget {
  type: 'directory';
  /** Absolute directory path. */
  path: string;
}

export interface S3Target {
  type: 's3';
  bucket: string;
  /** "" or a prefix ending in "/". */
  prefix: string;
  region: string;
  /** Endpoint of an S3-compatible server; absent for AWS S3. */
  endpoint?: string;
  force_path_style: boolean;
  /** when_required: only the checksums a request needs (for stores that reject the SDK's default ones). */
  checksums: 'when_supported' | 'when_required';
}

export type PublishTarget = DirectoryTarget | S3Target;

export interface PublishConfig {
  target: PublishTarget;
  concurrency: number;
  retries: number;
  retry_base_ms: number;
  timeout_ms: number;
  retention_hours: number;
}

export interface RateLimitConfig {
  requests: number;
  window_seconds: number;
  keyed_multiplier: number;
}

export interface DeprecationConfig {
  /** Path pattern (see matchPathPattern). */
  path: string;
  /** ISO 8601 date-time. */
  deprecation: string;
  /** ISO 8601 date-time, after `deprecation`. */
  sunset: string;
  link?: string;
}

export type AccessMode = 'open' | 'keyed';

export interface EdgeConfig {
  cors: { allow_origin: '*'; max_age_seconds: number };
  rate_limit: RateLimitConfig | 'off';
  access: { mode: AccessMode; tiers: { network: string[]; market: string[] } };
  deprecations: DeprecationConfig[];
}

export interface RetentionConfig {
  raw_probe_days: number;
  rejects_days: number;
}

export interface BulkLicense {
  name?: string;
  path?: string;
  title?: string;
}

export interface BulkConfig {
  enabled: boolean;
  keep_days: number;
  row_group_rows: number;
  licenses: BulkLicense[];
  sources: Array<{ title: string; path?: string }>;
}

export interface Config {
  /** Absolute path of the file read, null when the built-in defaults were used. */
  configPath: string | null;
  sources: SourceConfig[];
  /** Absolute path of the SQLite file. */
  database: string;
  /** Absolute output directory. */
  out: string;
  ingest: IngestConfig;
  render: RenderConfig;
  publish: PublishConfig;
  edge: EdgeConfig;
  retention: RetentionConfig;
  bulk: BulkConfig;
}

/** The JSON schema of publish.config.json (the input side: defaults shown, every key optional). */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

/** The built-in defaults, with relative paths resolved against `baseDir`. */
export function defaultConfig(baseDir: string = process.cwd()): Config {
  return parseConfig({}, baseDir, null);
}

// ---------------------------------------------------------------------------------------------
// Problems

interface Problem {
  path: JsonPath;
  text: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `edge.rate_limit.requests`, `sources[1].url`, `(root)` for the document itself. */
export function formatKeyPath(p: JsonPath): string {
  let out = '';
  for (const seg of p) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out === '' ? '(root)' : out;
}

const MAX_SHOWN = 60;

/** JSON of a value, truncated to about 60 characters; user:password in URLs is masked. */
export function showValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? maskUserInfo(v) : v)) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 1)}…` : text;
}

function maskUserInfo(s: string): string {
  return s.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@\s]*@/, '$1***@');
}

function valueAt(root: unknown, p: JsonPath): unknown {
  let v: unknown = root;
  for (const seg of p) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function startsWith(p: JsonPath, prefix: JsonPath): boolean {
  return prefix.length <= p.length && prefix.every((seg, i) => p[i] === seg);
}

// --- secrets -----------------------------------------------------------------------------------

const SECRET_EXACT = new Set(['key', 'keys', 'apikey', 'apikeys', 'auth', 'authorization', 'bearer', 'pwd', 'pass', 'passphrase']);
const SECRET_PARTS = ['secret', 'password', 'passwd', 'token', 'apikey', 'accesskey', 'credential', 'privatekey'];

export function isSecretKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, '');
  return SECRET_EXACT.has(k) || SECRET_PARTS.some((part) => k.includes(part));
}

const SECRETS_GO =
  'S3 credentials come from the environment or the AWS credential chain ' +
  '(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or AWS_PROFILE); API keys are held by the edge as hashes ' +
  'in the keys file given to "peppol-snapshot serve --keys FILE"';

function findSecrets(value: unknown, at: JsonPath, out: Problem[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => findSecrets(item, [...at, i], out));
  } else if (isRecord(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (isSecretKey(key)) {
        out.push({
          path: [...at, key],
          text: `secrets do not belong in the config file (it is meant to be committed); remove this key. ${SECRETS_GO}`,
        });
      } else {
        findSecrets(v, [...at, key], out);
      }
    }
  } else if (typeof value === 'string' && /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/@\s]*@/.test(value)) {
    out.push({
      path: at,
      text: `secrets do not belong in the config file: this URL carries a user name or password; remove it. ${SECRETS_GO}`,
    });
  }
}

// --- unknown keys ------------------------------------------------------------------------------

type AnySchema = z.core.$ZodType;

/** The object schema at `p`, following the raw value through unions; null when there is none. */
function objectSchemaAt(p: JsonPath, raw: unknown): z.ZodObject | null {
  let s: AnySchema = configSchema;
  let v: unknown = raw;
  const unwrap = (): void => {
    for (;;) {
      if (s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional) {
        s = s.def.innerType;
      } else if (s instanceof z.ZodUnion) {
        const options = s.def.options as AnySchema[];
        const disc = (s.def as { discriminator?: string }).discriminator;
        const pick: AnySchema | undefined = disc
          ? options.find((o) => {
              const lit = o instanceof z.ZodObject ? o.shape[disc] : undefined;
              return lit instanceof z.ZodLiteral && isRecord(v) && lit.def.values.includes(v[disc] as never);
            })
          : options.find((o) => (Array.isArray(v) ? o instanceof z.ZodArray : isRecord(v) && o instanceof z.ZodObject));
        if (!pick) return;
        s = pick;
      } else return;
    }
  };
  for (const seg of p) {
    unwrap();
    if (s instanceof z.ZodObject && typeof seg === 'string') {
      const next = s.shape[seg] as AnySchema | undefined;
      if (!next) return null;
      s = next;
    } else if (s instanceof z.ZodArray && typeof seg === 'number') {
      s = s.def.element;
    } else return null;
    v = isRecord(v) || Array.isArray(v) ? (v as Record<string | number, unknown>)[seg] : undefined;
  }
  unwrap();
  return s instanceof z.ZodObject ? s : null;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

function unknownKeyText(objectPath: JsonPath, key: string, raw: unknown): string {
  const obj = objectSchemaAt(objectPath, raw);
  const known = obj ? Object.keys(obj.shape).filter((k) => k !== '$schema') : [];
  if (known.length === 0) return 'unknown key';
  const lower = key.toLowerCase();
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const dist = editDistance(lower, k);
    if (dist < bestDistance) {
      best = k;
      bestDistance = dist;
    }
  }
  const limit = Math.max(2, Math.ceil(Math.max(key.length, best?.length ?? 0) / 3));
  if (best !== null && bestDistance <= limit) return `unknown key (did you mean "${best}"?)`;
  return `unknown key (known keys: ${known.join(', ')})`;
}

// --- zod issues --------------------------------------------------------------------------------

/** Phrase for issues whose schema has no `error` of its own (a fallback; leaves all set one). */
function fallbackPhrase(iss: z.core.$ZodRawIssue): string {
  switch (iss.code) {
    case 'invalid_type':
      return iss.expected === 'object' || iss.expected === 'array' ? `an ${iss.expected}` : `a ${iss.expected}`;
    case 'invalid_value':
      return iss.values.map((v) => JSON.stringify(v)).join(' or ');
    case 'too_small':
      return `a ${iss.origin} >= ${String(iss.minimum)}`;
    case 'too_big':
      return `a ${iss.origin} <= ${String(iss.maximum)}`;
    case 'invalid_format':
      return `a ${iss.format} string`;
    default:
      return 'a valid value';
  }
}

function issueProblems(iss: z.core.$ZodIssue, base: JsonPath, raw: unknown): Problem[] {
  const p: JsonPath = [...base, ...(iss.path as JsonPath)];
  if (iss.code === 'unrecognized_keys') {
    return iss.keys.map((key) => ({ path: [...p, key], text: unknownKeyText(p, key, raw) }));
  }
  if (iss.code === 'invalid_union' && iss.errors.length > 0) {
    // Report the branch the value was meant for: the one that did not fail on the type itself.
    const meant = iss.errors.filter(
      (branch) => !branch.every((b) => b.path.length === 0 && (b.code === 'invalid_type' || b.code === 'invalid_value')),
    );
    if (meant.length === 1) return meant[0]!.flatMap((b) => issueProblems(b, p, raw));
  }
  const value = valueAt(raw, p);
  const expected = `expected ${iss.message}`;
  if (value === undefined) return [{ path: p, text: p.length === 0 ? `${expected}, got nothing` : `${expected}, but the key is missing` }];
  return [{ path: p, text: `${expected}, got ${showValue(value)}` }];
}

// --- rules across keys -------------------------------------------------------------------------

function crossKeyProblems(raw: Record<string, unknown>, baseDir: string): Problem[] {
  const out: Problem[] = [];

  // Source names are unique.
  if (Array.isArray(raw.sources)) {
    const seen = new Map<string, number>();
    raw.sources.forEach((s: unknown, i: number) => {
      const name = typeof s === 'string' ? s : isRecord(s) && typeof s.name === 'string' ? s.name : null;
      if (name === null || name === '') return;
      const first = seen.get(name);
      if (first !== undefined) {
        out.push({
          path: typeof s === 'string' ? ['sources', i] : ['sources', i, 'name'],
          text: `expected a unique source name, got ${showValue(name)} (also the name of sources[${first}])`,
        });
      } else seen.set(name, i);
    });
  }

  // Keyless endpoints stay outside the tiers; an entry belongs to one tier only.
  const tiers = valueAt(raw, ['edge', 'access', 'tiers']);
  if (isRecord(tiers)) {
    const inNetwork = new Set<string>();
    for (const tier of ['network', 'market'] as const) {
      const list = tiers[tier];
      if (!Array.isArray(list)) continue;
      list.forEach((entry: unknown, i: number) => {
        if (typeof entry !== 'string') return;
        const at: JsonPath = ['edge', 'access', 'tiers', tier, i];
        if (isPathPattern(entry)) {
          // A keyless entry is itself a pattern (/problems/*): any path both match is a conflict.
          const covered = KEYLESS_PATHS.filter((k) => patternsOverlap(entry, k));
          if (covered.length > 0) {
            out.push({
              path: at,
              text:
                `expected a pattern that leaves the keyless endpoints alone, got ${showValue(entry)}, which covers ` +
                `${covered.join(', ')}; the spec makes ${KEYLESS_PATHS.join(', ')} keyless, so they never belong to a tier`,
            });
          }
        }
        if (tier === 'network') inNetwork.add(entry);
        else if (inNetwork.has(entry)) {
          out.push({ path: at, text: `expected an entry in one tier only, got ${showValue(entry)}, which is also in edge.access.tiers.network` });
        }
      });
    }
  }

  // Sunset after deprecation.
  const deprecations = valueAt(raw, ['edge', 'deprecations']);
  if (Array.isArray(deprecations)) {
    deprecations.forEach((d: unknown, i: number) => {
      if (!isRecord(d) || typeof d.deprecation !== 'string' || typeof d.sunset !== 'string') return;
      const from = Date.parse(d.deprecation);
      const until = Date.parse(d.sunset);
      if (Number.isNaN(from) || Number.isNaN(until) || until > from) return;
      out.push({
        path: ['edge', 'deprecations', i, 'sunset'],
        text: `expected a date-time after deprecation (${showValue(d.deprecation)}), got ${showValue(d.sunset)}`,
      });
    });
  }

  // A directory target is not the output directory itself.
  const target = valueAt(raw, ['publish', 'target']);
  const targetType = isRecord(target) ? target.type : 'directory';
  const targetPath = isRecord(target) ? (target.path ?? 'publish') : target === undefined ? 'publish' : null;
  const outDir = raw.out === undefined ? 'out' : raw.out;
  if (targetType === 'directory' && typeof targetPath === 'string' && targetPath !== '' && typeof outDir === 'string' && outDir !== '') {
    if (path.resolve(baseDir, targetPath) === path.resolve(baseDir, outDir)) {
      out.push({
        path: ['publish', 'target', 'path'],
        text: `expected a directory other than out (${showValue(outDir)}), got ${showValue(targetPath)}`,
      });
    }
  }
  return out;
}

// --- building the Config -----------------------------------------------------------------------

function resolveSource(location: string, baseDir: string): string {
  if (isHttpUrl(location)) return location;
  if (hasUrlScheme(location)) return fileURLToPath(location); // file: URL (others were rejected)
  return path.resolve(baseDir, location);
}

function build(parsed: ParsedConfig, baseDir: string, configPath: string | null): Config {
  const target: PublishTarget =
    parsed.publish.target.type === 'directory'
      ? { type: 'directory', path: path.resolve(baseDir, parsed.publish.target.path) }
      : {
          type: 's3',
          bucket: parsed.publish.target.bucket,
          prefix:
            parsed.publish.target.prefix === '' || parsed.publish.target.prefix.endsWith('/')
              ? parsed.publish.target.prefix
              : `${parsed.publish.target.prefix}/`,
          region: parsed.publish.target.region,
          ...(parsed.publish.target.endpoint !== undefined ? { endpoint: parsed.publish.target.endpoint } : {}),
          force_path_style: parsed.publish.target.force_path_style,
          checksums: parsed.publish.target.checksums,
        };
  const rl = parsed.edge.rate_limit;
  return {
    configPath,
    sources: parsed.sources.map((s) =>
      typeof s === 'string' ? { name: s, url: resolveSource(s, baseDir) } : { name: s.name, url: resolveSource(s.url, baseDir) },
    ),
    database: path.resolve(baseDir, parsed.database),
    out: path.resolve(baseDir, parsed.out),
    ingest: { ...parsed.ingest, workers: parsed.ingest.workers ?? availableParallelism() },
    render: { ...parsed.render, base_url: parsed.render.base_url.replace(/\/+$/, '') },
    publish: {
      target,
      concurrency: parsed.publish.concurrency,
      retries: parsed.publish.retries,
      retry_base_ms: parsed.publish.retry_base_ms,
      timeout_ms: parsed.publish.timeout_ms,
      retention_hours: parsed.publish.retention_hours,
    },
    edge: {
      cors: { allow_origin: '*', max_age_seconds: parsed.edge.cors.max_age_seconds },
      rate_limit: rl === 'off' ? 'off' : { ...rl },
      access: {
        mode: parsed.edge.access.mode,
        tiers: { network: [...parsed.edge.access.tiers.network], market: [...parsed.edge.access.tiers.market] },
      },
      deprecations: parsed.edge.deprecations.map((d) => ({
        path: d.path,
        deprecation: d.deprecation,
        sunset: d.sunset,
        ...(d.link !== undefined ? { link: d.link } : {}),
      })),
    },
    retention: { ...parsed.retention },
    bulk: {
      enabled: parsed.bulk.enabled,
      keep_days: parsed.bulk.keep_days,
      row_group_rows: parsed.bulk.row_group_rows,
      licenses: parsed.bulk.licenses.map((l) => ({ ...l })),
      sources: parsed.bulk.sources.map((x) => ({ ...x })),
    },
  };
}

function validate(value: unknown, baseDir: string, configPath: string | null, extra: Problem[]): Config {
  const secrets: Problem[] = [];
  findSecrets(value, [], secrets);
  const problems: Problem[] = [...secrets, ...extra];

  const result = configSchema.safeParse(value, { error: (iss) => fallbackPhrase(iss) });
  if (!result.success) {
    for (const iss of result.error.issues) {
      for (const p of issueProblems(iss, [], value)) {
        // A secret is reported once, as a secret (never as an unknown key, never with its value).
        if (secrets.some((s) => startsWith(p.path, s.path))) continue;
        problems.push(p);
      }
    }
  }
  if (isRecord(value)) {
    for (const p of crossKeyProblems(value, baseDir)) {
      if (!problems.some((q) => formatKeyPath(q.path) === formatKeyPath(p.path))) problems.push(p);
    }
  }

  if (problems.length > 0 || !result.success) {
    // Several checks of one leaf share its phrase: report each line once.
    const lines = [...new Set(problems.map((p) => `${formatKeyPath(p.path)}: ${p.text}`))];
    const where = configPath ?? 'the configuration';
    throw new UsageError(`invalid configuration in ${where} (${lines.length} problem${lines.length === 1 ? '' : 's'})`, lines);
  }
  return build(result.data, baseDir, configPath);
}

/**
 * Validates a parsed config document. Relative paths are resolved against `baseDir` (the directory
 * of the config file). Throws UsageError with one line per problem.
 */
export function parseConfig(value: unknown, baseDir: string, configPath: string | null = null): Config {
  return validate(value, path.resolve(baseDir), configPath, []);
}

/**
 * Reads, parses and validates a config file (default publish.config.json, relative to the current
 * directory). When the default file does not exist, the built-in defaults are used (configPath null,
 * paths relative to the current directory); an explicitly named file must exist.
 */
export function loadConfig(file?: string): Config {
  const given = file ?? DEFAULT_CONFIG_FILE;
  const abs = path.resolve(given);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && given === DEFAULT_CONFIG_FILE) return defaultConfig(process.cwd());
    if (code === 'ENOENT') {
      throw new UsageError(`config file not found: ${given}`, [`${abs} does not exist (omit --config to use the built-in defaults)`]);
    }
    if (code === 'EISDIR') throw new UsageError(`config file is a directory: ${given}`, [`${abs} is a directory; expected a JSON file`]);
    throw new UsageError(`cannot read config file ${given}`, [`${abs}: ${(e as Error).message}`]);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);

  const scan = scanJson(text);
  if (scan.error) {
    const { line, column, message } = scan.error;
    throw new UsageError(`invalid JSON in config file ${given}`, [`${given}:${line}:${column}: invalid JSON: ${message}`]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`invalid JSON in config file ${given}`, [`${given}: invalid JSON: ${(e as Error).message}`]);
  }
  const duplicates: Problem[] = scan.duplicates.map((d) => ({
    path: d.path,
    text: `duplicate key (line ${d.line}, column ${d.column}); JSON keeps only the last value, so keep one`,
  }));
  return validate(value, path.dirname(abs), abs, duplicates);
}
