// The status page in a real browser: the small demo's snapshot built, the built CLI's `serve` on
// 127.0.0.1, Debian's Chromium driven by playwright-core. At phone and desktop widths the page loads
// with no console error and no failed request, only from its own origin, with one h1, ordered
// headings and a text alternative on every sparkline, and does not overflow a phone's width; the
// screenshots are saved under a temporary directory (STATUS_SCREENSHOT_DIR to keep them). The Atom
// feed parses as XML in the browser with the elements RFC 4287 requires and lists the newest events
// and anomalies. A page of another origin reads a /v1 answer and its RateLimit-Remaining header
// through CORS.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/index.js';
import { startServe, type Served } from './helpers/cli.js';
import { builtSmallDemo, copyOfDb } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

/** Debian's chromium on PATH (.ci/run installs it). */
function chromiumPath(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const p = path.join(dir, name);
      if (fs.existsSync(p)) return p;
    }
  }
  throw new Error('chromium is not on PATH: apt-get install -y chromium (.ci/run does)');
}

let db: Db;
let server: Served;
let other: http.Server;
let otherUrl: string;
let browser: Browser;
const shots = process.env.STATUS_SCREENSHOT_DIR ?? tempDir('status-screens-');

beforeAll(async () => {
  // The small demo built once per run (test/helpers/demo-fixture.ts), served in place; its database copied.
  const built = await builtSmallDemo();
  const out = built.out;
  db = copyOfDb(built.db).open();
  const config = path.join(tempDir('status-config-'), 'config.json');
  fs.writeFileSync(config, '{}\n');
  server = await startServe(['--config', config, '--out', out, '--host', '127.0.0.1', '--port', '0', '--rate-limit', '60/60', '--access', 'open', '--health-max-age', '3153600000']);
  // Another origin: a blank page on another port of 127.0.0.1.
  other = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!DOCTYPE html><html lang="en"><title>Another origin</title></html>'));
  await new Promise<void>((ok) => other.listen(0, '127.0.0.1', ok));
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`;
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'], timeout: 30_000 });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((ok) => (other ? other.close(ok) : ok(undefined)));
  db?.close();
  if (server && server.child.exitCode === null) {
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
    await server.done;
    clearTimeout(timer);
  }
});

// What the tests read in the page, as scripts run there (the browser's DOM is not in this project's types).
interface Facts {
  lang: string;
  h1: number;
  levels: number[];
  sparks: { role: string | null; title: string }[];
  tablesWithoutHeaders: number;
  overflow: number;
  feed: string | null;
  stylesheets: number;
  emptyLinks: number;
}
const PAGE_FACTS = `(() => ({
  lang: document.documentElement.lang,
  h1: document.querySelectorAll('h1').length,
  levels: [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => Number(h.tagName[1])),
  sparks: [...document.querySelectorAll('svg.spark')].map((s) => ({ role: s.getAttribute('role'), title: s.querySelector('title')?.textContent ?? '' })),
  tablesWithoutHeaders: [...document.querySelectorAll('table')].filter((t) => t.querySelectorAll('th[scope]').length === 0).length,
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  feed: document.querySelector('link[rel="alternate"][type="application/atom+xml"]')?.getAttribute('href') ?? null,
  stylesheets: document.styleSheets.length,
  emptyLinks: [...document.querySelectorAll('a')].filter((a) => (a.textContent ?? '').trim() === '').length,
}))()`;

interface FeedFacts {
  error: number;
  root: string;
  feed: number[];
  self: boolean;
  entries: { id: string; title: string; updated: string; link: string; summary: number }[];
}
/** feed.atom fetched and parsed by the browser's XML parser (DOMParser), its Atom elements counted. */
const FEED_FACTS = `(async () => {
  const text = await (await fetch('feed.atom')).text();
  const doc = new DOMParser().parseFromString(text, 'application/xml');
  const NS = 'http://www.w3.org/2005/Atom';
  const kids = (el, name) => [...el.children].filter((c) => c.namespaceURI === NS && c.localName === name);
  const root = doc.documentElement;
  return {
    error: doc.getElementsByTagName('parsererror').length,
    root: root.namespaceURI + ' ' + root.localName,
    feed: ['id', 'title', 'updated', 'author'].map((n) => kids(root, n).length),
    self: kids(root, 'link').some((l) => l.getAttribute('rel') === 'self'),
    entries: kids(root, 'entry').map((e) => ({
      id: kids(e, 'id')[0]?.textContent ?? '',
      title: kids(e, 'title')[0]?.textContent ?? '',
      updated: kids(e, 'updated')[0]?.textContent ?? '',
      link: kids(e, 'link')[0]?.getAttribute('href') ?? '',
      summary: kids(e, 'summary').length,
    })),
  };
})()`;

interface Loaded {
  problems: string[];
  requests: string[];
}

/** Opens `target` of serve at a viewport; collects console errors, page errors, failed and non-2xx requests. */
async function open(target: string, width: number, height: number, shot?: string) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const seen: Loaded = { problems: [], requests: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') seen.problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => seen.problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => seen.problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('request', (r) => seen.requests.push(r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.problems.push(`${r.status()}: ${r.url()}`);
  });
  const res = await page.goto(`${server.url}${target}`, { waitUntil: 'load', timeout: 15_000 });
  expect(res?.status()).toBe(200);
  if (shot) {
    const file = path.join(shots, shot);
    await page.screenshot({ path: file, fullPage: true, timeout: 15_000 });
    const png = fs.readFileSync(file);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(10_000);
  }
  return { page, context, seen };
}

describe('the status page in Chromium', () => {
  for (const [name, width, height] of [
    ['phone', 375, 812],
    ['desktop', 1280, 800],
  ] as const) {
    it(`renders at ${width}×${height} (${name}) with no console error and no failed request, from its own origin only`, async () => {
      const { page, context, seen } = await open('/', width, height, `status-${name}.png`);
      const facts = await page.evaluate<Facts>(PAGE_FACTS);
      expect(seen.problems).toEqual([]);
      expect(seen.requests.length).toBeGreaterThanOrEqual(2); // the page and its stylesheet
      for (const u of seen.requests) expect(u.startsWith(`${server.url}/`), u).toBe(true);
      expect(facts.lang).toBe('en');
      expect(facts.h1).toBe(1);
      expect(facts.levels[0]).toBe(1);
      for (let i = 1; i < facts.levels.length; i++) expect(facts.levels[i]!, `heading ${i}`).toBeLessThanOrEqual(facts.levels[i - 1]! + 1);
      expect(facts.sparks.length).toBeGreaterThan(0);
      for (const s of facts.sparks) {
        expect(s.role).toBe('img');
        expect(s.title).toMatch(/^Uptime, last (24 hours|30 days): (mean \d+\.\d\d %, lowest \d+\.\d\d %; \d+ of (24 hours|30 days) measured|no measurement)$/);
      }
      expect(facts.tablesWithoutHeaders).toBe(0);
      expect(facts.overflow, 'the page is no wider than the window').toBeLessThanOrEqual(0);
      expect(facts.feed).toBe('feed.atom');
      expect(facts.stylesheets).toBe(1);
      expect(facts.emptyLinks).toBe(0);
      await context.close();
    });
  }

  it('the host pages and the API page load clean at phone width too', async () => {
    for (const target of ['/status/hosts-1.html', '/api.html']) {
      const { page, context, seen } = await open(target, 375, 812, `${target.replace(/\W+/g, '-')}.png`);
      expect(seen.problems, target).toEqual([]);
      expect(await page.locator('h1').count()).toBe(1);
      expect((await page.evaluate<Facts>(PAGE_FACTS)).overflow, target).toBeLessThanOrEqual(0);
      if (target === '/api.html') expect(await page.locator('h2 code', { hasText: 'GET /v1/participants/{id}/events' }).count()).toBe(1);
      await context.close();
    }
  });

  it('the Atom feed is well-formed XML with the required elements and lists the newest events and anomalies', async () => {
    const { page, context } = await open('/', 1280, 800);
    const feed = await page.evaluate<FeedFacts>(FEED_FACTS);
    await context.close();
    expect(feed.error).toBe(0);
    expect(feed.root).toBe('http://www.w3.org/2005/Atom feed');
    expect(feed.feed).toEqual([1, 1, 1, 1]);
    expect(feed.self).toBe(true);
    expect(feed.entries.length).toBe(100);
    const times = feed.entries.map((e) => Date.parse(e.updated));
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeLessThanOrEqual(times[i - 1]!);
    for (const e of feed.entries) {
      expect(e.title).not.toBe('');
      expect(Number.isFinite(Date.parse(e.updated))).toBe(true);
      expect(e.link).toMatch(/^http:\/\/127\.0\.0\.1:8787\/v1\//);
      expect(e.summary).toBe(1);
    }
    expect(new Set(feed.entries.map((e) => e.id)).size).toBe(feed.entries.length);
    // Every event and anomaly newer than the feed's oldest entry is in it: the feed holds the newest.
    const oldest = times[times.length - 1]!;
    const events = db.prepare('SELECT id FROM events WHERE observed_at > ? ORDER BY observed_at DESC, id DESC').pluck().all(oldest) as string[];
    const anomalies = db.prepare('SELECT id FROM anomalies WHERE observed_at > ?').pluck().all(oldest) as string[];
    expect(events.length).toBeGreaterThan(0);
    const ids = new Set(feed.entries.map((e) => e.id.replace(/^tag:[^:]+:event:/, '').replace(/^.*\/v1\/anomalies\//, '')));
    for (const id of [...events, ...anomalies]) expect(ids.has(id), id).toBe(true);
    expect(feed.entries[0]!.id).toBe(`tag:127.0.0.1,2026:event:${events[0]}`);
  });

  it('a page of another origin reads a /v1 answer and its RateLimit-Remaining header (CORS)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(otherUrl, { timeout: 15_000 });
    const got = await page.evaluate(async (url) => {
      const r = await fetch(url);
      return { status: r.status, remaining: r.headers.get('RateLimit-Remaining'), limit: r.headers.get('RateLimit-Limit'), hidden: r.headers.get('X-Content-Type-Options'), body: (await r.json()) as { hosts: { up: number } } };
    }, `${server.url}/v1/network`);
    await context.close();
    expect(new URL(otherUrl).origin).not.toBe(server.url);
    expect(got.status).toBe(200);
    expect(got.limit).toBe('60');
    expect(Number(got.remaining)).toBeGreaterThanOrEqual(0);
    expect(Number(got.remaining)).toBeLessThan(60);
    expect(got.hidden).toBeNull(); // a header the edge does not expose stays hidden from another origin
    expect(typeof got.body.hosts.up).toBe('number');
  });
});
