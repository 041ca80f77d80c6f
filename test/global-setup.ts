import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    if (time > newest) newest = time;
  }
  return newest;
}

/**
 * CLI tests run the built binaries in `dist/`, as a user would, and the studio tests serve the built page. `npm test`
 * on a fresh clone has no `dist/` yet, so build both here when they are missing or older than their sources.
 */
export default function setup(): void {
  buildLibrary();
  buildStudioPage();
}

/** The studio page (vite build into dist/studio/page/), when missing or older than src/studio/page/. */
function buildStudioPage(): void {
  const marker = join(root, 'dist', 'studio', 'page', 'index.html');
  if (existsSync(marker) && statSync(marker).mtimeMs >= newestMtime(join(root, 'src', 'studio', 'page'))) return;
  execFileSync(process.execPath, [join(root, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join(root, 'src', 'studio', 'page', 'vite.config.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
}

function buildLibrary(): void {
  const marker = join(root, 'dist', 'index.js');
  if (existsSync(marker) && statSync(marker).mtimeMs >= newestMtime(join(root, 'src'))) return;
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
      cwd: root,
      stdio: 'inherit',
    });
  } catch {
    // tsc still emits on type errors; `npm run typecheck` reports them. CLI tests then run what was emitted.
    console.warn('global-setup: tsc reported errors while building dist/ for the CLI tests');
  }
  // As `npm run build` does: the context and runs command lines ship as bundles (tsc has just overwritten their loaders).
  execFileSync(process.execPath, [join(root, 'scripts', 'bundle-cli.mjs')], { cwd: root, stdio: 'inherit' });
}
