// Content-derived anomaly ids, stable across rebuilds (docs/architecture.md §7;
// docs/methodology/anomalies.md, "Ids, links, acknowledgements").
//
//   id = <prefix> "-" <first 16 hex digits of sha256(canonical)>
//   canonical = detector "\n" targetKey "\n" windowStart
//
// - prefix: a short code per detector (DETECTOR_PREFIX), so an id names its detector at a glance.
// - targetKey: what the anomaly is about, written by anomalyTargetKey() from a typed target (below).
// - windowStart: the observed_at of the earliest event the anomaly rests on, normalised to
//   `Date.prototype.toISOString()` form (UTC, milliseconds, `Z`): `2026-11-02T02:14:09.000Z`.
//
// Targets per detector (hostnames lower-case, participant ids canonical `scheme::value`, seat ids upper-case):
//   cert_identity_shift       { hostname }                 -> `host:<hostname>`
//   off_cadence_rotation      { hostname }                 -> `host:<hostname>`
//   endpoint_off_footprint    { participant, hostname }    -> `participant:<id>|host:<hostname>`   (hostname: the endpoint
//                                                              URL's host that lies outside the provider's footprint)
//   moved_to_unverified_seat  { participant, seat }        -> `participant:<id>|seat:<SEATID>`      (seat: the new seat)
//   mass_change_burst         { event_type, from, to }     -> `<event_type>|from:<before>|to:<after>` (the before and
//                                                              after values shared by every event of the burst, e.g. the
//                                                              old and new SMP hostnames of participant_smp_changed)
//
// The demo generator (src/demo) uses this to write `ack` records and the ground truth; the anomaly detectors
// must use it too, so that acknowledgements attach and ids survive rebuilds.
import { createHash } from 'node:crypto';

export const DETECTORS = ['cert_identity_shift', 'off_cadence_rotation', 'endpoint_off_footprint', 'moved_to_unverified_seat', 'mass_change_burst'] as const;
export type Detector = (typeof DETECTORS)[number];

export const DETECTOR_PREFIX: Record<Detector, string> = {
  cert_identity_shift: 'cis',
  off_cadence_rotation: 'ocr',
  endpoint_off_footprint: 'eof',
  moved_to_unverified_seat: 'mus',
  mass_change_burst: 'mcb',
};

export type AnomalyTarget =
  | { detector: 'cert_identity_shift' | 'off_cadence_rotation'; hostname: string }
  | { detector: 'endpoint_off_footprint'; participant: string; hostname: string }
  | { detector: 'moved_to_unverified_seat'; participant: string; seat: string }
  | { detector: 'mass_change_burst'; event_type: string; from: string; to: string };

/** The canonical target key of an anomaly (see the table at the top of this file). */
export function anomalyTargetKey(t: AnomalyTarget): string {
  switch (t.detector) {
    case 'cert_identity_shift':
    case 'off_cadence_rotation':
      return `host:${t.hostname.toLowerCase()}`;
    case 'endpoint_off_footprint':
      return `participant:${t.participant}|host:${t.hostname.toLowerCase()}`;
    case 'moved_to_unverified_seat':
      return `participant:${t.participant}|seat:${t.seat.toUpperCase()}`;
    case 'mass_change_burst':
      return `${t.event_type}|from:${t.from}|to:${t.to}`;
  }
}

/** Normalises an instant to `YYYY-MM-DDTHH:MM:SS.sssZ`; throws on an invalid date. */
export function canonicalInstant(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new Error(`anomalyId: invalid window start ${JSON.stringify(iso)}`);
  return new Date(ms).toISOString();
}

/** The stable id of an anomaly: detector prefix + 16 hex digits of sha256 over the canonical string. */
export function anomalyId(detector: Detector, targetKey: string, windowStartIso: string): string {
  const prefix = DETECTOR_PREFIX[detector];
  if (prefix === undefined) throw new Error(`anomalyId: unknown detector ${JSON.stringify(detector)}`);
  const canonical = `${detector}\n${targetKey}\n${canonicalInstant(windowStartIso)}`;
  return `${prefix}-${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`;
}
