// Providers, seats and AP identities: the `providers` and `rosters` steps and their readers.
export { providersStep, PROVIDERS_DDL, PROVIDERS_TABLES } from './step.js';
export { rostersStep, ROSTERS_DDL, ROSTERS_TABLES } from './rosters.js';
export { curatedKey, identityOf, orgHash, orgKey, seatKey, slugify, type SeatIdentity } from './identity.js';
export { resolveApKey, seatsOfKey } from './keys.js';
export { servingSeat } from './serving.js';
export * from './read.js';
