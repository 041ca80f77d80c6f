/** The options every command over stored runs takes. A light module: commands' help loads it, not the stores. */
import { Option, type Command } from 'commander';
import { validId } from './arguments.js';

/** Adds `--data-dir`, `--database-url`, `--session` and `--json` to a command. */
export function common(command: Command, json = true): Command {
  command
    .option('-d, --data-dir <dir>', 'data directory', '.backpackflow')
    .addOption(new Option('--database-url <url>', 'store runs in PostgreSQL instead of the data directory').env('BACKPACKFLOW_DATABASE_URL'))
    .option('-s, --session <key>', 'session', validId('--session'), 'default');
  if (json) command.option('--json', 'print one JSON document');
  return command;
}
