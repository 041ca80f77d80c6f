/**
 * The LangGraph checkpointer conformance suite, `@langchain/langgraph-checkpoint-validation`, run whole against
 * BackpackflowSaver as that package documents for a Jest-compatible runner: import `validate` and call it from a
 * test file. Its specs use the runner's globals (describe, it, expect, hooks), so they are set before it loads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vitest from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';

const globals = globalThis as Record<string, unknown>;
for (const name of ['describe', 'it', 'test', 'expect', 'beforeAll', 'afterAll', 'beforeEach', 'afterEach'] as const) globals[name] ??= vitest[name];

const { validate, deltaChannelHistoryTests } = await import('@langchain/langgraph-checkpoint-validation');

const dirs = new Map<BackpackflowSaver, string>();
const initializer = {
  checkpointerName: 'BackpackflowSaver',
  // A fresh data directory per checkpointer: instances never see each other's threads.
  createCheckpointer(): BackpackflowSaver {
    const dataDir = mkdtempSync(join(tmpdir(), 'bpf-lg-validate-'));
    const saver = new BackpackflowSaver({ dataDir });
    dirs.set(saver, dataDir);
    return saver;
  },
  async destroyCheckpointer(saver: BackpackflowSaver): Promise<void> {
    await saver.close();
    rmSync(dirs.get(saver)!, { recursive: true, force: true });
    dirs.delete(saver);
  },
};

validate(initializer);
// Opt-in in the package (not part of `validate`): the walk that rebuilds DeltaChannel state from stored writes.
deltaChannelHistoryTests(initializer);
