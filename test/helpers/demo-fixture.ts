// The small demo scenario, generated and ingested once per test run by test/global-setup.ts.
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import type { GroundTruth } from '../../src/demo/index.js';
import { openDb, type Db } from '../../src/db/index.js';
import { tempDir } from './feeds.js';

export function smallDemo(): { feeds: string; db: string; now: string; groundTruth: () => GroundTruth } {
  const f = inject('smallDemo');
  return { ...f, groundTruth: () => JSON.parse(fs.readFileSync(path.join(f.feeds, 'ground-truth.json'), 'utf8')) as GroundTruth };
}

/** A private writable copy of the ingested small demo database (removed after the file's tests). */
export function copyOfSmallDemoDb(): { path: string; open: () => Db } {
  const f = inject('smallDemo');
  const dir = tempDir('demo-db-');
  const p = path.join(dir, 'small.sqlite');
  fs.copyFileSync(f.db, p);
  return { path: p, open: () => openDb(p) };
}
