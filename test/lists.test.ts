// List chunks and indexes (src/render/lists.ts, src/edge/list-reader.ts): a composed page equals the
// same page computed directly over the ordered items, for random lists, chunk sizes, positions,
// filters and limits; whole walks give every item once; content-defined chunks keep unchanged chunks;
// lists with an inline head read the same as without, and keep their chunks when the front changes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareCodePoints, compareKeys, type Direction, type SortKey } from '../src/api/sort-keys.js';
import { fnv1a } from '../src/api/fnv1a.js';
import { buildIndex, ListWriter, rawChunkOf, type FileSink } from '../src/render/lists.js';
import { patchList, type PatchOp } from '../src/render/list-patch.js';
import { composePage, ListReader, scanReverse } from '../src/edge/list-reader.js';
import { facetCount, LIST_FORMAT, LIST_FORMAT_DERIVED, LIST_FORMAT_HEAD, type Chunk, type IndexEntry, type IndexNode, type ListRoot } from '../src/edge/list-format.js';
import { keyDerivation } from '../src/edge/derived-keys.js';
import { CELLS_DIRS, cellKey, expandParticipant, ID_INDEX_DIRS, listKey, listOrder, MAIN_LIST_SORTS, PARTICIPANT_KEYS, storeParticipant } from '../src/api/participants/plan.js';
import { orderDirs } from '../src/api/routes/request.js';
import type { ParticipantListItem } from '../src/api/schemas/index.js';

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

// ---------------------------------------------------------------------------------------------
// Lists with an inline head (format list@2, docs/snapshot-format.md "Head"): the reader treats the
// root's head as the first chunk, for lists with and without one; the writer chunks them from the end,
// so new items at the front and changed open items leave the chunks behind the head alone.

interface HeadCase {
  items: Item[];
  maxItems: number;
  maxBytes: number;
  /** Items with t at or above this are open (always in the head); null: no open items. */
  openFrom: number | null;
  headBytes: number;
  withHead: boolean;
}

const headCaseArb: fc.Arbitrary<HeadCase> = fc.record({
  // Lengths spread evenly over 0..400 (left to itself fast-check keeps arrays short).
  items: fc.integer({ min: 0, max: 400 }).chain((n) => itemsArbOf(n, n)),
  maxItems: fc.integer({ min: 1, max: 40 }),
  maxBytes: fc.integer({ min: 150, max: 3000 }),
  openFrom: fc.option(fc.integer({ min: 0, max: 52 })),
  headBytes: fc.integer({ min: 100, max: 2000 }),
  withHead: fc.boolean(),
});

function writeCase(c: HeadCase, items = c.items, openFrom = c.openFrom): { sink: MemSink; root: ListRoot } {
  const sink = new MemSink();
  const w = new ListWriter(sink, {
    dirs: DIRS,
    maxItems: c.maxItems,
    maxBytes: c.maxBytes,
    facetFields: ['status'],
    head: c.withHead ? { open: openFrom === null ? undefined : (k) => (k[0] as number) >= openFrom, maxBytes: c.headBytes } : undefined,
  });
  for (const i of items) w.add(i, keyOf(i), { status: [i.status] });
  return { sink, root: w.finish('i/test.json') };
}

/** The level-0 entries of a list in list order (the chunks), read straight from the sink. */
function chunkEntries(sink: MemSink, root: ListRoot): IndexEntry[] {
  const out: IndexEntry[] = [];
  const visit = (entries: readonly IndexEntry[], level: number): void => {
    for (const e of entries) {
      if (level === 0) out.push(e);
      else visit((JSON.parse(new TextDecoder().decode(sink.files.get(e.path)!)) as IndexNode).entries, level - 1);
    }
  };
  visit(root.entries, root.level);
  return out;
}

const after = (k: SortKey | null) => (x: SortKey): boolean => k === null || compareKeys(x, k, DIRS) > 0;
const statusCounts = (xs: readonly Item[]): Record<string, number> => {
  const m: Record<string, number> = {};
  for (const x of xs) m[x.status] = (m[x.status] ?? 0) + 1;
  return m;
};

describe('lists with an inline head', () => {
  it('the reader gives the same items, counts, first and last keys, scans both ways and positions as the plain list', async () => {
    await fc.assert(
      fc.asyncProperty(headCaseArb, fc.nat(), fc.integer({ min: 1, max: 30 }), fc.option(fc.constantFrom('open' as const, 'closed' as const)), async (c, pick, limit, status) => {
        const { sink, root } = writeCase(c);
        const list = (await ListReader.open(sink.read, 'i/test.json'))!;
        const items = c.items;
        expect(root.format).toBe(c.withHead ? LIST_FORMAT_HEAD : LIST_FORMAT);
        expect(list.root.count).toBe(items.length);
        expect(list.root.counts?.status ?? {}).toEqual(statusCounts(items));
        // The head and the chunks partition the list, in order; entry counts, first and last keys hold.
        const head = list.head;
        const parts: Array<{ entry: IndexEntry; keys: SortKey[] }> = [];
        if (head !== null) parts.push({ entry: list.headEntry!, keys: head.keys });
        for (const e of chunkEntries(sink, root)) parts.push({ entry: e, keys: (JSON.parse(new TextDecoder().decode(sink.files.get(e.path)!)) as Chunk).keys });
        expect(parts.flatMap((p) => p.keys)).toEqual(items.map(keyOf));
        for (const p of parts) {
          expect(p.keys.length).toBeGreaterThan(0);
          expect([p.entry.first, p.entry.last, p.entry.count]).toEqual([p.keys[0], p.keys[p.keys.length - 1], p.keys.length]);
        }
        if (head !== null) {
          let at = 0;
          expect(list.headEntry!.counts?.status ?? {}).toEqual(statusCounts(items.slice(0, head.keys.length)));
          // Every open item is in the head; what follows them is at most headBytes.
          const open = c.openFrom === null ? 0 : items.filter((i) => i.t >= c.openFrom!).length;
          expect(head.keys.length).toBeGreaterThanOrEqual(open);
          for (let j = open; j < head.keys.length; j++) at += JSON.stringify(head.items[j]).length + JSON.stringify(head.keys[j]).length + 2;
          expect(at).toBeLessThanOrEqual(c.headBytes);
        }
        if (!c.withHead) expect(head).toBeNull();

        // Positions: a key of the list, or a key between (t + 0.5).
        const cursor: SortKey | null = items.length === 0 || pick % 4 === 0 ? null : pick % 4 === 1 ? [items[pick % items.length]!.t + 0.5, ''] : keyOf(items[pick % items.length]!);
        const start = after(cursor);
        const rest = items.filter((i) => start(keyOf(i)));
        const before = items.filter((i) => !start(keyOf(i)));
        const scanned: Item[] = [];
        for await (const { item } of list.scan({ start })) scanned.push(item as Item);
        expect(scanned).toEqual(rest);
        const back: Item[] = [];
        for await (const { item } of list.scanBackward({ start })) back.push(item as Item);
        expect(back).toEqual([...before].reverse());
        // With a filter and the skip rule of its counts (the head's included).
        const match = (x: unknown): boolean => status === null || (x as Item).status === status;
        const page = await composePage(list, { start, match, skip: status === null ? undefined : (e) => facetCount(e.counts, 'status', status) === 0, limit });
        const wanted = rest.filter(match);
        expect(page.items).toEqual(wanted.slice(0, limit));
        expect(page.more).toBe(wanted.length > limit);
        const back2: Item[] = [];
        for await (const { item } of list.scanBackward({ start, skip: status === null ? undefined : (e) => facetCount(e.counts, 'status', status) === 0 })) if (match(item)) back2.push(item as Item);
        expect(back2).toEqual([...before].reverse().filter(match));
        expect(Object.fromEntries(await list.countBefore(start, 'status', (x) => (x as Item).status))).toEqual(statusCounts(before));
        const k: SortKey = cursor ?? [pick % 60, String(pick)];
        const next = items.find((i) => after(k)(keyOf(i)));
        expect(await list.keyAfter(k)).toEqual(next === undefined ? null : keyOf(next));
      }),
      { numRuns: 300 },
    );
  });

  it('new items at the front and changes of open items keep every chunk behind the first', async () => {
    await fc.assert(
      fc.property(headCaseArb, fc.nat(), fc.integer({ min: 0, max: 5 }), (c0, cut, later) => {
        const c = { ...c0, withHead: true };
        const items = c.items;
        if (items.length === 0) return;
        // Before: the older part of the list, its newest items open from openFrom.
        const s = cut % items.length;
        const openFrom = c.openFrom ?? items[s]!.t;
        const a = writeCase(c, items.slice(s), openFrom);
        // After: the items before it added at the front, the open boundary moved on (never back).
        const b = writeCase(c, items, openFrom + later);
        const chunksA = chunkEntries(a.sink, a.root).map((e) => e.path);
        const chunksB = new Set(chunkEntries(b.sink, b.root).map((e) => e.path));
        for (const p of chunksA.slice(1)) expect(chunksB.has(p)).toBe(true);
        // The open items change (other notes): the chunks stay, the root alone differs.
        const changed = items.slice(s).map((i) => (i.t >= openFrom ? { ...i, note: `${i.note}~` } : i));
        const d = writeCase(c, changed, openFrom);
        expect(chunkEntries(d.sink, d.root).map((e) => e.path)).toEqual(chunksA);
        expect([...d.sink.files.keys()].filter((p) => !a.sink.files.has(p))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Lists patched in place (src/render/list-patch.ts): removing, replacing and inserting items in the
// previous build's list gives byte for byte the list a full write of the new items gives, and reads
// only the chunks around the changes.

interface PatchCase {
  items: Item[];
  maxItems: number;
  maxBytes: number;
  minItems: number | null;
  entryCounts: boolean;
  /** Per item: 0 keep, 1 remove, 2 replace (new note and status). */
  fate: number[];
  added: Item[];
  /** ListWriterOptions.indexFanout (the default's when absent). */
  indexFanout?: number;
}

const patchCaseArb: fc.Arbitrary<PatchCase> = fc
  .record({
    items: fc.integer({ min: 0, max: 600 }).chain((n) => itemsArbOf(n, n)),
    maxItems: fc.integer({ min: 1, max: 30 }),
    maxBytes: fc.integer({ min: 150, max: 3000 }),
    minItems: fc.option(fc.integer({ min: 1, max: 12 })),
    entryCounts: fc.boolean(),
    few: fc.boolean(),
    added: itemsArbOf(0, 30),
    seed: fc.integer(),
  })
  .map((r) => {
    // Few changes (the cycle's case) or many.
    let x = r.seed >>> 0;
    const rnd = (): number => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8) / (1 << 24);
    const p = r.few ? 0.01 : 0.2;
    const fate = r.items.map(() => (rnd() < p ? (rnd() < 0.5 ? 1 : 2) : 0));
    const have = new Set(r.items.map((i) => `${i.t}|${i.id}`));
    return { ...r, fate, added: (r.few ? r.added.slice(0, 3) : r.added).filter((i) => !have.has(`${i.t}|${i.id}`)) };
  });

describe('a chunk read with its items as written (rawChunkOf)', () => {
  it('gives each key parsed and as JSON, and each item as the JSON text it was written as, whatever the values', () => {
    const keyArb = fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.double({ noNaN: true, noDefaultInfinity: true })), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(fc.tuple(keyArb, fc.jsonValue()), { maxLength: 20 }), (rows) => {
        const keys = rows.map(([k]) => JSON.stringify(k));
        const items = rows.map(([, v]) => JSON.stringify(v));
        // As writeChunk writes it.
        const text = `{"keys":[${keys.join(',')}],"items":[${items.join(',')}]}`;
        const raw = rawChunkOf(text);
        expect(raw.keyJsons).toEqual(keys);
        expect(raw.items).toEqual(items);
        expect(raw.keys).toEqual(keys.map((k) => JSON.parse(k) as unknown));
        // Another layout of the same JSON is parsed: the same texts.
        const spaced = rawChunkOf(JSON.stringify({ keys: rows.map(([k]) => k), items: rows.map(([, v]) => v) }, null, 1));
        expect(spaced.items).toEqual(items);
        expect(spaced.keyJsons).toEqual(keys);
      }),
      { numRuns: 300 },
    );
  });
});

describe('lists patched in place', () => {
  const optsOf = (c: PatchCase) => ({
    dirs: DIRS,
    maxItems: c.maxItems,
    maxBytes: c.maxBytes,
    facetFields: ['status'],
    entryCounts: c.entryCounts,
    ...(c.minItems === null ? {} : { minItems: c.minItems }),
    ...(c.indexFanout === undefined ? {} : { indexFanout: c.indexFanout }),
  });
  const writeItems = (c: PatchCase, items: readonly Item[]): { sink: MemSink; root: ListRoot } => {
    const sink = new MemSink();
    const w = new ListWriter(sink, optsOf(c));
    for (const i of items) w.add(i, keyOf(i), { status: [i.status] });
    return { sink, root: w.finish('i/test.json') };
  };
  const decode = (b: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(b));

  /** Patches the list of c.items with c's changes and checks it against a full write of the new items. */
  const checkPatch = (c: PatchCase, written?: { sink: MemSink; root: ListRoot }) => {
    const before = written ?? writeItems(c, c.items);
    const next: Item[] = [];
    const ops: PatchOp[] = [];
    c.items.forEach((i, n) => {
      const key = keyOf(i);
      if (c.fate[n] === 1) ops.push({ key, keyJson: JSON.stringify(key) });
      else if (c.fate[n] === 2) {
        const r: Item = { ...i, note: `${i.note}*`, status: i.status === 'open' ? 'closed' : 'open' };
        next.push(r);
        ops.push({ key, keyJson: JSON.stringify(key), json: JSON.stringify(r), facets: { status: [r.status] } });
      } else next.push(i);
    });
    for (const a of c.added) {
      next.push(a);
      ops.push({ key: keyOf(a), keyJson: JSON.stringify(keyOf(a)), json: JSON.stringify(a), facets: { status: [a.status] } });
    }
    next.sort((x, y) => compareKeys(keyOf(x), keyOf(y), DIRS));
    ops.sort((x, y) => compareKeys(x.key, y.key, DIRS));
    const full = writeItems(c, next);

    const sink = new MemSink();
    for (const [p, b] of before.sink.files) sink.files.set(p, b);
    const held = new Set(before.sink.files.keys());
    const r = patchList({
      root: before.root,
      read: (p) => decode(before.sink.files.get(p)!),
      // The chunks' items as written, as a build reads them (src/render/context.ts readPreviousChunk).
      readChunk: (p) => rawChunkOf(new TextDecoder().decode(before.sink.files.get(p)!)),
      ops,
      opts: optsOf(c),
      sink,
      facetsOf: (item) => ({ status: [(item as Item).status] }),
      holds: (p) => held.has(p),
    });
    expect(r.root).toEqual(full.root);
    expect(JSON.stringify(r.root)).toBe(JSON.stringify(full.root));
    const fullPaths = [...full.sink.files.keys()].filter((p) => p.startsWith('c/')).sort();
    expect([...new Set(r.paths)].sort()).toEqual(fullPaths);
    for (const p of fullPaths) expect(sink.files.get(p)).toEqual(full.sink.files.get(p));
    const chunks = chunkEntries(before.sink, before.root).length;
    expect(r.reads).toBeLessThanOrEqual(chunks);
    return { r, chunks, full, before };
  };

  it('equals a full write of the new items, file for file, and reads only around the changes', () => {
    let fewReads = 0;
    let fewChunks = 0;
    fc.assert(
      fc.property(patchCaseArb, (c) => {
        const { r, chunks } = checkPatch(c);
        if (c.fate.filter((f) => f !== 0).length + c.added.length <= 2 && chunks >= 20) {
          fewReads += r.reads;
          fewChunks += chunks;
        }
      }),
      // A fixed seed: the read ratio below is a figure of these 150 cases, not a bound of every list.
      { numRuns: 150, seed: 20261124 },
    );
    // A change or two reads a few chunks, not the list (a full read would be 1).
    expect(fewChunks).toBeGreaterThan(0);
    expect(fewReads / fewChunks).toBeLessThan(0.5);
  });

  // A list of about 500 chunks under several inner index nodes (content-defined chunks of about 16
  // items): a few changes anywhere, and items added past either end. The nodes over unchanged runs of
  // chunks are the earlier ones; a level's last node, which ended with its level, is cut again when
  // items follow it.
  it('with inner index nodes: equals a full write, taking the earlier nodes over unchanged chunks', () => {
    let x = 20261128;
    const rnd = (): number => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8) / (1 << 24);
    const big: Item[] = Array.from({ length: 8_000 }, (_, i) => ({ t: Math.floor(rnd() * 50), id: `i${i}`, status: rnd() < 0.5 ? ('open' as const) : ('closed' as const), note: 'x'.repeat(Math.floor(rnd() * 40)) }));
    big.sort((a, b) => compareKeys(keyOf(a), keyOf(b), DIRS));
    // The list ends after an item whose key is a chunk boundary (src/render/lists.ts pendingOf): its last
    // chunk ended by content, so items added at the end leave every chunk in place, and the last inner
    // node, which ended with its level, must take the new chunks in.
    while (fnv1a(JSON.stringify(keyOf(big[big.length - 1]!))) % 16 !== 0) big.pop();
    const opts = { maxItems: 64, maxBytes: 100_000, minItems: 1, entryCounts: true };
    const before = writeItems({ items: big, ...opts, fate: [], added: [] }, big);
    let kept = 0;
    let nodes = 0;
    fc.assert(
      fc.property(
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.array(fc.record({ at: fc.constantFrom('front', 'end'), id: fc.string({ minLength: 1, maxLength: 6 }) }), { maxLength: 6 }),
        (changed, added) => {
          const fate = big.map(() => 0);
          for (const n of changed) fate[n % big.length] = 2;
          const extra = [...new Map(added.map((a) => [`${a.at}|${a.id}`, { t: a.at === 'front' ? 51 : -1, id: a.id, status: 'open' as const, note: 'added' }])).values()];
          const { r, full } = checkPatch({ items: big, ...opts, fate, added: extra }, before);
          expect(full.root.level).toBe(1);
          const n = [...full.sink.files.keys()].filter((p) => p.startsWith('c/')).length - chunkEntries(full.sink, full.root).length;
          expect(n).toBeGreaterThanOrEqual(4);
          // A change rewrites the node above it, and the next one where the chunks' boundaries move
          // across a node's end; so do the items added at either end.
          expect(r.nodesKept).toBeGreaterThanOrEqual(n - 2 * (new Set(changed.map((k) => k % big.length)).size + 2));
          kept += r.nodesKept;
          nodes += n;
        },
      ),
      { numRuns: 4, endOnFailure: true, examples: [[[], [{ at: 'end', id: 'zz' }]]] },
    );
    expect(kept).toBeGreaterThan(nodes / 3);
    expect(kept).toBeLessThan(nodes);
  });

  // The participant lists' wider index (PARTICIPANT_INDEX_FANOUT): about 16,000 chunks are two levels of
  // nodes under the root at the default fanout, one at 256.
  it('with a wider index (indexFanout): fewer levels, nodes of at most that many entries, and patched into the full write', () => {
    let x = 20261129;
    const rnd = (): number => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8) / (1 << 24);
    const items: Item[] = Array.from({ length: 48_000 }, (_, i) => ({ t: Math.floor(rnd() * 500), id: `i${i}`, status: rnd() < 0.5 ? ('open' as const) : ('closed' as const), note: '' }));
    items.sort((a, b) => compareKeys(keyOf(a), keyOf(b), DIRS));
    const base = { items, maxItems: 3, maxBytes: 100_000, minItems: 1, entryCounts: true, fate: [], added: [] };
    const narrow = writeItems(base, items);
    const wide = writeItems({ ...base, indexFanout: 256 }, items);
    expect(chunkEntries(wide.sink, wide.root)).toEqual(chunkEntries(narrow.sink, narrow.root));
    expect(chunkEntries(wide.sink, wide.root).length).toBeGreaterThan(13_000);
    expect(narrow.root.level).toBe(2);
    expect(wide.root.level).toBe(1);
    expect(wide.root.entries.length).toBeLessThanOrEqual(256);
    const nodes = wide.root.entries.map((e) => (decode(wide.sink.files.get(e.path)!) as IndexNode).entries.length);
    for (const n of nodes) expect(n).toBeLessThanOrEqual(256);
    // Ended by content once they hold 64, or at 256; the last one by its level's end.
    for (const n of nodes.slice(0, -1)) expect(n).toBeGreaterThanOrEqual(64);
    expect(nodes.reduce((a, b) => a + b, 0) / nodes.length).toBeGreaterThan(128);
    // Patched (a shorter list, still under nodes: the check compares every file with a full write's).
    const some = items.filter((_, i) => i % 8 === 0);
    const fate = some.map((_, i) => (i % 2_000 === 17 ? 2 : i % 2_801 === 3 ? 1 : 0));
    const { r, full } = checkPatch({ ...base, items: some, indexFanout: 256, fate, added: [{ t: 501, id: 'new', status: 'open', note: 'added' }] });
    expect(full.root.level).toBe(1);
    expect(r.nodesKept).toBeGreaterThan(0);
    expect(() => writeItems({ ...base, indexFanout: 100 }, items.slice(0, 10))).toThrow(/power of two/);
  });

  it('the writer builds its index as the chunks come (holding a node\'s entries, not the list\'s): the same nodes and root as buildIndex over all its chunks', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 700 }), fc.constantFrom(8, 16), fc.integer({ min: 0, max: 1_000_000 }), (n, fanout, seed) => {
        // One item a chunk: n chunks, from one under a root to three levels of nodes.
        const items: Item[] = Array.from({ length: n }, (_, i) => ({ t: 0, id: `${seed}-${String(i).padStart(4, '0')}`, status: i % 3 === 0 ? ('open' as const) : ('closed' as const), note: '' }));
        items.sort((a, b) => compareKeys(keyOf(a), keyOf(b), DIRS));
        const written = writeItems({ items, maxItems: 1, maxBytes: 100_000, minItems: null, entryCounts: true, indexFanout: fanout, fate: [], added: [] }, items);
        const chunks = chunkEntries(written.sink, written.root);
        expect(chunks).toHaveLength(n);
        const nodes = new MemSink();
        const built = buildIndex(chunks, { fields: ['status'], entryCounts: true, fanout }, (path, body) => nodes.put(path, body));
        expect(written.root.level).toBe(built.level);
        expect(written.root.entries).toEqual(built.entries);
        for (const [path, body] of nodes.files) expect(written.sink.files.get(path), path).toEqual(body);
        expect(written.root.level).toBe(n <= fanout ? 0 : built.level);
      }),
      { numRuns: 60 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// A list with a head written from its changed front plus the chunks of an earlier write behind it
// (ListWriter.addWritten; the uptime lists, docs/incremental.md "Uptime"): when every item older than
// a bound is unchanged and not open, the chunks from the first entry (not the first) whose entry
// before ends older than the bound are those of a full write, and the list written from the items
// before them plus these chunks is the full write, file for file.

describe('a list with a head continued by chunks already written', () => {
  it('equals a full write of the new items', () => {
    let kept = 0;
    fc.assert(
      fc.property(headCaseArb, fc.integer({ min: 0, max: 52 }), fc.integer({ min: 0, max: 52 }), fc.array(fc.nat(), { maxLength: 30 }), (c0, bound, later, edits) => {
        const c = { ...c0, withHead: true };
        const old = writeCase(c);
        // The items at or after the bound change (notes and statuses edited, some dropped, new ones);
        // the open items (at or after openFrom) too, and openFrom never falls below the bound.
        const openFrom = Math.max(bound, (c.openFrom ?? 0) + later);
        const front = c.items.filter((i) => i.t >= bound);
        const changed: Item[] = [];
        for (const [k, i] of front.entries()) {
          const e = edits[k % Math.max(1, edits.length)] ?? 0;
          if (e % 5 === 0) continue;
          changed.push(e % 3 === 0 ? { ...i, note: `${i.note}*`, status: i.status === 'open' ? 'closed' : 'open' } : i);
        }
        for (const e of edits.slice(0, 3)) changed.push({ t: bound + (e % 5), id: `new${e}`, status: 'open', note: 'n' });
        const items = [...new Map([...changed, ...c.items.filter((i) => i.t < bound)].map((i) => [`${i.t}|${i.id}`, i])).values()].sort((x, y) => compareKeys(keyOf(x), keyOf(y), DIRS));
        const full = writeCase(c, items, openFrom);
        const entries = chunkEntries(old.sink, old.root);
        let m = 1;
        while (m < entries.length && !((entries[m - 1]!.last[0] as number) < bound)) m++;
        const tail = entries.slice(m);
        const sink = new MemSink();
        for (const [p, b] of old.sink.files) if (p.startsWith('c/')) sink.files.set(p, b);
        const w = new ListWriter(sink, {
          dirs: DIRS,
          maxItems: c.maxItems,
          maxBytes: c.maxBytes,
          facetFields: ['status'],
          head: { open: (k) => (k[0] as number) >= openFrom, maxBytes: c.headBytes },
        });
        const first = tail[0]?.first;
        for (const i of items) if (first === undefined || compareKeys(keyOf(i), first, DIRS) < 0) w.add(i, keyOf(i), { status: [i.status] });
        w.addWritten(tail);
        const root = w.finish('i/test.json');
        expect(JSON.stringify(root)).toBe(JSON.stringify(full.root));
        for (const [p, b] of full.sink.files) expect(sink.files.get(p), p).toEqual(b);
        kept += tail.length;
      }),
      { numRuns: 200 },
    );
    expect(kept).toBeGreaterThan(100);
  });
});

describe('a list read in its reversed order, nulls still last (scanReverse)', () => {
  // Keys [a, b, id]: a and b may be null (nulls after every value in either direction), id is unique.
  interface Row {
    a: string | null;
    b: string | null;
    id: string;
    status: 'open' | 'closed';
  }
  const rowKey = (r: Row): SortKey => [r.a, r.b, r.id];
  const caseArb = fc.record({
    rows: fc.uniqueArray(
      fc.record({
        a: fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { freq: 4 }),
        b: fc.option(fc.constantFrom('x', 'y', 'z'), { freq: 3 }),
        id: fc.string({ minLength: 1, maxLength: 4 }),
        status: fc.constantFrom('open' as const, 'closed' as const),
      }),
      { selector: (r) => r.id, maxLength: 250 },
    ),
    dirs: fc.tuple(fc.constantFrom<Direction>('asc', 'desc'), fc.constantFrom<Direction>('asc', 'desc'), fc.constantFrom<Direction>('asc', 'desc')),
    // Which fields the reader is told may be null: none (a plain backward read), a, or a and b.
    nullable: fc.constantFrom(0, 1, 2),
    maxItems: fc.integer({ min: 1, max: 12 }),
    prefix: fc.constantFrom<SortKey>([], ['a'], ['c'], [null], ['b', 'x'], ['b', null], [null, null], [null, 'y']),
    pick: fc.nat(),
    cursorKind: fc.constantFrom('none', 'item', 'between'),
    status: fc.option(fc.constantFrom('open' as const, 'closed' as const)),
  });

  it('gives the items in the reversed order from any position, within a prefix, passing over skipped entries', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        // A reader told fewer nullable fields than the data has would be wrong: the data follows it.
        const rows = c.rows.map((r) => ({ ...r, a: c.nullable >= 1 ? r.a : (r.a ?? 'a'), b: c.nullable >= 2 ? r.b : (r.b ?? 'x') }));
        const dirs = [...c.dirs];
        const rev = dirs.map((d): Direction => (d === 'asc' ? 'desc' : 'asc'));
        rows.sort((x, y) => compareKeys(rowKey(x), rowKey(y), dirs));
        const sink = new MemSink();
        const w = new ListWriter(sink, { dirs, maxItems: c.maxItems, maxBytes: 1 << 20, facetFields: ['status'] });
        for (const r of rows) w.add(r, rowKey(r), { status: [r.status] });
        w.finish('i/rev.json');
        const list = (await ListReader.open(sink.read, 'i/rev.json'))!;
        const prefix = c.prefix;
        const inPrefix = (r: Row): boolean => prefix.every((v, i) => rowKey(r)[i] === v);
        const reversed = rows.filter(inPrefix).sort((x, y) => compareKeys(rowKey(x), rowKey(y), rev));
        // The cursor: none, an item's key, or a key between items (an id no item has).
        const at = reversed.length === 0 ? undefined : reversed[c.pick % reversed.length]!;
        const after: SortKey | undefined = c.cursorKind === 'none' || at === undefined ? undefined : c.cursorKind === 'item' ? rowKey(at) : [at.a, at.b, `${at.id}~`];
        const wanted = reversed.filter((r) => after === undefined || compareKeys(rowKey(r), after, rev) > 0).filter((r) => c.status === null || r.status === c.status);
        const got: Row[] = [];
        const skip = c.status === null ? undefined : (e: IndexEntry) => facetCount(e.counts, 'status', c.status!) === 0;
        const nullable = [c.nullable >= 1, c.nullable >= 2, false];
        for await (const { key, item } of scanReverse(list, { nullable, prefix, after, skip })) {
          const r = item as Row;
          expect(key).toEqual(rowKey(r));
          if (c.status === null || r.status === c.status) got.push(r);
        }
        expect(got).toEqual(wanted);
      }),
      { numRuns: 400 },
    );
  });

  it('reads no more chunks than a backward scan where no group holds a null block', async () => {
    // Groups by a (never null), b never null: the reversed order is the list read backward.
    const rows: Row[] = [];
    for (let n = 0; n < 400; n++) rows.push({ a: 'abcd'[n % 4]!, b: 'xyz'[n % 3]!, id: String(n).padStart(4, '0'), status: 'open' });
    rows.push({ a: null, b: null, id: 'zzzz', status: 'open' });
    const dirs: Direction[] = ['asc', 'asc', 'asc'];
    rows.sort((x, y) => compareKeys(rowKey(x), rowKey(y), dirs));
    const sink = new MemSink();
    const w = new ListWriter(sink, { dirs, maxItems: 10, maxBytes: 1 << 20, facetFields: ['status'] });
    for (const r of rows) w.add(r, rowKey(r), { status: [r.status] });
    w.finish('i/rev.json');
    const page = async (nullable: boolean[]): Promise<number> => {
      const list = (await ListReader.open(sink.read, 'i/rev.json'))!;
      let n = 0;
      for await (const _ of scanReverse(list, { nullable, after: ['c', 'y', '0100'] })) if (++n === 25) break;
      return list.stats.chunks;
    };
    // Resuming inside group c: its rest, then a seek for its (empty) null block, then the groups before.
    expect(await page([true, true, false])).toBeLessThanOrEqual((await page([false, false, false])) + 1);
  });
});

describe('lists whose chunks store no keys (list@3: the participant lists)', () => {
  // Participant items as the renderer stores them, with the fields their keys read (names, countries,
  // SMPs and seats null or shared, first-seen instants colliding).
  const participantsArb = fc
    .uniqueArray(
      fc.record({
        scheme: fc.constantFrom('0208', '0088', '9925'),
        value: fc.string({ minLength: 1, maxLength: 8 }),
        name: fc.option(fc.string({ maxLength: 12 })),
        country: fc.option(fc.constantFrom('BE', 'NL', 'DE')),
        registered: fc.boolean(),
        smp: fc.option(fc.constantFrom('smp.a.example', 'smp.b.example')),
        ap: fc.option(fc.constantFrom('PBE000001', 'PNL000002')),
        provenance: fc.constantFrom('directory' as const, 'discovered' as const),
        t: fc.integer({ min: 1_700_000_000, max: 1_700_000_040 }),
      }),
      { selector: (r) => `${r.scheme}::${r.value}`, maxLength: 400 },
    )
    .map((rs) =>
      rs.map(
        (r): ParticipantListItem => ({
          id: `${r.scheme}::${r.value}`,
          scheme: r.scheme,
          value: r.value,
          name: r.name,
          country: r.country,
          registered: r.registered,
          smp: r.smp,
          ap_seat_id: r.ap,
          ap_provider: r.ap === null ? null : 'Provider',
          provenance: r.provenance,
          first_seen_at: new Date(r.t * 1000).toISOString(),
        }),
      ),
    );
  /** Every derivation the participant lists use, with the key the renderer gives an item there and the list's directions. */
  const LISTS: Array<{ name: string; key: (i: ParticipantListItem) => SortKey; dirs: Direction[] }> = [
    ...MAIN_LIST_SORTS.map((sort) => ({ name: PARTICIPANT_KEYS.order(sort), key: (i: ParticipantListItem) => listKey(listOrder(sort), i), dirs: orderDirs(listOrder(sort)) })),
    { name: PARTICIPANT_KEYS.ids, key: (i) => [i.value, i.id], dirs: ID_INDEX_DIRS },
    { name: PARTICIPANT_KEYS.cells, key: cellKey, dirs: CELLS_DIRS },
  ];
  const dec = new TextDecoder();

  it('hold the items only, and read back the keys and items of the same list written with its keys, chunk for chunk', async () => {
    await fc.assert(
      fc.asyncProperty(participantsArb, fc.integer({ min: 0, max: LISTS.length - 1 }), fc.integer({ min: 1, max: 9 }), async (items, l, minItems) => {
        const { name, key, dirs } = LISTS[l]!;
        const sorted = [...items].sort((a, b) => compareKeys(key(a), key(b), dirs));
        const writeWith = (derivedKey: string | undefined): { sink: MemSink; root: ListRoot } => {
          const sink = new MemSink();
          const w = new ListWriter(sink, { dirs, maxItems: 40, maxBytes: 4000, minItems, ...(derivedKey === undefined ? {} : { derivedKey }) });
          for (const i of sorted) w.add(storeParticipant(i), key(i));
          return { sink, root: w.finish('i/test.json') };
        };
        const keyed = writeWith(undefined);
        const derived = writeWith(name);
        expect(keyed.root.format).toBe(LIST_FORMAT);
        expect(derived.root.format).toBe(LIST_FORMAT_DERIVED);
        expect(derived.root.key).toBe(name);
        // The same chunk boundaries and counts: only the chunks' bytes (and so their paths) differ.
        const shape = (s: { sink: MemSink; root: ListRoot }): unknown[] => chunkEntries(s.sink, s.root).map((e) => [e.first, e.last, e.count]);
        expect(shape(derived)).toEqual(shape(keyed));
        const keyOf = keyDerivation(name)!;
        const keyedChunks = chunkEntries(keyed.sink, keyed.root);
        chunkEntries(derived.sink, derived.root).forEach((e, n) => {
          const text = dec.decode(derived.sink.files.get(e.path)!);
          expect(Object.keys(JSON.parse(text) as object)).toEqual(['items']);
          // A build reads a kept chunk's items as written and their keys derived (list-patch).
          const raw = rawChunkOf(text, keyOf);
          const was = rawChunkOf(dec.decode(keyed.sink.files.get(keyedChunks[n]!.path)!));
          expect(raw).toEqual(was);
        });
        // The shim's reader derives the keys: the same items and keys in both directions.
        const all = async (s: MemSink, backward: boolean): Promise<unknown[]> => {
          const r = (await ListReader.open(s.read, 'i/test.json'))!;
          const out: unknown[] = [];
          for await (const x of backward ? r.scanBackward() : r.scan()) out.push([x.key, x.item]);
          return out;
        };
        expect(await all(derived.sink, false)).toEqual(sorted.map((i) => [key(i), storeParticipant(i)]));
        expect(await all(derived.sink, true)).toEqual(await all(keyed.sink, true));
      }),
      { numRuns: 150 },
    );
  });

  it('store each item without its id, which expands back as scheme::value; an item stored before (the id first) expands the same', () => {
    fc.assert(
      fc.property(participantsArb, (items) => {
        for (const i of items) {
          const stored = storeParticipant(i);
          expect(stored).toHaveLength(10);
          expect(expandParticipant(stored)).toEqual(i);
          expect(expandParticipant([i.id, ...stored])).toEqual(i);
        }
      }),
      { numRuns: 50 },
    );
    const i = { id: '0208::0123', scheme: '0208', value: '0123', name: null, country: null, registered: false, smp: null, ap_seat_id: null, ap_provider: null, provenance: 'discovered' as const, first_seen_at: '2026-01-01T00:00:00.000Z' };
    expect(() => storeParticipant({ ...i, id: '0208::0124' })).toThrow(/not 0208::0123/);
  });

  it('are patched in place into the list a full write gives', () => {
    fc.assert(
      fc.property(participantsArb, fc.integer({ min: 0, max: LISTS.length - 1 }), fc.integer(), (items, l, seed) => {
        const { name, key, dirs } = LISTS[l]!;
        const opts = { dirs, maxItems: 30, maxBytes: 3000, minItems: 4, derivedKey: name };
        const sorted = (xs: ParticipantListItem[]): ParticipantListItem[] => [...xs].sort((a, b) => compareKeys(key(a), key(b), dirs));
        const writeAll = (xs: ParticipantListItem[]): { sink: MemSink; root: ListRoot } => {
          const sink = new MemSink();
          const w = new ListWriter(sink, opts);
          for (const i of sorted(xs)) w.add(storeParticipant(i), key(i));
          return { sink, root: w.finish('i/test.json') };
        };
        // Every fifth participant (by the seed) leaves, every seventh is renamed and so moves in a name order.
        const before = writeAll(items);
        const next: ParticipantListItem[] = [];
        const ops: PatchOp[] = [];
        items.forEach((i, n) => {
          const k = key(i);
          if ((n + seed) % 5 === 0) ops.push({ key: k, keyJson: JSON.stringify(k) });
          else if ((n + seed) % 7 === 0) {
            const r = { ...i, name: `${i.name ?? ''}x` };
            next.push(r);
            ops.push({ key: k, keyJson: JSON.stringify(k) });
            ops.push({ key: key(r), keyJson: JSON.stringify(key(r)), json: JSON.stringify(storeParticipant(r)) });
          } else next.push(i);
        });
        // A renamed participant keeps its key in the orders that do not read the name: one op per key.
        const byKey = new Map<string, PatchOp>();
        for (const op of ops) byKey.set(op.keyJson, op.json !== undefined || !byKey.has(op.keyJson) ? op : byKey.get(op.keyJson)!);
        const sortedOps = [...byKey.values()].sort((a, b) => compareKeys(a.key, b.key, dirs));
        const full = writeAll(next);
        const sink = new MemSink();
        for (const [p, b] of before.sink.files) sink.files.set(p, b);
        const r = patchList({
          root: before.root,
          read: (p) => JSON.parse(dec.decode(before.sink.files.get(p)!)) as unknown,
          readChunk: (p, keyOf) => rawChunkOf(dec.decode(before.sink.files.get(p)!), keyOf),
          ops: sortedOps,
          opts,
          sink,
          holds: (p) => before.sink.files.has(p),
        });
        expect(JSON.stringify(r.root)).toBe(JSON.stringify(full.root));
        for (const p of r.paths) expect(sink.files.get(p)).toEqual(full.sink.files.get(p));
      }),
      { numRuns: 150 },
    );
  });
});
