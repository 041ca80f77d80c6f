/**
 * `npm run bench:studio`: how fast the studio opens a 10,000-step run (issue 16: under a second), and the size of
 * the page's JavaScript (at most 150 KB gzipped). Records the run, starts the studio on a free port, times each API
 * route (medians), then the page in Debian's Chromium from navigation to the run's trace on screen. Needs
 * `npm run build` (the page is served from dist/studio/page/) and `apt-get install chromium`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../src/index.js';
import { startStudio } from '../src/studio/server.js';
import { RunReader } from '../src/studio/run-reader.js';
import { FileRunStore, MemoryStore } from '../src/store/index.js';
import { defaultPageDir } from '../src/studio/static.js';
import { launchChromium } from '../test/support/chromium.js';
import { median, printTable, timeMedianMs, type BenchRow } from './harness.js';

const STEPS = 10_000;
const root = mkdtempSync(join(tmpdir(), 'bpf-bench-studio-'));
const rows: BenchRow[] = [];

class Tick extends BackpackNode<number, number> {
  override prep(backpack: BackpackHandle): number {
    return (backpack.unpack('count') as number | undefined) ?? 0;
  }
  override exec(count: number): number {
    return count + 1;
  }
  override post(backpack: BackpackHandle, _prep: number, count: number): string {
    backpack.pack('count', count);
    backpack.pack(`note.${count % 20}`, `tick ${count}`);
    return count < STEPS ? 'again' : 'done';
  }
}

const flow = new Flow({ namespace: 'bench', maxSteps: STEPS + 10 });
const tick = flow.addNode(Tick, { id: 'tick' });
tick.on('again', tick);
const recordStart = performance.now();
const { runId } = await runFlow(flow, { dataDir: root, runId: 'run_bench_10k', durability: 'never' });
const recordMs = performance.now() - recordStart;

const studio = await startStudio({ dataDir: root, port: 0, log: () => undefined });
try {
  const origin = new URL(studio.url).origin;
  const api = async (path: string): Promise<unknown> => {
    const res = await fetch(`${origin}/${path}`);
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(60_000);
    /**
     * Opens the run 4 times on `tab`: the first time (and when its header was on screen, and when `whole` was), and the
     * median of the other three.
     */
    const open = async (tab: string, ready: string, whole?: string): Promise<{ header: number; first: number; whole: number; again: number }> => {
      const times: number[] = [];
      let header = 0;
      let complete = 0;
      // Checked on every animation frame (a locator's waitFor polls at growing intervals, up to 500 ms late).
      // (A function, not a string: the page's Content-Security-Policy forbids eval.)
      type Dom = { document: { querySelector(selector: string): unknown } };
      const shown = (selector: string) => page.waitForFunction((s) => (globalThis as unknown as Dom).document.querySelector(s) !== null, selector, { polling: 'raf' });
      for (let i = 0; i < 4; i++) {
        await page.goto('about:blank');
        const start = performance.now();
        await page.goto(`${origin}/#/runs/default/${runId}?tab=${tab}`);
        if (i === 0) {
          await shown('#run-title');
          header = performance.now() - start;
        }
        await shown(ready);
        times.push(performance.now() - start);
        if (i === 0 && whole !== undefined) {
          await shown(whole);
          complete = performance.now() - start;
        }
      }
      return { header, first: times[0]!, whole: complete, again: median(times.slice(1)) };
    };
    // A browser that has shown the studio before (the runs table): what follows times the run, not Chromium's first page.
    await page.goto(`${origin}/`);
    await page.locator(`tr[data-run="${runId}"]`).waitFor();
    // The trace first: its first open builds it from the whole log (the server then keeps it while the log keeps its size).
    const trace = await open('trace', 'section[aria-label="trace"] .tree li', 'section[aria-label="trace"][data-complete="true"] .tree li');
    rows.push({ name: 'page: first open of the run, header (status, steps, question) on screen', median: trace.header, unit: 'ms', target: 1000 });
    rows.push({ name: 'page: first open of the run, on its trace (first 200 of 20,000 lines drawn)', median: trace.first, unit: 'ms', target: 1000 });
    rows.push({ name: 'page: first open of the run, the whole trace read (its header and 200 lines on screen)', median: trace.whole, unit: 'ms' });
    rows.push({ name: 'page: open the run again, on its trace', median: trace.again, unit: 'ms', target: 1000 });
    rows.push({ name: 'page: open the run on its state at the last step', median: (await open('state', 'table.state tbody tr')).again, unit: 'ms', target: 1000 });
    rows.push({ name: 'page: open the run on its events', median: (await open('events', 'table.events tbody tr')).again, unit: 'ms', target: 1000 });
  } finally {
    await browser.close();
  }

  const routes: Array<[string, string, number?]> = [
    ['GET /api/runs', 'api/runs'],
    ['GET /api/runs/:id (projection, steps, flow)', `api/runs/${runId}`, 300],
    ['GET /api/runs/:id/trace (10,000 spans; kept after the first)', `api/runs/${runId}/trace`],
    ['GET /api/runs/:id/events page 1', `api/runs/${runId}/events?pageSize=50`, 100],
    ['GET /api/runs/:id/events last page', `api/runs/${runId}/events?pageSize=50&page=${Math.floor((STEPS * 7) / 50)}`, 100],
    ['GET /api/runs/:id/state (last step)', `api/runs/${runId}/state`],
    ['GET /api/runs/:id/state?step=5000', `api/runs/${runId}/state?step=5000`],
    ['GET /api/runs/:id/diff 0 → last', `api/runs/${runId}/diff?from=0&to=${STEPS}`],
    ['GET /api/runs/:id/blame/count', `api/runs/${runId}/blame/count`],
  ];
  for (const [name, path, target] of routes) rows.push({ name, median: await timeMedianMs(() => api(path), 5, 1), unit: 'ms', ...(target ? { target } : {}) });
  // The trace from the log, as a studio builds it the first time a run is opened (it keeps it afterwards).
  const fresh = async (): Promise<void> => {
    const reader = new RunReader(new FileRunStore(root), new MemoryStore({ dataDir: root }));
    await reader.trace({ session: 'default', runId });
    await reader.close();
  };
  rows.push({ name: 'trace built from the 90,000-event log (first open)', median: await timeMedianMs(fresh, 3, 0), unit: 'ms' });
} finally {
  await studio.close();
  rmSync(root, { recursive: true, force: true });
}

const assets = join(defaultPageDir(), 'assets');
const js = readdirSync(assets).filter((f) => f.endsWith('.js'));
const gz = js.reduce((sum, f) => sum + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
rows.push({ name: "page's JavaScript, gzipped", median: gz / 1024, unit: 'KB', target: 150 });
const met = printTable(`studio over a ${STEPS.toLocaleString('en')}-step run (recorded in ${(recordMs / 1000).toFixed(1)} s)`, rows);
process.exitCode = met ? 0 : 1;
