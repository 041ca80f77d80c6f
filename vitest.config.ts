import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // `*.soak.test.ts` run in `npm run test:soak` (SOAK=1) only, which .ci/run also runs.
    exclude: process.env['SOAK'] === '1' ? configDefaults.exclude : [...configDefaults.exclude, 'test/**/*.soak.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
