// Endpoint sets (endpoint_sets: the canonical, sorted endpoint list of an SMP fetch, shared by every
// participant published with exactly that list) parsed once and memoised: thousands of participants
// share one set, so the participants step parses each set once per run, not once per observation.
import type { Db } from '../../db/index.js';
import { seatIdFromSubject } from '../../feeds/ids.js';
import { servingSeat } from '../providers/serving.js';

export interface Endpoint {
  doctype: string;
  process: string;
  transport_profile: string;
  url: string;
  cert: { fingerprint: string; subject: string; issuer: string } | null;
}

export interface EndpointSet {
  id: number;
  /** Endpoints in canonical order (sorted by their canonical JSON: doctype first). */
  endpoints: readonly Endpoint[];
  /** Seat id of each endpoint (certificate CN in seat form), null without one. */
  seatOf: readonly (string | null)[];
  /** Lower-case hostname of each endpoint URL, null when the URL does not parse. */
  hostOf: readonly (string | null)[];
  /** Distinct seat ids, sorted. */
  seats: readonly string[];
  /** The serving seat: the seat of the most endpoints, ties to the lowest seat id (providers/serving.ts). */
  seat: string | null;
  /** Distinct document types, sorted. */
  doctypes: readonly string[];
  /** Endpoint index by identity `doctype \0 process \0 transport_profile`. */
  byKey: ReadonlyMap<string, number>;
}

/** The identity of an endpoint within one participant's list. */
export function endpointKey(e: Endpoint): string {
  return `${e.doctype}\u0000${e.process}\u0000${e.transport_profile}`;
}

function hostOfUrl(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function parseEndpointSet(id: number, json: string): EndpointSet {
  const endpoints = JSON.parse(json) as Endpoint[];
  const seatOf = endpoints.map((e) => (e.cert ? seatIdFromSubject(e.cert.subject) : null));
  const hostOf = endpoints.map((e) => hostOfUrl(e.url));
  const seats = [...new Set(seatOf.filter((s): s is string => s !== null))].sort(byCodePoint);
  const doctypes = [...new Set(endpoints.map((e) => e.doctype))].sort(byCodePoint);
  const byKey = new Map<string, number>();
  endpoints.forEach((e, i) => byKey.set(endpointKey(e), i));
  return { id, endpoints, seatOf, hostOf, seats, seat: servingSeat(endpoints), doctypes, byKey };
}

/** Bounded memo of parsed endpoint sets (cleared when full; sets are immutable, so never stale). */
export class EndpointSets {
  private readonly memo = new Map<number, EndpointSet>();
  private readonly get1;
  constructor(
    db: Db,
    private readonly max = 50_000,
  ) {
    this.get1 = db.prepare('SELECT endpoints FROM endpoint_sets WHERE id = ?').pluck();
  }
  get(id: number): EndpointSet {
    let s = this.memo.get(id);
    if (s === undefined) {
      const json = this.get1.get(id) as string | undefined;
      if (json === undefined) throw new Error(`endpoint set ${id} is missing`);
      s = parseEndpointSet(id, json);
      if (this.memo.size >= this.max) this.memo.clear();
      this.memo.set(id, s);
    }
    return s;
  }
}
