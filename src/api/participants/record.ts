// A participant's record, its one object in the snapshot: the detail and the first pages of its events
// and history. Written by src/render/routes/participants.ts, read by src/edge/compose/participants.ts
// and `verify`. Edge-safe. The path, the body and how the shim answers from it are stated once in
// docs/snapshot-format.md, "Participants".
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
