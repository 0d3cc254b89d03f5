// Change events and anomalies (spec "Events and anomalies").
import { z } from 'zod';
import { ChartBucket, Count, CursorString, Detector, EventType, Grade, Hostname, JsonObject, Ts, page } from '../schemas/common.js';
import { FacetBucket } from '../participants/schema.js';

export const AnomalyRef = z.strictObject({ id: z.string().min(1), detector: Detector, grade: Grade });

export const GlobalEvent = z.strictObject({
  id: z.string().min(1),
  type: EventType,
  hostname: Hostname.nullable(),
  participant: z.string().min(1).nullable().describe('the participant a participant event is about, canonical scheme::value; null for host events (additive)'),
  related_hosts: z.array(Hostname).describe('every host the event relates to, in code-point order: the hosts the `host` filter matches (additive)'),
  observed_at: Ts,
  payload: JsonObject,
  anomalies: z.array(AnomalyRef).describe('anomalies the event triggered'),
});

export const EventChartBucket = z.strictObject({ bucket_start: Ts, count: Count });

export const EventFeedMeta = z.strictObject({
  total_count: Count.describe('estimated total'),
  total_count_estimated: z.boolean(),
  filter_count: Count.nullable().describe('exact count matching active filters; null when no filter is active'),
  facets: z.record(z.string(), z.array(FacetBucket)).describe('exact per-type counts under the non-type filters'),
  chart_bucket: ChartBucket.describe('chosen automatically'),
  chart_data: z.array(EventChartBucket).describe('timeline over the filtered window'),
  counts_omitted: z
    .literal(true)
    .optional()
    .describe('present only when the counts were not made (a seat and a host filter over more than 200 events): filter_count null, facets {} and chart_data [] are then no counts, not zeros'),
});

export const EventFeedPage = z.strictObject({
  items: z.array(GlobalEvent),
  next_cursor: CursorString.nullable(),
  prev_cursor: CursorString.nullable().describe('newer-direction cursor at the newest row on the page (the live-mode watermark)'),
  meta: EventFeedMeta.optional().describe('first page only'),
});

export const AnomalyView = z.strictObject({
  id: z.string().min(1).describe('stable, content-derived key'),
  detector: Detector,
  grade: Grade,
  target: JsonObject,
  event_refs: z.array(z.string().min(1)),
  evidence: JsonObject,
  observed_at: Ts,
  acknowledged: z.boolean(),
  reason: z.string().nullable(),
});

export const AnomalyPage = page(AnomalyView);

export type AnomalyRef = z.infer<typeof AnomalyRef>;
export type GlobalEvent = z.infer<typeof GlobalEvent>;
export type EventChartBucket = z.infer<typeof EventChartBucket>;
export type EventFeedMeta = z.infer<typeof EventFeedMeta>;
export type EventFeedPage = z.infer<typeof EventFeedPage>;
export type AnomalyView = z.infer<typeof AnomalyView>;
export type AnomalyPage = z.infer<typeof AnomalyPage>;
