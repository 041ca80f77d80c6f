/**
 * Audit finding 2, at the engine: the run's own abort passing through a node's exec is not a failure of that node.
 * Like a FlowSignal, it is not retried, `execFallback` does not see it, and nothing wraps it; an error that is not
 * the run's abort (another error, or an AbortError of something else while the run goes on) is still a failure.
 */
import { describe, expect, it } from 'vitest';
import { BaseFlow, BatchNode, Node, NodeExecutionError, ROOT_SCOPE, type RunScope } from '../../src/index.js';

/** A node whose exec aborts the run (or throws `error` without aborting), counting attempts and fallbacks. */
class Aborting extends Node<Record<string, unknown>> {
  attempts = 0;
  fallbacks = 0;
  constructor(
    private readonly controller: AbortController,
    private readonly throwing: (controller: AbortController) => unknown,
  ) {
    super({ id: 'aborting', maxRetries: 3 });
  }
  override exec(): unknown {
    this.attempts++;
    throw this.throwing(this.controller);
  }
  override execFallback(): unknown {
    this.fallbacks++;
    return 'fallback';
  }
}

const runIn = (node: Node, signal: AbortSignal): Promise<string | undefined> => {
  const flow = new BaseFlow({ start: node });
  const scope: RunScope = { ...ROOT_SCOPE, signal };
  return flow._run({}, scope);
};

describe('the run’s abort inside exec', () => {
  it('is thrown as it is: one attempt, no fallback, not a NodeExecutionError', async () => {
    const controller = new AbortController();
    const node = new Aborting(controller, (c) => (c.abort(), c.signal.reason));
    const error = await runIn(node, controller.signal).catch((e: unknown) => e);
    expect(error).toBe(controller.signal.reason);
    expect(error).not.toBeInstanceOf(NodeExecutionError);
    expect({ attempts: node.attempts, fallbacks: node.fallbacks }).toEqual({ attempts: 1, fallbacks: 0 });
  });

  it('an AbortError of its own (not the reason) while the run’s signal is aborted, or one wrapping the reason: the same', async () => {
    for (const throwing of [
      (c: AbortController) => (c.abort(new Error('stop')), Object.assign(new Error('request aborted'), { name: 'AbortError' })),
      (c: AbortController) => (c.abort(), new Error('model call failed', { cause: c.signal.reason })),
    ]) {
      const controller = new AbortController();
      const node = new Aborting(controller, throwing);
      await expect(runIn(node, controller.signal)).rejects.not.toBeInstanceOf(NodeExecutionError);
      expect({ attempts: node.attempts, fallbacks: node.fallbacks }).toEqual({ attempts: 1, fallbacks: 0 });
    }
  });

  it('each item of a batch node: the first item’s abort stops the batch, no retry', async () => {
    const controller = new AbortController();
    let calls = 0;
    class Items extends BatchNode {
      override prep(): number[] {
        return [1, 2, 3];
      }
      override exec(_item: number): number {
        calls++;
        controller.abort();
        throw controller.signal.reason;
      }
    }
    const node = new Items({ maxRetries: 3 });
    const error = await runIn(node, controller.signal).catch((e: unknown) => e);
    expect(error).toBe(controller.signal.reason);
    expect(calls).toBe(1);
  });

  it('is not mistaken for an ordinary failure: while the run goes on, an AbortError is retried and reaches the fallback', async () => {
    const controller = new AbortController();
    const node = new Aborting(controller, () => Object.assign(new Error('request aborted'), { name: 'AbortError' }));
    await expect(runIn(node, controller.signal)).resolves.toBeUndefined();
    expect({ attempts: node.attempts, fallbacks: node.fallbacks }).toEqual({ attempts: 3, fallbacks: 1 });
  });

  it('an ordinary error after the signal aborted is still the node’s failure (retried, then the fallback)', async () => {
    const controller = new AbortController();
    const node = new Aborting(controller, (c) => (c.abort(), new TypeError('bad input')));
    // The fallback's value stands in for exec's (the flow ends after this node, before any further check of the signal).
    await expect(runIn(node, controller.signal)).resolves.toBeUndefined();
    expect({ attempts: node.attempts, fallbacks: node.fallbacks }).toEqual({ attempts: 3, fallbacks: 1 });
  });
});
