export * from './patterns.js';
export { Backpack, DEFAULT_OPTIONS, type NodeRef, type ResolvedOptions } from './backpack.js';
export { BackpackHandle, NodeBinding } from './handle.js';
export { CODEC_TAG, encodeValue, decodeValue, summarizeValue, type JsonValue } from './codec.js';
export { UnavailableValue, isUnavailable, deepEqual, setOwn } from './values.js';
export { BackpackError, AccessDeniedError, KeyNotFoundError, HistoryPrunedError, InvalidCommitError } from './errors.js';
export { BackpackJSONSchema, type BackpackJSON } from './serialize.js';
export { NodePermissionsSchema, ItemAccessControlSchema } from './access.js';
export type * from './types.js';
export {
  BackpackStateSchema,
  StateItemSchema,
  QuarantinedStateItemSchema,
  type BackpackState,
  type StateItem,
  type QuarantinedStateItem,
  type StoredState,
  type StoredItem,
} from './state.js';
