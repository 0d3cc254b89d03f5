// The feed for people (docs/status-page.md): the newest change events and anomalies, merged by time,
// as an Atom feed (RFC 4287) at `feed.atom`, rendered at every build from the oracle's readers. Each
// entry links to the API resource it is about; its text is plain (no markup from the data).
import type { Db } from '../../db/index.js';
import { anomalyList, type AnomalyView } from '../../derive/anomalies.js';
import { newestEvents } from '../../api/events/query.js';
import type { GlobalEvent } from '../../api/schemas/index.js';
import { apiTs } from '../../api/time.js';
import { SITE_FILES } from '../../edge/site.js';
import { brief } from './status-page.js';

/** Entries in the feed: the newest events and anomalies together. */
export const FEED_ENTRIES = 100;
export const FEED_CONTENT_TYPE = 'application/atom+xml';

export interface FeedEntry {
  id: string;
  title: string;
  updated: string;
  link: string;
  summary: string;
  category: string;
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Text as XML 1.0 character data or attribute value: escaped, characters XML cannot hold dropped. */
export function xmlText(s: string): string {
  return s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '').replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);
}

const base = (baseUrl: string): string => baseUrl.replace(/\/+$/, '');

/** The authority of the `tag:` URIs (RFC 4151) of event entries: the base URL's host. */
function tagAuthority(baseUrl: string): string {
  return new URL(baseUrl).hostname;
}

function eventEntry(e: GlobalEvent, baseUrl: string): FeedEntry {
  const b = base(baseUrl);
  const subject = e.participant ?? e.hostname;
  const link =
    e.participant !== null
      ? `${b}/v1/participants/${encodeURIComponent(e.participant)}/events`
      : e.hostname !== null
        ? `${b}/v1/hosts/${encodeURIComponent(e.hostname)}`
        : `${b}/v1/events?type=${e.type}`;
  const anomalies = e.anomalies.length > 0 ? ` Triggered: ${e.anomalies.map((a) => `${a.detector} (${a.grade})`).join(', ')}.` : '';
  return {
    id: `tag:${tagAuthority(baseUrl)},2026:event:${e.id}`,
    title: `${e.type.replace(/_/g, ' ')}${subject ? `: ${subject}` : ''}`,
    updated: e.observed_at,
    link,
    summary: `${brief(e.payload, 400)}${anomalies}`,
    category: e.type,
  };
}

function anomalyEntry(a: AnomalyView, baseUrl: string): FeedEntry {
  const url = `${base(baseUrl)}/v1/anomalies/${encodeURIComponent(a.id)}`;
  return {
    id: url,
    title: `Anomaly, ${a.grade}: ${a.detector.replace(/_/g, ' ')}`,
    updated: apiTs(a.observed_at),
    link: url,
    summary: `Concerns ${brief(a.target, 200)}. Evidence: ${brief(a.evidence, 300)}.${a.acknowledged ? ` Acknowledged${a.reason ? `: ${a.reason}` : ''}.` : ''}`,
    category: `anomaly:${a.detector}`,
  };
}

/** The newest FEED_ENTRIES events and anomalies, newest first (ties: by id), read with the oracle's readers. */
export function feedEntries(db: Db, baseUrl: string, n = FEED_ENTRIES): FeedEntry[] {
  const entries = newestEvents(db, n).map((e) => eventEntry(e, baseUrl));
  for (const { item } of anomalyList(db)) {
    if (entries.length >= 2 * n) break;
    entries.push(anomalyEntry(item, baseUrl));
  }
  return entries.sort((x, y) => (x.updated !== y.updated ? (x.updated < y.updated ? 1 : -1) : x.id < y.id ? 1 : x.id > y.id ? -1 : 0)).slice(0, n);
}

/** The Atom document; `updated` is the newest entry's time (the snapshot's when there is none), so it changes only with the entries. */
export function atomFeed(entries: readonly FeedEntry[], baseUrl: string, generatedAt: string): string {
  const b = base(baseUrl);
  const lines = [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">',
    `<id>${xmlText(`${b}/${SITE_FILES.feed}`)}</id>`,
    '<title>Peppol network: change events and anomalies</title>',
    '<subtitle>The newest change events and anomalies the monitoring of the Peppol e-invoicing network observed; each entry links to the JSON API.</subtitle>',
    `<updated>${xmlText(entries[0]?.updated ?? generatedAt)}</updated>`,
    `<link rel="self" type="${FEED_CONTENT_TYPE}" href="${xmlText(`${b}/${SITE_FILES.feed}`)}"/>`,
    `<link rel="alternate" type="text/html" href="${xmlText(`${b}/`)}"/>`,
    '<author><name>peppol-snapshot</name></author>',
    '<generator>peppol-snapshot</generator>',
  ];
  for (const e of entries) {
    lines.push(
      '<entry>',
      `<id>${xmlText(e.id)}</id>`,
      `<title type="text">${xmlText(e.title)}</title>`,
      `<updated>${xmlText(e.updated)}</updated>`,
      `<link rel="alternate" type="application/json" href="${xmlText(e.link)}"/>`,
      `<category term="${xmlText(e.category)}"/>`,
      `<summary type="text">${xmlText(e.summary)}</summary>`,
      '</entry>',
    );
  }
  lines.push('</feed>', '');
  return lines.join('\n');
}
