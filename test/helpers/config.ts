// The configuration of tests that build a snapshot for what they check other than the bulk downloads.
import { parseConfig, type Config } from '../../src/config/index.js';

/**
 * `input` over the defaults, with the daily bulk copy off: it adds seconds to every build of the
 * small demo, and test/bulk.test.ts checks it (a build's bulk copy equals the full build's, the
 * Data Package, the formats).
 */
export function testConfig(input: Record<string, unknown> = {}, baseDir: string = process.cwd()): Config {
  return parseConfig({ bulk: { enabled: false }, ...input }, baseDir);
}
