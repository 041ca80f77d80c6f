#!/usr/bin/env node
/**
 * `npm run merkle -- <command>` in a checkout: the context engine's commands, the same as `backpackflow context
 * <command>` (the package ships no `merkle` binary: an unrelated npm package of that name has one).
 */
import { exitQuietlyWhenOutputCloses } from './closed-output.js';
import { runContextCli } from './context-program.js';

exitQuietlyWhenOutputCloses();
process.exitCode = await runContextCli(process.argv, 'merkle');
