import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The slowest test files, longest first (seconds each on the 2-core CI machine, measured with the
 * other worker busy). Vitest's default order puts the files that took longest in the previous run first,
 * but a clean clone has no previous run: larger files first then, which started some of these last and
 * left one worker running them alone at the end. Update when a file's time changes much (last:
 * 2026-12-07, `.ci/run` on a clean clone: publish-s3 258 s, incremental 255, api-participants 191).
 */
const SLOWEST_FIRST = [
  'publish-s3',
  'incremental',
  'api-participants',
  'build',
  'bulk',
  'edge-lambda',
  'run',
  'uptime-incremental',
  'edge-worker',
  'participant-lists',
  'participant-pages',
  'lists',
  'demo',
  'api-events',
  'derive-churn',
  'derive-hosts',
  'manifest',
  'ingest-concurrency',
  'e2e-serve',
  'publish',
  'serve',
  'status-page-browser',
  'uptime-churn',
].map((name) => `${name}.test.ts`);

/** The files of SLOWEST_FIRST in its order, then the others in Vitest's default order. */
class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification): number => {
      const i = SLOWEST_FIRST.indexOf(path.basename(f.moduleId));
      return i < 0 ? SLOWEST_FIRST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b)); // stable: the others keep their order
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Vitest's default is one worker less than the cores: one file at a time on the 2-core CI machine,
    // where the tests' own child processes (CLI builds, servers) leave the second core mostly idle.
    maxWorkers: 2,
    sequence: { sequencer: SlowestFirst },
  },
});
