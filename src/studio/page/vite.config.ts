/** Builds the studio page (Preact, JSX through esbuild) into dist/studio/page/, which the studio server serves. */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  // Relative asset URLs: the page works whatever the server's origin (and a ?token= in the URL stays put).
  base: './',
  publicDir: false,
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../../../dist/studio/page/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No inline polyfill script: the page's Content-Security-Policy allows only its own files.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    sourcemap: false,
  },
});
