/**
 * Screenshots of every studio view into docs/studio/, taken the way the end-to-end tests drive the page: the demo
 * recorded into a temporary data directory, the studio on a free port, Debian's Chromium through playwright-core.
 * Needs `npm run build` first (the CLI and the page are taken from dist/). Usage: npm run studio:screenshots
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStudio } from '../src/studio/server.js';
import { launchChromium } from '../test/support/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'docs', 'studio');
const cli = join(root, 'dist', 'cli', 'backpackflow.js');
if (!existsSync(cli) || !existsSync(join(root, 'dist', 'studio', 'page', 'index.html'))) {
  console.error('studio-screenshots: run npm run build first (the CLI and the page come from dist/)');
  process.exit(1);
}

const scratch = mkdtempSync(join(tmpdir(), 'bpf-shots-'));
const dataDir = join(scratch, 'data');
// A copy of a small workspace: the demo's context engine keeps its store (.merkle/) inside the workspace.
const workspace = join(scratch, 'workspace');
cpSync(join(root, 'examples', 'demo'), workspace, { recursive: true, filter: (src) => !src.includes('.merkle') });
const demo = JSON.parse(
  execFileSync(process.execPath, [cli, 'demo', '--workspace', workspace, '--data-dir', dataDir, '--json'], { encoding: 'utf8' }),
) as { runId: string; steps: number };
const studio = await startStudio({ dataDir, port: 0, log: () => undefined });
const browser = await launchChromium();
try {
  mkdirSync(out, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.setDefaultTimeout(30_000);
  const run = `${studio.url}#/runs/default/${demo.runId}`;
  const shoot = async (name: string, url: string, ready: string, dark = false): Promise<void> => {
    await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
    await page.goto(url);
    await page.locator(ready).first().waitFor();
    await page.screenshot({ path: join(out, `${name}.png`) });
    console.log(`docs/studio/${name}.png`);
  };
  await shoot('runs', studio.url, `tr[data-run="${demo.runId}"]`);
  await shoot('trace', `${run}?tab=trace`, 'section[aria-label="trace"] .tree');
  await shoot('state', `${run}?tab=state&step=${Math.min(3, demo.steps)}`, 'table.state tbody tr');
  await shoot('state-dark', `${run}?tab=state&step=${demo.steps}`, 'table.quarantined tbody tr', true);
  await shoot('diff', `${run}?tab=diff&from=0&to=${demo.steps}`, 'table.diff tbody tr');
  await shoot('blame', `${run}?tab=blame&key=claim`, 'table.blame tbody tr');
  await shoot('events', `${run}?tab=events&pageSize=25`, 'table.events tbody tr');
  await shoot('memory', `${studio.url}#/memory?q=demo`, 'ol.hits li');
} finally {
  await browser.close();
  await studio.close();
  rmSync(scratch, { recursive: true, force: true });
}
