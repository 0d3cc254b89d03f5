// A participant's record: the detail and the first pages of its events and history. The records are
// stored in packs, each the records of the participants whose id hashes to it (RECORD_PACKS of them).
// Written by src/render/routes/participants.ts, read by src/edge/compose/participants.ts and `verify`.
// Edge-safe. The paths, the bodies and how the shim answers from them are stated once in
// docs/snapshot-format.md, "Participants".
import { EVENTS_ROUTE, HISTORY_ROUTE } from './plan.js';
import { exactFilePath } from '../paths.js';
import { fnv1aMixed } from '../fnv1a.js';
import type { ParticipantView } from '../schemas/index.js';

/** A first page of a participant's events or history (ParticipantEventPage, ParticipantHistoryPage). */
export interface RecordPage {
  items: Array<Record<string, unknown>>;
  next_cursor: string | null;
}

export interface ParticipantRecord {
  participant: ParticipantView;
  history: RecordPage | null;
  events: RecordPage | null;
}

/** The member of the record holding a route's first page. */
export const RECORD_PAGE = { [EVENTS_ROUTE]: 'events', [HISTORY_ROUTE]: 'history' } as const satisfies Record<string, keyof ParticipantRecord>;

/**
 * Where a participant's record lived before record packs (one file per participant), and where a
 * snapshot of that time still holds it: read by the shim when the pack is absent.
 */
export function recordPath(id: string): string {
  return exactFilePath(['v1', 'participants', id]);
}

/**
 * Bits of a record pack's number: 2^17 = 131,072 packs, about 23 records each at 3 million
 * participants (about 10 KB stored). Part of the format: another value moves every record.
 */
export const RECORD_PACK_BITS = 17;
/** How many record packs there are (most hold no record on a small network, and are not written). */
export const RECORD_PACKS = 2 ** RECORD_PACK_BITS;
/** The format of a record pack. */
export const RECORD_PACK_FORMAT = 'peppol-snapshot/participant-records@1';

/**
 * The pack of a participant's record: the top RECORD_PACK_BITS bits of FNV-1a over the canonical id's
 * UTF-16 code units, finished with murmur3's mixer (FNV-1a's low bits are poorly mixed).
 */
export function recordPackOf(id: string): number {
  return fnv1aMixed(id) >>> (32 - RECORD_PACK_BITS);
}

/** Where a record pack lives: `f/participants/records/<pack, 5 hex digits>.json`. */
export function recordPackPath(pack: number): string {
  return `f/participants/records/${pack.toString(16).padStart(5, '0')}.json`;
}

/** A record pack: the records of its participants, by canonical id in code-point order. */
export interface RecordPack {
  format: typeof RECORD_PACK_FORMAT;
  records: Record<string, ParticipantRecord>;
}

export function isRecordPack(body: unknown): body is RecordPack {
  return typeof body === 'object' && body !== null && 'format' in body && body.format === RECORD_PACK_FORMAT && 'records' in body && typeof body.records === 'object' && body.records !== null;
}

/**
 * True for a record; false for what a snapshot built before the record holds at the same path, the
 * ParticipantView itself (it never has a `participant` member).
 */
export function isParticipantRecord(body: unknown): body is ParticipantRecord {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && 'participant' in body;
}
