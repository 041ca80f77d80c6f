/**
 * The runner of the `backpackflow` command line: the command tree, its parse, exit codes (0 ok, 1 error, 2 usage)
 * and error reporting, for a table of commands (see {@link CommandTable}). `program.ts` runs it with every command;
 * the bundled commands over stored runs and memory (`store-program.ts`) with those two groups alone, so that its
 * bundle holds no other command's code.
 */
import type { Command } from 'commander';
import { CliError, UsageError } from './errors.js';

/** A top-level command: a one-line description for the overview, and (where this table can run it) the module that builds it. */
export interface CommandSpec {
  description: string;
  load?: () => Promise<Command>;
}

/** The top-level commands a runner knows, by name. */
export type CommandTable = Record<string, CommandSpec>;

/** The description of every top-level command, in the overview's order. */
export const COMMAND_DESCRIPTIONS = {
  run: 'run a flow durably with the live trace: from its JSON config, or built by a flow module',
  validate: 'check a flow config; prints every problem with its JSON path',
  runs: 'list and inspect stored runs; resume, answer or fork them; verify their logs; delete or prune them',
  worker: 'run the queued runs of a database (see run --enqueue)',
  memory: 'search and add long-term memory items',
  context: "the context engine over a workspace: scan, status, frames, agents, synthesis (see 'backpackflow context --help')",
  studio: 'a local web UI over the stored runs: trace, events, state at any step, diffs, blame, memory',
  demo: 'an offline research agent over a workspace: scan, summarize, synthesize, remember, answer, guard',
} as const satisfies Record<string, string>;

/**
 * The command groups over stored runs and memory, which the bundled store program runs (see store-program.ts) and
 * program.ts runs too (`runs resume` and `runs fork`, unbundled).
 */
export const STORE_COMMANDS = {
  runs: { description: COMMAND_DESCRIPTIONS.runs, load: async () => (await import('./runs.js')).runsCommand() },
  memory: { description: COMMAND_DESCRIPTIONS.memory, load: async () => (await import('./memory.js')).memoryCommand() },
} as const satisfies CommandTable;

/**
 * What commander wrote to stderr during the last parse: its usage errors (`error` true), which quote what was typed,
 * and the lines it adds after them. Held until {@link main} prints them, the errors through terminalText (loaded only
 * then: `--help` loads nothing of events/). Commander writes to stderr only when it is about to throw.
 */
let commanderErrors: { text: string; error: boolean }[] = [];

/**
 * Makes every command of the tree throw instead of exiting, so `main` maps usage errors to exit code 2, and hold what
 * it writes to stderr (see {@link commanderErrors}).
 */
function overrideExits(command: Command): void {
  command
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeErr: (text) => commanderErrors.push({ text, error: false }),
      outputError: (text) => commanderErrors.push({ text, error: true }),
    });
  for (const sub of command.commands) overrideExits(sub);
}

/** Prints what commander held back (see {@link commanderErrors}), its usage errors as {@link errorLine} prints a message. */
async function printCommanderErrors(): Promise<void> {
  const held = commanderErrors;
  commanderErrors = [];
  for (const { text, error } of held) process.stderr.write(error ? `${await errorLine(text.replace(/\n$/, ''))}\n` : text);
}

/**
 * The command `argv` names (`backpackflow <name> ...` or `backpackflow help <name>`), if any, and where the name
 * stands in `argv` (-1 for `help <name>`).
 */
export function commandNamed(argv: readonly string[]): { name: string | undefined; at: number } {
  const at = argv.findIndex((a, i) => i >= 2 && !a.startsWith('-'));
  if (at < 0) return { name: undefined, at };
  return argv[at] === 'help' ? { name: argv[at + 1], at: -1 } : { name: argv[at], at };
}

/**
 * The command tree for `argv`: the named command built in full (its module loaded), the others as a name and a
 * description (enough for the overview and for an unknown-command error).
 */
export async function buildProgram(commands: CommandTable, argv: readonly string[] = []): Promise<Command> {
  const { Command } = await import('commander');
  const program = new Command('backpackflow')
    .description('run flows durably and inspect what the agent knew, when, and who wrote it')
    .version('0.1.0');
  const named = commandNamed(argv).name;
  for (const [name, spec] of Object.entries(commands)) {
    if (name === named && spec.load !== undefined) program.addCommand(await spec.load());
    else program.command(name).description(spec.description);
  }
  overrideExits(program);
  return program;
}

/**
 * An error message as the last line on stderr prints it: it may quote a node's error or stored text, so it goes
 * through terminalText (loaded here: `--help` loads nothing of events/); a message of several lines (every problem
 * of a flow file) keeps them, each indented under the first.
 */
async function errorLine(message: string): Promise<string> {
  const [{ terminalText }, { redactorFor }] = await Promise.all([import('../../events/terminal-text.js'), import('../../redact/index.js')]);
  // Redacted as a run's log is (a node's error may quote a token), for the CI logs and files stderr is copied to.
  return terminalText(redactorFor().redactText(message), { continuation: '  ' });
}

/** Runs the command line of `commands` with `argv` (as process.argv) and returns the exit code. */
export async function runCli(argv: string[], commands: CommandTable): Promise<number> {
  const { name } = commandNamed(argv);
  const { CommanderError } = await import('commander');
  try {
    const program = await buildProgram(commands, argv);
    try {
      await program.parseAsync(argv);
    } finally {
      await printCommanderErrors();
      // Only a command's action opens a store; the registry of opened stores loads none of the store modules (nor zod),
      // so a command's help closes nothing and loads nothing for it.
      if (name !== undefined && Object.hasOwn(commands, name)) {
        const { closeCliStore } = await import('./open-stores.js');
        await closeCliStore();
      }
    }
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version "errors" are successes; the usage message is printed (printCommanderErrors).
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`backpackflow: ${await errorLine(error.message)}\n`);
      return 2;
    }
    const message = error instanceof CliError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(`backpackflow: ${await errorLine(message)}\n`);
    return 1;
  }
}
