import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackpackNode, Flow, runFlow } from '../src/index.js';
type Handle = Parameters<BackpackNode['post']>[0];
class Append extends BackpackNode<string[], string[]> {
  override prep(b: Handle): string[] { return (b.unpack('log') as string[] | undefined) ?? []; }
  override exec(log: string[]): string[] { return [...log, `${log.length} ${'x'.repeat(190)}`]; }
  override post(b: Handle, _p: string[], next: string[]): string | undefined { b.pack('log', next); return next.length < (this.config.steps as number) ? 'again' : undefined; }
}
function mk(steps: number) { const f = new Flow({ namespace: 'bench', maxSteps: steps + 1 }); const n = f.addNode(Append, { id: 'n', steps }); n.on('again', n); return f; }
const dir = mkdtempSync(join(tmpdir(), 'one-'));
await runFlow(mk(50), { dataDir: dir, runId: 'warm', durability: 'never' });
console.error('MARK-START');
await runFlow(mk(50), { dataDir: dir, runId: 'r1', durability: (process.env.MODE as 'never') ?? 'never' });
console.error('MARK-END');
