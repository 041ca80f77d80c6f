/**
 * A vitest worker is ended by a signal (SIGTERM from its pool, which kills it 1 s later if it is still there; SIGINT
 * or SIGHUP from a terminal), whose default action ends the process without its `exit` event: what a test process
 * cleans up on `exit` (the child-script bundles of ./bundle.ts; Playwright's Chromium, which runs in its own process
 * group) would be left behind. Once this is called, these signals first run the cleanups given to
 * {@link beforeSignalExit} (for at most half a second), then end this process with `process.exit`, with the exit code
 * the signal's default would give (128 + n), so that `exit` handlers run.
 */
export function exitOnSignals(): void {
  if (installed) return;
  installed = true;
  for (const [signal, number] of [['SIGHUP', 1], ['SIGINT', 2], ['SIGTERM', 15]] as const) {
    process.once(signal, () => {
      const done = Promise.allSettled([...cleanups].map((cleanup) => cleanup()));
      const timer = new Promise((resolve) => setTimeout(resolve, 500));
      void Promise.race([done, timer]).then(() => process.exit(128 + number));
    });
  }
}

/** An asynchronous cleanup for {@link exitOnSignals} to run when a signal ends this process (`exit` runs only sync code). */
export function beforeSignalExit(cleanup: () => Promise<unknown>): () => void {
  exitOnSignals();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

let installed = false;
const cleanups = new Set<() => Promise<unknown>>();
