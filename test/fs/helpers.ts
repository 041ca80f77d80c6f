import { makeTempDir } from '../support/temp.js';

/** A fresh temp directory, removed after the test. */
export function tempDir(): string {
  return makeTempDir('bpf-fs-', 'test');
}
