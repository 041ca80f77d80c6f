/**
 * Paths, frame types and agent ids named like members of Object.prototype (`constructor`, `toString`) are names like
 * any other: the engine's maps are read by own keys only (`own` in context/state.ts). Found by the adversarial review
 * of 2026-11-28: getNode('constructor') threw a TypeError, getHead returned a function, and an unregistered agent
 * 'constructor' could read.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';

function workspace(): string {
  const w = mkdtempSync(join(tmpdir(), 'audit-s21e-proto-'));
  for (const n of ['constructor', 'toString', 'valueOf']) writeFileSync(join(w, n), n);
  mkdirSync(join(w, 'd'));
  writeFileSync(join(w, 'd', 'x'), 'x');
  return w;
}

describe('context engine: names of Object.prototype members', () => {
  it('getNode on a file named "constructor" before any frame exists answers with no frames (not a TypeError)', async () => {
    const e = await ContextEngine.open(workspace(), { onWarning: () => undefined });
    await e.scan();
    const ctx = await e.getNode('constructor');
    expect(ctx.frameCount).toBe(0);
    expect(await e.listFrames('toString')).toEqual([]);
  });

  it('getHead of a frame type named "constructor" on a node with other heads is null, not a function', async () => {
    const e = await ContextEngine.open(workspace(), { onWarning: () => undefined });
    await e.scan();
    await e.registerAgent({ agentId: 'w', role: 'writer' });
    await e.putFrame('d/x', { type: 'summary', content: 'x' }, 'w');
    expect(await e.getHead('d/x', 'constructor')).toBeNull();
    expect(await e.getHead('d/x', 'toString')).toBeNull();
  });

  it('an unregistered agent id "constructor" is refused as UNKNOWN_AGENT, by putFrame and by the reader adapter', async () => {
    const e = await ContextEngine.open(workspace(), { onWarning: () => undefined });
    await e.scan();
    await e.registerAgent({ agentId: 'w', role: 'writer' });
    await expect(e.putFrame('d/x', { type: 'summary', content: 'x' }, 'constructor')).rejects.toMatchObject({ code: 'UNKNOWN_AGENT' });
  });

  it('the reader adapter of an unregistered agent id "constructor" is refused (requireAgent finds Object.prototype.constructor)', async () => {
    const e = await ContextEngine.open(workspace(), { onWarning: () => undefined });
    await e.scan();
    await e.registerAgent({ agentId: 'w', role: 'writer' });
    // The adapter's read is meant for registered agents only (requireAgent): an id nobody registered must not pass.
    await expect(e.as('constructor').readContext('d/x')).rejects.toMatchObject({ code: 'UNKNOWN_AGENT' });
    await expect(e.as('toString').readContext('d/x')).rejects.toMatchObject({ code: 'UNKNOWN_AGENT' });
  });
});
