// `npm run bench -- cycle`: the cron cycle at a demo scale (docs/benchmarks.md "Cycle"). Generates the
// demo scenario at --now, ingests it and runs the first (full) build; then each cycle moves the demo
// clock on by --step-minutes, generates and ingests the new segments and builds again (incremental),
// and finally one `build --full` of the same state for comparison. Every phase runs the real CLI in
// a child process; its wall time and peak RSS (VmHWM, polled from /proc) are reported with the
// build's own summary (render mode, participants rendered, how the participant lists and the manifest were written, what it did
// with the bulk copy, files written by cache class, removed). A build that starts the background bulk writer returns before
// the copy is written: its writer runs on beside the later phases, and the build that adopts the copy reports the writer's
// seconds and peak RSS (bulk.writer).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface CycleOptions {
  scale: string;
  dir: string;
  now: string;
  cycles: number;
  stepMinutes: number;
  /** Reuse the directory's feeds, database and snapshot (continue from its last cycle). */
  reuse: boolean;
  full: boolean;
  /** Write the daily bulk copy (bulk.enabled); off, the cycles measure the API snapshot alone. */
  bulk: boolean;
  cli: string;
}

export interface Phase {
  phase: string;
  seconds: number;
  peak_rss_mb: number | null;
  summary: Record<string, unknown> | null;
}

function peakRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Runs the CLI with `args`, returns its wall time, peak RSS and the JSON summary line it printed. */
function runPhase(cli: string, phase: string, args: string[], log: (line: string) => void): Promise<Phase> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let peak: number | null = null;
    const poll = setInterval(() => {
      const v = peakRssMb(child.pid!);
      if (v !== null) peak = Math.max(peak ?? 0, v);
    }, 100);
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      if (code !== 0) return reject(new Error(`${phase}: exit ${code}`));
      const line = out.trim().split('\n').pop() ?? '';
      let summary: Record<string, unknown> | null = null;
      try {
        summary = JSON.parse(line) as Record<string, unknown>;
      } catch {
        summary = null;
      }
      const p: Phase = { phase, seconds: Math.round(performance.now() - t0) / 1000, peak_rss_mb: peak, summary };
      log(`${phase}: ${p.seconds} s, peak RSS ${peak ?? '?'} MB`);
      resolve(p);
    });
  });
}

/** The parts of a build summary the benchmark reports. */
export function buildFigures(s: Record<string, unknown> | null): Record<string, unknown> {
  if (s === null) return {};
  const routes = (s.routes ?? {}) as Record<string, { seconds: number }>;
  const slowest = Object.entries(routes)
    .sort((a, b) => b[1].seconds - a[1].seconds)
    .slice(0, 5)
    .map(([id, r]) => `${id} ${r.seconds} s`);
  const derive = s.derive as { seconds?: number; steps?: Record<string, { seconds?: number }> } | undefined;
  // Each derive step's seconds: which step a slow derive spent them in.
  const deriveSteps = derive?.steps === undefined ? undefined : Object.fromEntries(Object.entries(derive.steps).map(([name, st]) => [name, st.seconds]));
  // The bulk step without its per-table report: the mode, why, and the background writer (docs/bulk.md "Cadence").
  const bulk = s.bulk as { mode?: string; reason?: string; day?: string; seconds?: number; files?: number; bytes?: number; written?: number; writer?: unknown } | undefined;
  const bulkFigures = bulk === undefined ? undefined : { mode: bulk.mode, reason: bulk.reason, day: bulk.day, seconds: bulk.seconds, files: bulk.files, bytes: bulk.bytes, written: bulk.written, writer: bulk.writer };
  return { render: s.render, manifest: s.manifest, bulk: bulkFigures, derive_seconds: derive?.seconds, derive_steps: deriveSteps, files: s.files, bytes: s.bytes, written: s.written, written_by_class: s.written_by_class, removed: s.removed, slowest_routes: slowest };
}

export async function benchCycle(o: CycleOptions, log: (line: string) => void): Promise<Record<string, unknown>> {
  const feeds = path.join(o.dir, 'feeds');
  const db = path.join(o.dir, 'db.sqlite');
  const out = path.join(o.dir, 'out');
  const config = path.join(o.dir, 'config.json');
  const stateFile = path.join(o.dir, 'clock.json');
  fs.mkdirSync(o.dir, { recursive: true });
  fs.writeFileSync(config, `${JSON.stringify({ sources: [{ name: 'demo', url: path.resolve(feeds) }], database: path.resolve(db), out: path.resolve(out), ...(o.bulk ? {} : { bulk: { enabled: false } }) })}\n`);
  const phases: Phase[] = [];
  const run = async (phase: string, args: string[]): Promise<Phase> => {
    const p = await runPhase(o.cli, phase, args, log);
    phases.push(p);
    return p;
  };
  let now = Date.parse(o.now);
  if (o.reuse && fs.existsSync(stateFile)) now = (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { now: number }).now;
  else {
    await run('demo', ['demo', '--feeds', feeds, '--scale', o.scale, '--now', new Date(now).toISOString(), '--json']);
    await run('ingest', ['ingest', '--config', config, '--json']);
    await run('build (first)', ['build', '--config', config, '--now', new Date(now).toISOString(), '--json']);
    fs.writeFileSync(stateFile, JSON.stringify({ now }));
  }
  for (let i = 0; i < o.cycles; i++) {
    now += o.stepMinutes * 60_000;
    const iso = new Date(now).toISOString();
    await run(`cycle ${i + 1}: demo`, ['demo', '--feeds', feeds, '--scale', o.scale, '--now', iso, '--json']);
    await run(`cycle ${i + 1}: ingest`, ['ingest', '--config', config, '--json']);
    await run(`cycle ${i + 1}: build`, ['build', '--config', config, '--now', iso, '--json']);
    fs.writeFileSync(stateFile, JSON.stringify({ now }));
  }
  if (o.full) await run('build --full', ['build', '--config', config, '--now', new Date(now).toISOString(), '--full', '--json']);
  return {
    bench: 'cycle',
    scale: o.scale,
    now: new Date(now).toISOString(),
    phases: phases.map((p) => ({ phase: p.phase, seconds: p.seconds, peak_rss_mb: p.peak_rss_mb, ...(p.phase.includes('build') ? buildFigures(p.summary) : {}) })),
  };
}
