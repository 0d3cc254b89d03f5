// One valid example per resource (RESOURCE_SCHEMAS name -> value). Used as `examples` in the OpenAPI
// components and as the base case of the schema tests. Every example holds every optional key, so a
// test can remove keys one by one. Edge-safe: plain data.
import { encodeCursor } from '../cursor.js';
import { problemTypePage } from '../problem-pages.js';
import type { ResourceName } from './index.js';

const cert = {
  fingerprint: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  subject: 'CN=PBE000123,O=Acme Peppol Services NV,C=BE',
  issuer: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE',
  not_before: '2025-06-01T00:00:00.000Z',
  not_after: '2027-06-01T00:00:00.000Z',
};
const providerInfo = { key: 'acme', trade_name: 'Acme Peppol Services', legal_name: 'Acme Peppol Services NV', country: 'BE' };
const latency = { p50: 182, p95: 410 };
const network = { ips: ['192.0.2.10', '2001:db8::10'], ptr: 'ap1.acme.example' };
const hostSummary = {
  hostname: 'ap1.acme.example',
  role: 'AP',
  verdict: 'degraded',
  latency,
  uptime_24h: 97.5,
  last_bucket: '2026-11-22T07:00:00.000Z',
  cert,
  provider: providerInfo,
};
const rollup = { hosts: 1200, avg_uptime_24h: 99.2, avg_latency_p50: 201.4 };
const step = { at: '2026-11-21T10:00:00.000Z', severity: 'down' };
const incident = {
  id: 42,
  hostname: 'ap1.acme.example',
  role: 'AP',
  status: 'open',
  severity: 'down',
  started_at: '2026-11-21T09:45:00.000Z',
  ended_at: null,
  timeline: [{ at: '2026-11-21T09:45:00.000Z', severity: 'degraded' }, step],
};
const pct = { p50: 180, p95: 400, p99: 900 };
const phases = { dns: { p50: 5, p95: 20, p99: 40 }, tcp: { p50: 20, p95: 60, p99: 120 }, tls: { p50: 60, p95: 150, p99: 300 }, http: { p50: 90, p95: 170, p99: 440 }, total: pct };
const bucket = {
  resolution: 'hourly',
  hostname: 'ap1.acme.example',
  role: 'AP',
  location: '__all__',
  bucket_start: '2026-11-22T07:00:00.000Z',
  checks_total: 72,
  up: 70,
  degraded: 1,
  down: 1,
  uptime_pct: 98.61111111111111,
  phases,
};
const CURSOR = encodeCursor({ route: 'incidents.list', partition: [], key: [Date.parse('2026-11-21T09:45:00.000Z'), 42], hint: '', dir: 'next' });
const card = { name: 'Example Trading BV', countryCode: 'NL', registrationDate: '2019-03-14' };
const registration = { registered: true, since: '2025-01-10T08:00:00.000Z', smp: 'smp.acme.example' };
const seatProvider = { slug: 'acme', name: 'Acme Peppol Services', country: 'BE', verified: true };
const seatRef = { seat_id: 'PBE000123', provider: seatProvider };
const seatHost = { hostname: 'ap1.acme.example', role: 'AP', since: '2025-06-01T00:00:00.000Z' };
const endpoint = {
  doctype: 'busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1',
  transport_profile: 'peppol-transport-as4-v2_0',
  url: 'https://ap1.acme.example/as4',
  seat: seatRef,
};
const participantEvent = {
  id: 'ev-0123456789abcdef',
  type: 'participant_smp_changed',
  observed_at: '2026-11-20T12:00:00.000Z',
  payload: { before: { smp: 'smp.old.example' }, after: { smp: 'smp.acme.example' } },
};
const historyRow = { fact: 'smp', valid_from: '2026-11-20T12:00:00.000Z', valid_to: null, detail: { smp: 'smp.acme.example' } };
const listItem = {
  id: '0106::12345678',
  scheme: '0106',
  value: '12345678',
  name: 'Example Trading BV',
  country: 'NL',
  registered: true,
  smp: 'smp.acme.example',
  ap_seat_id: 'PBE000123',
  ap_provider: 'Acme Peppol Services',
  provenance: 'directory',
  first_seen_at: '2025-01-10T08:00:00.000Z',
};
const facet = { value: 'PBE000123', count: 1520, label: 'Acme Peppol Services' };
const listMeta = {
  total_count: 3_000_000,
  total_count_estimated: true,
  filter_count: 1234,
  filter_count_capped: false,
  facets: { country: [{ value: 'NL', count: 1234 }], ap: [facet] },
};
const anomalyRef = { id: 'mus-0123456789abcdef', detector: 'moved_to_unverified_seat', grade: 'warning' };
const globalEvent = {
  id: 'ev-fedcba9876543210',
  type: 'ap_seat_changed',
  hostname: null,
  participant: '0208::0123456789',
  related_hosts: ['ap.example.net'],
  observed_at: '2026-11-21T18:30:00.000Z',
  payload: { before: { seats: ['PBE000123'], seat: 'PBE000123' }, after: { seats: ['PNL000999'], seat: 'PNL000999' } },
  anomalies: [anomalyRef],
};
const chartBucket = { bucket_start: '2026-11-21T00:00:00.000Z', count: 17 };
const feedMeta = {
  total_count: 120_000,
  total_count_estimated: true,
  filter_count: 17,
  facets: { type: [{ value: 'ap_seat_changed', count: 17 }] },
  chart_bucket: 'day',
  chart_data: [chartBucket],
};
const anomaly = {
  id: 'mus-0123456789abcdef',
  detector: 'moved_to_unverified_seat',
  grade: 'warning',
  target: { participant: '0106::12345678', seat: 'PNL000999' },
  event_refs: ['ev-fedcba9876543210'],
  evidence: { seat_verified: false },
  observed_at: '2026-11-21T18:30:00.000Z',
  acknowledged: false,
  reason: null,
};
const provider = {
  key: 'acme',
  trade_name: 'Acme Peppol Services',
  legal_name: 'Acme Peppol Services NV',
  country: 'BE',
  url: 'https://acme.example',
  flags: { peppol_authority: false, ap: true, smp: true, end_user: false, observer: false },
  hostnames: ['ap1.acme.example', 'smp.acme.example'],
  participant_count: 15_200,
  slug: 'acme',
};
const apView = { key: 'c-acme', name: 'Acme Peppol Services', verified: true, seats: ['PBE000123'], participant_count: 15_200, net_growth: -12 };
const mix = { value: 'BE', count: 9000 };
const providerSeat = { seat_id: 'PBE000123', hosts: [seatHost] };
const series = { day: '2026-11-21', joiners: 10, movers_in: 3, movers_out: 5, leavers: 1, net_growth: 7 };
const totals = { joiners: 100, movers_in: 30, movers_out: 50, leavers: 10, net_growth: 70 };
const counterpart = { key: 'o-peppol-bridge-3fa1c2', name: 'Peppol Bridge GmbH', won: 12, lost: 4 };
const churnParticipant = { id: '0208::0123456789', scheme: '0208', value: '0123456789', day: '2026-11-20', counterpart_key: 's-PDE000777', counterpart_name: null };
const canary = {
  location: 'eu-west',
  verdict: 'up',
  existing_ok: 20,
  existing_total: 20,
  nonexistent_ok: 10,
  nonexistent_total: 10,
  critical_nxdomain: false,
  soa_serial: 2026112201,
  ns: ['ns1.sml.example', 'ns2.sml.example'],
  observed_at: '2026-11-22T07:55:00.000Z',
};
const zoneIncident = {
  id: 3,
  zone: 'edelivery.tech.ec.europa.eu',
  status: 'open',
  severity: 'degraded',
  started_at: '2026-11-22T02:00:00.000Z',
  ended_at: null,
  timeline: [{ at: '2026-11-22T02:00:00.000Z', severity: 'degraded' }],
};
const zone = {
  zone: 'edelivery.tech.ec.europa.eu',
  kind: 'SML',
  env: 'production',
  operator: 'European Commission',
  verdict: 'up',
  critical_nxdomain: false,
  cutover: { dname_present: false, dname_target: null },
  canary: [canary],
  management: { host: 'edelivery.tech.ec.europa.eu', tls_ok: true, tls_not_after: '2027-03-01T00:00:00.000Z', tls_issuer: 'CN=Example CA' },
  incidents: [zoneIncident],
};

export const EXAMPLES: Record<ResourceName, unknown> = {
  Problem: {
    type: 'http://127.0.0.1:8787/problems/invalid-parameter',
    title: 'Invalid query parameter',
    status: 400,
    detail: 'Query parameter "limit": expected an integer (values outside 1–200 are clamped), got "ten".',
    instance: '/v1/incidents',
  },
  Verdict: 'degraded',
  HostRole: 'SMP',
  Health: { status: 'ok', service: 'peppol-snapshot' },
  HealthDb: { status: 'ok', service: 'peppol-snapshot', db: true, generated_at: '2026-11-22T08:00:00.000Z', age_seconds: 1800, fresh: true },
  HostLatency: latency,
  HostNetwork: network,
  HostCert: cert,
  HostProviderInfo: providerInfo,
  HostView: { hostname: 'ap1.acme.example', role: 'AP', verdict: 'up', network, cert, provider: providerInfo },
  HostSummary: hostSummary,
  HostsRollup: rollup,
  HostsResponse: { items: [hostSummary], rollup, generated_at: '2026-11-22T08:00:00.000Z' },
  NetworkSummary: { hosts: { up: 1180, down: 8, degraded: 12 }, open_incidents: 9, anomalies_24h: 3, generated_at: '2026-11-22T08:00:00.000Z' },
  IncidentTimelineStep: step,
  IncidentView: incident,
  IncidentPage: { items: [incident], next_cursor: CURSOR },
  UptimePercentiles: pct,
  UptimePhasePercentiles: phases,
  UptimeBucket: bucket,
  UptimePage: { items: [bucket], next_cursor: null },
  ParticipantCard: card,
  ParticipantRegistration: registration,
  SeatProvider: seatProvider,
  SeatRef: seatRef,
  SeatHost: seatHost,
  ParticipantEndpointView: endpoint,
  ParticipantView: {
    id: '0106::12345678',
    scheme: '0106',
    value: '12345678',
    provenance: 'directory',
    directory: { present: true, since: '2025-01-10T08:00:00.000Z' },
    registration,
    card,
    endpoints: [endpoint],
    seats: [seatRef],
  },
  ParticipantEvent: participantEvent,
  ParticipantEventPage: { items: [participantEvent], next_cursor: null },
  ParticipantHistoryRow: historyRow,
  ParticipantHistoryPage: { items: [historyRow], next_cursor: CURSOR },
  ParticipantListItem: listItem,
  FacetBucket: facet,
  ListMeta: listMeta,
  ParticipantListPage: { items: [listItem], next_cursor: CURSOR, prev_cursor: null, meta: listMeta },
  ParticipantStats: {
    total_count: 3_000_000,
    refreshed_at: '2026-11-22T08:00:00.000Z',
    facets: {
      country: [{ value: 'BE', count: 900_000 }],
      scheme: [{ value: '0208', count: 800_000 }],
      registered: [{ value: 'true', count: 2_900_000 }],
      provenance: [{ value: 'directory', count: 2_700_000 }],
      smp: [{ value: 'smp.acme.example', count: 40_000 }],
      ap: [facet],
    },
  },
  AnomalyRef: anomalyRef,
  GlobalEvent: globalEvent,
  EventChartBucket: chartBucket,
  EventFeedMeta: feedMeta,
  EventFeedPage: { items: [globalEvent], next_cursor: CURSOR, prev_cursor: CURSOR, meta: feedMeta },
  AnomalyView: anomaly,
  AnomalyPage: { items: [anomaly], next_cursor: null },
  ProviderView: provider,
  ProviderPage: { items: [provider], next_cursor: null },
  ApView: apView,
  ApPage: { items: [apView], next_cursor: null },
  ApProviderDetail: {
    key: 'c-acme',
    name: 'Acme Peppol Services',
    verified: true,
    participant_count: 15_200,
    seats: [seatRef],
    country_mix: [mix],
    scheme_mix: [{ value: '0208', count: 8000 }],
  },
  ApMixBucket: mix,
  ProviderSeatView: providerSeat,
  ProviderDetailView: { slug: 'acme', name: 'Acme Peppol Services', country: 'BE', natural_key: 'BE0123456789', notes: null, verified: true, seats: [providerSeat] },
  SeatView: { seat_id: 'PBE000123', provider: seatProvider, hosts: [seatHost] },
  ChurnSeriesPoint: series,
  ChurnTotals: totals,
  ChurnCounterpartTotal: counterpart,
  ApChurnView: { key: 'c-acme', name: 'Acme Peppol Services', from: '2026-10-24', to: '2026-11-22', totals, series: [series], counterparts: [counterpart] },
  ChurnParticipant: churnParticipant,
  ChurnParticipantPage: { items: [churnParticipant], next_cursor: null },
  ZoneCanary: canary,
  ZoneIncidentView: zoneIncident,
  ZoneStatusView: zone,
  SmlResponse: { zones: [zone] },
  ApiCatalog: {
    linkset: [
      {
        anchor: 'http://127.0.0.1:8787/v1',
        'service-desc': [{ href: 'http://127.0.0.1:8787/openapi.json', type: 'application/vnd.oai.openapi+json;version=3.1' }],
        status: [{ href: 'http://127.0.0.1:8787/health', type: 'application/json' }],
      },
    ],
  },
  OpenApiDocument: { openapi: '3.1.1', info: { title: 'Peppol Network Monitoring API', version: '1' }, paths: {} },
  ProblemTypePage: problemTypePage('not-found', 'http://127.0.0.1:8787'),
};
