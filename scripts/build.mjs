// Bundles the CLI (and the benchmark runner) with esbuild so that `npx peppol-snapshot` runs on plain
// Node with no TypeScript runtime, and the edge shim as a Cloudflare Worker and as an AWS Lambda
// function. Runs from `prepare`, so a fresh `npm ci` leaves dist/ ready.
//
//   node scripts/build.mjs                     CLI, benchmark runner, Worker and Lambda (npm run build)
//   node scripts/build.mjs worker [--analyze]  the Worker only (npm run build:worker): prints its size;
//                                              --analyze also lists what the bundle is made of
//   node scripts/build.mjs lambda [--analyze]  the Lambda function only (npm run build:lambda), likewise
import { analyzeMetafile, build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const only = args[0] === 'worker' || args[0] === 'lambda' ? args[0] : null;

if (only === null) {
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
  await build({ ...common, entryPoints: { 'peppol-snapshot': 'cli/peppol-snapshot.ts', bench: 'bench/index.ts', 'parse-worker': 'src/feeds/parse-worker.ts', 'render-worker': 'src/render/render-worker.ts', 'derive-apart': 'src/derive/apart-main.ts', 'derive-worker': 'src/derive/worker.ts', 'bulk-writer': 'src/bulk/writer.ts' }, outdir: 'dist', outExtension: { '.js': '.mjs' } });
}

/** Prints the size of a bundle (and with --analyze what it is made of). */
async function report(name, result) {
  const file = `dist/${name}.mjs`;
  const gz = gzipSync(readFileSync(file)).length;
  console.log(`${file}: ${result.metafile.outputs[file].bytes} bytes minified, ${gz} bytes gzipped (inputs: dist/${name}.meta.json)`);
  if (args.includes('--analyze')) console.log(await analyzeMetafile(result.metafile));
}

/** A self-contained, minified ES module dist/<name>.mjs with a linked source map and its metafile. */
async function standalone(name, entry, options) {
  const result = await build({
    entryPoints: { [name]: entry },
    outdir: 'dist',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    minify: true,
    // ES module builds of dependencies (the AWS SDK's CommonJS ones would need require() inside an ES module).
    mainFields: ['module', 'main'],
    sourcemap: 'linked',
    metafile: true,
    write: true,
    logLevel: 'warning',
    ...options,
  });
  writeFileSync(`dist/${name}.meta.json`, JSON.stringify(result.metafile));
  if (only === name) await report(name, result);
}

// The edge shim as a Cloudflare module Worker (templates/wrangler.jsonc). Platform "neutral" with no
// Node built-ins: an import of `node:*` (or fs, path ...) anywhere below src/edge/worker.ts fails this
// build. Minified (about 80 KB, 27 KB gzipped; no zod: test/edge-worker.test.ts checks both from the
// metafile written next to it); the linked source map keeps stack traces readable.
if (only === null || only === 'worker') {
  await standalone('worker', 'src/edge/worker.ts', { platform: 'neutral', target: 'es2022', conditions: ['workerd', 'worker', 'browser'] });
}

// The edge shim as an AWS Lambda function behind a function URL, over S3 (src/serve/lambda.ts,
// templates/aws/): one self-contained ES module for Lambda's Node.js runtime (handler "lambda.handler").
// The AWS SDK is bundled although the runtime ships SDK v3: the runtime's copy is a version AWS picks and
// changes, and the bundled one is the version the tests ran (about 510 KB minified, 160 KB gzipped;
// without the SDK it would be 80 KB). test/edge-lambda.test.ts checks its size and that it loads.
if (only === null || only === 'lambda') {
  await standalone('lambda', 'src/serve/lambda.ts', { platform: 'node', target: 'node20' });
}
