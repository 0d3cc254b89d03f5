// Bundles the CLI (and the benchmark runner) with esbuild so that `npx peppol-snapshot` runs on plain
// Node with no TypeScript runtime. Runs from `prepare`, so a fresh `npm ci` leaves dist/ ready.
import { build } from 'esbuild';

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

// The edge shim as a Cloudflare Worker (templates/wrangler.toml). Platform "neutral" with no Node
// built-ins: an import of `node:*` (or fs, path ...) anywhere below src/edge/worker.ts fails this build.
await build({
  entryPoints: { worker: 'src/edge/worker.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'neutral',
  format: 'esm',
  target: 'es2022',
  minify: true, // ~470 KB instead of ~790 KB (zod is most of it); the linked source map keeps traces readable
  mainFields: ['module', 'main'],
  conditions: ['workerd', 'worker', 'browser'],
  sourcemap: 'linked',
  logLevel: 'warning',
});
