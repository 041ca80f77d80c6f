import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackpackNode, Flow, runFlow } from '../src/index.js';
type Handle = Parameters<BackpackNode['post']>[0];
class Count extends BackpackNode<number, number> {
  override prep(b: Handle): number { return (b.unpack('count') as number | undefined) ?? 0; }
  override exec(c: number): number { return c + 1; }
  override post(b: Handle, _p: number, next: number): string | undefined { b.pack('count', next); return next < (this.config.steps as number) ? 'again' : undefined; }
}
const steps = 1000;
function mk() { const f = new Flow({ namespace: 'bench', maxSteps: steps + 1 }); const n = f.addNode(Count, { id: 'n', steps }); n.on('again', n); return f; }
const dir = mkdtempSync(join(tmpdir(), 'profc-'));
for (let i = 0; i < 25; i++) await runFlow(mk(), { dataDir: dir, runId: `r${i}`, durability: 'never' });
rmSync(dir, { recursive: true, force: true });
