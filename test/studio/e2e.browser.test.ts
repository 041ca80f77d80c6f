/**
 * The studio in a real browser (Debian's Chromium through playwright-core): a run recorded by the CLI, the studio
 * started by the CLI, the run found in the table and opened; the step slider moved and a key's writer read; a diff,
 * a blame, the events filter; and a running run's events arriving live. Off loopback (where reads need the token
 * too), the page reads with the token of its URL, against a studio in this process (test/cli/studio.test.ts starts
 * one with the CLI).
 */
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryItemPath, memoryPaths, runPaths } from '../../src/store/index.js';
import { startStudio } from '../../src/studio/server.js';
import { FIXTURES, MODULES, cli, tempDir } from '../cli/helpers.js';
import { CHROMIUM } from '../support/chromium.js';
import { startGatedRun, studioInBrowser, type BrowserStudio } from './helpers.js';

const WAIT = { timeout: 30_000 };
let dataDir = '';
let runId = '';
let studio: BrowserStudio['studio'];
let close: BrowserStudio['close'];
let browser: Browser;
let page: Page;
let text: BrowserStudio['text'];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set BACKPACKFLOW_CHROMIUM)`);
  dataDir = tempDir();
  // The run is recorded while the studio and Chromium start (the studio reads the store at each request).
  const [run, started] = await Promise.all([
    cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--data-dir', dataDir, '--input', '{"question":"what boils?"}']),
    studioInBrowser(['--port', '0', '--data-dir', dataDir]),
  ]);
  ({ studio, close, browser, page, text } = started);
  expect(run.stderr).toBe('');
  runId = /run id: (\S+)/.exec(run.stdout)![1]!;
}, 120_000);

afterAll(async () => {
  await close?.();
});

describe('studio in a browser', () => {
  it('finds the run, moves the step slider to read a writer, shows a diff, a blame and filtered events', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(studio.url.href);
    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('completed');
    // The text filter hides the run when nothing matches and shows it again.
    await page.getByLabel('filter runs by text').fill('no-such-run');
    await row.waitFor({ state: 'detached', ...WAIT });
    await page.getByLabel('filter runs by text').fill('t.check');
    await row.waitFor(WAIT);
    await row.getByRole('link', { name: runId }).click();

    // The trace: the span tree with the retry and the quarantine under the node that made them.
    await page.getByRole('heading', { name: runId }).waitFor(WAIT);
    await page.getByText('quarantined fact: contradicts the sources').waitFor(WAIT);
    expect(await text('section[aria-label="trace"]')).toContain('attempt 1/2 failed');

    // The tabs follow the keyboard (WAI-ARIA tabs): → from Trace selects and focuses Events, ← goes back to Trace.
    await page.getByRole('tab', { name: 'Trace' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.locator('#tab-events[aria-selected="true"]:focus').waitFor(WAIT);
    await page.keyboard.press('ArrowLeft');
    await page.locator('#tab-trace[aria-selected="true"]:focus').waitFor(WAIT);

    // The state: the slider starts at the last step; Home goes to step 0 (the input only), → to step 1.
    await page.getByRole('tab', { name: 'State' }).click();
    const slider = page.locator('#step-slider');
    await slider.waitFor(WAIT);
    expect(await slider.inputValue()).toBe('3');
    await page.locator('table.quarantined tr[data-key="fact"]').waitFor(WAIT);
    await slider.focus();
    await page.keyboard.press('Home');
    await page.locator('table[aria-label="backpack at step 0"]').waitFor(WAIT);
    expect(await text('table.state tr[data-key="question"] .writer')).toBe('(input)');
    await page.keyboard.press('ArrowRight');
    await page.locator('table[aria-label="backpack at step 1"]').waitFor(WAIT);
    expect(await text('table.state tr[data-key="fact"] .writer')).toBe('fact @ t.fact');
    expect(await text('.step-number')).toBe('step 1 / 3');

    // The diff from step 1 to step 3: who added what, and the quarantine.
    await page.getByRole('tab', { name: 'Diff' }).click();
    await page.getByLabel('From step').fill('1');
    await page.getByLabel('to step').fill('3');
    await page.getByRole('button', { name: 'Show diff' }).click();
    await page.getByText('2 added, 0 modified, 0 deleted, 1 quarantined (step 1 → 3)').waitFor(WAIT);
    expect(await text('table.diff tr[data-key="count"]')).toContain('count @ t.count');
    expect(await text('table.diff tr[data-key="fact"]')).toContain('quarantined by check: contradicts the sources');

    // The blame of a key, from the state table's link.
    await page.getByRole('tab', { name: 'State' }).click();
    await page.locator('table.state tr[data-key="count"]').getByRole('link', { name: 'blame' }).click();
    await page.locator('table.blame tbody tr').first().waitFor(WAIT);
    expect(await page.locator('table.blame tbody tr').first().innerText()).toMatch(/^2\s+count @ t\.count\s+v1\s+1\s/);

    // The events, filtered by type.
    await page.getByRole('tab', { name: 'Events' }).click();
    await page.getByLabel('Type').selectOption('backpack.packed');
    await page.getByRole('button', { name: 'Filter' }).click();
    // The filtered page (not the unfiltered one shown first): a filtered query read to the end knows its total.
    await page.getByText('page 1 of 1 · 3 events').waitFor(WAIT);
    expect(await page.locator('table.events tbody tr').count()).toBe(3);
    expect(await page.locator('table.events tbody tr[data-type="backpack.packed"]').count()).toBe(3);

    // The recorded flow as a graph: visits per node, routes, the entry and the last node that ran.
    await page.getByRole('tab', { name: 'Flow' }).click();
    await page.locator('li[data-node="t.check"]').waitFor(WAIT);
    expect(await text('li[data-node="t.fact"]')).toBe('fact Put t.fact ×1entrydefault → count');
    expect(await text('li[data-node="t.check"]')).toBe('check Check t.check ×1last');
    expect(await page.locator('li.last-node').count()).toBe(1);
    expect(errors).toEqual([]);
  }, 120_000);

  it('shows what a damaged log keeps from the trace, blame and state views, above the answer', async () => {
    const run = await cli(['run', join(FIXTURES, 'flow.json'), '--modules', MODULES, '--data-dir', dataDir, '--input', '{"question":"torn?"}']);
    const tornId = /run id: (\S+)/.exec(run.stdout)![1]!;
    // A torn last batch: a line after the log's last chain hash.
    appendFileSync(runPaths(dataDir, 'default', tornId).events, '{"v":1,"torn":\n');
    await page.goto(`${studio.url.origin}/#/runs/default/${tornId}`);
    await page.getByRole('heading', { name: tornId }).waitFor(WAIT);
    await page.locator('section[aria-label="trace"] [aria-label="warnings"]').waitFor(WAIT);
    await page.getByRole('tab', { name: 'Blame' }).click();
    await page.locator('input[name="key"]').fill('count');
    await page.getByRole('button', { name: 'Blame' }).click();
    await page.locator('table.blame tbody tr').first().waitFor(WAIT);
    const warnings = page.locator('[aria-label="warnings"]');
    await warnings.waitFor(WAIT);
    expect(await warnings.innerText()).toMatch(/events\.jsonl: lines? [\d-]+ come after its last chain hash/);
    await page.getByRole('tab', { name: 'State' }).click();
    await page.locator('table.state').waitFor(WAIT);
    expect(await page.locator('[aria-label="warnings"]').innerText()).toMatch(/events\.jsonl/);
  }, 120_000);

  it('shows a damaged memory item the search skipped, named above the hits', async () => {
    for (const [id, text] of [['tide', 'the moon pulls the tide'], ['tide-2', 'the tide turns twice a day']]) {
      expect((await cli(['memory', 'add', text, '--id', id, '--data-dir', dataDir])).code).toBe(0);
    }
    const path = memoryItemPath(memoryPaths(dataDir), 'tide-2');
    writeFileSync(path, readFileSync(path, 'utf8').replace('turns twice', 'turns thrice'));
    await page.goto(`${studio.url.origin}/#/memory?q=tide`);
    await page.locator('ol.hits li').first().waitFor(WAIT);
    expect(await page.locator('ol.hits li').allInnerTexts()).toEqual([expect.stringContaining('the moon pulls the tide')]);
    expect(await page.locator('[aria-label="warnings"]').innerText()).toContain(path);
  }, 120_000);

  it("shows a running run's events as they are written, then its end", async () => {
    const liveId = 'run_e2e_live';
    const { waiting, release, running } = startGatedRun(dataDir, liveId);
    try {
      await waiting;
      await page.goto(`${studio.url.origin}/#/runs/default/${liveId}`);
      await page.getByRole('heading', { name: liveId }).waitFor(WAIT);
      await page.locator('aside.live').waitFor(WAIT);
      expect(await text('h1 .status')).toBe('running');
      release();
      await running;
      // The rest of the run arrives through the stream; at its end the page reloads the run and shows it completed.
      await page.locator('aside.live li', { hasText: 'run.completed' }).waitFor(WAIT);
      expect(await text('aside.live')).toMatch(/Live · \d+ new events/);
      await page.locator('h1 .status-completed').waitFor(WAIT);
      await page.getByRole('tab', { name: 'State' }).click();
      await page.locator('table.state tr[data-key="done"]').waitFor(WAIT);
      expect(await text('table.state tr[data-key="done"] .writer')).toBe('wait @ live.wait');
      // Its access denial: `wait` was refused `private`, by its own read list (listed when opened).
      await page.getByText('Access denials in this run').click();
      await page.locator('table.denials tr[data-key="private"]').waitFor(WAIT);
      expect(await page.locator('table.denials tr[data-key="private"]').innerText()).toMatch(/^wait @ live\.wait\s+read\s+private\s+\S/);
    } finally {
      release();
      await running.catch(() => undefined);
    }
  }, 120_000);

  it('says so when the running run it shows live is deleted, and stops following it', async () => {
    const liveId = 'run_e2e_gone';
    const { waiting, release, running } = startGatedRun(dataDir, liveId);
    try {
      await waiting;
      await page.goto(`${studio.url.origin}/#/runs/default/${liveId}`);
      await page.locator('aside.live').waitFor(WAIT);
      // Deleted under the live view (the writer waits, holding its files): the stream says the run is gone.
      rmSync(runPaths(dataDir, 'default', liveId).dir, { recursive: true, force: true });
      await page.locator('p.problem', { hasText: 'The live view stopped:' }).waitFor(WAIT);
      expect(await page.locator('p.problem', { hasText: 'The live view stopped:' }).innerText()).toMatch(/deleted,? \(?or replaced by a new run of the same id/);
    } finally {
      release();
      await running.catch(() => undefined);
    }
  }, 120_000);

  it('off loopback, reads with the token it was opened with (header, and the query of its event stream), no cookie', async () => {
    const open = await startStudio({ host: '0.0.0.0', port: 0, dataDir });
    const openUrl = new URL(open.url);
    const liveId = 'run_e2e_open';
    const { waiting, release, running } = startGatedRun(dataDir, liveId);
    const fresh = await browser.newContext();
    try {
      // Without the token the page's files load, but every read is refused and the page says so.
      const stranger = await fresh.newPage();
      await stranger.goto(openUrl.origin);
      await stranger.getByText('needs its token').first().waitFor(WAIT);
      await stranger.close();
      await waiting;
      const tab = await fresh.newPage();
      const errors: string[] = [];
      tab.on('pageerror', (error) => errors.push(error.message));
      await tab.goto(openUrl.href);
      await tab.locator(`tr[data-run="${liveId}"]`).getByRole('link', { name: liveId }).click();
      await tab.locator('aside.live').waitFor(WAIT);
      release();
      await running;
      await tab.locator('aside.live li', { hasText: 'run.completed' }).waitFor(WAIT);
      await tab.locator('h1 .status-completed').waitFor(WAIT);
      expect(await fresh.cookies()).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      release();
      await running.catch(() => undefined);
      await fresh.close();
      await open.close();
    }
  }, 120_000);
});
