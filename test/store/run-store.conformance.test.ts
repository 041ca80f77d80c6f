import { FileRunStore } from '../../src/store/file-run-store.js';
import { runStoreConformance } from '../support/run-store-conformance.js';
import { tempDir } from './helpers.js';

runStoreConformance('files', async () => {
  const { dir, cleanup } = tempDir();
  return { store: new FileRunStore(dir), reopen: () => new FileRunStore(dir), cleanup: async () => cleanup() };
});
