/**
 * Audit s23b F3: the CLI's live trace (`backpackflow run` with a streaming ChatNode) writes each streamed token to
 * stdout as it arrives, without the redaction its other lines get (FlowVisualizer's `redact` is "not applied to
 * streamed model tokens"). The visualizer's own doc gives the reason lines are redacted: the terminal output is
 * copied into CI logs and files. A model that streams a secret (quoting a .env a tool read) puts it there, while the
 * stored log holds [REDACTED]. The visualizer is built here exactly as `src/cli/backpackflow/runs.ts:32` builds it.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FlowVisualizer } from '../../src/events/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { ChatNode } from '../../src/nodes/llm/index.js';
import { redactorFor } from '../../src/redact/index.js';
import { runFlow } from '../../src/runtime/durable.js';
import { makeTempDir } from '../support/temp.js';
import { filesHolding } from '../support/files.js';
import { streamingModel } from '../support/streaming-model.js';
import { depsOf } from '../llm/helpers.js';

const SECRET = 'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi';

function capture(): { output: Writable; text: () => string } {
  let text = '';
  const output = new Writable({ write: (chunk, _enc, done) => ((text += chunk.toString()), done()) });
  return { output, text: () => text };
}

describe('live trace of streamed tokens', () => {
  it('a secret the model streams (in one token, or split across tokens) is not printed by the CLI trace', async () => {
    for (const tokens of [[`your token is ${SECRET}`], ['your token is ', SECRET.slice(0, 10), SECRET.slice(10)]]) {
      const dataDir = makeTempDir('audit-s23b-trace-', 'test');
      const flow = new Flow({ deps: depsOf({ model: streamingModel(tokens) }) });
      flow.addNode(ChatNode, { id: 'chat', promptFrom: 'q', stream: true });
      const redactor = redactorFor();
      const { output, text } = capture();
      const visualizer = new FlowVisualizer(flow.eventStreamer, { output, redact: (line) => redactor.redactText(line) });
      await runFlow(flow, { dataDir, input: { q: 'what is in .env?' } });
      visualizer.detach();
      // The stored log holds no secret ...
      expect(filesHolding(dataDir, SECRET)).toEqual([]);
      // ... and neither must the terminal (CI log) copy of the run.
      expect(text()).toContain('your token is');
      expect(text()).not.toContain(SECRET);
    }
  });

  it('a secret in the model or purpose of the tokens is not printed in their label (review s24, finding 6)', async () => {
    class Streamer extends BackpackNode {
      override exec(): void {
        this.eventStreamer.emit({ type: 'model.started', payload: { model: `gw/${SECRET}`, purpose: 'answer' } } as never);
        this.eventStreamer.emit({ type: 'model.delta', payload: { delta: 'hello', model: `gw/${SECRET}`, purpose: `for ${SECRET}` } } as never);
        this.eventStreamer.emit({ type: 'model.completed', payload: { model: `gw/${SECRET}` } } as never);
      }
    }
    const dataDir = makeTempDir('live-trace-label-', 'test');
    const flow = new Flow();
    flow.addNode(Streamer, { id: 's' });
    const redactor = redactorFor();
    const { output, text } = capture();
    const visualizer = new FlowVisualizer(flow.eventStreamer, { output, redact: (line) => redactor.redactText(line) });
    await runFlow(flow, { dataDir, input: {} });
    visualizer.detach();
    expect(filesHolding(dataDir, SECRET)).toEqual([]);
    expect(text()).toMatch(/✎ .*gw\/.*hello/);
    expect(text()).not.toContain(SECRET);
  });

  it('without a redaction, tokens are printed as they arrive (a library user watching a model think)', async () => {
    const flow = new Flow({ deps: depsOf({ model: streamingModel(['one ', 'two']) }) });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'q', stream: true });
    const { output, text } = capture();
    const seen: string[] = [];
    flow.eventStreamer.on('model.delta', () => seen.push(text()));
    const visualizer = new FlowVisualizer(flow.eventStreamer, { output });
    await flow.run({ q: 'count' });
    visualizer.detach();
    // The visualizer subscribed after this listener: when the second delta is emitted, the first one is on screen.
    expect(seen[1]).toContain('one ');
    expect(text()).toContain('one two');
  });
});
