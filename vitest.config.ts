import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/pg/ runs in `npm run test:pg`, against a PostgreSQL server (which .ci/run starts).
    // `*.soak.test.ts` run in `npm run test:soak` (SOAK=1) only, `*.browser.test.ts` (the studio in Debian's Chromium)
    // in `npm run test:browser` (BROWSER=1) only: .ci/run runs both.
    exclude: [
      ...configDefaults.exclude,
      'test/pg/**',
      ...(process.env['SOAK'] === '1' ? [] : ['test/**/*.soak.test.ts']),
      ...(process.env['BROWSER'] === '1' ? [] : ['test/**/*.browser.test.ts']),
    ],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Test files share a worker's module cache: importing the sources once per worker instead of once per file saves
    // most of the collect phase (90 s → 6 s of CPU here). Tests restore what they change (timers, env, mocks).
    isolate: false,
    // Child processes, not threads: the CLI tests run the CLI's main in the worker (test/cli/in-process.ts), which
    // changes the working directory, and a worker thread cannot.
    pool: 'forks',
    // Many tests wait on child processes (a worker blocked in spawnSync or awaiting a child's exit), timers and the
    // main process's transforms: on two cores, each of two workers was idle or blocked about half the time (CPU
    // profiles), so a core was often idle, and a third worker fills it (npm test: 63 s → 55 s here, for about 5% more
    // CPU). One worker more than cores, rather than vitest's default of cores - 1.
    maxWorkers: availableParallelism() + 1,
    // And all of them to the end: with fewer (vitest's default minimum is cores - 1), the pool ends a worker as soon as
    // it is idle, which near the end of a run (fewer files left than workers) ended the run with "Terminating worker
    // thread" and no report (test:browser's 4 files on 3 workers, every time).
    minWorkers: availableParallelism() + 1,
  },
});
