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
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
function mk(steps: number) { const f = new Flow({ namespace: 'bench', maxSteps: steps + 1 }); const n = f.addNode(Append, { id: 'n', steps }); n.on('again', n); return f; }
const dir = mkdtempSync(join(tmpdir(), 'cmp-'));
for (const steps of [50, 1000]) {
  const o: Record<string, number[]> = { plain: [], never: [], batch: [] };
  const runs = steps === 50 ? 41 : 9;
  for (let i = 0; i < runs + 2; i++) for (const mode of ['plain', 'never', 'batch'] as const) {
    const u = process.cpuUsage(); const s = performance.now();
    if (mode === 'plain') await mk(steps).run(); else await runFlow(mk(steps), { dataDir: dir, runId: `r${steps}-${mode}-${i}`, durability: mode });
    const c = process.cpuUsage(u); const w = performance.now() - s;
    if (i >= 2) o[mode]!.push(((c.user + c.system) / steps)), o[mode + 'w'] = [...(o[mode + 'w'] ?? []), (w * 1000) / steps];
  }
  console.log(steps, 'cpu/step plain', med(o.plain!).toFixed(1), 'never +', (med(o.never!) - med(o.plain!)).toFixed(1), 'batch +', (med(o.batch!) - med(o.plain!)).toFixed(1), '| wall plain', med(o.plainw!).toFixed(1), 'never +', (med(o.neverw!) - med(o.plainw!)).toFixed(1), 'batch +', (med(o.batchw!) - med(o.plainw!)).toFixed(1));
}
rmSync(dir, { recursive: true, force: true });
