// Composers of the providers / access points / seats / churn family: answers from snapshot files only.
// Edge-safe (no Node imports). Layout and rules: src/api/providers/views.ts, src/render/routes/providers.ts.
// The providers, a provider, the access points, an access point and a seat are answered by their exact
// files (src/edge/compose/index.ts), and so is the churn of an access point at the default window.
import { compareKeys } from '../../api/sort-keys.js';
import { CHURN_DAY_DIRS, churnViewFromDays, type ChurnDayRow, type ChurnParticipantRow } from '../../api/providers/views.js';
import { notFoundOf, ok, type ApiResult } from '../../api/result.js';
import { listComposer, type StoredList } from './scan.js';
import type { Source } from './source.js';
import type { ComposeFn, Composers } from './types.js';

/** The canonical key and name of an AP key (stale keys resolve), from the aps.detail exact file. */
async function apIdentity(src: Source, key: string): Promise<{ key: string; name: string } | null> {
  const d = await src.exact<{ key: string; name: string }>(['v1', 'aps', key]);
  return d === null ? null : { key: d.key, name: d.name };
}

const composeChurn: ComposeFn<'aps.churn'> = async ({ key, from, to }, src): Promise<ApiResult> => {
  const id = await apIdentity(src, key);
  if (id === null) return notFoundOf('churn', key);
  const list = await src.list('aps.churn', [id.key]);
  // No list: the identity has no churn on any day (404 per spec "Errors" 3).
  if (list === null) return notFoundOf('churn', key);
  const dirs = [...CHURN_DAY_DIRS];
  const rows: ChurnDayRow[] = [];
  for await (const { key: k, item } of list.scan({ start: (k) => compareKeys(k, [from], dirs) >= 0 })) {
    if (compareKeys(k, [to], dirs) > 0) break;
    rows.push(item as ChurnDayRow);
  }
  return ok(churnViewFromDays(id.key, id.name, from, to, rows));
};

/** Churn participant rows: the API item plus the event id that breaks ties in the stored key. */
const CHURN_PARTICIPANTS: StoredList = { facet: () => [], counted: [], item: (row) => (row as ChurnParticipantRow).p };

export const PROVIDERS_COMPOSERS = {
  'aps.churn': composeChurn,
  // A stale key reads the list of the identity it resolves to; an unknown key is a 404.
  'aps.churn_participants': listComposer('aps.churn_participants', CHURN_PARTICIPANTS, async ({ key, category }, src) => {
    const id = await apIdentity(src, key);
    return id === null ? null : { routeId: 'aps.churn_participants', partition: [id.key, category] };
  }),
} satisfies Partial<Composers>;
