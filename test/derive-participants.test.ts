// The participants step on the small demo scenario: its events against the ground truth, views and
// histories against the raw feed records, list orders and filters, and incremental = full.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareKeys, type Direction, type SortKey } from '../src/api/sort-keys.js';
import { getMeta, setMeta, type Db } from '../src/db/index.js';
import { PARTICIPANT_EVENT_TYPES } from '../src/derive/events.js';
import { runDerive, type DeriveSummary } from '../src/derive/index.js';
import { FIRST_SWEEP_META_KEY, firstSweepEnd } from '../src/derive/participants/baseline.js';
import {
  participantEvents,
  participantHistory,
  participantList,
  participantView,
  PARTICIPANT_SORTS,
  type ParticipantListItem,
  type ParticipantListKey,
  type ParticipantSort,
} from '../src/derive/participants/read.js';
import { participantsStep } from '../src/derive/participants/step.js';
import { statsStep } from '../src/derive/participants/stats.js';
import { DOCTYPES } from '../src/demo/config.js';
import { runIngest } from '../src/feeds/ingest.js';
import { seatIdFromSubject } from '../src/feeds/ids.js';
import { parseFeedLine, type DirectoryRecord, type SmlRecord, type SmpRecord } from '../src/feeds/schema.js';
import { openDb } from '../src/db/index.js';
import { copyOfSmallDemoDb, smallDemo } from './helpers/demo-fixture.js';
import { tempDir } from './helpers/feeds.js';

const STEPS = [participantsStep, statsStep];

interface GtEvent {
  type: string;
  observed_at: string;
  participant: string | null;
  change: string;
  seats: string[];
  hosts: string[];
}
interface GtChange {
  id: string;
  kind: string;
  observed_at: string;
  participant?: string;
  provenance?: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown>;
}

const ms = (iso: string): number => Date.parse(iso);
/** The ground truth names document types by their scenario codes; the feeds carry the Peppol ids. */
const doctypeIds = (codes: unknown): string[] => (codes as string[]).map((c) => DOCTYPES.find((d) => d.code === c)!.doctype).sort();

/** Every directory, sml and smp record of the given participants, from the feed files, in feed order. */
function rawRecords(feeds: string, pids: ReadonlySet<string>): Map<string, { dir: DirectoryRecord[]; sml: SmlRecord[]; smp: SmpRecord[] }> {
  const out = new Map<string, { dir: DirectoryRecord[]; sml: SmlRecord[]; smp: SmpRecord[] }>();
  for (const p of pids) out.set(p, { dir: [], sml: [], smp: [] });
  const index = JSON.parse(fs.readFileSync(path.join(feeds, 'feeds.json'), 'utf8')) as { segments: Array<{ path: string }> };
  for (const s of index.segments) {
    if (!/\/(directory|sml|smp)-/.test(s.path)) continue;
    for (const line of fs.readFileSync(path.join(feeds, s.path), 'utf8').split('\n')) {
      if (line.length === 0) continue;
      const r = parseFeedLine(line);
      if (!r.ok) throw new Error(r.error);
      const rec = r.record;
      if (rec.kind !== 'directory' && rec.kind !== 'sml' && rec.kind !== 'smp') continue;
      const e = out.get(rec.participant.id);
      if (!e) continue;
      if (rec.kind === 'directory') e.dir.push(rec);
      else if (rec.kind === 'sml') e.sml.push(rec);
      else e.smp.push(rec);
    }
  }
  for (const e of out.values()) for (const l of [e.dir, e.sml, e.smp]) (l as Array<{ at: string }>).sort((a, b) => ms(a.at) - ms(b.at));
  return out;
}

/** Rows of a query as JSON lines (for table-by-table comparison). */
function dump(db: Db, sql: string): string[] {
  return (db.prepare(sql).all() as unknown[]).map((r) => JSON.stringify(r));
}

const TYPES_SQL = PARTICIPANT_EVENT_TYPES.map((t) => `'${t}'`).join(', ');

/** Everything the participants and stats steps own, in a deterministic order. */
function snapshot(db: Db): Record<string, string[]> {
  return {
    participant_list: dump(db, 'SELECT * FROM participant_list ORDER BY participant_id'),
    participant_history: dump(db, 'SELECT * FROM participant_history ORDER BY participant_id, valid_from, fact'),
    participant_as_of: dump(db, 'SELECT * FROM participant_as_of'),
    participant_facets: dump(db, 'SELECT * FROM participant_facets ORDER BY facet, value'),
    participant_totals: dump(db, 'SELECT * FROM participant_totals'),
    events: dump(db, `SELECT * FROM events WHERE type IN (${TYPES_SQL}) ORDER BY id`),
    event_hosts: dump(db, `SELECT h.* FROM event_hosts h JOIN events e ON e.id = h.event_id WHERE e.type IN (${TYPES_SQL}) ORDER BY h.event_id, h.hostname`),
    event_seats: dump(db, `SELECT s.* FROM event_seats s JOIN events e ON e.id = s.event_id WHERE e.type IN (${TYPES_SQL}) ORDER BY s.event_id, s.seat_id`),
    first_sweep: [String(getMeta(db, FIRST_SWEEP_META_KEY))],
  };
}

describe('participants step on the small demo', () => {
  let db: Db;
  let summary: DeriveSummary;
  const fx = smallDemo();
  const gt = fx.groundTruth();
  const gtEvents = (gt.events as GtEvent[]).filter((e) => (PARTICIPANT_EVENT_TYPES as readonly string[]).includes(e.type));
  const changes = gt.changes as GtChange[];

  beforeAll(() => {
    db = copyOfSmallDemoDb().open();
    summary = runDerive(db, { full: true }, STEPS);
    console.info(`full derive of the small demo: participants ${summary.steps.participants?.seconds}s, stats ${summary.steps.stats?.seconds}s`, summary.steps);
  });
  afterAll(() => db?.close());

  it('derives the same tables with the id ranges on two worker threads as in the step\'s own thread', () => {
    // The small demo is 3 ranges of 2,000 ids: fewer than POOL_MIN_JOBS, so the step derived them itself.
    expect(summary.steps.participants).toMatchObject({ workers: 0 });
    const copy = copyOfSmallDemoDb().open();
    try {
      const s = runDerive(copy, { full: true, deriveWorkers: 2 }, STEPS);
      expect(s.steps.participants).toMatchObject({ workers: 2, participants: summary.steps.participants!.participants, history_rows: summary.steps.participants!.history_rows, events: summary.steps.participants!.events });
      expect(snapshot(copy)).toEqual(snapshot(db));
    } finally {
      copy.close();
    }
  });

  it('emits exactly the ground truth participant events (type, participant, observed_at)', () => {
    const derived = (db.prepare(`SELECT e.type, p.pid, e.observed_at FROM events e JOIN participants p ON p.id = e.participant_id WHERE e.type IN (${TYPES_SQL})`).all() as Array<{ type: string; pid: string; observed_at: number }>).map(
      (r) => `${r.type}|${r.pid}|${new Date(r.observed_at).toISOString()}`,
    );
    const expected = gtEvents.map((e) => `${e.type}|${e.participant}|${new Date(ms(e.observed_at)).toISOString()}`);
    expect(new Set(derived).size).toBe(derived.length);
    const missing = expected.filter((x) => !derived.includes(x));
    const extra = derived.filter((x) => !expected.includes(x));
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
    expect(derived.length).toBe(expected.length);
    // Every one of the seven types occurs in the scenario.
    for (const t of PARTICIPANT_EVENT_TYPES) expect(expected.some((e) => e.startsWith(`${t}|`))).toBe(true);
  });

  it('marks exactly the participants first registered after the first sweep as joiners', () => {
    const joiners = (db.prepare("SELECT p.pid FROM events e JOIN participants p ON p.id = e.participant_id WHERE e.type = 'participant_registered' AND json_extract(e.payload, '$.joiner') = 1").pluck().all() as string[]).sort();
    const expected = changes.filter((c) => c.kind === 'registration').map((c) => c.participant!).sort();
    expect(joiners).toEqual(expected);
    expect(joiners.length).toBe(gt.counts.joiners);
    // Re-registrations are registrations but not joiners.
    const rejoin = changes.find((c) => c.kind === 're_registration')!;
    const ev = [...participantEvents(db, rejoin.participant!)].map((e) => e.item).find((e) => e.type === 'participant_registered')!;
    expect(ev.payload).toEqual({ before: { registered: false, smp: null }, after: { registered: true, smp: rejoin.after.smp }, joiner: false });
  });

  it('finds the end of the first sweep from the SML observations and caches it once closed', () => {
    const end = firstSweepEnd(db)!;
    const baselineEnd = ms(gt.window.baseline_sweep_end as string);
    expect(end).toBeLessThan(baselineEnd);
    expect(end).toBeGreaterThanOrEqual(ms(gt.window.start as string));
    // It is the last SML observation before the baseline end, and nothing lies between it and the next sweep.
    expect(db.prepare('SELECT max(at) FROM sml_obs WHERE at < ?').pluck().get(baselineEnd)).toBe(end);
    expect(getMeta(db, FIRST_SWEEP_META_KEY)).toBe(String(end));
  });

  it('links events to the hosts and seats they concern, with before/after payloads matching the scenario', () => {
    const linked = (type: string): Array<{ pid: string; at: string; hosts: string[]; seats: string[]; payload: Record<string, unknown> }> =>
      (
        db
          .prepare(
            `SELECT p.pid, e.observed_at, e.payload,
               (SELECT json_group_array(hostname) FROM (SELECT hostname FROM event_hosts WHERE event_id = e.id ORDER BY hostname)) AS hosts,
               (SELECT json_group_array(seat_id) FROM (SELECT seat_id FROM event_seats WHERE event_id = e.id ORDER BY seat_id)) AS seats
             FROM events e JOIN participants p ON p.id = e.participant_id WHERE e.type = ?`,
          )
          .all(type) as Array<{ pid: string; observed_at: number; payload: string; hosts: string; seats: string }>
      ).map((r) => ({ pid: r.pid, at: new Date(r.observed_at).toISOString(), hosts: JSON.parse(r.hosts), seats: JSON.parse(r.seats), payload: JSON.parse(r.payload) }));
    const gtOf = (type: string, pid: string, at: string): GtEvent => gtEvents.find((e) => e.type === type && e.participant === pid && new Date(ms(e.observed_at)).toISOString() === at)!;
    const changeOf = (id: string): GtChange => changes.find((c) => c.id === id)!;

    for (const e of linked('participant_smp_changed')) {
      const g = gtOf('participant_smp_changed', e.pid, e.at);
      expect(e.hosts).toEqual([...g.hosts].sort());
      const c = changeOf(g.change);
      expect(e.payload).toEqual({ before: { smp: c.before!.smp }, after: { smp: c.after.smp } });
    }
    const seatChanges = linked('ap_seat_changed');
    expect(seatChanges.length).toBeGreaterThan(0);
    for (const e of seatChanges) {
      const g = gtOf('ap_seat_changed', e.pid, e.at);
      expect(e.seats).toEqual([...g.seats].sort());
      const c = changeOf(g.change);
      expect(e.payload).toEqual({ before: { seats: [c.before!.seat], seat: c.before!.seat }, after: { seats: [c.after.seat], seat: c.after.seat } });
    }
    for (const e of linked('endpoint_changed')) {
      const g = gtOf('endpoint_changed', e.pid, e.at);
      expect(e.hosts).toEqual([...new Set(g.hosts)].sort());
      const c = changeOf(g.change);
      const changesList = e.payload.changes as Array<{ before: string; after: string }>;
      expect(changesList.length).toBeGreaterThan(0);
      for (const ch of changesList) expect([ch.before, ch.after]).toEqual([c.before!.url, c.after.url]);
      expect(e.payload.seat).toBe(c.after.seat);
    }
    for (const e of linked('participant_deregistered')) {
      const c = changeOf(gtOf('participant_deregistered', e.pid, e.at).change);
      expect(e.payload).toEqual({ before: { registered: true, smp: c.before!.smp, seats: [c.before!.seat], seat: c.before!.seat }, after: { registered: false, smp: null } });
      expect(e.seats).toEqual([c.before!.seat]);
      expect(e.hosts).toContain(c.before!.smp);
    }
    for (const e of linked('doctype_support_changed')) {
      const c = changeOf(gtOf('doctype_support_changed', e.pid, e.at).change);
      const before = doctypeIds(c.before!.doctypes);
      const after = doctypeIds(c.after.doctypes);
      expect(e.payload).toEqual({ before: { doctypes: before }, after: { doctypes: after }, added: after.filter((d) => !before.includes(d)), removed: before.filter((d) => !after.includes(d)) });
    }
    for (const e of linked('directory_card_changed')) {
      const c = changeOf(gtOf('directory_card_changed', e.pid, e.at).change);
      const p = e.payload as { before: { card: { name: string; registrationDate: string } }; after: { card: { name: string; registrationDate: string } } };
      expect([p.before.card.name, p.before.card.registrationDate]).toEqual([(c.before!.card as { name: string }).name, (c.before!.card as { registrationDate: string }).registrationDate]);
      expect([p.after.card.name, p.after.card.registrationDate]).toEqual([(c.after.card as { name: string }).name, (c.after.card as { registrationDate: string }).registrationDate]);
      expect(e.hosts).toEqual([]);
    }
  });

  describe('views and histories against the raw records', () => {
    const pick = (kind: string): GtChange => changes.find((c) => c.kind === kind && c.participant !== undefined)!;
    const chosen = ['provider_move', 'deregistration', 're_registration', 'card_change', 'registration', 'doctype_change', 'endpoint_url_change'].map(pick);
    const discovered = changes.find((c) => c.provenance === 'discovered' && c.kind === 'smp_migration')!;
    chosen.push(discovered);
    let raw: ReturnType<typeof rawRecords>;
    let unchanged: string;
    beforeAll(() => {
      const changed = new Set(changes.map((c) => c.participant));
      unchanged = (db.prepare('SELECT pid FROM participants ORDER BY id').pluck().all() as string[]).find((p) => !changed.has(p))!;
      raw = rawRecords(fx.feeds, new Set([...chosen.map((c) => c.participant!), unchanged]));
    });

    it('shows the current state of the latest records', () => {
      for (const pid of [...chosen.map((c) => c.participant!), unchanged]) {
        const r = raw.get(pid)!;
        const v = participantView(db, pid)!;
        const lastDir = r.dir.at(-1)!;
        const lastSml = r.sml.at(-1)!;
        const lastSmp = r.smp.at(-1);
        expect(Object.keys(v)).toEqual(['id', 'scheme', 'value', 'provenance', 'directory', 'registration', 'card', 'endpoints', 'seats']);
        expect(v.id).toBe(pid);
        expect(`${v.scheme}::${v.value}`).toBe(pid);
        expect(v.provenance).toBe(r.dir.some((d) => d.present) ? 'directory' : 'discovered');
        expect(v.directory.present).toBe(lastDir.present);
        expect(v.card).toEqual(lastDir.present ? lastDir.card : null);
        expect(v.registration.registered).toBe(lastSml.registered);
        expect(v.registration.smp).toBe(lastSml.registered ? lastSml.smp : null);
        const expectedEndpoints = lastSml.registered && lastSmp ? lastSmp.endpoints.map((e) => `${e.doctype}|${e.transport_profile}|${e.url}|${e.cert ? seatIdFromSubject(e.cert.subject) : null}`).sort() : [];
        expect(v.endpoints.map((e) => `${e.doctype}|${e.transport_profile}|${e.url}|${e.seat?.seat_id ?? null}`).sort()).toEqual(expectedEndpoints);
        expect(v.seats.map((s) => s.seat_id)).toEqual([...new Set(expectedEndpoints.map((e) => e.split('|')[3]!))].sort());
        for (const s of v.seats) expect(s.provider.verified).toBe(false); // no seat_identities in this run: the fallback
        const item = [...participantList(db, { sort: 'first_seen.asc' })].find((x) => x.item.id === pid)!.item;
        const firstSeen = Math.min(...[r.dir[0], r.sml[0], r.smp[0]].filter((x) => x !== undefined).map((x) => ms(x!.at)));
        expect(ms(item.first_seen_at)).toBe(firstSeen);
        expect(item.name).toBe(v.card?.name ?? null);
        expect(item.country).toBe(v.card?.countryCode ?? null);
        expect(item.ap_seat_id).toBe(v.seats[0]?.seat_id ?? null); // one seat per participant in the demo
        expect(item.ap_provider).toBeNull();
      }
    });

    it('matches the scenario state after each participant change', () => {
      for (const c of chosen) {
        const v = participantView(db, c.participant!)!;
        expect(v.registration.registered).toBe(c.after.registered);
        expect(v.registration.smp).toBe(c.after.smp);
        expect(v.directory.present).toBe(c.after.directory);
        expect(v.provenance).toBe(c.provenance);
        if (c.after.registered) {
          expect(v.seats.map((s) => s.seat_id)).toEqual([c.after.seat]);
          expect(new Set(v.endpoints.map((e) => e.url))).toEqual(new Set([c.after.url]));
          expect([...new Set(v.endpoints.map((e) => e.doctype))].sort()).toEqual(doctypeIds(c.after.doctypes));
        } else {
          expect(v.endpoints).toEqual([]);
          expect(v.seats).toEqual([]);
        }
        const card = c.after.card as { name: string } | null;
        expect(v.card?.name ?? null).toBe(card?.name ?? null);
        if (c.provenance === 'discovered') expect(v.card).toBeNull();
      }
    });

    it('splits registration and SMP validity at the deregistration and the re-registration', () => {
      const dereg = pick('deregistration');
      const at = new Date(ms(dereg.observed_at)).toISOString();
      const rows = [...participantHistory(db, dereg.participant!)].map((r) => r.item);
      const reg = rows.filter((r) => r.fact === 'registration');
      expect(reg[0]).toEqual({ fact: 'registration', valid_from: at.replace('.000Z', 'Z'), valid_to: null, detail: { registered: false } });
      expect(reg[1]!.valid_to).toBe(reg[0]!.valid_from);
      expect(reg[1]!.detail).toEqual({ registered: true });
      const smpRows = rows.filter((r) => r.fact === 'smp');
      expect(smpRows[0]!.valid_to).toBe(reg[0]!.valid_from);
      expect(smpRows[0]!.detail).toEqual({ hostname: dereg.before!.smp });
      // Re-registration: registered, then not, then registered again (three registration rows).
      const rejoin = pick('re_registration');
      const rr = [...participantHistory(db, rejoin.participant!)].map((r) => r.item).filter((r) => r.fact === 'registration');
      expect(rr.map((r) => r.detail.registered)).toEqual([true, false, true]);
      expect(rr[0]!.valid_from).toBe(new Date(ms(rejoin.observed_at)).toISOString().replace('.000Z', 'Z'));
    });

    it('history intervals cover the raw records: each record lies in the interval holding its value', () => {
      for (const pid of [...chosen.map((c) => c.participant!), unchanged]) {
        const r = raw.get(pid)!;
        const rows = [...participantHistory(db, pid)];
        // Newest first with strictly decreasing keys.
        for (let i = 1; i < rows.length; i++) expect(compareKeys([rows[i - 1]!.key.valid_from, rows[i - 1]!.key.fact], [rows[i]!.key.valid_from, rows[i]!.key.fact], ['desc', 'asc'])).toBeLessThan(0);
        const hold = (fact: string, at: string) =>
          rows.map((x) => x.item).filter((x) => x.fact === fact && ms(x.valid_from) <= ms(at) && (x.valid_to === null || ms(at) < ms(x.valid_to)));
        for (const d of r.dir) {
          expect(hold('directory_presence', d.at).map((x) => x.detail)).toEqual([{ present: d.present }]);
          expect(hold('card', d.at).map((x) => x.detail)).toEqual(d.present && d.card ? [d.card] : []);
        }
        for (const s of r.sml) {
          expect(hold('registration', s.at).map((x) => x.detail)).toEqual([{ registered: s.registered }]);
          expect(hold('smp', s.at).map((x) => x.detail)).toEqual(s.registered ? [{ hostname: s.smp }] : []);
        }
        // Intervals of one fact never touch with the same value (merged) and start at a record.
        const starts = new Set([...r.dir, ...r.sml].map((x) => ms(x.at)));
        for (const x of rows) expect(starts.has(ms(x.item.valid_from))).toBe(true);
        for (const fact of ['directory_presence', 'card', 'registration', 'smp']) {
          const f = rows.map((x) => x.item).filter((x) => x.fact === fact).reverse();
          for (let i = 1; i < f.length; i++) if (f[i - 1]!.valid_to === f[i]!.valid_from) expect(f[i - 1]!.detail).not.toEqual(f[i]!.detail);
          expect(f.filter((x) => x.valid_to === null).length).toBeLessThanOrEqual(1);
        }
      }
    });
  });

  it('pages history and events by keyset without gaps or repeats', () => {
    const pid = changes.find((c) => c.kind === 're_registration')!.participant!;
    const all = [...participantEvents(db, pid)];
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < all.length; i++) expect(compareKeys([all[i - 1]!.key.observed_at, all[i - 1]!.key.id], [all[i]!.key.observed_at, all[i]!.key.id], ['desc', 'desc'])).toBeLessThan(0);
    expect([...participantEvents(db, pid, { after: all[0]!.key })].map((e) => e.item.id)).toEqual(all.slice(1).map((e) => e.item.id));
    const hist = [...participantHistory(db, pid)];
    expect([...participantHistory(db, pid, { after: hist[1]!.key })].map((e) => e.item)).toEqual(hist.slice(2).map((e) => e.item));
    expect(Object.keys(all[0]!.item)).toEqual(['id', 'type', 'observed_at', 'payload']);
    expect(Object.keys(hist[0]!.item)).toEqual(['fact', 'valid_from', 'valid_to', 'detail']);
    expect([...participantEvents(db, '0208::nosuchparticipant')]).toEqual([]);
    expect(participantView(db, '0208::nosuchparticipant')).toBeNull();
  });

  describe('the participant list', () => {
    const DIRS: Record<ParticipantSort, Direction[]> = {
      'first_seen.desc': ['desc', 'desc'],
      'first_seen.asc': ['asc', 'asc'],
      'name.asc': ['asc', 'asc'],
      'name.desc': ['desc', 'desc'],
      'country.asc': ['asc', 'asc'],
      'country.desc': ['desc', 'desc'],
    };
    const keyOf = (sort: ParticipantSort, i: ParticipantListItem): SortKey =>
      [sort.startsWith('first_seen') ? ms(i.first_seen_at) : sort.startsWith('name') ? i.name : i.country, i.id] as SortKey;

    it('lists every participant once in each order, nulls last, continuing from any key', () => {
      const total = db.prepare('SELECT count(*) FROM participant_list').pluck().get() as number;
      for (const sort of PARTICIPANT_SORTS) {
        const items = [...participantList(db, { sort })];
        expect(items.length).toBe(total);
        expect(new Set(items.map((x) => x.item.id)).size).toBe(total);
        const expected = [...items].sort((a, b) => compareKeys(keyOf(sort, a.item), keyOf(sort, b.item), DIRS[sort]));
        expect(items.map((x) => x.item.id)).toEqual(expected.map((x) => x.item.id));
        for (const x of items) expect([x.key.value, x.key.id]).toEqual(keyOf(sort, x.item));
        // Continue after a key in the non-null range and after one in the null range.
        for (const at of [7, items.length - 3]) {
          const after: ParticipantListKey = items[at]!.key;
          expect([...participantList(db, { sort, after })].map((x) => x.item.id)).toEqual(items.slice(at + 1).map((x) => x.item.id));
        }
      }
    });

    it('filters by country, scheme, smp, seat, registration and provenance', () => {
      const all = [...participantList(db, {})].map((x) => x.item);
      const smp = all.find((i) => i.smp !== null)!.smp!;
      const seat = all.find((i) => i.ap_seat_id !== null)!.ap_seat_id!;
      const cases: Array<[Parameters<typeof participantList>[1], (i: ParticipantListItem) => boolean]> = [
        [{ country: ['BE', 'NO'] }, (i) => i.country === 'BE' || i.country === 'NO'],
        [{ scheme: ['0208'] }, (i) => i.scheme === '0208'],
        [{ smp: [smp] }, (i) => i.smp === smp],
        [{ ap: [seat], registered: true }, (i) => i.ap_seat_id === seat && i.registered],
        [{ registered: false }, (i) => !i.registered],
        [{ provenance: 'discovered', sort: 'name.asc' }, (i) => i.provenance === 'discovered'],
        [{ provenance: 'directory', country: ['SE'], sort: 'country.desc' }, (i) => i.provenance === 'directory' && i.country === 'SE'],
      ];
      for (const [q, pred] of cases) {
        const got = [...participantList(db, q)].map((x) => x.item.id);
        const want = [...participantList(db, { sort: q!.sort ?? 'first_seen.desc' })].map((x) => x.item).filter(pred).map((i) => i.id);
        expect(want.length).toBeGreaterThan(0);
        expect(got).toEqual(want);
      }
      // Discovered participants carry no name or country.
      for (const i of all) if (i.provenance === 'discovered') expect([i.name, i.country]).toEqual([null, null]);
      expect(Object.keys(all[0]!)).toEqual(['id', 'scheme', 'value', 'name', 'country', 'registered', 'smp', 'ap_seat_id', 'ap_provider', 'provenance', 'first_seen_at']);
    });

    it('resolves seat providers through seat_identities when the providers step has run', () => {
      const copy = copyOfSmallDemoDb().open();
      try {
        runDerive(copy, { full: true }, STEPS);
        const item = [...participantList(copy, {})].find((x) => x.item.ap_seat_id !== null)!.item;
        const seat = item.ap_seat_id!;
        copy.exec('CREATE TABLE seat_identities (seat_id TEXT PRIMARY KEY, key TEXT NOT NULL, name TEXT, verified INTEGER NOT NULL, slug TEXT, country TEXT) WITHOUT ROWID');
        copy.prepare('INSERT INTO seat_identities VALUES (?, ?, ?, 1, ?, ?)').run(seat, 'c-acme', 'Acme Invoicing NV', 'acme', 'BE');
        const again = [...participantList(copy, { ap: [seat] })].map((x) => x.item);
        expect(again.length).toBeGreaterThan(0);
        for (const i of again) expect(i.ap_provider).toBe('Acme Invoicing NV');
        const v = participantView(copy, item.id)!;
        expect(v.seats).toEqual([{ seat_id: seat, provider: { slug: 'acme', name: 'Acme Invoicing NV', country: 'BE', verified: true } }]);
        // An unverified identity is no curated provider name.
        copy.prepare('UPDATE seat_identities SET verified = 0, slug = NULL').run();
        expect([...participantList(copy, { ap: [seat] })][0]!.item.ap_provider).toBeNull();
      } finally {
        copy.close();
      }
    });
  });
});

describe('incremental derivation equals a full rebuild', () => {
  it('ingesting the participant feeds in steps (mid first sweep, mid delta sweep, ...) gives the same tables', async () => {
    const fx = smallDemo();
    const index = JSON.parse(fs.readFileSync(path.join(fx.feeds, 'feeds.json'), 'utf8')) as { segments: Array<{ path: string; sha256: string; bytes: number }> };
    // Participant feeds only (plus member/curation): probes and canaries play no part in this step.
    const segs = index.segments.filter((s) => /\/(member|curation|directory|sml|smp)-/.test(s.path));
    const windowOf = (p: string): string => {
      const m = /segments\/(\d{4}-\d{2}-\d{2}T\d{2})\/[a-z]+-(\d{2})(\d{2})/.exec(p)!;
      return `${m[1]}:${m[3]}`;
    };
    const src = tempDir('participants-incr-');
    fs.symlinkSync(path.join(fx.feeds, 'segments'), path.join(src, 'segments'));
    const dbPath = path.join(tempDir('participants-incr-db-'), 'incr.sqlite');
    const cuts = ['2026-10-18T03:00', '2026-10-18T06:00', '2026-10-19T02:30', '2026-10-19T03:00', '2026-10-28T02:30', '9999'];
    const db = openDb(dbPath);
    try {
      const sweepStates: Array<string | null> = [];
      for (const cut of cuts) {
        const part = segs.filter((s) => windowOf(s.path) < cut);
        fs.writeFileSync(path.join(src, 'feeds.json'), JSON.stringify({ segments: part }));
        const s = await runIngest({ dbPath, sources: [{ name: 'demo', url: src }], http: { timeout_ms: 30_000, retries: 0, retry_base_ms: 100 }, workers: 0 });
        expect(s.failed_sources).toEqual([]);
        const d = runDerive(db, {}, STEPS);
        expect(d.full).toBe(cut === cuts[0]);
        sweepStates.push(getMeta(db, FIRST_SWEEP_META_KEY));
      }
      // The first sweep was still open after the first two steps and closed with the first delta sweep.
      expect(sweepStates.slice(0, 2)).toEqual([null, null]);
      expect(sweepStates[2]).not.toBeNull();
      const incremental = snapshot(db);
      expect(incremental.events!.length).toBeGreaterThan(0);

      // Idempotent: repeating the last runs over the same segments changes nothing, and writes nothing:
      // the participants it recomputes are not recorded as changed (their files are not rendered
      // again), nor are their events' feed partitions.
      db.exec('DELETE FROM derive_changes; DELETE FROM derive_event_changes');
      setMeta(db, 'derive_upto', String(Math.floor(Number(getMeta(db, 'derive_upto')) / 2)));
      const again = runDerive(db, {}, STEPS);
      expect(again.steps.participants?.participants).toBeGreaterThan(1000);
      expect(snapshot(db)).toEqual(incremental);
      expect(db.prepare('SELECT kind, count(*) AS n FROM derive_changes GROUP BY kind').all()).toEqual([]);
      expect(db.prepare('SELECT family, count(*) AS n FROM derive_event_changes GROUP BY family').all()).toEqual([]);

      db.prepare('DELETE FROM meta WHERE key = ?').run(FIRST_SWEEP_META_KEY);
      const full = runDerive(db, { full: true }, STEPS);
      expect(full.full).toBe(true);
      const rebuilt = snapshot(db);
      for (const table of Object.keys(rebuilt)) expect(incremental[table], table).toEqual(rebuilt[table]);
    } finally {
      db.close();
    }
  });
});
