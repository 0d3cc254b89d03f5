// `npm run bench -- <name> [options]`: benchmarks that hold the speed and memory targets
// (docs/benchmarks.md). Each prints one JSON line per measurement on stdout.
import { Command } from 'commander';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchApi } from './api.js';
import { benchBulk } from './bulk.js';
import { benchCycle } from './cycle.js';
import { benchDerive } from './derive.js';
import { benchFacets } from './facets.js';
import { benchGrams } from './grams.js';
import { benchNameGramSpans } from './name-gram-spans.js';
import { runFuzz } from './fuzz.js';
import { benchIngest, ingestChild } from './ingest.js';
import { benchPublish, s3ServerChild } from './publish.js';
import { benchRecords } from './records.js';
import { snapshotBytes } from './snapshot.js';
import { benchStatus } from './status.js';
import { CHUNK_ITEMS_ESTIMATE, SMALL_SET_MAX } from '../src/api/participants/plan.js';
import { FILTER_COUNT_CAP } from '../src/api/schemas/constants.js';

const self = fileURLToPath(import.meta.url);
const machine = () => `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;

/** A progress printer on stderr: each line after the seconds since it was made (`digits` decimals). */
function progressLog(digits: number): (line: string) => void {
  const t0 = performance.now();
  return (line) => process.stderr.write(`[${((performance.now() - t0) / 1000).toFixed(digits)} s] ${line}\n`);
}

const program = new Command().name('bench').description('peppol-snapshot benchmarks');

program
  .command('ingest')
  .description('ingest a large synthetic feed (70% probes; directory, sml, smp over many participants)')
  .option('--records <n>', 'records in the feed', '2000000')
  .option('--segments <n>', 'segments the feed is split into', '20')
  .option('--participants <n>', 'distinct participants', '500000')
  .option('--gzip', 'gzip the segments')
  .option('--dir <dir>', 'working directory (feed and database)', '.bench/ingest')
  .action(async (o: { records: string; segments: string; participants: string; gzip?: boolean; dir: string }) => {
    const r = await benchIngest({ records: Number(o.records), segments: Number(o.segments), participants: Number(o.participants), gzip: o.gzip ?? false, dir: o.dir }, self);
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('derive')
  .description('run the derivation of `build` alone on an ingested database (changes its derived tables)')
  .requiredOption('--db <file>', 'the SQLite database (ingested)')
  .option('--full', 'recompute everything instead of from the watermark')
  .action((o: { db: string; full?: boolean }) => {
    const r = benchDerive(o.db, o.full ?? false, progressLog(1));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('status')
  .description("the status page and the feed over a derived database (read-only): seconds to read and render, each page's bytes")
  .requiredOption('--db <file>', 'the SQLite database (derived)')
  .requiredOption('--now <iso>', "the snapshot's clock")
  .action((o: { db: string; now: string }) => {
    const r = benchStatus(o.db, Date.parse(o.now));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('facets')
  .description("the participant list's facet cube and vectors over a derived database: grouping time, sizes, and the bytes and CPU of a first page's meta over a seeded mix of filters (read-only)")
  .requiredOption('--db <file>', 'the SQLite database (derived)')
  .option('--requests <n>', 'requests per kind of filter', '500')
  .option('--seed <n>', 'seed of the request mix', '1')
  .action((o: { db: string; requests: string; seed: string }) => {
    const r = benchFacets(o.db, Number(o.requests), Number(o.seed), progressLog(1));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('grams')
  .description('the grams of the participant names over a derived database: frequent grams (held by more than --threshold names) with their facet cells, minimal infrequent grams with their names: the sizes of an index that would count every name search (read-only)')
  .requiredOption('--db <file>', 'the SQLite database (derived)')
  .option('--threshold <n>', 'names a gram must be held by to be frequent (more than this)', String(SMALL_SET_MAX))
  .action((o: { db: string; threshold: string }) => {
    const r = benchGrams(o.db, Number(o.threshold), FILTER_COUNT_CAP, progressLog(1));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('name-gram-spans')
  .description('per gram of one or two code points of the participant names: its holders and the longest stretch of each stored order holding --limit + 1 of its matches (a page and the next), in chunks of --chunk-items (read-only)')
  .requiredOption('--db <file>', 'the SQLite database (derived)')
  .option('--limit <n>', 'matches a page holds', '200')
  .option('--chunk-items <n>', 'participants per chunk of a main list', String(CHUNK_ITEMS_ESTIMATE))
  .action((o: { db: string; limit: string; chunkItems: string }) => {
    const r = benchNameGramSpans(o.db, Number(o.limit), Number(o.chunkItems), progressLog(1));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('api')
  .description('read cost of composed answers (files, bytes, chunks per request) and serve requests/s, over a built snapshot')
  .requiredOption('--out <dir>', 'snapshot directory written by `peppol-snapshot build`')
  .option('--db <file>', 'its database (opened read-only), to pick identifiers')
  .option('--requests <n>', 'requests per route (at most 5000)', '200')
  .option('--seed <n>', 'seed of the request generator', '1')
  .option('--duration <s>', 'seconds of load per serve target (at most 120)', '10')
  .option('--connections <n>', 'concurrent keep-alive connections to serve', '8')
  .option('--route-budget <s>', 'seconds of read-cost requests per route at most', '180')
  .option('--no-serve', 'skip the serve throughput part')
  .option('--no-walks', 'skip the participant list walks')
  .option('--walk-pages <n>', 'pages per participant list walk at most', '5')
  .action(async (o: { out: string; db?: string; requests: string; seed: string; duration: string; connections: string; routeBudget: string; serve: boolean; walks: boolean; walkPages: string }) => {
    const r = await benchApi(
      { out: o.out, db: o.db, requests: Number(o.requests), seed: Number(o.seed), duration: Number(o.duration), connections: Number(o.connections), routeBudget: Number(o.routeBudget), serve: o.serve, cli: join(dirname(self), 'peppol-snapshot.mjs'), walks: o.walks, walkPages: Number(o.walkPages) },
      (line) => process.stderr.write(`${line}\n`),
    );
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('fuzz')
  .description('ingest mutated feed lines (five in six mutated) and check each line against the feed schema (docs/ingest.md)')
  .option('--lines <n>', 'lines in all', '200000')
  .option('--per-segment <n>', 'lines per segment', '10000')
  .option('--seed <n>', 'seed of the line generator (default: random, printed)')
  .option('--workers <list>', 'parse workers of each run, comma-separated (the databases must be equal)', '2')
  .option('--dir <dir>', 'working directory (feed and databases)', '.bench/fuzz')
  .action(async (o: { lines: string; perSegment: string; seed?: string; workers: string; dir: string }) => {
    const seed = o.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(o.seed);
    process.stderr.write(`fuzz: seed ${seed}\n`);
    const r = await runFuzz({ seed, lines: Number(o.lines), perSegment: Number(o.perSegment), dir: o.dir, workers: o.workers.split(',').map(Number) });
    for (const p of r.problems) process.stderr.write(`fuzz: ${p}\n`);
    const { summaries, problems, ...rest } = r;
    process.stdout.write(`${JSON.stringify({ bench: 'fuzz', ...rest, problems: problems.length, records_per_second: summaries.map((s) => s.records_per_second), machine: machine() })}\n`);
    if (problems.length > 0) process.exitCode = 1;
  });

program
  .command('publish')
  .description('publish a built snapshot to a local S3-protocol server (s3rver); run again after a cycle to measure it')
  .requiredOption('--out <dir>', 'snapshot directory written by `peppol-snapshot build`')
  .option('--s3-dir <dir>', "the server's storage (kept between runs)", '.bench/s3')
  .option('--bucket <name>', 'bucket', 'peppol-snapshot')
  .option('--prefix <p>', 'key prefix', '')
  .option('--concurrency <n>', 'uploads in flight', '32')
  .option('--retention-hours <n>', 'publish.retention_hours', '48')
  .action(async (o: { out: string; s3Dir: string; bucket: string; prefix: string; concurrency: string; retentionHours: string }) => {
    const r = await benchPublish(
      { out: o.out, s3Dir: o.s3Dir, bucket: o.bucket, prefix: o.prefix, concurrency: Number(o.concurrency), retentionHours: Number(o.retentionHours) },
      self,
      progressLog(0),
    );
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('cycle')
  .description('the cron cycle at a demo scale: first build, then cycles of demo +step, ingest and (incremental) build, then build --full')
  .option('--scale <scale>', 'small | medium | large | peppol', 'medium')
  .option('--dir <dir>', 'working directory (feeds, database, snapshot)', '.bench/cycle')
  .option('--now <iso>', 'demo clock of the first build', '2026-11-22T00:00:00Z')
  .option('--cycles <n>', 'cycles after the first build', '2')
  .option('--step-minutes <n>', 'demo clock step per cycle', '15')
  .option('--reuse', 'continue from the directory of an earlier run (no first build)')
  .option('--no-full', 'skip the final build --full')
  .option('--no-bulk', 'without the daily bulk copy (bulk.enabled false): the API snapshot alone')
  .action(async (o: { scale: string; dir: string; now: string; cycles: string; stepMinutes: string; reuse?: boolean; full: boolean; bulk: boolean }) => {
    const r = await benchCycle(
      { scale: o.scale, dir: o.dir, now: o.now, cycles: Number(o.cycles), stepMinutes: Number(o.stepMinutes), reuse: o.reuse ?? false, full: o.full, bulk: o.bulk, cli: join(dirname(self), 'peppol-snapshot.mjs') },
      progressLog(0),
    );
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program
  .command('records')
  .description("a participant's record read the oracle's way (a statement per participant and table) and batched (the render's), over a database already built")
  .requiredOption('--db <file>', 'a derived database')
  .option('--participants <n>', 'participants read', '200000')
  .option('--from <id>', 'the first participant_id read', '0')
  .option('--rounds <n>', 'rounds (the first reads the pages cold)', '3')
  .action((o: { db: string; participants: string; from: string; rounds: string }) => {
    const log = progressLog(1);
    for (const r of benchRecords({ db: o.db, participants: Number(o.participants), from: Number(o.from), rounds: Number(o.rounds) }, log)) console.log(JSON.stringify({ bench: 'records', machine: machine(), ...r }));
  });

program
  .command('snapshot')
  .description("a built snapshot's objects and bytes by kind (participant records, trigram lists, ...), from its state file")
  .requiredOption('--out <dir>', 'output directory of a build')
  .action((o: { out: string }) => {
    process.stdout.write(`${JSON.stringify(snapshotBytes(o.out))}\n`);
  });

program
  .command('bulk')
  .description('write one bulk copy (NDJSON, Parquet, CSV, SQLite, datapackage.json) of a derived database opened read-only: rows, seconds and bytes per table, peak RSS')
  .requiredOption('--db <file>', 'the SQLite database (derived; opened read-only)')
  .option('--out <dir>', 'scratch directory the copy is written into (emptied first)', '.bench/bulk')
  .option('--now <iso>', 'the snapshot clock (its UTC day names the copy)', '2026-11-22T00:00:00Z')
  .action((o: { db: string; out: string; now: string }) => {
    const r = benchBulk(o.db, o.out, Date.parse(o.now), progressLog(1));
    process.stdout.write(`${JSON.stringify({ ...r, machine: machine() })}\n`);
  });

program.command('s3-server <dir> <bucket>', { hidden: true }).action(async (dir: string, bucket: string) => s3ServerChild(dir, bucket));

program.command('ingest-child <dir> <db>', { hidden: true }).action(async (dir: string, db: string) => ingestChild(dir, db));

await program.parseAsync(process.argv);
