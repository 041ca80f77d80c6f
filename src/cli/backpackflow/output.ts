import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { colors } from '../colors.js';
import { terminalText } from '../../events/terminal-text.js';
import { shellQuote } from '../../studio/shell.js';

export { colors };

/** Options every data command takes. */
export interface CommonOptions {
  dataDir: string;
  /** Runs in PostgreSQL instead of the data directory (`--database-url`, or BACKPACKFLOW_DATABASE_URL). */
  databaseUrl?: string;
  session: string;
  json?: boolean;
}

const WARNED = Symbol.for('backpackflow.cli.warnings');
/**
 * The warnings printed so far, one set for the process: shared by every copy of this module in it. The bundled `runs`
 * commands (see program.ts) hold a copy, whose warnings and the library's process warnings (printed by the
 * listener in backpackflow.ts, through the unbundled copy) must be printed once each all the same.
 */
const warned: Set<string> = ((globalThis as { [WARNED]?: Set<string> })[WARNED] ??= new Set());

/**
 * Prints a warning on stderr (once per message), e.g. lines of a damaged log that were not served. The message may
 * quote stored text (keys, paths, ids): it is printed through terminalText, one line.
 */
export function warn(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  process.stderr.write(`backpackflow: warning: ${terminalText(message)}\n`);
}

/** Forgets which warnings were printed: for a process that runs `main` more than once (the tests run it in-process). */
export function forgetWarnings(): void {
  warned.clear();
}

/** Prints one JSON document with `--json`, else the human text. */
export function print(options: { json?: boolean }, json: unknown, human: () => string): void {
  const text = options.json ? JSON.stringify(json, null, 2) : human();
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * How a person runs this CLI where it is, for commands we print: in a checkout of the repository (source or a
 * build), `npm run backpackflow --`; installed from npm, `npx backpackflow`, or, when this process runs with tsx's
 * loader (a flow module in TypeScript: the commands that rebuild its flow need it too), `node --import tsx
 * node_modules/.bin/backpackflow`, as the README documents.
 */
export function cliCommand(): string {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  if (existsSync(`${root}tsconfig.json`)) return 'npm run backpackflow --';
  return withTsx() ? 'node --import tsx node_modules/.bin/backpackflow' : 'npx backpackflow';
}

/** Whether this process was started with tsx's loader (`--import tsx`, `--import=tsx`, `--loader tsx`, ...). */
function withTsx(): boolean {
  return process.execArgv.some((arg, i, all) => /^--(import|loader|experimental-loader|require)=tsx(\/|$)/.test(arg) || (/^--(import|loader|experimental-loader|require)$/.test(arg) && /^tsx(\/|$)/.test(all[i + 1] ?? '')));
}

/** Where a command's run is stored: the CLI's `--data-dir`, `--session` and `--database-url` (or its variable). */
export interface CommandPlace {
  dataDir: string;
  session: string;
  databaseUrl?: string;
}

/**
 * A command a person can paste as printed: this CLI ({@link cliCommand}), then `args` and the flags naming `place`
 * when it is not the default (`--data-dir`, or `--database-url` for runs in PostgreSQL, and `--session`), each quoted
 * for a POSIX shell where it needs to be (a data directory with a space, a placeholder such as `<json>`), and control
 * characters shown escaped. A database URL is printed without its password (a shell comment then says so); none is
 * printed when it came from BACKPACKFLOW_DATABASE_URL, which the pasted command reads as this one did.
 */
export function commandLine(args: readonly string[], place?: CommandPlace): string {
  const flags: string[] = [];
  let note = '';
  // An empty URL is no database (the CLI then uses the data directory), as run-store.ts takes it.
  if (place?.databaseUrl) {
    if (place.databaseUrl !== process.env['BACKPACKFLOW_DATABASE_URL']) {
      const shown = withoutPassword(place.databaseUrl);
      flags.push('--database-url', shown.url);
      if (shown.hadPassword) note = '  # with the database password, left out here';
    }
  } else if (place !== undefined && place.dataDir !== '.backpackflow') {
    flags.push('--data-dir', place.dataDir);
  }
  if (place !== undefined && place.session !== 'default') flags.push('--session', place.session);
  return terminalText([cliCommand(), ...[...args, ...flags].map(shellQuote)].join(' ') + note);
}

/** `url` without its password, and whether it had one (a URL that does not parse is printed as it is: the CLI refused it). */
function withoutPassword(url: string): { url: string; hadPassword: boolean } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, hadPassword: false };
  }
  if (parsed.password === '') return { url, hadPassword: false };
  parsed.password = '';
  return { url: parsed.toString(), hadPassword: true };
}

/**
 * What to add to an error importing `file` that is TypeScript which Node cannot load by itself: how to run the CLI so
 * that it can. Empty otherwise.
 */
export function typescriptHint(file: string, error: unknown): string {
  const typescript = (error as NodeJS.ErrnoException)?.code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(file);
  return typescript ? ' (a TypeScript module: run the CLI as `node --import tsx <backpackflow>`, or give its compiled JavaScript)' : '';
}

/** `0.42ms`, `12.5ms`, `1.50s`. */
export function formatMs(ms: number | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(1)}ms`;
  return `${(ms / 1000).toFixed(2)}s`;
}

/** Left-aligned columns separated by two spaces; every cell is data, printed through terminalText. */
export function table(header: string[], unsafeRows: string[][]): string {
  const rows = unsafeRows.map((row) => row.map((cell) => terminalText(cell)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [colors.bold(line(header)), ...rows.map(line)].join('\n');
}
