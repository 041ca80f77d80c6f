/**
 * Steering runs in a real browser (Debian's Chromium through playwright-core), against a studio whose resumes and
 * forks run the built CLI, as under `backpackflow studio` (which test/studio/e2e.browser.test.ts and test/cli/studio.test.ts
 * start): a waiting run's question answered through the form generated from its schema (a server-side problem shown
 * at its field first), the run seen completing; a fork from a step of the slider; a page without the token offered
 * the CLI command instead; the workspace's context with its stale markers and a frame's content; the theme switch.
 *
 * The studio runs in this process, so that a write waits for its child as long as a loaded machine needs (its settle
 * time; the CLI's is 3 s): what the page shows then never depends on the machine's speed.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRuns } from '../../src/index.js';
import { ContextEngine } from '../../src/context/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { BIN, cliJson, tempDir } from '../cli/helpers.js';
import { CHROMIUM, chromiumPage } from '../support/chromium.js';
import { pageText } from './helpers.js';

const WAIT = { timeout: 30_000 };
const REVIEW = join(import.meta.dirname, 'fixtures', 'review.mjs');
let dataDir = '';
let studio: StudioServer;
/** The URL the studio prints, with its token. */
let url: URL;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let text: ReturnType<typeof pageText>;

async function waitingRun(runId: string): Promise<void> {
  const result = await cliJson(['run', '--flow-module', `${REVIEW}#buildReviewFlow`, '--input', '{}', '--run-id', runId, '--data-dir', dataDir]);
  expect(result.status).toBe('waiting');
}

/** A workspace with one file whose summary frame is stale (the file changed after it was written). */
async function staleWorkspace(): Promise<string> {
  const workspace = tempDir();
  mkdirSync(join(workspace, 'notes'));
  writeFileSync(join(workspace, 'notes', 'tides.md'), 'the moon pulls the sea\n');
  const engine = await ContextEngine.open(workspace);
  await engine.scan();
  await engine.registerAgent({ agentId: 'summarizer', role: 'writer' });
  await engine.putFrame('notes/tides.md', { type: 'summary', content: 'Tides: the moon. Key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH' }, 'summarizer');
  writeFileSync(join(workspace, 'notes', 'tides.md'), 'the moon and the sun pull the sea\n');
  await engine.scan();
  await engine.close();
  return workspace;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set BACKPACKFLOW_CHROMIUM)`);
  dataDir = tempDir();
  // Chromium starts (or this worker's is reused) while the workspace and the runs are written.
  const [inBrowser, workspace] = await Promise.all([chromiumPage(), staleWorkspace(), waitingRun('r_form'), waitingRun('r_readonly')]);
  ({ browser, context, page } = inBrowser);
  // A write waits up to 60 s for its child: the page always gets the child's outcome in its reply.
  studio = await startStudio({ dataDir, workspace, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 60_000 } });
  url = new URL(studio.url);
  text = pageText(page);
}, 120_000);

afterAll(async () => {
  await context?.close();
  await studio?.close();
});

describe('steering runs in a browser', () => {
  it("answers a waiting run's question in the generated form and sees it complete", async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // The printed URL carries the token: the page takes it out of the address bar (it lives on in this tab's memory).
    await page.goto(url.href);
    await page.locator('tr[data-run="r_form"]').waitFor(WAIT);
    expect(page.url()).not.toContain('token');
    await page.locator('tr[data-run="r_form"]').getByRole('link', { name: 'r_form' }).click();
    await page.getByText('Publish this draft?').waitFor(WAIT);
    expect(await text('h1 .status')).toBe('waiting');
    expect(await text('.answer-panel pre.payload')).toContain('Tides are caused by the moon.');

    // The fields come from the schema: a checkbox, a select with the default, a number with the default, a list.
    const form = page.getByRole('form', { name: 'answer' });
    expect(await form.getByLabel('priority').inputValue()).toBe('normal');
    expect(await form.getByLabel('copies').inputValue()).toBe('1');
    expect(await form.getByText('Publish the draft?').count()).toBe(1);
    // The checkbox takes the keyboard: Space ticks it.
    await form.getByLabel('approved').focus();
    await page.keyboard.press('Space');
    expect(await form.getByLabel('approved').isChecked()).toBe(true);
    await form.getByLabel('priority').selectOption('high');
    await form.getByRole('button', { name: 'add tags item' }).click();
    await form.getByLabel('tags item 1', { exact: true }).fill('moon');
    // 11 copies: a whole number, so the page sends it; the server's schema says at most 10, next to the field.
    await form.getByLabel('copies').fill('11');
    await form.getByRole('button', { name: 'Answer and resume' }).click();
    const copiesErrors = form.locator('[data-pointer="/copies"] ~ .field-errors');
    await copiesErrors.waitFor(WAIT);
    expect(await copiesErrors.textContent()).toMatch(/10/);
    expect(await form.getByLabel('copies').getAttribute('aria-invalid')).toBe('true');
    expect(await text('h1 .status')).toBe('waiting');
    // The terminal equivalent follows the form.
    await page.getByText('Or from a terminal').click();
    // It names the pause it answers (the seq of the run's run.waiting), as the form's write does.
    const pause = (await listRuns({ dataDir })).find((run) => run.runId === 'r_form')?.interrupt?.pause;
    expect(await text('.answer-panel .terminal code')).toContain(`runs resume r_form --data-dir ${dataDir} --answering ${pause} --input '{"approved":true,"priority":"high","copies":11,"tags":["moon"]}'`);

    await form.getByLabel('copies').fill('2');
    await form.getByLabel('copies').press('Enter');
    await page.locator('h1 .status-completed').waitFor(WAIT);
    await page.locator('.job', { hasText: 'Resumed from the studio: completed' }).waitFor(WAIT);
    await page.getByRole('tab', { name: 'State' }).click();
    await page.locator('table.state tr[data-key="published"]').waitFor(WAIT);
    expect(await text('table.state tr[data-key="review"] td code')).toContain('priority: "high"');
    expect(await text('table.state tr[data-key="published"] .writer')).toBe('publish @ review.publish');
    expect(errors).toEqual([]);
  }, 120_000);

  it('forks a new run from the step on the slider and opens it', async () => {
    await page.goto(`${url.origin}/#/runs/default/r_form?tab=state&step=1`);
    const fork = page.getByRole('button', { name: 'Fork from step 1' });
    await fork.waitFor(WAIT);
    // The last step ended the flow: no fork offered there.
    await page.locator('#step-slider').focus();
    await page.keyboard.press('End');
    await page.getByText('the run had ended').waitFor(WAIT);
    expect(await page.getByRole('button', { name: /^Fork from step/ }).count()).toBe(0);
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    await fork.click();
    // The new run: forked from step 1 (before the question), so it asks again.
    await page.locator('.facts', { hasText: 'Forked from' }).waitFor(WAIT);
    expect(await text('.facts')).toContain('r_form at step 1');
    await page.getByText('Publish this draft?').waitFor(WAIT);
    expect(await text('h1 .status')).toBe('waiting');
    expect(page.url()).toMatch(/#\/runs\/default\/run_/);
  }, 120_000);

  it("never lets the token reach another server on 127.0.0.1; a reload in the same tab keeps it", async () => {
    // Another web server on this machine (another port of 127.0.0.1): it records every header the browser sends it.
    const seen: string[] = [];
    const other = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/' ? '<!doctype html><title>other</title><img src="/pixel.png">' : '');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const fresh = await browser.newContext();
    try {
      const tab = await fresh.newPage();
      await tab.goto(url.href);
      await tab.locator('tr[data-run="r_readonly"]').waitFor(WAIT);
      expect(tab.url()).not.toContain('token');
      await tab.goto(`${otherOrigin}/`);
      await tab.evaluate(() => fetch('/fetched', { credentials: 'include' }).then((r) => r.text()));
      expect(seen.some((line) => line.startsWith('GET /fetched'))).toBe(true);
      for (const line of seen) expect(line).not.toContain(url.searchParams.get('token')!);
      // Back at the studio, without the token in the address: this tab still holds it and may answer.
      await tab.goto(`${url.origin}/#/runs/default/r_readonly`);
      await tab.getByRole('button', { name: 'Answer and resume', disabled: false }).waitFor(WAIT);
      await tab.reload();
      await tab.getByRole('button', { name: 'Answer and resume', disabled: false }).waitFor(WAIT);
      // Another tab of the same browser was not given it (sessionStorage is per tab): it only reads.
      const second = await fresh.newPage();
      await second.goto(`${url.origin}/#/runs/default/r_readonly`);
      await second.getByText('Publish this draft?').waitFor(WAIT);
      await second.locator('header.top span.muted').waitFor(WAIT);
      expect(await second.getByRole('button', { name: 'Answer and resume' }).isDisabled()).toBe(true);
      expect(await fresh.cookies()).toEqual([]);
    } finally {
      await fresh.close();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  }, 60_000);

  it('without the token the page only reads, and shows the command that answers from a terminal', async () => {
    const fresh = await browser.newContext();
    try {
      const reader = await fresh.newPage();
      await reader.goto(`${url.origin}/#/runs/default/r_readonly`);
      await reader.getByText('Publish this draft?').waitFor(WAIT);
      expect(await reader.getByRole('button', { name: 'Answer and resume' }).isDisabled()).toBe(true);
      expect(await reader.locator('.answer-panel .terminal').textContent()).toContain('opened without the studio’s token');
      expect(await reader.locator('.answer-panel .terminal code').textContent()).toContain('runs resume r_readonly');
    } finally {
      await fresh.close();
    }
  }, 60_000);

  it("shows the workspace's context: children, heads with stale markers, a frame's redacted content", async () => {
    await page.goto(`${url.origin}/#/`);
    await page.getByRole('link', { name: 'Context' }).click();
    await page.locator('tr[data-path="notes"]').waitFor(WAIT);
    expect(await text('section[aria-labelledby="context-title"] p.muted')).toContain('1 stale');
    expect(await page.locator('tr[data-path="notes"]').innerText()).toMatch(/^notes\/\s+dir\s+1 entry\s+—\s+1$/);
    await page.getByRole('link', { name: 'notes/' }).click();
    await page.locator('tr[data-path="notes/tides.md"]').waitFor(WAIT);
    expect(await text('tr[data-path="notes/tides.md"]')).toContain('summary · stale');
    await page.getByRole('link', { name: 'tides.md' }).click();
    await page.locator('table.frames tbody tr').waitFor(WAIT);
    expect(await page.locator('table.frames tbody tr').innerText()).toMatch(/^summary\s+summarizer\s+\d+\s+head · stale\s+[0-9a-f]{16}…\s+Show$/);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('.frame-content pre').first().waitFor(WAIT);
    const content = await text('.frame-content pre');
    expect(content).toContain('Tides: the moon. Key: [REDACTED]');
    expect(content).not.toContain('sk-ant');
    // The crumbs lead back up.
    await page.getByRole('navigation', { name: 'path' }).getByRole('link', { name: 'notes' }).click();
    await page.locator('tr[data-path="notes/tides.md"]').waitFor(WAIT);
  }, 60_000);

  it('switches between light and dark themes and remembers the choice', async () => {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(`${url.origin}/#/`);
    const background = (): Promise<string> => page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
    await page.getByLabel('Theme').waitFor(WAIT);
    expect(await background()).toBe('rgb(255, 255, 255)');
    await page.getByLabel('Theme').selectOption('dark');
    expect(await background()).toBe('rgb(18, 22, 28)');
    await page.reload();
    await page.getByLabel('Theme').waitFor(WAIT);
    expect(await page.getByLabel('Theme').inputValue()).toBe('dark');
    expect(await background()).toBe('rgb(18, 22, 28)');
    await page.getByLabel('Theme').selectOption('auto');
    expect(await background()).toBe('rgb(255, 255, 255)');
  }, 60_000);
});
