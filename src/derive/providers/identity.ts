// Provider identity keys of a seat (docs/methodology/providers.md, "AP identities").
//
// Precedence: curated mapping (verified, `c-<slug>`), else the exact `O=` string of the seat's signing
// certificate (unverified, `o-<slug>-<hash>`), else the bare seat (unverified, `s-<SEATID>`).
import { createHash } from 'node:crypto';

/** Longest slug part of an `o-` key (characters), so keys stay short in URLs. */
export const ORG_SLUG_MAX = 40;

/**
 * URL-safe slug of an organisation name: Unicode NFKD with combining marks removed, lower-case, every
 * run of characters outside [a-z0-9] becomes one `-`, no leading or trailing `-`, cut to ORG_SLUG_MAX
 * characters (and trailing `-` removed again). An empty result becomes `org`.
 */
export function slugify(s: string): string {
  const base = s
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const cut = base.slice(0, ORG_SLUG_MAX).replace(/-+$/, '');
  return cut.length > 0 ? cut : 'org';
}

/** First 8 hex digits of sha256 over the exact UTF-8 bytes of the `O=` string. */
export function orgHash(org: string): string {
  return createHash('sha256').update(org, 'utf8').digest('hex').slice(0, 8);
}

/** `o-<slug>-<hash>`: the identity key of an exact certificate `O=` string. */
export function orgKey(org: string): string {
  return `o-${slugify(org)}-${orgHash(org)}`;
}

export const curatedKey = (slug: string): string => `c-${slug}`;
export const seatKey = (seatId: string): string => `s-${seatId}`;

/** The country letters of a Peppol seat id (`PBE000123` -> `BE`). */
export const seatCountry = (seatId: string): string => seatId.slice(1, 3);

export interface SeatIdentity {
  seat_id: string;
  key: string;
  name: string;
  verified: boolean;
  slug: string | null;
  country: string | null;
}

/** The identity of one seat from its curated provider (if any) and its certificate `O=` (if any). */
export function identityOf(seatId: string, curated: { slug: string; name: string; country: string | null } | null, org: string | null): SeatIdentity {
  if (curated) return { seat_id: seatId, key: curatedKey(curated.slug), name: curated.name, verified: true, slug: curated.slug, country: curated.country };
  // Unverified identities take their country from the seat id (the certificate's seat country).
  if (org !== null) return { seat_id: seatId, key: orgKey(org), name: org, verified: false, slug: null, country: seatCountry(seatId) };
  return { seat_id: seatId, key: seatKey(seatId), name: seatId, verified: false, slug: null, country: seatCountry(seatId) };
}
