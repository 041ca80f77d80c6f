#!/usr/bin/env node
/**
 * `backpackflow`: run flows from JSON durably, list and inspect runs (trace, backpack at a step, diff, blame,
 * events), resume and fork them, search memory, and the demo. Exit codes: 0 ok, 1 error (stderr names what),
 * 2 bad usage; a closed output (`| head`) ends the process quietly with 0 (see closed-output.ts).
 */
import { exitQuietlyWhenOutputCloses } from './closed-output.js';
import { main } from './backpackflow/program.js';

exitQuietlyWhenOutputCloses();
// The library's process warnings (a damaged log's lines not served, a cut log) in the command's own form, once each,
// instead of Node's `(node:PID) EventStoreWarning: ...` lines, its `--trace-warnings` hint and every repeat.
process.removeAllListeners('warning');
// (output.js loaded on the first one: `--help` loads only what it uses.)
process.on('warning', (warning) => void import('./backpackflow/output.js').then(({ warn }) => warn(warning.message)));
process.exitCode = await main(process.argv);
