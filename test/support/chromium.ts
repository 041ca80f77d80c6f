import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it when missing). */
export const CHROMIUM = process.env.BACKPACKFLOW_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless Chromium as the studio's tests and screenshot script drive it: no sandbox (containers run as root),
 * no GPU, no background traffic, and a fresh profile (launch() makes a temporary user-data dir and removes it).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    timeout: 60_000,
  });
}
