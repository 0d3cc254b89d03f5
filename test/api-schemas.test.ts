// Response schemas (src/api/schemas): every resource of docs/api-reference.md ("Resources") exists under its name, with the
// spec's keys, nullability (`T|null`: key present, null allowed), optional keys, enums and formats;
// objects are strict except the free-form ones. Valid examples parse; each kind of invalid value fails.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EXAMPLES } from '../src/api/schemas/examples.js';
import * as S from '../src/api/schemas/index.js';
import { RESOURCE_SCHEMAS, type ResourceName } from '../src/api/schemas/index.js';
import { DETECTORS as DERIVE_DETECTORS } from '../src/derive/anomaly-id.js';
import { EVENT_TYPES as DERIVE_EVENT_TYPES } from '../src/derive/events.js';

/**
 * The keys of every object resource as the spec lists them: `k` required, `k|null` always present and
 * nullable, `k?` optional, `k?|null` optional and nullable. Transcribed from the field lists of docs/api-reference.md ("Resources"); inline
 * objects are named `Resource.field`.
 */
const SPEC: Record<string, string> = {
  Problem: 'type title status detail? instance?',
  Health: 'status service',
  HealthDb: 'status service db generated_at|null age_seconds|null fresh',
  HostLatency: 'p50 p95',
  HostNetwork: 'ips ptr|null',
  HostCert: 'fingerprint subject issuer not_before not_after',
  HostProviderInfo: 'key trade_name legal_name|null country|null',
  HostView: 'hostname role|null verdict|null network|null cert|null provider?|null',
  HostSummary: 'hostname role|null verdict|null latency|null uptime_24h|null last_bucket|null cert?|null provider?|null',
  HostsRollup: 'hosts avg_uptime_24h|null avg_latency_p50|null',
  HostsResponse: 'items rollup generated_at',
  NetworkSummary: 'hosts open_incidents anomalies_24h generated_at',
  'NetworkSummary.hosts': 'up down degraded',
  IncidentTimelineStep: 'at severity',
  IncidentView: 'id hostname role status severity started_at ended_at|null timeline',
  IncidentPage: 'items next_cursor|null',
  UptimePercentiles: 'p50 p95 p99',
  UptimePhasePercentiles: 'dns tcp tls http total',
  UptimeBucket: 'resolution hostname role location bucket_start checks_total up degraded down uptime_pct phases',
  UptimePage: 'items next_cursor|null',
  ParticipantCard: 'name|null countryCode|null registrationDate|null',
  ParticipantRegistration: 'registered since|null smp|null',
  SeatProvider: 'slug|null name|null country|null verified',
  SeatRef: 'seat_id provider',
  SeatHost: 'hostname role since|null',
  ParticipantEndpointView: 'doctype transport_profile url seat|null',
  ParticipantView: 'id scheme value provenance directory registration card|null endpoints? seats?',
  'ParticipantView.directory': 'present since|null',
  ParticipantEvent: 'id type observed_at payload',
  ParticipantEventPage: 'items next_cursor|null',
  ParticipantHistoryRow: 'fact valid_from valid_to|null detail',
  ParticipantHistoryPage: 'items next_cursor|null',
  ParticipantListItem: 'id scheme value name|null country|null registered smp|null ap_seat_id|null ap_provider|null provenance first_seen_at',
  FacetBucket: 'value count label?',
  ListMeta: 'total_count total_count_estimated filter_count|null filter_count_capped? facets facets_without_q?',
  ParticipantListPage: 'items next_cursor|null prev_cursor|null meta?',
  ParticipantStats: 'total_count refreshed_at facets',
  'ParticipantStats.facets': 'country scheme registered provenance smp ap',
  AnomalyRef: 'id detector grade',
  GlobalEvent: 'id type hostname|null participant|null related_hosts observed_at payload anomalies',
  EventChartBucket: 'bucket_start count',
  EventFeedMeta: 'total_count total_count_estimated filter_count|null facets chart_bucket chart_data counts_omitted?',
  EventFeedPage: 'items next_cursor|null prev_cursor|null meta?',
  AnomalyView: 'id detector grade target event_refs evidence observed_at acknowledged reason|null',
  AnomalyPage: 'items next_cursor|null',
  ProviderView: 'key trade_name legal_name|null country|null url|null flags hostnames participant_count slug|null',
  'ProviderView.flags': 'peppol_authority ap smp end_user observer',
  ProviderPage: 'items next_cursor|null',
  ApView: 'key name verified seats participant_count net_growth?',
  ApPage: 'items next_cursor|null',
  ApProviderDetail: 'key name verified participant_count seats country_mix scheme_mix',
  ApMixBucket: 'value count',
  ProviderSeatView: 'seat_id hosts',
  ProviderDetailView: 'slug name country|null natural_key|null notes|null verified seats',
  SeatView: 'seat_id provider hosts',
  ChurnSeriesPoint: 'day joiners movers_in movers_out leavers net_growth',
  ChurnTotals: 'joiners movers_in movers_out leavers net_growth',
  ChurnCounterpartTotal: 'key name won lost',
  ApChurnView: 'key name from to totals series counterparts',
  ChurnParticipant: 'id scheme value day counterpart_key|null counterpart_name|null',
  ChurnParticipantPage: 'items next_cursor|null',
  ZoneCanary: 'location verdict existing_ok existing_total nonexistent_ok nonexistent_total critical_nxdomain soa_serial|null ns observed_at',
  ZoneIncidentView: 'id zone status severity started_at ended_at|null timeline',
  ZoneStatusView: 'zone kind env operator verdict|null critical_nxdomain cutover canary management incidents?',
  'ZoneStatusView.cutover': 'dname_present|null dname_target|null',
  'ZoneStatusView.management': 'host|null tls_ok|null tls_not_after|null tls_issuer|null',
  SmlResponse: 'zones',
};

/** The resources the brief and the spec name (the discovery documents are not spec resources). */
const SPEC_RESOURCES = Object.keys(SPEC).filter((k) => !k.includes('.'));
const NOT_OBJECTS = ['Verdict', 'HostRole'];

type Obj = Record<string, unknown>;
const clone = <T>(v: T): T => structuredClone(v);
const ok = (name: ResourceName, v: unknown) => RESOURCE_SCHEMAS[name].safeParse(v).success;

/** Splits `A.b` into the resource and the path of the inline object inside its example. */
function target(specName: string): { name: ResourceName; path: string[] } {
  const [name, ...path] = specName.split('.');
  return { name: name as ResourceName, path };
}
function objectAt(root: Obj, path: string[]): Obj {
  return path.reduce<Obj>((o, k) => o[k] as Obj, root);
}
function shapeOf(name: ResourceName, path: string[]): string[] {
  let s = RESOURCE_SCHEMAS[name] as z.ZodType;
  for (const k of path) {
    let inner = (s as z.ZodObject).shape[k] as z.ZodType;
    while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) inner = inner.unwrap() as z.ZodType;
    s = inner;
  }
  return Object.keys((s as z.ZodObject).shape);
}

describe('resource schemas', () => {
  it('exist for every resource of the spec, and every example is valid', () => {
    for (const name of [...SPEC_RESOURCES, ...NOT_OBJECTS]) expect(Object.keys(RESOURCE_SCHEMAS)).toContain(name);
    for (const name of Object.keys(RESOURCE_SCHEMAS) as ResourceName[]) {
      const r = RESOURCE_SCHEMAS[name].safeParse(EXAMPLES[name]);
      expect(r.success, `${name}: ${r.success ? '' : JSON.stringify(r.error.issues)}`).toBe(true);
    }
  });

  it.each(Object.keys(SPEC))('%s has the spec keys, required/optional and nullable as the spec says', (specName) => {
    const { name, path } = target(specName);
    const fields = SPEC[specName]!.split(' ').map((f) => ({ key: f.replace(/[?|].*$/, ''), optional: f.includes('?'), nullable: f.endsWith('|null') }));
    expect(shapeOf(name, path).sort()).toEqual(fields.map((f) => f.key).sort());
    for (const f of fields) {
      const without = clone(EXAMPLES[name]) as Obj;
      delete objectAt(without, path)[f.key];
      expect(ok(name, without), `${specName}.${f.key} may be absent: ${f.optional}`).toBe(f.optional);
      const withNull = clone(EXAMPLES[name]) as Obj;
      objectAt(withNull, path)[f.key] = null;
      // ProviderPage/ApPage/ChurnParticipantPage next_cursor is null already; null must stay valid.
      expect(ok(name, withNull), `${specName}.${f.key} may be null: ${f.nullable}`).toBe(f.nullable);
    }
    const extra = clone(EXAMPLES[name]) as Obj;
    objectAt(extra, path).unexpected_key = 1;
    expect(ok(name, extra), `${specName} rejects unknown keys`).toBe(false);
  });

  it('free-form objects (payload, detail, target, evidence) take any keys, but must be objects', () => {
    const cases: Array<[ResourceName, string]> = [
      ['ParticipantEvent', 'payload'],
      ['GlobalEvent', 'payload'],
      ['ParticipantHistoryRow', 'detail'],
      ['AnomalyView', 'target'],
      ['AnomalyView', 'evidence'],
    ];
    for (const [name, key] of cases) {
      const v = clone(EXAMPLES[name]) as Obj;
      v[key] = { anything: [1, { deep: null }], 'odd key': true };
      expect(ok(name, v)).toBe(true);
      v[key] = {};
      expect(ok(name, v)).toBe(true);
      for (const bad of [[1, 2], 'text', 3]) {
        v[key] = bad;
        expect(ok(name, v), `${name}.${key} = ${JSON.stringify(bad)}`).toBe(false);
      }
    }
  });
});

/** Sets `key` of a copy of the example (dotted path into nested objects / array index 0). */
function withValue(name: ResourceName, key: string, value: unknown): unknown {
  const v = clone(EXAMPLES[name]) as Obj;
  const path = key.split('.');
  const last = path.pop()!;
  objectAt(v, path)[last] = value;
  return v;
}

describe('enums', () => {
  const cases: Array<[ResourceName, string, readonly string[], string]> = [
    ['HostView', 'verdict', S.SEVERITIES, 'unknown'],
    ['HostView', 'role', S.HOST_ROLES, 'smp'],
    ['IncidentView', 'severity', S.SEVERITIES, 'critical'],
    ['IncidentView', 'role', S.HOST_ROLES, 'BOTH'],
    ['IncidentView', 'timeline.0.severity', S.SEVERITIES, 'Down'],
    ['UptimeBucket', 'resolution', S.RESOLUTIONS, 'weekly'],
    ['ParticipantView', 'provenance', S.PROVENANCES, 'scraped'],
    ['ParticipantEvent', 'type', S.EVENT_TYPES, 'participant_moved'],
    ['ParticipantHistoryRow', 'fact', S.HISTORY_FACTS, 'name'],
    ['AnomalyRef', 'detector', S.DETECTORS, 'cert_shift'],
    ['AnomalyView', 'grade', S.GRADES, 'critical'],
    ['EventFeedMeta', 'chart_bucket', S.CHART_BUCKETS, 'month'],
    ['ZoneStatusView', 'kind', S.ZONE_KINDS, 'SMP'],
    ['ZoneCanary', 'verdict', S.SEVERITIES, 'unknown'],
  ];
  it.each(cases)('%s.%s takes exactly its enum values', (name, key, values, wrong) => {
    for (const v of values) expect(ok(name, withValue(name, key, v)), `${key}=${v}`).toBe(true);
    expect(ok(name, withValue(name, key, wrong))).toBe(false);
  });

  it('the event type and detector enums equal the ones the derive steps emit', () => {
    expect([...S.EVENT_TYPES]).toEqual([...DERIVE_EVENT_TYPES]);
    expect([...S.DETECTORS]).toEqual([...DERIVE_DETECTORS]);
  });

  it('host and zone verdicts may be null (unknown); canary and incident severities may not', () => {
    expect(ok('HostSummary', withValue('HostSummary', 'verdict', null))).toBe(true);
    expect(ok('ZoneStatusView', withValue('ZoneStatusView', 'verdict', null))).toBe(true);
    expect(ok('ZoneCanary', withValue('ZoneCanary', 'verdict', null))).toBe(false);
    expect(ok('IncidentView', withValue('IncidentView', 'severity', null))).toBe(false);
  });
});

describe('formats', () => {
  it('timestamps are ISO 8601 UTC with milliseconds and a real calendar date', () => {
    for (const good of ['2026-11-22T08:15:00.000Z', '2024-02-29T23:59:59.999Z']) expect(ok('EventChartBucket', withValue('EventChartBucket', 'bucket_start', good))).toBe(true);
    for (const bad of [
      '2026-11-22T08:15:00Z', // no milliseconds: not the canonical form
      '2026-11-22T09:15:00.000+01:00', // offset: responses are UTC
      '2026-11-22 08:15:00.000Z',
      '2026-02-30T00:00:00.000Z',
      '2026-02-29T00:00:00.000Z',
      '2026-11-22T24:00:00.000Z',
      '2026-11-22',
      '',
      1763799300000,
    ]) {
      expect(ok('EventChartBucket', withValue('EventChartBucket', 'bucket_start', bad)), String(bad)).toBe(false);
    }
  });

  it('dates are YYYY-MM-DD calendar dates', () => {
    expect(ok('ChurnSeriesPoint', withValue('ChurnSeriesPoint', 'day', '2028-02-29'))).toBe(true);
    for (const bad of ['2026-02-29', '2026-13-01', '2026-1-5', '2026-11-22T00:00:00.000Z', '22/11/2026']) {
      expect(ok('ChurnSeriesPoint', withValue('ChurnSeriesPoint', 'day', bad)), bad).toBe(false);
    }
  });

  it('integers are integers and counts are not negative; numbers may be fractional', () => {
    expect(ok('EventChartBucket', withValue('EventChartBucket', 'count', 1.5))).toBe(false);
    expect(ok('EventChartBucket', withValue('EventChartBucket', 'count', -1))).toBe(false);
    expect(ok('EventChartBucket', withValue('EventChartBucket', 'count', '3'))).toBe(false);
    expect(ok('IncidentView', withValue('IncidentView', 'id', 4.2))).toBe(false);
    expect(ok('HostsRollup', withValue('HostsRollup', 'avg_latency_p50', 201.25))).toBe(true);
    expect(ok('HostSummary', withValue('HostSummary', 'uptime_24h', 99.95))).toBe(true);
    expect(ok('HostSummary', withValue('HostSummary', 'uptime_24h', 100.5))).toBe(false);
    // net_growth is a signed integer
    expect(ok('ApView', withValue('ApView', 'net_growth', -40))).toBe(true);
    expect(ok('ApView', withValue('ApView', 'net_growth', 0.5))).toBe(false);
    // latencies are whole milliseconds
    expect(ok('HostLatency', withValue('HostLatency', 'p95', 410.5))).toBe(false);
    expect(ok('UptimePercentiles', withValue('UptimePercentiles', 'p99', -1))).toBe(false);
  });

  it('identifiers are in canonical form', () => {
    expect(ok('ParticipantListItem', { ...(EXAMPLES.ParticipantListItem as Obj), id: '0106::ABC', value: 'ABC' })).toBe(false);
    expect(ok('ParticipantListItem', { ...(EXAMPLES.ParticipantListItem as Obj), id: 'iso6523-actorid-upis::0106:12345678' })).toBe(false);
    expect(ok('ParticipantListItem', withValue('ParticipantListItem', 'id', '0106::87654321'))).toBe(false); // id != scheme::value
    expect(ok('ParticipantListItem', withValue('ParticipantListItem', 'ap_seat_id', 'pbe000123'))).toBe(false);
    expect(ok('ParticipantListItem', withValue('ParticipantListItem', 'country', 'nl'))).toBe(false);
    expect(ok('ParticipantListItem', withValue('ParticipantListItem', 'smp', 'SMP.acme.example'))).toBe(false);
    expect(ok('HostView', withValue('HostView', 'hostname', 'localhost'))).toBe(false);
    expect(ok('ApView', withValue('ApView', 'key', 'acme'))).toBe(false);
    for (const key of ['c-acme', 'o-acme-peppol-3fa1c2', 's-PBE000123']) expect(ok('ApView', withValue('ApView', 'key', key)), key).toBe(true);
    expect(ok('UptimeBucket', withValue('UptimeBucket', 'location', 'eu-west'))).toBe(true);
    expect(ok('UptimeBucket', withValue('UptimeBucket', 'location', 'EU West'))).toBe(false);
  });
});

describe('rules between fields', () => {
  it('an open incident has no end, a closed one has', () => {
    const closed = { ...(EXAMPLES.IncidentView as Obj), status: 'closed' };
    expect(ok('IncidentView', closed)).toBe(false);
    expect(ok('IncidentView', { ...closed, ended_at: '2026-11-21T12:00:00.000Z' })).toBe(true);
    expect(ok('ZoneIncidentView', withValue('ZoneIncidentView', 'status', 'closed'))).toBe(false);
  });

  it('uptime counts add up to checks_total', () => {
    expect(ok('UptimeBucket', withValue('UptimeBucket', 'down', 2))).toBe(false);
  });

  it('net_growth = joiners + movers_in - movers_out - leavers', () => {
    expect(ok('ChurnSeriesPoint', withValue('ChurnSeriesPoint', 'net_growth', 8))).toBe(false);
    expect(ok('ChurnTotals', withValue('ChurnTotals', 'leavers', 11))).toBe(false);
    expect(ok('ApChurnView', withValue('ApChurnView', 'from', '2026-11-23'))).toBe(false); // after `to`
  });

  it('filter_count_capped marks the 50000 cap only', () => {
    const capped = { ...(EXAMPLES.ListMeta as Obj), filter_count: 50_000, filter_count_capped: true };
    expect(ok('ListMeta', capped)).toBe(true);
    expect(ok('ListMeta', { ...capped, filter_count: 49_999 })).toBe(false);
    expect(ok('ListMeta', { ...capped, filter_count: null })).toBe(false);
    expect(ok('ListMeta', { ...capped, filter_count: 50_001, filter_count_capped: false })).toBe(false);
  });

  it('unpaginated lists always have next_cursor null; churn participants hold at most 500 rows', () => {
    for (const name of ['ProviderPage', 'ApPage', 'ChurnParticipantPage'] as const) {
      expect(ok(name, withValue(name, 'next_cursor', (EXAMPLES.IncidentPage as Obj).next_cursor))).toBe(false);
    }
    const row = (EXAMPLES.ChurnParticipantPage as { items: unknown[] }).items[0];
    expect(ok('ChurnParticipantPage', { items: Array(500).fill(row), next_cursor: null })).toBe(true);
    expect(ok('ChurnParticipantPage', { items: Array(501).fill(row), next_cursor: null })).toBe(false);
  });

  it('a curated provider detail is always verified', () => {
    expect(ok('ProviderDetailView', withValue('ProviderDetailView', 'verified', false))).toBe(false);
  });

  it('cursors in envelopes are opaque base64url strings', () => {
    expect(ok('IncidentPage', withValue('IncidentPage', 'next_cursor', 'abc/def=='))).toBe(false);
    expect(ok('IncidentPage', withValue('IncidentPage', 'next_cursor', ''))).toBe(false);
  });
});

describe('types', () => {
  it('exports the inferred TypeScript types under the resource names', () => {
    // Compile-time: assigning parsed values to the exported types must type-check.
    const host: S.HostView = S.HostView.parse(EXAMPLES.HostView);
    const page: S.EventFeedPage = S.EventFeedPage.parse(EXAMPLES.EventFeedPage);
    const meta: S.ListMeta | undefined = S.ParticipantListPage.parse(EXAMPLES.ParticipantListPage).meta;
    expect(host.hostname).toBe('ap1.acme.example');
    expect(page.items[0]!.anomalies[0]!.grade).toBe('warning');
    expect(meta?.filter_count_capped).toBe(false);
  });
});
