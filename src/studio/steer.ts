/**
 * Resuming and forking runs from the studio. Each is the CLI's own command (`backpackflow runs resume` or
 * `runs fork`, with `--json`) in a child process, so a run steered from the studio is recorded exactly like one
 * steered from a terminal: the flow is built from the run's recorded recipe (flow module or flow file, and node
 * modules), the writer lock applies, and the flow's code runs outside the server (a flow that crashes, hangs, exits
 * or grows huge cannot take the studio down, and each resume imports the flow's modules as they are on disk).
 *
 * Before a child starts, the studio checks what it can without writing: the run exists and can be resumed (or the
 * step forked), no other resume of it is under way (409), the answer matches the recorded schema (422 with each JSON
 * pointer), and the flow can be built from what was recorded; otherwise the reply names the CLI command to run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { newRunId } from '../events/index.js';
import { checkAnswer, recordedSchemaCheck } from '../nodes/index.js';
import { FileRunStore, idProblem, redact } from '../store/index.js';
import { readRecipe } from '../cli/backpackflow/recipe.js';
import { cliCommand } from '../cli/backpackflow/output.js';
import { HttpError } from './http.js';
import { storeRef, type RunReader, type RunRef } from './run-reader.js';
import { shellQuote } from './shell.js';

/** One resume or fork the studio started. */
export interface SteerJob {
  kind: 'resume' | 'fork';
  session: string;
  /** The run the job writes: the resumed run, or the new run of a fork. */
  runId: string;
  /** For a fork: the run and step it starts from. */
  from?: { runId: string; step: number };
  /** `running` while the child runs; then how the run's process ended (`failed`: see `error`). */
  state: 'running' | 'completed' | 'waiting' | 'failed';
  startedAt: number;
  endedAt?: number;
  /** The command the child runs (as a person would type it). */
  command: string;
  exitCode?: number | null;
  /** What went wrong (the CLI's message, redacted like everything the store writes). */
  error?: string;
  /** The CLI's `--json` result when it succeeded. */
  result?: unknown;
}

/** A problem of an answer, at a JSON pointer into it (`''`: the answer itself). */
export interface AnswerProblem {
  path: string;
  message: string;
}

/** Whether the studio can build a run's flow, and the CLI commands that resume and fork it. */
export interface SteerInfo {
  buildable: boolean;
  /** How the flow is built (`flow module <file>#<export>`, `flow file <path>`), or why it cannot be. */
  source: string;
  /** `runs resume` for this run, without `--input` (the page adds the answer). */
  resumeCommand: string;
  /** `runs fork` for this run, without `--step`. */
  forkCommand: string;
}

/** Options of {@link Steering}. */
export interface SteeringOptions {
  /** The command that runs the CLI (argv before its arguments); default: this package's CLI with this Node. */
  cli?: readonly string[];
  /** How long a write request waits for its child before answering 202 with the job still running (default 3 s). */
  settleMs?: number;
}

const OUTPUT_LIMIT = 64 * 1024;

/**
 * The CLI next to this module, run by the Node running the studio. From the sources (`tsx`, tests) the CLI is
 * TypeScript: the child gets tsx's loader (the studio's own when it has one, as under `npm run backpackflow`).
 */
export function defaultCliInvocation(): string[] {
  const here = fileURLToPath(import.meta.url);
  const ts = here.endsWith('.ts');
  const entry = join(dirname(here), '..', 'cli', ts ? 'backpackflow.ts' : 'backpackflow.js');
  const inherited = process.execArgv.some((a) => a.includes('tsx')) ? [...process.execArgv] : [];
  const loader = ts && inherited.length === 0 ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href] : [];
  return [process.execPath, ...inherited, ...loader, entry];
}

/**
 * Where the CLI finds the studio's runs: the data directory, or the database. The database URL goes to the child in
 * its environment (BACKPACKFLOW_DATABASE_URL), never on its command line, where other users of the machine could
 * read its password.
 */
export interface CliLocation {
  dataDir: string;
  databaseUrl?: string;
}

/** The name of the environment variable the CLI reads the database URL from. */
const DATABASE_URL_ENV = 'BACKPACKFLOW_DATABASE_URL';

/** The studio's resumes and forks: at most one active job per run, each a CLI child process. */
export class Steering {
  private readonly jobs = new Map<string, SteerJob>();
  private readonly children = new Map<string, ChildProcess>();
  private readonly cli: readonly string[];
  private readonly settleMs: number;

  constructor(
    private readonly reader: RunReader,
    private readonly where: CliLocation,
    options: SteeringOptions = {},
  ) {
    this.cli = options.cli ?? defaultCliInvocation();
    this.settleMs = options.settleMs ?? 3000;
  }

  /** The latest job the studio ran on `ref`, if any. */
  job(ref: RunRef): SteerJob | undefined {
    return this.jobs.get(key(ref));
  }

  /** The arguments that point the CLI at the run's store and session (the database URL itself travels in the environment). */
  private location(session: string): string[] {
    return [...(this.where.databaseUrl === undefined ? ['--data-dir', this.where.dataDir] : []), ...(session === 'default' ? [] : ['--session', session])];
  }

  /** How `ref`'s flow would be built, and the commands that resume and fork it from a terminal. */
  async describe(ref: RunRef): Promise<SteerInfo> {
    // Shown to a person: on Postgres, the database without its password (they know it, the page need not).
    const shown = this.where.databaseUrl === undefined ? this.location(ref.session) : ['--database-url', this.reader.location, ...this.location(ref.session)];
    const where = shown.map(shellQuote).join(' ');
    const { buildable, source, flags } = await this.flowSource(ref);
    const extra = flags ? ` ${flags}` : '';
    return {
      buildable,
      source,
      resumeCommand: `${cliCommand()} runs resume ${shellQuote(ref.runId)} ${where}${extra}`,
      forkCommand: `${cliCommand()} runs fork ${shellQuote(ref.runId)} ${where}${extra}`,
    };
  }

  /**
   * What the run's recipe says about building its flow, checked without importing anything: a flow module that
   * exists, or a recorded flow file, and the node modules it names.
   */
  private async flowSource(ref: RunRef): Promise<{ buildable: boolean; source: string; flags?: string }> {
    const store = this.reader.store;
    let recipe: Awaited<ReturnType<typeof readRecipe>>;
    let flowRecorded: boolean;
    try {
      recipe = await readRecipe(store, storeRef(ref));
      flowRecorded = recipe?.flow.kind !== 'module' && (await store.loadDocument(storeRef(ref), 'flow')) !== undefined;
    } catch (error) {
      return { buildable: false, source: (error as Error).message, flags: '--flow-module <file>#<export>' };
    }
    const missing = (recipe?.modules ?? []).filter((m) => !existsSync(m));
    if (missing.length > 0) return { buildable: false, source: `the node modules recorded with the run are gone: ${missing.join(', ')}`, flags: '--modules <file...>' };
    // A TypeScript module needs a loader the CLI this studio runs (the built one under plain node) may not have.
    const typescript = [...(recipe?.modules ?? []), ...(recipe?.flow.kind === 'module' ? [recipe.flow.module] : [])].filter((m) => /\.[cm]?ts$/.test(m));
    if (typescript.length > 0 && !this.cli.some((arg) => arg.includes('tsx'))) {
      return {
        buildable: false,
        source: `the run's modules are TypeScript (${typescript.join(', ')}), which this studio's CLI cannot import: start the studio through tsx (npm run backpackflow -- studio, or node --import tsx <backpackflow> studio)`,
        flags: '--modules <file...>',
      };
    }
    if (recipe?.flow.kind === 'module') {
      const spec = `${recipe.flow.module}#${recipe.flow.export}`;
      if (!existsSync(recipe.flow.module)) return { buildable: false, source: `the run's flow module ${recipe.flow.module} is gone`, flags: '--flow-module <file>#<export>' };
      return { buildable: true, source: `flow module ${spec}` };
    }
    if (flowRecorded) {
      const source = store instanceof FileRunStore ? `flow file ${store.documentPath(storeRef(ref), 'flow')}` : `the flow config recorded with the run in ${store.location}`;
      return { buildable: true, source };
    }
    return { buildable: false, source: 'no flow was recorded with this run (it was started in code, not by the CLI)', flags: '--flow-module <file>#<export>' };
  }

  /**
   * Resumes `ref` with `answer` (required when it waits, refused otherwise) to `pause`, the pause the page showed
   * (InterruptInfo.pause): one another person answered meanwhile, the run now asking something else, is a 409 and
   * nothing is written (the child's resume checks it again under the run's lock). Resolves when the child has ended
   * or after the settle time, with the job.
   */
  async resume(ref: RunRef, answer: unknown, pause?: number): Promise<SteerJob> {
    const release = this.reserve(ref, 'resume');
    try {
      const meta = await this.reader.meta(ref);
      if (meta.status === 'completed') throw new HttpError(409, `run '${ref.runId}' already completed: fork it from a step to run it again`, 'runId');
      if (meta.status === 'running' || (await this.reader.store.writerAlive(storeRef(ref)))) {
        throw new HttpError(409, `run '${ref.runId}' is being written by a live process right now: wait until it stops`, 'runId');
      }
      if (meta.status === 'waiting') {
        if (answer === undefined) throw new AnswerError(`run '${ref.runId}' is waiting for an answer`, [{ path: '', message: 'an answer is required' }]);
        const waitsFor = meta.interrupt?.pause;
        if (waitsFor !== undefined && pause !== waitsFor) {
          throw new HttpError(
            409,
            pause === undefined
              ? `the answer must name the pause it is to (pause: ${waitsFor}, the question the run asks now)`
              : `run '${ref.runId}' no longer waits for pause ${pause}: another answer went on, and it now asks another question (pause ${waitsFor}); read it before you answer`,
            'pause',
          );
        }
        const problems = answerProblems(meta.interrupt?.schema, answer);
        if (problems.length > 0) throw new AnswerError(`the answer does not match the schema of node '${meta.interrupt?.nodeId}'`, problems);
      } else if (answer !== undefined) {
        throw new HttpError(409, `run '${ref.runId}' is ${meta.status}, not waiting for an answer: resume it without one`, 'answer');
      }
      await this.requireBuildable(ref, 'resume');
      const answering = answer !== undefined && pause !== undefined ? ['--answering', String(pause)] : [];
      const args = ['runs', 'resume', ref.runId, ...this.location(ref.session), ...answering];
      return await this.start(release, { kind: 'resume', session: ref.session, runId: ref.runId }, args, answer);
    } catch (error) {
      release.abandon();
      throw error;
    }
  }

  /** Starts a new run from `step` of `ref`; resolves like {@link resume}, with the new run's job. */
  async fork(ref: RunRef, step: number, requestedId: string | undefined): Promise<SteerJob> {
    const forkId = requestedId ?? newRunId();
    const problem = idProblem(forkId);
    if (problem !== undefined) throw new HttpError(400, `invalid newRunId ${JSON.stringify(forkId)}: ${problem}`, 'newRunId');
    const target = { session: ref.session, runId: forkId };
    const release = this.reserve(target, 'fork');
    try {
      if (await this.reader.store.hasEvents(storeRef(target))) throw new HttpError(409, `run '${forkId}' already exists: choose another id for the fork`, 'newRunId');
      const state = await this.reader.state(ref, step);
      if (state.position.length === 0) throw new HttpError(409, `run '${ref.runId}' had ended at step ${step}: there is nothing to run from there`, 'step');
      await this.requireBuildable(ref, 'fork');
      const args = ['runs', 'fork', ref.runId, '--step', String(step), '--new-run-id', forkId, ...this.location(ref.session)];
      return await this.start(release, { kind: 'fork', session: ref.session, runId: forkId, from: { runId: ref.runId, step } }, args, undefined);
    } catch (error) {
      release.abandon();
      throw error;
    }
  }

  /** Ends the children still running (their runs stop where they are, resumable) and waits for them. */
  async close(): Promise<void> {
    const exits = [...this.children.values()].map((child) => new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('close', () => done());
      child.kill('SIGTERM');
    }));
    await Promise.all(exits);
  }

  private async requireBuildable(ref: RunRef, verb: 'resume' | 'fork'): Promise<void> {
    const info = await this.describe(ref);
    if (info.buildable) return;
    const command = verb === 'resume' ? info.resumeCommand : info.forkCommand;
    throw new CommandError(`the studio cannot build the flow of run '${ref.runId}' (${info.source}): ${verb} it from a terminal`, command);
  }

  /** Claims the run for one job, synchronously, so that a second request for it while the first is checked is a 409. */
  private reserve(ref: RunRef, kind: SteerJob['kind']): { abandon(): void } {
    const k = key(ref);
    const current = this.jobs.get(k);
    if (current?.state === 'running' || this.children.has(k) || this.pending.has(k)) {
      const under = this.pending.get(k) ?? current?.kind ?? kind;
      throw new HttpError(409, `a ${under} of run '${ref.runId}' started from the studio is still running: wait for it to end`, 'runId');
    }
    this.pending.set(k, kind);
    return { abandon: () => this.pending.delete(k) };
  }

  /** The runs claimed by a job being checked or started, with the job's kind. */
  private readonly pending = new Map<string, SteerJob['kind']>();

  private async start(release: { abandon(): void }, base: Pick<SteerJob, 'kind' | 'session' | 'runId' | 'from'>, args: string[], answer: unknown): Promise<SteerJob> {
    const k = key(base);
    // The answer goes through the child's standard input: never on its command line (where other users of the machine
    // could read it), nor in a file (which a studio killed meanwhile would leave behind).
    const input = answer === undefined ? undefined : JSON.stringify(answer);
    if (input !== undefined) args = [...args, '--input', '@-'];
    const shown = [cliCommand(), ...args.map((a) => (a.startsWith('@') ? "'<answer>'" : shellQuote(a)))].join(' ');
    const job: SteerJob = { ...base, state: 'running', startedAt: Date.now(), command: shown };
    // The child works on the studio's store: its database through the environment, or (files) none from the environment.
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    if (this.where.databaseUrl === undefined) delete env[DATABASE_URL_ENV];
    else env[DATABASE_URL_ENV] = this.where.databaseUrl;
    const child = spawn(this.cli[0]!, [...this.cli.slice(1), ...args, '--json'], { env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) {
      // A child that exits before reading it all (a flow that fails to load) closes the pipe: not an error here.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(input);
    }
    this.jobs.set(k, job);
    this.children.set(k, child);
    release.abandon();
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout = (stdout + d).slice(-OUTPUT_LIMIT)));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-OUTPUT_LIMIT)));
    const ended = new Promise<void>((done) => {
      const finish = (code: number | null, failure?: Error): void => {
        if (job.endedAt !== undefined) return;
        this.children.delete(k);
        job.endedAt = Date.now();
        job.exitCode = code;
        let result: { status?: unknown } | undefined;
        try {
          result = code === 0 ? (JSON.parse(stdout) as { status?: unknown }) : undefined;
        } catch {
          result = undefined;
        }
        if (result && (result.status === 'completed' || result.status === 'waiting')) {
          job.state = result.status;
          job.result = redact(result).value;
        } else {
          job.state = 'failed';
          const message = failure?.message ?? (stderr.trim().replace(/^backpackflow: /gm, '') || `the CLI exited with code ${code} and printed no error`);
          job.error = redact(message).value as string;
        }
        done();
      };
      child.once('error', (error) => finish(null, error));
      child.once('close', (code) => finish(code));
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((done) => (timer = setTimeout(done, this.settleMs)))]);
    clearTimeout(timer);
    return job;
  }
}

function key(ref: { session: string; runId: string }): string {
  return `${ref.session}/${ref.runId}`;
}

/** The answer's problems against the interrupt's recorded JSON Schema (none when it recorded no schema). */
export function answerProblems(schema: Record<string, unknown> | undefined, answer: unknown): AnswerProblem[] {
  if (schema === undefined) return [];
  let checked: ReturnType<typeof checkAnswer>;
  try {
    // Too large to walk here (see recordedSchemaCheck), or a schema zod cannot rebuild: the node's own check, when it
    // runs again in the child, has the last word.
    const zod = recordedSchemaCheck(schema);
    if (zod === undefined) return [];
    checked = checkAnswer(zod, answer);
  } catch {
    return [];
  }
  return checked.ok ? [] : checked.problems;
}

/** An answer that does not match the schema: a 422 with `problems`, each at its JSON pointer. */
class AnswerError extends HttpError {
  constructor(message: string, problems: AnswerProblem[]) {
    super(422, `${message}: ${problems.map((p) => `${p.path || '(the answer)'}: ${p.message}`).join('; ')}`, 'answer', { problems });
  }
}

/** A write the studio cannot do itself: a 409 with the `command` that does it from a terminal. */
class CommandError extends HttpError {
  constructor(message: string, command: string) {
    super(409, message, 'flow', { command });
  }
}
