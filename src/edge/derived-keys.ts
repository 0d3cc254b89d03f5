// The sort keys of a list whose chunks store none (format list@3, docs/snapshot-format.md "Lists"):
// its root names a derivation, and a reader computes each item's key from the item. Only the
// participant lists are stored so; their keys are functions of the stored item
// (src/api/participants/plan.ts PARTICIPANT_KEYS). Edge-safe: no Node imports.
import type { SortKey } from '../api/sort-keys.js';
import { cellKey, expandParticipant, listKey, listOrder, MAIN_LIST_SORTS, PARTICIPANT_KEYS, type StoredParticipant } from '../api/participants/plan.js';
import type { Chunk, ListRoot } from './list-format.js';

export type KeyOf = (item: unknown) => SortKey;

// The items are the snapshot's own (StoredParticipant arrays, written by src/render/routes/
// participant-lists.ts): the casts below take them as such, as the shim's composer does.
const DERIVATIONS = new Map<string, KeyOf>([
  ...MAIN_LIST_SORTS.map((sort): [string, KeyOf] => {
    const order = listOrder(sort);
    return [PARTICIPANT_KEYS.order(sort), (x) => listKey(order, expandParticipant(x as StoredParticipant))];
  }),
  [PARTICIPANT_KEYS.ids, (x) => {
    const i = expandParticipant(x as StoredParticipant);
    return [i.value, i.id];
  }],
  [PARTICIPANT_KEYS.cells, (x) => cellKey(expandParticipant(x as StoredParticipant))],
]);

/** The derivation `name` stands for; null when this code knows no such derivation. */
export function keyDerivation(name: string): KeyOf | null {
  return DERIVATIONS.get(name) ?? null;
}

/** How a list's chunks get their keys: null when they store them (list@1, list@2). */
export function keyOfRoot(root: ListRoot): KeyOf | null {
  if (root.key === undefined) return null;
  const k = keyDerivation(root.key);
  if (k === null) throw new Error(`unknown key derivation ${JSON.stringify(root.key)}`);
  return k;
}

/** A chunk as read, with its keys: stored ones, or derived from its items by `keyOf`. */
export function withKeys(keyOf: KeyOf | null, c: { keys?: SortKey[]; items: unknown[] }): Chunk {
  if (c.keys !== undefined) return { keys: c.keys, items: c.items };
  if (keyOf === null) throw new Error('a chunk without keys in a list that stores them');
  return { keys: c.items.map(keyOf), items: c.items };
}
