import { rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import { exitOnSignals } from './exit-on-signal.js';

const root = join(import.meta.dirname, '..', '..');
const bundles = new Map<string, Promise<string>>();
let outDir: string | undefined;

/**
 * Bundles child scripts for crash and process tests, each with the sources it imports, into `<outDir>/<name>.mjs`.
 * `node <bundle>` starts in about a third of the time and CPU of `node --import tsx <script>`, which adds up when a
 * test spawns dozens of children. Packages stay external (the BLAKE3 binding is native): `outDir` must be inside the
 * repository so that they resolve from node_modules as the sources resolve them.
 */
export async function bundleScripts(entries: string[], outDir: string): Promise<void> {
  await build({
    entryPoints: entries,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    logLevel: 'error',
  });
}

/** One child script bundled by {@link bundleScripts}, once per test process; resolves to the bundle's path. */
export function bundledScript(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (bundle === undefined) {
    if (outDir === undefined) {
      const dir = join(root, 'node_modules', '.cache', 'backpackflow-test-bundles', String(process.pid));
      outDir = dir;
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      // A worker ended by its pool's SIGTERM has no `exit` otherwise: its bundles were left in node_modules/.cache.
      exitOnSignals();
    }
    const dir = join(outDir, String(bundles.size));
    bundle = bundleScripts([entry], dir).then(() => join(dir, basename(entry).replace(/\.ts$/, '.mjs')));
    bundles.set(entry, bundle);
  }
  return bundle;
}
