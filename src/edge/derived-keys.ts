// The sort keys of a list whose chunks store none (format list@3, docs/snapshot-format.md "Lists"):
// its root names a derivation, and a reader computes each item's key from the item. Only the
// participant lists are stored so; their keys are functions of the stored item
// (src/api/participants/plan.ts PARTICIPANT_KEYS). Edge-safe: no Node imports.
import type { SortKey } from '../api/sort-keys.js';
import { DEFAULT_SORT, listOrder, MAIN_LIST_SORTS, PARTICIPANT_KEYS, type StoredParticipant } from '../api/participants/plan.js';
import type { Chunk, ListRoot } from './list-format.js';

export type KeyOf = (item: unknown) => SortKey;

// The items are the snapshot's own (StoredParticipant arrays, written by src/render/routes/
// participant-lists.ts): the casts below take them as such, as the shim's composer does. A key is
// computed straight from the array (a page reads up to about a thousand items a chunk at a time):
// expanding each item into its object first took about twice as long as parsing the chunk.

/** Where each field of ParticipantListItem is in a StoredParticipant; the id is `scheme::value`. */
const STORED_AT: Readonly<Record<string, number>> = { scheme: 0, value: 1, name: 2, country: 3, registered: 4, smp: 5, ap_seat_id: 6, ap_provider: 7, provenance: 8, first_seen_at: 9 };
const idOf = (s: StoredParticipant): string => `${s[0]}::${s[1]}`;

/**
 * An order's sort key of a stored item: the values sortKeyOf (src/api/routes/request.ts) gives for
 * the expanded item (a ts field as epoch ms, a nullable one null). A list@3 chunk holds the list@3
 * item form only (no id first), so no other form is read here.
 */
function storedKeyOf(sort: (typeof MAIN_LIST_SORTS)[number]): KeyOf {
  const fields = listOrder(sort).fields.map((f) => ({ at: f.field === 'id' ? -1 : STORED_AT[f.field]!, ts: f.type === 'ts', nullable: f.nullable === true }));
  return (x) => {
    const s = x as StoredParticipant;
    const key: Array<string | number | null> = [];
    for (const f of fields) {
      const v = f.at < 0 ? idOf(s) : s[f.at];
      const k = v === null ? (f.nullable ? null : undefined) : f.ts ? Date.parse(String(v)) : v;
      if (k === undefined || typeof k === 'boolean' || Number.isNaN(k)) throw new Error(`derived key: bad item ${JSON.stringify(s)}`);
      key.push(k);
    }
    return key;
  };
}

const DEFAULT_KEY = storedKeyOf(DEFAULT_SORT);

const DERIVATIONS = new Map<string, KeyOf>([
  ...MAIN_LIST_SORTS.map((sort): [string, KeyOf] => [PARTICIPANT_KEYS.order(sort), storedKeyOf(sort)]),
  [PARTICIPANT_KEYS.ids, (x) => [(x as StoredParticipant)[1], idOf(x as StoredParticipant)]],
  // cellKey (src/api/participants/plan.ts): the cell, then the default order's key.
  [PARTICIPANT_KEYS.cells, (x) => {
    const s = x as StoredParticipant;
    return [s[3] ?? '', s[0], s[4] ? 'true' : 'false', s[8], s[5] ?? '', s[6] ?? '', ...DEFAULT_KEY(s)];
  }],
]);

/** The derivation `name` stands for; null when this code knows no such derivation. */
export function keyDerivation(name: string): KeyOf | null {
  return DERIVATIONS.get(name) ?? null;
}

/** How a list's chunks get their keys: null when they store them (list@1, list@2). */
export function keyOfRoot(root: ListRoot): KeyOf | null {
  if (root.key === undefined) return null;
  const k = keyDerivation(root.key);
  if (k === null) throw new Error(`unknown key derivation ${root.key}`);
  return k;
}

/** A chunk as read, with its keys: stored ones, or derived from its items by `keyOf`. */
export function withKeys(keyOf: KeyOf | null, c: { keys?: SortKey[]; items: unknown[] }): Chunk {
  if (c.keys !== undefined) return { keys: c.keys, items: c.items };
  if (keyOf === null) throw new Error('a chunk without keys');
  return { keys: c.items.map(keyOf), items: c.items };
}
