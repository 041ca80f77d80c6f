import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Wakeup } from '../../src/cli/backpackflow/wakeup.js';

describe('Wakeup (the pause of idle workers and tails)', () => {
  it('wake() ends every sleep under way at once, not only the last one started', async () => {
    const wakeup = new Wakeup();
    const stop = new AbortController();
    const ended: number[] = [];
    const sleeps = [0, 1, 2].map((i) => wakeup.sleep(60_000, stop.signal).then(() => ended.push(i)));
    wakeup.wake();
    await Promise.all(sleeps);
    expect(ended.sort()).toEqual([0, 1, 2]);
  });

  it('ends on abort, at once when already aborted, and after its time otherwise', async () => {
    const wakeup = new Wakeup();
    const stop = new AbortController();
    const aborted = wakeup.sleep(60_000, stop.signal);
    stop.abort();
    await aborted;
    await wakeup.sleep(60_000, stop.signal);
    const started = Date.now();
    await wakeup.sleep(20, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });

  it('leaves no abort listener behind however many times it sleeps on one signal', async () => {
    const wakeup = new Wakeup();
    const stop = new AbortController();
    for (let i = 0; i < 50; i++) {
      const sleep = wakeup.sleep(60_000, stop.signal);
      wakeup.wake();
      await sleep;
    }
    for (let i = 0; i < 5; i++) await wakeup.sleep(1, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
