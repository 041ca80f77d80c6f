/**
 * Part of `npm run build` (after tsc): the command lines people run most and wait for, each as one bundle with V8's
 * code cache for it.
 *
 * - `dist/cli/context-program.cjs`: `backpackflow context ...` (src/cli/context-program.ts). `context scan` on a large
 *   workspace is run often; loading some forty modules one by one (CommonJS packages through the ES module loader)
 *   took about 45 ms of its CPU time, the bundle about 23 ms.
 * - `dist/cli/store-program.cjs`: the commands over stored runs and memory (src/cli/store-program.ts: every `runs`
 *   command but `resume` and `fork`, which load the user's flow modules, see src/cli/backpackflow/program.ts, and
 *   every `memory` command). `runs list` on an empty data directory loaded 127 modules of ours and 99 of zod's: 180
 *   ms, of which zod alone 50-60 ms.
 *
 * Each bundle holds everything of ours its entry imports, and the packages it always loads (commander, picocolors,
 * ignore, zod), as one CommonJS file. Packages loaded only when needed are loaded then, from their CommonJS builds
 * (see lazyRequire), and the native BLAKE3 binding and hash-wasm stay outside. Whitespace and comments are left out (less to
 * parse); names are kept. Its source map holds the text of every source it names (ours and the bundled packages'),
 * so it resolves wherever the package is installed. `import.meta.url` in our sources is the URL of the module tsc
 * compiles from them (dist/<path>.js), so paths found from it are the same in a bundle and out of it.
 *
 * Beside each bundle:
 * - `<bundle>.cache`: V8's code cache of the functions a few representative commands compile, made by running them
 *   on scratch data. Read by `src/cli/code-cache.ts`, and only by a process of the same Node.js version as the
 *   build's (V8 rejects it otherwise, and the bundle is compiled as usual); about 10 ms less CPU for every command.
 * - `dist/cli/<name>.js` (replacing tsc's): the module the CLI imports, which loads the bundle. The declaration file
 *   stays tsc's.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { build } from 'esbuild';

/**
 * The packages a bundle imports only when needed (`await import(...)`: chokidar for watch, the OpenTelemetry API for
 * spans) are required from their CommonJS builds when that happens: a `vm.Script` compiled with a code cache cannot
 * reach Node's ES module loader. (hash-wasm, for when the native BLAKE3 binding is missing, is required by path in
 * src/hash/blake3.ts, and the PostgreSQL driver in src/store/postgres/connection.ts: both load at run time.)
 */
const lazyRequire = {
  name: 'lazy-require',
  setup(b) {
    b.onResolve({ filter: /^(chokidar|@opentelemetry\/api)$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'lazy-require' } : args.namespace === 'lazy-require' ? { path: args.path, external: true } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-require' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};

/**
 * `import.meta.url` in a source of ours, in a bundle: the URL of the module tsc compiles from it (dist/<path>.js),
 * found from the bundle's own (`__bundleUrl`, see src/cli/code-cache.ts), so that a path a module finds from its
 * own place (the package root, a file beside it) is the same in the bundle and out of it.
 */
const moduleUrls = {
  name: 'module-urls',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const compiled = resolve('dist', relative(resolve('src'), args.path)).replace(/\.ts$/, '.js');
      const url = `new URL(${JSON.stringify(relative(resolve('dist/cli'), compiled))}, __bundleUrl).href`;
      return { contents: source.replaceAll('import.meta.url', url), loader: 'ts', resolveDir: dirname(args.path) };
    });
  },
};

/**
 * `runs resume` and `runs fork` never run from the runs bundle (program.ts runs them unbundled): the module that loads
 * flows, and what it imports (the flow loader, the LLM nodes), is left out of it.
 */
const unbundledFlows = {
  name: 'unbundled-flows',
  setup(b) {
    b.onResolve({ filter: /^\.\/flows\.js$/ }, (args) => (args.importer.endsWith('/cli/backpackflow/runs.ts') ? { path: args.path, namespace: 'unbundled' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'unbundled' }, () => ({
      contents: "throw new Error('runs resume and runs fork load flow modules: they run unbundled (see src/cli/backpackflow/program.ts)');",
      loader: 'js',
    }));
  },
};

/**
 * Bundles `entry` into dist/cli/<name>.cjs, writes the module that loads it (`loader`: its text after the import of
 * loadBundle, with `compiled` the bundle compiled) and makes its code cache by running `cacheScript` (a module's
 * text that gets `file`, the bundle's path, and must write its cache).
 */
async function bundle({ name, entry, plugins, loader, cacheScript }) {
  const file = `dist/cli/${name}.cjs`;
  const id = randomBytes(16).toString('hex');
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['@napi-rs/blake-hash'],
    plugins: [lazyRequire, moduleUrls, ...plugins],
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
  const text = readFileSync(file, 'utf8');
  if (!text.startsWith(`"use strict";/* bundle ${id} */`)) throw new Error(`${file} does not start with its header`);
  if (/\bimport\(/.test(text)) throw new Error(`${file} calls import(), which a vm.Script with a code cache cannot serve`);
  // tsc's source map of the module replaced below would describe code that is no longer there.
  rmSync(`dist/cli/${name}.js.map`, { force: true });
  writeFileSync(
    `dist/cli/${name}.js`,
    `// Made by scripts/bundle-cli.mjs: the bundled command line ${name}.cjs, loaded with its code cache.
import { fileURLToPath } from 'node:url';
import { loadBundle } from './code-cache.js';

const compiled = loadBundle(fileURLToPath(new URL('./${name}.cjs', import.meta.url)));
${loader}
/** Whether the code cache served this process (see code-cache.ts). */
export const codeCacheUse = compiled.cache;
`,
  );
  // The cache: a fresh process (default V8 flags) runs the commands on scratch data, each in a new instance of the
  // bundle (as each is a new process for a user), then stores the code compiled by all of them.
  execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
import { codeCacheFile, loadBundle } from './dist/cli/code-cache.js';
const file = ${JSON.stringify(resolve(file))};
${cacheScript}`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
}

await bundle({
  name: 'context-program',
  entry: 'src/cli/context-program.ts',
  plugins: [],
  // One instance for the process (the command tree and its options live as long as it).
  loader: 'export const { runContextCli } = compiled.instantiate();',
  cacheScript: `
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
});

await bundle({
  name: 'store-program',
  entry: 'src/cli/store-program.ts',
  plugins: [unbundledFlows],
  // A new instance for every call: what it decides when it loads (colors from the environment, warnings printed once
  // each) is decided for that command, as in a process of its own.
  loader: `/** Runs \`backpackflow runs ...\` or \`memory ...\` (see src/cli/store-program.ts) in a new instance of the bundle. */
export function runStoreCli(argv) {
  return compiled.instantiate().runStoreCli(argv);
}`,
  cacheScript: `
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const compiled = loadBundle(file);
const { BackpackNode, Flow, runFlow } = await import('./dist/index.js');
const work = mkdtempSync(join(tmpdir(), 'runs-cache-'));
try {
  // A small recorded run to read: a node that counts to three.
  class Count extends BackpackNode {
    prep(backpack) { return backpack.unpack('count') ?? 0; }
    exec(count) { return count + 1; }
    post(backpack, _prev, next) { backpack.pack('count', next); return next < 3 ? 'again' : undefined; }
  }
  const flow = new Flow({ namespace: 'cache' });
  const node = flow.addNode(Count, { id: 'count' });
  node.on('again', node);
  await runFlow(flow, { dataDir: work, runId: 'cached' });
  const quiet = { write: process.stdout.write };
  process.stdout.write = () => true;
  const run = (...args) => compiled.instantiate().runStoreCli([process.execPath, 'backpackflow', ...args, '--data-dir', work]);
  try {
    const runs = [['list'], ['show', 'cached'], ['state', 'cached'], ['events', 'cached'], ['diff', 'cached', '--from', '1', '--to', '3'], ['verify', 'cached']];
    for (const args of [...runs.map((a) => ['runs', ...a]), ['memory', 'add', 'a note to find'], ['memory', 'search', 'note']]) {
      if ((await run(...args)) !== 0) throw new Error(args.join(' ') + ' failed while making the code cache');
    }
  } finally {
    process.stdout.write = quiet.write;
  }
  writeFileSync(codeCacheFile(file), compiled.codeCache());
} finally {
  rmSync(work, { recursive: true, force: true });
}`,
});
