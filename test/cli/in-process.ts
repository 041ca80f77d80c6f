/**
 * The built command lines run inside the test process, for tests that check what a command prints and its exit code.
 * Starting `node dist/cli/backpackflow.js` costs about 200 ms of CPU, most of it loading modules, and the suite ran
 * it some 200 times (the context command line, `dist/cli/merkle.js`, about 100 ms, some 60 times). In the test
 * process the built modules load once per worker (natively, as the binary loads them, not through vitest's
 * transform), and each command costs only its work.
 *
 * A call sees what a child process with piped output would: the environment and working directory it was given,
 * stdout and stderr that are not terminals (80 columns for help), colors decided from that environment, process
 * warnings on its stderr, no exit code left over. Calls run one at a time, because those are process-wide. What a
 * process loads stays loaded: a flow module (`--modules`, `--flow-module`) is imported once per worker, so a test
 * that rewrites one in place between commands needs `cliProcess`. The real binaries keep their own tests (exit
 * codes, signals, a process that exits when its work is done): `cliProcess` in ./helpers.ts, test/cli/bin.test.ts.
 */
import { Console } from 'node:console';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { createColors } from 'picocolors';

/** What a CLI run did. */
export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

interface BuiltCli {
  main(argv: string[]): Promise<number>;
  colors: Record<string, unknown>;
  forgetWarnings(): void;
  useColor(env: NodeJS.ProcessEnv, isTTY: boolean): boolean;
}

// Node's own loader, not vitest's: the built CLI and the flow modules it imports load as they do in the binary.
const nativeImport = createRequire(import.meta.url)('./native-import.cjs') as (specifier: string) => Promise<any>;

let built: Promise<BuiltCli> | undefined;
let queue: Promise<unknown> = Promise.resolve();

function load(root: string): Promise<BuiltCli> {
  built ??= (async () => {
    const url = (path: string): string => pathToFileURL(join(root, 'dist', 'cli', path)).href;
    const [program, output, colorModule] = await Promise.all([nativeImport(url('backpackflow/program.js')), nativeImport(url('backpackflow/output.js')), nativeImport(url('colors.js'))]);
    return { main: program.main, forgetWarnings: output.forgetWarnings, colors: colorModule.colors, useColor: colorModule.useColor };
  })();
  return built;
}

/** A writable that appends what it is given to `into`. */
function collector(into: string[]): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      into.push(typeof chunk === 'string' ? chunk : chunk.toString());
      done();
    },
  });
}

type Stream = NodeJS.WriteStream;

/** Points `stream`'s write at `into` and makes it look like a pipe; returns the undo. */
function redirect(stream: Stream, into: string[]): () => void {
  const saved = { write: Object.getOwnPropertyDescriptor(stream, 'write'), isTTY: Object.getOwnPropertyDescriptor(stream, 'isTTY'), columns: Object.getOwnPropertyDescriptor(stream, 'columns') };
  Object.defineProperty(stream, 'write', {
    configurable: true,
    writable: true,
    value: (chunk: Uint8Array | string, encoding?: unknown, callback?: unknown): boolean => {
      into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
      return true;
    },
  });
  Object.defineProperty(stream, 'isTTY', { configurable: true, writable: true, value: undefined });
  Object.defineProperty(stream, 'columns', { configurable: true, writable: true, value: undefined });
  return () => {
    for (const [key, descriptor] of Object.entries(saved)) {
      if (descriptor === undefined) delete (stream as unknown as Record<string, unknown>)[key];
      else Object.defineProperty(stream, key, descriptor);
    }
  };
}

/**
 * Prints the process warnings emitted while the command runs into `into`, as Node prints them (the hint about
 * --trace-warnings after the first), instead of the test process's stderr; returns the undo.
 */
function captureWarnings(into: string[]): () => void {
  const listeners = process.listeners('warning');
  process.removeAllListeners('warning');
  let first = true;
  process.on('warning', (warning: Error) => {
    into.push(`(node:${process.pid}) ${warning.name}: ${warning.message}\n`);
    if (first) into.push('(Use `node --trace-warnings ...` to show where the warning was created)\n');
    first = false;
  });
  return () => {
    process.removeAllListeners('warning');
    for (const listener of listeners) process.on('warning', listener);
  };
}

/**
 * Makes `process.exit` throw instead of ending the test process (the command then fails with this message on its
 * stderr); returns the undo.
 */
function refuseExit(): () => void {
  const exit = Object.getOwnPropertyDescriptor(process, 'exit')!;
  Object.defineProperty(process, 'exit', {
    configurable: true,
    writable: true,
    value: (code?: number): never => {
      throw new Error(`process.exit(${code ?? ''}) called while the CLI runs in the test process: return the exit code from main, or test the command with cliProcess`);
    },
  });
  return () => Object.defineProperty(process, 'exit', exit);
}

/** Replaces process.env's entries with `env`'s; returns the undo. */
function swapEnv(env: NodeJS.ProcessEnv): () => void {
  const saved = { ...process.env };
  const assign = (to: NodeJS.ProcessEnv): void => {
    for (const key of Object.keys(process.env)) if (!(key in to)) delete process.env[key];
    for (const [key, value] of Object.entries(to)) if (value !== undefined) process.env[key] = value;
  };
  assign(env);
  return () => assign(saved);
}

/**
 * Runs `command` in this process as a child with `env` as its whole environment and `cwd` as its working directory
 * would run: output that is not a terminal, captured; no exit code left over. One at a time.
 */
function isolated(cwd: string, env: NodeJS.ProcessEnv, command: () => Promise<number>): Promise<Result> {
  const turn = queue.then(async () => {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const undo: Array<() => void> = [];
    const savedExitCode = process.exitCode;
    const savedCwd = process.cwd();
    const savedConsole = globalThis.console;
    try {
      undo.push(swapEnv(env));
      process.chdir(cwd);
      undo.push(redirect(process.stdout, stdout), redirect(process.stderr, stderr), captureWarnings(stderr));
      globalThis.console = new Console({ stdout: collector(stdout), stderr: collector(stderr) });
      process.exitCode = undefined;
      undo.push(refuseExit());
      const code = await command();
      // Warnings are emitted on the next tick: let the last ones arrive.
      await new Promise((resolve) => setImmediate(resolve));
      return { code, stdout: stdout.join(''), stderr: stderr.join('') };
    } finally {
      globalThis.console = savedConsole;
      for (const step of undo.reverse()) step();
      process.chdir(savedCwd);
      process.exitCode = savedExitCode;
    }
  });
  queue = turn.catch(() => undefined);
  return turn;
}

/**
 * Runs the built `backpackflow` CLI's `main` with `args` in this process, with `env` as its whole environment and
 * `cwd` as its working directory; resolves with what it printed and the exit code the binary would exit with.
 */
export async function runInProcess(root: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Result> {
  const cli = await load(root);
  return isolated(cwd, env, async () => {
    // The color choice a process makes once, when it loads the CLI, and the warnings it printed once each.
    const savedColors = { ...cli.colors };
    Object.assign(cli.colors, createColors(cli.useColor(env, false)));
    cli.forgetWarnings();
    try {
      return await cli.main([process.execPath, join(root, 'dist', 'cli', 'backpackflow.js'), ...args]);
    } finally {
      Object.assign(cli.colors, savedColors);
    }
  });
}

let loads = 0;

/**
 * Runs the built context command line (`dist/cli/merkle.js`: one bundled module whose command tree and options
 * live for the life of a process) with `args` in this process: a new instance of the bundle for each call, loaded
 * in `cwd` with `env`, as a new process would load it.
 */
export function runMerkleInProcess(root: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Result> {
  return isolated(cwd, env, async () => {
    const bundle = pathToFileURL(join(root, 'dist', 'cli', 'context-program.js'));
    bundle.search = `?instance=${++loads}`;
    const { runContextCli } = await nativeImport(bundle.href);
    return runContextCli([process.execPath, join(root, 'dist', 'cli', 'merkle.js'), ...args], 'merkle');
  });
}
