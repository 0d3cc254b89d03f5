import fs from 'node:fs';
import os, { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  configJsonSchema,
  DEFAULT_BULK_LICENSES,
  DEFAULT_BULK_SOURCES,
  DEFAULT_MARKET_TIER,
  DEFAULT_NETWORK_TIER,
  KEYLESS_PATHS,
  loadConfig,
  matchPathPattern,
  parseConfig,
  type Config,
} from '../src/config/index.js';
import { patternsOverlap } from '../src/config/patterns.js';
import { UsageError } from '../src/util/errors.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dirs: string[] = [];

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'peppol-config-'));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function writeConfig(dir: string, value: unknown, name = 'publish.config.json'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return file;
}

/** The UsageError thrown by `fn` (fails the test when nothing or something else is thrown). */
function usageError(fn: () => unknown): UsageError {
  try {
    fn();
  } catch (e) {
    if (e instanceof UsageError) return e;
    throw e;
  }
  throw new Error('expected a UsageError');
}

function problems(value: unknown, baseDir = '/srv/peppol'): string[] {
  return usageError(() => parseConfig(value, baseDir)).problems;
}

describe('defaults', () => {
  it('{} gives every default, paths resolved against the config directory', () => {
    const dir = tmp();
    const file = writeConfig(dir, {});
    const c = loadConfig(file);
    const expected: Config = {
      configPath: file,
      sources: [{ name: 'demo', url: path.join(dir, 'data/demo-feeds') }],
      database: path.join(dir, 'data/peppol.sqlite'),
      out: path.join(dir, 'out'),
      ingest: { timeout_ms: 30000, retries: 4, retry_base_ms: 250, concurrency: 8, workers: availableParallelism() },
      render: { base_url: 'http://127.0.0.1:8787', chunk_max_items: 1000, chunk_max_bytes: 65536 },
      publish: {
        target: { type: 'directory', path: path.join(dir, 'publish') },
        concurrency: 8,
        retries: 4,
        retry_base_ms: 250,
        timeout_ms: 30000,
        retention_hours: 48,
      },
      edge: {
        cors: { allow_origin: '*', max_age_seconds: 86400 },
        rate_limit: { requests: 60, window_seconds: 60, keyed_multiplier: 10 },
        access: { mode: 'open', tiers: { network: DEFAULT_NETWORK_TIER, market: DEFAULT_MARKET_TIER } },
        deprecations: [],
      },
      retention: { raw_probe_days: 14, rejects_days: 90 },
      bulk: { enabled: true, keep_days: 7, row_group_rows: 122880, licenses: DEFAULT_BULK_LICENSES, sources: DEFAULT_BULK_SOURCES },
    };
    expect(c).toEqual(expected);
  });

  it('partial sections keep the defaults of the keys they leave out', () => {
    const c = parseConfig({ ingest: { retries: 0 }, edge: { rate_limit: { requests: 5 }, access: { mode: 'keyed', tiers: { network: ['/v1/hosts'] } } } }, '/srv');
    expect(c.ingest).toEqual({ timeout_ms: 30000, retries: 0, retry_base_ms: 250, concurrency: 8, workers: availableParallelism() });
    expect(c.edge.rate_limit).toEqual({ requests: 5, window_seconds: 60, keyed_multiplier: 10 });
    expect(c.edge.access).toEqual({ mode: 'keyed', tiers: { network: ['/v1/hosts'], market: DEFAULT_MARKET_TIER } });
    expect(c.configPath).toBeNull();
  });

  it('the default publish.config.json may be missing (built-in defaults, relative to cwd); an explicit file may not', () => {
    const dir = tmp();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const c = loadConfig();
      expect(c.configPath).toBeNull();
      expect(c.database).toBe(path.join(fs.realpathSync(dir), 'data/peppol.sqlite'));
      expect(loadConfig('publish.config.json').configPath).toBeNull();
      const e = usageError(() => loadConfig('other.json'));
      expect(e.message).toBe('config file not found: other.json');
      expect(e.problems[0]).toContain(path.join(fs.realpathSync(dir), 'other.json'));
    } finally {
      process.chdir(cwd);
    }
    const missing = path.join(dir, 'nope', 'publish.config.json');
    expect(usageError(() => loadConfig(missing)).message).toBe(`config file not found: ${missing}`);
  });

  it("the repository's publish.config.json is valid and drives the embedded demo", () => {
    const c = loadConfig(path.join(repo, 'publish.config.json'));
    expect(c.sources).toEqual([{ name: 'demo', url: path.join(repo, 'data/demo-feeds') }]);
    expect(c.database).toBe(path.join(repo, 'data/peppol.sqlite'));
    expect(c.out).toBe(path.join(repo, 'out'));
    expect(c.publish.target).toEqual({ type: 'directory', path: path.join(repo, 'publish') });
    expect(c.render.base_url).toBe('http://127.0.0.1:8787');
  });
});

describe('sources', () => {
  it('relative directories resolve against the config file directory; http URLs stay as they are', () => {
    const dir = tmp();
    fs.mkdirSync(path.join(dir, 'conf'));
    const file = writeConfig(path.join(dir, 'conf'), {
      sources: [
        { name: 'local', url: '../feeds' },
        { name: 'remote', url: 'https://feeds.example.org/peppol/' },
        'more-feeds',
        'http://10.0.0.1:8080/feeds',
        { name: 'abs', url: '/var/feeds' },
      ],
    });
    expect(loadConfig(file).sources).toEqual([
      { name: 'local', url: path.join(dir, 'feeds') },
      { name: 'remote', url: 'https://feeds.example.org/peppol/' },
      { name: 'more-feeds', url: path.join(dir, 'conf', 'more-feeds') },
      { name: 'http://10.0.0.1:8080/feeds', url: 'http://10.0.0.1:8080/feeds' },
      { name: 'abs', url: '/var/feeds' },
    ]);
  });

  it('rejects bad locations, bad elements and duplicate names', () => {
    expect(
      problems({
        sources: [
          { name: 'a', url: 'data/a' },
          { name: 'b', url: 42 },
          'ftp://example.org/feeds',
          true,
          { name: 'a', url: 'data/a2' },
          { url: 'x' },
        ],
      }),
    ).toEqual([
      'sources[1].url: expected a directory path or an http(s) URL, got 42',
      'sources[2]: expected a directory path or an http(s) URL, got "ftp://example.org/feeds"',
      'sources[3]: expected a directory path, an http(s) URL or an object { "name", "url" }, got true',
      'sources[5].name: expected a non-empty source name, but the key is missing',
      'sources[4].name: expected a unique source name, got "a" (also the name of sources[0])',
    ]);
    expect(problems({ sources: [] })).toEqual(['sources: expected a non-empty array of sources, got []']);
  });
});

describe('problems', () => {
  it('reports one line per problem, with key path, expectation and the value found', () => {
    const e = usageError(() =>
      parseConfig(
        {
          database: '',
          ingest: { retries: 11, workers: 33, timeout_ms: 2.5 },
          render: { base_url: 'ftp://example.org', chunk_max_bytes: 262144 },
          publish: { target: { type: 's3', bucket: 'snapshots', force_path_style: 'yes' } },
          edge: { rate_limit: { requests: 'sixty' }, cors: { allow_origin: 'https://example.org' }, access: { mode: 'closed' } },
          retention: { raw_probe_days: 0 },
        },
        '/srv',
        '/srv/publish.config.json',
      ),
    );
    expect(e.message).toBe('invalid configuration in /srv/publish.config.json (11 problems)');
    expect(e.problems).toEqual([
      'database: expected a file path, got ""',
      'ingest.timeout_ms: expected an integer from 1 to 600000, got 2.5',
      'ingest.retries: expected an integer from 0 to 10, got 11',
      'ingest.workers: expected an integer from 0 to 32, got 33',
      'render.base_url: expected an http(s) URL without query or fragment, got "ftp://example.org"',
      'render.chunk_max_bytes: expected an integer from 1024 to 87381, got 262144',
      'publish.target.force_path_style: expected true or false, got "yes"',
      'edge.cors.allow_origin: expected "*" (the spec requires Access-Control-Allow-Origin: * on every response), got "https://example.org"',
      'edge.rate_limit.requests: expected a positive integer, got "sixty"',
      'edge.access.mode: expected "open" or "keyed", got "closed"',
      'retention.raw_probe_days: expected an integer from 1 to 3650, got 0',
    ]);
  });

  it('reports unknown keys, suggesting the nearest known key', () => {
    expect(problems({ render: { chunk_itmes: 10 }, ingset: {}, edge: { rate_limit: { request: 5 } }, zzz: 1 })).toEqual([
      'render.chunk_itmes: unknown key (did you mean "chunk_max_items"?)',
      'edge.rate_limit.request: unknown key (did you mean "requests"?)',
      'ingset: unknown key (did you mean "ingest"?)',
      'zzz: unknown key (known keys: sources, database, out, ingest, render, publish, edge, retention, bulk)',
    ]);
    // Several failing checks of one value give one line.
    expect(problems({ ingest: { workers: -1.5 } })).toEqual(['ingest.workers: expected an integer from 0 to 32, got -1.5']);
    expect(problems({ ingest: { concurrency: 0 } })).toEqual(['ingest.concurrency: expected an integer from 1 to 64, got 0']);
    // Keys of the target depend on its type.
    expect(problems({ publish: { target: { type: 'directory', paht: 'x' } } })).toEqual([
      'publish.target.paht: unknown key (did you mean "path"?)',
    ]);
    expect(problems({ publish: { target: { type: 's3', bucket: 'peppol', regoin: 'eu-west-1', path: 'x' } } })).toEqual([
      'publish.target.regoin: unknown key (did you mean "region"?)',
      'publish.target.path: unknown key (known keys: type, bucket, prefix, region, endpoint, force_path_style, checksums)',
    ]);
  });

  it('reports wrong types of whole sections and of the document', () => {
    expect(problems({ ingest: [], render: 'fast', edge: { rate_limit: 'on' }, sources: 'data' })).toEqual([
      'sources: expected an array of sources, got "data"',
      'ingest: expected an object, got []',
      'render: expected an object, got "fast"',
      'edge.rate_limit: expected an object { "requests", "window_seconds", "keyed_multiplier" } or "off", got "on"',
    ]);
    expect(problems([1, 2])).toEqual(['(root): expected a JSON object, got [1,2]']);
    expect(problems(null)).toEqual(['(root): expected a JSON object, got null']);
    expect(problems(undefined)).toEqual(['(root): expected a JSON object, got nothing']);
  });

  it('truncates long values to about 60 characters', () => {
    const [line] = problems({ render: { base_url: `x${'y'.repeat(200)}` } });
    expect(line).toMatch(/^render\.base_url: expected .*, got "xyyy.*…$/);
    expect(line!.length).toBeLessThan(150);
  });

  it('accepts rate_limit "off" and $schema', () => {
    const c = parseConfig({ $schema: './docs/config.schema.json', edge: { rate_limit: 'off' } }, '/srv');
    expect(c.edge.rate_limit).toBe('off');
  });
});

describe('invalid JSON', () => {
  it('names the file, line and column', () => {
    const dir = tmp();
    const file = writeConfig(dir, '{\n  "database": "x.sqlite",\n  "out": "out",\n}\n');
    const e = usageError(() => loadConfig(file));
    expect(e.message).toBe(`invalid JSON in config file ${file}`);
    expect(e.problems).toEqual([`${file}:4:1: invalid JSON: trailing comma before "}"`]);

    const file2 = writeConfig(dir, '{\n  "render": { "chunk_max_items": tru }\n}', 'b.json');
    expect(usageError(() => loadConfig(file2)).problems).toEqual([`${file2}:2:34: invalid JSON: unexpected "t", expected a value`]);

    const file3 = writeConfig(dir, '', 'c.json');
    expect(usageError(() => loadConfig(file3)).problems).toEqual([`${file3}:1:1: invalid JSON: unexpected end of input, expected a value`]);

    const file4 = writeConfig(dir, '{ "out": "a" } x', 'd.json');
    expect(usageError(() => loadConfig(file4)).problems).toEqual([`${file4}:1:16: invalid JSON: unexpected "x", expected the end of the document`]);
  });

  it('reports duplicate keys, which JSON.parse would silently collapse', () => {
    const dir = tmp();
    const file = writeConfig(dir, '{\n  "out": "a",\n  "render": { "chunk_max_items": 5 },\n  "out": "b"\n}\n');
    expect(usageError(() => loadConfig(file)).problems).toEqual([
      'out: duplicate key (line 4, column 3); JSON keeps only the last value, so keep one',
    ]);
  });

  it('accepts a byte order mark', () => {
    const dir = tmp();
    const file = writeConfig(dir, '\ufeff{ "out": "site" }');
    expect(loadConfig(file).out).toBe(path.join(dir, 'site'));
  });
});

describe('secrets', () => {
  it('gives the secrets problem, naming where credentials go, and never echoes the value', () => {
    const dir = tmp();
    const file = writeConfig(dir, {
      publish: { target: { type: 's3', bucket: 'peppol-snapshot', access_key_id: 'AKIAEXAMPLE', secret_access_key: 'wJalrXUtnFEMI' } },
      edge: { access: { mode: 'keyed', keys: ['live_abc'] } },
      apiKey: 'k',
    });
    const e = usageError(() => loadConfig(file));
    expect(e.problems).toHaveLength(4);
    expect(e.problems.map((p) => p.slice(0, p.indexOf(':')))).toEqual([
      'publish.target.access_key_id',
      'publish.target.secret_access_key',
      'edge.access.keys',
      'apiKey',
    ]);
    for (const p of e.problems) {
      expect(p).toContain('secrets do not belong in the config file');
      expect(p).toContain('AWS_ACCESS_KEY_ID');
      expect(p).toContain('AWS_SECRET_ACCESS_KEY');
      expect(p).toContain('AWS_PROFILE');
      expect(p).toContain('--keys');
    }
    const all = e.problems.join('\n');
    expect(all).not.toContain('AKIAEXAMPLE');
    expect(all).not.toContain('wJalrXUtnFEMI');
    expect(all).not.toContain('live_abc');
    expect(all).not.toContain('unknown key');
  });

  it('flags password, token and api_key anywhere, and credentials inside URLs', () => {
    const lines = problems({
      sources: [{ name: 'x', url: 'https://bob:hunter2@feeds.example.org/', token: 't' }],
      ingest: { password: 'p' },
      edge: { rate_limit: { api_key: 'k' } },
    });
    expect(lines.map((p) => p.slice(0, p.indexOf(':')))).toEqual([
      'sources[0].url',
      'sources[0].token',
      'ingest.password',
      'edge.rate_limit.api_key',
    ]);
    expect(lines.join('\n')).not.toContain('hunter2');
    for (const p of lines) expect(p).toContain('secrets do not belong in the config file');
  });

  it('does not mistake ordinary keys for secrets', () => {
    expect(() => parseConfig({ edge: { rate_limit: { keyed_multiplier: 3 }, access: { mode: 'keyed' } } }, '/srv')).not.toThrow();
  });
});

describe('publish target', () => {
  it('validates and normalises an s3 target', () => {
    const c = parseConfig(
      { publish: { target: { type: 's3', bucket: 'peppol-snapshot', prefix: 'v1-site', endpoint: 'http://127.0.0.1:9000', force_path_style: true } } },
      '/srv',
    );
    expect(c.publish.target).toEqual({
      type: 's3',
      bucket: 'peppol-snapshot',
      prefix: 'v1-site/',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9000',
      force_path_style: true,
      checksums: 'when_supported',
    });
    const aws = parseConfig({ publish: { target: { type: 's3', bucket: 'b.example', checksums: 'when_required' } } }, '/srv').publish.target;
    expect(aws).toEqual({ type: 's3', bucket: 'b.example', prefix: '', region: 'us-east-1', force_path_style: false, checksums: 'when_required' });
  });

  it('reports s3 problems', () => {
    expect(
      problems({ publish: { target: { type: 's3', bucket: 'My_Bucket', prefix: '/x', endpoint: 'minio:9000', force_path_style: 1 }, concurrency: 100 } }),
    ).toEqual([
      'publish.target.bucket: expected an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens), got "My_Bucket"',
      'publish.target.prefix: expected a key prefix not starting with "/" (e.g. "peppol/"), got "/x"',
      'publish.target.endpoint: expected an http(s) URL, got "minio:9000"',
      'publish.target.force_path_style: expected true or false, got 1',
      'publish.concurrency: expected an integer from 1 to 64, got 100',
    ]);
    expect(problems({ publish: { target: { type: 's3' } } })).toEqual([
      'publish.target.bucket: expected an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens), but the key is missing',
    ]);
    expect(problems({ publish: { target: { type: 'gcs', bucket: 'b' } } })).toEqual([
      'publish.target.type: expected "directory" or "s3", got "gcs"',
    ]);
    expect(problems({ publish: { target: { path: 'x' } } })).toEqual([
      'publish.target.type: expected "directory" or "s3", but the key is missing',
    ]);
    expect(problems({ publish: { target: 'publish' } })).toEqual([
      'publish.target: expected an object with "type": "directory" or "s3", got "publish"',
    ]);
  });

  it('a directory target resolves against the config directory and must differ from out', () => {
    expect(parseConfig({ publish: { target: { type: 'directory', path: '../site' } } }, '/srv/peppol').publish.target).toEqual({
      type: 'directory',
      path: '/srv/site',
    });
    expect(problems({ out: 'site', publish: { target: { type: 'directory', path: './site/' } } })).toEqual([
      'publish.target.path: expected a directory other than out ("site"), got "./site/"',
    ]);
  });
});

describe('edge', () => {
  it('keyless endpoints must not be in a tier, and an entry belongs to one tier only', () => {
    expect(
      problems({
        edge: {
          access: {
            mode: 'keyed',
            tiers: { network: ['/v1/network', '/v1/hosts', '/health*', 'hosts.list'], market: ['/v1/hosts', '/v1/stats/*', 'no spaces'] },
          },
        },
      }),
    ).toEqual([
      'edge.access.tiers.market[2]: expected a path pattern starting with "/" (e.g. "/v1/aps/*") or a route id, got "no spaces"',
      'edge.access.tiers.network[0]: expected a pattern that leaves the keyless endpoints alone, got "/v1/network", which covers /v1/network; ' +
        `the spec makes ${KEYLESS_PATHS.join(', ')} keyless, so they never belong to a tier`,
      'edge.access.tiers.network[2]: expected a pattern that leaves the keyless endpoints alone, got "/health*", which covers /health, /health/db; ' +
        `the spec makes ${KEYLESS_PATHS.join(', ')} keyless, so they never belong to a tier`,
      'edge.access.tiers.market[0]: expected an entry in one tier only, got "/v1/hosts", which is also in edge.access.tiers.network',
      'edge.access.tiers.market[1]: expected a pattern that leaves the keyless endpoints alone, got "/v1/stats/*", which covers /v1/stats/participants; ' +
        `the spec makes ${KEYLESS_PATHS.join(', ')} keyless, so they never belong to a tier`,
    ]);
  });

  it('the site (the status page, the feed, the bulk downloads) stays outside the tiers', () => {
    const rejected = ['/bulk/*', '/bulk/latest/datapackage.json', '/status/hosts-1.html', '/feed.atom', '/api.html', '/', '/*'];
    const allowed = ['/v1/bulk', '/statusx', '/v1/status/*'];
    const found = problems({ edge: { access: { mode: 'keyed', tiers: { market: [...rejected, ...allowed] } } } });
    expect(found).toHaveLength(rejected.length);
    rejected.forEach((entry, i) => expect(found[i]).toContain(`edge.access.tiers.market[${i}]: expected a pattern that leaves the keyless endpoints alone, got ${JSON.stringify(entry)}`));
  });

  it('the problem type pages (/problems/*, a keyless pattern) stay outside the tiers, whatever pattern names them', () => {
    const rejected = ['/problems/*', '/problems/not-found', '/p*', '/*/not-found', '/problems/a/*'];
    const allowed = ['/problem', '/problemsx', '/v1/problems/*', '/v1/*/problems'];
    const found = problems({ edge: { access: { mode: 'keyed', tiers: { network: [...DEFAULT_NETWORK_TIER, ...rejected, ...allowed] } } } });
    expect(found).toHaveLength(rejected.length);
    rejected.forEach((entry, i) => {
      expect(found[i]).toContain(`edge.access.tiers.network[${DEFAULT_NETWORK_TIER.length + i}]: expected a pattern that leaves the keyless endpoints alone, got ${JSON.stringify(entry)}`);
      expect(found[i]).toContain('/problems/*');
    });
  });

  it('patternsOverlap: some path matches both patterns', () => {
    const cases: Array<[string, string, boolean]> = [
      ['/v1/network', '/v1/network', true],
      ['/v1/*', '/v1/network', true],
      ['/v1/hosts', '/v1/network', false],
      ['/problems/*', '/problems/not-found', true],
      ['/p*', '/problems/*', true],
      ['/*/x', '/problems/*', true],
      ['/v1/*', '/problems/*', false],
      ['/problems/*', '/problem', false],
      ['/a*b', '/*c', false],
      ['/a*b', '/*b', true],
      ['*', '', true],
      ['/x', '', false],
    ];
    for (const [a, b, want] of cases) {
      expect(patternsOverlap(a, b), `${a} ${b}`).toBe(want);
      expect(patternsOverlap(b, a), `${b} ${a}`).toBe(want);
    }
    // against the matcher: a literal path overlaps a pattern exactly when the pattern matches it
    for (const p of ['/v1/*', '/problems/*', '/health*', '/v1/aps/*/churn']) {
      for (const path of ['/v1/network', '/problems/x', '/health/db', '/v1/aps/c-x/churn', '/v1/aps']) expect(patternsOverlap(p, path), `${p} ${path}`).toBe(matchPathPattern(p, path));
    }
  });

  it('the default tiers cover every paid endpoint family and no keyless endpoint', () => {
    const all = [...DEFAULT_NETWORK_TIER, ...DEFAULT_MARKET_TIER];
    for (const k of KEYLESS_PATHS) expect(all.filter((p) => patternsOverlap(p, k))).toEqual([]);
    const inTier = (p: string, tier: string[]) => tier.some((pat) => matchPathPattern(pat, p));
    for (const p of ['/v1/hosts', '/v1/hosts/smp.example.org/uptime', '/v1/incidents', '/v1/sml', '/v1/events', '/v1/anomalies/a1']) {
      expect(inTier(p, DEFAULT_NETWORK_TIER)).toBe(true);
    }
    for (const p of ['/v1/participants', '/v1/participants/0208::1/events', '/v1/providers/x', '/v1/aps', '/v1/aps/c-x/churn/participants', '/v1/seats/PBE000001']) {
      expect(inTier(p, DEFAULT_MARKET_TIER)).toBe(true);
    }
  });

  it('deprecations: sunset after deprecation, date-times with a zone, optional link', () => {
    const ok = parseConfig(
      { edge: { deprecations: [{ path: '/v1/hosts/*', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-07-01T00:00:00+02:00', link: 'https://example.org/changes' }] } },
      '/srv',
    );
    expect(ok.edge.deprecations).toEqual([
      { path: '/v1/hosts/*', deprecation: '2027-01-01T00:00:00Z', sunset: '2027-07-01T00:00:00+02:00', link: 'https://example.org/changes' },
    ]);
    expect(
      problems({
        edge: {
          deprecations: [
            { path: '/v1/sml', deprecation: '2027-06-01T00:00:00Z', sunset: '2027-01-01T00:00:00Z' },
            { path: 'v1/sml', deprecation: '2027-06-01', sunset: '2027-07-01T00:00:00Z', link: 'docs' },
          ],
        },
      }),
    ).toEqual([
      'edge.deprecations[1].path: expected a path pattern starting with "/" (e.g. "/v1/hosts/*"), got "v1/sml"',
      'edge.deprecations[1].deprecation: expected an ISO 8601 date-time with a time zone (e.g. "2027-01-01T00:00:00Z"), got "2027-06-01"',
      'edge.deprecations[1].link: expected an http(s) URL, got "docs"',
      'edge.deprecations[0].sunset: expected a date-time after deprecation ("2027-06-01T00:00:00Z"), got "2027-01-01T00:00:00Z"',
    ]);
  });
});

describe('JSON schema', () => {
  const schemaFile = path.join(repo, 'docs/config.schema.json');
  const generated = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;

  it('docs/config.schema.json is up to date (regenerate: UPDATE_CONFIG_SCHEMA=1 npx vitest run test/config.test.ts)', () => {
    if (process.env.UPDATE_CONFIG_SCHEMA === '1') fs.writeFileSync(schemaFile, generated);
    const onDisk = fs.existsSync(schemaFile) ? fs.readFileSync(schemaFile, 'utf8') : '';
    expect(onDisk, 'docs/config.schema.json is stale; run: UPDATE_CONFIG_SCHEMA=1 npx vitest run test/config.test.ts').toBe(generated);
  });

  it('describes every section, with defaults and no additional properties', () => {
    const s = configJsonSchema() as { properties: Record<string, { default?: unknown; additionalProperties?: boolean }>; additionalProperties: boolean };
    expect(s.additionalProperties).toBe(false);
    expect(Object.keys(s.properties)).toEqual(['$schema', 'sources', 'database', 'out', 'ingest', 'render', 'publish', 'edge', 'retention', 'bulk']);
    expect(s.properties.database!.default).toBe('data/peppol.sqlite');
  });
});
