/**
 * Part of `npm run build`: replaces tsc's dist/cli/context-program.js with one bundled module of the context
 * commands, everything of ours they import, and the small packages they always load (commander, picocolors,
 * ignore). `backpackflow context scan` on a large workspace is a command people run often and wait for; loading some
 * forty modules one by one (CommonJS packages through the ES module loader) took about 45 ms of its CPU time, the
 * bundle about 23 ms. Packages loaded only when needed stay imports: the BLAKE3 bindings (native, or hash-wasm) and
 * chokidar (watch). The declaration file stays tsc's; the source map holds the text of every source it names (ours
 * and the bundled packages'), so it resolves wherever the package is installed.
 */
import { build } from 'esbuild';

await build({
  entryPoints: ['src/cli/context-program.ts'],
  outfile: 'dist/cli/context-program.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['@napi-rs/blake-hash', 'hash-wasm', 'chokidar'],
  // The bundled CommonJS packages call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);" },
  legalComments: 'eof',
  sourcemap: true,
  sourcesContent: true,
  logLevel: 'warning',
});
