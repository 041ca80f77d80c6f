import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../../src/context/index.js';
import { openSample } from './helpers.js';

describe('watch', () => {
  it('rescans changed paths and reports the changed nodes', async () => {
    const { root, engine } = await openSample();
    const events: WatchEvent[] = [];
    const watcher = await engine.watch((e) => events.push(e), { debounceMs: 20 });
    try {
      writeFileSync(join(root, 'src/util/numbers.ts'), 'export const n = 3;\n');
      const deadline = Date.now() + 5000;
      while (events.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await watcher.close();
    }
    expect(events[0]?.changedPaths).toEqual(['', 'src', 'src/util', 'src/util/numbers.ts']);
    expect(events[0]?.root).toBe((await engine.status()).root);
  });
});
