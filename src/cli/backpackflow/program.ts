/**
 * The `backpackflow` command line: every command, each command's module imported only when that command runs (or
 * its help is asked for): `backpackflow --help` loads commander alone, and `runs list` never loads the LLM nodes.
 * Two groups run as bundles of their own (one file each, with V8's code cache, see scripts/bundle-cli.mjs): `context
 * ...`, the context engine's command line, and the commands over stored runs and memory (store-program.ts: every
 * `runs` command but `resume` and `fork`, which load the user's flow modules: those must share this package's
 * classes with them, so they run here, unbundled). The runner itself is cli.ts.
 */
import { COMMAND_DESCRIPTIONS, STORE_COMMANDS, commandNamed, runCli, type CommandTable } from './cli.js';

/** Every top-level command, with the module that builds it. */
const COMMANDS: CommandTable = {
  run: { description: COMMAND_DESCRIPTIONS.run, load: async () => (await import('./flow-commands.js')).runCommand() },
  validate: { description: COMMAND_DESCRIPTIONS.validate, load: async () => (await import('./flow-commands.js')).validateCommand() },
  runs: STORE_COMMANDS.runs,
  worker: { description: COMMAND_DESCRIPTIONS.worker, load: async () => (await import('./worker.js')).workerCommand() },
  memory: STORE_COMMANDS.memory,
  context: { description: COMMAND_DESCRIPTIONS.context, load: async () => new (await import('commander')).Command('context') },
  studio: { description: COMMAND_DESCRIPTIONS.studio, load: async () => (await import('./studio-command.js')).studioCommand() },
  demo: { description: COMMAND_DESCRIPTIONS.demo, load: async () => (await import('./demo-command.js')).demoCommand() },
};

/** The `runs` subcommands that load the user's flow modules (see the module comment): never run from the bundle. */
const RUNS_WITH_FLOWS: ReadonlySet<string> = new Set(['resume', 'fork']);

/** Runs the CLI with `argv` (as process.argv) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  // `context ...` is the context engine's own command line: everything after the word is its arguments.
  const { name, at } = commandNamed(argv);
  if (name === 'context') {
    const { runContextCli } = await import('../context-program.js');
    return runContextCli([argv[0]!, argv[1]!, ...(at >= 0 ? argv.slice(at + 1) : ['--help'])]);
  }
  // The commands over stored runs and memory that load no flow run from their bundle (see store-program.ts). For
  // `runs`, the subcommand is the first word after it (none for `help runs`; `runs help resume` only prints help).
  const sub = name === 'runs' && at >= 0 ? argv.slice(at + 1).find((word) => !word.startsWith('-')) : undefined;
  if (name === 'memory' || (name === 'runs' && (sub === undefined || !RUNS_WITH_FLOWS.has(sub)))) {
    const { runStoreCli } = await import('../store-program.js');
    return runStoreCli(argv);
  }
  return runCli(argv, COMMANDS);
}
