// Participants (spec "Participants").
import { z } from 'zod';
import {
  Count,
  Country,
  CursorString,
  EventType,
  HistoryFact,
  Hostname,
  HostRole,
  IsoDate,
  JsonObject,
  ParticipantIdString,
  Provenance,
  Scheme,
  SeatId,
  Ts,
  idMatchesParts,
  page,
} from '../schemas/common.js';
import { FILTER_COUNT_CAP } from '../schemas/constants.js';

// A plain value of constants.ts (zod-free, for the route table and the edge shim), re-exported.
export { FILTER_COUNT_CAP } from '../schemas/constants.js';

export const ParticipantCard = z.strictObject({
  name: z.string().nullable(),
  countryCode: Country.nullable(),
  registrationDate: IsoDate.nullable(),
});

export const ParticipantRegistration = z.strictObject({
  registered: z.boolean(),
  since: Ts.nullable(),
  smp: Hostname.nullable().describe('current SMP hostname'),
});

export const SeatProvider = z
  .strictObject({
    slug: z.string().min(1).nullable(),
    name: z.string().nullable(),
    country: Country.nullable(),
    verified: z.boolean(),
  })
  .describe('a verified curated mapping, or an unverified fallback derived from the certificate common name');

export const SeatRef = z.strictObject({ seat_id: SeatId, provider: SeatProvider });

export const SeatHost = z.strictObject({ hostname: Hostname, role: HostRole, since: Ts.nullable() });

export const ParticipantEndpointView = z.strictObject({
  doctype: z.string(),
  transport_profile: z.string(),
  url: z.string(),
  seat: SeatRef.nullable(),
});

export const ParticipantView = z
  .strictObject({
    id: ParticipantIdString,
    scheme: Scheme,
    value: z.string().min(1),
    provenance: Provenance,
    directory: z.strictObject({ present: z.boolean(), since: Ts.nullable() }),
    registration: ParticipantRegistration,
    card: ParticipantCard.nullable().describe('discovered participants carry no card (null)'),
    endpoints: z.array(ParticipantEndpointView).optional(),
    seats: z.array(SeatRef).optional(),
  })
  .refine(idMatchesParts, 'id must equal scheme::value');

export const ParticipantEvent = z.strictObject({
  id: z.string().min(1),
  type: EventType,
  observed_at: Ts,
  payload: JsonObject,
});

export const ParticipantEventPage = page(ParticipantEvent);

export const ParticipantHistoryRow = z.strictObject({
  fact: HistoryFact,
  valid_from: Ts,
  valid_to: Ts.nullable(),
  detail: JsonObject,
});

export const ParticipantHistoryPage = page(ParticipantHistoryRow);

export const ParticipantListItem = z
  .strictObject({
    id: ParticipantIdString,
    scheme: Scheme,
    value: z.string().min(1),
    name: z.string().nullable().describe('current card name; null for discovered participants'),
    country: Country.nullable().describe('current card country; null for discovered participants'),
    registered: z.boolean().describe('currently registered in the SML'),
    smp: Hostname.nullable().describe('current SMP hostname'),
    ap_seat_id: SeatId.nullable().describe('serving Access Point SeatID; null before the deep SMP fetch'),
    ap_provider: z.string().nullable().describe('curated provider name behind that seat; null when unmapped'),
    provenance: Provenance,
    first_seen_at: Ts,
  })
  .refine(idMatchesParts, 'id must equal scheme::value');

export const FacetBucket = z.strictObject({
  value: z.string(),
  count: Count,
  label: z.string().optional().describe('human-facing name when value is an opaque key (for the ap facet: the curated provider name)'),
});

export const ListMeta = z
  .strictObject({
    total_count: Count.describe('estimated'),
    total_count_estimated: z.boolean(),
    filter_count: Count.max(FILTER_COUNT_CAP).nullable().describe('bounded exact count when a filter or search is active, else null'),
    filter_count_capped: z.boolean().optional().describe('true when filter_count is the cap (a floor)'),
    facets: z.record(z.string(), z.array(FacetBucket)).describe('every value of each facet among the matches (filters and search), by count descending: every participant without filter or search'),
    facets_without_q: z
      .boolean()
      .optional()
      .describe('true when the search was not counted (filter_count null): the facets then count the participants matching the filters without the search. Only from a snapshot built before every search was counted'),
  })
  .refine((m) => m.filter_count_capped !== true || m.filter_count === FILTER_COUNT_CAP, 'filter_count_capped is true only when filter_count equals the cap');

export const ParticipantListPage = z.strictObject({
  items: z.array(ParticipantListItem),
  next_cursor: CursorString.nullable(),
  prev_cursor: CursorString.nullable(),
  meta: ListMeta.optional().describe('first page only'),
});

export const ParticipantStats = z.strictObject({
  total_count: Count,
  refreshed_at: Ts,
  facets: z.strictObject({
    country: z.array(FacetBucket),
    scheme: z.array(FacetBucket),
    registered: z.array(FacetBucket),
    provenance: z.array(FacetBucket),
    smp: z.array(FacetBucket),
    ap: z.array(FacetBucket),
  }),
});

export type ParticipantCard = z.infer<typeof ParticipantCard>;
export type ParticipantRegistration = z.infer<typeof ParticipantRegistration>;
export type SeatProvider = z.infer<typeof SeatProvider>;
export type SeatRef = z.infer<typeof SeatRef>;
export type SeatHost = z.infer<typeof SeatHost>;
export type ParticipantEndpointView = z.infer<typeof ParticipantEndpointView>;
export type ParticipantView = z.infer<typeof ParticipantView>;
export type ParticipantEvent = z.infer<typeof ParticipantEvent>;
export type ParticipantEventPage = z.infer<typeof ParticipantEventPage>;
export type ParticipantHistoryRow = z.infer<typeof ParticipantHistoryRow>;
export type ParticipantHistoryPage = z.infer<typeof ParticipantHistoryPage>;
export type ParticipantListItem = z.infer<typeof ParticipantListItem>;
export type FacetBucket = z.infer<typeof FacetBucket>;
export type ListMeta = z.infer<typeof ListMeta>;
export type ParticipantListPage = z.infer<typeof ParticipantListPage>;
export type ParticipantStats = z.infer<typeof ParticipantStats>;
