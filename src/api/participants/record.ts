// A participant's record: the one snapshot object of a participant (docs/snapshot-format.md
// "Participants"), written by the renderer (src/render/routes/participants.ts) and read by the shim
// (src/edge/compose/participants.ts) and `verify`. Edge-safe: no Node imports.
//
// Path: `v1/participants/<id>.json` (exactFilePath of the detail's URL path). Body, one JSON object:
//
//   {"participant": ParticipantView, "history": ParticipantHistoryPage | null, "events": ParticipantEventPage | null}
//
// `history` and `events` are the first pages at default parameters (`limit` 50, no cursor), exactly as
// the oracle answers them, or null when the list is empty (the oracle's answer is then the empty page
// `{"items":[],"next_cursor":null}` for any limit and valid cursor). The record is not an answer: the
// shim answers /v1/participants/{id} with `participant`, and /events and /history from their page
// (or, beyond that page, from the participant's stored list). Every part is a parsed answer of the
// oracle, and jsonBody (JSON.stringify) of a JSON.parse'd value gives the same bytes again.
import { EVENTS_ROUTE, HISTORY_ROUTE } from './plan.js';
import { exactFilePath } from '../paths.js';
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

/** Where a participant's record lives. */
export function recordPath(id: string): string {
  return exactFilePath(['v1', 'participants', id]);
}

/**
 * True for a record; false for what a snapshot built before the record holds at the same path, the
 * ParticipantView itself (it never has a `participant` member).
 */
export function isParticipantRecord(body: unknown): body is ParticipantRecord {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && 'participant' in body;
}
