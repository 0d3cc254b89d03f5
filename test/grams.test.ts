// The grams index (src/render/grams.ts mineGrams and gramFiles, src/api/participants/grams.ts
// lookupGram): against counting every gram of every name. For any names, cells and threshold, and
// any search text: a text held by more names than the threshold is frequent, with its names per cell;
// any other text names a listed gram inside it whose names include every name holding the text, or
// no name holds the text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allGramCells, gramCellShard, gramCellsOf, gramCellsPath, gramDictPath, gramDictShard, gramListPath, isGramDict, isGramList, lookupGram } from '../src/api/participants/grams.js';
import { gramFiles, mineGrams, verifyGramFiles } from '../src/render/grams.js';

function namesOf(names: readonly string[], cells: readonly number[]): Parameters<typeof mineGrams>[0] {
  const cps: number[] = [];
  const starts: number[] = [];
  for (const n of names) {
    starts.push(cps.length);
    for (const ch of n) cps.push(ch.codePointAt(0)!);
  }
  starts.push(cps.length);
  return { cps: Int32Array.from(cps), starts: Int32Array.from(starts), cellOf: Int32Array.from(cells) };
}

/** Every gram (any length) with the names holding it (ascending). */
function gramsOf(names: readonly string[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  names.forEach((name, k) => {
    const cps = Array.from(name);
    const seen = new Set<string>();
    for (let i = 0; i < cps.length; i++)
      for (let j = i + 1; j <= cps.length; j++) {
        const g = cps.slice(i, j).join('');
        if (seen.has(g)) continue;
        seen.add(g);
        let l = out.get(g);
        if (l === undefined) out.set(g, (l = []));
        l.push(k);
      }
  });
  return out;
}

const dec = new TextDecoder();
// Names over a small alphabet (one letter outside the BMP), so that long grams repeat.
const alphabet = ['a', 'b', 'c', ' ', 'é', '𝔸'];
const nameArb = fc.array(fc.constantFrom(...alphabet), { minLength: 0, maxLength: 14 }).map((cs) => cs.join(''));
const textArb = fc.array(fc.constantFrom(...alphabet, 'z'), { minLength: 1, maxLength: 9 }).map((cs) => cs.join(''));

describe('the grams index', () => {
  it('mines every frequent gram with its names per cell, and lists the minimal infrequent ones', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(nameArb, fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 6 }),
        (rows, threshold) => {
          const names = rows.map((r) => r[0]);
          const cells = rows.map((r) => r[1]);
          const mined = mineGrams(namesOf(names, cells), threshold);
          const all = gramsOf(names);
          const frequent = (g: string): boolean => (all.get(g)?.length ?? 0) > threshold;
          expect(new Set(mined.frequent)).toEqual(new Set([...all.keys()].filter(frequent)));
          mined.frequent.forEach((g, id) => {
            const holders = all.get(g)!;
            expect(mined.df[id]).toBe(holders.length);
            const perCell = new Map<number, number>();
            for (const k of holders) perCell.set(cells[k]!, (perCell.get(cells[k]!) ?? 0) + 1);
            const want = [...perCell].sort((a, b) => a[0] - b[0]);
            const got: Array<[number, number]> = [];
            for (let i = mined.cellStart[id]!; i < mined.cellStart[id + 1]!; i++) got.push([mined.cell[i]!, mined.cellCount[i]!]);
            expect(got).toEqual(want);
          });
          // Minimal infrequent: infrequent, its grams a code point shorter frequent (none for one code point); trigrams are not listed.
          const minimal = [...all.keys()].filter((g) => {
            const cps = Array.from(g);
            if (frequent(g) || cps.length === 3) return false;
            return cps.length === 1 || (frequent(cps.slice(0, -1).join('')) && frequent(cps.slice(1).join('')));
          });
          expect(new Map(mined.lists.map((l) => [l.gram, [...l.names]]))).toEqual(new Map(minimal.map((g) => [g, all.get(g)!])));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('answers any search text from the files it writes: frequent with its cells, a listed gram holding every match, or none', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(nameArb, fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(textArb, { minLength: 1, maxLength: 20 }),
        (rows, threshold, texts) => {
          const names = rows.map((r) => r[0]);
          const cells = rows.map((r) => r[1]);
          const files = new Map<string, Uint8Array>();
          gramFiles(mineGrams(namesOf(names, cells), threshold), names.map((_, k) => String(k)), (path, bytes) => {
            expect(files.has(path)).toBe(false);
            files.set(path, bytes);
          });
          const all = gramsOf(names);
          const holders = (g: string): number[] => all.get(g) ?? [];
          // Texts of the names too, so that most are held.
          for (const text of [...texts, ...names.filter((n) => n.length > 0).map((n) => Array.from(n).slice(1, 6).join(''))]) {
            if (text.length === 0) continue;
            const dict = JSON.parse(dec.decode(files.get(gramDictPath(gramDictShard(text)))!)) as unknown;
            expect(isGramDict(dict)).toBe(true);
            if (!isGramDict(dict)) return;
            const found = lookupGram(dict, text);
            const matches = holders(text);
            const cellsBytes = files.get(gramCellsPath(gramCellShard(text)))!;
            if (matches.length > threshold) {
              expect(found).toEqual({ kind: 'frequent' });
              const got = gramCellsOf(cellsBytes, text)!;
              expect(got.count).toBe(matches.length);
              let sum = 0;
              for (let i = 0; i < got.cells.length; i++) {
                expect(got.counts[i]).toBe(matches.filter((k) => cells[k] === got.cells[i]).length);
                sum += got.counts[i]!;
              }
              expect(sum).toBe(matches.length);
            } else {
              expect(gramCellsOf(cellsBytes, text)).toBeUndefined();
              if (found.kind === 'none') expect(matches).toEqual([]);
              else {
                expect(found.kind).toBe('list');
                if (found.kind !== 'list') return;
                expect(text.includes(found.gram)).toBe(true);
                const listed = holders(found.gram);
                expect(listed.length).toBeLessThanOrEqual(threshold);
                for (const k of matches) expect(listed).toContain(k);
                if (Array.from(found.gram).length !== 3) {
                  const list = JSON.parse(dec.decode(files.get(gramListPath(found.gram))!)) as unknown;
                  expect(isGramList(list)).toBe(true);
                  expect((list as { items: number[] }).items).toEqual(listed);
                }
              }
            }
          }
          // Every cell shard decodes whole.
          for (const [path, bytes] of files) if (path.endsWith('.bin')) expect(allGramCells(bytes)).not.toBeNull();
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('verify of the grams index (verifyGramFiles)', () => {
  // Names with frequent grams (threshold 3), each a participant first seen a minute before the last.
  const names = ['alpha gamma', 'alpha gamma', 'alpha gamma', 'alpha gamma', 'delta beta', 'delta beta', 'delta beta', 'delta beta', 'alpha beta', 'øst'];
  const item = (k: number): string => JSON.stringify(['0192', `9${k}`, names[k], 'NO', true, null, null, null, 'directory', new Date(Date.UTC(2026, 0, 1) - k * 60_000).toISOString().replace('.000Z', 'Z')]);
  const write = (): Map<string, Uint8Array> => {
    const files = new Map<string, Uint8Array>();
    gramFiles(mineGrams(namesOf(names, names.map((_, k) => k % 2)), 3), names.map((_, k) => item(k)), (p, b) => files.set(p, b));
    return files;
  };
  const problems = (files: Map<string, Uint8Array>, cubeCells = 2, trigrams = new Map<string, number>()): string[] => {
    const out: string[] = [];
    verifyGramFiles(new Set(files.keys()), (rel) => files.get(rel)!, cubeCells, trigrams, (rel, message) => out.push(`${rel}: ${message}`), 3);
    return out;
  };
  // Every trigram of the names with its count, as the trigram lists would hold.
  const trigramCounts = (): Map<string, number> => new Map([...gramsOf(names)].filter(([g]) => Array.from(g).length === 3).map(([g, ks]) => [g, ks.length]));
  const enc = new TextEncoder();

  it('finds nothing wrong with the files gramFiles writes, and each kind of fault', () => {
    const files = write();
    expect(problems(files, 2, trigramCounts())).toEqual([]);
    const lists = [...files.keys()].filter((p) => p.includes('/list/'));
    expect(lists.length).toBeGreaterThan(0);
    // A gram list missing, and one no dictionary names.
    const missing = new Map(files);
    missing.delete(lists[0]!);
    missing.set(gramListPath('zzzz'), files.get(lists[0]!)!);
    const found = problems(missing, 2, trigramCounts());
    expect(found).toContain(`${gramListPath('zzzz')}: is a gram list no dictionary shard names`);
    expect(found.length).toBeGreaterThan(1);
    for (const p of found) if (!p.startsWith(gramListPath('zzzz'))) expect(p).toMatch(new RegExp(`whose list ${lists[0]!.replace(/[.]/g, '[.]')} is missing$`));
    // A list holding a participant whose name lacks the gram.
    const wrong = new Map(files);
    const list = JSON.parse(dec.decode(files.get(lists[0]!)!)) as { format: string; items: unknown[][] };
    list.items[0]![2] = 'nothing here';
    wrong.set(lists[0]!, enc.encode(JSON.stringify(list)));
    expect(problems(wrong, 2, trigramCounts())).toEqual([expect.stringMatching(/whose name does not hold/)]);
    // Cells past the cube's.
    expect(problems(files, 1, trigramCounts()).length).toBeGreaterThan(0);
    // A dictionary shard gone.
    const noDict = new Map(files);
    noDict.delete(gramDictPath(0));
    expect(problems(noDict, 2, trigramCounts())).toContain(`${gramDictPath(0)}: missing from the manifest (every dictionary shard of the grams index is written)`);
  });
});
