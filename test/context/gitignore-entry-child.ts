// Child of gitignore-entry-kinds.test.ts: for each `<location>:<kind>` on the command line, makes a workspace whose
// `.gitignore` at that location (`root` or `sub`) is of that kind (see the test), then scans and validates it again and
// prints one JSON line per step started and finished: a step that hangs or crashes the process leaves its "start"
// line last.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContextEngine } from '../../src/context/index.js';

const [base, limit, ...cases] = process.argv.slice(2) as [string, string, ...string[]];
setTimeout(() => process.exit(3), 120_000).unref();
const RULES = 'a.txt\nb.txt\n';

function say(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

for (let i = 0; i < cases.length; i++) {
  const [location, kind] = cases[i].split(':') as [string, string];
  const root = join(base, String(i), 'ws');
  const outside = join(base, String(i), 'outside-rules');
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'a.txt'), 'a\n');
  writeFileSync(join(root, 'sub', 'b.txt'), 'b\n');
  writeFileSync(outside, RULES);
  // Scanned once before: the second scan finds the new .gitignore through the stored tree's listing cache.
  const first = await ContextEngine.open(root);
  await first.scan();
  await first.close();
  const file = join(root, location === 'root' ? '' : 'sub', '.gitignore');
  if (kind === 'regular') writeFileSync(file, RULES);
  else if (kind === 'oversize') writeFileSync(file, `${RULES}${'#'.repeat(Number(limit))}\n`);
  else if (kind === 'fifo') execFileSync('mkfifo', [file]);
  else if (kind === 'directory') mkdirSync(file);
  else if (kind === 'symlink-outside') symlinkSync(outside, file);
  else if (kind === 'symlink-dev-zero') symlinkSync('/dev/zero', file);
  else if (kind === 'symlink-dir') symlinkSync(base, file);
  else throw new Error(`unknown kind ${kind}`);
  const engine = await ContextEngine.open(root, { lockTimeoutMs: 300 });
  const step = async (name: string, run: () => Promise<unknown>): Promise<void> => {
    say({ location, kind, step: name, started: true });
    try {
      say({ location, kind, step: name, ok: true, result: await run() });
    } catch (error) {
      say({ location, kind, step: name, ok: false, error: (error as Error).message });
    }
  };
  await step('scan', () => engine.scan());
  await step('lock left', async () => existsSync(join(root, '.merkle', 'lock')));
  await step('validate', () => engine.validate());
  for (const path of ['a.txt', 'sub/b.txt']) await step(`has ${path}`, () => engine.getNode(path).then(() => true, () => false));
  await engine.close();
}
say({ done: true });
