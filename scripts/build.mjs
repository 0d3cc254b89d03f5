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
