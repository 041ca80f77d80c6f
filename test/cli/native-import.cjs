/* global module */
// Node's own `import()`, for test/cli/in-process.ts: loaded with require (which vitest leaves to Node), so what it
// imports loads as in a plain `node` process, not through vitest's module transform.
module.exports = (specifier) => import(specifier);
