/** What a user gets from the package: require() from CommonJS, source maps that resolve, a license. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[]; exports: Record<string, unknown>; optionalDependencies?: Record<string, string> };
const dir = mkdtempSync(join(tmpdir(), 'bf-pkg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The package installed in `dir`'s node_modules (a link to this repository), once. */
function installed(): void {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  if (!existsSync(join(dir, 'node_modules', 'backpackflow'))) symlinkSync(root, join(dir, 'node_modules', 'backpackflow'));
}

/** What `node ...args` run in `cwd` prints; rejects (with its stderr) when it fails. */
function node(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd, encoding: 'utf8' }, (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`node ${args.join(' ')} failed: ${stderr}`, { cause: error }))));
  });
}

describe('packaging', () => {
  // The two tests that start node run at the same time.
  it.concurrent('require("backpackflow") from CommonJS loads the ES module (Node >= 20.19)', async () => {
    installed();
    writeFileSync(join(dir, 'main.cjs'), "const { Flow, Backpack } = require('backpackflow');\nconsole.log(typeof Flow, typeof Backpack);\n");
    expect((await node([join(dir, 'main.cjs')], dir)).trim()).toBe('function function');
  });

  it.concurrent('backpackflow/langgraph resolves to the built checkpointer', async () => {
    installed();
    writeFileSync(
      join(dir, 'langgraph.mjs'),
      "import { BackpackflowSaver } from 'backpackflow/langgraph';\n" +
        "const saver = new BackpackflowSaver({ dataDir: process.argv[2] });\n" +
        "console.log(Object.getPrototypeOf(BackpackflowSaver).name, typeof saver.getTuple, typeof saver.putWrites);\n",
    );
    expect((await node([join(dir, 'langgraph.mjs'), join(dir, 'data')], root)).trim()).toBe('BaseCheckpointSaver function function');
    expect(pkg.exports['./langgraph']).toEqual({ types: './dist/langgraph/index.d.ts', import: './dist/langgraph/index.js', default: './dist/langgraph/index.js' });
  });

  it('every source map of the build points at a file the package ships', () => {
    const maps = ['index.js.map', 'backpack/backpack.js.map', 'index.d.ts.map', 'cli/backpackflow.js.map'].map((m) => join(root, 'dist', m));
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(map, 'utf8')) as { sources: string[] };
      for (const source of sources) {
        const file = resolve(dirname(map), source);
        expect(existsSync(file), `${map} -> ${source}`).toBe(true);
        expect(pkg.files.some((f) => file.startsWith(join(root, f))), `${file} is not in package.json files`).toBe(true);
      }
    }
  });

  it.each([
    ['context-program', 'src/context/engine.ts'],
    ['store-program', 'src/store/log-reader.ts'],
  ])('the bundled command line %s is built, and its source map carries the text of every source it names', (name, ours) => {
    const map = join(root, 'dist', 'cli', `${name}.cjs.map`);
    const { sources, sourcesContent } = JSON.parse(readFileSync(map, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
    expect(sources.some((s) => s.endsWith(ours))).toBe(true);
    // Bundled packages' files are not shipped beside it: the map resolves because it holds their text.
    sources.forEach((source, i) => expect(typeof sourcesContent?.[i], source).toBe('string'));
    expect(readFileSync(join(root, 'dist', 'cli', `${name}.cjs`), 'utf8')).toContain(`//# sourceMappingURL=${name}.cjs.map`);
  });

  it('its JSON Schemas resolve from the package (for a flow file\'s "$schema", or to load them)', async () => {
    installed();
    writeFileSync(join(dir, 'schema.mjs'), "import { createRequire } from 'node:module';\nconsole.log(createRequire(import.meta.url).resolve('backpackflow/schema/flow-config.schema.json'));\n");
    // The package is linked into node_modules: Node resolves to the linked file.
    expect((await node(['schema.mjs'], dir)).trim()).toBe(join(root, 'schema', 'flow-config.schema.json'));
  });

  it('ships its license, and the native BLAKE3 binding is optional (hash-wasm gives the same digests)', () => {
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toContain('Apache License');
    expect(pkg.files).toContain('LICENSE');
    expect(Object.keys(pkg.optionalDependencies ?? {})).toContain('@napi-rs/blake-hash');
  });
});
