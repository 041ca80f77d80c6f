/**
 * The demo in a real pseudo-terminal (util-linux `script`), as a newcomer sees it: the progress bar must leave the
 * trace intact, and the printed commands must work as printed.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { plainEnv } from '../support/env.js';
import { renderScreen } from '../support/screen.js';
import { BIN } from './helpers.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'bf-demo-pty-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the demo in a terminal', () => {
  it('shows the whole trace, then the report, with the progress bar gone and commands that run as printed', () => {
    const typescript = join(dir, 'typescript');
    // A copy of some sources as the workspace: the context engine writes its store into the workspace.
    const workspace = join(dir, 'workspace');
    cpSync(join(root, 'src', 'flow'), workspace, { recursive: true });
    // The built CLI (global-setup builds dist/ from src/), started in a third of tsx's time; the command it prints is
    // then run as printed, with tsx, as from a checkout.
    const command = `${process.execPath} ${BIN} demo --workspace ${workspace} --data-dir ${join(dir, 'data')}`;
    execFileSync('script', ['-qfec', command, typescript], { cwd: root, env: plainEnv({ COLUMNS: '120', LINES: '60' }), stdio: 'ignore', timeout: 120_000 });
    const screen = renderScreen(readFileSync(typescript, 'utf8').replace(/^Script started.*\n/, '').replace(/\nScript done.*\n?$/, ''));
    const at = (text: string): number => screen.findIndex((l) => l.includes(text));
    // The trace, in order, then the report: nothing overwritten.
    const order = ['▶ run demo', '⚙ SummarizeNode', '✓ SummarizeNode', '⚙ SynthesizeNode', '✓ GuardNode', '■ run completed', 'question:', 'answer:', 'run id:', 'inspect it:'];
    const positions = order.map(at);
    expect(positions.every((p) => p >= 0), `missing from the screen:\n${screen.join('\n')}`).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(screen.some((l) => l.includes('summarizing'))).toBe(false);
    // The printed commands run as printed, here in a checkout.
    const show = screen.find((l) => l.trim().startsWith('npm run backpackflow -- runs show'))!;
    expect(show).toBeDefined();
    execFileSync('sh', ['-c', show.trim()], { cwd: root, env: plainEnv(), stdio: 'pipe', timeout: 60_000 });
  });
});
