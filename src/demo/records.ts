// Feed lines (NDJSON) of every kind, built as strings. Probe lines are the bulk (tens of millions at the
// peppol scale), so they are assembled from cached fragments; the rest goes through JSON.stringify.
import { CANARY_EXISTING, CANARY_NONEXISTENT, DOCTYPES, EC_SML, LOCATIONS, OPENPEPPOL_SML, QUARTER, TRANSPORT_AS4, ZONES } from './config.js';
import { iso, rttMs, S, type Host, type Network, type ParticipantBase, type Provider } from './network.js';
import { NORMALS, Rng, hash32, mix32 } from './prng.js';
import { certAt, hostingAt, scriptedSeverity, zoneFailureAt, type AckPlan, type DownVariant, type PState, type Script, type Severity } from './script.js';

const r1 = (x: number): number => Math.round(x * 10) / 10;
const DOWN_VARIANTS: readonly DownVariant[] = ['timeout', 'refused', 'tls', 'http5xx'];

const rttCache = new Map<string, number>();
function rtt(loc: number, dc: string): number {
  const k = `${dc}|${loc}`;
  let v = rttCache.get(k);
  if (v === undefined) {
    v = rttMs(loc, dc);
    rttCache.set(k, v);
  }
  return v;
}

const hostPrefix = new Map<Host, string>();

/** One probe line: host checked from location `loc` at slot t. */
export function probeLine(net: Network, script: Script, host: Host, loc: number, t: number, atIso: string): string {
  const slot = Math.round((t - net.start) / QUARTER);
  let severity: Severity = 'up';
  let variant: DownVariant = 'timeout';
  const sc = scriptedSeverity(script, host.idx, loc, t);
  if (sc !== null) {
    severity = sc.severity;
    variant = sc.outage.downVariant;
  } else {
    // Background noise: at most one location per host and slot, so never a majority.
    const h = hash32(net.seed, S.noise, host.idx, slot);
    if (h % 1000 < 3 && (h >>> 10) % LOCATIONS.length === loc) {
      severity = (h >>> 20) % 3 === 0 ? 'down' : 'degraded';
      variant = DOWN_VARIANTS[(h >>> 24) % 4]!;
    }
  }
  // Latency noise: log-normal factors from a fixed table of normal deviates, indexed by hashes.
  const h1 = hash32(net.seed, S.probe, host.idx, slot, loc);
  const h2 = mix32(h1 ^ 0x9e3779b9);
  const hosting = hostingAt(host, t);
  const rt = rtt(loc, hosting.dc);
  const dns = r1(0.8 + 3 * Math.exp(0.6 * NORMALS[h1 & 0xffff]!));
  const tcp = r1(rt * Math.exp(0.08 * NORMALS[h1 >>> 16]!));
  const tls = r1(2 * rt * Math.exp(0.06 * NORMALS[h2 & 0xffff]!) + 4 + 6 * Math.exp(0.3 * NORMALS[(h2 >>> 8) & 0xffff]!));
  let http = r1(rt + host.serverMs * Math.exp(0.35 * NORMALS[h2 >>> 16]!));
  let prefix = hostPrefix.get(host);
  if (prefix === undefined) {
    prefix = `","hostname":"${host.hostname}","role":"${host.role}","location":"`;
    hostPrefix.set(host, prefix);
  }
  const head = `{"kind":"probe","at":"${atIso}${prefix}${LOCATIONS[loc]!.name}","result":"${severity}","phases":{"dns":${dns},`;
  if (severity === 'up') {
    return `${head}"tcp":${tcp},"tls":${tls},"http":${http},"total":${r1(dns + tcp + tls + http + 0.4)}},${hosting.json},${certAt(host, t).json}}`;
  }
  if (severity === 'degraded') {
    let error: string;
    const u = (mix32(h2 + 1) >>> 8) / 16_777_216;
    if (u < 0.6) {
      http = r1(http + 2500 + 10_000 * u);
      error = `slow response: ${Math.round(dns + tcp + tls + http)} ms`;
    } else {
      error = 'HTTP 503 Service Unavailable on 1 of 3 attempts';
      http = r1(http * 3);
    }
    return `${head}"tcp":${tcp},"tls":${tls},"http":${http},"total":${r1(dns + tcp + tls + http + 0.4)}},${hosting.json},${certAt(host, t).json},"error":"${error}"}`;
  }
  switch (variant) {
    case 'timeout':
      return `${head}"tcp":null,"tls":null,"http":null,"total":null},${hosting.json},"cert":null,"error":"connect ETIMEDOUT after 10000 ms"}`;
    case 'refused':
      return `${head}"tcp":null,"tls":null,"http":null,"total":null},${hosting.json},"cert":null,"error":"connect ECONNREFUSED"}`;
    case 'tls':
      return `${head}"tcp":${tcp},"tls":null,"http":null,"total":null},${hosting.json},"cert":null,"error":"TLS handshake failed: connection reset by peer"}`;
    case 'http5xx':
      return `${head}"tcp":${tcp},"tls":${tls},"http":${http},"total":${r1(dns + tcp + tls + http + 0.4)}},${hosting.json},${certAt(host, t).json},"error":"HTTP 502 Bad Gateway"}`;
  }
}

/** One SML/SMK canary line: zone checked from location `loc` at slot t. */
export function zoneLine(net: Network, script: Script, zone: number, loc: number, t: number, atIso: string): string {
  const z = ZONES[zone]!;
  const slot = Math.round((t - net.start) / QUARTER);
  const serial = z.soaBase + slot;
  let existingOk = CANARY_EXISTING;
  let nonexistentOk = CANARY_NONEXISTENT;
  let critical = false;
  let soa: number | null = serial;
  const f = zoneFailureAt(script, zone, loc, t);
  if (f !== null) {
    const h = hash32(net.seed, S.noise, 1000 + zone, slot, loc);
    if (f.severity === 'down') {
      existingOk = CANARY_EXISTING - 4 - (h % 3);
      critical = f.criticalNxdomain;
      soa = serial - 4;
    } else {
      existingOk = CANARY_EXISTING - 2 - (h % 2);
      soa = serial - 2;
    }
  }
  return JSON.stringify({
    kind: 'zone',
    at: atIso,
    zone: z.zone,
    zone_kind: z.kind,
    env: z.env,
    operator: z.operator,
    location: LOCATIONS[loc]!.name,
    existing_ok: existingOk,
    existing_total: CANARY_EXISTING,
    nonexistent_ok: nonexistentOk,
    nonexistent_total: CANARY_NONEXISTENT,
    critical_nxdomain: critical,
    soa_serial: soa,
    ns: z.ns,
    dname_target: z.zone === EC_SML && t >= script.cutoverAt ? OPENPEPPOL_SML : null,
    management: { host: z.management.host, tls_ok: true, tls_not_after: z.management.notAfter, tls_issuer: z.management.issuer },
  });
}

export function smlZoneAt(script: Script, t: number): string {
  return t >= script.cutoverAt ? OPENPEPPOL_SML : EC_SML;
}

export function endpointPath(host: Host, pathVar: number): string {
  if (pathVar === 0) return host.path;
  return `${host.path.replace(/\/$/, '')}/v${pathVar + 1}`;
}

export function endpointUrl(host: Host, pathVar: number): string {
  return `https://${host.hostname}${endpointPath(host, pathVar)}`;
}

const endpointCache = new Map<string, string>();
function endpointJson(net: Network, seat: number, apHost: number, pathVar: number, doctype: number): string {
  const key = `${seat}|${apHost}|${pathVar}|${doctype}`;
  let v = endpointCache.get(key);
  if (v === undefined) {
    const s = net.seats[seat]!;
    const d = DOCTYPES[doctype]!;
    v = JSON.stringify({
      doctype: d.doctype,
      process: d.process,
      transport_profile: TRANSPORT_AS4,
      url: endpointUrl(net.hosts[apHost]!, pathVar),
      cert: { fingerprint: s.signFingerprint, subject: s.subject, issuer: s.signIssuer },
    });
    endpointCache.set(key, v);
  }
  return v;
}

/** Clears per-network caches (a new network is built per run). */
export function resetRecordCaches(): void {
  endpointCache.clear();
  hostPrefix.clear();
  rttCache.clear();
}

export interface SweepLines {
  directory: string;
  sml: string;
  smp: string | null;
}

/** Directory, SML and (when registered) SMP lines of one participant observed at t in state s. */
export function sweepLines(net: Network, script: Script, b: ParticipantBase, s: PState, t: number): SweepLines {
  const at = iso(t);
  const card = s.dirPresent ? { name: s.name, countryCode: b.country, registrationDate: s.registrationDate } : null;
  const directory = JSON.stringify({ kind: 'directory', at, participant: b.peppolId, present: s.dirPresent, card });
  const smpHost = s.registered ? net.hosts[s.smp]!.hostname : null;
  const sml = JSON.stringify({ kind: 'sml', at, participant: b.id, registered: s.registered, smp: smpHost, zone: smlZoneAt(script, t) });
  let smp: string | null = null;
  if (s.registered) {
    const eps: string[] = [];
    for (let d = 0; d < DOCTYPES.length; d++) if (s.mask & (1 << d)) eps.push(endpointJson(net, s.seat, s.apHost, s.pathVar, d));
    smp = `{"kind":"smp","at":"${at}","participant":${JSON.stringify(b.peppolId)},"smp":"${smpHost}","endpoints":[${eps.join(',')}]}`;
  }
  return { directory, sml, smp };
}

// ---------------------------------------------------------------------------------------------------
// Member registry, curation, acknowledgements.

const AUTHORITIES: readonly (readonly [string, string, string, string, string])[] = [
  ['bosa', 'FPS BOSA', 'Federal Public Service Policy and Support', 'BE', 'https://bosa.belgium.be'],
  ['dfo', 'DFØ', 'Norwegian Agency for Public and Financial Management', 'NO', 'https://dfo.no'],
  ['digg', 'DIGG', 'Agency for Digital Government', 'SE', 'https://www.digg.se'],
  ['logius', 'Logius', 'Logius, Ministry of the Interior and Kingdom Relations', 'NL', 'https://www.logius.nl'],
  ['digst', 'Digitaliseringsstyrelsen', 'Danish Agency for Digital Government', 'DK', 'https://digst.dk'],
  ['kosit', 'KoSIT', 'Koordinierungsstelle für IT-Standards', 'DE', 'https://www.xoev.de'],
  ['aife', 'AIFE', "Agence pour l'informatique financière de l'État", 'FR', 'https://www.economie.gouv.fr/aife'],
  ['agid', 'AgID', "Agenzia per l'Italia Digitale", 'IT', 'https://www.agid.gov.it'],
  ['ato', 'ATO', 'Australian Taxation Office', 'AU', 'https://www.ato.gov.au'],
  ['imda', 'IMDA', 'Infocomm Media Development Authority', 'SG', 'https://www.imda.gov.sg'],
  ['digital-agency-jp', 'Digital Agency', 'Digital Agency of Japan', 'JP', 'https://www.digital.go.jp'],
  ['mbie', 'MBIE', 'Ministry of Business, Innovation and Employment', 'NZ', 'https://www.mbie.govt.nz'],
];

export function providerHostnames(net: Network, p: Provider): string[] {
  return [...p.smpHosts, ...p.apHosts].map((h) => net.hosts[h]!.hostname).sort();
}

export function memberLines(net: Network, at: number): string[] {
  const out: string[] = [];
  const a = iso(at);
  const flags = (o: Partial<Record<'peppol_authority' | 'ap' | 'smp' | 'end_user' | 'observer', boolean>>) => ({
    peppol_authority: o.peppol_authority ?? false,
    ap: o.ap ?? false,
    smp: o.smp ?? false,
    end_user: o.end_user ?? false,
    observer: o.observer ?? false,
  });
  for (const p of net.providers) {
    if (!p.member) continue;
    out.push(
      JSON.stringify({
        kind: 'member',
        at: a,
        key: p.slug,
        trade_name: p.tradeName,
        legal_name: p.legalName,
        country: p.country,
        url: `https://www.${p.domain}`,
        flags: flags({ ap: p.apHosts.length > 0, smp: p.smpHosts.length > 0 }),
        hostnames: providerHostnames(net, p),
        active: true,
      }),
    );
  }
  for (const [key, trade, legal, country, url] of AUTHORITIES) {
    out.push(JSON.stringify({ kind: 'member', at: a, key, trade_name: trade, legal_name: legal, country, url, flags: flags({ peppol_authority: true }), hostnames: [], active: true }));
  }
  const r = Rng.of(net.seed, S.member, 1);
  const extra: readonly (readonly [string, string, string, { end_user?: boolean; observer?: boolean }])[] = [
    ['nordic-retail-group', 'Nordic Retail Group', 'SE', { end_user: true }],
    ['benelux-hospitals-purchasing', 'Benelux Hospitals Purchasing', 'BE', { end_user: true }],
    ['einvoicing-observatory', 'eInvoicing Observatory', 'NL', { observer: true }],
    ['open-einvoice-research', 'Open eInvoice Research', 'DE', { observer: true }],
  ];
  for (const [key, name, country, f] of extra) {
    out.push(JSON.stringify({ kind: 'member', at: a, key, trade_name: name, legal_name: r.chance(0.5) ? null : name, country, url: null, flags: flags(f), hostnames: [], active: true }));
  }
  return out;
}

export function curationLine(net: Network, p: Provider, at: number, notes: string | null): string {
  return JSON.stringify({
    kind: 'curation',
    at: iso(at),
    slug: p.slug,
    name: p.tradeName,
    country: p.country,
    natural_key: p.naturalKey,
    notes,
    seats: p.seats.map((s) => net.seats[s]!.id),
    member_key: p.member ? p.slug : null,
  });
}

export function ackLine(a: AckPlan): string {
  return JSON.stringify({ kind: 'ack', at: iso(a.at), anomaly_id: a.anomalyId, acknowledged: a.acknowledged, reason: a.reason });
}
