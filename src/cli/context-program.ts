/**
 * The context engine's command line, `backpackflow context ...` (and `npm run merkle --` in a checkout). Human output
 * by default, one JSON document with `--json`. Exit codes: 0 success, 1 error (message on stderr), 2 bad usage.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { colors as pc } from './colors.js';
import { terminalText as t } from '../events/terminal-text.js';
import { ContextEngine, ContextError, type CompositionSource, type ContextView, type SynthesisPolicy } from '../context/index.js';
import { checkView } from '../context/view.js';

/** Bad command-line usage: exit code 2. */
class UsageError extends Error {}

interface GlobalOptions {
  /** Unset: the working directory when the command runs. */
  workspace?: string;
  json?: boolean;
}

const program = new Command();
program
  .name('merkle')
  .description('Deterministic, content-addressed context for a workspace')
  // No default value: one taken when this module loads would outlive a change of directory (a long-lived process,
  // the in-process test runner); the working directory is read when a command runs.
  .option('-w, --workspace <dir>', 'workspace root (default: the current directory)')
  .option('--json', 'print one JSON document')
  .showHelpAfterError()
  // Commander's usage errors quote what was typed: printed as every error line is (its own commands inherit this).
  .configureOutput({ outputError: (text, write) => write(`${t(text.replace(/\n$/, ''), { continuation: '  ' })}\n`) })
  .exitOverride();

function globals(): GlobalOptions {
  return program.opts<GlobalOptions>();
}

async function engine(): Promise<ContextEngine> {
  const dir = resolve(globals().workspace ?? process.cwd());
  // A workspace that does not exist, is a file or is a loop of symlinks is refused by the engine, naming which.
  // Damage to a journal is told on stderr by every command that reads from it (see ContextEngineOptions.onWarning).
  return ContextEngine.open(dir, { onWarning: (message) => process.stderr.write(`${program.name()}: warning: ${t(message)}\n`) });
}

function print(json: unknown, human: () => string): void {
  process.stdout.write(globals().json ? `${JSON.stringify(json, null, 2)}\n` : `${human()}\n`);
}

/** A workspace path as the human output prints it (through terminalText: a file name may hold any character). */
function show(path: string): string {
  return path === '' ? '.' : t(path);
}

function integer(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name} must be a non-negative integer, got '${value}'`);
    return n;
  };
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

const ORDERINGS = ['recency', 'oldest', 'type', 'agent'];

program
  .command('scan')
  .description('scan the workspace into the Merkle tree (unchanged files are not re-read)')
  .option('--force', 're-read every file')
  .action(async (opts: { force?: boolean }) => {
    const report = await (await engine()).scan({ force: opts.force });
    print({ root: report.root, nodes: report.nodes, ...(report.warnings.length > 0 && { warnings: report.warnings }) }, () =>
      [
        `${pc.bold('root')} ${report.root}`,
        `${report.nodes} nodes, ${report.hashed} file(s) hashed, ${report.changed ? `${report.changedPaths.length} path(s) changed` : 'no changes'}`,
      ].join('\n'),
    );
  });

program
  .command('status')
  .description('show the root hash and counts')
  .action(async () => {
    const s = await (await engine()).status();
    print({ root: s.root, nodes: s.nodes, frames: s.frames, heads: s.heads, stale: s.stale, ...(s.warnings.length > 0 && { warnings: s.warnings }) }, () =>
      [
        `${pc.bold('root')}   ${s.root ?? pc.yellow('(not scanned; run backpackflow context scan)')}`,
        `nodes  ${s.nodes}`,
        `frames ${s.frames}`,
        `heads  ${s.heads}${s.stale > 0 ? pc.yellow(` (${s.stale} stale)`) : ''}`,
        `agents ${s.agents}`,
      ].join('\n'),
    );
  });

program
  .command('validate')
  .description('verify the integrity of every stored structure')
  .action(async () => {
    const report = await (await engine()).validate();
    print(report, () =>
      [
        report.ok ? pc.green('ok') : pc.red(`${report.errors.length} error(s)`),
        ...report.errors.map((e) => pc.red(`error: ${t(e)}`)),
        ...report.warnings.map((w) => pc.yellow(`warning: ${t(w)}`)),
      ].join('\n'),
    );
    if (!report.ok) process.exitCode = 1;
  });

program
  .command('repair')
  .description('accept what a damaged journal lost: keep it aside and continue from the state that survives')
  .action(async () => {
    const { repaired } = await (await engine()).repair();
    print({ repaired }, () => (repaired.length === 0 ? 'nothing to repair' : repaired.map((r) => t(r)).join('\n')));
  });

program
  .command('get-node <node>')
  .description('show a node and the frames a view selects')
  .option('--max-frames <n>', 'at most n frames', integer('--max-frames'))
  .addOption(new Option('--ordering <o>', 'frame order').choices(ORDERINGS))
  .option('--type <t>', 'only frames of this type (repeatable)', collect)
  .option('--agent <id>', 'only frames by this agent (repeatable)', collect)
  .option('--heads-only', 'only current heads')
  .option('--view <json>', 'a whole ContextView as JSON, e.g. \'{"maxFrames":5,"types":["summary"]}\' (flags override it)')
  .action(
    async (
      node: string,
      opts: { maxFrames?: number; ordering?: ContextView['ordering']; type?: string[]; agent?: string[]; headsOnly?: boolean; view?: string },
    ) => {
      const base = opts.view === undefined ? {} : parseView(opts.view);
      const ctx = await (await engine()).getNode(node, {
        ...base,
        ...(opts.maxFrames !== undefined && { maxFrames: opts.maxFrames }),
        ...(opts.ordering !== undefined && { ordering: opts.ordering }),
        ...(opts.type !== undefined && { types: opts.type }),
        ...(opts.agent !== undefined && { agents: opts.agent }),
        ...(opts.headsOnly !== undefined && { headsOnly: opts.headsOnly }),
      });
      const frames = ctx.frames.map((f) => ({ frameId: f.frameId, type: f.type, agentId: f.agentId, content: f.content }));
      print({ nodeId: ctx.nodeId, path: ctx.nodeRecord.path, type: ctx.nodeRecord.kind, frames, frameCount: ctx.frameCount }, () =>
        [
          `${pc.bold(show(ctx.nodeRecord.path))} ${pc.dim(t(ctx.nodeRecord.kind))} ${t(ctx.nodeId)}`,
          `${ctx.frameCount} frame(s)${frames.length < ctx.frameCount ? `, ${frames.length} shown` : ''}`,
          ...frames.map((f) => `${pc.cyan(t(f.type))} ${pc.dim(t(f.agentId))} ${t(f.frameId)}\n${indent(f.content)}`),
        ].join('\n'),
      );
    },
  );

program
  .command('put-frame <node> <frame-file>')
  .description('append a frame to a node: a JSON file {type, content, metadata?} or a text file with --type')
  .requiredOption('--agent <id>', 'writing agent')
  .option('--type <t>', 'frame type (required for a text file; overrides a JSON file)')
  .action(async (node: string, frameFile: string, opts: { agent: string; type?: string }) => {
    const frame = readFrameFile(frameFile, opts.type);
    const frameId = await (await engine()).putFrame(node, frame, opts.agent);
    print({ frameId }, () => t(frameId));
  });

program
  .command('synthesize <node>')
  .description('synthesize a frame type for a directory subtree, bottom-up')
  .requiredOption('--type <t>', 'frame type to synthesize')
  .requiredOption('--agent <id>', 'synthesis agent')
  .addOption(new Option('--policy <p>', 'synthesis policy').choices(['concatenation', 'summarization', 'filtering']).default('concatenation'))
  .option('--source-type <t>', "frame type read from files ('*' for every head; default: --type)")
  .option('--filter-agent <id>', 'filtering: keep frames by this agent (repeatable)', collect)
  .option('--filter-type <t>', 'filtering: keep frames of this type (repeatable)', collect)
  .option('--contains <text>', 'filtering: keep frames whose content contains this text')
  .action(
    async (
      node: string,
      opts: { type: string; agent: string; policy: string; sourceType?: string; filterAgent?: string[]; filterType?: string[]; contains?: string },
    ) => {
      let policy: SynthesisPolicy;
      if (opts.policy === 'filtering') {
        if (opts.filterAgent === undefined && opts.filterType === undefined && opts.contains === undefined) {
          throw new UsageError('--policy filtering needs --filter-agent, --filter-type or --contains');
        }
        policy = { kind: 'filtering', sourceType: opts.sourceType, agents: opts.filterAgent, types: opts.filterType, contains: opts.contains };
      } else {
        policy = { kind: opts.policy as 'concatenation' | 'summarization', sourceType: opts.sourceType };
      }
      const frameId = await (await engine()).synthesizeBranch(node, opts.type, opts.agent, policy);
      print({ frameId }, () => t(frameId));
    },
  );

program
  .command('regenerate <node>')
  .description('regenerate synthesized frames whose basis changed')
  .option('--recursive', 'the whole subtree, bottom-up')
  .action(async (node: string, opts: { recursive?: boolean }) => {
    const r = await (await engine()).regenerate(node, { recursive: opts.recursive });
    print({ regenerated: r.regenerated }, () =>
      [
        `${r.regenerated.length} frame(s) regenerated`,
        ...r.regenerated.map((id) => t(id)),
        ...r.needsAgent.map((h) => pc.yellow(`needs its agent: ${t(h.type)} on ${show(h.path)} (${t(h.frameId)})`)),
        ...r.markedStale.map((h) => pc.yellow(`marked stale: ${t(h.type)} on ${show(h.path)}`)),
      ].join('\n'),
    );
  });

program
  .command('invalidate <node>')
  .description("mark a node's heads stale")
  .action(async (node: string) => {
    const r = await (await engine()).invalidate(node);
    print(r, () => `${r.invalidated.length} head(s) marked stale${r.invalidated.map((h) => `\n${t(h.type)} on ${show(h.path)}`).join('')}`);
  });

program
  .command('list-frames <node>')
  .description("list a node's frames, oldest first")
  .option('--type <t>', 'only this frame type')
  .action(async (node: string, opts: { type?: string }) => {
    const frames = await (await engine()).listFrames(node, { type: opts.type });
    print(
      frames.map((f) => ({ frameId: f.frameId, type: f.type, agentId: f.agentId })),
      () => (frames.length === 0 ? 'no frames' : frames.map((f) => `${t(f.frameId)} ${pc.cyan(t(f.type))} ${pc.dim(t(f.agentId))}${f.isHead ? pc.green(' head') : ''}`).join('\n')),
    );
  });

program
  .command('get-head <node>')
  .description('the head frame of a type')
  .requiredOption('--type <t>', 'frame type')
  .action(async (node: string, opts: { type: string }) => {
    const frameId = await (await engine()).getHead(node, opts.type);
    print({ frameId }, () => t(frameId ?? 'none'));
  });

const agent = program.command('agent').description('manage agents');
agent
  .command('add <id>')
  .description('register an agent (or change its role)')
  .addOption(new Option('--role <role>', 'agent role').choices(['reader', 'writer', 'synthesis']).makeOptionMandatory())
  .option('--capability <type>', 'frame type the agent may write (repeatable; default any)', collect)
  .action(async (id: string, opts: { role: 'reader' | 'writer' | 'synthesis'; capability?: string[] }) => {
    const identity = await (await engine()).registerAgent({ agentId: id, role: opts.role, capabilities: opts.capability });
    print(identity, () => `${t(identity.agentId)} ${pc.cyan(t(identity.role))}`);
  });
agent
  .command('list')
  .description('list registered agents')
  .action(async () => {
    const agents = await (await engine()).listAgents();
    print(agents, () =>
      agents.length === 0 ? 'no agents' : agents.map((a) => `${t(a.agentId)} ${pc.cyan(t(a.role))}${a.capabilities.length ? ` [${t(a.capabilities.join(', '))}]` : ''}`).join('\n'),
    );
  });

program
  .command('compose <node>')
  .description('compose frames from several sources (read-only)')
  .requiredOption('--max-frames <n>', 'hard limit on frames', integer('--max-frames'))
  .option('--source <s>', 'current, parent or siblings (repeatable; default current)', collect)
  .option('--related <node>', 'a related node (repeatable)', collect)
  .addOption(new Option('--ordering <o>', 'frame order').choices([...ORDERINGS, 'relevance']))
  .option('--query <text>', "words for 'relevance' ordering")
  .option('--type <t>', 'only this frame type (repeatable)', collect)
  .option('--agent <id>', 'only frames by this agent (repeatable)', collect)
  .action(
    async (
      node: string,
      opts: { maxFrames: number; source?: string[]; related?: string[]; ordering?: 'recency'; query?: string; type?: string[]; agent?: string[] },
    ) => {
      const sources: CompositionSource[] = [];
      for (const s of opts.source ?? (opts.related ? [] : ['current'])) {
        if (s !== 'current' && s !== 'parent' && s !== 'siblings') throw new UsageError(`--source must be current, parent or siblings, got '${s}'`);
        sources.push(s);
      }
      if (opts.related) sources.push({ related: opts.related });
      const c = await (await engine()).compose(node, {
        maxFrames: opts.maxFrames,
        sources,
        ordering: opts.ordering,
        query: opts.query,
        filters: { types: opts.type, agents: opts.agent },
      });
      const frames = c.frames.map((f) => ({
        frameId: f.frame.frameId,
        path: f.frame.path,
        type: f.frame.type,
        agentId: f.frame.agentId,
        source: f.source,
        content: f.frame.content,
      }));
      print({ nodeId: c.nodeId, path: c.path, frames, candidates: c.candidates, skipped: c.skipped }, () =>
        [
          `${frames.length} of ${c.candidates} candidate frame(s)`,
          ...frames.map((f) => `${pc.cyan(t(f.type))} ${show(f.path)} ${pc.dim(t(`${f.source} ${f.agentId}`))} ${t(f.frameId)}\n${indent(f.content)}`),
          ...c.skipped.map((s) => pc.yellow(`skipped ${t(s.ref)}: ${t(s.reason)}`)),
        ].join('\n'),
      );
    },
  );

program
  .command('watch')
  .description('rescan on file changes and print changed nodes until interrupted')
  .option('--debounce <ms>', 'quiet period before a rescan', integer('--debounce'), 50)
  .action(async (opts: { debounce: number }) => {
    const eng = await engine();
    await eng.scan();
    const watcher = await eng.watch(
      (event) => {
        if (globals().json) process.stdout.write(`${JSON.stringify(event)}\n`);
        else process.stdout.write(`${pc.bold('root')} ${t(event.root)}\n${event.changedPaths.map((p) => `  ${show(p)}`).join('\n')}\n`);
      },
      { debounceMs: opts.debounce, onError: (error) => process.stderr.write(`context watch: ${t((error as Error).message)}\n`) },
    );
    if (!globals().json) process.stdout.write(`watching ${t(eng.workspaceRoot)} (Ctrl-C to stop)\n`);
    await new Promise<void>((done) => {
      const stop = () => void watcher.close().then(done);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });

function readFrameFile(file: string, type: string | undefined): { type: string; content: string; metadata?: Record<string, unknown> } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ContextError('INVALID_ARGUMENT', `cannot read frame file ${file}: ${(error as Error).message}`, { file });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
  // A frame document (a "content" field) whose content is not text is a mistake, not text to store as it is.
  if (isObject && Object.hasOwn(parsed as object, 'content') && typeof (parsed as { content?: unknown }).content !== 'string') {
    const content = (parsed as { content?: unknown }).content;
    throw new UsageError(`frame file ${file}: "content" must be a string (the frame's text), got ${content === null ? 'null' : Array.isArray(content) ? 'a list' : typeof content}`);
  }
  if (isObject && typeof (parsed as { content?: unknown }).content === 'string') {
    const doc = parsed as { type?: unknown; content: string; metadata?: Record<string, unknown> };
    const frameType = type ?? doc.type;
    if (typeof frameType !== 'string') throw new UsageError(`frame file ${file} has no "type"; add one or pass --type`);
    return { type: frameType, content: doc.content, metadata: doc.metadata };
  }
  if (type === undefined) throw new UsageError(`frame file ${file} is plain text; pass --type <t>`);
  return { type, content: text };
}

function parseView(text: string): ContextView {
  let view: unknown;
  try {
    view = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--view is not valid JSON: ${(error as Error).message}`);
  }
  if (view === null || typeof view !== 'object' || Array.isArray(view)) throw new UsageError('--view must be a JSON object (a ContextView)');
  // Its shape is checked here, so that a wrong one is bad usage (exit 2), as the JSON's syntax is.
  try {
    return checkView(view, '--view');
  } catch (error) {
    if (error instanceof ContextError) throw new UsageError(error.message);
    throw error;
  }
}

/** Frame content, each line indented (through terminalText: the content is any text an agent wrote). */
function indent(text: string): string {
  return `  ${t(text, { continuation: '  ' })}`;
}

/**
 * Runs the context commands with `argv` (as process.argv: the first two entries are skipped) under the command name
 * `name`, and returns the exit code.
 */
export async function runContextCli(argv: readonly string[], name = 'backpackflow context'): Promise<number> {
  program.name(name);
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every other commander error is bad usage.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`${name}: ${t(error.message)}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${name}: ${t(message)}\n`);
    return 1;
  }
}
