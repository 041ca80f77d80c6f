/**
 * A TypeScript user who checks their dependencies' declarations (`skipLibCheck: false`) gets no error from importing
 * backpackflow with only what `npm install backpackflow` installs: the declarations it ships reach those of its
 * dependencies (the AI SDK's provider types import `json-schema`, whose types `@types/json-schema` gives), so every
 * package they need must be a production dependency, not something this repository happens to have for its tools.
 *
 * The production install is made from the lockfile without the network: a node_modules of links to the packages the
 * lockfile does not mark dev-only, and the package itself (its manifest and build). Run by `npm run test:soak`
 * (a full type check of the declarations: several seconds).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'bf-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  optional?: boolean;
}

/** Links `dir/node_modules/<name>` to this repository's copy of each top-level package a production install has. */
function productionModules(): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const linked: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const name = path.slice('node_modules/'.length);
    // Nested copies live inside their parent's folder, which is linked whole.
    if (!path.startsWith('node_modules/') || name.includes('/node_modules/')) continue;
    if (entry.dev === true || entry.devOptional === true || entry.peer === true) continue;
    const target = join(dir, 'node_modules', name);
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), target);
    linked.push(name);
  }
  // The package as installed: its manifest and build, without this repository's node_modules (which has everything).
  const own = join(dir, 'node_modules', 'backpackflow');
  mkdirSync(own);
  writeFileSync(join(own, 'package.json'), readFileSync(join(root, 'package.json')));
  symlinkSync(join(root, 'dist'), join(own, 'dist'));
  return linked;
}

describe('the shipped declarations', () => {
  it('type-check with skipLibCheck off in a project that has only the production install', () => {
    const linked = productionModules();
    expect(linked).toContain('ai');
    expect(linked).not.toContain('typescript');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
    writeFileSync(
      join(dir, 'main.ts'),
      "import { Flow, runFlow, type RunResult } from 'backpackflow';\nconst flow = new Flow({ namespace: 'app' });\nexport const started: Promise<RunResult> = runFlow(flow, { dataDir: '.data' });\n",
    );
    // @types/node is what the README asks TypeScript users to add; it is a dev dependency here, so it is given by path.
    const config = {
      // preserveSymlinks: a declaration's imports resolve from where it is linked, not from this repository.
      compilerOptions: { strict: true, noEmit: true, skipLibCheck: false, preserveSymlinks: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: [join(root, 'node_modules', '@types', 'node')] },
      files: ['main.ts'],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
    let output = '';
    try {
      execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir, encoding: 'utf8' });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe('');
  }, 120_000);
});
