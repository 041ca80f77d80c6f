import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { EventStreamer, FlowVisualizer, StreamEventType as T, type EventInput } from '../../src/events/index.js';

/** A writable that keeps what was written; `isTTY` is settable to test the color default. */
class Capture extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }
}

const run = { runId: 'run-1' };
const agent = { ...run, nodeId: 'agent', nodeName: 'ResearchAgentNode', namespace: 'youtube.research.agent', spanId: 'sA', parentSpanId: 's0' };
const search = { ...run, nodeId: 'search', nodeName: 'SearchNode', namespace: 'youtube.research.agent.search', spanId: 'sS', parentSpanId: 'sA' };
const analysis = { ...run, nodeId: 'analysis', nodeName: 'AnalysisNode', namespace: 'youtube.research.agent.analysis', spanId: 'sN', parentSpanId: 'sA' };
const boom = { name: 'TypeError', message: 'no data' };

/** A run of a composite node with two internal nodes: a retry, a route, backpack traffic, a denial, an error. */
const events: EventInput[] = [
  { ...run, type: T.RUN_START, spanId: 's0', namespace: 'youtube.research', payload: { flowNamespace: 'youtube.research', entryNodeId: 'agent' } },
  { ...agent, type: T.NODE_START },
  { ...search, type: T.NODE_START },
  { ...search, type: T.PREP_COMPLETE, payload: { durationMs: 0.1 } },
  { ...search, type: T.NODE_RETRY, payload: { attempt: 1, maxRetries: 3, delayMs: 10, error: { name: 'TimeoutError', message: 'slow' } } },
  { ...search, type: T.BACKPACK_PACK, payload: { key: 'results', version: 1, valueSummary: 'Array(3)', tags: ['search'] } },
  { ...search, type: T.EXEC_COMPLETE, payload: { durationMs: 11, attempts: 2 } },
  { ...search, type: T.NODE_END, payload: { action: 'default', durationMs: 12.34 } },
  { ...run, type: T.ROUTE, parentSpanId: 'sA', nodeId: 'search', namespace: search.namespace, payload: { action: 'default', from: 'search', to: 'analysis' } },
  { ...analysis, type: T.NODE_START },
  { ...analysis, type: T.BACKPACK_UNPACK, payload: { key: 'results', found: true } },
  { ...analysis, type: T.BACKPACK_UNPACK, payload: { key: 'notes', found: false } },
  { ...analysis, type: T.ACCESS_DENIED, payload: { key: 'apiKey', operation: 'read', rule: 'deny: api*' } },
  { ...analysis, type: T.BACKPACK_QUARANTINE, payload: { key: 'results', reason: 'failed validation' } },
  { ...analysis, type: T.ERROR, payload: { phase: 'exec', error: boom } },
  { ...agent, type: T.ERROR, payload: { phase: 'exec', error: boom } },
  { ...run, type: T.RUN_ERROR, spanId: 's0', namespace: 'youtube.research', payload: { durationMs: 1500, steps: 1, error: boom } },
];

function render(options: { color: boolean; showBackpack?: boolean }, input: EventInput[] = events): string {
  const streamer = new EventStreamer();
  const output = new Capture();
  new FlowVisualizer(streamer, { output, ...options });
  for (const event of input) streamer.emit(event);
  return output.text;
}

const ESC = '\u001b[';
const wrap = (open: number, close: number) => (s: string) => `${ESC}${open}m${s}${ESC}${close}m`;
const [bold, dim, red, green, yellow, blue, magenta, cyan] = [
  wrap(1, 22), wrap(2, 22), wrap(31, 39), wrap(32, 39), wrap(33, 39), wrap(34, 39), wrap(35, 39), wrap(36, 39),
];

describe('FlowVisualizer', () => {
  const savedNoColor = process.env.NO_COLOR;
  afterEach(() => {
    if (savedNoColor === undefined) delete process.env.NO_COLOR;
    else process.env.NO_COLOR = savedNoColor;
  });

  it('prints the hierarchical trace as plain text, indented by span depth', () => {
    expect(render({ color: false })).toBe(
      [
        '▶ run youtube.research run-1',
        '│  ⚙ ResearchAgentNode youtube.research.agent',
        '│  │  ⚙ SearchNode youtube.research.agent.search',
        '│  │  │  ↻ attempt 1/3 failed: TimeoutError: slow; retrying in 10.0ms',
        '│  │  ✓ SearchNode 12.3ms → default',
        '│  │  → route default: search → analysis',
        '│  │  ⚙ AnalysisNode youtube.research.agent.analysis',
        '│  │  │  ⛔ access denied: AnalysisNode may not read apiKey (deny: api*)',
        '│  │  │  ⊘ quarantined results: failed validation',
        '│  │  │  ✗ AnalysisNode failed in exec: TypeError: no data',
        '│  │  ✗ ResearchAgentNode failed in exec: TypeError: no data',
        '■ run failed · 1 step · 1.50s: TypeError: no data',
        '',
      ].join('\n'),
    );
  });

  it('with color: false writes no ANSI escape code at all, even with showBackpack', () => {
    expect(render({ color: false, showBackpack: true })).not.toContain('\u001b');
  });

  it('with showBackpack prints packs and unpacks at the level of the node’s details', () => {
    const lines = render({ color: false, showBackpack: true }).split('\n');
    expect(lines).toContain('│  │  │  + pack results v1 = Array(3) [search]');
    expect(lines).toContain('│  │  │  · unpack results');
    expect(lines).toContain('│  │  │  · unpack notes (not found)');
    expect(render({ color: false })).not.toContain('pack');
  });

  it('colors the same trace: errors red, retries yellow, routes cyan, denials magenta, guides dim', () => {
    const guide = (depth: number) => dim('│  '.repeat(depth));
    expect(render({ color: true })).toBe(
      [
        `${bold('▶ run')} ${bold('youtube.research')} ${dim('run-1')}`,
        `${guide(1)}${cyan('⚙')} ${bold('ResearchAgentNode')} ${dim('youtube.research.agent')}`,
        `${guide(2)}${cyan('⚙')} ${bold('SearchNode')} ${dim('youtube.research.agent.search')}`,
        `${guide(3)}${yellow('↻ attempt 1/3 failed: TimeoutError: slow; retrying in 10.0ms')}`,
        `${guide(2)}${green('✓')} SearchNode${dim(' 12.3ms')} → ${cyan('default')}`,
        `${guide(2)}${cyan('→ route default: search → analysis')}`,
        `${guide(2)}${cyan('⚙')} ${bold('AnalysisNode')} ${dim('youtube.research.agent.analysis')}`,
        `${guide(3)}${magenta('⛔ access denied: AnalysisNode may not read apiKey (deny: api*)')}`,
        `${guide(3)}${magenta('⊘ quarantined results: failed validation')}`,
        `${guide(3)}${red('✗ AnalysisNode failed in exec: TypeError: no data')}`,
        `${guide(2)}${red('✗ ResearchAgentNode failed in exec: TypeError: no data')}`,
        red('■ run failed · 1 step · 1.50s: TypeError: no data'),
        '',
      ].join('\n'),
    );
    expect(render({ color: true, showBackpack: true })).toContain(`${guide(3)}${blue('+ pack')} results v1 = Array(3)${dim(' [search]')}`);
  });

  it('prints a completed run, a missing route and a resumed run', () => {
    const input: EventInput[] = [
      { runId: 'r2', type: T.RUN_START, spanId: 'root', payload: { flowNamespace: 'sales', entryNodeId: 'chat', resumed: true } },
      { runId: 'r2', type: T.NODE_START, nodeId: 'chat', nodeName: 'ChatNode', namespace: 'sales.chat', spanId: 'c', parentSpanId: 'root' },
      { runId: 'r2', type: T.NODE_END, nodeId: 'chat', nodeName: 'ChatNode', namespace: 'sales.chat', spanId: 'c', parentSpanId: 'root', payload: { action: 'escalate', durationMs: 0.5 } },
      { runId: 'r2', type: T.ROUTE_MISSING, parentSpanId: 'root', nodeId: 'chat', payload: { action: 'escalate', from: 'chat', available: ['default', 'done'] } },
      { runId: 'r2', type: T.RUN_END, spanId: 'root', payload: { durationMs: 2, steps: 1, action: 'escalate' } },
    ];
    expect(render({ color: false }, input)).toBe(
      [
        '▶ run sales r2 (resumed)',
        '│  ⚙ ChatNode sales.chat',
        '│  ✓ ChatNode 0.50ms → escalate',
        "│  ⚠ no route for 'escalate' from chat (available: default, done); the flow ends here",
        '■ run completed · 1 more step · 2.0ms → escalate',
        '',
      ].join('\n'),
    );
  });

  it('counts the steps a resumed or forked segment added as more steps, and a fresh run\'s steps as its steps', () => {
    const end = (runId: string, type: (typeof T)[keyof typeof T], steps: number): EventInput => ({ runId, type, spanId: `${runId}0`, payload: { durationMs: 1, steps, action: 'default', error: { name: 'Error', message: 'x' }, interrupt: { nodeId: 'n' } } });
    const input: EventInput[] = [
      { runId: 'fresh', type: T.RUN_START, spanId: 'fresh0', payload: { flowNamespace: 'f' } },
      { runId: 'res', type: T.RUN_START, spanId: 'res0', payload: { flowNamespace: 'f', resumed: true } },
      { runId: 'fork', type: T.RUN_START, spanId: 'fork0', payload: { flowNamespace: 'f', forkedFrom: { runId: 'fresh', step: 2 } } },
      end('fresh', T.RUN_END, 3),
      end('res', T.RUN_WAITING, 2),
      end('fork', T.RUN_ERROR, 1),
      // The same run id started afresh later (another process's run of it, as the stream sees it): its own steps again.
      { runId: 'res', type: T.RUN_START, spanId: 'res0', payload: { flowNamespace: 'f' } },
      end('res', T.RUN_END, 4),
    ];
    const ends = render({ color: false }, input).split('\n').filter((line) => line.startsWith('■'));
    expect(ends.map((line) => line.split(' · ')[1])).toEqual(['3 steps', '2 more steps', '1 more step', '4 steps']);
  });

  it('keeps interleaved runs apart: each run’s nodes are indented under that run', () => {
    const input: EventInput[] = [
      { runId: 'a', type: T.RUN_START, spanId: 'a0', payload: { flowNamespace: 'a' } },
      { runId: 'b', type: T.RUN_START, spanId: 'b0', payload: { flowNamespace: 'b' } },
      { runId: 'b', type: T.NODE_START, nodeName: 'Outer', spanId: 'b1', parentSpanId: 'b0' },
      { runId: 'a', type: T.NODE_START, nodeName: 'Top', spanId: 'a1', parentSpanId: 'a0' },
      { runId: 'b', type: T.NODE_START, nodeName: 'Inner', spanId: 'b2', parentSpanId: 'b1' },
    ];
    expect(render({ color: false }, input)).toBe(['▶ run a a', '▶ run b b', '│  ⚙ Outer', '│  ⚙ Top', '│  │  ⚙ Inner', ''].join('\n'));
  });

  it('forgets finished spans: a span id seen again after its run ended starts a new tree', () => {
    const once: EventInput[] = [
      { runId: 'r', type: T.RUN_START, spanId: 'root', payload: { flowNamespace: 'f' } },
      { runId: 'r', type: T.NODE_START, nodeName: 'N', spanId: 'n', parentSpanId: 'root' },
      { runId: 'r', type: T.RUN_END, spanId: 'root', payload: { steps: 1 } },
    ];
    const orphan: EventInput = { runId: 'r', type: T.NODE_START, nodeName: 'Late', spanId: 'x', parentSpanId: 'n' };
    expect(render({ color: false }, [...once, orphan]).split('\n').at(-2)).toBe('⚙ Late');
  });

  it('ignores event types that are not part of the trace', () => {
    const input: EventInput[] = [
      { type: T.CHECKPOINT_SAVED, payload: {} },
      { type: T.MODEL_DELTA, payload: { text: 'x' } },
      { type: T.CUSTOM, payload: {} },
    ];
    expect(render({ color: false }, input)).toBe('');
  });

  it('defaults to color on a terminal and plain text when piped or when NO_COLOR is set', () => {
    delete process.env.NO_COLOR;
    const trace = (isTTY: boolean): string => {
      const streamer = new EventStreamer();
      const output = new Capture();
      output.isTTY = isTTY;
      new FlowVisualizer(streamer, { output });
      streamer.emit({ type: T.ERROR, payload: { phase: 'post', error: boom } });
      return output.text;
    };
    expect(trace(true)).toBe(`${red('✗ failed in post: TypeError: no data')}\n`);
    expect(trace(false)).toBe('✗ failed in post: TypeError: no data\n');
    process.env.NO_COLOR = '1';
    expect(trace(true)).toBe('✗ failed in post: TypeError: no data\n');
  });

  it('detach stops printing', () => {
    const streamer = new EventStreamer();
    const output = new Capture();
    const visualizer = new FlowVisualizer(streamer, { output, color: false });
    streamer.emit({ type: T.NODE_START, nodeName: 'A' });
    visualizer.detach();
    visualizer.detach();
    streamer.emit({ type: T.NODE_START, nodeName: 'B' });
    expect(output.text).toBe('⚙ A\n');
  });
});

describe('FlowVisualizer: live tokens', () => {
  const delta = (text: string, extra: Partial<EventInput> = {}, purpose = 'chat'): EventInput => ({
    ...search,
    type: T.MODEL_DELTA,
    payload: { model: 'openai:gpt-4o', purpose, attempt: 1, delta: text },
    ...extra,
  });

  it('writes each token the moment it arrives, on one line that ends when anything else is printed', () => {
    const streamer = new EventStreamer();
    const output = new Capture();
    new FlowVisualizer(streamer, { output, color: false });
    streamer.emit({ ...run, type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'f' } });
    streamer.emit({ ...agent, type: T.NODE_START });
    streamer.emit({ ...search, type: T.NODE_START });
    const before = output.text;
    streamer.emit(delta('Tides'));
    expect(output.text.slice(before.length)).toBe('│  │  │  ✎ openai:gpt-4o (chat): Tides');
    streamer.emit(delta(' rise'));
    expect(output.text.endsWith('Tides rise')).toBe(true);
    streamer.emit({ ...search, type: T.MODEL_END, payload: { model: 'openai:gpt-4o', purpose: 'chat', attempt: 1 } });
    streamer.emit({ ...search, type: T.NODE_END, payload: { action: 'default', durationMs: 1 } });
    expect(output.text.slice(before.length)).toBe('│  │  │  ✎ openai:gpt-4o (chat): Tides rise\n│  │  ✓ SearchNode 1.0ms → default\n');
  });

  it('shows control characters (ANSI escapes) of model text as escapes, indents its newlines, and continues an interrupted stream on a … line', () => {
    const streamer = new EventStreamer();
    const output = new Capture();
    new FlowVisualizer(streamer, { output, color: false });
    streamer.emit(delta('\u001b[2Jline one\nline\u0007 two'));
    streamer.emit(delta('other', {}, 'summary'));
    streamer.emit(delta(' three'));
    // The node's span was not seen start here, so its lines sit one level in.
    expect(output.text).toBe('│  ✎ openai:gpt-4o (chat): \\u001b[2Jline one\n│     line\\u0007 two\n│  ✎ openai:gpt-4o (summary): other\n│  ✎ …  three');
    expect(output.text).not.toContain('\u001b');
  });

  it('says that params and Backpack values are frozen when a node failed writing to one (V8 says only "not extensible")', () => {
    const frozen = { name: 'TypeError', message: 'Cannot add property 1, object is not extensible' };
    const text = render({ color: false }, [
      { ...run, type: T.RUN_START, spanId: 's0', namespace: 'youtube.research', payload: { flowNamespace: 'youtube.research', entryNodeId: 'search' } },
      { ...search, parentSpanId: 's0', type: T.NODE_START },
      { ...search, parentSpanId: 's0', type: T.ERROR, payload: { phase: 'post', error: frozen } },
      { ...search, parentSpanId: 's0', type: T.ERROR, payload: { phase: 'post', error: boom } },
    ]);
    expect(text).toContain('✗ SearchNode failed in post: TypeError: Cannot add property 1, object is not extensible (params and values read from the Backpack are frozen: change a copy, e.g. structuredClone(value))');
    // Other errors are as they were.
    expect(text).toContain('✗ SearchNode failed in post: TypeError: no data\n');
  });
});
