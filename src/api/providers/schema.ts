// Providers, access points, seats and churn (spec "Providers, access points, seats", "Churn").
import { z } from 'zod';
import { Count, Country, Hostname, IsoDate, ParticipantIdString, Scheme, SeatId, idMatchesParts, unpaginated } from '../schemas/common.js';
import { AP_KEY_PATTERN, CHURN_PARTICIPANTS_MAX } from '../schemas/constants.js';
import { SeatHost, SeatProvider, SeatRef } from '../participants/schema.js';

// Plain values of constants.ts (zod-free, for the route table and the edge shim), re-exported.
export { AP_KEY_PATTERN, CHURN_PARTICIPANTS_MAX } from '../schemas/constants.js';

export const ProviderView = z.strictObject({
  key: z.string().min(1),
  trade_name: z.string(),
  legal_name: z.string().nullable(),
  country: Country.nullable(),
  url: z.string().nullable(),
  flags: z.strictObject({
    peppol_authority: z.boolean(),
    ap: z.boolean(),
    smp: z.boolean(),
    end_user: z.boolean(),
    observer: z.boolean(),
  }),
  hostnames: z.array(Hostname),
  participant_count: Count,
  slug: z.string().min(1).nullable(),
});

export const ProviderPage = unpaginated(ProviderView);

/** Provider key forms: `c-<slug>` (curated), `o-<slug>-<hash>` (certificate O=), `s-<seatid>` (bare seat). */
export const ApKey = z.string().regex(new RegExp(AP_KEY_PATTERN)).describe('stable URL-safe provider key: c-<slug>, o-<slug>-<hash> or s-<seatid>');

export const ApView = z.strictObject({
  key: ApKey,
  name: z.string(),
  verified: z.boolean(),
  seats: z.array(SeatId),
  participant_count: Count,
  net_growth: z.int().optional().describe('joiners + movers-in - movers-out - leavers over the trailing 30 days; absent before the churn rollup has run'),
});

export const ApPage = unpaginated(ApView);

export const ApMixBucket = z.strictObject({ value: z.string(), count: Count });

export const ApProviderDetail = z.strictObject({
  key: ApKey.describe('always the canonical current key'),
  name: z.string(),
  verified: z.boolean(),
  participant_count: Count,
  seats: z.array(SeatRef),
  country_mix: z.array(ApMixBucket),
  scheme_mix: z.array(ApMixBucket),
});

export const ProviderSeatView = z.strictObject({ seat_id: SeatId, hosts: z.array(SeatHost) });

export const ProviderDetailView = z.strictObject({
  slug: z.string().min(1),
  name: z.string(),
  country: Country.nullable(),
  natural_key: z.string().nullable(),
  notes: z.string().nullable(),
  verified: z.literal(true).describe('always true'),
  seats: z.array(ProviderSeatView),
});

export const SeatView = z.strictObject({ seat_id: SeatId, provider: SeatProvider, hosts: z.array(SeatHost) });

const netGrowthHolds = (c: { joiners: number; movers_in: number; movers_out: number; leavers: number; net_growth: number }): boolean =>
  c.net_growth === c.joiners + c.movers_in - c.movers_out - c.leavers;
const NET_GROWTH_RULE = 'net_growth must equal joiners + movers_in - movers_out - leavers';

export const ChurnSeriesPoint = z
  .strictObject({
    day: IsoDate.describe('UTC day'),
    joiners: Count,
    movers_in: Count,
    movers_out: Count,
    leavers: Count,
    net_growth: z.int(),
  })
  .refine(netGrowthHolds, NET_GROWTH_RULE);

export const ChurnTotals = z
  .strictObject({ joiners: Count, movers_in: Count, movers_out: Count, leavers: Count, net_growth: z.int() })
  .refine(netGrowthHolds, NET_GROWTH_RULE);

export const ChurnCounterpartTotal = z.strictObject({
  key: ApKey.describe('counterpart provider key'),
  name: z.string(),
  won: Count.describe('participants this AP won from the counterpart'),
  lost: Count.describe('participants this AP lost to the counterpart'),
});

export const ApChurnView = z
  .strictObject({
    key: ApKey,
    name: z.string(),
    from: IsoDate.describe('inclusive UTC start'),
    to: IsoDate.describe('inclusive UTC end'),
    totals: ChurnTotals,
    series: z.array(ChurnSeriesPoint),
    counterparts: z.array(ChurnCounterpartTotal),
  })
  .refine((v) => v.from <= v.to, 'from must not be after to');

export const ChurnParticipant = z
  .strictObject({
    id: ParticipantIdString,
    scheme: Scheme,
    value: z.string().min(1),
    day: IsoDate,
    counterpart_key: ApKey.nullable(),
    counterpart_name: z.string().nullable(),
  })
  .refine(idMatchesParts, 'id must equal scheme::value');

export const ChurnParticipantPage = unpaginated(ChurnParticipant, CHURN_PARTICIPANTS_MAX);

export type ProviderView = z.infer<typeof ProviderView>;
export type ProviderPage = z.infer<typeof ProviderPage>;
export type ApView = z.infer<typeof ApView>;
export type ApPage = z.infer<typeof ApPage>;
export type ApMixBucket = z.infer<typeof ApMixBucket>;
export type ApProviderDetail = z.infer<typeof ApProviderDetail>;
export type ProviderSeatView = z.infer<typeof ProviderSeatView>;
export type ProviderDetailView = z.infer<typeof ProviderDetailView>;
export type SeatView = z.infer<typeof SeatView>;
export type ChurnSeriesPoint = z.infer<typeof ChurnSeriesPoint>;
export type ChurnTotals = z.infer<typeof ChurnTotals>;
export type ChurnCounterpartTotal = z.infer<typeof ChurnCounterpartTotal>;
export type ApChurnView = z.infer<typeof ApChurnView>;
export type ChurnParticipant = z.infer<typeof ChurnParticipant>;
export type ChurnParticipantPage = z.infer<typeof ChurnParticipantPage>;
