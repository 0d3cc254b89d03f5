// The status page (docs/status-page.md): `index.html` at the service root and the host pages
// `status/hosts-<n>.html`, rendered from templates/status/ at every build from the database state the
// API files come from (the oracle's readers). `statusData` reads; `statusPages` renders, pure, so that
// the size bound is tested on any number of hosts.
import { hostIncidents, hostVerdicts, openIncidentCount, uptimePct, type IncidentView } from '../../derive/hosts/read.js';
import { ROLLUP_TABLES } from '../../derive/hosts/rollup.js';
import { anomalyCount, anomalyList, type AnomalyView } from '../../derive/anomalies.js';
import { smlResponse, type ZoneStatusView } from '../../derive/zones.js';
import type { Db } from '../../db/index.js';
import { apiTs, DAY_MS, HOUR_MS } from '../../api/time.js';
import { hostsPagePath, SITE_FILES } from '../../edge/site.js';
import { fill, html, Html } from './template.js';
import { pct, SPARK_FLOOR, sparkline } from './sparkline.js';

/** Hosts on one host page; at 1,200 hosts (the peppol scale) 12 pages of about 100 KB. */
export const HOSTS_PER_PAGE = 100;
/** Hosts that are not up listed on the index at most (the rest on the host pages). */
export const ATTENTION_MAX = 100;
/** Open incidents and recent anomalies listed on the index at most. */
export const INCIDENTS_MAX = 50;
export const ANOMALIES_MAX = 20;
/** Slots of the sparklines: hourly over 24 hours, daily over 30 days. */
export const HOURS = 24;
export const DAYS = 30;

type Verdict = 'up' | 'degraded' | 'down' | null;

export interface StatusHost {
  hostname: string;
  role: string | null;
  verdict: Verdict;
  /** Uptime % per hour, oldest first (HOURS slots, the last the current hour); null: not measured. */
  hourly: (number | null)[];
  /** Uptime % per day, oldest first (DAYS slots, the last today). */
  daily: (number | null)[];
}

export interface StatusData {
  generatedAt: string;
  counts: { up: number; degraded: number; down: number; unknown: number };
  openIncidents: number;
  anomalies24h: number;
  /** Every monitored host, in hostname order. */
  hosts: StatusHost[];
  zones: ZoneStatusView[];
  /** Open host incidents, newest first (at most INCIDENTS_MAX). */
  incidents: IncidentView[];
  anomalies: AnomalyView[];
}

/**
 * The series of one resolution of every host (`__all__` rollup), slot by slot: one query. CROSS JOIN
 * keeps `hosts` the outer loop, so each host's rows are a range of the rollup's primary key (SQLite
 * would otherwise scan the whole rollup table: 18 million hourly rows at the peppol scale).
 */
function uptimeSeries(db: Db, table: string, slot: number, slots: number, nowMs: number): Map<string, (number | null)[]> {
  const first = Math.floor(nowMs / slot) * slot - (slots - 1) * slot;
  const rows = db
    .prepare(
      `SELECT h.hostname, u.bucket_start, u.up, u.degraded, u.down FROM hosts h
       CROSS JOIN ${table} u ON u.host_id = h.id AND u.bucket_start >= ? AND u.bucket_start < ? AND u.location = ''`,
    )
    .all(first, nowMs) as { hostname: string; bucket_start: number; up: number; degraded: number; down: number }[];
  const out = new Map<string, (number | null)[]>();
  for (const r of rows) {
    let s = out.get(r.hostname);
    if (!s) out.set(r.hostname, (s = new Array<number | null>(slots).fill(null)));
    s[Math.floor((r.bucket_start - first) / slot)] = uptimePct(r.up, r.degraded, r.down);
  }
  return out;
}

/** What the status page shows, read from the database at `nowMs` (the same readers as the API's answers). */
export function statusData(db: Db, nowMs: number): StatusData {
  // The hosts and verdicts of /v1/hosts and /v1/network (hostVerdictCounts counts these).
  const hosts = hostVerdicts(db, nowMs);
  const hourly = uptimeSeries(db, ROLLUP_TABLES.hourly, HOUR_MS, HOURS, nowMs);
  const daily = uptimeSeries(db, ROLLUP_TABLES.daily, DAY_MS, DAYS, nowMs);
  const empty = (n: number): null[] => new Array<null>(n).fill(null);
  const incidents: IncidentView[] = [];
  for (const { item } of hostIncidents(db, { status: 'open' })) {
    if (incidents.length === INCIDENTS_MAX) break;
    incidents.push(item);
  }
  const anomalies: AnomalyView[] = [];
  for (const { item } of anomalyList(db)) {
    if (anomalies.length === ANOMALIES_MAX) break;
    anomalies.push(item);
  }
  const count = (v: Verdict) => hosts.filter((h) => h.verdict === v).length;
  return {
    generatedAt: apiTs(nowMs),
    counts: { up: count('up'), degraded: count('degraded'), down: count('down'), unknown: count(null) },
    openIncidents: openIncidentCount(db),
    anomalies24h: anomalyCount(db, nowMs - 24 * HOUR_MS, nowMs),
    hosts: hosts.map((h) => ({ ...h, hourly: hourly.get(h.hostname) ?? empty(HOURS), daily: daily.get(h.hostname) ?? empty(DAYS) })),
    zones: smlResponse(db, nowMs).zones,
    incidents,
    anomalies,
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering

const VERDICT_RANK: Record<string, number> = { down: 0, degraded: 1, unknown: 2, up: 3 };
const verdictName = (v: Verdict): string => v ?? 'unknown';

function verdictCell(v: Verdict): Html {
  const name = verdictName(v);
  return html`<td class="v v-${name}">${name}</td>`;
}

/** "14 Nov 2026, 09:00 UTC" of an API timestamp. */
function when(ts: string): string {
  const d = new Date(ts);
  const mon = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCDate()} ${mon} ${d.getUTCFullYear()}, ${p(d.getUTCHours())}:${p(d.getUTCMinutes())} UTC`;
}

function mean(series: ReadonlyArray<number | null>): string {
  const m = series.filter((x): x is number => x !== null);
  return m.length === 0 ? '–' : pct(m.reduce((s, x) => s + x, 0) / m.length);
}

/** The table of hosts with their verdict and both sparklines. */
function hostTable(hosts: readonly StatusHost[], caption: string, root: string): Html {
  const rows = hosts.map(
    (h) => html`<tr><th scope="row"><a href="${root}v1/hosts/${h.hostname}">${h.hostname}</a></th><td class="wide">${h.role ?? '–'}</td>${verdictCell(h.verdict)}<td class="n">${mean(h.hourly)}</td><td>${new Html(sparkline(h.hourly, 'last 24 hours', 'hours'))}</td><td class="n wide">${mean(h.daily)}</td><td class="wide">${new Html(sparkline(h.daily, 'last 30 days', 'days'))}</td></tr>\n`,
  );
  return html`<div class="table"><table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Host</th><th scope="col" class="wide">Role</th><th scope="col">Now</th><th scope="col" class="n">24 h</th><th scope="col">Hourly</th><th scope="col" class="n wide">30 d</th><th scope="col" class="wide">Daily</th></tr></thead>
<tbody>
${rows}</tbody></table></div>`;
}

function pageRange(hosts: readonly StatusHost[], n: number): { first: number; last: number; hosts: StatusHost[] } {
  const first = (n - 1) * HOSTS_PER_PAGE;
  const page = hosts.slice(first, first + HOSTS_PER_PAGE);
  return { first: first + 1, last: first + page.length, hosts: page };
}

function pageCount(hosts: readonly StatusHost[]): number {
  return Math.max(1, Math.ceil(hosts.length / HOSTS_PER_PAGE));
}

/** Links to the host pages, each labelled with its first and last hostname. */
function hostPageLinks(hosts: readonly StatusHost[], root: string, current?: number): Html {
  const items: Html[] = [];
  for (let n = 1; n <= pageCount(hosts); n++) {
    const r = pageRange(hosts, n);
    const label = r.hosts.length === 0 ? 'No host' : `${r.hosts[0]!.hostname} – ${r.hosts[r.hosts.length - 1]!.hostname}`;
    items.push(
      n === current
        ? html`<li><span aria-current="page">Hosts ${r.first}–${r.last}</span></li>`
        : html`<li><a href="${root}${hostsPagePath(n)}">Hosts ${r.first}–${r.last}<span class="wide">: ${label}</span></a></li>`,
    );
  }
  return html`<ul class="pages">${items}</ul>`;
}

function verdictCounts(d: StatusData): Html {
  const item = (label: string, value: number | string, cls = ''): Html => html`<div><dt>${label}</dt><dd class="${cls}">${value}</dd></div>`;
  return html`<dl class="counts">
${item('Hosts up', d.counts.up, 'v-up')}${item('Degraded', d.counts.degraded, 'v-degraded')}${item('Down', d.counts.down, 'v-down')}${item('Unknown', d.counts.unknown, 'v-unknown')}${item('Open incidents', d.openIncidents)}${item('Anomalies, 24 h', d.anomalies24h)}
</dl>`;
}

function attention(d: StatusData): Html {
  const bad = d.hosts.filter((h) => h.verdict !== 'up').sort((a, b) => VERDICT_RANK[verdictName(a.verdict)]! - VERDICT_RANK[verdictName(b.verdict)]! || (a.hostname < b.hostname ? -1 : 1));
  if (bad.length === 0) return html`<p>Every host is up.</p>`;
  const shown = bad.slice(0, ATTENTION_MAX);
  const more = bad.length > shown.length ? html`<p>And ${bad.length - shown.length} more: see the host pages below.</p>` : html``;
  return html`${hostTable(shown, `${bad.length} of ${d.hosts.length} hosts are down, degraded or unknown, worst first`, '')}${more}`;
}

function yesNo(b: boolean | null): string {
  return b === null ? 'unknown' : b ? 'yes' : 'no';
}

function zones(d: StatusData): Html {
  if (d.zones.length === 0) return html`<p>No zone is monitored yet.</p>`;
  return html`${d.zones.map((z) => {
    const cut = z.cutover.dname_present === null ? 'unknown' : z.cutover.dname_present ? `DNAME present, to ${z.cutover.dname_target ?? 'an unknown target'}` : 'no DNAME (not cut over)';
    const tls = z.management.host === null ? 'no management host' : `${z.management.host}: TLS ${z.management.tls_ok === null ? 'unknown' : z.management.tls_ok ? 'valid' : 'failing'}${z.management.tls_not_after ? `, until ${when(z.management.tls_not_after)}` : ''}`;
    const rows = z.canary.map(
      (c) =>
        html`<tr><th scope="row">${c.location}</th>${verdictCell(c.verdict)}<td class="n">${c.existing_ok}/${c.existing_total}</td><td class="n">${c.nonexistent_ok}/${c.nonexistent_total}</td><td>${c.critical_nxdomain ? 'yes' : 'no'}</td><td class="n wide">${c.soa_serial ?? '–'}</td><td class="wide">${when(c.observed_at)}</td></tr>\n`,
    );
    return html`<div class="zone"><h3>${z.zone} <span class="v v-${verdictName(z.verdict)}">${verdictName(z.verdict)}</span></h3>
<p>${z.kind}, ${z.env}, operated by ${z.operator}. Cutover: ${cut}. Management: ${tls}. Critical NXDOMAIN: ${yesNo(z.critical_nxdomain)}.</p>
<div class="table"><table><caption>Canaries of ${z.zone} per probe location</caption>
<thead><tr><th scope="col">Location</th><th scope="col">Verdict</th><th scope="col" class="n">Existing names</th><th scope="col" class="n">Non-existent names</th><th scope="col">Critical NXDOMAIN</th><th scope="col" class="n wide">SOA serial</th><th scope="col" class="wide">Observed</th></tr></thead>
<tbody>
${rows}</tbody></table></div></div>
`;
  })}`;
}

function incidents(d: StatusData): Html {
  const zoneOpen = d.zones.flatMap((z) => z.incidents.filter((i) => i.status === 'open'));
  if (d.incidents.length === 0 && zoneOpen.length === 0) return html`<p>No incident is open.</p>`;
  const hostRows = d.incidents.map(
    (i) => html`<tr><th scope="row"><a href="v1/hosts/${i.hostname}/incidents?status=open">${i.hostname}</a></th><td>${i.role}</td>${verdictCell(i.severity)}<td>${when(i.started_at)}</td></tr>\n`,
  );
  const zoneRows = zoneOpen.map((i) => html`<tr><th scope="row"><a href="v1/sml">${i.zone}</a></th><td>zone</td>${verdictCell(i.severity)}<td>${when(i.started_at)}</td></tr>\n`);
  const more = d.openIncidents > d.incidents.length ? html`<p><a href="v1/incidents?status=open">All ${d.openIncidents} open host incidents</a> (JSON).</p>` : html``;
  return html`<div class="table"><table><caption>Open incidents, newest first: the worst severity so far</caption>
<thead><tr><th scope="col">Host or zone</th><th scope="col">Role</th><th scope="col">Severity</th><th scope="col">Since</th></tr></thead>
<tbody>
${zoneRows}${hostRows}</tbody></table></div>${more}`;
}

/** A short text of a free-form object's top-level members: `key: value`, values as JSON when not strings. */
export function brief(o: Record<string, unknown>, max = 160): string {
  const s = Object.entries(o)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('; ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function anomalies(d: StatusData): Html {
  if (d.anomalies.length === 0) return html`<p>No anomaly was detected.</p>`;
  const rows = d.anomalies.map(
    (a) =>
      html`<tr><td>${when(a.observed_at)}</td><th scope="row"><a href="v1/anomalies/${a.id}">${a.detector.replace(/_/g, ' ')}</a></th><td>${a.grade}</td><td>${brief(a.target)}</td><td>${a.acknowledged ? 'yes' : 'no'}</td></tr>\n`,
  );
  return html`<div class="table"><table><caption>The ${d.anomalies.length} newest anomalies (also in the <a href="feed.atom">feed</a>)</caption>
<thead><tr><th scope="col">Observed</th><th scope="col">Detector</th><th scope="col">Grade</th><th scope="col">Concerns</th><th scope="col">Acknowledged</th></tr></thead>
<tbody>
${rows}</tbody></table></div>`;
}

/** A whole page: the layout around `main`; `root` is the way back to the service root ('' or '../'). */
export function page(title: string, description: string, root: string, generatedAt: string, main: Html): string {
  return fill('layout.html', { title, description, root, generated_at: when(generatedAt), main });
}

/** Every page of the status page, by path in the snapshot: index.html and status/hosts-<n>.html. */
export function statusPages(d: StatusData): Map<string, string> {
  const out = new Map<string, string>();
  const c = d.counts;
  const summary = `${d.hosts.length} hosts monitored: ${c.up} up, ${c.degraded} degraded, ${c.down} down, ${c.unknown} unknown. ${d.openIncidents} open incidents; ${d.anomalies24h} anomalies in the last 24 hours. As of ${when(d.generatedAt)}.`;
  const main = new Html(
    fill('index.html', {
      summary,
      verdicts: verdictCounts(d),
      attention: attention(d),
      host_count: d.hosts.length,
      host_pages: hostPageLinks(d.hosts, ''),
      zones: zones(d),
      incidents: incidents(d),
      anomalies: anomalies(d),
    }),
  );
  out.set(SITE_FILES.index, page('Peppol network status', summary, '', d.generatedAt, main));
  for (let n = 1; n <= pageCount(d.hosts); n++) {
    const r = pageRange(d.hosts, n);
    const pager = hostPageLinks(d.hosts, '../', n);
    const body = new Html(
      fill('hosts.html', {
        first: r.first,
        last: r.last,
        host_count: d.hosts.length,
        per_page: HOSTS_PER_PAGE,
        scale: `Sparklines span ${SPARK_FLOOR} % (bottom) to 100 % (top); a gap is a slot without measurement.`,
        pager: html`<nav aria-label="Host pages">${pager}</nav>`,
        table: hostTable(r.hosts, `Hosts ${r.first}–${r.last} of ${d.hosts.length}`, '../'),
        pager_end: html`<nav aria-label="Host pages, again">${pager}</nav>`,
      }),
    );
    out.set(hostsPagePath(n), page(`Hosts ${r.first}–${r.last} · Peppol network status`, `Verdict and uptime of hosts ${r.first} to ${r.last}.`, '../', d.generatedAt, body));
  }
  return out;
}
