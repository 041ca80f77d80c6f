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
    // Many tests wait on child processes and fsync; one worker per core leaves a core idle while they wait, so a
    // two-core machine runs two workers rather than vitest's default of cores - 1.
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
