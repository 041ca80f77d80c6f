/**
 * The built command lines print stored and user-supplied text through terminalText: a run whose keys, values, node ids
 * (free text beside a namespaceSegment), class names, quarantine reasons, action and error message are hostile; memory
 * content; a flow file's problems; a workspace's paths and frame content. Every command's stdout and stderr hold no
 * character a terminal acts on but the newlines the command writes, and as many of them as for harmless twins of the
 * same text. Plus the audit's case: a failed run made to look completed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainEnv } from '../support/env.js';
import { ACTS_BUT_NEWLINE, hostileText, twin } from '../support/hostile-text.js';
import { trials } from '../support/soak.js';
import { cli, tempDir, type Result } from './helpers.js';
import { runMerkleInProcess } from './in-process.js';

const root = join(import.meta.dirname, '..', '..');
const INDEX = pathToFileURL(join(root, 'dist', 'index.js')).href;

interface Texts {
  key: string;
  value: string;
  id: string;
  className: string;
  reason: string;
  action: string;
  message: string;
  memory: string;
  query: string;
}

/**
 * Texts of at least two pieces: an empty text attacks nothing, and a short one often holds no character a terminal
 * acts on (1 in 5 of hostileText's texts hold none, 1 in 20 of these). A case runs every command twice (for the texts
 * and for their twins, some 0.4 s of CPU), so `npm test` runs 2 cases, which with these texts leave a field without
 * such a character about as rarely as 4 cases of hostileText's did (0.2% of runs); the soak runs 40.
 */
const field = (): fc.Arbitrary<string> => hostileText({ minLength: 2 });
const texts: fc.Arbitrary<Texts> = fc.record({
  key: field(),
  value: field(),
  id: field(),
  className: field(),
  reason: field(),
  action: field(),
  message: field(),
  memory: field(),
  query: field(),
});

function twins(s: Texts): Texts {
  return Object.fromEntries(Object.entries(s).map(([field, text]) => [field, twin(text, field === 'memory')])) as unknown as Texts;
}

let modules = 0;

/**
 * A flow module (a new file each time: the in-process CLI imports a module once): node `w<id>` of class `W<className>`
 * packs `k<key>` = value and quarantines a second key with the reason, then routes `go<action>` to node `f<id>`, whose
 * exec throws the message. Keys have their dots replaced (a dot separates a key's segments).
 */
function flowModule(dir: string, s: Texts): string {
  const file = join(dir, `flow-${++modules}.mjs`);
  const key = `k${s.key.replace(/\./g, '_')}`;
  writeFileSync(
    file,
    `import { BackpackNode, Flow } from ${JSON.stringify(INDEX)};
const S = ${JSON.stringify({ ...s, key })};
class W extends BackpackNode {
  static namespaceSegment = 'w';
  post(bp) { bp.pack(S.key, S.value); bp.pack(S.key + 'q', 1); bp.quarantine(S.key + 'q', { reason: 'r' + S.reason }); return 'go' + S.action; }
}
Object.defineProperty(W, 'name', { value: 'W' + S.className });
class F extends BackpackNode {
  static namespaceSegment = 'f';
  exec() { throw new Error(S.message); }
}
export function buildFlow() {
  const flow = new Flow({ namespace: 'h' });
  const w = flow.addNode(W, { id: 'w' + S.id });
  w.on('go' + S.action, flow.addNode(F, { id: 'f' + S.id }));
  return flow;
}
`,
  );
  return `${file}#buildFlow`;
}

/** Every command of the run, memory and validate, in order, for the texts `s` in a new data directory. */
async function backpackflow(s: Texts): Promise<Record<string, Result>> {
  const dir = tempDir();
  const d = ['-d', dir];
  const key = `k${s.key.replace(/\./g, '_')}`;
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ version: '2.0.0', nodes: [{ type: `T${s.className}`, id: `a${s.id}`, params: {} }], edges: [{ from: `a${s.id}`, to: `b${s.action}`, condition: 'default' }] }));
  const out: Record<string, Result> = {};
  out['run'] = await cli(['run', '--flow-module', flowModule(dir, s), '--run-id', 'r1', ...d]);
  out['show'] = await cli(['runs', 'show', 'r1', ...d]);
  out['state'] = await cli(['runs', 'state', 'r1', '--step', '1', ...d]);
  out['diff'] = await cli(['runs', 'diff', 'r1', '--from', '0', '--to', '1', ...d]);
  out['blame'] = await cli(['runs', 'blame', 'r1', key, ...d]);
  out['blame-none'] = await cli(['runs', 'blame', 'r1', s.query, ...d]);
  out['events'] = await cli(['runs', 'events', 'r1', ...d]);
  out['list'] = await cli(['runs', 'list', ...d]);
  out['memory-none'] = await cli(['memory', 'search', `needle ${s.query}`, ...d]);
  out['memory-add'] = await cli(['memory', 'add', `needle ${s.memory}`, ...d]);
  out['memory-search'] = await cli(['memory', 'search', 'needle', ...d]);
  out['validate'] = await cli(['validate', bad]);
  out['run-invalid'] = await cli(['run', bad, ...d]);
  return out;
}

/**
 * The context commands over a workspace holding a file named `f<id>` with a frame of content `memory` on it (agent ids
 * and frame types are checked: hostile ones are refused, and the refusal quotes them).
 */
async function context(s: Texts): Promise<Record<string, Result>> {
  const ws = tempDir();
  const name = `f${s.id.replace(/[/\0]/g, '_')}`;
  mkdirSync(join(ws, 'd'));
  writeFileSync(join(ws, 'd', name), 'text\n');
  writeFileSync(join(ws, 'frame.json'), JSON.stringify({ type: 'summary', content: s.memory }));
  writeFileSync(join(ws, 'bad-frame.json'), JSON.stringify({ type: `t${s.key}`, content: s.memory }));
  const merkle = (...args: string[]): Promise<Result> => runMerkleInProcess(root, ['--workspace', ws, ...args], ws, plainEnv());
  const out: Record<string, Result> = {};
  out['scan'] = await merkle('scan');
  out['agent-invalid'] = await merkle('agent', 'add', `a${s.className}`, '--role', 'synthesis');
  out['agent'] = await merkle('agent', 'add', 'w1', '--role', 'synthesis');
  out['agents'] = await merkle('agent', 'list');
  out['put'] = await merkle('put-frame', `d/${name}`, join(ws, 'frame.json'), '--agent', 'w1');
  out['put-invalid'] = await merkle('put-frame', `d/${name}`, join(ws, 'bad-frame.json'), '--agent', 'w1');
  out['get-node'] = await merkle('get-node', `d/${name}`);
  out['list-frames'] = await merkle('list-frames', `d/${name}`);
  out['compose'] = await merkle('compose', 'd', '--max-frames', '5', '--source', 'current', '--related', `d/${name}`);
  out['invalidate'] = await merkle('invalidate', `d/${name}`);
  out['missing'] = await merkle('get-node', `x${s.query}`);
  return out;
}

/** The lines of `text` that start at the first column: the lines a stored text could pass off as the program's. */
function outdented(text: string): number {
  return text.split('\n').filter((line) => !/^\s/.test(line)).length;
}

/**
 * Asserts that each command printed nothing a terminal acts on, and on stdout as many lines as for the harmless twins.
 * The error line on stderr is a multi-line field (a flow file's problems, one per line): a newline of an error
 * message is kept there, and the line after it indented, so stderr has as many lines at the first column.
 */
function expectSafe(hostile: Record<string, Result>, harmless: Record<string, Result>): void {
  for (const [command, result] of Object.entries(hostile)) {
    const twin = harmless[command]!;
    expect(result.stdout, `${command} stdout`).not.toMatch(ACTS_BUT_NEWLINE);
    expect(result.stderr, `${command} stderr`).not.toMatch(ACTS_BUT_NEWLINE);
    expect(result.stdout.split('\n').length, `${command} stdout: ${result.stdout}`).toBe(twin.stdout.split('\n').length);
    expect(outdented(result.stderr), `${command} stderr: ${result.stderr}`).toBe(outdented(twin.stderr));
  }
}

describe('the command lines print stored and user-supplied text through terminalText', () => {
  it('runs, memory and validate: every field of a hostile run', async () => {
    await fc.assert(
      fc.asyncProperty(texts, async (s) => {
        const hostile = await backpackflow(s);
        expect(hostile['run']!.code).toBe(1);
        expect(hostile['memory-none']!.stdout).toMatch(/^no memory matches 'needle /);
        expect(hostile['memory-search']!.stdout).toContain('needle');
        expectSafe(hostile, await backpackflow(twins(s)));
      }),
      { numRuns: trials(2, 40) },
    );
  }, 120_000);

  it('context: paths, frame content, refused agent ids and frame types', async () => {
    await fc.assert(
      fc.asyncProperty(texts, async (s) => {
        const hostile = await context(s);
        expect(hostile['put']!.code, hostile['put']!.stderr).toBe(0);
        expectSafe(hostile, await context(twins(s)));
      }),
      { numRuns: trials(2, 40) },
    );
  }, 120_000);

  it('a failed run cannot be made to look completed (the audit: CR, erase line, a fake line, conceal)', async () => {
    const dir = tempDir();
    const file = join(dir, 'fake.mjs');
    writeFileSync(
      file,
      `import { BackpackNode, Flow } from ${JSON.stringify(INDEX)};
const ESC = '\\u001b';
class Pay extends BackpackNode {
  post(bp) { bp.pack('status' + ESC + '[8m', 'x'); throw new Error('card declined\\r' + ESC + '[2Krun r9 pay completed · 3.1ms → default' + ESC + '[8m'); }
}
export function buildFlow() { const f = new Flow({ namespace: 'pay' }); f.addNode(Pay, { id: 'charge' }); return f; }
`,
    );
    const run = await cli(['run', '--flow-module', `${file}#buildFlow`, '--run-id', 'r9', '-d', dir]);
    const show = await cli(['runs', 'show', 'r9', '-d', dir]);
    const fake = 'card declined\\r\\u001b[2Krun r9 pay completed · 3.1ms → default\\u001b[8m';
    expect(show.stdout.split('\n')[0]).toMatch(/^run r9 pay failed: Error: card declined\\r\\u001b\[2Krun r9 pay completed/);
    expect(show.stdout).toContain(`✗ error in post: Error: ${fake}`);
    // How to resume the failed run, then its error, as it was (escaped).
    expect(run.stderr).toBe(`backpackflow: warning: run r9 did not complete; once its cause is fixed, resume it from its last step: npm run backpackflow -- runs resume r9 --data-dir ${dir}\nbackpackflow: Error: ${fake}\n`);
    expect(run.stdout).toContain(`failed in post: Error: ${fake}`);
    for (const text of [run.stdout, run.stderr, show.stdout]) expect(text).not.toMatch(ACTS_BUT_NEWLINE);
  });
});
