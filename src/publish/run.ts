// `peppol-snapshot run`: the cron entry (docs/architecture.md §3): ingest, build and publish in one
// process, under the locks of the database and the snapshot directory (src/util/lock.ts), with one
// summary line.
//
// Exit codes: 0 all went well; 3 some sources failed and the rest was ingested, built and
// published; 1 anything else failed (every source, the build, or the publish; a failed build
// publishes nothing); 4 another process holds a lock (nothing was done).
import type { Config } from '../config/index.js';
import { runIngest, type IngestSummary } from '../feeds/ingest.js';
import { runBuild, type BuildSummary } from '../render/build.js';
import type { BulkMode } from '../bulk/index.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_SOURCES_FAILED } from '../util/errors.js';
import { withLocks } from '../util/lock.js';
import type { Progress } from '../util/progress.js';
import { runPublish, type PublishSummary } from './index.js';
import type { PublishTarget } from './target.js';

export interface RunOptions {
  config: Config;
  /** Snapshot clock (ms); default: the wall clock when the build starts. */
  nowMs?: number;
  progress: Progress;
  log: (line: string) => void;
  /** Tests pass their own publish target. */
  target?: PublishTarget;
}

export interface RunSummary {
  exit_code: number;
  generated_at: string | null;
  ingest: { seconds: number; records: number; segments: number; rejects: number; failed_sources: string[] } | null;
  /** `bulk`: what the build did with the bulk copy (src/bulk/index.ts BulkMode; `started`: a background writer runs on after `run` ends). */
  build: { seconds: number; files: number; written: number; removed: number; bulk: BulkMode } | null;
  publish: { seconds: number; uploaded: number; uploaded_bytes: number; deleted: number; retries: number } | null;
  /** What failed, when something did. */
  errors: string[];
  seconds: number;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export async function runCycle(opts: RunOptions): Promise<RunSummary> {
  const t0 = performance.now();
  const { config, progress, log } = opts;
  const summary: RunSummary = { exit_code: EXIT_OK, generated_at: null, ingest: null, build: null, publish: null, errors: [], seconds: 0 };
  // Both locks first: a second run exits at once, before any work.
  await withLocks([config.database, config.out], 'peppol-snapshot run', async (locks) => {
    for (const l of locks) if (l.tookOver) log(`run: took over ${l.file} from ${l.tookOver.command} (pid ${l.tookOver.pid} on ${l.tookOver.host}, since ${l.tookOver.started_at}), which ended without releasing it`);
    let ingest: IngestSummary | null = null;
    try {
      ingest = await runIngest({ dbPath: config.database, sources: config.sources, http: config.ingest, workers: config.ingest.workers, progress, log });
      summary.ingest = {
        seconds: ingest.seconds,
        records: ingest.records_total,
        segments: ingest.segments,
        rejects: ingest.rejects,
        failed_sources: ingest.failed_sources.map((f) => f.name),
      };
      for (const f of ingest.failed_sources) summary.errors.push(`source ${f.name}: ${f.error}`);
    } catch (e) {
      summary.errors.push(`ingest: ${message(e)}`);
      summary.exit_code = EXIT_FAILURE;
      return;
    }
    let build: BuildSummary;
    try {
      // A due bulk copy is written by a background writer that outlives this process and holds neither
      // lock; a later cycle adopts it (docs/bulk.md "Cadence").
      build = runBuild({ config, dbPath: config.database, outDir: config.out, nowMs: opts.nowMs ?? Date.now(), bulkWriter: true, progress: (m) => progress.update(m) });
      progress.done();
      summary.generated_at = build.generated_at;
      summary.build = { seconds: build.seconds, files: build.files, written: build.written, removed: build.removed, bulk: build.bulk.mode };
    } catch (e) {
      progress.done();
      summary.errors.push(`build: ${message(e)}`);
      summary.exit_code = EXIT_FAILURE;
      return;
    }
    let publish: PublishSummary;
    try {
      publish = await runPublish({ config, outDir: config.out, progress: (m) => progress.update(m), log, ...(opts.target ? { target: opts.target } : {}) });
      progress.done();
      summary.publish = {
        seconds: publish.seconds,
        uploaded: publish.uploaded.objects,
        uploaded_bytes: publish.uploaded.bytes,
        deleted: publish.deleted.objects,
        retries: publish.retries,
      };
    } catch (e) {
      progress.done();
      summary.errors.push(`publish: ${message(e)}`);
      summary.exit_code = EXIT_FAILURE;
      return;
    }
    const failed = ingest.failed_sources.length;
    if (failed > 0) summary.exit_code = failed === ingest.sources ? EXIT_FAILURE : EXIT_SOURCES_FAILED;
  });
  summary.seconds = Math.round(performance.now() - t0) / 1000;
  return summary;
}

/** One line for a terminal or a log. */
export function formatRunSummary(s: RunSummary): string {
  const n = (x: number) => x.toLocaleString('en');
  const parts: string[] = [];
  if (s.ingest) parts.push(`ingest ${s.ingest.seconds} s (${n(s.ingest.records)} records, ${n(s.ingest.segments)} segments${s.ingest.failed_sources.length ? `, failed: ${s.ingest.failed_sources.join(', ')}` : ''})`);
  // The bulk copy is named when this cycle did something with it (not when it was kept as it was).
  const bulk = s.build === null || s.build.bulk === 'kept' || s.build.bulk === 'disabled' ? '' : `; bulk ${s.build.bulk}`;
  if (s.build) parts.push(`build ${s.build.seconds} s (${n(s.build.files)} files, ${n(s.build.written)} written${bulk})`);
  if (s.publish) parts.push(`publish ${s.publish.seconds} s (${n(s.publish.uploaded)} objects uploaded, ${n(s.publish.deleted)} deleted)`);
  return `run: ${parts.join('; ') || 'nothing done'}; ${s.seconds} s, exit ${s.exit_code}${s.errors.length ? ` — ${s.errors.join('; ')}` : ''}`;
}
