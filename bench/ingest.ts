// Ingest benchmark: writes a large synthetic feed (deterministic; reused when an earlier run wrote it
// with the same options), then ingests it in a child process that reports its own peak RSS, CPU time
// and main-thread load, while this process samples the CPU time of each of its threads.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { runIngest } from '../src/feeds/ingest.js';

export interface IngestBenchOptions {
  records: number;
  segments: number;
  gzip: boolean;
  participants: number;
  dir: string;
}

const DOCTYPE = 'urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1';
const PROCESS = 'urn:fdc:peppol.eu:2017:poacc:billing:01:1.0';

/** Line i of the synthetic feed: 70% probes over 1,200 hosts × 6 locations, 10% each directory, sml, smp. */
function line(i: number, participants: number): string {
  const at = new Date(Date.UTC(2026, 7, 1) + Math.floor(i / 7200) * 900_000).toISOString();
  const k = i % 10;
  if (k < 7) {
    const h = Math.floor(i / 6) % 1200;
    const fp = createHash('sha256').update(`h${h}`).digest('hex');
    return JSON.stringify({
      kind: 'probe',
      at,
      hostname: `ap${h}.provider${h % 400}.example`,
      role: h < 200 ? 'SMP' : 'AP',
      location: ['fra', 'ams', 'dub', 'waw', 'sto', 'mad'][i % 6],
      result: i % 97 === 0 ? 'down' : 'up',
      phases: { dns: 4, tcp: 12 + (i % 7), tls: 30 + (i % 13), http: 55 + (i % 31), total: 101 + (i % 51) },
      ips: [`198.51.${h >> 8}.${h & 255}`],
      ptr: `ap${h}.hosting.example`,
      cert: { fingerprint: fp, subject: `CN=PBE${String(h).padStart(6, '0')},O=Provider ${h % 400} BV,C=BE`, issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE', not_before: '2025-06-01T00:00:00Z', not_after: '2027-06-01T00:00:00Z' },
    });
  }
  const p = `0208::${String(100000000 + ((i * 7919) % participants)).padStart(10, '0')}`;
  if (k === 7) return JSON.stringify({ kind: 'directory', at, participant: p, present: true, card: { name: `Onderneming ${i % participants} BV`, countryCode: 'BE', registrationDate: '2024-01-15' } });
  if (k === 8) return JSON.stringify({ kind: 'sml', at, participant: p, registered: true, smp: `smp${i % 200}.example` });
  const a = i % 1000;
  return JSON.stringify({
    kind: 'smp',
    at,
    participant: p,
    smp: `smp${i % 200}.example`,
    endpoints: [{ doctype: DOCTYPE, process: PROCESS, transport_profile: 'peppol-transport-as4-v2_0', url: `https://ap${a}.example/as4`, cert: { fingerprint: createHash('sha256').update(`a${a}`).digest('hex'), subject: `CN=PBE${String(a).padStart(6, '0')},O=Provider ${a % 400} BV,C=BE`, issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE' } }],
  });
}

/** The options a feed was written with, kept beside it: a later run with the same options reuses it. */
function feedKey(o: IngestBenchOptions): string {
  return JSON.stringify({ version: 1, records: o.records, segments: o.segments, gzip: o.gzip, participants: o.participants });
}

/** The feed of an earlier run with the same options, if it is there whole (sizes as listed). */
function existingFeed(o: IngestBenchOptions): { bytes: number } | null {
  try {
    if (readFileSync(join(o.dir, 'feed-options.json'), 'utf8') !== feedKey(o)) return null;
    const index = JSON.parse(readFileSync(join(o.dir, 'feeds.json'), 'utf8')) as { segments: { path: string; bytes: number }[] };
    let total = 0;
    for (const seg of index.segments) {
      if (statSync(join(o.dir, seg.path)).size !== seg.bytes) return null;
      total += seg.bytes;
    }
    return { bytes: total };
  } catch {
    return null;
  }
}

async function writeFeed(o: IngestBenchOptions): Promise<{ bytes: number }> {
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(join(o.dir, 'seg'), { recursive: true });
  const per = Math.ceil(o.records / o.segments);
  const index: { path: string; sha256: string; bytes: number }[] = [];
  let total = 0;
  for (let s = 0; s < o.segments; s++) {
    const path = `seg/${String(s).padStart(4, '0')}.ndjson${o.gzip ? '.gz' : ''}`;
    const file = createWriteStream(join(o.dir, path));
    const hash = createHash('sha256');
    let bytes = 0;
    const sink = { write: (b: Buffer) => (hash.update(b), (bytes += b.length), file.write(b)) };
    const gz = o.gzip ? createGzip({ level: 6 }) : null;
    gz?.on('data', (b: Buffer) => sink.write(b));
    let buf: string[] = [];
    const flush = async () => {
      const chunk = Buffer.from(buf.join(''));
      buf = [];
      const ok = gz ? gz.write(chunk) : sink.write(chunk);
      if (!ok) await once(gz ?? file, 'drain');
    };
    for (let i = s * per; i < Math.min(o.records, (s + 1) * per); i++) {
      buf.push(`${line(i, o.participants)}\n`);
      if (buf.length >= 5000) await flush();
    }
    await flush();
    if (gz) {
      gz.end();
      await once(gz, 'end');
    }
    file.end();
    await once(file, 'finish');
    index.push({ path, sha256: hash.digest('hex'), bytes });
    total += bytes;
  }
  writeFileSync(join(o.dir, 'feeds.json'), JSON.stringify({ segments: index }));
  writeFileSync(join(o.dir, 'feed-options.json'), feedKey(o));
  return { bytes: total };
}

/** Runs in the child: ingest and report. */
export async function ingestChild(dir: string, dbPath: string): Promise<void> {
  rmSync(dbPath, { force: true });
  rmSync(`${dbPath}-wal`, { force: true });
  rmSync(`${dbPath}-shm`, { force: true });
  const elu0 = performance.eventLoopUtilization();
  const s = await runIngest({ dbPath, sources: [{ name: 'bench', url: dir }], http: { timeout_ms: 30_000, retries: 0, retry_base_ms: 100 } });
  const ru = process.resourceUsage();
  const elu = performance.eventLoopUtilization(elu0);
  process.stdout.write(`${JSON.stringify({ ...s, max_rss_mb: Math.round(ru.maxRSS / 1024), cpu_user_s: Math.round(ru.userCPUTime / 1e4) / 100, cpu_system_s: Math.round(ru.systemCPUTime / 1e4) / 100, main_thread_busy: Math.round(elu.utilization * 100) / 100 })}\n`);
}

export async function benchIngest(o: IngestBenchOptions, self: string): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const reused = existingFeed(o);
  const { bytes } = reused ?? (await writeFeed(o));
  process.stderr.write(
    reused
      ? `reusing the feed in ${o.dir} (${o.records} records in ${o.segments} segment(s), ${(bytes / 1e6).toFixed(0)} MB)\n`
      : `wrote ${o.records} records in ${o.segments} segment(s), ${(bytes / 1e6).toFixed(0)} MB, in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );
  const dbPath = resolve(o.dir, 'bench.sqlite');
  const child = spawn(process.execPath, [self, 'ingest-child', resolve(o.dir), dbPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  // CPU seconds of each of the child's threads, sampled from /proc while it runs (Linux only): shows
  // which thread is the bottleneck. Threads that end between two samples lose their last interval.
  const threadCpu = new Map<string, number>();
  const sample = () => {
    try {
      for (const tid of readdirSync(`/proc/${child.pid}/task`)) {
        try {
          const f = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
          threadCpu.set(tid, (Number(f[11]) + Number(f[12])) / 100); // utime + stime, in clock ticks (USER_HZ 100)
        } catch {
          // the thread ended
        }
      }
    } catch {
      // not Linux, or the child ended
    }
  };
  const timer = setInterval(sample, 100);
  const [code] = (await once(child, 'close')) as [number | null];
  clearInterval(timer);
  if (code !== 0) throw new Error(`ingest child failed with ${code}`);
  const main = threadCpu.get(String(child.pid)) ?? 0;
  threadCpu.delete(String(child.pid));
  const others = [...threadCpu.values()].filter((t) => t >= 0.1).sort((a, b) => b - a);
  const s = JSON.parse(stdout.trim()) as {
    records_total: number;
    seconds: number;
    records_per_second: number;
    rejects: number;
    max_rss_mb: number;
    bytes: number;
    cpu_user_s: number;
    cpu_system_s: number;
    main_thread_busy: number;
  };
  return {
    bench: 'ingest',
    records: s.records_total,
    segments: o.segments,
    gzip: o.gzip,
    feed_mb: Math.round(s.bytes / 1e6),
    seconds: s.seconds,
    records_per_second: s.records_per_second,
    rejects: s.rejects,
    peak_rss_mb: s.max_rss_mb,
    cpu_seconds: Math.round((s.cpu_user_s + s.cpu_system_s) * 10) / 10,
    main_thread_busy: s.main_thread_busy,
    thread_cpu_seconds: { main, others },
  };
}
