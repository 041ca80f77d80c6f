/**
 * A fork or resume the studio answered before its child was done (a 202 after the settle time, as on a loaded
 * machine), followed in a real browser (Debian's Chromium through playwright-core). The fork's child is held before
 * it writes anything: the run's flow module (a file this test writes, re-exporting fixtures/review.mjs) waits at
 * import while a `hold` file exists, so the new run does not exist when the page opens it, for as long as the test
 * wants, on any machine. The page shows the run as starting, then the run once the child writes it; a child that
 * fails before writing shows its (redacted) error; a resume answered 202 is seen ending without a reload.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { BIN, cliJson, tempDir } from '../cli/helpers.js';
import { CHROMIUM, chromiumPage } from '../support/chromium.js';
import { pageText } from './helpers.js';

const WAIT = { timeout: 30_000 };
const REVIEW = join(import.meta.dirname, 'fixtures', 'review.mjs');
const SECRET = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH';
let dataDir = '';
/** The flow module of the runs here, and the files that steer it (see the file's comment). */
let flowDir = '';
const file = (name: string): string => join(flowDir, name);
let studio: StudioServer;
let context: BrowserContext;
let page: Page;
let text: ReturnType<typeof pageText>;

/**
 * The review flow, behind an import that waits while `hold` exists (having created `entered`), then fails with a
 * secret in its message when `fail` exists.
 */
function writeFlowModule(): void {
  const source = `
import { existsSync, writeFileSync } from 'node:fs';
const at = (name) => new URL(name, import.meta.url);
if (existsSync(at('hold'))) {
  writeFileSync(at('entered'), '');
  while (existsSync(at('hold'))) await new Promise((resolve) => setTimeout(resolve, 10));
  if (existsSync(at('fail'))) throw new Error('the flow module refused to load with key ${SECRET}');
}
export { buildReviewFlow } from ${JSON.stringify(pathToFileURL(REVIEW).href)};
`;
  writeFileSync(file('flow.mjs'), source);
}

/** Resolves once `check` holds (checked every 20 ms, for at most 30 s: a loaded machine may be slow). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; !check(); ) {
    if (Date.now() > deadline) throw new Error(`timed out after 30 s waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitingRun(runId: string, input: Record<string, unknown> = {}): Promise<void> {
  const result = await cliJson(['run', '--flow-module', `${file('flow.mjs')}#buildReviewFlow`, '--input', JSON.stringify(input), '--run-id', runId, '--data-dir', dataDir]);
  expect(result.status).toBe('waiting');
}

/** Opens `hash` in a page holding the studio's token. */
async function open(hash: string): Promise<void> {
  await page.goto(`${studio.url}${hash}`);
}

/** Forks r_src from step 1 with the child held at its flow module's import; resolves once it waits there. */
async function heldFork(): Promise<void> {
  rmSync(file('entered'), { force: true });
  writeFileSync(file('hold'), '');
  await open('#/runs/default/r_src?tab=state&step=1');
  await page.getByRole('button', { name: 'Fork from step 1' }).click();
  await until(() => existsSync(file('entered')), 'the fork reached its flow module');
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set BACKPACKFLOW_CHROMIUM)`);
  dataDir = tempDir();
  flowDir = tempDir();
  writeFlowModule();
  const [inBrowser] = await Promise.all([chromiumPage(), waitingRun('r_src'), waitingRun('r_gated', { gate: file('gate') })]);
  ({ context, page } = inBrowser);
  // A write answers after 100 ms with its child still running (a 202), as one does on a loaded machine.
  studio = await startStudio({ dataDir, port: 0, steering: { cli: [process.execPath, BIN], settleMs: 100 } });
  text = pageText(page);
}, 120_000);

/** Lets go of what a test left held or failing (a failed test's fork; the next test's children). */
afterEach(() => {
  for (const name of ['hold', 'fail']) rmSync(file(name), { force: true });
});

afterAll(async () => {
  // Nothing a failed test left held waits forever.
  writeFileSync(file('gate'), '');
  await context?.close();
  await studio?.close();
});

describe('a fork or resume still running when the studio answers', () => {
  it('shows the forked run as starting, then the run once its child writes it', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await heldFork();
    await page.locator('p.starting').waitFor(WAIT);
    expect(page.url()).toMatch(/#\/runs\/default\/run_/);
    expect(await text('p.starting')).toBe('Starting… the studio’s fork of r_src at step 1 is still running: this run opens here as soon as its first events are written.');
    expect(await text('h1 .status')).toBe('starting');
    expect(await page.locator('.problem').count()).toBe(0);
    rmSync(file('hold'));
    // Forked from step 1 (before the question): the new run asks again.
    await page.locator('.facts', { hasText: 'Forked from' }).waitFor(WAIT);
    expect(await text('.facts')).toContain('r_src at step 1');
    await page.getByText('Publish this draft?').waitFor(WAIT);
    expect(await text('h1 .status')).toBe('waiting');
    expect(await page.locator('p.starting').count()).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);

  it("shows a fork's error, redacted, when its child fails before writing the run", async () => {
    writeFileSync(file('fail'), '');
    await heldFork();
    await page.locator('p.starting').waitFor(WAIT);
    rmSync(file('hold'));
    await page.locator('.job-failed').waitFor(WAIT);
    expect(await text('.problem')).toMatch(/^The studio’s fork failed before writing run run_\S+:$/);
    const error = await text('.job-error');
    expect(error).toContain('the flow module refused to load with key [REDACTED]');
    expect(error).not.toContain('sk-ant');
    expect(await page.locator('p.starting').count()).toBe(0);
    expect(await page.locator('h1 .status').count()).toBe(0);
  }, 60_000);

  it('follows a resume answered while its child still runs, to the end of the run', async () => {
    await open('#/runs/default/r_gated');
    const form = page.getByRole('form', { name: 'answer' });
    await form.getByLabel('approved').check();
    await form.getByRole('button', { name: 'Answer and resume' }).click();
    await page.locator('.job', { hasText: 'Resumed from the studio: running' }).waitFor(WAIT);
    await until(() => existsSync(`${file('gate')}.entered`), 'the resume reached the gate');
    writeFileSync(file('gate'), '');
    await page.locator('h1 .status-completed').waitFor(WAIT);
    await page.locator('.job', { hasText: 'Resumed from the studio: completed' }).waitFor(WAIT);
  }, 60_000);
});
