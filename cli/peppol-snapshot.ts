// The peppol-snapshot command line (docs/architecture.md §3). Thin: parses flags, calls src/.
import { Command, CommanderError, Option } from 'commander';
import { loadConfig } from '../src/config/index.js';
import { formatIngestSummary, runIngest } from '../src/feeds/ingest.js';
import { writeFeedDocs } from '../src/feeds/docs.js';
import { parseDemoOptions, parseNow, runDemo } from '../src/demo/index.js';
import { runBuild } from '../src/render/build.js';
import { formatBulkLine } from '../src/bulk/index.js';
import { verifySnapshot } from '../src/render/verify.js';
import { formatPublishSummary, ManifestError, PublishError, runPublish } from '../src/publish/index.js';
import { formatRunSummary, runCycle } from '../src/publish/run.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_SOURCES_FAILED, EXIT_USAGE, UsageError } from '../src/util/errors.js';
import { LockedError, withLocks, type Lock } from '../src/util/lock.js';
import { createProgress } from '../src/util/progress.js';

const stderr = (line: string) => process.stderr.write(`${line}\n`);

/** Says when a lock is taken over from a process that died holding it. */
function reportTakeover(locks: Lock[]): void {
  for (const l of locks) if (l.tookOver) stderr(`peppol-snapshot: took over ${l.file} from ${l.tookOver.command} (pid ${l.tookOver.pid} on ${l.tookOver.host}, since ${l.tookOver.started_at}), which ended without releasing it`);
}

const program = new Command();
program
  .name('peppol-snapshot')
  .description('Publishes open monitoring data of the Peppol network as a static JSON API snapshot.')
  .version('0.1.0')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

program
  .command('ingest')
  .description('pull measurement feeds (directories or http(s) URLs holding feeds.json) into SQLite')
  .option('--config <file>', 'configuration file', 'publish.config.json')
  .option('--db <file>', 'SQLite database (default: database from the config)')
  .option('--source <dir|url...>', 'feed source(s); replaces the sources of the config')
  .option('--json', 'print one JSON summary line on stdout')
  .action(async (opts: { config: string; db?: string; source?: string[]; json?: boolean }) => {
    const config = loadConfig(opts.config);
    const dbPath = opts.db ?? config.database;
    const summary = await withLocks([dbPath], 'peppol-snapshot ingest', (locks) => {
      reportTakeover(locks);
      return runIngest({
        dbPath,
        sources: opts.source ? opts.source.map((url) => ({ name: url, url })) : config.sources,
        http: config.ingest,
        workers: config.ingest.workers,
        progress: createProgress(),
        log: stderr,
      });
    });
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stderr.write(`${formatIngestSummary(summary)}\n`);
    process.exitCode = summary.failed_sources.length > 0 ? EXIT_SOURCES_FAILED : EXIT_OK;
  });

program
  .command('build')
  .description('derive the monitoring facts and render every endpoint into the snapshot directory')
  .option('--config <file>', 'configuration file', 'publish.config.json')
  .option('--db <file>', 'SQLite database (default: database from the config)')
  .option('--out <dir>', 'snapshot directory (default: out from the config)')
  .option('--now <iso>', 'pin the snapshot clock (same database and --now give byte-identical output)')
  .option('--full', 'render every file again (by default only what changed since the previous build of --out)')
  .option('--json', 'print one JSON summary line on stdout')
  .action(async (opts: { config: string; db?: string; out?: string; now?: string; full?: boolean; json?: boolean }) => {
    const config = loadConfig(opts.config);
    const nowMs = opts.now === undefined ? Date.now() : parseNow(opts.now);
    const progress = createProgress();
    const dbPath = opts.db ?? config.database;
    const outDir = opts.out ?? config.out;
    const summary = await withLocks([dbPath, outDir], 'peppol-snapshot build', (locks) => {
      reportTakeover(locks);
      return runBuild({ config, dbPath, outDir, nowMs, full: opts.full === true, bulkWriter: true, progress: (m) => progress.update(m) });
    }).finally(() => progress.done());
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      const r = summary.render;
      const lists = r.lists === null ? '' : r.lists.mode === 'patched' ? `, ${r.lists.lists} participant lists patched` : ', participant lists written in full';
      const uptime = r.uptime === null ? '' : r.uptime.lists_patched > 0 ? `, ${r.uptime.lists_patched} uptime lists patched (${r.uptime.lists_written} written in full)` : ', uptime lists written in full';
      const threads = r.threads === 2 ? 'two threads' : 'one thread';
      const how = r.mode === 'full' ? `full render on ${threads}: ${r.reason}` : `incremental render on ${threads}: ${r.participants ?? 0} participants changed${lists}${uptime}`;
      process.stderr.write(`build: ${summary.files} files (${summary.written} written, ${summary.removed} removed), ${(summary.bytes / 1e6).toFixed(1)} MB, ${summary.seconds.toFixed(1)} s; ${how}; generated_at ${summary.generated_at}\n`);
      const line = formatBulkLine(summary.bulk);
      if (line !== null) process.stderr.write(`${line}\n`);
      if (summary.missing_routes.length > 0) process.stderr.write(`build: routes without a renderer: ${summary.missing_routes.join(', ')}\n`);
    }
  });

program
  .command('publish')
  .description('upload what changed in the snapshot to the target of the config (a directory or an S3-compatible bucket)')
  .option('--config <file>', 'configuration file', 'publish.config.json')
  .option('--out <dir>', 'snapshot directory (default: out from the config)')
  .option('--dry-run', 'print the plan (objects and bytes to upload and to delete, by cache class); change nothing')
  .option('--json', 'print one JSON summary line on stdout')
  .action(async (opts: { config: string; out?: string; dryRun?: boolean; json?: boolean }) => {
    const config = loadConfig(opts.config);
    const outDir = opts.out ?? config.out;
    const progress = createProgress();
    const summary = await withLocks([outDir], 'peppol-snapshot publish', (locks) => {
      reportTakeover(locks);
      return runPublish({ config, outDir, dryRun: opts.dryRun ?? false, progress: (m) => progress.update(m), log: stderr });
    }).finally(() => progress.done());
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else stderr(formatPublishSummary(summary));
  });

program
  .command('run')
  .description('ingest, build and publish in one go: the command for cron (one at a time, under a lock)')
  .option('--config <file>', 'configuration file', 'publish.config.json')
  .option('--now <iso>', 'pin the snapshot clock (default: now)')
  .option('--json', 'print one JSON summary line on stdout')
  .action(async (opts: { config: string; now?: string; json?: boolean }) => {
    const config = loadConfig(opts.config);
    const nowMs = opts.now === undefined ? undefined : parseNow(opts.now);
    const summary = await runCycle({ config, ...(nowMs !== undefined ? { nowMs } : {}), progress: createProgress(), log: stderr });
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else stderr(formatRunSummary(summary));
    process.exitCode = summary.exit_code;
  });

program
  .command('verify')
  .description('check a snapshot: manifest hashes, response schemas, references between files')
  .option('--config <file>', 'configuration file', 'publish.config.json')
  .option('--out <dir>', 'snapshot directory (default: out from the config)')
  .option('--json', 'print one JSON summary line on stdout')
  .action((opts: { config: string; out?: string; json?: boolean }) => {
    const out = opts.out ?? loadConfig(opts.config).out;
    const summary = verifySnapshot(out);
    if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      for (const p of summary.problems) process.stderr.write(`verify: ${p.path}: ${p.message}\n`);
      process.stderr.write(`verify: ${summary.files} files, ${summary.exact_files} exact, ${summary.lists} lists, ${summary.chunks} chunks, ${summary.items} items, ${summary.references} references; ${summary.problems.length} problems (${summary.seconds} s)\n`);
    }
    process.exitCode = summary.problems.length > 0 ? EXIT_FAILURE : EXIT_OK;
  });

program
  .command('demo')
  .description('write the deterministic demo scenario: feeds (feeds.json + segments) and ground-truth.json')
  .option('--feeds <dir>', 'output feed directory (appended to when it already holds this scenario)', 'data/demo-feeds')
  .option('--scale <scale>', 'small | medium | large | peppol', 'small')
  .option('--seed <n>', 'scenario seed (integer)', '1')
  .option('--now <iso>', 'generate every segment window closed by this instant (default: now, floored to the probe cadence)')
  .option('--json', 'print one JSON summary line on stdout')
  .action(async (flags: { feeds: string; scale: string; seed: string; now?: string; json?: boolean }) => {
    const opts = parseDemoOptions(flags, Date.now());
    const summary = await runDemo({ ...opts, progress: createProgress() });
    if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stderr.write(`${summary.text}\n`);
  });

program
  .command('serve')
  .description('serve a snapshot directory over HTTP through the edge shim (CORS, rate limit, API keys)')
  .option('--config <file>', 'configuration file (edge policy, default --out)', 'publish.config.json')
  .option('--out <dir>', 'snapshot directory (default: out from the config)')
  .option('--port <n>', 'TCP port; 0 picks a free one', '8787')
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--rate-limit <N/SECONDS|off>', 'requests per window per client; replaces edge.rate_limit')
  .option('--access <open|keyed>', 'access mode; replaces edge.access.mode')
  .option('--keys <file>', 'API key hashes (JSON lines: {"sha256","tiers","label"}); required with keyed access')
  .option('--health-max-age <seconds>', '/health/db reports db=false when manifest.json is older', '7200')
  .option('--trust-proxy', 'behind a local reverse proxy: client address from X-Forwarded-For of loopback connections')
  .action(async (opts: { config: string; out?: string; port: string; host: string; rateLimit?: string; access?: string; keys?: string; healthMaxAge: string; trustProxy?: boolean }) => {
    const config = loadConfig(opts.config);
    const { runServe } = await import('../src/serve/index.js');
    await runServe({ ...opts, out: opts.out ?? config.out }, config.edge, (line) => process.stderr.write(`${line}\n`));
    process.exitCode = EXIT_OK;
  });

const docs = program.command('docs').description('generate documentation from the code');
docs
  .command('feeds')
  .description('write docs/feeds.md from the feed schemas')
  .addOption(new Option('--out <file>', 'output file').default('docs/feeds.md'))
  .action((opts: { out: string }) => {
    writeFeedDocs(opts.out);
    process.stderr.write(`wrote ${opts.out}\n`);
  });

async function main(argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // help and version end with code 0; every other commander error is a usage error.
      process.exitCode = e.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
      return;
    }
    if (e instanceof LockedError) {
      process.stderr.write(`peppol-snapshot: ${e.message}\n`);
      process.exitCode = e.exitCode;
      return;
    }
    if (e instanceof ManifestError || e instanceof PublishError) {
      process.stderr.write(`peppol-snapshot: ${e.message}\n`);
      process.exitCode = EXIT_FAILURE;
      return;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`peppol-snapshot: ${e.message}\n`);
      for (const p of e.problems) process.stderr.write(`  - ${p}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    process.stderr.write(`peppol-snapshot: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = EXIT_FAILURE;
  }
}

// A command whose work stops short (waiting on a promise nothing will ever settle, so the event loop
// runs dry) would otherwise end with Node's exit code 13 and not a word: say so, and exit 1.
let finished = false;
process.once('beforeExit', () => {
  if (finished) return;
  process.stderr.write('peppol-snapshot: internal error: the command stopped before it finished (it was left waiting for work that never came); please report this\n');
  process.exitCode = EXIT_FAILURE;
});
await main(process.argv);
finished = true;
