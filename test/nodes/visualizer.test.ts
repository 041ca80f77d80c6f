import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowAction, FlowVisualizer, type BackpackHandle } from '../../src/index.js';

class Step extends BackpackNode {
  override post(backpack: BackpackHandle) {
    backpack.pack(`done.${this.id}`, true);
    return FlowAction.COMPLETE;
  }
}

class Agent extends BackpackNode {
  static override namespaceSegment = 'agent';
  protected override buildInternalFlow(flow: Flow) {
    flow.addNode(Step, { id: 'search' }).onComplete(flow.addNode(Step, { id: 'summary' }));
  }
}

describe('FlowVisualizer on a real flow', () => {
  it('prints the live trace of a composite run, indented by depth, with no ANSI codes when piped', async () => {
    let text = '';
    const output = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Agent, { id: 'agent' });
    const visualizer = new FlowVisualizer(flow.eventStreamer, { output, color: false });
    await flow.run();
    visualizer.detach();
    const lines = text.trimEnd().split('\n');
    expect(text).not.toContain('\u001b[');
    const indentOf = (needle: string) => {
      const line = lines.find((l) => l.includes(needle));
      expect(line, `a line mentioning ${needle}`).toBeDefined();
      return /^((?:│ {2})*)/.exec(line!)![1]!.length / 3;
    };
    expect(indentOf('Agent app.agent')).toBe(1);
    expect(indentOf('app.agent.search')).toBe(2);
    expect(indentOf('app.agent.summary')).toBe(2);
    expect(indentOf('route complete: search → summary')).toBe(2);
    expect(lines[0]).toMatch(/run/);
    expect(lines.at(-1)).toMatch(/run completed/);
  });
});
