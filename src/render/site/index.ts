// The site's files, rendered by every build (render unit 0) after the API's (docs/status-page.md): the
// status page and its host pages, the stylesheet, the readable API description and the Atom feed. The
// edge serves them as stored (src/edge/site.ts).
import type { Json } from '../../api/openapi.js';
import type { Db } from '../../db/index.js';
import { SITE_FILES, siteContentType } from '../../edge/site.js';
import type { FileSink } from '../lists.js';
import { apiPageMain } from './api-page.js';
import { atomFeed, feedEntries } from './feed.js';
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
