/**
 * `npm run bench:context` (after `npm run build`): the context engine on a generated tree of 100,000 files in 1,000
 * directories, beside git on the same tree in the same run.
 *
 * Main rows (issue 15): the whole command `backpackflow context scan` (the built CLI, `node dist/cli/backpackflow.js`)
 * against the whole command `git status --porcelain`, as processes, taken in turn (A B A B ...), each pair's ratio
 * computed and the median ratio reported (the machine's speed drifts; a pair shares it), for CPU time (user + system,
 * every thread, as bash's `times` reports a finished child) and for wall time. Once with nothing changed, once with
 * one file changed before each pair (a different file each time; both commands see it for the first time). Git runs
 * the fair way: a normal repository with every file committed, default configuration (no global or system config:
 * GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1; so core.preloadIndex is on and git stats the index in threads,
 * and there is no fsmonitor and no untracked cache; gc.auto=0, see GIT_ENV), `.merkle/` in `.git/info/exclude`.
 *
 * Every process runs without NODE_OPTIONS and NODE_EXTRA_CA_CERTS (see withoutNodeStartupSettings; a row shows
 * what they cost where they are set).
 *
 * Floor rows, the same way against git status: what any Node process pays before doing the work (`node -e 0`), and
 * a Node script that does nothing but lstat the same 100,000 files, once with `fs.lstatSync` on whole paths and once
 * with the engine's own lstat (`statOne`: Node's binding, paths relative to the workspace as the scan gives them).
 * The scan cannot cost less than the second; git status costs about that much in all.
 *
 * The same two rows again with the tree journal near the size at which it is folded into the tree file: the most
 * of it an unchanged scan reads (the rows above start with an empty journal).
 *
 * Secondary rows: the same engine in-process (an engine already open, then one opened just before each scan), a
 * first scan against `git add -A && git write-tree`, frames and synthesis.
 *
 * Environment: BENCH_DIRS / BENCH_FILES_PER_DIR shrink the tree for a quick run; BENCH_PAIRS sets the pairs per
 * process row (default 11).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ContextEngine, loadHashBackend } from '../src/context/index.js';
import { treeCodec } from '../src/context/tree-journal.js';
import { median, printTable, timeMedianMs, withoutNodeStartupSettings, type BenchRow } from './harness.js';

const DIRS = Number(process.env.BENCH_DIRS ?? 1000);
const FILES_PER_DIR = Number(process.env.BENCH_FILES_PER_DIR ?? 100);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 11);
const CLI = join(import.meta.dirname, '..', 'dist', 'cli', 'backpackflow.js');
if (!existsSync(CLI)) {
  console.error('bench:context times the built CLI: run `npm run build` first');
  process.exit(2);
}

/**
 * Git with its default configuration: no global or system config file is read. One setting differs, gc.auto=0: a
 * commit of 100,000 files otherwise starts a background `git gc` that writes into `.git` long after the bench (and
 * its clean-up) and competes with the timed runs; status never runs it.
 */
const GIT_ENV = {
  ...withoutNodeStartupSettings(process.env),
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'gc.auto',
  GIT_CONFIG_VALUE_0: '0',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@localhost',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@localhost',
};

function git(root: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 28, env: GIT_ENV });
}

/** Wall and CPU time (user + system of every thread, as bash's `times` reports) of one whole command as a process, in ms; throws when it fails. */
function processRun(root: string, command: string, args: string[], env: NodeJS.ProcessEnv = GIT_ENV): { wall: number; cpu: number } {
  const start = performance.now();
  const result = spawnSync('bash', ['-c', '"$@" >/dev/null; status=$?; times; exit $status', 'bash', command, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env,
  });
  const wall = performance.now() - start;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  // `times` prints the shell's user and system time, then its children's: "0m0.153s 0m0.181s".
  const children = result.stdout.trim().split('\n').at(-1)!.match(/(\d+)m([\d.]+)s (\d+)m([\d.]+)s/);
  if (children === null) throw new Error(`cannot read the CPU time of ${command} from: ${result.stdout}`);
  const [, um, us, sm, ss] = children;
  return { wall, cpu: (Number(um) * 60 + Number(us) + Number(sm) * 60 + Number(ss)) * 1000 };
}

interface PairResult {
  /** Medians of the command's wall and CPU ms, of git status's, and of the per-pair ratios. */
  ours: { wall: number; cpu: number };
  theirs: { wall: number; cpu: number };
  ratio: { wall: number; cpu: number };
}

/**
 * `pairs` pairs of (command, git status) as processes, in turn, after `before` for each pair (the order inside a
 * pair alternates); returns both commands' medians and the medians of the per-pair ratios.
 */
function processPairs(root: string, pairs: number, command: string[], before: () => void = () => undefined, env: NodeJS.ProcessEnv = GIT_ENV): PairResult {
  const ours: { wall: number; cpu: number }[] = [];
  const theirs: { wall: number; cpu: number }[] = [];
  const run = () => processRun(root, command[0]!, command.slice(1), env);
  const status = () => processRun(root, 'git', ['status', '--porcelain']);
  for (let i = 0; i < pairs; i++) {
    before();
    if (i % 2 === 0) {
      ours.push(run());
      theirs.push(status());
    } else {
      theirs.push(status());
      ours.push(run());
    }
  }
  const of = (list: { wall: number; cpu: number }[]) => ({ wall: median(list.map((t) => t.wall)), cpu: median(list.map((t) => t.cpu)) });
  return {
    ours: of(ours),
    theirs: of(theirs),
    ratio: { wall: median(ours.map((t, i) => t.wall / theirs[i]!.wall)), cpu: median(ours.map((t, i) => t.cpu / theirs[i]!.cpu)) },
  };
}

/** A Node script that lstats every generated file: `fs.lstatSync` on whole paths, or the engine's `statOne` on paths relative to the workspace. */
function lstatScript(kind: 'fs' | 'engine'): string {
  const statOne = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'context', 'stat-pool.js')).href;
  const loop = `for (let d = 0; d < ${DIRS}; d++) { const dir = 'pkg' + String(d).padStart(4, '0'); for (let f = 0; f < ${FILES_PER_DIR}; f++) STAT(dir + '/file' + f + '.ts'); }`;
  return kind === 'fs'
    ? `import { lstatSync } from 'node:fs'; const root = process.cwd(); ${loop.replace('STAT(', 'lstatSync(root + "/" + ')}`
    : `import { statOne } from '${statOne}'; const out = new Float64Array(4); ${loop.replace('STAT(dir', 'statOne(dir').replace(".ts');", ".ts', out, 0);")}`;
}

function generate(root: string): void {
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `pkg${String(d).padStart(4, '0')}`);
    mkdirSync(dir);
    for (let f = 0; f < FILES_PER_DIR; f++) {
      writeFileSync(join(dir, `file${f}.ts`), `// ${d}/${f}\nexport const value${f} = ${d * FILES_PER_DIR + f};\n`.repeat(1 + (f % 5)));
    }
  }
}

async function timeRuns(runs: number, before: () => unknown, fn: () => unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    await before();
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

/** Per run: `before`, then time `a`, then time `b`; returns both medians. */
async function alternate(runs: number, before: () => unknown, a: () => unknown, b: () => unknown): Promise<[number, number]> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < runs; i++) {
    await before();
    let start = performance.now();
    await a();
    ta.push(performance.now() - start);
    start = performance.now();
    await b();
    tb.push(performance.now() - start);
  }
  return [median(ta), median(tb)];
}

function ratioRow(name: string, ours: number, theirs: number, target: number, gitLabel: string): BenchRow {
  return {
    name,
    median: ours / theirs,
    unit: 'x git',
    target,
    anchor: `merkle ${ours.toFixed(0)} ms, ${gitLabel} ${theirs.toFixed(0)} ms`,
  };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'merkle-bench-'));
  try {
    let t = performance.now();
    generate(root);
    console.log(`generated ${DIRS * FILES_PER_DIR} files in ${DIRS} directories under ${root} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const freshRepo = () => {
      rmSync(join(root, '.git'), { recursive: true, force: true });
      git(root, 'init', '-q');
      appendFileSync(join(root, '.git', 'info', 'exclude'), '.merkle/\n');
    };

    // First scan: everything read and hashed (a fresh store each run), against git hashing and storing every blob
    // into a fresh repository and writing the tree.
    const gitFirst = await timeRuns(3, freshRepo, () => git(root, 'add', '-A') && git(root, 'write-tree'));
    const oursFirst = await timeRuns(
      3,
      () => rmSync(join(root, '.merkle'), { recursive: true, force: true }),
      async () => (await ContextEngine.open(root)).scan(),
    );

    // The main rows: whole commands as processes, on a normal repository with every file committed.
    git(root, 'commit', '-q', '-m', 'bench tree');
    // The first scans and git's objects leave hundreds of MB of dirty pages: written back now, not by the kernel in
    // the middle of the process rows (it inflated both sides' system time and moved the ratios by up to 0.3x).
    execFileSync('sync');
    const scanCommand = [process.execPath, CLI, 'context', 'scan'];
    processRun(root, scanCommand[0]!, scanCommand.slice(1));
    processRun(root, 'git', ['status', '--porcelain']);
    const cliClean = processPairs(root, PAIRS, scanCommand);
    let edits = 0;
    const editOne = () => appendFileSync(join(root, `pkg${String(edits++ % DIRS).padStart(4, '0')}`, 'file2.ts'), '// edit\n');
    const cliOne = processPairs(root, PAIRS, scanCommand, editOne);
    git(root, 'status', '--porcelain');

    // The same two rows with the tree journal at 90% of the size at which it is folded into the tree file (the most
    // an unchanged scan ever reads of it): one-file changes, each scanned and journaled, until it is that large.
    const journal = join(root, '.merkle', 'tree.journal');
    const compactAt = Math.max(64 * 1024, statSync(join(root, '.merkle', 'tree')).size * treeCodec(await loadHashBackend()).compactRatio!);
    const filler = await ContextEngine.open(root);
    let journalEntries = 0;
    while ((statSync(journal, { throwIfNoEntry: false })?.size ?? 0) < 0.9 * compactAt) {
      const file = `pkg${String(journalEntries++ % DIRS).padStart(4, '0')}/file3.ts`;
      appendFileSync(join(root, file), '// journal\n');
      await filler.scan({ paths: [file] });
    }
    await filler.close();
    execFileSync('sync');
    const journalLabel = `tree journal near compaction (${journalEntries} entries, ${(statSync(journal).size / 1024).toFixed(0)} KB)`;
    processRun(root, scanCommand[0]!, scanCommand.slice(1));
    git(root, 'status', '--porcelain');
    const cliJournalClean = processPairs(root, PAIRS, scanCommand);
    const cliJournalOne = processPairs(root, PAIRS, scanCommand, editOne);
    git(root, 'status', '--porcelain');
    const nodeStart = processPairs(root, PAIRS, [process.execPath, '-e', '0']);
    const machineEnv = { ...GIT_ENV, NODE_OPTIONS: process.env.NODE_OPTIONS, NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS };
    const nodeStartHere = process.env.NODE_OPTIONS === undefined && process.env.NODE_EXTRA_CA_CERTS === undefined ? undefined : processPairs(root, PAIRS, [process.execPath, '-e', '0'], undefined, machineEnv);
    const floorFs = processPairs(root, PAIRS, [process.execPath, '--input-type=module', '-e', lstatScript('fs')]);
    const floorEngine = processPairs(root, PAIRS, [process.execPath, '--input-type=module', '-e', lstatScript('engine')]);

    // Rescan with nothing changed: stat cache against git's index. Runs alternate between git and the engine so
    // that load from other processes hits both alike.
    const engine = await ContextEngine.open(root);
    await engine.scan();
    git(root, 'status', '--porcelain');
    const [gitClean, oursClean] = await alternate(9, () => undefined, () => git(root, 'status', '--porcelain'), () => engine.scan());

    // The same rescan by an engine opened just before it (as one `merkle scan` process does, minus Node start-up):
    // the stored tree is read and verified from disk first. Reported for information; the target is the resident case.
    const [, oursColdClean] = await alternate(
      5,
      () => undefined,
      () => git(root, 'status', '--porcelain'),
      async () => {
        const cold = await ContextEngine.open(root);
        await cold.scan();
        await cold.close();
      },
    );

    // Rescan after changing one file (a different file each run), seen by git status and then by the engine.
    let n = 0;
    const touch = () => appendFileSync(join(root, `pkg${String(n++ % DIRS).padStart(4, '0')}`, 'file1.ts'), '// edit\n');
    const [gitOne, oursOne] = await alternate(9, touch, () => git(root, 'status', '--porcelain'), () => engine.scan());
    await engine.scan();

    // Frames: one per directory, then a view and a whole-tree synthesis.
    await engine.registerAgent({ agentId: 'writer', role: 'writer' });
    await engine.registerAgent({ agentId: 'synth', role: 'synthesis' });
    t = performance.now();
    for (let d = 0; d < DIRS; d++) {
      await engine.putFrame(`pkg${String(d).padStart(4, '0')}/file0.ts`, { type: 'summary', content: `summary of package ${d}` }, 'writer');
    }
    const putMs = (performance.now() - t) / DIRS;
    const target = 'pkg0000/file0.ts';
    for (let i = 0; i < 20; i++) await engine.putFrame(target, { type: i % 2 ? 'note' : 'review', content: `frame ${i}` }, 'writer');
    const view = { maxFrames: 5, types: ['note', 'summary'], ordering: 'recency' as const };
    const getNodeMs = await timeMedianMs(() => engine.getNode(target, view), 1000, 50);

    let run = 0;
    const synthMs = await timeRuns(
      3,
      () => undefined,
      () => engine.synthesizeBranch('', `summary-${run++}`, 'synth', { kind: 'summarization', sourceType: 'summary' }),
    );

    const pairRows = (name: string, r: PairResult, target?: number): BenchRow[] =>
      (['cpu', 'wall'] as const).map((measure) => ({
        name: `${name} (${measure === 'cpu' ? 'CPU' : 'wall'})`,
        median: r.ratio[measure],
        unit: 'x git',
        ...(target === undefined ? {} : { target }),
        anchor: `median of ${PAIRS} pair ratios; ${r.ours[measure].toFixed(0)} ms, git status ${r.theirs[measure].toFixed(0)} ms`,
      }));
    const ok = printTable(`context engine: ${DIRS * FILES_PER_DIR} files in ${DIRS} directories`, [
      ...pairRows('process: backpackflow context scan vs git status, nothing changed', cliClean, 1.0),
      ...pairRows('process: backpackflow context scan vs git status, one file changed', cliOne, 1.0),
      ...pairRows(`process: context scan vs git status, nothing changed, ${journalLabel}`, cliJournalClean),
      ...pairRows(`process: context scan vs git status, one file changed, ${journalLabel}`, cliJournalOne),
      ...pairRows('floor: node -e 0 vs git status', nodeStart),
      ...(nodeStartHere === undefined ? [] : pairRows(`not counted above: node -e 0 with this machine's NODE_OPTIONS / NODE_EXTRA_CA_CERTS vs git status`, nodeStartHere)),
      ...pairRows(`floor: node lstatSync of the ${DIRS * FILES_PER_DIR} files (whole paths) vs git status`, floorFs),
      ...pairRows(`floor: node lstat of the ${DIRS * FILES_PER_DIR} files as the scan does it (statOne, relative paths) vs git status`, floorEngine),
      ratioRow('in-process: first scan vs git add -A && git write-tree', oursFirst, gitFirst, 1.0, 'git'),
      ratioRow('in-process: rescan by an open engine, nothing changed, vs git status', oursClean, gitClean, 1.0, 'git'),
      ratioRow('in-process: rescan by an open engine after changing one file, vs git status', oursOne, gitOne, 1.2, 'git'),
      { name: 'in-process: rescan, nothing changed, engine opened just before (reads the stored tree)', median: oursColdClean / gitClean, unit: 'x git', anchor: `merkle ${oursColdClean.toFixed(0)} ms, no target` },
      { name: 'getNode with a view (5 of 21 frames)', median: getNodeMs, unit: 'ms', target: 1 },
      { name: `synthesize the whole tree bottom-up (${DIRS + 1} directories)`, median: synthMs, unit: 'ms', target: 2000 },
      { name: 'putFrame (one transaction each, store of ~1,000 frames)', median: putMs, unit: 'ms', anchor: 'mean, no target' },
    ]);
    if (!ok) process.exitCode = 1;
  } finally {
    // (retried: a housekeeping git process started by a commit may still be writing into .git)
    rmSync(root, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 });
  }
}

await main();
