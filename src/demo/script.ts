// The scripted happenings of the scenario: host outages, certificate rotations, hosting moves, zone
// failures, the DNAME cutover, a seat becoming curated, participant changes (background and special) and
// operator acknowledgements. Everything here is a pure function of (seed, scale) plus the number of days
// generated; generating more days never changes earlier ones (that is what makes feeds incremental).
import { anomalyId, anomalyTargetKey, type AnomalyTarget, type Detector } from '../derive/anomaly-id.js';
import { CERT_VALIDITY, DAY, DELTA_SWEEP_OFFSET, DOCTYPE_INVOICE_RESPONSE, HOUR, LOCATIONS, MINUTE, QUARTER, SCRIPTED_END, ZONES, COUNTRY_MIX } from './config.js';
import { renamedCompany } from './names.js';
import { HOSTING_KINDS, makeCert, makeHosting, participantBase, servingFor, S, type CertGen, type Host, type HostingGen, type Network, type ParticipantBase } from './network.js';
import { Rng, hash32 } from './prng.js';

export type Severity = 'up' | 'degraded' | 'down';
export type DownVariant = 'timeout' | 'refused' | 'tls' | 'http5xx';

export interface Step {
  at: number;
  severity: Severity;
}

export interface Outage {
  id: string;
  host: number;
  template: string;
  /** true: a majority of locations is affected, so an incident is expected */
  expectIncident: boolean;
  flaps: boolean;
  locations: number[];
  downVariant: DownVariant;
  /** severity changes seen by the affected locations; the last step is `up` at `end` */
  steps: Step[];
  start: number;
  end: number;
}

export type HostChangeKind = 'cert_rotation_regular' | 'cert_rotation_off_cadence' | 'cert_identity_shift' | 'hosting_move';
export interface HostChange {
  id: string;
  kind: HostChangeKind;
  host: number;
  /** first probe slot showing the new state */
  at: number;
  /** certificate changes */
  certBefore?: CertGen;
  certAfter?: CertGen;
  /** hosting changes */
  hostingBefore?: HostingGen;
  hostingAfter?: HostingGen;
}

export interface ZoneFailure {
  id: string;
  zone: number;
  start: number;
  end: number;
  locations: number[];
  severity: 'degraded' | 'down';
  criticalNxdomain: boolean;
  expectIncident: boolean;
}

export type PChangeKind = 'join' | 'leave' | 'rejoin' | 'smp' | 'move' | 'seat' | 'endpoint' | 'doctype' | 'card';
export interface PChange {
  id: string;
  kind: PChangeKind;
  index: number;
  day: number;
  /** observation time (the delta sweep record showing the change) */
  at: number;
  /** name of the special scenario this change belongs to; null for background changes */
  special: string | null;
  smp?: number;
  provider?: number;
  seat?: number;
  apHost?: number;
  pathVar?: number;
  mask?: number;
  name?: string;
  registrationDate?: string;
}

export interface AnomalyPlan {
  id: string;
  detector: Detector;
  target: AnomalyTarget;
  targetKey: string;
  windowStart: number;
  changeIds: string[];
}

export interface AckPlan {
  at: number;
  anomalyId: string;
  acknowledged: boolean;
  reason: string;
}

export interface Script {
  lastDay: number;
  outages: Outage[];
  outagesByHost: Map<number, Outage[]>;
  hostChanges: HostChange[];
  zoneFailures: ZoneFailure[];
  cutoverAt: number;
  curationAt: number;
  pchanges: Map<number, PChange[]>;
  byDay: Map<number, PChange[]>;
  /** joinersBefore[d]: joiners on days < d; joiner k overall has index participants + k */
  joinersBefore: number[];
  anomalies: AnomalyPlan[];
  acks: AckPlan[];
  burst: { from: number; to: number; changeIds: string[] } | null;
}

type Pattern = readonly (readonly [Severity, number])[];
interface OutageTemplate {
  name: string;
  role: 'SMP' | 'AP';
  f: number;
  hour: number;
  pattern: Pattern;
  locs: number;
}
const OUTAGE_TEMPLATES: readonly OutageTemplate[] = [
  { name: 'short-down', role: 'AP', f: 0.1, hour: 10.25, pattern: [['down', 3]], locs: 6 },
  { name: 'long-down', role: 'AP', f: 0.2, hour: 13, pattern: [['down', 24]], locs: 6 },
  { name: 'escalating', role: 'SMP', f: 0.3, hour: 8, pattern: [['degraded', 8], ['down', 4], ['degraded', 2]], locs: 6 },
  { name: 'degraded-quorum', role: 'AP', f: 0.4, hour: 15.5, pattern: [['degraded', 12]], locs: 5 },
  { name: 'flapping-down', role: 'AP', f: 0.5, hour: 9, pattern: [['down', 2], ['up', 1], ['down', 1], ['up', 1], ['down', 2], ['up', 1], ['down', 1]], locs: 6 },
  { name: 'smp-down-quorum', role: 'SMP', f: 0.6, hour: 20, pattern: [['down', 8]], locs: 5 },
  { name: 'short-degraded', role: 'AP', f: 0.7, hour: 11, pattern: [['degraded', 4]], locs: 6 },
  { name: 'medium-down', role: 'AP', f: 0.8, hour: 16.75, pattern: [['down', 6]], locs: 6 },
  { name: 'flapping-mixed', role: 'SMP', f: 0.85, hour: 6, pattern: [['degraded', 2], ['up', 1], ['down', 1], ['up', 1], ['degraded', 1]], locs: 6 },
  { name: 'single-slot', role: 'AP', f: 0.9, hour: 4.5, pattern: [['down', 1]], locs: 6 },
];
const BLIP_TEMPLATES: readonly OutageTemplate[] = [
  { name: 'blip-two-locations', role: 'AP', f: 0.33, hour: 12, pattern: [['down', 4]], locs: 2 },
  { name: 'blip-one-location', role: 'SMP', f: 0.55, hour: 18, pattern: [['degraded', 12]], locs: 1 },
  { name: 'blip-two-locations-short', role: 'AP', f: 0.77, hour: 7, pattern: [['down', 2]], locs: 2 },
];

/** Background participant changes: share of the daily budget per kind. */
const BACKGROUND_MIX: readonly (readonly [PChangeKind, number])[] = [
  ['join', 0.45],
  ['leave', 0.1],
  ['move', 0.1],
  ['smp', 0.08],
  ['card', 0.1],
  ['doctype', 0.1],
  ['endpoint', 0.07],
];

export function cadenceMs(net: Network): number {
  return net.cfg.probeMinutes * MINUTE;
}

/** The first probe slot of `host` at or after `t`. */
export function alignSlot(net: Network, host: Host, t: number): number {
  const c = cadenceMs(net);
  const base = net.start + host.phase;
  return base + Math.ceil((t - base) / c) * c;
}

/** Observation time of participant i in the delta sweep of day d (02:00-03:00 UTC). */
export function observationTime(net: Network, i: number, d: number): number {
  return net.start + d * DAY + DELTA_SWEEP_OFFSET + (hash32(net.seed, S.obs, i, d) % 3600) * 1000;
}

export function dayOf(net: Network, f: number): number {
  const D = net.cfg.days;
  return Math.min(D - 1, Math.max(1, Math.floor(f * D)));
}

export function buildScript(net: Network, nowMs: number): Script {
  const { cfg, start } = net;
  const D = cfg.days;
  const lastDay = Math.max(0, Math.floor((nowMs - start) / DAY));
  const rng = Rng.of(net.seed, S.script, 1);
  const cad = cadenceMs(net);
  const horizon = Math.max(nowMs, SCRIPTED_END + 3 * DAY);
  const replicas = Math.max(1, Math.round(cfg.hosts / 60));

  // ---- host reservations
  const pools = {
    SMP: net.hosts.filter((h) => h.role === 'SMP').map((h) => h.idx),
    AP: net.hosts.filter((h) => h.role === 'AP').map((h) => h.idx),
  };
  for (const pool of Object.values(pools)) {
    for (let k = pool.length - 1; k > 0; k--) {
      const j = rng.int(k + 1);
      [pool[k], pool[j]] = [pool[j]!, pool[k]!];
    }
  }
  const reserve = (role: 'SMP' | 'AP', why: string): Host => {
    const idx = pools[role].pop();
    if (idx === undefined) throw new Error(`not enough ${role} hosts to reserve for ${why}`);
    const h = net.hosts[idx]!;
    h.reserved = why;
    return h;
  };

  // ---- outages and regional blips
  const outages: Outage[] = [];
  const addOutage = (tpl: OutageTemplate, host: Host, startT: number, expectIncident: boolean, endOverride?: number): void => {
    const r = Rng.of(net.seed, S.script, 2, host.idx, outages.length);
    const steps: Step[] = [];
    let t = alignSlot(net, host, startT);
    for (const [sev, slots] of tpl.pattern) {
      steps.push({ at: t, severity: sev });
      t += slots * cad;
    }
    const end = endOverride !== undefined ? alignSlot(net, host, endOverride) : t;
    steps.push({ at: end, severity: 'up' });
    const all = LOCATIONS.map((_, k) => k);
    for (let k = all.length - 1; k > 0; k--) {
      const j = r.int(k + 1);
      [all[k], all[j]] = [all[j]!, all[k]!];
    }
    const locations = all.slice(0, tpl.locs).sort((a, b) => a - b);
    outages.push({
      id: `out-${String(outages.length + 1).padStart(3, '0')}`,
      host: host.idx,
      template: tpl.name,
      expectIncident,
      flaps: tpl.pattern.some(([s]) => s === 'up'),
      locations,
      downVariant: r.pick(['timeout', 'refused', 'tls', 'http5xx'] as const),
      steps,
      start: steps[0]!.at,
      end,
    });
  };
  for (let rep = 0; rep < replicas; rep++) {
    const shift = rep * 0.0387;
    for (const tpl of OUTAGE_TEMPLATES) {
      const day = 1 + Math.floor(((tpl.f + shift) % 1) * (D - 2));
      addOutage(tpl, reserve(tpl.role, `outage:${tpl.name}`), start + day * DAY + tpl.hour * HOUR, true);
    }
    // Still open at the end of the scripted window: they end after it.
    addOutage({ name: 'open-down', role: 'AP', f: 1, hour: 0, pattern: [['down', 1]], locs: 6 }, reserve('AP', 'outage:open-down'), SCRIPTED_END - 5 * HOUR - rep * 40 * MINUTE, true, SCRIPTED_END + 2 * DAY);
    addOutage({ name: 'open-degraded', role: 'AP', f: 1, hour: 0, pattern: [['degraded', 1]], locs: 6 }, reserve('AP', 'outage:open-degraded'), SCRIPTED_END - 26 * HOUR - rep * 40 * MINUTE, true, SCRIPTED_END + DAY);
    for (const tpl of BLIP_TEMPLATES) {
      const day = 1 + Math.floor(((tpl.f + shift) % 1) * (D - 2));
      addOutage(tpl, reserve(tpl.role, `blip:${tpl.name}`), start + day * DAY + tpl.hour * HOUR, false);
    }
  }
  const outagesByHost = new Map<number, Outage[]>();
  for (const o of outages) {
    const list = outagesByHost.get(o.host) ?? [];
    list.push(o);
    outagesByHost.set(o.host, list);
  }

  // ---- certificate and hosting plans
  interface CertPlan {
    kind: 'regular' | 'off-cadence' | 'identity';
    at: number;
    newSeat?: number;
  }
  const certPlans = new Map<number, CertPlan>();
  const hostingPlans = new Map<number, number>();
  const curatedPrimarySeats = net.providers.filter((p) => p.cls === 'curated').map((p) => p.seats[0]!);
  for (let rep = 0; rep < replicas; rep++) {
    const shift = rep * 0.0311;
    const at = (f: number, hour: number): number => start + (1 + Math.floor(((f + shift) % 1) * (D - 2))) * DAY + hour * HOUR;
    for (const [f, hour] of [[0.15, 10], [0.7, 15]] as const) {
      const h = reserve('AP', 'cert:regular');
      certPlans.set(h.idx, { kind: 'regular', at: alignSlot(net, h, at(f, hour)) });
    }
    const oc = reserve('AP', 'cert:off-cadence');
    certPlans.set(oc.idx, { kind: 'off-cadence', at: alignSlot(net, oc, at(0.35, 11)) });
    const id = reserve('SMP', 'cert:identity-shift');
    const candidates = curatedPrimarySeats.filter((s) => net.seats[s]!.provider !== id.provider);
    certPlans.set(id.idx, { kind: 'identity', at: alignSlot(net, id, at(0.55, 14)), newSeat: candidates[rng.int(candidates.length)]! });
    const m1 = reserve('AP', 'hosting:move');
    hostingPlans.set(m1.idx, alignSlot(net, m1, at(0.25, 12)));
    const m2 = reserve('SMP', 'hosting:move');
    hostingPlans.set(m2.idx, alignSlot(net, m2, at(0.65, 16)));
  }

  const hostChanges: HostChange[] = [];
  for (const host of net.hosts) {
    const r = Rng.of(net.seed, S.cert, host.idx);
    const lead = (): number => r.range(10, 30) * DAY + r.int(86_400) * 1000;
    const secs = r.int(86_400) * 1000;
    const plan = certPlans.get(host.idx);
    let firstLead = lead();
    let notAfter: number;
    if (plan?.kind === 'regular' || plan?.kind === 'identity') notAfter = plan.at + firstLead;
    else if (plan?.kind === 'off-cadence') notAfter = start + r.range(420, 700) * DAY + secs;
    else if (host.reserved !== null) notAfter = start + (D + 120 + r.int(500)) * DAY + secs;
    else notAfter = start + r.range(31, 730) * DAY + secs;
    let cert = makeCert(net.seed, host, net.seats[host.seat]!, host.issuerGen, notAfter - CERT_VALIDITY, start);
    host.certs = [cert];
    let n = 0;
    const push = (kind: HostChangeKind, next: CertGen): void => {
      hostChanges.push({ id: `h-${host.idx}-${++n}`, kind, host: host.idx, at: next.from, certBefore: cert, certAfter: next });
      host.certs.push(next);
      cert = next;
    };
    if (plan?.kind === 'off-cadence' || plan?.kind === 'identity') {
      const seat = net.seats[plan.newSeat ?? host.seat]!;
      const next = makeCert(net.seed, host, seat, host.issuerGen, plan.at - r.range(1, 20) * HOUR, plan.at);
      push(plan.kind === 'identity' ? 'cert_identity_shift' : 'cert_rotation_off_cadence', next);
      firstLead = lead();
    }
    let curLead = firstLead;
    for (;;) {
      const t = alignSlot(net, host, cert.notAfter - curLead);
      if (t > horizon) break;
      const next = makeCert(net.seed, host, net.seats[cert.seat]!, host.issuerGen, t - r.range(1, 20) * HOUR, t);
      push('cert_rotation_regular', next);
      curLead = lead();
    }
    const moveAt = hostingPlans.get(host.idx);
    if (moveAt !== undefined) {
      const before = host.hosting[0]!;
      const prov = net.providers[host.provider]!;
      const kinds = Object.keys(HOSTING_KINDS).filter((k) => k !== before.kind && (k.startsWith('aws-eu') || k === 'hetzner' || k === 'ovh' || k === 'azure-westeurope'));
      const after = makeHosting(r.pick(kinds), prov.country, prov.domain, r, moveAt);
      host.hosting.push(after);
      hostChanges.push({ id: `h-${host.idx}-${++n}`, kind: 'hosting_move', host: host.idx, at: moveAt, hostingBefore: before, hostingAfter: after });
    }
  }
  hostChanges.sort((a, b) => a.at - b.at || a.host - b.host);

  // ---- zones
  const q = (f: number, hour: number): number => start + dayOf(net, f) * DAY + hour * HOUR;
  const zoneIdx = (name: string): number => ZONES.findIndex((z) => z.zone === name);
  const zoneFailures: ZoneFailure[] = [
    { id: 'zf-1', zone: zoneIdx('participant.sml.prod.tech.peppol.org'), start: q(0.42, 7), end: q(0.42, 7) + 3 * QUARTER, locations: [0, 1, 2, 4], severity: 'down', criticalNxdomain: true, expectIncident: true },
    { id: 'zf-2', zone: zoneIdx('acc.edelivery.tech.ec.europa.eu'), start: q(0.62, 13), end: q(0.62, 13) + 8 * QUARTER, locations: [0, 1, 2, 3, 4, 5], severity: 'degraded', criticalNxdomain: false, expectIncident: true },
    { id: 'zf-3', zone: zoneIdx('participant.sml.test.tech.peppol.org'), start: q(0.7, 21), end: q(0.7, 21) + 2 * QUARTER, locations: [3], severity: 'down', criticalNxdomain: true, expectIncident: false },
  ];
  const cutoverAt = q(0.5, 9);
  const curationAt = q(0.5, 10) + 17 * MINUTE + 23_000;
  net.providers[net.roles.staleKey]!.curatedFrom = curationAt;

  // ---- participant changes
  const N0 = cfg.participants;
  const pchanges = new Map<number, PChange[]>();
  const byDay = new Map<number, PChange[]>();
  const touched = new Set<number>();
  const addChange = (c: Omit<PChange, 'id' | 'at'> & { at?: number }): PChange => {
    const full: PChange = { ...c, id: `p-${c.kind}-${c.day}-${c.index}`, at: c.at ?? observationTime(net, c.index, c.day) };
    const list = pchanges.get(c.index) ?? [];
    list.push(full);
    list.sort((a, b) => a.at - b.at);
    pchanges.set(c.index, list);
    const dl = byDay.get(c.day) ?? [];
    dl.push(full);
    byDay.set(c.day, dl);
    touched.add(c.index);
    return full;
  };
  const sample = (r: Rng, cond: (b: ParticipantBase) => boolean, maxTries = 20_000): ParticipantBase | null => {
    for (let t = 0; t < maxTries; t++) {
      const i = r.int(N0);
      if (touched.has(i)) continue;
      const b = participantBase(net, i);
      if (!b.stale && cond(b)) return b;
    }
    return null;
  };
  const curated = (p: number): boolean => net.providers[p]!.cls === 'curated';
  const must = <T>(v: T | null, what: string): T => {
    if (v === null) throw new Error(`demo script: no participant found for ${what}`);
    return v;
  };

  // Burst: the SMP host with the most participants loses `burstSize` of them to another SMP in one sweep.
  const expected = new Map<number, number>();
  const totalShare = COUNTRY_MIX.reduce((a, c) => a + c.share, 0);
  for (const c of COUNTRY_MIX) {
    const cum = net.countryTables.get(c.country)!;
    const tot = cum[cum.length - 1]!;
    net.apProviders.forEach((pi, k) => {
      const w = (cum[k]! - (k > 0 ? cum[k - 1]! : 0)) / tot;
      const smp = net.providers[pi]!.smpHost;
      expected.set(smp, (expected.get(smp) ?? 0) + (w * c.share) / totalShare);
    });
  }
  const bySize = [...expected.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const burstFrom = bySize[0]![0];
  const burstTo = bySize.find(([h]) => net.hosts[h]!.provider !== net.hosts[burstFrom]!.provider)?.[0] ?? bySize[1]![0];
  const burstDay = dayOf(net, 0.45);
  const rs = Rng.of(net.seed, S.script, 3);
  const burstIds: string[] = [];
  for (let k = 0; k < cfg.burstSize; k++) {
    const b = must(sample(rs, (x) => x.smp === burstFrom, 200_000), 'the SMP burst');
    burstIds.push(addChange({ kind: 'smp', index: b.index, day: burstDay, special: 'mass-smp-migration', smp: burstTo }).id);
  }

  // Special single-participant scenarios.
  const offDay = dayOf(net, 0.5);
  const off = must(sample(rs, (b) => curated(b.provider)), 'endpoint off footprint');
  const foreign = net.apProviders.filter((p) => p !== off.provider && net.providers[p]!.apHosts.length > 0);
  const foreignHost = net.providers[foreign[rs.int(foreign.length)]!]!.apHosts[0]!;
  const offChange = addChange({ kind: 'endpoint', index: off.index, day: offDay, special: 'endpoint-off-footprint', apHost: foreignHost, pathVar: 0 });

  const moveTo = (special: string, target: number, f: number): PChange => {
    const b = must(sample(rs, (x) => curated(x.provider) && x.provider !== target), special);
    const sv = servingFor(net, target, b.country, rs);
    return addChange({ kind: 'move', index: b.index, day: dayOf(net, f), special, provider: target, seat: sv.seat, apHost: sv.apHost, smp: net.providers[target]!.smpHost });
  };
  const orgMove = moveTo('moved-to-organisation-seat', net.roles.orgTarget, 0.6);
  const bareMove = moveTo('moved-to-bare-seat', net.roles.bareTarget, 0.75);

  const intra = must(sample(rs, (b) => curated(b.provider) && net.providers[b.provider]!.seats.length > 1), 'intra-provider seat change');
  {
    const prov = net.providers[intra.provider]!;
    const seat = prov.seats.find((s) => s !== intra.seat)!;
    const presenting = prov.apHosts.filter((h) => net.hosts[h]!.seat === seat);
    addChange({ kind: 'seat', index: intra.index, day: dayOf(net, 0.3), special: 'intra-provider-seat-change', seat, apHost: presenting[0] ?? intra.apHost });
  }
  const again = must(sample(rs, (b) => curated(b.provider) && b.provenance === 'directory'), 'deregistration and re-registration');
  addChange({ kind: 'leave', index: again.index, day: dayOf(net, 0.2), special: 'deregistered-then-reregistered' });
  addChange({ kind: 'rejoin', index: again.index, day: dayOf(net, 0.4), special: 'deregistered-then-reregistered' });

  // Background: a fixed daily budget per kind (exact totals via cumulative floors), days 1..lastDay.
  const joinersBefore: number[] = [0];
  const smpHosts = net.hosts.filter((h) => h.role === 'SMP').map((h) => h.idx);
  const curatedTargets = net.apProviders.filter((p) => curated(p) && p !== net.roles.staleKey);
  for (let d = 1; d <= lastDay; d++) {
    const rd = Rng.of(net.seed, S.day, d);
    joinersBefore[d] = joinersBefore[d - 1]! + (d > 1 ? countOf(cfg.backgroundPerDay, 'join', d - 1) : 0);
    for (const [kind] of BACKGROUND_MIX) {
      const count = countOf(cfg.backgroundPerDay, kind, d);
      for (let k = 0; k < count; k++) {
        if (kind === 'join') {
          const i = N0 + joinersBefore[d]! + k;
          const at = observationTime(net, i, d);
          addChange({ kind, index: i, day: d, special: null, at, registrationDate: new Date(at).toISOString().slice(0, 10) });
          continue;
        }
        const b = sample(rd, (x) => kind !== 'card' || x.provenance === 'directory');
        if (b === null) continue;
        switch (kind) {
          case 'leave':
            addChange({ kind, index: b.index, day: d, special: null });
            break;
          case 'move': {
            const targets = curatedTargets.filter((p) => p !== b.provider);
            const target = rd.weighted(targets.map((p) => [p, net.providers[p]!.size] as const));
            const sv = servingFor(net, target, b.country, rd);
            addChange({ kind, index: b.index, day: d, special: null, provider: target, seat: sv.seat, apHost: sv.apHost, smp: net.providers[target]!.smpHost });
            break;
          }
          case 'smp': {
            const targets = smpHosts.filter((h) => h !== b.smp && !(b.smp === burstFrom && h === burstTo));
            addChange({ kind, index: b.index, day: d, special: null, smp: targets[rd.int(targets.length)]! });
            break;
          }
          case 'card': {
            if (rd.chance(0.7) && b.name !== null) addChange({ kind, index: b.index, day: d, special: null, name: renamedCompany(b.name, b.country, rd) });
            else {
              const old = Date.parse(b.registrationDate ?? '2020-01-01');
              const shifted = new Date(old - rd.range(1, 400) * DAY).toISOString().slice(0, 10);
              addChange({ kind, index: b.index, day: d, special: null, registrationDate: shifted });
            }
            break;
          }
          case 'doctype':
            addChange({ kind, index: b.index, day: d, special: null, mask: b.mask ^ (1 << DOCTYPE_INVOICE_RESPONSE) });
            break;
          case 'endpoint': {
            const prov = net.providers[b.provider]!;
            const others = prov.apHosts.filter((h) => h !== b.apHost);
            if (others.length > 0) addChange({ kind, index: b.index, day: d, special: null, apHost: others[rd.int(others.length)]!, pathVar: 0 });
            else addChange({ kind, index: b.index, day: d, special: null, apHost: b.apHost, pathVar: 1 });
            break;
          }
          default:
            break;
        }
      }
    }
  }

  // ---- anomalies and acknowledgements
  const anomalies: AnomalyPlan[] = [];
  const addAnomaly = (target: AnomalyTarget, windowStart: number, changeIds: string[]): AnomalyPlan => {
    const targetKey = anomalyTargetKey(target);
    const a: AnomalyPlan = { id: anomalyId(target.detector, targetKey, new Date(windowStart).toISOString()), detector: target.detector, target, targetKey, windowStart, changeIds };
    anomalies.push(a);
    return a;
  };
  const acks: AckPlan[] = [];
  for (const hc of hostChanges) {
    const hostname = net.hosts[hc.host]!.hostname;
    if (hc.kind === 'cert_identity_shift') addAnomaly({ detector: 'cert_identity_shift', hostname }, hc.at, [hc.id]);
    if (hc.kind === 'cert_rotation_off_cadence') {
      const a = addAnomaly({ detector: 'off_cadence_rotation', hostname }, hc.at, [hc.id]);
      acks.push({ at: hc.at + 3 * HOUR + 7 * MINUTE + 12_000, anomalyId: a.id, acknowledged: true, reason: 'Planned early key rollover announced by the provider (HSM migration).' });
    }
  }
  {
    const hostname = net.hosts[foreignHost]!.hostname;
    const pid = participantBase(net, off.index).id;
    const a = addAnomaly({ detector: 'endpoint_off_footprint', participant: pid, hostname }, offChange.at, [offChange.id]);
    acks.push({ at: offChange.at + 2 * HOUR + 4 * MINUTE, anomalyId: a.id, acknowledged: true, reason: 'Looks like a reseller front end; checking with the provider.' });
    acks.push({ at: offChange.at + DAY + 6 * HOUR + 31 * MINUTE, anomalyId: a.id, acknowledged: false, reason: 'Provider denies operating this host; re-opened.' });
  }
  for (const mv of [orgMove, bareMove]) {
    const pid = participantBase(net, mv.index).id;
    addAnomaly({ detector: 'moved_to_unverified_seat', participant: pid, seat: net.seats[mv.seat!]!.id }, mv.at, [mv.id]);
  }
  let burst: Script['burst'] = null;
  if (burstIds.length > 0) {
    const changes = burstIds.map((id) => findChange(pchanges, id)!);
    const first = Math.min(...changes.map((c) => c.at));
    const a = addAnomaly({ detector: 'mass_change_burst', event_type: 'participant_smp_changed', from: net.hosts[burstFrom]!.hostname, to: net.hosts[burstTo]!.hostname }, first, burstIds);
    acks.push({ at: start + (burstDay + 1) * DAY + 9 * HOUR + 12 * MINUTE, anomalyId: a.id, acknowledged: true, reason: `Customer migration announced by ${net.providers[net.hosts[burstTo]!.provider]!.tradeName}.` });
    burst = { from: burstFrom, to: burstTo, changeIds: burstIds };
  }
  acks.sort((a, b) => a.at - b.at);

  return { lastDay, outages, outagesByHost, hostChanges, zoneFailures, cutoverAt, curationAt, pchanges, byDay, joinersBefore, anomalies, acks, burst };
}

function countOf(perDay: number, kind: PChangeKind, d: number): number {
  const share = BACKGROUND_MIX.find(([k]) => k === kind)![1];
  const rate = perDay * share;
  return Math.floor(rate * d + 1e-9) - Math.floor(rate * (d - 1) + 1e-9);
}

function findChange(pchanges: Map<number, PChange[]>, id: string): PChange | undefined {
  const index = Number(id.slice(id.lastIndexOf('-') + 1));
  return pchanges.get(index)?.find((c) => c.id === id);
}

// ---------------------------------------------------------------------------------------------------
// Participant state over time.

export interface PState {
  exists: boolean;
  registered: boolean;
  dirPresent: boolean;
  name: string | null;
  registrationDate: string | null;
  provider: number;
  seat: number;
  apHost: number;
  pathVar: number;
  smp: number;
  mask: number;
}

export function initialState(net: Network, b: ParticipantBase): PState {
  return {
    exists: b.index < net.cfg.participants,
    registered: !b.stale,
    dirPresent: b.provenance === 'directory',
    name: b.name,
    registrationDate: b.registrationDate,
    provider: b.provider,
    seat: b.seat,
    apHost: b.apHost,
    pathVar: 0,
    smp: b.smp,
    mask: b.mask,
  };
}

export function applyChange(s: PState, c: PChange, b: ParticipantBase): void {
  switch (c.kind) {
    case 'join':
      s.exists = true;
      s.registered = true;
      s.dirPresent = b.provenance === 'directory';
      if (b.provenance === 'directory') s.registrationDate = c.registrationDate ?? s.registrationDate;
      break;
    case 'leave':
      s.registered = false;
      s.dirPresent = false;
      break;
    case 'rejoin':
      s.registered = true;
      s.dirPresent = b.provenance === 'directory';
      break;
    case 'smp':
      s.smp = c.smp!;
      break;
    case 'move':
      s.provider = c.provider!;
      s.seat = c.seat!;
      s.apHost = c.apHost!;
      s.pathVar = 0;
      s.smp = c.smp!;
      break;
    case 'seat':
      s.seat = c.seat!;
      s.apHost = c.apHost!;
      break;
    case 'endpoint':
      s.apHost = c.apHost!;
      s.pathVar = c.pathVar!;
      break;
    case 'doctype':
      s.mask = c.mask!;
      break;
    case 'card':
      if (c.name !== undefined) s.name = c.name;
      if (c.registrationDate !== undefined) s.registrationDate = c.registrationDate;
      break;
  }
}

/** State of participant b as observed at time t (changes observed at or before t applied). */
export function stateAt(net: Network, script: Script, b: ParticipantBase, t: number): PState {
  const s = initialState(net, b);
  const list = script.pchanges.get(b.index);
  if (list) for (const c of list) if (c.at <= t) applyChange(s, c, b);
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Host state over time.

export function certAt(host: Host, t: number): CertGen {
  let c = host.certs[0]!;
  for (const g of host.certs) if (g.from <= t) c = g;
  return c;
}

export function hostingAt(host: Host, t: number): HostingGen {
  let h = host.hosting[0]!;
  for (const g of host.hosting) if (g.from <= t) h = g;
  return h;
}

/** Scripted severity of a probe of `host` from location `loc` at slot t; null when no outage applies. */
export function scriptedSeverity(script: Script, host: number, loc: number, t: number): { severity: Severity; outage: Outage } | null {
  const list = script.outagesByHost.get(host);
  if (!list) return null;
  for (const o of list) {
    if (t < o.start || t >= o.end) continue;
    if (!o.locations.includes(loc)) return { severity: 'up', outage: o };
    let sev: Severity = 'up';
    for (const s of o.steps) if (s.at <= t) sev = s.severity;
    return { severity: sev, outage: o };
  }
  return null;
}

export function zoneFailureAt(script: Script, zone: number, loc: number, t: number): ZoneFailure | null {
  for (const f of script.zoneFailures) if (f.zone === zone && t >= f.start && t < f.end && f.locations.includes(loc)) return f;
  return null;
}
