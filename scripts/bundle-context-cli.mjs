/**
 * Part of `npm run build` (after tsc): the context commands as one bundle with V8's code cache for it.
 *
 * - `dist/cli/context-program.cjs`: the context commands, everything of ours they import, and the small packages
 *   they always load (commander, picocolors, ignore), as one CommonJS bundle. `backpackflow context scan` on a large
 *   workspace is a command people run often and wait for; loading some forty modules one by one (CommonJS packages
 *   through the ES module loader) took about 45 ms of its CPU time, the bundle about 23 ms. Packages loaded only when
 *   needed are loaded then: the BLAKE3 bindings (native, or hash-wasm) and chokidar (watch). Whitespace and comments
 *   are left out (less to parse); names are kept. Its source map holds the text of every source it names (ours and
 *   the bundled packages'), so it resolves wherever the package is installed.
 * - `dist/cli/context-program.cjs.cache`: V8's code cache of the functions a few representative commands compile
 *   (a first scan, an unchanged scan, a scan after an edit, status), made by running them on a scratch workspace.
 *   Read by `src/cli/code-cache.ts`, and only by a process of the same Node.js version as the build's (V8 rejects
 *   it otherwise, and the bundle is compiled as usual); about 10 ms less CPU for every context command.
 * - `dist/cli/context-program.js` (replacing tsc's): the module the CLI imports, which loads the bundle. The
 *   declaration file stays tsc's.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const bundle = 'dist/cli/context-program.cjs';

/**
 * The packages the bundle imports only when needed (`await import(...)`: hash-wasm when the native BLAKE3 binding
 * is missing, chokidar for watch) are required from their CommonJS builds when that happens: a `vm.Script` compiled
 * with a code cache cannot reach Node's ES module loader.
 */
const lazyRequire = {
  name: 'lazy-require',
  setup(b) {
    b.onResolve({ filter: /^(hash-wasm|chokidar)$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'lazy-require' } : args.namespace === 'lazy-require' ? { path: args.path, external: true } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-require' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};
const id = randomBytes(16).toString('hex');

await build({
  entryPoints: ['src/cli/context-program.ts'],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['@napi-rs/blake-hash'],
  plugins: [lazyRequire],
  // The loader (src/cli/code-cache.ts) checks this header; the sources are ES modules, which are strict.
  banner: { js: `"use strict";/* bundle ${id} */` },
  define: { 'import.meta.url': '__bundleUrl' },
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'eof',
  sourcemap: true,
  sourcesContent: true,
  logLevel: 'warning',
});
const text = readFileSync(bundle, 'utf8');
if (!text.startsWith(`"use strict";/* bundle ${id} */`)) throw new Error(`${bundle} does not start with its header`);
if (/\bimport\(/.test(text)) throw new Error(`${bundle} calls import(), which a vm.Script with a code cache cannot serve`);

// tsc's source map of the module replaced below would describe code that is no longer there.
rmSync('dist/cli/context-program.js.map', { force: true });
writeFileSync(
  'dist/cli/context-program.js',
  `// Made by scripts/bundle-context-cli.mjs: the bundled context command line (context-program.cjs), loaded with its code cache.
import { fileURLToPath } from 'node:url';
import { loadBundle } from './code-cache.js';

const compiled = loadBundle(fileURLToPath(new URL('./context-program.cjs', import.meta.url)));
export const { runContextCli } = compiled.instantiate();
/** Whether the code cache served this process (see code-cache.ts). */
export const codeCacheUse = compiled.cache;
`,
);

// The cache: a fresh process (default V8 flags) runs the commands on a scratch workspace, each in a new instance of
// the bundle (as each is a new process for a user), then stores the code compiled by all of them.
execFileSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { codeCacheFile, loadBundle } from './dist/cli/code-cache.js';
const file = resolve(${JSON.stringify(bundle)});
const compiled = loadBundle(file);
const work = mkdtempSync(join(tmpdir(), 'context-cache-'));
try {
  for (let d = 0; d < 3; d++) {
    mkdirSync(join(work, 'd' + d));
    for (let f = 0; f < 3; f++) writeFileSync(join(work, 'd' + d, 'f' + f + '.txt'), d + '/' + f);
  }
  const run = (...args) => compiled.instantiate().runContextCli([process.execPath, 'context', '--workspace', work, ...args]);
  const steps = [() => run('scan'), () => run('scan'), () => (appendFileSync(join(work, 'd1', 'f1.txt'), 'edit'), run('scan')), () => run('status')];
  for (const step of steps) if ((await step()) !== 0) throw new Error('a context command failed while making the code cache');
  writeFileSync(codeCacheFile(file), compiled.codeCache());
} finally {
  rmSync(work, { recursive: true, force: true });
}`,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } },
);
