// The nine change-event types of the spec, in its order: one list for derive, the demo's ground truth
// and the API's schemas and route table. Plain values with no imports (the edge shim reaches it).
export const EVENT_TYPES = [
  'participant_registered',
  'participant_deregistered',
  'participant_smp_changed',
  'endpoint_changed',
  'doctype_support_changed',
  'ap_seat_changed',
  'host_cert_rotated',
  'hosting_changed',
  'directory_card_changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
