// Hosts, network, incidents and uptime (spec "Hosts", "Incidents", "Uptime").
import { z } from 'zod';
import { Count, Country, Hostname, HostRole, IncidentStatus, Location, Percent, Resolution, Severity, Ts, Verdict, WholeMs, page } from '../schemas/common.js';

export const HostLatency = z.strictObject({ p50: WholeMs, p95: WholeMs }).describe('latest total latency, whole milliseconds');

export const HostNetwork = z.strictObject({ ips: z.array(z.string().min(1)), ptr: Hostname.nullable() });

export const HostCert = z.strictObject({
  fingerprint: z.string().min(1),
  subject: z.string(),
  issuer: z.string(),
  not_before: Ts,
  not_after: Ts,
});

export const HostProviderInfo = z.strictObject({
  key: z.string().min(1),
  trade_name: z.string(),
  legal_name: z.string().nullable(),
  country: Country.nullable(),
});

export const HostView = z.strictObject({
  hostname: Hostname,
  role: HostRole.nullable(),
  verdict: Verdict,
  network: HostNetwork.nullable(),
  cert: HostCert.nullable(),
  provider: HostProviderInfo.nullable().optional(),
});

export const HostSummary = z.strictObject({
  hostname: Hostname,
  role: HostRole.nullable(),
  verdict: Verdict,
  latency: HostLatency.nullable().describe('latest hourly all-locations latency'),
  uptime_24h: Percent.nullable().describe('mean uptime_pct over the last 24h, in percent'),
  last_bucket: Ts.nullable(),
  cert: HostCert.nullable().optional(),
  provider: HostProviderInfo.nullable().optional(),
});

export const HostsRollup = z.strictObject({
  hosts: Count,
  avg_uptime_24h: Percent.nullable(),
  avg_latency_p50: z.number().min(0).nullable(),
});

export const HostsResponse = z.strictObject({ items: z.array(HostSummary), rollup: HostsRollup, generated_at: Ts });

export const NetworkSummary = z.strictObject({
  hosts: z.strictObject({ up: Count, down: Count, degraded: Count }),
  open_incidents: Count,
  anomalies_24h: Count,
  generated_at: Ts,
});

export const IncidentTimelineStep = z.strictObject({ at: Ts, severity: Severity });

export const IncidentView = z.strictObject({
  id: Count,
  hostname: Hostname,
  role: HostRole,
  status: IncidentStatus,
  severity: Severity,
  started_at: Ts,
  ended_at: Ts.nullable(),
  timeline: z.array(IncidentTimelineStep),
}).refine((i) => (i.status === 'open') === (i.ended_at === null), 'an open incident has ended_at null, a closed one a timestamp');

export const IncidentPage = page(IncidentView);

export const UptimePercentiles = z.strictObject({ p50: WholeMs, p95: WholeMs, p99: WholeMs }).describe('latency percentiles, whole milliseconds');

export const UptimePhasePercentiles = z.strictObject({
  dns: UptimePercentiles,
  tcp: UptimePercentiles,
  tls: UptimePercentiles,
  http: UptimePercentiles,
  total: UptimePercentiles,
});

export const UptimeBucket = z.strictObject({
  resolution: Resolution,
  hostname: Hostname,
  role: HostRole,
  location: Location,
  bucket_start: Ts,
  checks_total: Count,
  up: Count,
  degraded: Count,
  down: Count,
  uptime_pct: Percent,
  phases: UptimePhasePercentiles,
}).refine((b) => b.up + b.degraded + b.down === b.checks_total, 'up + degraded + down must equal checks_total');

export const UptimePage = page(UptimeBucket);

export type HostLatency = z.infer<typeof HostLatency>;
export type HostNetwork = z.infer<typeof HostNetwork>;
export type HostCert = z.infer<typeof HostCert>;
export type HostProviderInfo = z.infer<typeof HostProviderInfo>;
export type HostView = z.infer<typeof HostView>;
export type HostSummary = z.infer<typeof HostSummary>;
export type HostsRollup = z.infer<typeof HostsRollup>;
export type HostsResponse = z.infer<typeof HostsResponse>;
export type NetworkSummary = z.infer<typeof NetworkSummary>;
export type IncidentTimelineStep = z.infer<typeof IncidentTimelineStep>;
export type IncidentView = z.infer<typeof IncidentView>;
export type IncidentPage = z.infer<typeof IncidentPage>;
export type UptimePercentiles = z.infer<typeof UptimePercentiles>;
export type UptimePhasePercentiles = z.infer<typeof UptimePhasePercentiles>;
export type UptimeBucket = z.infer<typeof UptimeBucket>;
export type UptimePage = z.infer<typeof UptimePage>;
