#!/usr/bin/env node
/**
 * `backpackflow`: run flows from JSON durably, list and inspect runs (trace, backpack at a step, diff, blame,
 * events), resume and fork them, search memory, and the demo. Exit codes: 0 ok, 1 error (stderr names what),
 * 2 bad usage; a closed output (`| head`) ends the process quietly with 0 (see closed-output.ts).
 */
import { exitQuietlyWhenOutputCloses } from './closed-output.js';
import { main } from './backpackflow/program.js';

exitQuietlyWhenOutputCloses();
process.exitCode = await main(process.argv);
