// SML/SMK zones (spec "SML/SMK zones").
import { z } from 'zod';
import { Count, Hostname, IncidentStatus, Location, Severity, Ts, Verdict, ZoneKind } from './common.js';
import { IncidentTimelineStep } from '../hosts/schema.js';

export const ZoneCanary = z.strictObject({
  location: Location,
  verdict: Severity,
  existing_ok: Count,
  existing_total: Count,
  nonexistent_ok: Count,
  nonexistent_total: Count,
  critical_nxdomain: z.boolean(),
  soa_serial: z.int().min(0).nullable(),
  ns: z.array(Hostname),
  observed_at: Ts,
});

export const ZoneIncidentView = z
  .strictObject({
    id: Count,
    zone: Hostname,
    status: IncidentStatus,
    severity: Severity,
    started_at: Ts,
    ended_at: Ts.nullable(),
    timeline: z.array(IncidentTimelineStep),
  })
  .refine((i) => (i.status === 'open') === (i.ended_at === null), 'an open incident has ended_at null, a closed one a timestamp');

export const ZoneStatusView = z.strictObject({
  zone: Hostname,
  kind: ZoneKind,
  env: z.string(),
  operator: z.string(),
  verdict: Verdict.describe('quorum verdict'),
  critical_nxdomain: z.boolean(),
  cutover: z.strictObject({ dname_present: z.boolean().nullable(), dname_target: Hostname.nullable() }),
  canary: z.array(ZoneCanary).describe('per location'),
  management: z.strictObject({
    host: Hostname.nullable(),
    tls_ok: z.boolean().nullable(),
    tls_not_after: Ts.nullable(),
    tls_issuer: z.string().nullable(),
  }),
  incidents: z.array(ZoneIncidentView).optional(),
});

export const SmlResponse = z.strictObject({ zones: z.array(ZoneStatusView).describe('one entry per monitored zone') });

export type ZoneCanary = z.infer<typeof ZoneCanary>;
export type ZoneIncidentView = z.infer<typeof ZoneIncidentView>;
export type ZoneStatusView = z.infer<typeof ZoneStatusView>;
export type SmlResponse = z.infer<typeof SmlResponse>;
