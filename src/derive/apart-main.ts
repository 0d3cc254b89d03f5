// dist/derive-apart.mjs: `node derive-apart.mjs <database> <derived-schema fingerprint>` runs derive over
// the database and prints its summary (JSON) on stdout; progress as a status line on stderr. Exit 0;
// 1 when derive failed (the error on stderr); 2 on a usage error; APART_STALE_EXIT when this script's
// derived schema is not the caller's (a dist/ built from other code: nothing is written, the caller
// derives itself). Started by src/derive/apart.ts.
import { openDb } from '../db/index.js';
import { createProgress } from '../util/progress.js';
import { APART_STALE_EXIT } from './apart.js';
import { runDerive, schemaFingerprint, STEPS } from './index.js';

const [dbPath, fingerprint] = process.argv.slice(2);
if (dbPath === undefined || fingerprint === undefined) {
  process.stderr.write('usage: derive-apart.mjs <database> <derived-schema fingerprint>\n');
  process.exitCode = 2;
} else if (schemaFingerprint(STEPS) !== fingerprint) process.exitCode = APART_STALE_EXIT;
else {
  const progress = createProgress();
  const db = openDb(dbPath);
  try {
    const summary = runDerive(db, { progress: (m) => progress.update(m) });
    progress.done();
    process.stdout.write(JSON.stringify(summary));
  } catch (e) {
    progress.done();
    process.stderr.write(`derive failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  } finally {
    db.close();
  }
}
