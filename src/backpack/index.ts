export * from './patterns.js';
export { Backpack, DEFAULT_OPTIONS, type ResolvedOptions } from './backpack.js';
export { BackpackHandle } from './handle.js';
export { encodeValue, decodeValue, summarizeValue, type JsonValue } from './codec.js';
export { UnavailableValue, isUnavailable } from './values.js';
export { BackpackError, AccessDeniedError, KeyNotFoundError, HistoryPrunedError, InvalidCommitError } from './errors.js';
export { BackpackJSONSchema, type BackpackJSON } from './serialize.js';
export { NodePermissionsSchema, ItemAccessControlSchema } from './access.js';
export type * from './types.js';
