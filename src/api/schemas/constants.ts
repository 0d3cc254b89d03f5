// The zod-free values of the API's response schemas: enumerations, identifier patterns and limits.
// The schemas (common.ts, participants.ts, providers.ts) build their zod types from these and re-export
// them under the same names; the route table and the edge shim import them from here, so the Worker
// bundle (src/edge/worker.ts) carries no zod. Edge-safe: plain values; it imports only other plain
// modules (the event types, shared with derive).

// ---------------------------------------------------------------------------------------------
// Identifier patterns (regular expression sources)

/** Lower-case fully-qualified hostname (the feeds' hostname rule, normalised to lower case). */
export const HOSTNAME_PATTERN = '^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?(?:\\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)+$';

export const SEAT_ID_PATTERN = '^P[A-Z]{2}[0-9]{6}$';

export const SCHEME_PATTERN = '^[0-9]{4}$';

/** Canonical participant id: what parseParticipantId returns for itself. */
export const PARTICIPANT_ID_PATTERN = '^[0-9]{4}::[^\\sA-Z]+$';

/** Provider key forms: `c-<slug>` (curated), `o-<slug>-<hash>` (certificate O=), `s-<seatid>` (bare seat). */
export const AP_KEY_PATTERN = '^[cos]-[A-Za-z0-9][A-Za-z0-9._~-]{0,199}$';

// ---------------------------------------------------------------------------------------------
// Enumerations (spec "Shared", "States and transitions", "Events and anomalies")

export const SEVERITIES = ['up', 'degraded', 'down'] as const;

export const HOST_ROLES = ['SMP', 'AP'] as const;

export const INCIDENT_STATUSES = ['open', 'closed'] as const;

export const RESOLUTIONS = ['hourly', 'daily', 'monthly'] as const;

export const PROVENANCES = ['directory', 'discovered'] as const;

export const HISTORY_FACTS = ['directory_presence', 'card', 'registration', 'smp'] as const;

/** The nine change-event types, in the spec's order (one list, shared with derive and the demo). */
export { EVENT_TYPES } from '../../derive/event-types.js';

/** The five anomaly detectors (equal to src/derive/anomaly-id.ts DETECTORS). */
export const DETECTORS = ['cert_identity_shift', 'off_cadence_rotation', 'endpoint_off_footprint', 'moved_to_unverified_seat', 'mass_change_burst'] as const;

export const GRADES = ['notice', 'warning'] as const;

export const CHART_BUCKETS = ['hour', 'day', 'week'] as const;

export const CHURN_CATEGORIES = ['joiner', 'mover_in', 'mover_out', 'leaver'] as const;

export const ZONE_KINDS = ['SML', 'SMK'] as const;

export const PARTICIPANT_SORTS = ['first_seen.desc', 'first_seen.asc', 'name.asc', 'name.desc', 'country.asc', 'country.desc'] as const;

/** Location value of the rollup across probe locations. */
export const ALL_LOCATIONS = '__all__';

// ---------------------------------------------------------------------------------------------
// Limits

/** The bounded exact count of the participant list (docs/api-reference.md, /v1/participants rule 3). */
export const FILTER_COUNT_CAP = 50_000;

/** Most rows of /v1/aps/{key}/churn/participants (spec "Limits"). */
export const CHURN_PARTICIPANTS_MAX = 500;
