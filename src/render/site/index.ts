// The site's files, rendered by every build (render unit 0) after the API's (docs/status-page.md): the
// status page and its host pages, the stylesheet, the readable API description and the Atom feed. The
// edge serves them as stored (src/edge/site.ts).
import type { Json } from '../../api/openapi.js';
import type { Db } from '../../db/index.js';
import { SITE_FILES, siteContentType } from '../../edge/site.js';
import type { FileSink } from '../lists.js';
import { apiPageMain } from './api-page.js';
import { atomFeed, FEED_ENTRIES, feedEntries } from './feed.js';
import { page, statusData, statusPages } from './status-page.js';
import { template } from './template.js';

const enc = new TextEncoder();

/** The site's entry in a build summary's `routes` (seconds): not a route of the table. */
export const SITE_RENDER = 'site';

export interface SiteInput {
  db: Db;
  nowMs: number;
  baseUrl: string;
  /** The OpenAPI document this build writes as openapi.json. */
  openapi: Json;
}

/** Writes every site file into `sink`. */
export function renderSite(sink: FileSink, s: SiteInput): void {
  const put = (path: string, text: string) => sink.put(path, enc.encode(text), siteContentType(path), 'mutable');
  const data = statusData(s.db, s.nowMs);
  for (const [path, text] of statusPages(data)) put(path, text);
  put(SITE_FILES.style, template('style.css'));
  put(SITE_FILES.apiPage, page('API · Peppol network status', 'Every endpoint of the read-only JSON API, its parameters and answers.', '', data.generatedAt, apiPageMain(s.openapi)));
  put(SITE_FILES.feed, atomFeed(feedEntries(s.db, s.baseUrl), s.baseUrl, data.generatedAt));
}

/**
 * `verify`'s check of the site: every file `renderSite` writes is listed, each HTML page is a whole
 * document with one h1, and the feed is an Atom document whose entries open and close (a shallow
 * well-formedness check; the browser test parses it with a real XML parser).
 */
export function checkSite(listed: ReadonlySet<string>, read: (rel: string) => Buffer | null, fail: (path: string, message: string) => void): void {
  const pages = [SITE_FILES.index, SITE_FILES.apiPage, ...[...listed].filter((p) => /^status\/hosts-\d+\.html$/.test(p))];
  for (const p of [...pages, SITE_FILES.style, SITE_FILES.feed, 'status/hosts-1.html']) if (!listed.has(p)) fail(p, 'missing from the manifest (the site)');
  for (const p of pages) {
    const text = read(p)?.toString('utf8') ?? '';
    if (!text.startsWith('<!DOCTYPE html>') || !text.trimEnd().endsWith('</html>') || (text.match(/<h1[\s>]/g) ?? []).length !== 1) fail(p, 'not a whole HTML page with one h1');
  }
  const feed = read(SITE_FILES.feed)?.toString('utf8') ?? '';
  const opened = (feed.match(/<entry>/g) ?? []).length;
  if (!feed.startsWith('<?xml') || !feed.includes('<feed xmlns="http://www.w3.org/2005/Atom"') || !feed.trimEnd().endsWith('</feed>') || opened !== (feed.match(/<\/entry>/g) ?? []).length || opened > FEED_ENTRIES) {
    fail(SITE_FILES.feed, 'not an Atom feed of at most FEED_ENTRIES whole entries');
  }
}
