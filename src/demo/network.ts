// The static network of the scenario: providers, seats, hosts (held in memory: at most a few thousand),
// and participants (never held: `participantBase(i)` recomputes participant i from (seed, i)).
import { createHash } from 'node:crypto';
import {
  AP_CA,
  CERT_VALIDITY,
  COUNTRY_MIX,
  DAY,
  DOCTYPE_PROFILES,
  LOCATIONS,
  MINUTE,
  PROVIDER_COUNTRY_MIX,
  SCALE_CONFIG,
  SMP_CA,
  profileGroup,
  scaleStart,
  type Scale,
  type ScaleConfig,
} from './config.js';
import { companyName, providerName, slugify, subsidiaryName } from './names.js';
import { Rng, hash32, permute, pickCumulative, streamId } from './prng.js';
import { SERIAL_SPACE, bandOf, naturalKey, schemeValue } from './schemes.js';

export type ProviderClass = 'curated' | 'organisation' | 'seat';

export interface Provider {
  idx: number;
  tradeName: string;
  legalName: string;
  slug: string;
  domain: string;
  country: string;
  international: boolean;
  /** verification class at the start of the scenario */
  cls: ProviderClass;
  smpOnly: boolean;
  seats: number[];
  apHosts: number[];
  smpHosts: number[];
  /** SMP host that serves this provider's participants (own or a partner's); -1 for SMP-only providers */
  smpHost: number;
  size: number;
  member: boolean;
  naturalKey: string | null;
  /** when the provider's curation record first appears (ms); null when never curated */
  curatedFrom: number | null;
}

export interface Seat {
  idx: number;
  id: string;
  provider: number;
  country: string;
  /** the certificate O= value; null for a bare seat */
  org: string | null;
  subject: string;
  /** signing certificate published in SMP endpoints */
  signFingerprint: string;
  signIssuer: string;
}

export interface CertGen {
  /** first probe slot presenting this certificate */
  from: number;
  fingerprint: string;
  subject: string;
  issuer: string;
  notBefore: number;
  notAfter: number;
  seat: number;
  /** `"cert":{...}` JSON fragment */
  json: string;
}

export interface HostingGen {
  from: number;
  kind: string;
  dc: string;
  ips: string[];
  ptr: string | null;
  /** `"ips":[...],"ptr":...` JSON fragment */
  json: string;
}

export interface Host {
  idx: number;
  hostname: string;
  role: 'SMP' | 'AP';
  provider: number;
  /** offset of this host's probe slots within the cadence (ms) */
  phase: number;
  path: string;
  serverMs: number;
  /** seat of the initial certificate and its CA generation */
  seat: number;
  issuerGen: 'G2' | 'G3';
  /** filled by the script: certificate generations in time order */
  certs: CertGen[];
  hosting: HostingGen[];
  /** what the script uses this host for (null: free for natural certificate rotations) */
  reserved: string | null;
}

export interface Network {
  seed: number;
  scale: Scale;
  cfg: ScaleConfig;
  start: number;
  providers: Provider[];
  seats: Seat[];
  hosts: Host[];
  /** per participant country: cumulative weights over `apProviders` */
  countryTables: Map<string, Float64Array>;
  apProviders: number[];
  /** special providers used by the script */
  roles: { orgTarget: number; bareTarget: number; staleKey: number };
  participantKey: number;
}

export const S = {
  provider: streamId('provider'),
  seat: streamId('seat'),
  host: streamId('host'),
  participant: streamId('participant'),
  permute: streamId('participant-permutation'),
  cert: streamId('cert'),
  probe: streamId('probe'),
  noise: streamId('noise'),
  script: streamId('script'),
  day: streamId('day'),
  obs: streamId('observation'),
  member: streamId('member'),
};

export function sha256hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** RFC 4514 attribute value escaping. */
export function escapeDn(v: string): string {
  return v.replace(/([\\,+"<>;=])/g, '\\$1').replace(/^([ #])/, '\\$1').replace(/ $/, '\\ ');
}

export function subjectOf(seatId: string, org: string | null, country: string): string {
  return org === null ? `CN=${seatId},C=${country}` : `CN=${seatId},O=${escapeDn(org)},C=${country}`;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

export function certJson(c: Omit<CertGen, 'json'>): string {
  return `"cert":${JSON.stringify({ fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, not_before: iso(c.notBefore), not_after: iso(c.notAfter) })}`;
}

export function hostingJson(ips: string[], ptr: string | null): string {
  return `"ips":${JSON.stringify(ips)},"ptr":${JSON.stringify(ptr)}`;
}

// ---------------------------------------------------------------------------------------------------
// Hosting: cloud regions and hosters with address ranges and reverse-DNS styles.

interface HostingKind {
  dc: string;
  v4: readonly (readonly [number, number, number])[];
  v6: string | null;
  ptr: (ip: readonly number[], rng: Rng, domain: string) => string | null;
}
const dashed = (ip: readonly number[]): string => ip.join('-');
const aws = (region: string) => (ip: readonly number[]) => (region === 'us-east-1' ? `ec2-${dashed(ip)}.compute-1.amazonaws.com` : `ec2-${dashed(ip)}.${region}.compute.amazonaws.com`);
export const HOSTING_KINDS: Record<string, HostingKind> = {
  'aws-eu-central-1': { dc: 'fra', v4: [[3, 120, 127], [18, 192, 199], [52, 28, 29], [35, 156, 159]], v6: '2a05:d014', ptr: aws('eu-central-1') },
  'aws-eu-west-1': { dc: 'dub', v4: [[34, 240, 255], [52, 16, 19], [54, 72, 79]], v6: '2a05:d018', ptr: aws('eu-west-1') },
  'aws-eu-north-1': { dc: 'sto', v4: [[13, 48, 53], [16, 16, 17]], v6: '2a05:d016', ptr: aws('eu-north-1') },
  'aws-ap-southeast-2': { dc: 'syd', v4: [[13, 54, 55], [3, 104, 107]], v6: '2406:da1c', ptr: aws('ap-southeast-2') },
  'aws-ap-southeast-1': { dc: 'sin', v4: [[13, 212, 215], [18, 136, 143]], v6: '2406:da18', ptr: aws('ap-southeast-1') },
  'aws-ap-northeast-1': { dc: 'tok', v4: [[13, 112, 115], [18, 176, 183]], v6: '2406:da14', ptr: aws('ap-northeast-1') },
  'azure-westeurope': { dc: 'ams', v4: [[20, 4, 8], [40, 114, 119], [52, 166, 166]], v6: null, ptr: () => null },
  'azure-northeurope': { dc: 'dub', v4: [[20, 54, 54], [40, 112, 113]], v6: null, ptr: () => null },
  'gcp-europe-west1': { dc: 'bru', v4: [[34, 76, 79], [35, 187, 195]], v6: null, ptr: (ip) => `${[...ip].reverse().join('.')}.bc.googleusercontent.com` },
  'gcp-europe-north1': { dc: 'hel', v4: [[35, 228, 228], [34, 88, 88]], v6: null, ptr: (ip) => `${[...ip].reverse().join('.')}.bc.googleusercontent.com` },
  ovh: { dc: 'rbx', v4: [[51, 38, 38], [51, 68, 68], [51, 75, 77], [54, 36, 39], [91, 121, 121], [137, 74, 74], [146, 59, 59]], v6: '2001:41d0', ptr: (ip, rng) => `ns${rng.range(3_000_000, 3_299_999)}.ip-${ip[0]}-${ip[1]}-${ip[2]}.eu` },
  hetzner: { dc: 'nbg', v4: [[5, 9, 9], [78, 46, 46], [88, 198, 198], [95, 216, 217], [116, 202, 203], [135, 181, 181], [136, 243, 243], [138, 201, 201], [144, 76, 76], [159, 69, 69], [168, 119, 119], [176, 9, 9], [188, 40, 40]], v6: '2a01:4f8', ptr: (ip) => `static.${ip.join('.')}.clients.your-server.de` },
  own: { dc: 'own', v4: [[185, 0, 255], [193, 0, 255], [194, 0, 255], [195, 0, 255], [212, 0, 255], [213, 0, 255], [217, 0, 255]], v6: null, ptr: (_ip, rng, domain) => `${rng.pick(['gw', 'fw', 'edge', 'lb'])}${rng.range(1, 4)}.${domain}` },
};

const CAPITAL_DC: Record<string, string> = {
  BE: 'bru', NO: 'osl', SE: 'sto', NL: 'ams', DK: 'cph', DE: 'fra', FR: 'par', IT: 'mil', FI: 'hel', AT: 'vie', AU: 'syd', SG: 'sin', NZ: 'akl', JP: 'tok', IE: 'dub', LU: 'lux', PL: 'waw', EE: 'tll', GB: 'lon',
};
const DC_COORD: Record<string, readonly [number, number]> = {
  fra: [50.11, 8.68], ams: [52.37, 4.9], dub: [53.35, -6.26], sto: [59.33, 18.07], syd: [-33.87, 151.21], sin: [1.35, 103.82], tok: [35.68, 139.69], bru: [50.85, 4.35],
  hel: [60.17, 24.94], rbx: [50.69, 3.18], nbg: [49.45, 11.08], osl: [59.91, 10.75], cph: [55.68, 12.57], par: [48.86, 2.35], mil: [45.46, 9.19], vie: [48.21, 16.37],
  akl: [-36.85, 174.76], lux: [49.61, 6.13], waw: [52.23, 21.01], tll: [59.44, 24.75], lon: [51.51, -0.13],
};

/** Round-trip time (ms) from a probe location to a data centre. */
export function rttMs(locIdx: number, dc: string): number {
  const loc = LOCATIONS[locIdx]!;
  const [lat, lon] = DC_COORD[dc] ?? DC_COORD.fra!;
  const r = Math.PI / 180;
  const a = Math.sin(((lat - loc.lat) * r) / 2) ** 2 + Math.cos(loc.lat * r) * Math.cos(lat * r) * Math.sin(((lon - loc.lon) * r) / 2) ** 2;
  const km = 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(a)));
  return 3 + km / 70;
}

function hostingKindFor(country: string, rng: Rng): string {
  if (country === 'AU' || country === 'NZ') return rng.chance(0.8) ? 'aws-ap-southeast-2' : 'own';
  if (country === 'SG') return rng.chance(0.8) ? 'aws-ap-southeast-1' : 'own';
  if (country === 'JP') return rng.chance(0.8) ? 'aws-ap-northeast-1' : 'own';
  const nordic = country === 'NO' || country === 'SE' || country === 'DK' || country === 'FI';
  return rng.weighted<string>([
    ['aws-eu-central-1', 25],
    ['aws-eu-west-1', 15],
    ['aws-eu-north-1', nordic ? 18 : 3],
    ['azure-westeurope', 15],
    ['azure-northeurope', 5],
    ['gcp-europe-west1', 5],
    ['gcp-europe-north1', country === 'FI' ? 10 : 1],
    ['ovh', 8],
    ['hetzner', 8],
    ['own', 15],
  ]);
}

/** A hosting generation (addresses and PTR) of the given kind. */
export function makeHosting(kind: string, country: string, domain: string, rng: Rng, from: number): HostingGen {
  const k = HOSTING_KINDS[kind]!;
  const [a, b0, b1] = rng.pick(k.v4);
  const ip = [a, rng.range(b0, b1), rng.range(0, 255), rng.range(2, 254)];
  const ips = [ip.join('.')];
  if (k.v6 !== null && rng.chance(0.45)) ips.push(`${k.v6}:${rng.int(0x10000).toString(16)}:${rng.int(0x10000).toString(16)}::${rng.range(1, 0xfff).toString(16)}`);
  const ptr = k.ptr(ip, rng, domain);
  const dc = k.dc === 'own' ? (CAPITAL_DC[country] ?? 'fra') : k.dc;
  return { from, kind, dc, ips, ptr, json: hostingJson(ips, ptr) };
}

export function makeCert(seed: number, host: Host, seat: Seat, issuerGen: 'G2' | 'G3', notBefore: number, from: number): CertGen {
  const issuer = host.role === 'SMP' ? SMP_CA[issuerGen] : AP_CA[issuerGen];
  const fingerprint = sha256hex(`host-cert|${seed}|${host.hostname}|${seat.id}|${notBefore}`);
  const c = { from, fingerprint, subject: seat.subject, issuer, notBefore, notAfter: notBefore + CERT_VALIDITY, seat: seat.idx };
  return { ...c, json: certJson(c) };
}

// ---------------------------------------------------------------------------------------------------

const PATHS = ['/as4', '/peppol/as4', '/oxalis/as4', '/phase4/as4', '/as4/receive', '/msh/'];

export function buildNetwork(seed: number, scale: Scale): Network {
  const cfg = SCALE_CONFIG[scale];
  const start = scaleStart(scale);
  const P = cfg.providers;
  const providers: Provider[] = [];
  const usedSlugs = new Set<string>();
  const nInternational = Math.max(2, Math.round(P * 0.04));
  const nSmpOnly = Math.max(1, Math.round(cfg.smpHosts / 8));
  const smpOnlySet = new Set<number>();
  for (let k = 0; k < nSmpOnly; k++) smpOnlySet.add(2 + 20 * k);

  for (let p = 0; p < P; p++) {
    const rng = Rng.of(seed, S.provider, p);
    const international = p > 0 && p <= nInternational;
    const country = p === 0 ? 'BE' : international ? rng.pick(['BE', 'NL', 'DE', 'NO', 'SE', 'FR']) : rng.weighted(PROVIDER_COUNTRY_MIX);
    let naming = providerName(country, international, rng);
    let slug = slugify(naming.tradeName);
    for (let tries = 0; usedSlugs.has(slug) && tries < 20; tries++) {
      naming = providerName(country, international, rng);
      slug = slugify(naming.tradeName);
    }
    if (usedSlugs.has(slug)) slug = `${slug}${p}`;
    usedSlugs.add(slug);
    const cls: ProviderClass = p < 3 || smpOnlySet.has(p) ? 'curated' : p % 8 === 5 ? 'organisation' : p % 12 === 7 ? 'seat' : 'curated';
    const size = (1 / Math.pow(p + 1, 0.9)) * (cls === 'curated' ? 1 : 0.5);
    const member = cls === 'curated' ? p < 10 || rng.chance(0.85) : cls === 'organisation' ? rng.chance(0.3) : false;
    providers.push({
      idx: p,
      tradeName: naming.tradeName,
      legalName: naming.legalName,
      slug,
      domain: `${slug.replace(/-/g, '')}.${naming.tld}`,
      country,
      international,
      cls,
      smpOnly: smpOnlySet.has(p),
      seats: [],
      apHosts: [],
      smpHosts: [],
      smpHost: -1,
      size,
      member,
      naturalKey: cls === 'curated' ? naturalKey(country, p, rng) : null,
      curatedFrom: cls === 'curated' ? start : null,
    });
  }
  const orgProviders = providers.filter((p) => p.cls === 'organisation');
  const bareProviders = providers.filter((p) => p.cls === 'seat');
  if (orgProviders.length < 1 || bareProviders.length < 2) throw new Error('scale too small for the scripted provider roles');
  const roles = { orgTarget: orgProviders[0]!.idx, bareTarget: bareProviders[0]!.idx, staleKey: bareProviders[1]!.idx };
  // The stale-key provider is a member (the registry knows it) but its seat is bare until curated mid-window.
  providers[roles.staleKey]!.member = true;

  // Seats.
  const seats: Seat[] = [];
  const seatCounter = new Map<string, number>();
  const rngSeat = Rng.of(seed, S.seat, 0);
  const addSeat = (prov: Provider, country: string, org: string | null): void => {
    const n = (seatCounter.get(country) ?? rngSeat.range(1, 40)) + 1 + rngSeat.int(7);
    seatCounter.set(country, n);
    const id = `P${country}${String(n).padStart(6, '0')}`;
    const subject = subjectOf(id, org, country);
    const seat: Seat = {
      idx: seats.length,
      id,
      provider: prov.idx,
      country,
      org,
      subject,
      signFingerprint: sha256hex(`sign|${seed}|${id}`),
      signIssuer: rngSeat.chance(0.4) ? AP_CA.G3 : AP_CA.G2,
    };
    seats.push(seat);
    prov.seats.push(seat.idx);
  };
  for (const prov of providers) addSeat(prov, prov.country, prov.cls === 'seat' ? null : prov.legalName);
  // One organisation-class provider with two seats under the same O= string.
  if (orgProviders.length > 1) addSeat(orgProviders[1]!, orgProviders[1]!.country, orgProviders[1]!.legalName);
  const extraCandidates = providers.filter((p) => p.cls === 'curated' && !p.smpOnly);
  const countryWeights = COUNTRY_MIX.map((c) => [c.country, c.share] as const);
  while (seats.length < cfg.seats) {
    const prov = rngSeat.weighted(extraCandidates.filter((p) => p.seats.length < 12).map((p) => [p, Math.pow(p.size, 0.6)] as const));
    const have = new Set(prov.seats.map((s) => seats[s]!.country));
    let country = rngSeat.weighted(countryWeights);
    for (let t = 0; t < 5 && have.has(country); t++) country = rngSeat.weighted(countryWeights);
    addSeat(prov, country, rngSeat.chance(0.5) ? subsidiaryName(prov.slug.split('-')[0]!, country) : prov.legalName);
  }

  // Hosts: SMP hosts to SMP-only providers (two each) and the largest curated providers; AP hosts to every
  // other provider (one each) plus extras by size.
  const hosts: Host[] = [];
  const rngHost = Rng.of(seed, S.host, 0);
  const smpPlan = new Map<number, number>();
  const apPlan = new Map<number, number>();
  let smpBudget = cfg.smpHosts;
  for (const p of providers) if (p.smpOnly && smpBudget > 0) {
    const n = Math.min(2, smpBudget);
    smpPlan.set(p.idx, n);
    smpBudget -= n;
  }
  for (const p of providers) {
    if (smpBudget <= 0) break;
    if (p.cls === 'curated' && !p.smpOnly) {
      smpPlan.set(p.idx, 1);
      smpBudget--;
    }
  }
  const apProvidersList = providers.filter((p) => !p.smpOnly);
  let apBudget = cfg.hosts - cfg.smpHosts;
  for (const p of apProvidersList) {
    apPlan.set(p.idx, 1);
    apBudget--;
  }
  if (apBudget < 0) throw new Error('not enough AP hosts for the providers');
  const extraAp = apProvidersList.filter((p) => p.cls === 'curated');
  while (apBudget > 0) {
    const p = rngHost.weighted(extraAp.filter((q) => (apPlan.get(q.idx) ?? 0) < 8).map((q) => [q, Math.pow(q.size, 0.7)] as const));
    apPlan.set(p.idx, (apPlan.get(p.idx) ?? 0) + 1);
    apBudget--;
  }
  const newHost = (prov: Provider, role: 'SMP' | 'AP', k: number, style: string): Host => {
    const rng = Rng.of(seed, S.host, prov.idx, role === 'SMP' ? 1 : 2, k);
    const hostname = role === 'SMP' ? `${k === 0 ? 'smp' : `smp${k + 1}`}.${prov.domain}` : `${k === 0 ? style : `${style}${k + 1}`}.${prov.domain}`;
    const idx = hosts.length;
    const seat = seats[role === 'SMP' ? prov.seats[0]! : prov.seats[k % prov.seats.length]!]!;
    const host: Host = {
      idx,
      hostname,
      role,
      provider: prov.idx,
      phase: cfg.probeMinutes === 30 ? (idx % 2) * 15 * MINUTE : 0,
      path: role === 'SMP' ? '/' : rng.pick(PATHS),
      serverMs: 8 + Math.exp(2.5 + 0.7 * rng.normal()),
      seat: seat.idx,
      issuerGen: rng.chance(0.4) ? 'G3' : 'G2',
      certs: [],
      hosting: [makeHosting(hostingKindFor(prov.country, rng), prov.country, prov.domain, rng, start)],
      reserved: null,
    };
    hosts.push(host);
    return host;
  };
  for (const prov of providers) {
    const style = Rng.of(seed, S.host, prov.idx, 7).pick(['ap', 'as4', 'peppol', 'ap-prod', 'accesspoint']);
    for (let k = 0; k < (smpPlan.get(prov.idx) ?? 0); k++) prov.smpHosts.push(newHost(prov, 'SMP', k, style).idx);
    for (let k = 0; k < (apPlan.get(prov.idx) ?? 0); k++) prov.apHosts.push(newHost(prov, 'AP', k, style).idx);
  }
  if (hosts.length !== cfg.hosts) throw new Error(`host plan mismatch: ${hosts.length} != ${cfg.hosts}`);

  // SMP used by each provider's participants.
  const allSmp = hosts.filter((h) => h.role === 'SMP');
  for (const prov of providers) {
    if (prov.smpOnly) continue;
    if (prov.smpHosts.length > 0) {
      prov.smpHost = prov.smpHosts[0]!;
      continue;
    }
    const rng = Rng.of(seed, S.provider, prov.idx, 99);
    prov.smpHost = rng.weighted(allSmp.map((h) => [h.idx, (providers[h.provider]!.smpOnly ? 3 : 1) * (providers[h.provider]!.country === prov.country ? 3 : 1)] as const));
  }

  // Provider choice per participant country.
  const apProviders = apProvidersList.map((p) => p.idx);
  const countryTables = new Map<string, Float64Array>();
  for (const c of COUNTRY_MIX) {
    const cum = new Float64Array(apProviders.length);
    let acc = 0;
    apProviders.forEach((pi, k) => {
      const p = providers[pi]!;
      const affinity = p.country === c.country ? 1 : p.international ? 0.15 : 0.004;
      acc += p.size * affinity;
      cum[k] = acc;
    });
    countryTables.set(c.country, cum);
  }

  return { seed, scale, cfg, start, providers, seats, hosts, countryTables, apProviders, roles, participantKey: hash32(seed, S.permute) };
}

// ---------------------------------------------------------------------------------------------------
// Participants.

export interface ParticipantBase {
  index: number;
  /** canonical id `scheme::value` (lower-case) */
  id: string;
  /** full Peppol form as a directory or SMP shows it */
  peppolId: string;
  scheme: string;
  country: string;
  provenance: 'directory' | 'discovered';
  name: string | null;
  registrationDate: string | null;
  /** listed in the directory but not registered in the SML at the start */
  stale: boolean;
  provider: number;
  seat: number;
  apHost: number;
  smp: number;
  mask: number;
}

/** Seat a provider uses for a participant of `country`, and the AP host the endpoint points to. */
export function servingFor(net: Network, provider: number, country: string, rng: Rng): { seat: number; apHost: number } {
  const prov = net.providers[provider]!;
  const seat = prov.seats.find((s) => net.seats[s]!.country === country) ?? prov.seats[0]!;
  const presenting = prov.apHosts.filter((h) => net.hosts[h]!.seat === seat);
  const pool = presenting.length > 0 ? presenting : prov.apHosts;
  return { seat, apHost: pool[rng.int(pool.length)]! };
}

const DATE_2015 = Date.UTC(2015, 0, 1);

export function participantBase(net: Network, i: number): ParticipantBase {
  const p = permute(i, net.participantKey, SERIAL_SPACE);
  const band = bandOf(p);
  const rng = Rng.of(net.seed, S.participant, i);
  const display = schemeValue(band, p - band.start, rng);
  const value = display.toLowerCase();
  const directory = rng.chance(band.directoryShare);
  const publicSector = (band.scheme === '0204' || band.scheme === '0201') && rng.chance(0.7);
  const name = directory ? companyName(band.country, rng, publicSector) : null;
  let registrationDate: string | null = null;
  if (directory) {
    const x = Math.sqrt(rng.float());
    const day = Math.floor((DATE_2015 + x * (net.start - DAY - DATE_2015)) / DAY) * DAY;
    registrationDate = new Date(day).toISOString().slice(0, 10);
  }
  const stale = directory && i < net.cfg.participants && rng.chance(0.01);
  const table = net.countryTables.get(band.country)!;
  const provider = net.apProviders[pickCumulative(table, rng.float())]!;
  const { seat, apHost } = servingFor(net, provider, band.country, rng);
  const mask = rng.weighted(DOCTYPE_PROFILES[profileGroup(band.country)]!);
  return {
    index: i,
    id: `${band.scheme}::${value}`,
    peppolId: `iso6523-actorid-upis::${band.scheme}:${display}`,
    scheme: band.scheme,
    country: band.country,
    provenance: directory ? 'directory' : 'discovered',
    name,
    registrationDate,
    stale,
    provider,
    seat,
    apHost,
    smp: net.providers[provider]!.smpHost,
    mask,
  };
}
