// The grams benchmark's miner (bench/grams.ts mineGrams), against counting every gram of every name:
// the frequent grams and the minimal infrequent ones with their names, per length.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codePoints, mineGrams } from '../bench/grams.js';

/** Per length: frequent grams, minimal infrequent grams and their names, by counting every gram. */
function bruteForce(names: readonly string[], threshold: number): Array<{ length: number; frequent: number; minimal_infrequent: number; postings: number }> {
  const df = new Map<string, number>();
  for (const name of names) {
    const cps = Array.from(name);
    const seen = new Set<string>();
    for (let i = 0; i < cps.length; i++)
      for (let j = i + 3; j <= cps.length; j++) {
        const g = cps.slice(i, j).join('');
        if (!seen.has(g)) {
          seen.add(g);
          df.set(g, (df.get(g) ?? 0) + 1);
        }
      }
  }
  const frequent = (g: string): boolean => (df.get(g) ?? 0) > threshold;
  const levels: Array<{ length: number; frequent: number; minimal_infrequent: number; postings: number }> = [];
  for (let length = 3; ; length++) {
    const level = { length, frequent: 0, minimal_infrequent: 0, postings: 0 };
    for (const [g, n] of df) {
      const cps = Array.from(g);
      if (cps.length !== length) continue;
      if (n > threshold) level.frequent++;
      else if (length === 3 || (frequent(cps.slice(0, -1).join('')) && frequent(cps.slice(1).join('')))) {
        level.minimal_infrequent++;
        level.postings += n;
      }
    }
    levels.push(level);
    if (level.frequent === 0) return levels;
  }
}

describe('the grams benchmark', () => {
  it('mines the frequent grams and the minimal infrequent ones of any names, as counting every gram does', () => {
    // Names over a small alphabet (one letter outside the BMP), so that long grams repeat.
    const nameArb = fc.array(fc.constantFrom('a', 'b', 'c', ' ', 'é', '𝔸'), { minLength: 0, maxLength: 14 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(fc.array(nameArb, { minLength: 1, maxLength: 60 }), fc.integer({ min: 0, max: 6 }), (names, threshold) => {
        const mined = mineGrams(names.map(codePoints), threshold);
        const want = bruteForce(names, threshold);
        expect(mined.levels).toEqual(want);
        expect(mined.frequent).toBe(want.reduce((a, l) => a + l.frequent, 0));
      }),
      { numRuns: 200 },
    );
  });
});
