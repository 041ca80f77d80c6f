/**
 * The `backpackflow` command line: commands, exit codes (0 ok, 1 error, 2 usage) and error reporting. Each command's
 * module is imported only when that command runs (or its help is asked for): `backpackflow --help` loads commander
 * alone, and `runs list` never loads the LLM nodes. `context ...` loads its own bundled command line and not even
 * commander from here.
 */
import type { Command } from 'commander';
import { CliError, UsageError } from './errors.js';

/** The top-level commands: a one-line description for the overview, and the module that builds the command. */
const COMMANDS: Record<string, { description: string; load: () => Promise<Command> }> = {
  run: { description: 'run a flow durably with the live trace: from its JSON config, or built by a flow module', load: async () => (await import('./flow-commands.js')).runCommand() },
  validate: { description: 'check a flow config; prints every problem with its JSON path', load: async () => (await import('./flow-commands.js')).validateCommand() },
  runs: { description: 'list and inspect stored runs; resume, answer or fork them; verify their logs; delete or prune them', load: async () => (await import('./runs.js')).runsCommand() },
  worker: { description: 'run the queued runs of a database (see run --enqueue)', load: async () => (await import('./worker.js')).workerCommand() },
  memory: { description: 'search and add long-term memory items', load: async () => (await import('./memory.js')).memoryCommand() },
  context: { description: "the context engine over a workspace: scan, status, frames, agents, synthesis (see 'backpackflow context --help')", load: async () => new (await import('commander')).Command('context') },
  studio: { description: 'a local web UI over the stored runs: trace, events, state at any step, diffs, blame, memory', load: async () => (await import('./studio-command.js')).studioCommand() },
  demo: { description: 'an offline research agent over a workspace: scan, summarize, synthesize, remember, answer, guard', load: async () => (await import('./demo-command.js')).demoCommand() },
};

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
function commandNamed(argv: readonly string[]): { name: string | undefined; at: number } {
  const at = argv.findIndex((a, i) => i >= 2 && !a.startsWith('-'));
  if (at < 0) return { name: undefined, at };
  return argv[at] === 'help' ? { name: argv[at + 1], at: -1 } : { name: argv[at], at };
}

/**
 * The command tree for `argv`: the named command built in full (its module loaded), the others as a name and a
 * description (enough for the overview and for an unknown-command error).
 */
export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const { Command } = await import('commander');
  const program = new Command('backpackflow')
    .description('run flows durably and inspect what the agent knew, when, and who wrote it')
    .version('0.1.0');
  const named = commandNamed(argv).name;
  for (const [name, spec] of Object.entries(COMMANDS)) {
    if (name === named) program.addCommand(await spec.load());
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

/** Runs the CLI with `argv` (as process.argv) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  // `context ...` is the context engine's own command line: everything after the word is its arguments.
  const { name, at } = commandNamed(argv);
  if (name === 'context') {
    const { runContextCli } = await import('../context-program.js');
    return runContextCli([argv[0]!, argv[1]!, ...(at >= 0 ? argv.slice(at + 1) : ['--help'])]);
  }
  const { CommanderError } = await import('commander');
  try {
    const program = await buildProgram(argv);
    try {
      await program.parseAsync(argv);
    } finally {
      await printCommanderErrors();
      // Only a command's action opens a store; the registry of opened stores loads none of the store modules (nor zod),
      // so a command's help closes nothing and loads nothing for it.
      if (name !== undefined && Object.hasOwn(COMMANDS, name)) {
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
