/**
 * Agent ids, capabilities and frame types are stored as they are (`agents.json`, `state.json`, every frame file):
 * one that holds a secret by the engine's redaction (the catalogue, and the user's own patterns) is refused with an
 * error that does not quote it, and nothing of it reaches `.merkle/` (review s31, finding 4: the run store refused
 * such node and run ids, the context engine wrote them).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextEngine, ContextError } from '../../src/context/index.js';
import { tempDir, writeTree } from './helpers.js';

const GHP = 'ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5';
const SLACK = 'xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJklmn';
const OWN = 'acme-7f3a9c2e11';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

let engine: ContextEngine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

async function openEngine(options: Parameters<typeof ContextEngine.open>[1] = {}): Promise<{ root: string; engine: ContextEngine }> {
  const root = tempDir();
  writeTree(root, { 'README.md': 'hello\n', 'src/a.ts': 'export {};\n' });
  engine = await ContextEngine.open(root, options);
  await engine.scan();
  await engine.registerAgent({ agentId: 'writer', role: 'writer' });
  await engine.registerAgent({ agentId: 'synth', role: 'synthesis' });
  return { root, engine };
}

async function refusal(call: () => Promise<unknown>): Promise<ContextError> {
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ContextError);
  return error as ContextError;
}

describe('secret-looking names in the context engine', () => {
  it.each([
    ['agent id', (e: ContextEngine, s: string) => e.registerAgent({ agentId: s, role: 'writer' })],
    ['capability', (e: ContextEngine, s: string) => e.registerAgent({ agentId: 'other', role: 'writer', capabilities: ['summary', s] })],
    ['frame type', (e: ContextEngine, s: string) => e.putFrame('README.md', { type: s, content: 'x' }, 'writer')],
    ['synthesized frame type', (e: ContextEngine, s: string) => e.synthesizeBranch('', s, 'synth')],
  ])('a token as %s is refused without quoting it, and is on no file of .merkle/', async (what, call) => {
    const { root, engine } = await openEngine();
    for (const secret of [GHP, SLACK]) {
      const error = await refusal(() => call(engine, secret));
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toContain(`the ${what.replace('synthesized ', '')} holds a secret-looking value`);
      expect(`${error.message}${JSON.stringify(error)}`).not.toContain(secret);
      expect(filesUnder(join(root, '.merkle')).filter((f) => readFileSync(f, 'latin1').includes(secret))).toEqual([]);
    }
  });

  it.each([
    ["a concatenation's source type", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'digest', 'synth', { kind: 'concatenation', sourceType: s }), 'policy source type'],
    ["a filter's text", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'filtered', 'synth', { kind: 'filtering', sourceType: 'summary', contains: s }), 'policy filter text'],
    ["a filter's frame types", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'typed', 'synth', { kind: 'filtering', sourceType: 'summary', types: ['note', s] }), 'policy frame type'],
    ["a filter's agent ids", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'by', 'synth', { kind: 'filtering', sourceType: 'summary', agents: [s] }), 'policy agent id'],
    ["a custom policy's name", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'custom', 'synth', { kind: 'custom', name: s }), 'policy name'],
    ["a filter's frame types as a Set (review s34, finding 8)", (e: ContextEngine, s: string) => e.synthesizeBranch('', 'typed', 'synth', { kind: 'filtering', sourceType: 'summary', types: new Set(['note', s]) as never }), 'policy frame type'],
    ['a registered custom policy', async (e: ContextEngine, s: string) => e.registerSynthesisPolicy(s, () => 'x'), 'policy name'],
  ])('a token in %s is refused (the policy is stored with every frame it makes: review s33, finding 9)', async (_what, call, field) => {
    const { root, engine } = await openEngine();
    await engine.putFrame('README.md', { type: 'summary', content: 'hello summary' }, 'writer');
    for (const secret of [GHP, SLACK]) {
      const error = await refusal(async () => call(engine, secret));
      expect(error.message).toContain(`the ${field} holds a secret-looking value`);
      expect(error.message).not.toContain(secret);
      expect(filesUnder(join(root, '.merkle')).filter((f) => readFileSync(f, 'latin1').includes(secret))).toEqual([]);
    }
  });

  it("the user's own patterns count; ordinary names are taken", async () => {
    const { engine } = await openEngine({ redaction: { patterns: [/acme-[0-9a-f]{10}/g] } });
    await refusal(() => engine.registerAgent({ agentId: OWN, role: 'writer' }));
    await expect(engine.registerAgent({ agentId: 'summarizer@v2', role: 'writer', capabilities: ['summary', 'review:code'] })).resolves.toMatchObject({ agentId: 'summarizer@v2' });
    await expect(engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'summarizer@v2')).resolves.toMatch(/\w/);
  });
});
