import { defineConfig } from 'vitest/config';

/** `npm run test:pg`: the Postgres tests, against a real server (see test/pg/global-setup.ts). */
export default defineConfig({
  test: {
    include: ['test/pg/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/pg/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
