// The grams index kept up to date (src/render/grams-model.ts): after any changes of names and cells,
// the model updated from the changes alone writes the files the miner writes from every name
// (src/render/grams.ts mineGrams, gramFiles), byte for byte, and equals the model built from scratch.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { gramFiles, mineGrams, type IndexGrams } from '../src/render/grams.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadGramsState, minedOfModel, modelOf, modelOfMined, NameTable, saveGramsState, updateModel, type GramModel, type GramName, type GramNameChange, type GramNameStore } from '../src/render/grams-model.js';

// A small alphabet so that grams repeat and cross a small threshold, and rarer letters (one outside
// the BMP) so that grams of one code point are infrequent too.
const letterArb = fc.oneof({ arbitrary: fc.constantFrom('a', 'b', 'c', ' '), weight: 8 }, { arbitrary: fc.constantFrom('𝔸', 'x', 'é'), weight: 1 });
const nameArb = fc.array(letterArb, { minLength: 0, maxLength: 10 }).map((cs) => cs.join(''));
const gramNameArb = fc.record({ name: nameArb, cell: fc.integer({ min: 0, max: 3 }) });

/** The files gramFiles writes for the store's names, the participants in id order. */
function filesOf(mined: IndexGrams, ids: readonly number[]): Map<string, string> {
  const out = new Map<string, string>();
  const dec = new TextDecoder();
  gramFiles(
    mined,
    ids.map((id) => `[${id}]`),
    (path, bytes) => out.set(path, Buffer.from(bytes).toString('base64') + dec.decode(bytes).length),
  );
  return out;
}

function fullMine(store: GramNameStore, threshold: number): { mined: ReturnType<typeof mineGrams>; ids: number[] } {
  const ids = [...store].map(([id]) => id).sort((a, b) => a - b);
  const cps: number[] = [];
  const starts: number[] = [];
  const cells: number[] = [];
  for (const id of ids) {
    const { name, cell } = store.get(id)!;
    starts.push(cps.length);
    for (const ch of name) cps.push(ch.codePointAt(0)!);
    cells.push(cell);
  }
  starts.push(cps.length);
  return { mined: mineGrams({ cps: Int32Array.from(cps), starts: Int32Array.from(starts), cellOf: Int32Array.from(cells) }, threshold), ids };
}

const sortedEntries = <V>(m: Map<string, V>): Array<[string, V]> => [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const canonical = (m: GramModel) => ({
  df: sortedEntries(m.df),
  cells: sortedEntries(m.cells).map(([g, c]) => [g, [...c].sort((a, b) => a[0] - b[0])]),
  holders: sortedEntries(m.holders).map(([g, h]) => [g, [...h].sort((a, b) => a - b)]),
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'grams-model-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the grams model', () => {
  it('updated by any changes of names and cells, writes what the miner writes from every name, and equals the model built from them', () => {
    // How often the runs met what the update handles apart: grams rising into F, falling out of it, a scan.
    const met = { rose: 0, fell: 0, scanned: 0 };
    fc.assert(
      fc.property(
        fc.array(gramNameArb, { minLength: 0, maxLength: 40 }),
        fc.integer({ min: 0, max: 4 }),
        // Rounds of changes: participant ids (some new), each to a name and cell or to none.
        fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.option(gramNameArb, { nil: null })), { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (initial, threshold, rounds, saved) => {
          // Saved: the names in a NameTable, the state saved and loaded again after every round.
          let store: GramNameStore = saved ? NameTable.fromArrays(Int32Array.from(initial.keys()), Int32Array.from(initial, (n) => n.cell), initial.map((n) => n.name)) : new Map(initial.map((n, i) => [i, n]));
          const first = fullMine(store, threshold);
          let model = modelOf(store, threshold, first.mined.frequent);
          for (const round of rounds) {
            const byId = new Map<number, GramName | null>();
            for (const [id, after] of round) byId.set(id, after);
            const changes: GramNameChange[] = [...byId].map(([id, after]) => ({ id, before: store.get(id) ?? null, after }));
            const before = new Set(model.cells.keys());
            const update = updateModel(model, store, changes);
            const { mined, ids } = fullMine(store, threshold);
            const after = new Set(mined.frequent);
            if ([...after].some((g) => !before.has(g))) met.rose++;
            if ([...before].some((g) => !after.has(g))) met.fell++;
            if (update.scanned > 0) met.scanned++;
            expect(canonical(model)).toEqual(canonical(modelOf(store, threshold, mined.frequent)));
            // And from everything the miner counts, with no pass over the names.
            expect(canonical(modelOfMined(mined, threshold, ids, (c) => c))).toEqual(canonical(model));
            expect(filesOf(minedOfModel(model, ids), ids)).toEqual(filesOf(mined, ids));
            if (store instanceof NameTable) {
              const file = path.join(dir, 'grams-state');
              saveGramsState(file, { threshold, digest: 'd', tuples: [['x', null]], names: store.compact(), model });
              const back = loadGramsState(file)!;
              expect(back.digest).toBe('d');
              expect(back.tuples).toEqual([['x', null]]);
              expect([...back.names]).toEqual([...store].sort((a, b) => a[0] - b[0]));
              expect(canonical(back.model)).toEqual(canonical(model));
              store = back.names;
              model = back.model;
            }
          }
        },
      ),
      { numRuns: 400 },
    );
    expect(met.rose).toBeGreaterThan(50);
    expect(met.fell).toBeGreaterThan(50);
    expect(met.scanned).toBeGreaterThan(20);
  });
});
