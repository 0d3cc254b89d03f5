// Static configuration of the demo scenario: scales, time line, probe locations, zones, document types,
// certificate authorities. See docs/demo.md.

export const SCALES = ['small', 'medium', 'large', 'peppol'] as const;
export type Scale = (typeof SCALES)[number];

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/**
 * Every scale's scripted window ends here; the window starts `days` before it. Feeds can be generated
 * past this instant (a steady-state network keeps running), never before the scale's start.
 */
export const SCRIPTED_END = Date.UTC(2026, 10, 22); // 2026-11-22T00:00:00Z

export interface ScaleConfig {
  /** participants observed by the initial full sweep (joiners come on top) */
  participants: number;
  hosts: number;
  smpHosts: number;
  providers: number;
  seats: number;
  days: number;
  /** probe cadence per host and location, in minutes (15 or 30) */
  probeMinutes: 15 | 30;
  /** rolling re-observation: each participant is re-observed once every this many days */
  rollingDays: number;
  /** background participant changes per day (joiners, leavers, moves, ...) */
  backgroundPerDay: number;
  /** size of the scripted mass SMP migration */
  burstSize: number;
  /** segments are written as .ndjson.gz */
  gzip: boolean;
}

export const SCALE_CONFIG: Record<Scale, ScaleConfig> = {
  small: { participants: 5_000, hosts: 60, smpHosts: 10, providers: 40, seats: 75, days: 35, probeMinutes: 15, rollingDays: 7, backgroundPerDay: 10, burstSize: 120, gzip: false },
  medium: { participants: 100_000, hosts: 200, smpHosts: 34, providers: 134, seats: 250, days: 60, probeMinutes: 15, rollingDays: 14, backgroundPerDay: 40, burstSize: 150, gzip: true },
  large: { participants: 600_000, hosts: 600, smpHosts: 100, providers: 400, seats: 750, days: 90, probeMinutes: 30, rollingDays: 30, backgroundPerDay: 120, burstSize: 400, gzip: true },
  peppol: { participants: 3_000_000, hosts: 1_200, smpHosts: 200, providers: 800, seats: 1_500, days: 90, probeMinutes: 30, rollingDays: 90, backgroundPerDay: 400, burstSize: 1_500, gzip: true },
};

export function scaleStart(scale: Scale): number {
  return SCRIPTED_END - SCALE_CONFIG[scale].days * DAY;
}

/** Segment window of probe and zone records. */
export const QUARTER = 15 * MINUTE;
/** Zone canaries run every 15 minutes at every scale. */
export const ZONE_MINUTES = 15;
/** The initial full sweep runs over the first six hours. */
export const BASELINE_SWEEP = 6 * HOUR;
/** Daily delta sweeps run from 02:00 to 03:00 UTC. */
export const DELTA_SWEEP_OFFSET = 2 * HOUR;

export interface Location {
  name: string;
  lat: number;
  lon: number;
}
export const LOCATIONS: readonly Location[] = [
  { name: 'fra', lat: 50.11, lon: 8.68 },
  { name: 'ams', lat: 52.37, lon: 4.9 },
  { name: 'dub', lat: 53.35, lon: -6.26 },
  { name: 'waw', lat: 52.23, lon: 21.01 },
  { name: 'sto', lat: 59.33, lon: 18.07 },
  { name: 'mad', lat: 40.42, lon: -3.7 },
];

export interface ZoneDef {
  zone: string;
  kind: 'SML' | 'SMK';
  env: string;
  operator: string;
  ns: string[];
  management: { host: string; issuer: string; notAfter: string };
  soaBase: number;
}
export const ZONES: readonly ZoneDef[] = [
  {
    zone: 'edelivery.tech.ec.europa.eu',
    kind: 'SML',
    env: 'production',
    operator: 'European Commission (DG DIGIT)',
    ns: ['ns1.tech.ec.europa.eu', 'ns2.tech.ec.europa.eu', 'ns3.tech.ec.europa.eu'],
    management: { host: 'sml.edelivery.tech.ec.europa.eu', issuer: 'CN=HARICA GEANT TLS RSA 1,O=Hellenic Academic and Research Institutions CA,C=GR', notAfter: '2027-05-14T23:59:59Z' },
    soaBase: 2_014_000_000,
  },
  {
    zone: 'acc.edelivery.tech.ec.europa.eu',
    kind: 'SMK',
    env: 'acceptance',
    operator: 'European Commission (DG DIGIT)',
    ns: ['ns1.tech.ec.europa.eu', 'ns2.tech.ec.europa.eu'],
    management: { host: 'smk.acc.edelivery.tech.ec.europa.eu', issuer: 'CN=HARICA GEANT TLS RSA 1,O=Hellenic Academic and Research Institutions CA,C=GR', notAfter: '2027-03-02T23:59:59Z' },
    soaBase: 1_100_000_000,
  },
  {
    zone: 'participant.sml.prod.tech.peppol.org',
    kind: 'SML',
    env: 'production',
    operator: 'OpenPeppol AISBL',
    ns: ['ns-1187.awsdns-20.org', 'ns-1970.awsdns-54.co.uk', 'ns-294.awsdns-36.com', 'ns-617.awsdns-13.net'],
    management: { host: 'sml.prod.tech.peppol.org', issuer: 'CN=Amazon RSA 2048 M02,O=Amazon,C=US', notAfter: '2027-08-30T23:59:59Z' },
    soaBase: 1,
  },
  {
    zone: 'participant.sml.test.tech.peppol.org',
    kind: 'SMK',
    env: 'test',
    operator: 'OpenPeppol AISBL',
    ns: ['ns-1502.awsdns-59.org', 'ns-1732.awsdns-24.co.uk', 'ns-451.awsdns-56.com', 'ns-797.awsdns-35.net'],
    management: { host: 'sml.test.tech.peppol.org', issuer: 'CN=Amazon RSA 2048 M02,O=Amazon,C=US', notAfter: '2027-07-19T23:59:59Z' },
    soaBase: 1,
  },
];
export const EC_SML = 'edelivery.tech.ec.europa.eu';
export const OPENPEPPOL_SML = 'participant.sml.prod.tech.peppol.org';
export const CANARY_EXISTING = 12;
export const CANARY_NONEXISTENT = 4;

export const AP_CA = {
  G2: 'CN=PEPPOL ACCESS POINT CA - G2,O=OpenPEPPOL AISBL,C=BE',
  G3: 'CN=PEPPOL ACCESS POINT CA - G3,O=OpenPEPPOL AISBL,C=BE',
} as const;
export const SMP_CA = {
  G2: 'CN=PEPPOL SERVICE METADATA PUBLISHER CA - G2,O=OpenPEPPOL AISBL,C=BE',
  G3: 'CN=PEPPOL SERVICE METADATA PUBLISHER CA - G3,O=OpenPEPPOL AISBL,C=BE',
} as const;
export const CERT_VALIDITY = 730 * DAY;

export const TRANSPORT_AS4 = 'peppol-transport-as4-v2_0';

const UBL = 'busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:';
const BILLING = 'cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:billing:01:1.0';
export interface DocType {
  code: string;
  doctype: string;
  process: string;
}
/** Real Peppol document type and process identifiers. Bit i of a participant's mask = DOCTYPES[i]. */
export const DOCTYPES: readonly DocType[] = [
  { code: 'bis3-invoice', doctype: `${UBL}Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1`, process: BILLING },
  { code: 'bis3-creditnote', doctype: `${UBL}CreditNote-2::CreditNote##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1`, process: BILLING },
  { code: 'order', doctype: `${UBL}Order-2::Order##urn:fdc:peppol.eu:poacc:trns:order:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:ordering:3' },
  { code: 'order-response', doctype: `${UBL}OrderResponse-2::OrderResponse##urn:fdc:peppol.eu:poacc:trns:order_response:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:ordering:3' },
  { code: 'despatch-advice', doctype: `${UBL}DespatchAdvice-2::DespatchAdvice##urn:fdc:peppol.eu:poacc:trns:despatch_advice:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:despatch_advice:3' },
  { code: 'invoice-response', doctype: `${UBL}ApplicationResponse-2::ApplicationResponse##urn:fdc:peppol.eu:poacc:trns:invoice_response:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:invoice_response:3' },
  { code: 'mlr', doctype: `${UBL}ApplicationResponse-2::ApplicationResponse##urn:fdc:peppol.eu:poacc:trns:mlr:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:mlr:3' },
  { code: 'catalogue', doctype: `${UBL}Catalogue-2::Catalogue##urn:fdc:peppol.eu:poacc:trns:catalogue:3::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:catalogue_only:3' },
  { code: 'xrechnung-ubl-invoice', doctype: `${UBL}Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0::2.1`, process: BILLING },
  { code: 'xrechnung-ubl-creditnote', doctype: `${UBL}CreditNote-2::CreditNote##urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0::2.1`, process: BILLING },
  { code: 'xrechnung-cii', doctype: 'busdox-docid-qns::urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100::CrossIndustryInvoice##urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0::D16B', process: BILLING },
  { code: 'pint-aunz-invoice', doctype: `${UBL}Invoice-2::Invoice##urn:peppol:pint:billing-1@aunz-1::2.1`, process: 'cenbii-procid-ubl::urn:peppol:bis:billing' },
  { code: 'pint-aunz-creditnote', doctype: `${UBL}CreditNote-2::CreditNote##urn:peppol:pint:billing-1@aunz-1::2.1`, process: 'cenbii-procid-ubl::urn:peppol:bis:billing' },
  { code: 'pint-sg-invoice', doctype: `${UBL}Invoice-2::Invoice##urn:peppol:pint:billing-1@sg-1::2.1`, process: 'cenbii-procid-ubl::urn:peppol:bis:billing' },
  { code: 'pint-sg-creditnote', doctype: `${UBL}CreditNote-2::CreditNote##urn:peppol:pint:billing-1@sg-1::2.1`, process: 'cenbii-procid-ubl::urn:peppol:bis:billing' },
  { code: 'pint-jp-invoice', doctype: `${UBL}Invoice-2::Invoice##urn:peppol:pint:billing-1@jp-1::2.1`, process: 'cenbii-procid-ubl::urn:peppol:bis:billing' },
  { code: 'bis3-selfbilling', doctype: `${UBL}Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:selfbilling:3.0::2.1`, process: 'cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:selfbilling:01:1.0' },
];
export const DOCTYPE_INVOICE_RESPONSE = 5;

const m = (...bits: number[]): number => bits.reduce((acc, b) => acc | (1 << b), 0);
/** Document-type profiles: [mask, weight] per country group. */
export const DOCTYPE_PROFILES: Record<string, readonly (readonly [number, number])[]> = {
  default: [
    [m(0, 1), 70],
    [m(0, 1, 5), 10],
    [m(0, 1, 2, 3), 8],
    [m(0, 1, 2, 3, 4, 6), 5],
    [m(0, 1, 5, 6), 5],
    [m(0, 1, 16), 2],
  ],
  nordic: [
    [m(0, 1), 55],
    [m(0, 1, 2, 3), 15],
    [m(0, 1, 5, 6), 10],
    [m(0, 1, 2, 3, 4, 7), 10],
    [m(0, 1, 5), 10],
  ],
  DE: [
    [m(0, 1, 8, 10), 60],
    [m(0, 1, 8, 9, 10), 25],
    [m(8, 10), 15],
  ],
  AUNZ: [
    [m(11, 12), 80],
    [m(0, 1, 11, 12), 20],
  ],
  SG: [
    [m(13, 14), 85],
    [m(0, 1, 13, 14), 15],
  ],
  JP: [[m(15), 100]],
};
export function profileGroup(country: string): string {
  if (country === 'NO' || country === 'SE' || country === 'DK' || country === 'FI') return 'nordic';
  if (country === 'DE' || country === 'AT') return 'DE';
  if (country === 'AU' || country === 'NZ') return 'AUNZ';
  if (country === 'SG') return 'SG';
  if (country === 'JP') return 'JP';
  return 'default';
}

/** Participant country mix (share of the network) and identifier schemes per country with weights. */
export const COUNTRY_MIX: readonly { country: string; share: number; schemes: readonly (readonly [string, number])[]; directoryShare: number }[] = [
  { country: 'BE', share: 53, schemes: [['0208', 80], ['9925', 20]], directoryShare: 0.8 },
  { country: 'NO', share: 9.5, schemes: [['0192', 100]], directoryShare: 0.85 },
  { country: 'SE', share: 7.5, schemes: [['0007', 85], ['0088', 15]], directoryShare: 0.75 },
  { country: 'NL', share: 6.5, schemes: [['0106', 55], ['9944', 30], ['0190', 15]], directoryShare: 0.7 },
  { country: 'DK', share: 4, schemes: [['0184', 85], ['0088', 15]], directoryShare: 0.75 },
  { country: 'DE', share: 4, schemes: [['0204', 55], ['9930', 35], ['0088', 10]], directoryShare: 0.6 },
  { country: 'FR', share: 2.5, schemes: [['0009', 60], ['0002', 40]], directoryShare: 0.65 },
  { country: 'IT', share: 2, schemes: [['0211', 80], ['0201', 20]], directoryShare: 0.6 },
  { country: 'FI', share: 2, schemes: [['0216', 70], ['0037', 30]], directoryShare: 0.7 },
  { country: 'AU', share: 2.5, schemes: [['0151', 100]], directoryShare: 0.7 },
  { country: 'AT', share: 1, schemes: [['9915', 100]], directoryShare: 0.6 },
  { country: 'SG', share: 1.2, schemes: [['0195', 100]], directoryShare: 0.6 },
  { country: 'NZ', share: 0.8, schemes: [['0088', 100]], directoryShare: 0.7 },
  { country: 'JP', share: 0.8, schemes: [['0188', 100]], directoryShare: 0.5 },
  { country: 'IE', share: 0.5, schemes: [['9935', 100]], directoryShare: 0.6 },
  { country: 'LU', share: 0.5, schemes: [['9938', 100]], directoryShare: 0.6 },
  { country: 'PL', share: 0.4, schemes: [['9945', 100]], directoryShare: 0.6 },
  { country: 'EE', share: 0.4, schemes: [['0191', 100]], directoryShare: 0.6 },
  { country: 'GB', share: 0.4, schemes: [['9932', 100]], directoryShare: 0.6 },
];

/** Where service providers are based (share of providers). */
export const PROVIDER_COUNTRY_MIX: readonly (readonly [string, number])[] = [
  ['BE', 24], ['NO', 10], ['SE', 10], ['NL', 10], ['DK', 6], ['DE', 10], ['FR', 6], ['IT', 5], ['FI', 4],
  ['AU', 4], ['AT', 2], ['SG', 2], ['NZ', 1], ['JP', 1], ['IE', 1], ['LU', 1], ['PL', 1], ['EE', 1], ['GB', 1],
];
