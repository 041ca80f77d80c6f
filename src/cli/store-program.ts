/**
 * The commands over stored runs and memory that load no flow: every `runs` command but `resume` and `fork` (list,
 * show, state, diff, blame, events, tail, verify, delete, prune, and every help of the group) and every `memory`
 * command, as the `backpackflow` command line runs them: program.ts sends them here. The build bundles this module
 * into one file with V8's code cache (scripts/bundle-cli.mjs): these are the commands people run most, and loading
 * the library's modules and zod's one by one took most of their time. `runs resume` and `runs fork` load the user's
 * flow modules, which import this package themselves and must share its classes: they run unbundled (program.ts),
 * so their code is not in the bundle.
 */
import { COMMAND_DESCRIPTIONS, STORE_COMMANDS, runCli, type CommandTable } from './backpackflow/cli.js';

/** The top-level commands as the overview lists them (in its order); only `runs` and `memory` are built here. */
const COMMANDS: CommandTable = Object.fromEntries(
  Object.entries(COMMAND_DESCRIPTIONS).map(([name, description]) => [name, Object.hasOwn(STORE_COMMANDS, name) ? STORE_COMMANDS[name as keyof typeof STORE_COMMANDS] : { description }]),
);

/** Runs `backpackflow runs ...` or `backpackflow memory ...` with `argv` (as process.argv) and returns the exit code. */
export function runStoreCli(argv: string[]): Promise<number> {
  return runCli(argv, COMMANDS);
}
