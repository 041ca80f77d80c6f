/**
 * Issue 14: a run pauses for a person, its process exits, and another process resumes it with the answer; real
 * child processes throughout, SIGKILL included.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { listRuns, loadRunPoint, decodeValue } from '../../src/index.js';

const bundle = await bundledScript(join(import.meta.dirname, 'fixtures', 'approval-child.ts'));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
/** A data directory of its own for each test: the tests run at the same time. */
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bf-hitl-'));
  dirs.push(dir);
  return dir;
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: string[];
}

/** Runs the child to its end, or until `killAfter` appears on its stdout (then SIGKILL). */
function runChild(args: string[], killAfter?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [bundle, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (killAfter !== undefined && out.includes(killAfter)) proc.kill('SIGKILL');
    });
    proc.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      if (code !== 0 && signal === null && !out.startsWith('error')) reject(new Error(`child failed (${code}): ${err}`));
      else resolve({ code, signal, lines: out.trim().split('\n').filter(Boolean) });
    });
  });
}

const result = (o: Outcome) => JSON.parse(o.lines.at(-1)!) as { status: string; interrupt?: Record<string, unknown>; steps: number };
const status = async (dir: string, runId: string) => (await listRuns({ dataDir: dir })).find((r) => r.runId === runId)!;

// Each test waits on its chain of child processes one at a time; the three chains overlap.
describe.concurrent('interrupts across processes', () => {
  it('pause → exit → resume with answers in new processes (two questions, two composites deep) → completed', async () => {
    const dir = dataDir();
    const runId = 'hitl-1';
    const first = await runChild(['run', dir, runId]);
    expect(first.code).toBe(0);
    expect(result(first)).toMatchObject({ status: 'waiting', interrupt: { nodeId: 'ask', namespace: 'hitl.review.gate.ask', index: 0, payload: { question: 'Publish this draft?', draft: 'Tides are caused by the moon.' } } });
    expect(result(first).interrupt!.schema).toMatchObject({ type: 'object', properties: { approved: { type: 'boolean' } } });
    expect(await status(dir, runId)).toMatchObject({ status: 'waiting', interrupt: { namespace: 'hitl.review.gate.ask', index: 0 } });

    // A wrong answer: a clear error naming the JSON path; nothing is written, the run keeps waiting.
    const before = (await status(dir, runId)).eventCount;
    const bad = await runChild(['resume', dir, runId, JSON.stringify({ approved: 'yes' })]);
    expect(bad.code).toBe(1);
    expect(bad.lines.at(-1)).toMatch(/^error InterruptAnswerError: .*\/approved: .*the run is still waiting/);
    expect(await status(dir, runId)).toMatchObject({ status: 'waiting', eventCount: before });

    // The first answer: the node runs again from prep, gets it, and asks its second question.
    const second = await runChild(['resume', dir, runId, JSON.stringify({ approved: true, note: 'ok' })]);
    expect(result(second)).toMatchObject({ status: 'waiting', interrupt: { namespace: 'hitl.review.gate.ask', index: 1, payload: 'When should it go out?' } });

    const done = await runChild(['resume', dir, runId, JSON.stringify('tomorrow')]);
    expect(result(done).status).toBe('completed');
    const point = await loadRunPoint({ dataDir: dir, runId });
    expect(decodeValue(point.state.items['decision']!.value)).toEqual({ approved: true, note: 'ok', when: 'tomorrow' });
    expect(point.state.items['published']).toBeDefined();
    const meta = await status(dir, runId);
    expect(meta).toMatchObject({ status: 'completed', errorCount: 0 });
    expect(meta.segments!.map((s) => s.outcome)).toEqual(['waiting', 'waiting', 'completed']);
    expect(meta.startedAt).toBe(meta.segments![0]!.startedAt);
  });

  it('SIGKILL mid-resume: the run is listed as stopped, and a resume without an answer completes with the recorded one', async () => {
    const dir = dataDir();
    const runId = 'hitl-2';
    await runChild(['run', dir, runId]);
    await runChild(['resume', dir, runId, JSON.stringify({ approved: true })]);
    const killed = await runChild(['resume', dir, runId, JSON.stringify('friday'), '60000'], 'answered');
    expect(killed.signal).toBe('SIGKILL');
    expect((await status(dir, runId)).status).toBe('stopped');
    // Both answers were recorded before the node ran again; a plain resume gives them back.
    const done = await runChild(['resume', dir, runId]);
    expect(result(done).status).toBe('completed');
    const point = await loadRunPoint({ dataDir: dir, runId });
    expect(decodeValue(point.state.items['decision']!.value)).toEqual({ approved: true, when: 'friday' });
    expect((await status(dir, runId)).status).toBe('completed');
  });

  it('refuses to resume a waiting run without an answer, and an answer for a run that is not waiting', async () => {
    const dir = dataDir();
    const runId = 'hitl-3';
    await runChild(['run', dir, runId]);
    const noAnswer = await runChild(['resume', dir, runId]);
    expect(noAnswer.lines.at(-1)).toMatch(/is waiting for an answer to node 'ask' \(hitl\.review\.gate\.ask\): pass it as resume/);
    await runChild(['resume', dir, runId, JSON.stringify({ approved: false })]);
    expect((await status(dir, runId)).status).toBe('completed');
    const late = await runChild(['resume', dir, runId, JSON.stringify({ approved: true })]);
    expect(late.lines.at(-1)).toMatch(/already completed/);
  });
});
