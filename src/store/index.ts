/**
 * The storage layer (DESIGN D15-D17): event log, checkpoints, long-term memory, run projections, and the
 * utilities they share (ids, path safety, redaction, atomic writes, writer locks).
 */
export { EventStore } from './event-store.js';
export type { EventStoreOptions, ReadOptions, CorruptLine, VerifyResult, IndexEntry, OpenedLog } from './event-store.js';
export { CheckpointStore, prepareCheckpoint } from './checkpoint-store.js';
export type { CheckpointInput, CheckpointStoreOptions } from './checkpoint-store.js';
export { MemoryStore } from './memory-store.js';
export type { Memory } from './memory-store.js';
export { PostgresMemoryStore } from './postgres/memory-store.js';
export type { MemoryItemInput, MemoryStoreOptions, MemorySearchOptions, ScoredMemoryItem, MemoryPage, MemoryFilter } from './memory-store.js';
export { ProjectionStore } from './projection-store.js';
export type { ProjectionStoreOptions } from './projection-store.js';
export { foldRunMeta, foldRunMetaBatch, emptyRunMeta, runDuration, type RunDuration } from './run-meta.js';
export { KeywordIndex, tokenize, BM25_K1, BM25_B } from './keyword-index.js';
export type { KeywordIndexFile, ScoredId } from './keyword-index.js';
export { CheckpointSchema, MemoryItemSchema, RunMetaSchema, RunStatusSchema, TokenUsageSchema } from './types.js';
export type { Checkpoint, MemoryItem, RunMeta, RunSegment, Durability } from './types.js';
export {
  StoreError,
  EventStoreError,
  LockError,
  CheckpointStoreError,
  MemoryStoreError,
  MemoryFolderError,
  ProjectionStoreError,
  InvalidIdError,
  RunExistsError,
  RunGoneError,
  RunFolderError,
  DocumentGoneError,
  FencedError,
} from './errors.js';
export { RunChangedError } from './retention.js';
export { checkedDocument, recordedDigests, type DocumentDigests } from './run-documents.js';
export type { LockHolder } from './errors.js';
export { newSessionKey, newMemoryId } from './ids.js';
export {
  assertValidId,
  isValidId,
  idProblem,
  MAX_ID_LENGTH,
  runPaths,
  runDirProblem,
  assertRunDir,
  runsDir,
  sessionsDir,
  memoryPaths,
  memoryItemPath,
  historicalCheckpointPath,
} from './paths.js';
export type { RunPaths, MemoryPaths } from './paths.js';
export { Redactor, redactorFor, renewEnvironmentSecrets, redact, redactConfig, containsSecrets, isSecretKey, REDACTED, DEFAULT_SECRET_PATTERNS } from '../redact/index.js';
export type { RedactionOptions, RedactionResult, SecretPattern } from '../redact/index.js';
export { writeFileAtomic, writeJsonAtomic } from '../fs/index.js';
export type { AtomicWriteOptions, FileLock } from '../fs/index.js';
export { acquireLock } from './lock.js';
export { assertNewRun, listSessions, listRunIds, runHasEvents, runWriterAlive } from './layout.js';
export type { RunRef } from './layout.js';
export type { RunStore, RunWriter, RunDocumentName, KeyframeInput, OpenWriterOptions, DeleteRunCondition, TakenKeyframe } from './run-store.js';
export { FileRunStore } from './file-run-store.js';
export { PostgresRunStore } from './postgres/run-store.js';
export type { PostgresRunStoreOptions } from './postgres/run-store.js';
export { deleteRunDir, sweepDeletedRuns, RunInUseError } from './retention.js';
