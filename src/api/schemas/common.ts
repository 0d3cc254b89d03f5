// Building blocks of the response schemas (docs/api-reference.md, "Resources"). Edge-safe: zod only.
//
// Conventions (docs/api.md, "Response schemas"):
// - `ts` is written exactly as `Date.prototype.toISOString()` does: UTC, milliseconds, `Z`
//   (`2026-11-22T08:15:00.000Z`). One form for every timestamp keeps bodies byte-identical between the
//   renderer and the shim, and lets a client compare timestamps as strings.
// - `date` is `YYYY-MM-DD`, a valid calendar date.
// - `T|null` fields are `.nullable()` (key always present); only the spec's "optional" keys are `.optional()`.
// - Objects are strict (unknown keys rejected), except the free-form payload/detail/target/evidence objects.
// - Identifiers carry their canonical form: participant ids `scheme::value` (lower-case value), hostnames
//   lower-case, seat ids `P[A-Z]{2}[0-9]{6}`, countries ISO 3166-1 alpha-2 upper-case.
import { z } from 'zod';
import { parseParticipantId } from '../../feeds/ids.js';
import {
  CHART_BUCKETS,
  CHURN_CATEGORIES,
  DETECTORS,
  EVENT_TYPES,
  GRADES,
  HISTORY_FACTS,
  HOST_ROLES,
  HOSTNAME_PATTERN,
  INCIDENT_STATUSES,
  PARTICIPANT_ID_PATTERN,
  PARTICIPANT_SORTS,
  PROVENANCES,
  RESOLUTIONS,
  SCHEME_PATTERN,
  SEAT_ID_PATTERN,
  SEVERITIES,
  ZONE_KINDS,
} from './constants.js';

// The enumerations and patterns are plain values of constants.ts (zod-free, for the route table and the
// edge shim); re-exported here under their names.
export {
  ALL_LOCATIONS,
  CHART_BUCKETS,
  CHURN_CATEGORIES,
  DETECTORS,
  EVENT_TYPES,
  GRADES,
  HISTORY_FACTS,
  HOST_ROLES,
  HOSTNAME_PATTERN,
  INCIDENT_STATUSES,
  PARTICIPANT_ID_PATTERN,
  PARTICIPANT_SORTS,
  PROVENANCES,
  RESOLUTIONS,
  SCHEME_PATTERN,
  SEAT_ID_PATTERN,
  SEVERITIES,
  ZONE_KINDS,
} from './constants.js';

export const Ts = z.iso.datetime({ precision: 3 }).describe('ISO 8601 date-time in UTC with milliseconds, e.g. 2026-11-22T08:15:00.000Z');
export const IsoDate = z.iso.date().describe('calendar date YYYY-MM-DD (UTC)');

/** Non-negative integer (counts). */
export const Count = z.int().min(0);
/** A latency in whole milliseconds (the spec types it `number`; values are whole). */
export const WholeMs = z.number().min(0).multipleOf(1).describe('whole milliseconds');
/** A percentage, 0–100. */
export const Percent = z.number().min(0).max(100).describe('percent (0–100)');

/** Lower-case fully-qualified hostname (the feeds' hostname rule, normalised to lower case). */
export const Hostname = z.string().max(253).regex(new RegExp(HOSTNAME_PATTERN)).describe('fully-qualified hostname, lower case');

export const SeatId = z.string().regex(new RegExp(SEAT_ID_PATTERN)).describe('Peppol seat id (certificate CN), e.g. PBE000123');

export const Country = z.string().regex(/^[A-Z]{2}$/).describe('ISO 3166-1 alpha-2 country code');

export const Scheme = z.string().regex(new RegExp(SCHEME_PATTERN)).describe('participant identifier scheme (ISO 6523 ICD), e.g. 0208');

/** Canonical participant id: what parseParticipantId returns for itself. */
export const ParticipantIdString = z
  .string()
  .regex(new RegExp(PARTICIPANT_ID_PATTERN))
  .refine((s) => parseParticipantId(s)?.id === s, 'expected a canonical participant id scheme::value (lower-case value)')
  .describe('canonical participant id scheme::value');

/** True when a `{ id, scheme, value }` triple is consistent (id = scheme::value). */
export function idMatchesParts(o: { id: string; scheme: string; value: string }): boolean {
  return o.id === `${o.scheme}::${o.value}`;
}

/** An opaque cursor (base64url, see src/api/cursor.ts). */
export const CursorString = z.string().min(1).max(2048).regex(/^[A-Za-z0-9_-]+$/).describe('opaque cursor');

/** A free-form JSON object (payload, detail, target, evidence): inner keys not specified. */
export const JsonObject = z.record(z.string(), z.unknown()).describe('free-form JSON object');

// ---------------------------------------------------------------------------------------------
// Enumerations (spec "Shared", "States and transitions", "Events and anomalies")

export const Severity = z.enum(SEVERITIES).describe('up, degraded or down');
export const Verdict = Severity.nullable().describe('up, degraded or down; null when unknown');
export const HostRole = z.enum(HOST_ROLES).describe('SMP or AP');
export const IncidentStatus = z.enum(INCIDENT_STATUSES);
export const Resolution = z.enum(RESOLUTIONS);
export const Provenance = z.enum(PROVENANCES);
export const HistoryFact = z.enum(HISTORY_FACTS);
export const EventType = z.enum(EVENT_TYPES);
export const Detector = z.enum(DETECTORS);
export const Grade = z.enum(GRADES);
export const ChartBucket = z.enum(CHART_BUCKETS);
export const ChurnCategory = z.enum(CHURN_CATEGORIES);
export const ZoneKind = z.enum(ZONE_KINDS);
export const ParticipantSort = z.enum(PARTICIPANT_SORTS);

/** A probe location, or ALL_LOCATIONS (the rollup across locations). */
export const Location = z.string().regex(/^(?:__all__|[a-z0-9][a-z0-9-]{0,62})$/).describe('a probe location, or __all__ for the rollup across locations');

// ---------------------------------------------------------------------------------------------
// Page envelopes

/** `{ items, next_cursor }`: next_cursor is null on the last page. */
export function page<T extends z.ZodType>(item: T) {
  return z.strictObject({ items: z.array(item), next_cursor: CursorString.nullable() });
}

/** `{ items, next_cursor: null }`: a list the spec never paginates. */
export function unpaginated<T extends z.ZodType>(item: T, max?: number) {
  const items = max === undefined ? z.array(item) : z.array(item).max(max);
  return z.strictObject({ items, next_cursor: z.null().describe('always null: this list is never paginated') });
}
