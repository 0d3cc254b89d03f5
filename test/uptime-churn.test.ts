// What a probe-only cycle rewrites of one host's uptime (docs/snapshot-format.md, "Uptime"): the
// objects a render adds or changes against the render before it (what publish uploads), for renders of
// the same host data that differ only in the newest buckets, and over two simulated days of 15-minute
// cycles on the small demo's data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../src/api/json.js';
import { listRootPath } from '../src/api/paths.js';
import { RESOLUTIONS } from '../src/api/schemas/index.js';
import type { Db } from '../src/db/index.js';
import { ROLLUP_TABLES, type Resolution } from '../src/derive/hosts/rollup.js';
import { dayStart, HOUR, hourStart, monthStart } from '../src/derive/hosts/time.js';
import type { ListRoot } from '../src/edge/list-format.js';
import { RenderContext } from '../src/render/context.js';
import { HOSTS_RENDERERS } from '../src/render/routes/hosts.js';
import { DirectorySink } from '../src/render/sink.js';
import { copyOfDb, derivedSmallDemo, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';
import { readStoredJson } from '../src/render/stored.js';

const CYCLE_MS = 15 * 60_000;
const bucketStart = (r: Resolution, ms: number): number => (r === 'hourly' ? hourStart(ms) : r === 'daily' ? dayStart(ms) : monthStart(ms));

let db: Db;
let nowMs: number;
let host: { id: number; hostname: string };
let out: string;

beforeAll(async () => {
  // The small demo derived once per run (test/helpers/demo-fixture.ts), copied.
  db = copyOfDb((await derivedSmallDemo()).db).open();
  nowMs = Date.parse(smallDemo().now);
  // The probed host with the most hourly buckets; the others leave the table, so that the family's
  // renderer renders this one host.
  host = db
    .prepare("SELECT h.id, h.hostname FROM hosts h JOIN uptime_hourly u ON u.host_id = h.id WHERE h.role IS NOT NULL GROUP BY h.id ORDER BY count(*) DESC, h.hostname LIMIT 1")
    .get() as { id: number; hostname: string };
  db.prepare('DELETE FROM hosts WHERE id <> ?').run(host.id);
  for (const t of Object.values(ROLLUP_TABLES)) {
    db.exec(`CREATE TEMP TABLE full_${t} AS SELECT * FROM ${t} WHERE host_id = ${host.id}`);
    db.exec(`DELETE FROM ${t} WHERE host_id <> ${host.id}`);
  }
  out = tempDir('uptime-churn-');
}, 120_000);

afterAll(() => {
  db?.close();
});

/** Renders the host's uptime at `atMs`; returns the manifest (path -> sha256). */
function render(atMs: number): Map<string, string> {
  const sink = new DirectorySink(out);
  HOSTS_RENDERERS['hosts.uptime']!(new RenderContext(db, atMs, sink, { chunkMaxItems: 1000, chunkMaxBytes: 65_536 }, jsonBody));
  const m = new Map<string, string>();
  for (const e of sink.manifest()) m.set(e.path, e.sha256);
  sink.close();
  return m;
}

/** The objects of `b` that `a` lacks or holds with other bytes. */
const changed = (a: Map<string, string>, b: Map<string, string>): string[] => [...b].filter(([p, sha]) => a.get(p) !== sha).map(([p]) => p);

const roots = (): string[] => RESOLUTIONS.map((r) => listRootPath('hosts.uptime', [host.hostname, r]));
const exactPage = (): string => `v1/hosts/${host.hostname}/uptime.json`;

/** The host's data as of `t`: every bucket up to the one holding t, whose counts depend on `cycle`. */
function dataAt(t: number, cycle: number): void {
  for (const r of RESOLUTIONS) {
    const table = ROLLUP_TABLES[r];
    db.exec(`DELETE FROM ${table}`);
    db.prepare(`INSERT INTO ${table} SELECT * FROM full_${table} WHERE bucket_start <= ?`).run(t);
    db.prepare(`UPDATE ${table} SET up = up + ? WHERE bucket_start = ?`).run(1 + (cycle % 5), bucketStart(r, t));
  }
}

describe('uptime objects per probe-only cycle', () => {
  it('a change of the newest buckets only rewrites each resolution list root (and the exact first page)', () => {
    dataAt(nowMs, 0);
    const a = render(nowMs);
    const b = render(nowMs);
    expect(changed(a, b)).toEqual([]);
    // The newest bucket of every resolution changes (new counts), nothing else does.
    for (const r of RESOLUTIONS) {
      const t = ROLLUP_TABLES[r];
      const n = db.prepare(`UPDATE ${t} SET up = up + 3, down = down + 1 WHERE bucket_start = (SELECT max(bucket_start) FROM ${t})`).run().changes;
      expect(n).toBeGreaterThan(1);
    }
    const c = render(nowMs);
    expect(changed(b, c).sort()).toEqual([...roots(), exactPage()].sort());
    // The lists hold chunks besides the root, and the newest buckets lie in each root's head.
    const hourly = readStoredJson(`${out}/${roots()[0]}`) as ListRoot;
    expect(hourly.entries.length).toBeGreaterThan(3);
    expect(hourly.head!.keys[0]![0]).toBe(db.prepare('SELECT max(bucket_start) FROM uptime_hourly').pluck().get());
  });

  it('two simulated days of 15-minute cycles: the roots each cycle, a chunk now and then at the turn of an hour', () => {
    const cycles = 192;
    let prev: Map<string, string> | null = null;
    const listObjects: number[] = [];
    const atHour: number[] = [];
    const inHour: number[] = [];
    for (let i = 0; i <= cycles; i++) {
      const t = nowMs - (cycles - i) * CYCLE_MS;
      dataAt(t, i);
      const m = render(t);
      if (prev !== null) {
        const c = changed(prev, m);
        expect(c).toContain(exactPage());
        const lists = c.filter((p) => p !== exactPage());
        for (const r of roots()) expect(lists).toContain(r);
        listObjects.push(lists.length);
        (t % HOUR === 0 ? atHour : inHour).push(lists.length);
      }
      prev = m;
    }
    const avg = listObjects.reduce((s, n) => s + n, 0) / listObjects.length;
    console.log(
      `uptime of ${host.hostname}, ${cycles} cycles: list objects per cycle avg ${avg.toFixed(3)}, max ${Math.max(...listObjects)}; ` +
        `within an hour always ${[...new Set(inHour)].join('/')}; at the turn of an hour avg ${(atHour.reduce((s, n) => s + n, 0) / atHour.length).toFixed(2)}; plus the exact first page`,
    );
    // Within an hour only the open buckets change: the three roots.
    expect(new Set(inHour)).toEqual(new Set([3]));
    // An hour's turn moves the last hour out of the head: now and then the chunk after the head.
    expect(Math.max(...atHour)).toBeLessThanOrEqual(6);
    expect(avg).toBeLessThanOrEqual(3.25);
  }, 120_000);
});
