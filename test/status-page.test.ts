// The status page's renderer on synthetic data (the size bound at the peppol scale, escaping, the
// sparklines), and the edge's serving of site files over an in-memory reader: byte ranges read only
// the bytes asked for, and the site is keyless in keyed mode.
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/index.js';
import { createHandler } from '../src/edge/handler.js';
import { createKeyStore } from '../src/edge/api-keys.js';
import { requestedRange, siteContentType, siteFileOf } from '../src/edge/site.js';
import type { FileReader, FileStat } from '../src/edge/types.js';
import { atomFeed, xmlText, type FeedEntry } from '../src/render/site/feed.js';
import { checkSite } from '../src/render/site/index.js';
import { ATTENTION_MAX, DAYS, HOURS, HOSTS_PER_PAGE, statusPages, type StatusData, type StatusHost } from '../src/render/site/status-page.js';
import { sparkline } from '../src/render/site/sparkline.js';
import { fill, html } from '../src/render/site/template.js';

const NOW = '2026-11-22T00:00:00Z';
/** The page budget of the issue: one page under 300 KB at the peppol scale. */
const PAGE_BUDGET = 300 * 1024;

/** `n` hosts, worst case for size: long names, every slot measured with uneven values, a third not up. */
function syntheticHosts(n: number): StatusHost[] {
  const verdicts = ['up', 'up', 'degraded', 'down', null] as const;
  return Array.from({ length: n }, (_, i) => ({
    hostname: `ap-${String(i).padStart(5, '0')}.a-rather-long-provider-name.peppol-access-point.example.com`,
    role: i % 6 === 0 ? 'SMP' : 'AP',
    verdict: verdicts[i % verdicts.length]!,
    hourly: Array.from({ length: HOURS }, (_, h) => 90 + ((i * 7 + h * 13) % 1000) / 100.123),
    daily: Array.from({ length: DAYS }, (_, d) => 95 + ((i * 11 + d * 17) % 500) / 100.321),
  }));
}

function synthetic(hosts: StatusHost[]): StatusData {
  const loc = ['ams', 'dub', 'fra', 'mad', 'sto', 'waw'];
  return {
    generatedAt: NOW,
    counts: { up: 0, degraded: 0, down: 0, unknown: 0, ...Object.fromEntries(['up', 'degraded', 'down'].map((v) => [v, hosts.filter((h) => h.verdict === v).length])) },
    openIncidents: 60,
    anomalies24h: 20,
    hosts,
    zones: ['edelivery.tech.ec.europa.eu', 'acc.edelivery.tech.ec.europa.eu', 'participant.sml.prod.tech.peppol.org', 'participant.sml.test.tech.peppol.org'].map((zone) => ({
      zone,
      kind: 'SML',
      env: 'production',
      operator: 'European Commission (DG DIGIT)',
      verdict: 'up',
      critical_nxdomain: false,
      cutover: { dname_present: true, dname_target: 'participant.sml.prod.tech.peppol.org' },
      canary: loc.map((location) => ({ location, verdict: 'up', existing_ok: 12, existing_total: 12, nonexistent_ok: 4, nonexistent_total: 4, critical_nxdomain: false, soa_serial: 2014003359, ns: ['ns1.example'], observed_at: NOW })),
      management: { host: 'sml.example', tls_ok: true, tls_not_after: '2027-05-14T23:59:59Z', tls_issuer: 'CA' },
      incidents: [],
    })),
    incidents: hosts.slice(0, 50).map((h, i) => ({ id: i, hostname: h.hostname, role: 'AP', status: 'open', severity: 'down', started_at: NOW, ended_at: null, timeline: [] })),
    anomalies: Array.from({ length: 20 }, (_, i) => ({
      id: `cis-${String(i).padStart(16, '0')}`,
      detector: 'cert_identity_shift',
      grade: 'warning',
      target: { hostname: hosts[i % hosts.length]!.hostname, seat_id: 'PBE000123' },
      event_refs: [],
      evidence: {},
      observed_at: NOW,
      acknowledged: false,
      reason: null,
    })),
  };
}

describe('the status page', () => {
  it(`keeps every page under 300 KB at the peppol scale (1,200 hosts, ${HOSTS_PER_PAGE} a page)`, () => {
    const t0 = performance.now();
    const pages = statusPages(synthetic(syntheticHosts(1200)));
    const ms = performance.now() - t0;
    expect(pages.size).toBe(1 + 1200 / HOSTS_PER_PAGE);
    const sizes = [...pages].map(([p, text]) => [p, Buffer.byteLength(text)] as const);
    for (const [p, bytes] of sizes) expect(bytes, p).toBeLessThan(PAGE_BUDGET);
    // the index lists the hosts that are not up, at most ATTENTION_MAX of them, and says how many more
    const index = pages.get('index.html')!;
    expect(index.match(/<tr><th scope="row"><a href="v1\/hosts\/[^"/]+">/g)?.length).toBe(ATTENTION_MAX);
    expect(index).toContain(`And ${720 - ATTENTION_MAX} more`);
    expect(ms).toBeLessThan(2000);
  });

  it('grows by host pages, not index bytes: 12,000 hosts keep the index under the budget too', () => {
    const pages = statusPages(synthetic(syntheticHosts(12_000)));
    for (const [p, text] of pages) expect(Buffer.byteLength(text), p).toBeLessThan(PAGE_BUDGET);
  });

  it('escapes every text of the data', () => {
    const evil = '<script>alert("x")</script>&.example';
    const data = synthetic(syntheticHosts(3).map((h, i) => (i === 0 ? { ...h, hostname: evil, verdict: 'down' } : h)));
    data.zones[0]!.operator = '<img src=x onerror=alert(1)>';
    data.anomalies[0]!.target = { note: '"><b>bold</b>' };
    for (const [, text] of statusPages(data)) {
      expect(text).not.toContain('<script>');
      expect(text).not.toContain('<img');
      expect(text).not.toContain('<b>bold');
    }
    expect(statusPages(data).get('index.html')).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;.example');
  });

  it('draws sparklines with gaps and a text alternative', () => {
    const svg = sparkline([100, 99.5, null, 80, 100], 'last 5 hours', 'hours');
    expect(svg).toMatch(/^<svg role="img" class="spark" viewBox="0 0 16 22" width="16" height="22" preserveAspectRatio="none">/);
    expect(svg).toContain('<title>Uptime, last 5 hours: mean 94.88 %, lowest 80.00 %; 4 of 5 hours measured</title>');
    expect(svg).toContain('<path d="M0 1L4 2M12 21L16 1"/>');
    expect(sparkline([null, null], 'last 2 days', 'days')).toContain('<title>Uptime, last 2 days: no measurement</title>');
  });

  it('templates and renderers cannot drift apart: a missing or an unused value is an error', () => {
    expect(() => fill('hosts.html', { first: 1 })).toThrow(/no value for/);
    const values = { first: 1, last: 2, host_count: 2, per_page: 100, scale: '', pager: html``, table: html``, pager_end: html``, extra: 1 };
    expect(() => fill('hosts.html', values)).toThrow(/not used: extra/);
    expect(() => fill('hosts.html', { ...values, extra: undefined as unknown as number, table: 'text' })).toThrow(/needs HTML/);
  });
});

describe('the Atom feed', () => {
  it('escapes its text and drops characters XML 1.0 cannot hold', () => {
    expect(xmlText('a<b>&"c\'\u0001\u000bd\ttab')).toBe('a&lt;b&gt;&amp;&quot;c&apos;d\ttab');
    const entry: FeedEntry = { id: 'tag:x,2026:event:1', title: '<t>', updated: NOW, link: 'https://x/v1/a?b=1&c=2', summary: 's', category: 'c' };
    const xml = atomFeed([entry], 'https://x/', NOW);
    expect(xml).toContain('<title type="text">&lt;t&gt;</title>');
    expect(xml).toContain('href="https://x/v1/a?b=1&amp;c=2"');
    expect(xml).toContain('<link rel="self" type="application/atom+xml" href="https://x/feed.atom"/>');
  });
});

describe('verify of the site', () => {
  it('passes the rendered pages and feed, and names a missing, cut or malformed one', () => {
    const files = new Map<string, string>(statusPages(synthetic(syntheticHosts(150))));
    files.set('api.html', files.get('status/hosts-2.html')!);
    files.set('status/style.css', 'body{}');
    files.set('feed.atom', atomFeed([{ id: 'tag:x,2026:event:1', title: 't', updated: NOW, link: 'https://x/v1/events', summary: 's', category: 'c' }], 'https://x/', NOW));
    const run = (edit: (m: Map<string, string>) => void): string[] => {
      const m = new Map(files);
      edit(m);
      const failed: string[] = [];
      checkSite(new Set(m.keys()), (p) => (m.has(p) ? Buffer.from(m.get(p)!) : null), (p, why) => failed.push(`${p}: ${why}`));
      return failed;
    };
    expect(run(() => {})).toEqual([]);
    expect(run((m) => m.delete('status/style.css'))).toEqual(['status/style.css: missing from the manifest (the site)']);
    expect(run((m) => m.set('index.html', m.get('index.html')!.slice(0, 5000)))).toEqual(['index.html: not a whole HTML page with one h1']);
    expect(run((m) => m.set('feed.atom', m.get('feed.atom')!.replace('</entry>', '')))).toEqual(['feed.atom: not an Atom feed of at most FEED_ENTRIES whole entries']);
  });
});

describe('site paths', () => {
  it('map a request path to its file and content type', () => {
    expect(siteFileOf('/')).toBe('index.html');
    expect(siteFileOf('/status/hosts-3.html')).toBe('status/hosts-3.html');
    expect(siteFileOf('/bulk/latest/SHA256SUMS')).toBe('bulk/latest/SHA256SUMS');
    expect(siteFileOf('/status/')).toBeNull();
    expect(siteFileOf('/v1/network')).toBeNull();
    expect(siteFileOf('/index.html')).toBeNull();
    expect(siteContentType('bulk/latest/SHA256SUMS')).toBe('text/plain; charset=utf-8');
    expect(siteContentType('bulk/latest/participants.ndjson.gz')).toBe('application/gzip');
    expect(siteContentType('bulk/latest/hosts.parquet')).toBe('application/vnd.apache.parquet');
    expect(siteContentType('bulk/latest/x.unknown')).toBe('application/octet-stream');
  });

  it('resolve Range headers (RFC 9110 §14.1.2)', () => {
    expect(requestedRange(null, 100)).toBeNull();
    expect(requestedRange('bytes=0-9', 100)).toEqual({ start: 0, length: 10 });
    expect(requestedRange('bytes=90-200', 100)).toEqual({ start: 90, length: 10 });
    expect(requestedRange('bytes=95-', 100)).toEqual({ start: 95, length: 5 });
    expect(requestedRange('bytes=-10', 100)).toEqual({ start: 90, length: 10 });
    expect(requestedRange('bytes=-1000', 100)).toEqual({ start: 0, length: 100 });
    expect(requestedRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(requestedRange('bytes=-0', 100)).toBe('unsatisfiable');
    expect(requestedRange('bytes=0-0', 0)).toBe('unsatisfiable');
    for (const ignored of ['bytes=5-1', 'bytes=0-1,3-4', 'lines=0-1', 'bytes=-', 'bytes=a-b']) expect(requestedRange(ignored, 100), ignored).toBeNull();
  });
});

/** A snapshot in memory whose whole-file read refuses the large file: ranges must go through readRange. */
function memoryReader(files: Record<string, Uint8Array>, large: string) {
  const reads = { whole: [] as string[], ranges: [] as [string, number, number][] };
  const stat = async (p: string): Promise<FileStat | null> => (files[p] ? { size: files[p].length, etag: `"v-${files[p].length}"` } : null);
  const reader: FileReader = {
    async read(p) {
      if (p === large) throw new Error(`the whole of ${p} was read`);
      reads.whole.push(p);
      return files[p] ?? null;
    },
    stat,
    async readRange(p, start, length, etag) {
      reads.ranges.push([p, start, length]);
      const f = files[p];
      if (!f || (await stat(p))?.etag !== etag) return null;
      return new Blob([f.subarray(start, start + length)]).stream();
    },
  };
  return { reader, reads };
}

describe('the edge serves site files', () => {
  const big = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
  const files = { 'bulk/latest/participants.parquet': big, 'index.html': new TextEncoder().encode('<!DOCTYPE html><title>s</title>'), 'snapshot.json': new TextEncoder().encode('{"generated_at":"2026-11-22T00:00:00Z","base_url":"https://x.example"}') };

  function handler(mode: 'open' | 'keyed') {
    const { reader, reads } = memoryReader(files, 'bulk/latest/participants.parquet');
    const base = defaultConfig().edge;
    const handle = createHandler({
      files: reader,
      resolve: async () => ({ status: 200, body: new TextEncoder().encode('{}'), contentType: 'application/json', cacheClass: 'mutable' }),
      policy: { ...base, access: { ...base.access, mode } },
      keys: createKeyStore([]),
    });
    return { handle: (target: string, headers: Record<string, string> = {}, method = 'GET') => handle(new Request(`http://edge.test${target}`, { method, headers }), '192.0.2.1'), reads };
  }

  it('answers a range of a large file by reading that range only, never the whole file', async () => {
    const { handle, reads } = handler('open');
    const r = await handle('/bulk/latest/participants.parquet', { Range: 'bytes=-8' });
    expect(r.status).toBe(206);
    expect(new Uint8Array(await r.arrayBuffer())).toEqual(big.subarray(big.length - 8));
    expect(reads.ranges).toEqual([['bulk/latest/participants.parquet', big.length - 8, 8]]);
    const head = await handle('/bulk/latest/participants.parquet', {}, 'HEAD');
    expect(head.headers.get('content-length')).toBe(String(big.length));
    expect(reads.ranges.length).toBe(1); // HEAD reads no byte
    const whole = await handle('/bulk/latest/participants.parquet');
    expect((await whole.arrayBuffer()).byteLength).toBe(big.length); // streamed through readRange
    expect(reads.whole).toEqual([]);
  });

  it('keeps the site keyless in keyed mode, and the API behind a key', async () => {
    const { handle } = handler('keyed');
    expect((await handle('/')).status).toBe(200);
    expect((await handle('/bulk/latest/participants.parquet', { Range: 'bytes=0-3' })).status).toBe(206);
    const api = await handle('/v1/hosts');
    expect(api.status).toBe(403);
    const site = await handle('/');
    expect(site.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    expect(site.headers.get('ratelimit-remaining')).not.toBeNull();
  });
});
