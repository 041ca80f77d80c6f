import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackpackNode, Flow, runFlow } from '../src/index.js';
type Handle = Parameters<BackpackNode['post']>[0];
class Append extends BackpackNode<string[], string[]> {
  override prep(b: Handle): string[] { return (b.unpack('log') as string[] | undefined) ?? []; }
  override exec(log: string[]): string[] { return [...log, `${log.length} ${'x'.repeat(190)}`]; }
  override post(b: Handle, _p: string[], next: string[]): string | undefined { b.pack('log', next); return next.length < (this.config.steps as number) ? 'again' : undefined; }
}
const steps = Number(process.env.STEPS ?? 1000);
const mode = (process.env.MODE ?? 'never') as 'never' | 'batch' | 'plain';
function mk() { const f = new Flow({ namespace: 'bench', maxSteps: steps + 1 }); const n = f.addNode(Append, { id: 'n', steps }); n.on('again', n); return f; }
const dir = mkdtempSync(join(tmpdir(), 'prof-'));
const times: number[] = [];
for (let i = 0; i < Number(process.env.RUNS ?? 5); i++) {
  const s = performance.now();
  if (mode === 'plain') await mk().run(); else await runFlow(mk(), { dataDir: dir, runId: `r${i}`, durability: mode });
  times.push(((performance.now() - s) / steps) * 1000);
}
console.log(mode, steps, times.map((t) => t.toFixed(1)).join(' '));
rmSync(dir, { recursive: true, force: true });
