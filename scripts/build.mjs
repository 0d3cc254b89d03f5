// Bundles the CLI (and the benchmark runner) with esbuild so that `npx peppol-snapshot` runs on plain
// Node with no TypeScript runtime, and the edge shim as a Cloudflare Worker. Runs from `prepare`, so a
// fresh `npm ci` leaves dist/ ready.
//
//   node scripts/build.mjs                     CLI, benchmark runner and Worker (npm run build)
//   node scripts/build.mjs worker [--analyze]  the Worker only (npm run build:worker): prints its size;
//                                              --analyze also lists what the bundle is made of
import { analyzeMetafile, build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const workerOnly = args[0] === 'worker';

if (!workerOnly) {
  const common = {
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external', // dependencies stay in node_modules (better-sqlite3 is native)
    sourcemap: 'linked',
    logLevel: 'warning',
    banner: { js: '#!/usr/bin/env node' },
  };
  await build({ ...common, entryPoints: { 'peppol-snapshot': 'cli/peppol-snapshot.ts', bench: 'bench/index.ts', 'parse-worker': 'src/feeds/parse-worker.ts' }, outdir: 'dist', outExtension: { '.js': '.mjs' } });
}

// The edge shim as a Cloudflare module Worker (templates/wrangler.jsonc). Platform "neutral" with no
// Node built-ins: an import of `node:*` (or fs, path ...) anywhere below src/edge/worker.ts fails this
// build. Minified (about 80 KB, 27 KB gzipped; no zod: test/edge-worker.test.ts checks both from the
// metafile written next to it); the linked source map keeps stack traces readable.
const worker = await build({
  entryPoints: { worker: 'src/edge/worker.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'neutral',
  format: 'esm',
  target: 'es2022',
  minify: true,
  mainFields: ['module', 'main'],
  conditions: ['workerd', 'worker', 'browser'],
  sourcemap: 'linked',
  metafile: true,
  write: true,
  logLevel: 'warning',
});
writeFileSync('dist/worker.meta.json', JSON.stringify(worker.metafile));

if (workerOnly) {
  const out = worker.metafile.outputs['dist/worker.mjs'];
  const gz = gzipSync(readFileSync('dist/worker.mjs')).length;
  console.log(`dist/worker.mjs: ${out.bytes} bytes minified, ${gz} bytes gzipped (inputs: dist/worker.meta.json)`);
  if (args.includes('--analyze')) console.log(await analyzeMetafile(worker.metafile));
}
