/**
 * File primitives shared by the run store and the context engine: atomic writes, reads of files that may be
 * missing, and the single-writer lock. Imports nothing else of this package.
 */
export { DONE, runWriterClosed, runWriterOpened, syncDescriptor, syncOnPool } from './fsync.js';
export { fsyncDirSync, writeFileAtomic, writeFileAtomicSync, writeJsonAtomic } from './atomic.js';
export type { AtomicWriteOptions } from './atomic.js';
export { isLargeJson, writeJsonPieces } from './json-pieces.js';
export { jsonProblem, valueKind } from './json-data.js';
export { readJsonChunked } from './json-read.js';
export type { ReadJsonOptions } from './json-read.js';
export { openIfExists, readTextIfExists, readTextIfExistsSync } from './read.js';
export { removeFileIfExists } from './remove.js';
export { removeDeadTemps } from './temp-files.js';
export { randomHex, randomPoolBytes } from './random.js';
export { renewAfterSnapshot } from './snapshot.js';
export { NotRegularFileError, describeEntry, openFileForReading, openRegularFile } from './regular-file.js';
export type { NotRegularFile, OpenedFile } from './regular-file.js';
export { describeHolder, heldByThisProcess, inspectLock, judgeHolder, lockHeld, tryLock, waitForLock } from './lock.js';
export type { FileLock, LockBusy, LockHolder, LockJudgement, LockOptions, LockState } from './lock.js';
export { parseStatStartTime, parseStatState, systemProbe } from './process-identity.js';
export type { ProcessProbe } from './process-identity.js';
