// Readers of the providers, seats and AP identities (spec: ProviderView, ProviderDetailView, SeatView,
// ApView, ApProviderDetail). Objects carry exactly the spec's field names, in the spec's order, with
// `T|null` keys always present.
import type { Db } from '../../db/index.js';
import { netGrowthAll } from '../churn.js';
import { isoTime } from '../hosts/time.js';
import { resolveApKey, seatsOfKey } from './keys.js';

export type HostRole = 'SMP' | 'AP';

export interface ProviderFlags {
  peppol_authority: boolean;
  ap: boolean;
  smp: boolean;
  end_user: boolean;
  observer: boolean;
}
export interface ProviderView {
  key: string;
  trade_name: string;
  legal_name: string | null;
  country: string | null;
  url: string | null;
  flags: ProviderFlags;
  hostnames: string[];
  participant_count: number;
  slug: string | null;
}
export interface SeatHost {
  hostname: string;
  role: HostRole;
  since: string | null;
}
export interface ProviderSeatView {
  seat_id: string;
  hosts: SeatHost[];
}
export interface ProviderDetailView {
  slug: string;
  name: string;
  country: string | null;
  natural_key: string | null;
  notes: string | null;
  verified: boolean;
  seats: ProviderSeatView[];
}
export interface SeatProvider {
  slug: string | null;
  name: string | null;
  country: string | null;
  verified: boolean;
}
export interface SeatRef {
  seat_id: string;
  provider: SeatProvider;
}
export interface SeatView {
  seat_id: string;
  provider: SeatProvider;
  hosts: SeatHost[];
}
export interface ApView {
  key: string;
  name: string;
  verified: boolean;
  seats: string[];
  participant_count: number;
  net_growth?: number;
}
export interface ApMixBucket {
  value: string;
  count: number;
}
export interface ApProviderDetail {
  key: string;
  name: string;
  verified: boolean;
  participant_count: number;
  seats: SeatRef[];
  country_mix: ApMixBucket[];
  scheme_mix: ApMixBucket[];
}

const flag = (v: number | null): boolean => v === 1;

/** The member registry, busiest first (participant_count DESC, then key). */
export function providersList(db: Db): ProviderView[] {
  const rows = db
    .prepare(
      `SELECT key, trade_name, legal_name, country, url, peppol_authority, ap, smp, end_user, observer, slug, coalesce(participant_count, 0) AS participant_count
       FROM providers ORDER BY participant_count DESC, key`,
    )
    .all() as Array<{
    key: string;
    trade_name: string;
    legal_name: string | null;
    country: string | null;
    url: string | null;
    peppol_authority: number | null;
    ap: number | null;
    smp: number | null;
    end_user: number | null;
    observer: number | null;
    slug: string | null;
    participant_count: number;
  }>;
  const hosts = db.prepare('SELECT hostname FROM provider_hosts WHERE key = ? ORDER BY hostname').pluck();
  return rows.map((r) => ({
    key: r.key,
    trade_name: r.trade_name,
    legal_name: r.legal_name,
    country: r.country,
    url: r.url,
    flags: { peppol_authority: flag(r.peppol_authority), ap: flag(r.ap), smp: flag(r.smp), end_user: flag(r.end_user), observer: flag(r.observer) },
    hostnames: hosts.all(r.key) as string[],
    participant_count: r.participant_count,
    slug: r.slug,
  }));
}

/** Hosts currently presenting a certificate of the seat, by hostname. */
function seatHosts(db: Db, seatId: string): SeatHost[] {
  const rows = db.prepare('SELECT hostname, role, since FROM seat_hosts WHERE seat_id = ? AND role IS NOT NULL ORDER BY hostname').all(seatId) as Array<{
    hostname: string;
    role: HostRole;
    since: number | null;
  }>;
  return rows.map((r) => ({ hostname: r.hostname, role: r.role, since: r.since === null ? null : isoTime(r.since) }));
}

/** A curated provider with its seats (by seat id) and their hosts; null when the slug is unknown. */
export function providerDetail(db: Db, slug: string): ProviderDetailView | null {
  const p = db.prepare('SELECT slug, name, country, natural_key, notes FROM curated_providers WHERE slug = ?').get(slug) as
    | { slug: string; name: string; country: string | null; natural_key: string | null; notes: string | null }
    | undefined;
  if (!p) return null;
  const seats = db.prepare('SELECT seat_id FROM seat_identities WHERE slug = ? ORDER BY seat_id').pluck().all(slug) as string[];
  return {
    slug: p.slug,
    name: p.name,
    country: p.country,
    natural_key: p.natural_key,
    notes: p.notes,
    verified: true,
    seats: seats.map((s) => ({ seat_id: s, hosts: seatHosts(db, s) })),
  };
}

function seatProvider(db: Db, seatId: string): SeatProvider | null {
  const r = db.prepare('SELECT name, verified, slug, country FROM seat_identities WHERE seat_id = ?').get(seatId) as
    | { name: string | null; verified: number; slug: string | null; country: string | null }
    | undefined;
  return r ? { slug: r.slug, name: r.name, country: r.country, verified: r.verified === 1 } : null;
}

/** SeatView of a seat id (upper-cased), or null when the seat is unknown. */
export function seatView(db: Db, seatId: string): SeatView | null {
  const id = seatId.toUpperCase();
  const provider = seatProvider(db, id);
  if (provider === null) return null;
  return { seat_id: id, provider, hosts: seatHosts(db, id) };
}

/** Current roster size of every AP identity (ap_rosters of the rosters step; absent: 0). */
function rosterCounts(db: Db): Map<string, number> {
  const rows = db.prepare('SELECT key, participant_count FROM ap_rosters').all() as Array<{ key: string; participant_count: number }>;
  return new Map(rows.map((r) => [r.key, r.participant_count]));
}

/**
 * Every AP identity with its seats and current roster size, busiest first (participant_count DESC, then
 * key). net_growth covers the 30 UTC days ending with the day of `nowMs`.
 */
export function apsList(db: Db, nowMs: number): ApView[] {
  const counts = rosterCounts(db);
  const growth = netGrowthAll(db, nowMs);
  const seats = new Map<string, string[]>();
  for (const r of db.prepare('SELECT key, seat_id FROM seat_identities ORDER BY key, seat_id').all() as Array<{ key: string; seat_id: string }>) {
    const l = seats.get(r.key);
    if (l) l.push(r.seat_id);
    else seats.set(r.key, [r.seat_id]);
  }
  const ids = db.prepare('SELECT key, name, verified FROM ap_identities').all() as Array<{ key: string; name: string; verified: number }>;
  return ids
    .map((i) => ({
      key: i.key,
      name: i.name,
      verified: i.verified === 1,
      seats: seats.get(i.key) ?? [],
      participant_count: counts.get(i.key) ?? 0,
      net_growth: growth.get(i.key) ?? 0,
    }))
    .sort((a, b) => b.participant_count - a.participant_count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** ApProviderDetail of a key (stale keys resolve; the returned key is the canonical one), or null. */
export function apDetail(db: Db, key: string): ApProviderDetail | null {
  const canonical = resolveApKey(db, key);
  if (canonical === null) return null;
  const id = db.prepare('SELECT key, name, verified FROM ap_identities WHERE key = ?').get(canonical) as { key: string; name: string; verified: number };
  const count = (db.prepare('SELECT participant_count FROM ap_rosters WHERE key = ?').pluck().get(canonical) as number | undefined) ?? 0;
  const mix = (facet: 'country' | 'scheme'): ApMixBucket[] =>
    db.prepare('SELECT value, count FROM ap_mix WHERE key = ? AND facet = ? ORDER BY count DESC, value').all(canonical, facet) as ApMixBucket[];
  return {
    key: id.key,
    name: id.name,
    verified: id.verified === 1,
    participant_count: count,
    seats: seatsOfKey(db, canonical).map((s) => ({ seat_id: s, provider: seatProvider(db, s)! })),
    country_mix: mix('country'),
    scheme_mix: mix('scheme'),
  };
}
