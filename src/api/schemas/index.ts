// The response schemas of the API, one per resource of docs/api-reference.md ("Resources"), under its names.
// Edge-safe: zod and pure modules only. RESOURCE_SCHEMAS is the list the OpenAPI document's
// components.schemas is generated from (src/api/openapi.ts); every route's response schema is one of them.
import type { z } from 'zod';
import { HostRole, Verdict } from './common.js';
import * as events from '../events/schema.js';
import * as hosts from '../hosts/schema.js';
import * as meta from './meta.js';
import * as participants from '../participants/schema.js';
import * as providers from '../providers/schema.js';
import * as sml from './sml.js';

export * from './common.js';
export * from '../events/schema.js';
export * from '../hosts/schema.js';
export * from './meta.js';
export * from '../participants/schema.js';
export * from '../providers/schema.js';
export * from './sml.js';

/** Every named schema, in the order of docs/api-reference.md "Resources" (component name -> schema). */
export const RESOURCE_SCHEMAS = {
  Problem: meta.Problem,
  Verdict,
  HostRole,
  Health: meta.Health,
  HealthDb: meta.HealthDb,
  HostLatency: hosts.HostLatency,
  HostNetwork: hosts.HostNetwork,
  HostCert: hosts.HostCert,
  HostProviderInfo: hosts.HostProviderInfo,
  HostView: hosts.HostView,
  HostSummary: hosts.HostSummary,
  HostsRollup: hosts.HostsRollup,
  HostsResponse: hosts.HostsResponse,
  NetworkSummary: hosts.NetworkSummary,
  IncidentTimelineStep: hosts.IncidentTimelineStep,
  IncidentView: hosts.IncidentView,
  IncidentPage: hosts.IncidentPage,
  UptimePercentiles: hosts.UptimePercentiles,
  UptimePhasePercentiles: hosts.UptimePhasePercentiles,
  UptimeBucket: hosts.UptimeBucket,
  UptimePage: hosts.UptimePage,
  ParticipantCard: participants.ParticipantCard,
  ParticipantRegistration: participants.ParticipantRegistration,
  SeatProvider: participants.SeatProvider,
  SeatRef: participants.SeatRef,
  SeatHost: participants.SeatHost,
  ParticipantEndpointView: participants.ParticipantEndpointView,
  ParticipantView: participants.ParticipantView,
  ParticipantEvent: participants.ParticipantEvent,
  ParticipantEventPage: participants.ParticipantEventPage,
  ParticipantHistoryRow: participants.ParticipantHistoryRow,
  ParticipantHistoryPage: participants.ParticipantHistoryPage,
  ParticipantListItem: participants.ParticipantListItem,
  FacetBucket: participants.FacetBucket,
  ListMeta: participants.ListMeta,
  ParticipantListPage: participants.ParticipantListPage,
  ParticipantStats: participants.ParticipantStats,
  AnomalyRef: events.AnomalyRef,
  GlobalEvent: events.GlobalEvent,
  EventChartBucket: events.EventChartBucket,
  EventFeedMeta: events.EventFeedMeta,
  EventFeedPage: events.EventFeedPage,
  AnomalyView: events.AnomalyView,
  AnomalyPage: events.AnomalyPage,
  ProviderView: providers.ProviderView,
  ProviderPage: providers.ProviderPage,
  ApView: providers.ApView,
  ApPage: providers.ApPage,
  ApProviderDetail: providers.ApProviderDetail,
  ApMixBucket: providers.ApMixBucket,
  ProviderSeatView: providers.ProviderSeatView,
  ProviderDetailView: providers.ProviderDetailView,
  SeatView: providers.SeatView,
  ChurnSeriesPoint: providers.ChurnSeriesPoint,
  ChurnTotals: providers.ChurnTotals,
  ChurnCounterpartTotal: providers.ChurnCounterpartTotal,
  ApChurnView: providers.ApChurnView,
  ChurnParticipant: providers.ChurnParticipant,
  ChurnParticipantPage: providers.ChurnParticipantPage,
  ZoneCanary: sml.ZoneCanary,
  ZoneIncidentView: sml.ZoneIncidentView,
  ZoneStatusView: sml.ZoneStatusView,
  SmlResponse: sml.SmlResponse,
  ApiCatalog: meta.ApiCatalog,
  OpenApiDocument: meta.OpenApiDocument,
  ProblemTypePage: meta.ProblemTypePage,
} as const satisfies Record<string, z.ZodType>;

export type ResourceName = keyof typeof RESOURCE_SCHEMAS;
