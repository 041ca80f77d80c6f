/** `backpackflow studio`: the web UI over the run store, until Ctrl-C. The server module is loaded only here. */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { isValidId } from '../../store/index.js';
import { CliError, UsageError } from './errors.js';
import { colors as c } from './output.js';
import { terminalText as t } from '../../events/terminal-text.js';

interface StudioCommandOptions {
  dataDir: string;
  databaseUrl?: string;
  session?: string;
  workspace?: string;
  port: number;
  host: string;
  open?: boolean;
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new UsageError(`--port must be an integer 0..65535 (0: any free port), got '${value}'`);
  return n;
}

/** Opens `url` with the desktop's browser; says so when it cannot (the server keeps running either way). */
function openBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
  child.on('error', (error) => process.stderr.write(`backpackflow studio: could not open a browser (${command}: ${error.message}); open the URL above\n`));
  child.unref();
}

/** `url` without its `?token=`. */
function withoutToken(url: string): string {
  const bare = new URL(url);
  bare.searchParams.delete('token');
  return bare.toString();
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilStopped(): Promise<void> {
  return new Promise((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      done();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** The `studio` command. */
export function studioCommand(): Command {
  return new Command('studio')
    .description('a local web UI over the stored runs: trace, events, state at a step with its writers, diff, blame, memory; answer, resume and fork runs; a workspace\'s context')
    .option('-d, --data-dir <dir>', 'data directory', '.backpackflow')
    .addOption(new Option('--database-url <url>', 'show the runs and memory of this PostgreSQL database instead of the data directory').env('BACKPACKFLOW_DATABASE_URL'))
    .option('-s, --session <key>', 'list only this session and open its runs (default: list every session)')
    .option('-w, --workspace <dir>', "show this workspace's context store (frames, heads, stale markers; read-only)")
    .option('-p, --port <n>', 'port to listen on (0: any free port)', port, 4820)
    .option('--host <address>', 'address to bind; anything but loopback requires the printed token for every request', '127.0.0.1')
    .option('--open', 'open the page in the default browser, without the token (it only reads there, and off loopback shows nothing: open the printed URL)')
    .action(async (options: StudioCommandOptions) => {
      if (options.session !== undefined && !isValidId(options.session)) {
        throw new UsageError(`invalid --session '${options.session}': use letters, digits, '.', '_' and '-'`);
      }
      const workspace = options.workspace === undefined ? undefined : resolve(options.workspace);
      if (workspace !== undefined && !statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`--workspace ${workspace} is not a directory`);
      const { startStudio } = await import('../../studio/server.js');
      const { isLoopbackHost } = await import('../../studio/guard.js');
      const dataDir = resolve(options.dataDir);
      let studio: Awaited<ReturnType<typeof startStudio>>;
      try {
        studio = await startStudio({ dataDir, databaseUrl: options.databaseUrl || undefined, session: options.session, workspace, port: options.port, host: options.host });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') throw new CliError(`port ${options.port} on ${options.host} is in use: pass --port <another> (or --port 0 for any free one)`);
        if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new CliError(`cannot bind ${options.host}: not an address of this machine`);
        throw error;
      }
      const lines = [
        `${c.bold('backpackflow studio')} ${studio.url}`,
        c.dim(t(`data: ${options.databaseUrl ? studio.location : dataDir}${options.session ? ` · session ${options.session}` : ''}${workspace ? ` · workspace ${workspace}` : ''}`)),
      ];
      if (isLoopbackHost(options.host)) lines.push(c.dim('the token in this URL lets the page answer, resume and fork runs; without it the page only reads'));
      else lines.push(c.yellow(`bound to ${options.host}: every request needs the token in this URL; share it only with people who may read and steer these runs`));
      if (options.open) {
        // Without its token: a browser's command line (xdg-open's, and a browser it starts keeps it for its life) is
        // readable by every user of this machine (ps), and the token is what lets a page answer, resume and fork.
        const needs = isLoopbackHost(options.host) ? 'to answer, resume or fork' : 'to see anything (off loopback every request needs it)';
        lines.push(c.dim(`--open opened the page without the token (command lines are visible to other users): open the URL above ${needs}`));
      }
      lines.push(c.dim('Ctrl-C stops it'));
      process.stdout.write(`${lines.join('\n')}\n`);
      if (options.open) openBrowser(withoutToken(studio.url));
      await untilStopped();
      await studio.close();
    });
}
