/**
 * A waiting run that asks for a secret (README "Asking for a secret": a schema with a `password` field), answered in
 * the studio: the field is masked as it is typed, and the secret is never written into the page; the terminal
 * command the page shows reads the answer from a file (a command line would leave it to `ps` and the shell's
 * history). Review s22b, L1.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow } from '../../src/index.js';
import { startStudio, type StudioServer } from '../../src/studio/server.js';
import { tempDir } from '../cli/helpers.js';
import { chromiumPage } from '../support/chromium.js';

const SECRET = 'correct-horse-battery-staple-42';
let studio: StudioServer;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  const dataDir = tempDir();
  class Login extends BackpackNode {
    override async prep(): Promise<unknown> {
      return this.interrupt({ question: 'database login?' }, { schema: z.object({ user: z.string(), password: z.string() }) });
    }
  }
  const flow = new Flow({ namespace: 'login' });
  flow.addNode(Login, { id: 'login' });
  await runFlow(flow, { dataDir, runId: 'asks-secret' });
  studio = await startStudio({ dataDir, port: 0 });
  ({ context, page } = await chromiumPage());
}, 60_000);

afterAll(async () => {
  await context?.close();
  await studio?.close();
});

describe('answering a secret in the studio', () => {
  it('masks a secret-named field and never writes the secret into the page', async () => {
    // Opened without the token: the page shows the terminal command in the open.
    await page.goto(`http://127.0.0.1:${studio.port}/#/runs/default/asks-secret`);
    const field = page.locator('input[data-pointer="/password"]');
    await field.waitFor({ timeout: 20_000 });
    await page.locator('input[data-pointer="/user"]').fill('alice');
    await field.fill(SECRET);
    const type = await field.getAttribute('type');
    const shown = (await page.locator('pre[aria-label="command"]').allTextContents()).join('\n');
    expect({ type, commandHoldsSecret: shown.includes(SECRET) }).toEqual({ type: 'password', commandHoldsSecret: false });
    expect(shown).toContain('--input @answer.json');
    expect(await page.content()).not.toContain(SECRET.slice(0, 12));
  });
});
