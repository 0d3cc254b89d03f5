// Publish benchmark (docs/benchmarks.md "Publish"): publishes a built snapshot to a local S3-protocol
// server (s3rver on 127.0.0.1, in a process of its own so that it does not share the publisher's
// core, its storage in --s3-dir so that a later run sees what an earlier one uploaded) and reports
// publish's summary with the publisher's peak RSS and CPU. Run it once after the first build (the first
// publish), and again after a 15-minute cycle (demo --now +15 min, ingest, build).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createInterface } from 'node:readline';
import S3rver from 's3rver';
import { defaultConfig } from '../src/config/index.js';
import { runPublish, type PublishSummary } from '../src/publish/index.js';

export interface PublishBenchOptions {
  out: string;
  s3Dir: string;
  bucket: string;
  prefix: string;
  concurrency: number;
  retentionHours: number;
}

/** The s3rver child (`bench s3-server`): prints its port on its first stdout line, stops on SIGTERM. */
export async function s3ServerChild(dir: string, bucket: string): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  process.stdout.write(`${port}\n`);
  process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
}

export async function benchPublish(o: PublishBenchOptions, self: string, log: (line: string) => void): Promise<PublishSummary & { bench: 'publish'; peak_rss_mb: number; cpu_seconds: number }> {
  const server = spawn(process.execPath, [self, 's3-server', o.s3Dir, o.bucket], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((ok, fail) => {
    createInterface({ input: server.stdout! }).once('line', (l) => ok(Number(l)));
    server.once('exit', (code) => fail(new Error(`s3rver exited with ${code}`)));
  });
  // s3rver accepts any credentials; the SDK's default chain reads them from the environment.
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const config = defaultConfig();
  const cpu0 = process.cpuUsage();
  let last = 0;
  try {
    const summary = await runPublish({
      config: {
        ...config,
        publish: {
          ...config.publish,
          concurrency: o.concurrency,
          retention_hours: o.retentionHours,
          target: { type: 's3', bucket: o.bucket, prefix: o.prefix, region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, force_path_style: true, checksums: 'when_required' },
        },
      },
      outDir: o.out,
      progress: (m) => {
        const now = performance.now();
        if (now - last < 10_000) return;
        last = now;
        log(m);
      },
      log,
    });
    const cpu = process.cpuUsage(cpu0);
    return { bench: 'publish', ...summary, peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024), cpu_seconds: Math.round(((cpu.user + cpu.system) / 1e6) * 10) / 10 };
  } finally {
    server.kill('SIGTERM');
  }
}
