/** Savers sharing threads in the files of one data directory (other processes): see fixtures/shared-threads.ts. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { sharedThreadCases } from './fixtures/shared-threads.js';

sharedThreadCases('files', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bpf-lg-shared-'));
  return {
    worker: () => new BackpackflowSaver({ dataDir }),
    cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
});
