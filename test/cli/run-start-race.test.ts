/**
 * Two `run` processes starting the same run id at once, each with its own flow: one run is recorded, the other start
 * fails, and the flow recorded with the run is the one that ran (what `runs resume` and `runs fork` rebuild), never
 * the losing start's. Each start builds its flow slowly, so that both are recording and building at the same time.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRunPoint } from '../../src/index.js';
import { decodeValue } from '../../src/backpack/index.js';
import { trials } from '../support/soak.js';
import { MODULES, cliProcess, tempDir } from './helpers.js';

const DIST = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

/** A node module whose `SlowBuild` node takes `params.buildMs` to construct (a large flow's build). */
function slowModule(dir: string): string {
  const file = join(dir, 'slow.mjs');
  writeFileSync(
    file,
    `import { BackpackNode } from ${JSON.stringify(DIST)};
export class SlowBuild extends BackpackNode {
  constructor(config, context) {
    super(config, context);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, this.params.buildMs);
  }
}
`,
  );
  return file;
}

/** A flow that records `who` in the state, and takes `buildMs` to build. */
function flowFile(dir: string, who: string, buildMs: number): string {
  const file = join(dir, `flow-${who}.json`);
  const nodes = [
    { type: 'SlowBuild', id: 'slow', params: { buildMs } },
    { type: 'Put', id: 'put', params: { key: 'who', value: who } },
  ];
  writeFileSync(file, JSON.stringify({ version: '2.0.0', namespace: who, nodes, edges: [{ from: 'slow', to: 'put' }] }));
  return file;
}

describe('run: two starts of one run id at once', () => {
  it('record the flow of the start that ran, and the other start fails saying the id is taken', { timeout: 120_000 }, async () => {
    const dir = tempDir();
    const modules = ['--modules', MODULES, '--modules', slowModule(dir)];
    const flows = { a: flowFile(dir, 'a', 400), b: flowFile(dir, 'b', 700) };
    for (let trial = 0; trial < trials(1, 10); trial++) {
      const dataDir = join(dir, `data-${trial}`);
      const runId = `race-${trial}`;
      const start = (who: 'a' | 'b') => cliProcess(['run', flows[who], ...modules, '--run-id', runId, '--data-dir', dataDir, '--json']);
      const first = start('a');
      await new Promise((resolve) => setTimeout(resolve, 100 + trial * 37 % 150));
      const results = await Promise.all([first, start('b')]);
      const won = results.filter((r) => r.code === 0);
      expect(won, results.map((r) => r.stderr).join('\n')).toHaveLength(1);
      const lost = results.find((r) => r.code !== 0)!;
      expect(lost.stderr).toMatch(new RegExp(`${runId}.*(already exists|already has a writer|being written)|(already exists|already has a writer|being written).*${runId}`, 's'));
      // The run that was recorded and the flow recorded with it are the same start's.
      const point = await loadRunPoint({ dataDir, runId });
      const ran = decodeValue(point.state.items.who!.value) as string;
      const recorded = JSON.parse(readFileSync(join(dataDir, 'sessions', 'default', 'runs', runId, 'flow.json'), 'utf8')) as { namespace: string };
      expect(recorded.namespace).toBe(ran);
      expect(recorded).toEqual(JSON.parse(readFileSync(flows[ran as 'a' | 'b'], 'utf8')));
    }
  });
});
