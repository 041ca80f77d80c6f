import { chromium, type Browser, type BrowserContext, type LaunchOptions, type Page } from 'playwright-core';
import { beforeSignalExit } from './exit-on-signal.js';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it when missing). */
export const CHROMIUM = process.env.BACKPACKFLOW_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless Chromium as the studio's tests and screenshot script drive it: no sandbox (containers run as root),
 * no GPU, no background traffic, and a fresh profile (launch() makes a temporary user-data dir and removes it).
 */
export function launchChromium(options: Pick<LaunchOptions, 'handleSIGINT' | 'handleSIGTERM' | 'handleSIGHUP'> = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    timeout: 60_000,
    ...options,
  });
}

let shared: Promise<Browser> | undefined;

/**
 * This test process's Chromium, launched by the first test file that asks and reused by the next ones (with
 * isolate: false, the files of a vitest worker share this module): a launch per worker, not per file. Each file
 * works in its own browser context ({@link chromiumPage}) and closes it. The browser is closed when the pool's signal
 * ends the worker (./exit-on-signal.ts): a closed Chromium removes its temp files, which a killed one leaves in the
 * temp directory (Playwright kills it on `exit`, as a last resort). A browser that failed to launch or went away is
 * launched again by the next file that asks.
 */
export function sharedChromium(): Promise<Browser> {
  if (shared === undefined) {
    // Playwright's own signal handlers close the browser but leave the worker running until its pool kills it.
    const launching = launchChromium({ handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
    shared = launching;
    launching.then(
      (browser) => {
        const forget = beforeSignalExit(() => browser.close());
        browser.on('disconnected', () => {
          forget();
          if (shared === launching) shared = undefined;
        });
      },
      () => {
        if (shared === launching) shared = undefined;
      },
    );
  }
  return shared;
}

/** A fresh browser context (its own cookies, storage and cache) of {@link sharedChromium}, and a page in it. */
export async function chromiumPage(): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await sharedChromium();
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  return { browser, context, page };
}
