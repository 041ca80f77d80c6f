/**
 * Input of the wrong shape to the context engine is an INVALID_ARGUMENT naming what is wrong, never a silent wrong
 * answer (a list given as a string was matched as a substring), a raw TypeError, or a name of the wrong kind stored
 * in every synthesized frame. The CLI's `--view` takes a whole ContextView as JSON (test/context/cli.test.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine, ContextError } from '../../src/context/index.js';
import { makeTempDir } from '../support/temp.js';

async function workspace(): Promise<ContextEngine> {
  const root = makeTempDir('input-shapes-', 'test');
  mkdirSync(join(root, 'd'));
  writeFileSync(join(root, 'd/a.txt'), 'a');
  const engine = await ContextEngine.open(root, { onWarning: () => undefined });
  await engine.scan();
  await engine.registerAgent({ agentId: 'w', role: 'writer' });
  await engine.registerAgent({ agentId: 's', role: 'synthesis' });
  // Frames of type 'sum' by agent 'w' only.
  await engine.putFrame('d/a.txt', { type: 'sum', content: 'one' }, 'w');
  await engine.putFrame('d/a.txt', { type: 'sum', content: 'two' }, 'w');
  return engine;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof ContextError ? e.code : `${(e as Error).constructor.name}: ${(e as Error).message}`),
  );
}

describe('a ContextView or composition policy of the wrong shape', () => {
  it('view.types as a string ("summary", not ["summary"]) is refused, not matched as a substring', async () => {
    const engine = await workspace();
    // Today 'summary'.includes('sum') is true: frames of type 'sum' are returned for a view asking for 'summary'.
    await expect(engine.getNode('d/a.txt', { types: 'summary' as unknown as string[] })).rejects.toThrow('getNode: view.types must be a list of frame types, got a string');
  });

  it('view.agents as a string ("w2") is refused, not matched as a substring of agent "w"', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.getNode('d/a.txt', { agents: 'w2' as unknown as string[] }))).toBe('INVALID_ARGUMENT');
  });

  it('view.headsOnly as the string "false" is refused, not taken as true', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.getNode('d/a.txt', { headsOnly: 'false' as unknown as boolean }))).toBe('INVALID_ARGUMENT');
  });

  it('view.typePriority as a string gives INVALID_ARGUMENT, not a raw TypeError', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.getNode('d/a.txt', { ordering: 'type', typePriority: 'sum' as unknown as string[] }))).toBe('INVALID_ARGUMENT');
  });

  it('an unknown view field (a typo: maxframes) is refused, not ignored', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.getNode('d/a.txt', { maxframes: 1 } as unknown as { maxFrames: number }))).toBe('INVALID_ARGUMENT');
  });

  it('compose with types as a string is refused, not matched as a substring', async () => {
    const engine = await workspace();
    // `types` is a filter (policy.filters.types): at the top it was ignored.
    await expect(engine.compose('d/a.txt', { maxFrames: 5, types: 'summary' } as never)).rejects.toThrow('compose: policy has unknown field(s) "types"');
    expect(await codeOf(engine.compose('d/a.txt', { maxFrames: 5, filters: { types: 'summary' } } as never))).toBe('INVALID_ARGUMENT');
    // The right shape still works.
    expect((await engine.compose('d/a.txt', { maxFrames: 5, filters: { types: ['sum'] } })).frames).toHaveLength(2);
  });
});

describe('names checked as their kind is elsewhere', () => {
  it('a synthesis policy sourceType that is not a frame type is refused (it is stored in every synthesized frame basis)', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.synthesizeBranch('d', 'digest', 's', { kind: 'concatenation', sourceTyep: 'sum' } as never))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(engine.synthesizeBranch('d', 'digest', 's', { kind: 'concatenation', sourceType: 'bad type\n' }))).toBe('INVALID_ARGUMENT');
  });

  it('a filtering policy with types as a string is refused', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.synthesizeBranch('d', 'digest', 's', { kind: 'filtering', types: 'sum' } as never))).toBe('INVALID_ARGUMENT');
  });

  it('a capability that is not a frame type (NUL, control characters, 100 KB) is refused at registration', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.registerAgent({ agentId: 'c1', role: 'writer', capabilities: ['a\u0000b'] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(engine.registerAgent({ agentId: 'c2', role: 'writer', capabilities: ['\u001b[31mred'] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(engine.registerAgent({ agentId: 'c3', role: 'writer', capabilities: ['x'.repeat(100_000)] }))).toBe('INVALID_ARGUMENT');
  });

  it('scan({ paths }) with a NUL byte in a path is refused, not a silent no-op; a string instead of a list gives INVALID_ARGUMENT', async () => {
    const engine = await workspace();
    expect(await codeOf(engine.scan({ paths: ['d\u0000'] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(engine.scan({ paths: 'd' as unknown as string[] }))).toBe('INVALID_ARGUMENT');
  });
});

describe('frame metadata that JSON cannot hold', () => {
  it('a Map, Set or Date in frame metadata is refused, never stored silently as {}', async () => {
    const engine = await workspace();
    for (const value of [new Map([['k', 'v']]), new Set(['v']), new Date(0)]) {
      await expect(engine.putFrame('d/a.txt', { type: 'meta', content: 'c', metadata: { value } }, 'w')).rejects.toThrow(
        `putFrame("d/a.txt"): frame metadata.value: expected JSON data (a string, finite number, boolean, null, array or plain object), got an instance of ${value.constructor.name}`,
      );
    }
  });
});
