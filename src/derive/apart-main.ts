// dist/derive-apart.mjs: `node derive-apart.mjs <database> <derived-schema fingerprint> <prune-before-ms>`
// runs derive over the database, then the prune of raw probes before that instant (src/derive/hosts/step.ts
// pruneRawProbes), then empties the write-ahead log; prints what it did (an ApartResult, JSON) on
// stdout, progress as a status line on stderr. Exit 0; 1 when derive or the prune failed (the error on
// stderr; what committed stays, as in `build`); 2 on a usage error; APART_STALE_EXIT when this script's
// derived schema is not the caller's (a dist/ built from other code: nothing is written, the caller
// derives itself). Started by src/derive/apart.ts.
import { emptyWal, openDb } from '../db/index.js';
import { createProgress } from '../util/progress.js';
import { APART_STALE_EXIT, type ApartResult } from './apart.js';
import { pruneRawProbes } from './hosts/step.js';
import { runDerive, schemaFingerprint, STEPS } from './index.js';

const [dbPath, fingerprint, before] = process.argv.slice(2);
const pruneBeforeMs = Number(before);
if (dbPath === undefined || fingerprint === undefined || before === undefined || !Number.isSafeInteger(pruneBeforeMs)) {
  process.stderr.write('usage: derive-apart.mjs <database> <derived-schema fingerprint> <prune-before-ms>\n');
  process.exitCode = 2;
} else if (schemaFingerprint(STEPS) !== fingerprint) process.exitCode = APART_STALE_EXIT;
else {
  const progress = createProgress();
  const db = openDb(dbPath);
  try {
    const derive = runDerive(db, { progress: (m) => progress.update(m) });
    progress.update('derive: pruning raw probes');
    const pruned = pruneRawProbes(db, pruneBeforeMs);
    emptyWal(db);
    progress.done();
    const result: ApartResult = { derive, pruned };
    process.stdout.write(JSON.stringify(result));
  } catch (e) {
    progress.done();
    process.stderr.write(`derive failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  } finally {
    db.close();
  }
}
