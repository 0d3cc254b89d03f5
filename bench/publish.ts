// Publish benchmark (docs/benchmarks.md "Publish"): publishes a built snapshot to a local S3-protocol
// server (s3rver on 127.0.0.1, its storage in --s3-dir so that a later run sees what an earlier one
// uploaded) and reports publish's summary with the process's peak RSS. Run it once after the first
// build (the first publish), and again after a 15-minute cycle (demo --now +15 min, ingest, build).
import fs from 'node:fs';
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

export async function benchPublish(o: PublishBenchOptions, log: (line: string) => void): Promise<PublishSummary & { bench: 'publish'; peak_rss_mb: number; cpu_seconds: number }> {
  fs.mkdirSync(o.s3Dir, { recursive: true });
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: o.s3Dir, configureBuckets: [{ name: o.bucket }] });
  const { port } = await server.run();
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
    await server.close();
  }
}
