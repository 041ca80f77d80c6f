/**
 * Pauses that a notification ends early (LISTEN/NOTIFY for workers and tails): {@link Wakeup.sleep} resolves after
 * its time, on {@link Wakeup.wake}, or when its signal aborts, whichever comes first, and leaves no timer or abort
 * listener behind (a worker sleeps thousands of times on one signal).
 */
export class Wakeup {
  readonly #sleepers = new Set<() => void>();

  /** Ends every sleep under way. */
  wake(): void {
    for (const done of [...this.#sleepers]) done();
  }

  /** Resolves after `ms`, on {@link wake}, or when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleepers.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
