// `peppol-snapshot demo`: writes the deterministic demo scenario as a feed source
// (docs/architecture.md §4) plus ground-truth.json. The output is a pure function of (seed, scale,
// now); running again with a later `now` appends the newly closed segment windows and rewrites
// feeds.json. See docs/demo.md.
import fs from 'node:fs';
import path from 'node:path';
import { FeedIndex, type FeedKind } from '../feeds/schema.js';
import { UsageError } from '../util/errors.js';
import type { Progress } from '../util/progress.js';
import { BASELINE_SWEEP, DAY, DELTA_SWEEP_OFFSET, HOUR, LOCATIONS, MINUTE, QUARTER, SCALES, SCALE_CONFIG, ZONES, scaleStart, type Scale } from './config.js';
import { computeGroundTruth, writeGroundTruth } from './ground-truth.js';
import { buildNetwork, iso, participantBase, type Network } from './network.js';
import { ackLine, curationLine, memberLines, probeLine, resetRecordCaches, sweepLines, zoneLine } from './records.js';
import { buildScript, observationTime, stateAt, type Script } from './script.js';
import { SegmentSink, removeStaleTemps, writeFileAtomic, type SegmentResult } from './writer.js';

export { SCALES, SCALE_CONFIG, scaleStart, type Scale } from './config.js';
export { computeGroundTruth, EVENT_TYPES, GROUND_TRUTH_FORMAT, horizons, providerRef, type GroundTruth } from './ground-truth.js';
export { buildNetwork, participantBase } from './network.js';
export { buildScript } from './script.js';

export const DEMO_STATE_FORMAT = 'peppol-snapshot/demo@1';
export const DEFAULT_FEEDS_DIR = 'data/demo-feeds';

export interface DemoOptions {
  feeds: string;
  scale: Scale;
  seed: number;
  /** ISO 8601 instant; feeds hold every segment window that closed at or before it */
  now: string;
  progress?: Progress;
}

export interface DemoSummary {
  command: 'demo';
  feeds: string;
  scale: Scale;
  seed: number;
  start: string;
  now: string;
  segments: { total: number; written: number; reused: number };
  lines_written: Record<string, number>;
  bytes_written: number;
  bytes_total: number;
  ground_truth: { changes: number; events: number; outages: number; anomalies: number; churn: number };
  elapsed_ms: number;
  text: string;
}

interface DemoState {
  format: string;
  seed: number;
  scale: Scale;
  start: string;
  now: string;
}

// ---------------------------------------------------------------------------------------------------
// Option parsing (shared with the CLI): bad values are usage errors (exit 2).

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2})))?$/i;

export function parseScale(v: string | undefined): Scale {
  const s = v ?? 'small';
  if (!(SCALES as readonly string[]).includes(s)) throw new UsageError(`--scale: expected one of ${SCALES.join(', ')}, got ${JSON.stringify(s)}`);
  return s as Scale;
}

export function parseSeed(v: string | number | undefined): number {
  if (v === undefined) return 1;
  const s = String(v).trim();
  if (!/^\d{1,10}$/.test(s) || Number(s) > 0xffffffff) throw new UsageError(`--seed: expected an integer from 0 to 4294967295, got ${JSON.stringify(String(v))}`);
  return Number(s);
}

/** Parses an ISO 8601 instant (date-time with Z or offset, or a plain date = midnight UTC). */
export function parseNow(v: string): number {
  const s = v.trim();
  const m = ISO_RE.exec(s);
  let ms = NaN;
  if (m) {
    const [y, mo, d, hh, mi, ss, oh, om] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)));
    const dayOk = new Date(Date.UTC(y!, mo! - 1, d!)).getUTCDate() === d && mo! >= 1 && mo! <= 12;
    if (dayOk && hh! < 24 && mi! < 60 && ss! < 60 && oh! < 24 && om! < 60) ms = Date.parse(m[4] === undefined ? `${s}T00:00:00Z` : s);
  }
  if (Number.isNaN(ms)) throw new UsageError(`--now: expected an ISO 8601 date-time such as 2026-11-22T00:00:00Z, got ${JSON.stringify(v)}`);
  return ms;
}

/** The default --now: the current time floored to the scale's probe cadence. */
export function defaultNow(scale: Scale, clockMs: number): string {
  const c = SCALE_CONFIG[scale].probeMinutes * MINUTE;
  return iso(Math.floor(clockMs / c) * c);
}

export interface RawDemoFlags {
  feeds?: string;
  scale?: string;
  seed?: string | number;
  now?: string;
}

/** Validates CLI flags into DemoOptions; throws UsageError on bad values. */
export function parseDemoOptions(raw: RawDemoFlags, clockMs: number): DemoOptions {
  const scale = parseScale(raw.scale);
  const seed = parseSeed(raw.seed);
  const now = raw.now === undefined ? defaultNow(scale, clockMs) : iso(parseNow(raw.now));
  const feeds = raw.feeds ?? DEFAULT_FEEDS_DIR;
  if (feeds.trim() === '') throw new UsageError('--feeds: expected a directory');
  return { feeds, scale, seed, now };
}

// ---------------------------------------------------------------------------------------------------
// Segment layout.

const ALL_KINDS: readonly FeedKind[] = ['member', 'curation', 'directory', 'sml', 'smp', 'probe', 'zone', 'ack'];
const KIND_ORDER: Record<FeedKind, number> = { member: 0, curation: 1, directory: 2, sml: 3, smp: 4, probe: 5, zone: 6, ack: 7 };

/** `segments/<YYYY-MM-DD>T<HH>/<kind>-<HHMM>.ndjson[.gz]`, named by the window start (UTC). */
export function segmentPath(kind: FeedKind, windowStart: number, gzip: boolean): string {
  const s = iso(windowStart);
  return `segments/${s.slice(0, 13)}/${kind}-${s.slice(11, 13)}${s.slice(14, 16)}.ndjson${gzip ? '.gz' : ''}`;
}

const PATH_RE = /^segments\/(\d{4}-\d{2}-\d{2})T(\d{2})\/([a-z]+)-(\d{2})(\d{2})\.ndjson(?:\.gz)?$/;
/** Window [start, end) of a segment path written by this generator; null for a foreign path. */
export function segmentWindow(p: string): { kind: FeedKind; start: number; end: number } | null {
  const m = PATH_RE.exec(p);
  if (!m) return null;
  const kind = m[3] as FeedKind;
  if (!(kind in KIND_ORDER)) return null;
  const start = Date.parse(`${m[1]}T${m[4]}:${m[5]}:00Z`);
  return { kind, start, end: start + QUARTER };
}

// ---------------------------------------------------------------------------------------------------

function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

interface DirState {
  state: DemoState | null;
  index: Map<string, { path: string; sha256: string; bytes: number }>;
  heldNow: number;
}

function inspectDir(dir: string, opts: DemoOptions, nowMs: number): DirState {
  const stateFile = path.join(dir, 'demo.json');
  const indexFile = path.join(dir, 'feeds.json');
  if (!fs.existsSync(dir)) return { state: null, index: new Map(), heldNow: -Infinity };
  if (!fs.statSync(dir).isDirectory()) throw new UsageError(`--feeds: ${dir} is not a directory`);
  if (!fs.existsSync(stateFile)) {
    const entries = fs.readdirSync(dir);
    if (entries.length > 0) throw new UsageError(`--feeds: ${dir} is not empty and holds no demo.json (not a demo feed directory)`);
    return { state: null, index: new Map(), heldNow: -Infinity };
  }
  let state: DemoState;
  try {
    state = readJson(stateFile) as DemoState;
  } catch (e) {
    throw new UsageError(`--feeds: ${stateFile} is not valid JSON: ${(e as Error).message}`);
  }
  if (state.format !== DEMO_STATE_FORMAT) throw new UsageError(`--feeds: ${stateFile} has format ${JSON.stringify(state.format)}, expected ${DEMO_STATE_FORMAT}`);
  if (state.seed !== opts.seed || state.scale !== opts.scale) {
    throw new UsageError(`--feeds: ${dir} was generated with --seed ${state.seed} --scale ${state.scale}; refusing to mix it with --seed ${opts.seed} --scale ${opts.scale}`);
  }
  const index = new Map<string, { path: string; sha256: string; bytes: number }>();
  let heldNow = Date.parse(state.now);
  if (fs.existsSync(indexFile)) {
    const parsed = FeedIndex.safeParse(readJson(indexFile));
    if (parsed.success) {
      for (const s of parsed.data.segments) {
        index.set(s.path, s);
        const w = segmentWindow(s.path);
        if (w) heldNow = Math.max(heldNow, w.end);
      }
    }
  }
  if (nowMs < heldNow) throw new UsageError(`--now ${iso(nowMs)} is earlier than what ${dir} already holds (${iso(heldNow)})`);
  return { state, index, heldNow: Date.parse(state.now) };
}

interface Group {
  start: number;
  end: number;
}

/** Participants observed during [q, q + 15 min), in observation order. */
function* sweepMembers(net: Network, script: Script, q: number, dayCache: { day: number; list: { i: number; at: number }[] }): Generator<{ i: number; at: number }> {
  const N0 = net.cfg.participants;
  const start = net.start;
  if (q < start + BASELINE_SWEEP) {
    // Participant i is observed at start + floor(i * sweep / N0) (whole seconds).
    const sweepS = BASELINE_SWEEP / 1000;
    const lo = Math.ceil((((q - start) / 1000) * N0) / sweepS);
    const hi = Math.ceil((((q + QUARTER - start) / 1000) * N0) / sweepS);
    for (let i = lo; i < Math.min(hi, N0); i++) yield { i, at: start + Math.floor((i * sweepS) / N0) * 1000 };
    return;
  }
  const d = Math.floor((q - start) / DAY);
  const sweepStart = start + d * DAY + DELTA_SWEEP_OFFSET;
  if (d < 1 || q < sweepStart || q >= sweepStart + HOUR) return;
  if (dayCache.day !== d) {
    const seen = new Set<number>();
    for (const c of script.byDay.get(d) ?? []) seen.add(c.index);
    const K = net.cfg.rollingDays;
    const existing = N0 + (script.joinersBefore[d] ?? 0);
    for (let i = d % K; i < existing; i += K) seen.add(i);
    const list = [...seen].map((i) => ({ i, at: observationTime(net, i, d) }));
    list.sort((a, b) => a.at - b.at || a.i - b.i);
    dayCache.day = d;
    dayCache.list = list;
  }
  for (const m of dayCache.list) if (m.at >= q && m.at < q + QUARTER) yield m;
}

async function generateGroup(
  root: string,
  net: Network,
  script: Script,
  g: Group,
  gzip: boolean,
  dayCache: { day: number; list: { i: number; at: number }[] },
): Promise<Map<FeedKind, SegmentResult | null>> {
  const sinks = new Map<FeedKind, SegmentSink>();
  for (const k of ALL_KINDS) sinks.set(k, new SegmentSink(root, segmentPath(k, g.start, gzip), gzip));
  const q = g.start;
  const inWindow = (t: number): boolean => t >= q && t < q + QUARTER;
  try {
    if (q === net.start) {
      const s = sinks.get('member')!;
      for (const line of memberLines(net, net.start)) s.write(line);
      const c = sinks.get('curation')!;
      for (const p of net.providers) if (p.cls === 'curated') c.write(curationLine(net, p, net.start, p.idx % 3 === 0 ? 'Verified against the OpenPeppol member list and the national business register.' : null));
    }
    if (inWindow(script.curationAt)) {
      const p = net.providers[net.roles.staleKey]!;
      sinks.get('curation')!.write(curationLine(net, p, script.curationAt, 'Seat confirmed by the provider after a support request; previously unmapped.'));
    }
    const dir = sinks.get('directory')!;
    const sml = sinks.get('sml')!;
    const smp = sinks.get('smp')!;
    for (const { i, at } of sweepMembers(net, script, q, dayCache)) {
      const b = participantBase(net, i);
      const s = stateAt(net, script, b, at);
      if (!s.exists) continue;
      const lines = sweepLines(net, script, b, s, at);
      let f = dir.write(lines.directory);
      f = sml.write(lines.sml) || f;
      if (lines.smp !== null) f = smp.write(lines.smp) || f;
      if (f) await Promise.all([dir.flush(), sml.flush(), smp.flush()]);
    }
    const atIso = iso(q);
    const probe = sinks.get('probe')!;
    const cad = net.cfg.probeMinutes * MINUTE;
    for (const host of net.hosts) {
      if ((((q - net.start - host.phase) % cad) + cad) % cad !== 0) continue;
      for (let loc = 0; loc < LOCATIONS.length; loc++) if (probe.write(probeLine(net, script, host, loc, q, atIso))) await probe.flush();
    }
    const zone = sinks.get('zone')!;
    for (let z = 0; z < ZONES.length; z++) for (let loc = 0; loc < LOCATIONS.length; loc++) zone.write(zoneLine(net, script, z, loc, q, atIso));
    const ack = sinks.get('ack')!;
    for (const a of script.acks) if (inWindow(a.at)) ack.write(ackLine(a));
    const out = new Map<FeedKind, SegmentResult | null>();
    const results = await Promise.all([...sinks.values()].map((s) => s.close()));
    [...sinks.keys()].forEach((k, n) => out.set(k, results[n]!));
    return out;
  } catch (e) {
    for (const s of sinks.values()) s.abort();
    throw e;
  }
}

export async function runDemo(opts: DemoOptions): Promise<DemoSummary> {
  const t0 = performance.now();
  const scale = parseScale(opts.scale);
  const seed = parseSeed(opts.seed);
  const nowMs = parseNow(opts.now);
  const start = scaleStart(scale);
  if (nowMs < start) throw new UsageError(`--now ${iso(nowMs)} is before the start of the ${scale} scenario (${iso(start)})`);
  const root = opts.feeds;
  const dirState = inspectDir(root, { ...opts, scale, seed }, nowMs);
  fs.mkdirSync(root, { recursive: true });
  removeStaleTemps(root);
  if (dirState.state === null) {
    // Claim a fresh directory first, so that a run killed before its end leaves a directory the next run
    // recognises (same seed and scale, nothing held yet) and completes.
    const claim: DemoState = { format: DEMO_STATE_FORMAT, seed, scale, start: iso(start), now: iso(start) };
    writeFileAtomic(path.join(root, 'demo.json'), `${JSON.stringify(claim, null, 2)}\n`);
  }
  const oldNow = dirState.state ? dirState.heldNow : -Infinity;
  const gzip = SCALE_CONFIG[scale].gzip;

  resetRecordCaches();
  const net = buildNetwork(seed, scale);
  const script = buildScript(net, nowMs);

  // Plan the closed windows, in ingest order.
  const groups: Group[] = [];
  for (let q = start; q + QUARTER <= nowMs; q += QUARTER) groups.push({ start: q, end: q + QUARTER });
  const dayCache = { day: -1, list: [] as { i: number; at: number }[] };

  const entries: { kind: FeedKind; start: number; res: SegmentResult }[] = [];
  const linesWritten: Record<string, number> = {};
  let written = 0;
  let reused = 0;
  let bytesWritten = 0;
  const pending: Promise<void>[] = [];
  const MAX_IN_FLIGHT = 4;
  let done = 0;
  for (const g of groups) {
    done++;
    if ((g.start - start) % HOUR === 0 && opts.progress) opts.progress.update(`demo ${scale}: ${iso(g.start).slice(0, 13)}h  ${done}/${groups.length} windows, ${written} segments written`);
    if (g.end <= oldNow) {
      const olds = ALL_KINDS.map((k) => dirState.index.get(segmentPath(k, g.start, gzip)));
      const intact = olds.every((e) => e === undefined || (fs.existsSync(path.join(root, e.path)) && fs.statSync(path.join(root, e.path)).size === e.bytes));
      if (intact) {
        ALL_KINDS.forEach((k, n) => {
          const e = olds[n];
          if (e) {
            entries.push({ kind: k, start: g.start, res: { ...e, lines: 0 } });
            reused++;
          }
        });
        continue;
      }
    }
    const job = generateGroup(root, net, script, g, gzip, dayCache).then((res) => {
      for (const [k, r] of res) {
        if (!r) continue;
        entries.push({ kind: k, start: g.start, res: r });
        written++;
        bytesWritten += r.bytes;
        linesWritten[k] = (linesWritten[k] ?? 0) + r.lines;
      }
    });
    pending.push(job);
    if (pending.length >= MAX_IN_FLIGHT) await pending.shift();
  }
  await Promise.all(pending);
  entries.sort((a, b) => a.start - b.start || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);

  // Ground truth, feeds.json, then demo.json (see docs/demo.md, "Crash safety").
  opts.progress?.update(`demo ${scale}: ground truth`);
  const gt = computeGroundTruth(net, script, nowMs);
  writeGroundTruth(path.join(root, 'ground-truth.json'), gt);
  const index = `{"segments":[\n${entries.map((e) => JSON.stringify({ path: e.res.path, sha256: e.res.sha256, bytes: e.res.bytes })).join(',\n')}\n]}\n`;
  writeFileAtomic(path.join(root, 'feeds.json'), entries.length === 0 ? '{"segments":[]}\n' : index);
  const state: DemoState = { format: DEMO_STATE_FORMAT, seed, scale, start: iso(start), now: iso(nowMs) };
  writeFileAtomic(path.join(root, 'demo.json'), `${JSON.stringify(state, null, 2)}\n`);
  opts.progress?.done();

  const bytesTotal = entries.reduce((a, e) => a + e.res.bytes, 0);
  const elapsed = Math.round(performance.now() - t0);
  const summary: DemoSummary = {
    command: 'demo',
    feeds: root,
    scale,
    seed,
    start: iso(start),
    now: iso(nowMs),
    segments: { total: entries.length, written, reused },
    lines_written: linesWritten,
    bytes_written: bytesWritten,
    bytes_total: bytesTotal,
    ground_truth: { changes: gt.changes.length, events: gt.events.length, outages: gt.outages.length, anomalies: gt.anomalies.length, churn: gt.churn.length },
    elapsed_ms: elapsed,
    text: '',
  };
  const totalLines = Object.values(linesWritten).reduce((a, b) => a + b, 0);
  summary.text = `demo ${scale} seed ${seed}: ${root} up to ${iso(nowMs)}: ${written} segments written (${totalLines} lines, ${(bytesWritten / 1e6).toFixed(1)} MB), ${reused} reused; ground truth: ${gt.events.length} events, ${gt.outages.length} outages, ${gt.anomalies.length} anomalies (${(elapsed / 1000).toFixed(1)} s)`;
  return summary;
}
