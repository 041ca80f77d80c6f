/**
 * Screenshots of every studio view into docs/studio/, taken the way the end-to-end tests drive the page: the demo
 * recorded into a temporary data directory (its workspace a copy of examples/, one file changed afterwards so that
 * some heads are stale), the approval example left waiting for its answer, the studio on a free port with that
 * workspace, Debian's Chromium through playwright-core. Needs `npm run build` first (the demo's CLI and the page are
 * taken from dist/). Usage: npm run studio:screenshots
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ContextEngine } from '../src/context/index.js';
import { startStudio } from '../src/studio/server.js';
import { defaultCliInvocation } from '../src/studio/steer.js';
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
// A copy of examples/ as the workspace: the demo's context engine keeps its store (.merkle/) inside the workspace.
const workspace = join(scratch, 'workspace');
cpSync(join(root, 'examples'), workspace, { recursive: true, filter: (src) => !src.includes('.merkle') });
const demo = JSON.parse(
  execFileSync(process.execPath, [cli, 'demo', '--workspace', workspace, '--data-dir', dataDir, '--json'], { encoding: 'utf8' }),
) as { runId: string; steps: number };
// A file changed after the demo summarized it: its heads (and its directory's) are stale after a rescan.
appendFileSync(join(workspace, 'flows', 'nodes.ts'), '\n// changed after the demo\n');
const engine = await ContextEngine.open(workspace);
await engine.scan();
await engine.close();
// The approval example, waiting for a person (run by the CLI from the sources: its flow module is TypeScript).
const [node, ...cliArgs] = defaultCliInvocation();
execFileSync(node!, [...cliArgs, 'run', '--flow-module', join(root, 'examples', 'approval', 'agent.ts#buildFlow'), '--input', '{"topic":"tides"}', '--run-id', 'post-1', '--data-dir', dataDir, '--json']);
const studio = await startStudio({ dataDir, workspace, port: 0, log: () => undefined });
const browser = await launchChromium();
try {
  mkdirSync(out, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.setDefaultTimeout(30_000);
  const origin = new URL(studio.url).origin;
  const run = `${origin}/#/runs/default/${demo.runId}`;
  const shoot = async (name: string, url: string, ready: string, dark = false): Promise<void> => {
    await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
    await page.goto(url);
    await page.locator(ready).first().waitFor();
    await page.screenshot({ path: join(out, `${name}.png`) });
    console.log(`docs/studio/${name}.png`);
  };
  // The printed URL (with the token) first: the page keeps it in a cookie and may then answer and fork.
  await shoot('runs', studio.url, `tr[data-run="${demo.runId}"]`);
  await shoot('trace', `${run}?tab=trace`, 'section[aria-label="trace"] .tree');
  await shoot('state', `${run}?tab=state&step=${Math.min(3, demo.steps)}`, 'table.state tbody tr');
  await shoot('state-dark', `${run}?tab=state&step=${demo.steps}`, 'table.quarantined tbody tr', true);
  await shoot('diff', `${run}?tab=diff&from=0&to=${demo.steps}`, 'table.diff tbody tr');
  await shoot('blame', `${run}?tab=blame&key=claim`, 'table.blame tbody tr');
  await shoot('events', `${run}?tab=events&pageSize=25`, 'table.events tbody tr');
  await shoot('memory', `${origin}/#/memory?q=demo`, 'ol.hits li');
  // The waiting run's question and its form, filled in, with the terminal command that would give the same answer.
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${origin}/#/runs/default/post-1`);
  const form = page.getByRole('form', { name: 'answer' });
  await form.getByLabel('approved').check();
  await form.getByLabel('note').fill('Lead with the moon.');
  await page.getByText('Or from a terminal').click();
  await page.screenshot({ path: join(out, 'answer.png') });
  console.log('docs/studio/answer.png');
  await shoot('context', `${origin}/#/context?path=flows`, 'table.context-children tbody tr');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${origin}/#/context?path=${encodeURIComponent('flows/nodes.ts')}`);
  await page.getByRole('button', { name: 'Show' }).first().click();
  await page.locator('.frame-content pre').first().waitFor();
  await page.screenshot({ path: join(out, 'context-frame-dark.png') });
  console.log('docs/studio/context-frame-dark.png');
} finally {
  await browser.close();
  await studio.close();
  rmSync(scratch, { recursive: true, force: true });
}
