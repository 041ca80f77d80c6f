/** Review s48 L2: the Studio's status for a store error says whose fault it is: damage is a 409, a run gone a 404, a failed system call a logged 500. */
import { describe, expect, it } from 'vitest';
import { CheckpointStoreError, EventStoreError, InvalidIdError, LockError, ProjectionStoreError, RunFolderError, RunGoneError, StoreError } from '../../src/store/index.js';
import { NotRegularFileError } from '../../src/fs/index.js';
import { storeErrorStatus } from '../../src/studio/server.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed`), { code });
}

describe('storeErrorStatus', () => {
  it('damage of a stored file, named by the error, is a 409', () => {
    const path = '/data/sessions/s/runs/r/events.jsonl';
    expect(storeErrorStatus(new EventStoreError(`${path}: line 3 is not valid JSON`, { path, line: 3 }))).toBe(409);
    const planted = new NotRegularFileError(path, 'a FIFO (named pipe)');
    expect(storeErrorStatus(new EventStoreError(planted.message, { path, cause: planted }))).toBe(409);
    expect(storeErrorStatus(new CheckpointStoreError('corrupt keyframe', { path }))).toBe(409);
    expect(storeErrorStatus(new ProjectionStoreError('corrupt projection', { path }))).toBe(409);
    expect(storeErrorStatus(new RunFolderError('s', 'r', path, 'a symbolic link to /etc'))).toBe(409);
  });

  it('a run held by a live writer is a 409', () => {
    expect(storeErrorStatus(new LockError('held by pid 12', { path: '/data/x.lock' }))).toBe(409);
  });

  it('a run deleted while the request read it is a 404', () => {
    expect(storeErrorStatus(new RunGoneError('s', 'r', '/data/sessions/s/runs/r'))).toBe(404);
    expect(storeErrorStatus(new EventStoreError('could not read', { path: '/x', cause: errno('ENOENT') }))).toBe(404);
  });

  it.each(['ENOSPC', 'EACCES', 'EIO', 'EMFILE'])('a failed system call under the store (%s) is no 409: the server logs it as a 500', (code) => {
    expect(storeErrorStatus(new EventStoreError('could not append', { path: '/x', cause: errno(code) }))).toBeUndefined();
    expect(storeErrorStatus(new CheckpointStoreError('could not read', { path: '/x', cause: errno(code) }))).toBeUndefined();
  });

  it('anything else is not a store error of that kind', () => {
    expect(storeErrorStatus(new StoreError('a database out of reach'))).toBeUndefined();
    expect(storeErrorStatus(new InvalidIdError('run id', '../x', 'has a separator'))).toBeUndefined();
    expect(storeErrorStatus(new Error('a fault of ours'))).toBeUndefined();
    expect(storeErrorStatus('thrown string')).toBeUndefined();
  });
});
