/**
 * Every shell block of the README runs as written, in a temporary copy of the repository (issue 15: the README must
 * not drift from the code). Part of `npm run test:soak` (which `.ci/run` runs), as it takes a minute. Commands that
 * CI runs itself (install, lint, typecheck, build, the test suites) and the benchmarks are not run here: their npm
 * scripts must exist. A studio line starts the server and must print its URL.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { plainEnv } from './support/env.js';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const copy = mkdtempSync(join(tmpdir(), 'bf-readme-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

// The tracked files, as a fresh clone has them, plus the installed packages and the build (global setup made it).
for (const file of execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean)) {
  try {
    cpSync(join(root, file), join(copy, file), { recursive: true });
  } catch {
    // a file deleted in the work tree but still tracked: a clone would not have it either
  }
}
symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
cpSync(join(root, 'dist'), join(copy, 'dist'), { recursive: true });

/** The README's ```sh blocks, each as its lines. */
const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#')));

const NOT_RUN_HERE = /^(npm ci|npm test|npm run (lint|typecheck|build|test:soak|test:browser|test:pg|bench:[\w:-]+))\b/;

/** A command of a line: without its trailing comment; `npx backpackflow` as the installed binary would run. */
function command(line: string): string {
  return line.replace(/\s+#\s.*$/, '').replace(/^npx backpackflow\b/, `node ${join(copy, 'dist', 'cli', 'backpackflow.js')}`);
}

function runStudio(line: string): Promise<string> {
  const cmd = command(line).includes('--port') ? command(line) : `${command(line)} --port 0`;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `exec ${cmd}`], { cwd: copy, env: plainEnv(), detached: true });
    let out = '';
    const timer = setTimeout(() => (process.kill(-child.pid!, 'SIGKILL'), reject(new Error(`no URL from '${line}': ${out}`))), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/http:\/\/127\.0\.0\.1:\d+/.test(out)) {
        clearTimeout(timer);
        process.kill(-child.pid!, 'SIGTERM');
        resolve(out);
      }
    });
  });
}

describe('README shell blocks', () => {
  it('has no placeholders a reader would have to replace', () => {
    for (const block of blocks) for (const line of block) expect(line, line).not.toMatch(/<[a-zA-Z]+>/);
  });

  blocks.forEach((block, i) => {
    it(`block ${i + 1} runs as written: ${block[0]!.slice(0, 60)}`, async () => {
      const script: string[] = ['set -e'];
      for (const line of block) {
        for (const part of command(line).split(/\s*&&\s*/)) {
          const skipped = NOT_RUN_HERE.exec(part.trim());
          if (skipped) {
            const name = part.trim().match(/^npm run ([\w:-]+)/)?.[1] ?? (part.trim() === 'npm test' ? 'test' : undefined);
            if (name !== undefined) expect(scripts[name], `npm script '${name}' named in the README`).toBeDefined();
            continue;
          }
          if (/\bstudio\b/.test(part)) {
            expect(await runStudio(part)).toMatch(/http:\/\/127\.0\.0\.1:\d+/);
            continue;
          }
          script.push(part);
        }
      }
      // Not execFileSync: a block runs for a minute or more, and a worker blocked that long misses vitest's messages
      // ("Timeout calling onTaskUpdate", which fails the run).
      const { stdout } = await promisify(execFile)('bash', ['-c', script.join('\n')], { cwd: copy, env: plainEnv(), encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
      expect(typeof stdout).toBe('string');
    }, 300_000);
  });
});

