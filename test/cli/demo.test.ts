import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summarizeFile } from '../../src/cli/backpackflow/demo/summarize.js';
import { startOpenAIServer } from '../llm/fixtures/openai-server.js';
import { BIN, cli, cliJson, tempDir } from './helpers.js';

function workspace(): string {
  const root = tempDir();
  mkdirSync(join(root, 'docs'));
  mkdirSync(join(root, 'src', 'store'), { recursive: true });
  writeFileSync(join(root, 'README.md'), '# Tiny\n\nTiny keeps agent state in JSONL event logs and JSON checkpoints on disk.\n');
  writeFileSync(join(root, 'docs', 'runs.md'), '# Durable runs\n\nEvery step writes a checkpoint, so a crashed run resumes from its last checkpoint.\n');
  writeFileSync(join(root, 'src', 'store', 'log.ts'), '/** Appends events to a JSONL log and fsyncs each batch. */\nexport const x = 1;\n');
  writeFileSync(join(root, 'src', 'main.ts'), '/** Starts a run of the tiny agent. */\nexport const y = 2;\n');
  return root;
}

describe('backpackflow demo', () => {
  it('runs the research agent: live trace, answer, quarantined poison, run id and the three inspect commands', async () => {
    const root = workspace();
    const dataDir = join(tempDir(), 'data');
    const first = await cli(['demo', '--workspace', root, '--data-dir', dataDir, '--question', 'how does a crashed run resume?']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const out = first.stdout;
    for (const line of ['▶ run demo', '⚙ ResearchNode demo.research', '⚙ ScanNode demo.research.scan', '⚙ GuardNode demo.guard', '⊘ quarantined claim: unsupported by the workspace']) {
      expect(out).toContain(line);
    }
    expect(out).toContain('docs/runs.md: Durable runs: Every step writes a checkpoint, so a crashed run resumes from its last checkpoint.');
    expect(out).toMatch(/files: 4 summarized, 0 unchanged; directories synthesized: 4; memory items written: 4/);
    const runId = /run id: (\S+)/.exec(out)?.[1] ?? '';
    expect(runId).toMatch(/^run_/);
    expect(out).toContain(`npm run backpackflow -- runs show ${runId}`);
    expect(out).toMatch(new RegExp(`npm run backpackflow -- runs diff ${runId} --from 0 --to \\d+`));
    expect(out).toContain(`npm run backpackflow -- runs blame ${runId} claim`);
    expect(out).toContain('or in the browser:\n  npm run backpackflow -- studio');

    // The printed commands work on the stored run: blame names the node that wrote the poisoned claim and the guard.
    const blame = await cliJson(['runs', 'blame', runId, 'claim', '--data-dir', dataDir]);
    expect(blame.writes.map((w: any) => [w.nodeId, w.namespace, w.action])).toEqual([
      ['rumor', 'demo.rumor', 'pack'],
      ['guard', 'demo.guard', 'quarantine'],
    ]);

    // The demo recorded how its flow is built: its run forks (and would resume) from the CLI with no flags.
    const fork = await cliJson(['runs', 'fork', runId, '--step', '2', '--new-run-id', 'demo-fork', '--data-dir', dataDir]);
    expect(fork).toMatchObject({ runId: 'demo-fork', status: 'completed' });
    expect((await cliJson(['runs', 'list', '--data-dir', dataDir])).find((r: any) => r.runId === 'demo-fork').forkedFrom).toEqual({ runId, step: 2 });

    // Second run: nothing changed, nothing regenerated; then one file changes and only it and its directories are redone.
    const second = await cliJson(['demo', '--workspace', root, '--data-dir', dataDir]);
    expect(second.summaries).toEqual({ written: 0, reused: 4 });
    expect(second.synthesis).toEqual({ mode: 'regenerated', frames: 0 });
    expect(second.memory).toEqual({ written: 0 });
    writeFileSync(join(root, 'src', 'store', 'log.ts'), '/** Appends events to a JSONL log with one fsync per step. */\nexport const x = 1;\n');
    const third = await cliJson(['demo', '--workspace', root, '--data-dir', dataDir]);
    expect(third.summaries).toEqual({ written: 1, reused: 3 });
    // src/store, src and the root are regenerated; docs is not.
    expect(third.synthesis).toEqual({ mode: 'regenerated', frames: 3 });
    expect(third.memory).toEqual({ written: 1 });
    expect(third.quarantined.map((q: any) => q.key)).toEqual(['claim']);
    expect(third.runId).not.toBe(second.runId);
    // A new data directory over the already scanned workspace: no summary redone, but memory gets every file.
    const fresh = await cliJson(['demo', '--workspace', root, '--data-dir', join(tempDir(), 'other'), '--question', 'crashed run resume']);
    expect(fresh.summaries).toEqual({ written: 0, reused: 4 });
    expect(fresh.memory).toEqual({ written: 4 });
    expect(fresh.answer.sources[0]).toBe('docs/runs.md');
  }, 60_000);

  it('a workspace that is not a directory exits 1 naming it', async () => {
    const missing = join(tempDir(), 'nope');
    const result = await cli(['demo', '--workspace', missing, '--data-dir', tempDir()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`workspace ${missing} is not a directory`);
  });
});

describe('demo summaries (extractive)', () => {
  it('take the heading and first sentence of Markdown, the doc comment of source, the suite name of tests', () => {
    expect(summarizeFile('a.md', '# Title\n\n```sh\nx\n```\n\nFirst *sentence* here. Second.\n')).toBe('Title: First sentence here.');
    expect(summarizeFile('a.ts', 'import x from "y";\n/**\n * Does the thing. More detail.\n */\nexport {}')).toBe('Does the thing.');
    expect(summarizeFile('a.test.ts', "import { it } from 'vitest';\ndescribe('the parser', () => {});")).toBe('tests of the parser');
    expect(summarizeFile('b.ts', 'import a from "a";\n}\n')).toBe('');
  });
});

describe('backpackflow demo with an LLM provider configured', () => {
  it('summaries and the answer come from the model (a loopback OpenAI-compatible server)', async () => {
    const server = await startOpenAIServer();
    try {
      server.respondWith(({ body }) => {
        const prompt = JSON.stringify(body.messages);
        return { kind: 'text', text: prompt.includes('Answer the question') ? 'MODEL ANSWER: resume from the last checkpoint' : 'MODEL SUMMARY' };
      });
      const root = workspace();
      const env = { BACKPACKFLOW_MODEL: 'openai-compatible:test-model', BACKPACKFLOW_BASE_URL: server.baseURL };
      const report = await cliJson(['demo', '--workspace', root, '--data-dir', join(tempDir(), 'data')], { env });
      expect(report.model).toBe('openai-compatible:test-model');
      expect(report.answer.text).toBe('MODEL ANSWER: resume from the last checkpoint');
      expect(report.summaries.written).toBe(4);
      // 4 file summaries and 1 answer went to the model
      expect(server.requests).toHaveLength(5);
      const answerPrompt = JSON.stringify(server.requests[4]!.body.messages);
      expect(answerPrompt).toContain('MODEL SUMMARY');
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a model setting that cannot be resolved exits 1 naming it', async () => {
    const result = await cli(['demo', '--workspace', workspace(), '--data-dir', tempDir()], { env: { BACKPACKFLOW_MODEL: 'nosuch:model' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown provider 'nosuch'");
  });
});

describe('progress on long work', () => {
  it('shows a progress bar when stdout is a terminal, and none when piped', async () => {
    const { execFileSync } = await import('node:child_process');
    const root = workspace();
    const args = (dataDir: string) => [BIN, 'demo', '--workspace', root, '--data-dir', dataDir].map((a) => `'${a}'`).join(' ');
    // `script` gives the child a pseudo-terminal, as a user's shell would.
    const tty = execFileSync('script', ['-qec', `${process.execPath} ${args(join(tempDir(), 'tty'))}`, '/dev/null'], { encoding: 'utf8' });
    expect(tty).toMatch(/summarizing .* \d+\/4 files/);
    const piped = await cli(['demo', '--workspace', root, '--data-dir', join(tempDir(), 'piped')]);
    expect(piped.stdout).not.toContain('summarizing');
  });
});
