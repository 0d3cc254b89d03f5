// The uptime lists of `/v1/hosts/{h}/uptime` (one per host and resolution, newest bucket first,
// chunked from its end with the open buckets in the root's head) and the exact first page. An
// incremental build reads only the newest buckets and keeps the chunks behind them unread; when it
// does, and when a list is written in full instead, is stated once in docs/incremental.md, "Uptime".
// Either way the files are those of a full write (test/uptime-incremental.test.ts).
import type { Statement } from 'better-sqlite3';
import { UPTIME_DIRS, UPTIME_FACETS, UPTIME_ROUTE, compactUptime, type UptimeTuple } from '../../api/hosts/views.js';
import type { SortKey } from '../../api/sort-keys.js';
import { listRootPath, listRootPrefix } from '../../api/paths.js';
import { uptimeItem, uptimeQuery, uptimeSql, type UptimeRow } from '../../api/hosts/query.js';
import { RESOLUTIONS } from '../../api/schemas/index.js';
import type { HostRole } from '../../derive/hosts/read.js';
import { ROLLUP_TABLES, type Resolution } from '../../derive/hosts/rollup.js';
import { DAY, dayStart, HOUR, hourStart, monthStart } from '../../derive/hosts/time.js';
import { SNAPSHOT_INFO_PATH } from '../../edge/resolve.js';
import { LIST_FORMAT_HEAD, type IndexEntry, type ListRoot } from '../../edge/list-format.js';
import { level0Of } from '../list-patch.js';
import type { RenderContext, UptimeReport } from '../context.js';
import { ListWriter, pendingOf, rawOfParsed, type FileSink, type ListWriterOptions, type Pending, type RawChunk } from '../lists.js';
import { LIMIT_DEFAULT } from '../../api/params.js';

export interface UptimeHost {
  id: number;
  hostname: string;
  role: HostRole | null;
}

/** Most bytes of an uptime list's head besides its open buckets (docs/snapshot-format.md, "Uptime"). */
const UPTIME_HEAD_BYTES = 12 * 1024;

/** The longest step of the clock between two builds for which lists are patched (more: written in full). */
const PATCH_CLOCK_MAX = DAY;

/** Root paths of every uptime list start with this. */
const UPTIME_PREFIX = listRootPrefix(UPTIME_ROUTE);

/** The start of the bucket of `resolution` holding `ms` (UTC). */
function bucketStart(resolution: Resolution, ms: number): number {
  return resolution === 'hourly' ? hourStart(ms) : resolution === 'daily' ? dayStart(ms) : monthStart(ms);
}

/** The first bucket_start the head's `open` predicate holds for at `nowMs` (see uptimeLayout). */
function openFrom(resolution: Resolution, nowMs: number): number {
  return bucketStart(resolution, nowMs - HOUR);
}

/**
 * The layout of an uptime list: chunks of at least 3/4 of the byte budget (a location-filtered page
 * reads few of them), and a head holding the buckets a next cycle may still change: those of the last
 * hour, i.e. the bucket holding now and the one before it when now is in its first hour (never one
 * after now, so that a clock behind the data cannot put the whole list in the root).
 */
export function uptimeLayout(resolution: Resolution, nowMs: number, chunkMaxBytes: number): Pick<ListWriterOptions, 'minBytes' | 'head'> {
  const from = openFrom(resolution, nowMs);
  const open = (k: SortKey): boolean => (k[0] as number) >= from && (k[0] as number) <= nowMs;
  return { minBytes: Math.floor((chunkMaxBytes * 3) / 4), head: { open, maxBytes: UPTIME_HEAD_BYTES } };
}

/** What an incremental build patches the kept lists from. */
interface Basis {
  /** The clock of the build that wrote the kept lists. */
  prevNowMs: number;
  /** The oldest bucket_start derive wrote since then for (host id, uptime table), if any. */
  changedAt: (hostId: number, resolution: Resolution) => number | undefined;
}

/** The basis to patch from, or why every list is written in full. */
function patchBasis(ctx: RenderContext): Basis | string {
  const unusable = ctx.keptListsUnusable('render_uptime', 'uptime');
  if (unusable !== null) return unusable;
  let prevNowMs = NaN;
  try {
    const info = ctx.readPrevious(SNAPSHOT_INFO_PATH) as { generated_at?: unknown };
    if (typeof info.generated_at === 'string') prevNowMs = Date.parse(info.generated_at);
  } catch {
    // no clock of the previous build
  }
  if (!Number.isFinite(prevNowMs)) return "the previous build's clock is unknown";
  if (ctx.nowMs < prevNowMs) return 'the clock went back';
  if (ctx.nowMs - prevNowMs > PATCH_CLOCK_MAX) return 'the clock moved on more than a day';
  const q = ctx.db.prepare('SELECT at FROM temp.render_uptime WHERE host_id = ? AND kind = ?').pluck();
  return { prevNowMs, changedAt: (hostId, resolution) => q.get(hostId, ROLLUP_TABLES[resolution]) as number | undefined };
}

/** What a list is written from besides the buckets read from the database (see the file comment). */
interface Reuse {
  /** The buckets at or after this bucket_start are read from the database. */
  from: number;
  /** The previous build's items older than `from` and before the kept chunks, in list order. */
  items: Pending[];
  /** The previous build's chunks kept as they are (after the items). */
  tail: IndexEntry[];
  /** Chunks of the previous build read. */
  reads: number;
}

/** How a list can be written from the previous build's, or null (write it from every bucket). */
function reuseOf(ctx: RenderContext, h: UptimeHost, resolution: Resolution, rootPath: string, basis: Basis): Reuse | null {
  const read = (rel: string): unknown => ctx.readPrevious(rel);
  try {
    const root = read(rootPath) as ListRoot;
    if (root.format !== LIST_FORMAT_HEAD || root.head === undefined) return null;
    // Every bucket before `from` is unchanged since the previous build and closed (not open) at both
    // clocks (open at the new clock: bucket_start >= openFrom(now)).
    const from = Math.min(basis.changedAt(h.id, resolution) ?? Infinity, openFrom(resolution, ctx.nowMs), openFrom(resolution, basis.prevNowMs));
    const entries = level0Of(root, read);
    // The first kept chunk: not the first entry, and the item before it (the last of the entry before)
    // older than `from`.
    let m = 1;
    while (m < entries.length && !((entries[m - 1]!.last[0] as number) < from)) m++;
    const items: Pending[] = [];
    let sample: string | undefined;
    // The items as they were written (a chunk's, rawChunkOf), taken on as they are.
    const take = (c: RawChunk): void => {
      sample ??= c.items[0];
      for (let i = 0; i < c.keys.length; i++) {
        const key = c.keys[i]!;
        if ((key[0] as number) < from) items.push(pendingOf(c.items[i]!, key, { location: [key[1] as string] }, c.keyJsons[i]));
      }
    };
    take(rawOfParsed(root.head));
    let reads = 0;
    for (let i = 0; i < Math.min(m, entries.length); i++) {
      take(ctx.readPreviousChunk(entries[i]!.path));
      reads++;
    }
    // Each item holds the host's role.
    if (sample !== undefined && (JSON.parse(sample) as UptimeTuple)[0] !== h.role) return null;
    return { from, items, tail: entries.slice(m), reads };
  } catch {
    return null;
  }
}

/** Renders the uptime lists of every known host (the route `hosts.uptime`). */
export function renderUptime(ctx: RenderContext, hosts: readonly UptimeHost[]): void {
  const basis = patchBasis(ctx);
  const report: UptimeReport = { full_reason: typeof basis === 'string' ? basis : null, lists_patched: 0, lists_written: 0, rows_read: 0, chunks_read: 0, chunks_kept: 0 };
  const writer = new UptimeWriter(ctx, typeof basis === 'string' ? null : basis, report);
  const roots = new Set<string>();
  let n = 0;
  for (const h of hosts) {
    for (const resolution of RESOLUTIONS) roots.add(writer.list(h, resolution));
    exactPage(ctx, h);
    if (++n % 100 === 0) ctx.progress(`render: hosts.uptime ${n}/${hosts.length}`);
  }
  // The lists of hosts no longer known.
  if (ctx.lists !== undefined) for (const root of ctx.lists.roots(UPTIME_PREFIX)) if (!roots.has(root)) ctx.lists.drop(root);
  ctx.uptimeReport = report;
}

/** One host's uptime lists, written in full (for a render of some hosts only: tests). */
export function renderHostUptime(ctx: RenderContext, h: UptimeHost): void {
  const writer = new UptimeWriter(ctx, null, { full_reason: null, lists_patched: 0, lists_written: 0, rows_read: 0, chunks_read: 0, chunks_kept: 0 });
  for (const resolution of RESOLUTIONS) writer.list(h, resolution);
  exactPage(ctx, h);
}

function exactPage(ctx: RenderContext, h: UptimeHost): void {
  const r = uptimeQuery(
    ctx.db,
    { hostname: h.hostname, resolution: 'hourly', from: undefined, to: undefined, location: undefined, limit: LIMIT_DEFAULT, cursor: undefined },
    ctx.nowMs,
  );
  if (r.status !== 200) throw new Error(`render ${UPTIME_ROUTE}: the oracle answered ${r.status} for ${h.hostname}`);
  ctx.exact(['v1', 'hosts', h.hostname, 'uptime'], r.body);
}

class UptimeWriter {
  private readonly all = new Map<Resolution, Statement>();
  private readonly since = new Map<Resolution, Statement>();

  constructor(
    private readonly ctx: RenderContext,
    private readonly basis: Basis | null,
    private readonly report: UptimeReport,
  ) {}

  private stmt(cache: Map<Resolution, Statement>, resolution: Resolution, sql: (r: Resolution) => string): Statement {
    let s = cache.get(resolution);
    if (s === undefined) cache.set(resolution, (s = this.ctx.db.prepare(sql(resolution))));
    return s;
  }

  /** Writes one list (from the previous build's when it can); returns its root path. */
  list(h: UptimeHost, resolution: Resolution): string {
    const { ctx, report } = this;
    const rootPath = listRootPath(UPTIME_ROUTE, [h.hostname, resolution]);
    const store = ctx.lists;
    let sink: FileSink = ctx.sink;
    let held: Set<string> | null = null;
    let unit = 0;
    const puts = new Set<string>();
    let reuse: Reuse | null = null;
    if (store !== undefined) {
      const kept = store.has(rootPath);
      unit = store.unit(rootPath);
      if (kept) {
        held = store.paths(unit);
        if (this.basis !== null && h.role !== null) reuse = reuseOf(ctx, h, resolution, rootPath, this.basis);
      }
      const unitSink = ctx.unitSink(unit);
      sink = {
        put: (rel, body, contentType, cacheClass) => {
          puts.add(rel);
          unitSink.put(rel, body, contentType, cacheClass);
        },
      };
    }
    const w = new ListWriter(sink, ctx.listOptions(UPTIME_DIRS, UPTIME_FACETS, uptimeLayout(resolution, ctx.nowMs, ctx.opts.chunkMaxBytes)));
    if (h.role !== null) {
      const role = h.role;
      const rows = (
        reuse === null ? this.stmt(this.all, resolution, (r) => uptimeSql(r, [])).iterate(h.id) : this.stmt(this.since, resolution, (r) => uptimeSql(r, ['bucket_start >= ?'])).iterate(h.id, reuse.from)
      ) as IterableIterator<UptimeRow>;
      for (const r of rows) {
        const item = uptimeItem(resolution, h.hostname, role, r);
        w.add(compactUptime(item), [r.bucket_start, item.location], { location: [item.location] });
        report.rows_read++;
      }
    }
    if (reuse !== null) {
      for (const p of reuse.items) w.addPending(p);
      w.addWritten(reuse.tail);
      report.lists_patched++;
      report.chunks_read += reuse.reads;
      report.chunks_kept += reuse.tail.length;
    } else report.lists_written++;
    w.finish(rootPath);
    if (store !== undefined && held !== null) {
      // The files the list no longer holds (kept chunks are held still).
      for (const e of reuse?.tail ?? []) puts.add(e.path);
      store.retire(unit, [...held].filter((p) => !puts.has(p)));
    }
    return rootPath;
  }
}
