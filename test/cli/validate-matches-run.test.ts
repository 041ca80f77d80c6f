/**
 * Issue 13: `backpackflow validate` must not accept what `backpackflow run` cannot run, with the same --modules, and
 * names where (a JSON pointer). The cases that validate accepted and run refused, on the example flow. The command
 * line of the sources runs in the test process (the built one is tested in the other CLI tests).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/backpackflow/program.js';
import { makeTempDir } from '../support/temp.js';

const root = join(import.meta.dirname, '..', '..');
const modules = join(root, 'examples', 'flows', 'nodes.ts');
const example = JSON.parse(readFileSync(join(root, 'examples', 'flows', 'keywords.json'), 'utf8')) as {
  nodes: { id: string }[];
  edges: { from: string }[];
  dependencies: Record<string, string>;
};
const TOKEN = `ghp_${'a1B2'.repeat(9)}`;

/** Runs the command line; what it printed and its exit code. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (err.push(String(chunk)), true));
  try {
    process.exitCode = undefined;
    const code = await main(['node', 'backpackflow', ...args]);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.exitCode = undefined;
    stdout.mockRestore();
    stderr.mockRestore();
  }
}

afterEach(() => {
  process.exitCode = undefined;
});

/** The example flow file changed by `change`, written to a temp file. */
function flowFile(change: (flow: typeof example) => void, text?: (json: string) => string): string {
  const flow = structuredClone(example);
  change(flow);
  const path = join(makeTempDir('bpf-validate-run-', 'test'), 'flow.json');
  const json = JSON.stringify(flow, null, 2);
  writeFileSync(path, text ? text(json) : json);
  return path;
}

const renameSource = (id: string) => (flow: typeof example) => {
  flow.nodes[0]!.id = id;
  flow.edges[0]!.from = id;
};

describe('validate refuses what run refuses, at the same JSON pointer', () => {
  it.each([
    ['a node id with a dot', () => flowFile(renameSource('src.x')), '/nodes/0/id', /Namespace segment of node 'src\.x' must be one segment/, false],
    ['a dependency run does not give', () => flowFile((flow) => (flow.dependencies = { llm: 'something' })), '/dependencies/llm', /dependency 'llm' \(something\) is not provided: .*--flow-module/, false],
    // A problem of the file's shape: the checks that need a valid shape did not run, and the report says so.
    ['a __proto__ key of params', () => flowFile(() => undefined, (json) => json.replace('"params": {\n        "key"', '"params": {\n        "__proto__": {"x": 1},\n        "key"')), '/nodes/0/params/__proto__', /'__proto__' cannot be a key of params/, true],
  ])('%s', async (_what, file, pointer, message, shapeOnly) => {
    const path = file();
    const validated = await cli('validate', path, '--modules', modules, '--json');
    expect(validated.code).toBe(1);
    expect(JSON.parse(validated.stdout)).toEqual({ valid: false, errors: [{ path: pointer, message: expect.stringMatching(message) }], ...(shapeOnly ? { shapeOnly: true } : {}) });
    const human = await cli('validate', path, '--modules', modules);
    expect(human.stdout.includes('checked once these are fixed')).toBe(shapeOnly);
    const ran = await cli('run', path, '--modules', modules, '--data-dir', makeTempDir('bpf-validate-run-data-', 'test'));
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain(`${pointer}: `);
    expect(ran.stderr).toMatch(message);
  });

  it('a node id that is a token: validate names the node without quoting it; run refuses it before its first step', async () => {
    const path = flowFile(renameSource(TOKEN));
    const validated = await cli('validate', path, '--modules', modules);
    expect(validated.code).toBe(1);
    expect(validated.stdout).toContain('/nodes/0/id: the node id looks like a secret');
    expect(validated.stdout).not.toContain(TOKEN);
    const dataDir = makeTempDir('bpf-validate-run-data-', 'test');
    const ran = await cli('run', path, '--modules', modules, '--data-dir', dataDir);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/node 'notes\.\[REDACTED\]' has a secret-looking nodeId/);
    expect(ran.stdout + ran.stderr).not.toContain(TOKEN);
    expect(ran.stdout).not.toContain('TextSourceNode'); // no step ran
    expect(JSON.parse((await cli('runs', 'list', '--data-dir', dataDir, '--json')).stdout)).toEqual([]);
  });

  it('the example flow itself: valid, and it runs', async () => {
    const path = flowFile(() => undefined);
    expect((await cli('validate', path, '--modules', modules)).code).toBe(0);
    expect((await cli('run', path, '--modules', modules, '--data-dir', makeTempDir('bpf-validate-run-data-', 'test'))).code).toBe(0);
  });
});
