// The host derivation (docs/methodology/hosts.md): the `hosts` step, raw-probe pruning and readers.
export { hostsStep, HOSTS_STEP, pruneRawProbes, prunedBefore, PRUNED_META } from './step.js';
export * from './read.js';
export { isoTime } from './time.js';
export { incidentId } from './incidents.js';
export { quorum, evaluate, STALE_AFTER_MS, KNOWN_WINDOW_MS, type Verdict } from './quorum.js';
export { ALL_LOCATIONS, PHASES, type Resolution } from './rollup.js';
