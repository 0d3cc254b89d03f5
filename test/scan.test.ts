// The descriptor-driven list scan of the shim (src/edge/compose/scan.ts): for a list route declared
// only as data (order, eq and any filters, lower and upper bounds on the leading key field), a page of
// the stored list equals the same page computed directly over the ordered items, in both directions
// of the leading field, for random items, chunk sizes, filters, bounds, cursors and limits; entries
// whose counts rule the counted filter out are not read.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeys, type Direction, type SortKey } from '../src/api/sort-keys.js';
import { pageBody } from '../src/api/page.js';
import { cursorType, enumItem, enumType, limitType, listType, timestampType } from '../src/api/params.js';
import type { AnyRoute, ParamDef } from '../src/api/routes/types.js';
import { pageOf, type StoredList } from '../src/edge/compose/scan.js';
import { ListReader } from '../src/edge/list-reader.js';
import { ListWriter, type FileSink } from '../src/render/lists.js';

class MemSink implements FileSink {
  files = new Map<string, Uint8Array>();
  reads = 0;
  put(path: string, body: Uint8Array): void {
    this.files.set(path, body);
  }
  read = async (path: string): Promise<Uint8Array | null> => {
    this.reads++;
    return this.files.get(path) ?? null;
  };
}

interface Item {
  t: number;
  id: string;
  status: 'open' | 'closed';
  tags: string[];
}

const TAGS = ['a', 'b', 'c', 'd'];

function query<T>(type: ParamDef<T>['type']): ParamDef<T> {
  return { in: 'query', type, required: false, description: '', invalid: 'invalid-parameter' };
}

/** A list route of the shape the route table declares, leading field `t` in direction `dir`. */
function routeOf(dir: Direction): AnyRoute {
  return {
    id: 'test.list',
    method: 'GET',
    path: '/test',
    tag: 'test',
    summary: '',
    description: '',
    params: {
      status: query(enumType(['open', 'closed'])),
      tags: query(listType('tags', enumItem(TAGS, 'a tag'), false)),
      from: query(timestampType),
      to: query(timestampType),
      limit: { ...query(limitType), default: 50 },
      cursor: { ...query(cursorType), invalid: 'invalid-cursor' },
    },
    response: 'IncidentPage',
    contentType: 'application/json',
    keyless: false,
    paginated: true,
    exactFile: false,
    list: {
      partition: [],
      orders: { default: { fields: [{ field: 't', type: 'ts', dir }, { field: 'id', type: 'string', dir: 'asc' }] } },
      filters: [
        { param: 'status', facet: 'status', match: 'eq' },
        { param: 'tags', facet: 'tags', match: 'any' },
      ],
      bounds: [
        { param: 'from', field: 't', op: 'ge' },
        { param: 'to', field: 't', op: 'lt' },
      ],
      pagination: 'cursor',
    },
  };
}

const STORED: StoredList = {
  facet: (item, _key, facet) => (facet === 'tags' ? (item as Item).tags : (item as Item).status),
  counted: ['status'],
};

const itemsArb = fc.uniqueArray(
  fc.record({
    t: fc.integer({ min: 0, max: 60 }),
    id: fc.string({ minLength: 1, maxLength: 4 }),
    status: fc.constantFrom('open' as const, 'closed' as const),
    tags: fc.subarray(TAGS),
  }),
  { selector: (i) => `${i.t}|${i.id}`, maxLength: 300 },
);

const paramsArb = fc.record(
  {
    status: fc.constantFrom('open', 'closed'),
    tags: fc.subarray(TAGS, { minLength: 1 }),
    from: fc.integer({ min: 0, max: 60 }),
    to: fc.integer({ min: 0, max: 61 }),
  },
  { requiredKeys: [] },
);

describe('descriptor-driven list pages (scan.ts)', () => {
  it('equal the page computed over the ordered items, in both directions, for any filters, bounds, cursor and limit', async () => {
    await fc.assert(
      fc.asyncProperty(
        itemsArb,
        fc.constantFrom<Direction>('asc', 'desc'),
        paramsArb,
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 30 }),
        fc.option(fc.nat(), { nil: undefined }),
        async (raw, dir, p, limit, chunkItems, cursorAt) => {
          const route = routeOf(dir);
          const dirs: Direction[] = [dir, 'asc'];
          const keyOf = (i: Item): SortKey => [i.t, i.id];
          const items = [...raw].sort((x, y) => compareKeys(keyOf(x), keyOf(y), dirs));
          const sink = new MemSink();
          const w = new ListWriter(sink, { dirs, maxItems: chunkItems, maxBytes: 1 << 20, facetFields: ['status'] });
          for (const i of items) w.add(i, keyOf(i), { status: [i.status] });
          w.finish('i/test.json');
          const list = (await ListReader.open(sink.read, 'i/test.json'))!;

          const cursor = cursorAt === undefined || items.length === 0 ? undefined : keyOf(items[cursorAt % items.length]!);
          const params = { ...p, limit, cursor: cursor === undefined ? undefined : { route: route.id, partition: [], key: cursor, hint: '', dir: 'next' as const } };
          const got = await pageOf(route, params, list, STORED);

          const want = items.filter(
            (i) =>
              (cursor === undefined || compareKeys(keyOf(i), cursor, dirs) > 0) &&
              (p.status === undefined || i.status === p.status) &&
              (p.tags === undefined || i.tags.some((t) => p.tags!.includes(t))) &&
              (p.from === undefined || i.t >= p.from) &&
              (p.to === undefined || i.t < p.to),
          );
          const page = want.slice(0, limit);
          expect(got).toEqual({ status: 200, body: pageBody(route.id, [], page, page.map(keyOf), want.length > limit) });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('passes over chunks whose counts hold no accepted value of a counted filter', async () => {
    const route = routeOf('desc');
    const items: Item[] = Array.from({ length: 400 }, (_, n) => ({ t: 1000 - n, id: 'x', status: n === 390 ? 'open' : 'closed', tags: [] }));
    const sink = new MemSink();
    const w = new ListWriter(sink, { dirs: ['desc', 'asc'], maxItems: 10, maxBytes: 1 << 20, facetFields: ['status'] });
    for (const i of items) w.add(i, [i.t, i.id], { status: [i.status] });
    w.finish('i/test.json');
    const list = (await ListReader.open(sink.read, 'i/test.json'))!;
    const got = await pageOf(route, { status: 'open', limit: 5 }, list, STORED);
    expect(got.status === 200 ? got.body : null).toEqual(pageBody(route.id, [], [items[390]], [[610, 'x']], false));
    // The root, and the one chunk that holds the match: 39 of 40 chunks are passed over unread.
    expect(list.stats.chunks).toBe(1);
  });
});
