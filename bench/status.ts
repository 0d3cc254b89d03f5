// The status page at a scale: reads a derived database (read-only) and renders the site's pages and feed
// in memory as `build` does (src/render/site/), timing each part and giving each page's bytes.
import { openDb } from '../src/db/index.js';
import { feedEntries, atomFeed } from '../src/render/site/feed.js';
import { statusData, statusPages } from '../src/render/site/status-page.js';

export interface StatusBench {
  hosts: number;
  read_seconds: number;
  render_seconds: number;
  feed_seconds: number;
  pages: number;
  index_bytes: number;
  largest_host_page_bytes: number;
  feed_bytes: number;
}

export function benchStatus(dbPath: string, nowMs: number): StatusBench {
  const db = openDb(dbPath, { readonly: true });
  try {
    const t0 = performance.now();
    const data = statusData(db, nowMs);
    const t1 = performance.now();
    const pages = statusPages(data);
    const t2 = performance.now();
    const feed = atomFeed(feedEntries(db, 'https://peppol.example'), 'https://peppol.example', data.generatedAt);
    const t3 = performance.now();
    const bytes = [...pages].map(([p, text]) => [p, Buffer.byteLength(text)] as const);
    return {
      hosts: data.hosts.length,
      read_seconds: Math.round(t1 - t0) / 1000,
      render_seconds: Math.round(t2 - t1) / 1000,
      feed_seconds: Math.round(t3 - t2) / 1000,
      pages: pages.size,
      index_bytes: bytes.find(([p]) => p === 'index.html')![1],
      largest_host_page_bytes: Math.max(0, ...bytes.filter(([p]) => p !== 'index.html').map(([, b]) => b)),
      feed_bytes: Buffer.byteLength(feed),
    };
  } finally {
    db.close();
  }
}
