import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/pg/ runs in `npm run test:pg`, against a PostgreSQL server (which .ci/run starts).
    // `*.soak.test.ts` run in `npm run test:soak` (SOAK=1) only, which .ci/run also runs.
    exclude: [...configDefaults.exclude, 'test/pg/**', ...(process.env['SOAK'] === '1' ? [] : ['test/**/*.soak.test.ts'])],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
