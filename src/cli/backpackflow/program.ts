/** The `backpackflow` command line: commands, exit codes (0 ok, 1 error, 2 usage) and error reporting. */
import { Command, CommanderError } from 'commander';
import { demoCommand } from './demo-command.js';
import { CliError, UsageError } from './errors.js';
import { runCommand, validateCommand } from './flow-commands.js';
import { memoryCommand } from './memory.js';
import { runsCommand } from './runs.js';
import { studioCommand } from './studio-command.js';

/** Makes every command of the tree throw instead of exiting, so `main` maps usage errors to exit code 2. */
function overrideExits(command: Command): void {
  command.exitOverride().showHelpAfterError('(add --help for usage)');
  for (const sub of command.commands) overrideExits(sub);
}

/** The whole command tree. */
export function buildProgram(): Command {
  const program = new Command('backpackflow')
    .description('run flows durably and inspect what the agent knew, when, and who wrote it')
    .version('0.1.0');
  program.addCommand(runCommand());
  program.addCommand(validateCommand());
  program.addCommand(runsCommand());
  program.addCommand(memoryCommand());
  program.addCommand(demoCommand());
  program.addCommand(studioCommand());
  overrideExits(program);
  return program;
}

/** Runs the CLI with `argv` (as process.argv) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version "errors" are successes; commander already printed the usage message.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`backpackflow: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof CliError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(`backpackflow: ${message}\n`);
    return 1;
  }
}
