// ground-truth.json: everything the scenario injected that is visible in the feeds at `now`, with the
// events, incidents, anomalies and churn a correct derivation must produce. Field by field in docs/demo.md.
import { DOCTYPES, HOUR, LOCATIONS, QUARTER, SCRIPTED_END, ZONES, ZONE_MINUTES, BASELINE_SWEEP, OPENPEPPOL_SML, EC_SML } from './config.js';
import { iso, participantBase, type CertGen, type HostingGen, type Network, type Seat } from './network.js';
import { endpointUrl, providerHostnames } from './records.js';
import { certAt, stateAt, type HostChange, type Outage, type PChange, type PState, type Script, type Severity } from './script.js';
import { TextFileWriter } from './writer.js';

export const GROUND_TRUTH_FORMAT = 'peppol-snapshot/demo-ground-truth@1';

import { EVENT_TYPES, type EventType } from '../derive/event-types.js';

export { EVENT_TYPES, type EventType };

/** An outage is reported closed once this much all-up probing after the recovery is in the feeds. */
export const RECOVERY_MARGIN = HOUR;

export interface Horizons {
  /** every segment window is 15 minutes: records strictly before this instant are in the feeds */
  probe: number;
  /** the same instant, for sweep-observed records (kept separate should the windows ever differ) */
  sweep: number;
}

export function horizons(nowMs: number): Horizons {
  const h = Math.floor(nowMs / QUARTER) * QUARTER;
  return { probe: h, sweep: h };
}

export interface ProviderRef {
  ref: string;
  kind: 'curated' | 'organisation' | 'seat';
  name: string;
}

/** The provider identity of a seat as of `sweepHorizon` (curation records visible by then). */
export function providerRef(net: Network, seat: Seat, sweepHorizon: number): ProviderRef {
  const prov = net.providers[seat.provider]!;
  if (prov.curatedFrom !== null && prov.curatedFrom < sweepHorizon) return { ref: `c-${prov.slug}`, kind: 'curated', name: prov.tradeName };
  if (seat.org !== null) return { ref: `o:${seat.org}`, kind: 'organisation', name: seat.org };
  return { ref: `s-${seat.id}`, kind: 'seat', name: seat.id };
}

const certView = (c: CertGen) => ({ fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, not_before: iso(c.notBefore), not_after: iso(c.notAfter) });
const hostingView = (h: HostingGen) => ({ ips: h.ips, ptr: h.ptr });

export interface GroundTruth {
  format: string;
  seed: number;
  scale: string;
  window: Record<string, string | number>;
  cadence: Record<string, string | number>;
  locations: string[];
  counts: Record<string, number>;
  providers: unknown[];
  hosts: unknown[];
  outages: unknown[];
  regional_blips: unknown[];
  zone_failures: unknown[];
  dname_cutover: unknown;
  curation_changes: unknown[];
  changes: unknown[];
  events: unknown[];
  anomalies: unknown[];
  acks: unknown[];
  churn: unknown[];
  background: Record<string, number>;
  coverage: { event_types: Record<string, number>; detectors: Record<string, number> };
}

function outageView(net: Network, o: Outage, h: Horizons) {
  const host = net.hosts[o.host]!;
  const visibleSteps = o.steps.filter((s) => s.at < h.probe);
  const closed = o.end + RECOVERY_MARGIN <= h.probe;
  const timeline = (closed ? visibleSteps : visibleSteps.filter((s) => s.at < o.end)).map((s) => ({ at: iso(s.at), severity: s.severity }));
  const rank: Record<Severity, number> = { up: 0, degraded: 1, down: 2 };
  let worst: Severity = 'up';
  for (const s of timeline) if (rank[s.severity as Severity] > rank[worst]) worst = s.severity as Severity;
  return {
    id: o.id,
    hostname: host.hostname,
    role: host.role,
    template: o.template,
    start: iso(o.start),
    end: closed ? iso(o.end) : null,
    status: closed ? 'closed' : 'open',
    worst,
    flaps: o.flaps,
    locations: o.locations.map((l) => LOCATIONS[l]!.name),
    timeline,
    down_variant: o.downVariant,
    scripted_end: iso(o.end),
  };
}

export function computeGroundTruth(net: Network, script: Script, nowMs: number): GroundTruth {
  const h = horizons(nowMs);
  const seatRef = (s: number) => providerRef(net, net.seats[s]!, h.sweep);
  const hostName = (i: number) => net.hosts[i]!.hostname;

  // Providers as resolved now.
  const refs = new Map<string, { ref: string; kind: string; name: string; seats: string[]; hostnames: Set<string>; stale_keys: string[] }>();
  for (const seat of net.seats) {
    const r = seatRef(seat.idx);
    let e = refs.get(r.ref);
    if (!e) {
      e = { ref: r.ref, kind: r.kind, name: r.name, seats: [], hostnames: new Set(), stale_keys: [] };
      refs.set(r.ref, e);
    }
    e.seats.push(seat.id);
    const prov = net.providers[seat.provider]!;
    if (r.kind === 'curated' && prov.curatedFrom !== null && prov.curatedFrom > net.start) {
      e.stale_keys.push(seat.org === null ? `s-${seat.id}` : `o:${seat.org}`);
    }
  }
  for (const host of net.hosts) {
    const c = certAt(host, h.probe - 1);
    refs.get(seatRef(c.seat).ref)?.hostnames.add(host.hostname);
  }
  const providers = [...refs.values()]
    .sort((a, b) => a.ref.localeCompare(b.ref))
    .map((e) => ({ ref: e.ref, kind: e.kind, name: e.name, seats: e.seats.sort(), hostnames: [...e.hostnames].sort(), stale_keys: e.stale_keys }));

  const hosts = net.hosts.map((host) => {
    const c = certAt(host, h.probe - 1);
    return { hostname: host.hostname, role: host.role, seat: net.seats[c.seat]!.id, provider_ref: seatRef(c.seat).ref, reserved_for: host.reserved };
  });

  const outages = script.outages.filter((o) => o.expectIncident && o.start < h.probe).map((o) => outageView(net, o, h));
  const regional_blips = script.outages.filter((o) => !o.expectIncident && o.start < h.probe).map((o) => ({ ...outageView(net, o, h), expect_incident: false }));

  const zone_failures = script.zoneFailures
    .filter((f) => f.start < h.probe)
    .map((f) => {
      const closed = f.end + RECOVERY_MARGIN <= h.probe;
      return {
        id: f.id,
        zone: ZONES[f.zone]!.zone,
        start: iso(f.start),
        end: closed ? iso(f.end) : null,
        status: closed ? 'closed' : 'open',
        severity: f.severity,
        critical_nxdomain: f.criticalNxdomain,
        locations: f.locations.map((l) => LOCATIONS[l]!.name),
        expect_incident: f.expectIncident,
      };
    });
  const dname_cutover = script.cutoverAt < h.probe ? { zone: EC_SML, dname_target: OPENPEPPOL_SML, observed_at: iso(script.cutoverAt) } : null;
  const staleProv = net.providers[net.roles.staleKey]!;
  const curation_changes =
    script.curationAt < h.sweep
      ? staleProv.seats.map((s) => ({ observed_at: iso(script.curationAt), slug: staleProv.slug, seat: net.seats[s]!.id, old_key: `s-${net.seats[s]!.id}`, new_key: `c-${staleProv.slug}` }))
      : [];

  const anomalyByChange = new Map<string, string>();
  const visibleAnomalies = script.anomalies.filter((a) => a.windowStart < (a.detector === 'cert_identity_shift' || a.detector === 'off_cadence_rotation' ? h.probe : h.sweep));
  for (const a of visibleAnomalies) for (const c of a.changeIds) anomalyByChange.set(c, a.id);

  const changes: unknown[] = [];
  const events: { type: EventType; observed_at: string; hostname: string | null; participant: string | null; change: string; seats: string[]; hosts: string[] }[] = [];
  const churn: unknown[] = [];

  // Host changes (probe-observed).
  for (const hc of script.hostChanges) {
    if (hc.at >= h.probe) continue;
    const host = net.hosts[hc.host]!;
    const type: EventType = hc.kind === 'hosting_move' ? 'hosting_changed' : 'host_cert_rotated';
    changes.push(hostChangeView(net, hc, type, anomalyByChange.get(hc.id) ?? null));
    events.push({ type, observed_at: iso(hc.at), hostname: host.hostname, participant: null, change: hc.id, seats: hc.certAfter ? [...new Set([net.seats[hc.certBefore!.seat]!.id, net.seats[hc.certAfter.seat]!.id])] : [], hosts: [host.hostname] });
  }

  // Participant changes (sweep-observed), in time order.
  const pcs: PChange[] = [];
  for (const list of script.pchanges.values()) for (const c of list) if (c.at < h.sweep) pcs.push(c);
  pcs.sort((a, b) => a.at - b.at || a.index - b.index || a.id.localeCompare(b.id));
  for (const c of pcs) {
    const b = participantBase(net, c.index);
    const before = stateAt(net, script, b, c.at - 1);
    const after = stateAt(net, script, b, c.at);
    const obs = iso(c.at);
    const day = obs.slice(0, 10);
    const types: EventType[] = [];
    let kind: string;
    const beforeV = participantView(net, before);
    const afterV = participantView(net, after);
    let cat: { category: string; from: string | null; to: string | null } | null = null;
    switch (c.kind) {
      case 'join':
        kind = 'registration';
        types.push('participant_registered');
        cat = { category: 'joiner', from: null, to: seatRef(after.seat).ref };
        break;
      case 'leave':
        kind = 'deregistration';
        types.push('participant_deregistered');
        cat = { category: 'leaver', from: seatRef(before.seat).ref, to: null };
        break;
      case 'rejoin':
        kind = 're_registration';
        types.push('participant_registered');
        break;
      case 'smp':
        kind = 'smp_migration';
        types.push('participant_smp_changed');
        break;
      case 'move': {
        kind = 'provider_move';
        types.push('ap_seat_changed');
        if (before.smp !== after.smp) types.push('participant_smp_changed');
        const from = seatRef(before.seat).ref;
        const to = seatRef(after.seat).ref;
        if (from !== to) cat = { category: 'mover', from, to };
        break;
      }
      case 'seat': {
        kind = 'seat_change_same_provider';
        types.push('ap_seat_changed');
        const from = seatRef(before.seat).ref;
        const to = seatRef(after.seat).ref;
        if (from !== to) cat = { category: 'mover', from, to };
        break;
      }
      case 'endpoint':
        kind = c.special === 'endpoint-off-footprint' ? 'endpoint_url_change_off_footprint' : 'endpoint_url_change';
        types.push('endpoint_changed');
        break;
      case 'doctype':
        kind = 'doctype_change';
        types.push('doctype_support_changed');
        break;
      case 'card':
        kind = 'card_change';
        types.push('directory_card_changed');
        break;
    }
    const seats = [...new Set([net.seats[before.seat]!.id, net.seats[after.seat]!.id])];
    const hostsInvolved = [...new Set([hostName(before.smp), hostName(after.smp), hostName(before.apHost), hostName(after.apHost)])];
    changes.push({
      id: c.id,
      kind,
      special: c.special,
      observed_at: obs,
      day,
      participant: b.id,
      scheme: b.scheme,
      country: b.country,
      provenance: b.provenance,
      expected_events: types,
      before: c.kind === 'join' ? null : beforeV,
      after: afterV,
      anomaly: anomalyByChange.get(c.id) ?? null,
    });
    for (const type of types) {
      events.push({
        type,
        observed_at: obs,
        hostname: null,
        participant: b.id,
        change: c.id,
        seats: type === 'ap_seat_changed' ? seats : [net.seats[after.seat]!.id],
        hosts: type === 'participant_smp_changed' ? [hostName(before.smp), hostName(after.smp)] : type === 'endpoint_changed' ? [hostName(before.apHost), hostName(after.apHost)] : hostsInvolved,
      });
    }
    if (cat) churn.push({ participant: b.id, day, category: cat.category, from: cat.from, to: cat.to, change: c.id });
  }
  events.sort((a, b) => (a.observed_at < b.observed_at ? -1 : a.observed_at > b.observed_at ? 1 : a.change.localeCompare(b.change) || a.type.localeCompare(b.type)));

  // Anomalies with their final acknowledgement state.
  const acksVisible = script.acks.filter((a) => a.at < h.sweep);
  const anomalies = visibleAnomalies.map((a) => {
    let ack: { acknowledged: boolean; reason: string } | null = null;
    for (const k of acksVisible) if (k.anomalyId === a.id) ack = { acknowledged: k.acknowledged, reason: k.reason };
    const { detector: _d, ...target } = a.target;
    return {
      id: a.id,
      detector: a.detector,
      target,
      target_key: a.targetKey,
      window_start: iso(a.windowStart),
      observed_at: iso(a.windowStart),
      changes: a.changeIds,
      event_count: a.changeIds.length,
      acknowledged: ack?.acknowledged ?? false,
      ack_reason: ack?.reason ?? null,
    };
  });
  const acks = acksVisible.map((a) => ({ at: iso(a.at), anomaly_id: a.anomalyId, acknowledged: a.acknowledged, reason: a.reason }));

  // Background statistics, to place detector thresholds between them and the injected conditions.
  const burstIds = new Set(script.burst?.changeIds ?? []);
  const pairCount = new Map<string, number>();
  const seatPairCount = new Map<string, number>();
  for (const c of pcs) {
    if (burstIds.has(c.id)) continue;
    const b = participantBase(net, c.index);
    const before = stateAt(net, script, b, c.at - 1);
    const after = stateAt(net, script, b, c.at);
    const day = iso(c.at).slice(0, 10);
    if (before.registered && after.registered && before.smp !== after.smp) {
      const k = `${day}|${before.smp}|${after.smp}`;
      pairCount.set(k, (pairCount.get(k) ?? 0) + 1);
    }
    if (before.seat !== after.seat) {
      const k = `${day}|${before.seat}|${after.seat}`;
      seatPairCount.set(k, (seatPairCount.get(k) ?? 0) + 1);
    }
  }
  const maxOf = (m: Map<string, number>) => [...m.values()].reduce((a, b) => Math.max(a, b), 0);
  const perDay = new Map<string, number>();
  for (const c of pcs) if (!burstIds.has(c.id)) perDay.set(iso(c.at).slice(0, 10), (perDay.get(iso(c.at).slice(0, 10)) ?? 0) + 1);

  const coverage = { event_types: Object.fromEntries(EVENT_TYPES.map((t) => [t, 0])) as Record<string, number>, detectors: {} as Record<string, number> };
  for (const e of events) coverage.event_types[e.type]!++;
  for (const d of ['cert_identity_shift', 'off_cadence_rotation', 'endpoint_off_footprint', 'moved_to_unverified_seat', 'mass_change_burst']) coverage.detectors[d] = 0;
  for (const a of anomalies) coverage.detectors[a.detector]!++;

  const joinersVisible = pcs.filter((c) => c.kind === 'join').length;
  const seatKinds = { curated: 0, organisation: 0, seat: 0 };
  for (const s of net.seats) seatKinds[seatRef(s.idx).kind]++;
  return {
    format: GROUND_TRUTH_FORMAT,
    seed: net.seed,
    scale: net.scale,
    window: {
      start: iso(net.start),
      baseline_sweep_end: iso(net.start + BASELINE_SWEEP),
      scripted_end: iso(SCRIPTED_END),
      now: iso(nowMs),
      horizon: iso(h.probe),
    },
    cadence: {
      probe_minutes: net.cfg.probeMinutes,
      zone_minutes: ZONE_MINUTES,
      baseline_sweep: `${iso(net.start)}/${iso(net.start + BASELINE_SWEEP)}`,
      delta_sweep_utc: '02:00-03:00',
      rolling_reobservation_days: net.cfg.rollingDays,
      recovery_margin_minutes: RECOVERY_MARGIN / 60_000,
    },
    locations: LOCATIONS.map((l) => l.name),
    counts: {
      participants_initial: net.cfg.participants,
      joiners: joinersVisible,
      hosts: net.hosts.length,
      smp_hosts: net.hosts.filter((x) => x.role === 'SMP').length,
      ap_hosts: net.hosts.filter((x) => x.role === 'AP').length,
      providers: net.providers.length,
      provider_refs: providers.length,
      seats: net.seats.length,
      curated_seats: seatKinds.curated,
      organisation_seats: seatKinds.organisation,
      bare_seats: seatKinds.seat,
      zones: ZONES.length,
      locations: LOCATIONS.length,
      doctypes: DOCTYPES.length,
    },
    providers,
    hosts,
    outages,
    regional_blips,
    zone_failures,
    dname_cutover,
    curation_changes,
    changes,
    events,
    anomalies,
    acks,
    churn,
    background: {
      burst_size: script.burst?.changeIds.length ?? 0,
      max_same_smp_pair_per_day: maxOf(pairCount),
      max_same_seat_pair_per_day: maxOf(seatPairCount),
      max_participant_changes_per_day: maxOf(perDay),
    },
    coverage,
  };
}

function participantView(net: Network, s: PState) {
  if (!s.exists) return null;
  return {
    registered: s.registered,
    smp: s.registered ? net.hosts[s.smp]!.hostname : null,
    seat: net.seats[s.seat]!.id,
    url: endpointUrl(net.hosts[s.apHost]!, s.pathVar),
    doctypes: DOCTYPES.filter((_, d) => s.mask & (1 << d)).map((d) => d.code),
    directory: s.dirPresent,
    card: s.dirPresent ? { name: s.name, registrationDate: s.registrationDate } : null,
  };
}

function hostChangeView(net: Network, hc: HostChange, type: EventType, anomaly: string | null) {
  const host = net.hosts[hc.host]!;
  const base = { id: hc.id, kind: hc.kind, special: null, observed_at: iso(hc.at), day: iso(hc.at).slice(0, 10), hostname: host.hostname, role: host.role, expected_events: [type] };
  if (hc.certBefore && hc.certAfter) {
    return {
      ...base,
      remaining_days_at_rotation: Math.round(((hc.certBefore.notAfter - hc.at) / 86_400_000) * 10) / 10,
      seat_before: net.seats[hc.certBefore.seat]!.id,
      seat_after: net.seats[hc.certAfter.seat]!.id,
      before: certView(hc.certBefore),
      after: certView(hc.certAfter),
      anomaly,
    };
  }
  return { ...base, before: hostingView(hc.hostingBefore!), after: hostingView(hc.hostingAfter!), anomaly };
}

const SECTIONS = ['providers', 'hosts', 'outages', 'regional_blips', 'zone_failures', 'curation_changes', 'changes', 'events', 'anomalies', 'acks', 'churn'] as const;

/** Writes the ground truth as JSON with one array element per line (diff- and grep-friendly), atomically. */
export function writeGroundTruth(file: string, gt: GroundTruth): void {
  const w = new TextFileWriter(file);
  const keys = Object.keys(gt) as (keyof GroundTruth)[];
  w.write('{\n');
  keys.forEach((k, n) => {
    const sep = n === keys.length - 1 ? '\n' : ',\n';
    const v = gt[k];
    if ((SECTIONS as readonly string[]).includes(k) && Array.isArray(v)) {
      if (v.length === 0) w.write(`  ${JSON.stringify(k)}: []${sep}`);
      else {
        w.write(`  ${JSON.stringify(k)}: [\n`);
        v.forEach((item, i) => w.write(`    ${JSON.stringify(item)}${i === v.length - 1 ? '\n' : ',\n'}`));
        w.write(`  ]${sep}`);
      }
    } else w.write(`  ${JSON.stringify(k)}: ${JSON.stringify(v)}${sep}`);
  });
  w.write('}\n');
  w.close();
}
