// List chunks and indexes (src/render/lists.ts, src/edge/list-reader.ts): a composed page equals the
// same page computed directly over the ordered items, for random lists, chunk sizes, positions,
// filters and limits; whole walks give every item once; content-defined chunks keep unchanged chunks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareCodePoints, compareKeys, type Direction, type SortKey } from '../src/api/keys.js';
import { ListWriter, type FileSink } from '../src/render/lists.js';
import { composePage, ListReader } from '../src/edge/list-reader.js';

class MemSink implements FileSink {
  files = new Map<string, Uint8Array>();
  put(path: string, body: Uint8Array): void {
    this.files.set(path, body);
  }
  read = async (path: string): Promise<Uint8Array | null> => this.files.get(path) ?? null;
}

interface Item {
  t: number;
  id: string;
  status: 'open' | 'closed';
  note: string;
}

const DIRS: Direction[] = ['desc', 'desc'];
const keyOf = (i: Item): SortKey => [i.t, i.id];

function itemsArbOf(minLength: number, maxLength: number): fc.Arbitrary<Item[]> {
  return fc
  .uniqueArray(
    fc.record({
      t: fc.integer({ min: 0, max: 50 }),
      id: fc.string({ minLength: 1, maxLength: 6 }),
      status: fc.constantFrom('open' as const, 'closed' as const),
      note: fc.string({ maxLength: 40 }),
    }),
    { selector: (i) => `${i.t}|${i.id}`, minLength, maxLength },
  )
  .map((a) => a.sort((x, y) => compareKeys(keyOf(x), keyOf(y), DIRS)));
}

const itemsArb = fc
  .uniqueArray(
    fc.record({
      t: fc.integer({ min: 0, max: 50 }),
      id: fc.string({ minLength: 1, maxLength: 6 }),
      status: fc.constantFrom('open' as const, 'closed' as const),
      note: fc.string({ maxLength: 40 }),
    }),
    { selector: (i) => `${i.t}|${i.id}`, maxLength: 400 },
  )
  .map((a) => a.sort((x, y) => compareKeys(keyOf(x), keyOf(y), DIRS)));

function write(items: Item[], maxItems: number, maxBytes: number): MemSink {
  const sink = new MemSink();
  const w = new ListWriter(sink, { dirs: DIRS, maxItems, maxBytes, facetFields: ['status'] });
  for (const i of items) w.add(i, keyOf(i), { status: [i.status] });
  w.finish('i/test.json');
  return sink;
}

describe('keys', () => {
  it('compares strings by code point (UTF-8 byte order), nulls last in both directions', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const bytes = Buffer.compare(Buffer.from(a), Buffer.from(b));
        expect(Math.sign(compareCodePoints(a, b))).toBe(Math.sign(bytes));
      }),
      { numRuns: 300 },
    );
    expect(compareKeys([null], ['a'], ['asc'])).toBeGreaterThan(0);
    expect(compareKeys([null], ['a'], ['desc'])).toBeGreaterThan(0);
    expect(compareKeys([2], [1], ['desc'])).toBeLessThan(0);
  });
});

describe('list chunks and index', () => {
  it('a composed page equals the direct page for random lists, positions, filters and limits', async () => {
    await fc.assert(
      fc.asyncProperty(
        itemsArb,
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 200, max: 3000 }),
        fc.integer({ min: 1, max: 30 }),
        fc.option(fc.constantFrom('open', 'closed')),
        fc.option(fc.integer({ min: 0, max: 50 })),
        fc.nat(),
        async (items, maxItems, maxBytes, limit, status, since, pick) => {
          const sink = write(items, maxItems, maxBytes);
          const list = (await ListReader.open(sink.read, 'i/test.json'))!;
          expect(list.root.count).toBe(items.length);
          const after = items.length > 0 && pick % 3 !== 0 ? keyOf(items[pick % items.length]!) : null;
          const match = (x: unknown): boolean => status === null || (x as Item).status === status;
          const page = await composePage(list, {
            start: after ? (k) => compareKeys(k, after, DIRS) > 0 : undefined,
            stop: since !== null ? (k) => (k[0] as number) < since : undefined,
            match,
            skip: status !== null ? (e) => (e.counts?.status?.[status] ?? 0) === 0 : undefined,
            limit,
          });
          const expected = items.filter((i) => (after === null || compareKeys(keyOf(i), after, DIRS) > 0) && (since === null || i.t >= since) && match(i));
          expect(page.items).toEqual(expected.slice(0, limit));
          expect(page.more).toBe(expected.length > limit);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('walking page by page gives every item exactly once, in order, with few files per page', async () => {
    const items = fc.sample(itemsArbOf(301, 400), { numRuns: 1, seed: 7 })[0]!;
    const sink = write(items, 10, 1000);
    const seen: Item[] = [];
    let after: SortKey | null = null;
    for (;;) {
      const list = (await ListReader.open(sink.read, 'i/test.json'))!;
      const cur = after;
      const page = await composePage(list, { start: cur ? (k) => compareKeys(k, cur, DIRS) > 0 : undefined, limit: 7 });
      seen.push(...(page.items as Item[]));
      // root + inner nodes + at most the chunks spanning 8 items
      expect(list.stats.chunks).toBeLessThanOrEqual(3);
      if (!page.more) break;
      after = page.keys[page.keys.length - 1]!;
    }
    expect(seen).toEqual(items);
  });

  it('changing one item rewrites only the chunks around it (content-defined boundaries)', () => {
    const items = fc.sample(itemsArbOf(351, 400), { numRuns: 1, seed: 11 })[0]!;
    const a = write(items, 1000, 2000);
    const changed = items.map((i, n) => (n === Math.floor(items.length / 2) ? { ...i, note: `${i.note}!changed` } : i));
    const b = write(changed, 1000, 2000);
    const chunksA = [...a.files.keys()].filter((p) => p.startsWith('c/'));
    const newInB = [...b.files.keys()].filter((p) => p.startsWith('c/') && !a.files.has(p));
    expect(chunksA.length).toBeGreaterThan(5);
    expect(newInB.length).toBeLessThanOrEqual(3);
  });
});
