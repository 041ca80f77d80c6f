import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AccessDeniedError,
  BackpackNode,
  ContractValidationError,
  Flow,
  NodeExecutionError,
  StreamEventType,
  type Attempt,
  type BackpackHandle,
} from '../../src/index.js';

describe('BackpackNode', () => {
  it('packs through its scoped handle with its own provenance', async () => {
    class Fact extends BackpackNode {
      static override namespaceSegment = 'facts';
      override post(backpack: BackpackHandle) {
        backpack.pack('fact', { text: 'water is wet' }, { tags: ['verified'] });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'kb' });
    flow.addNode(Fact, { id: 'fact-node' });
    await flow.run();
    const item = flow.backpack.getItem('fact');
    expect(item?.value).toEqual({ text: 'water is wet' });
    expect(item?.metadata).toMatchObject({
      sourceNodeId: 'fact-node',
      sourceNodeName: 'Fact',
      sourceNamespace: 'kb.facts',
      tags: ['verified'],
    });
  });

  it('cannot spoof another identity through its handle', async () => {
    class Spoofer extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('k', 1, { nodeId: 'someone-else' } as never);
        return undefined;
      }
    }
    const flow = new Flow();
    flow.addNode(Spoofer, { id: 'spoofer' });
    await expect(flow.run()).rejects.toThrow(/someone-else/);
    expect(flow.backpack.has('k')).toBe(false);
  });

  it('helpers pack, unpack, unpackRequired and unpackByNamespace act as the node', async () => {
    const seen: Record<string, unknown> = {};
    class Helpers extends BackpackNode {
      override exec() {
        this.pack('own', 42);
        seen.own = this.unpack('own');
        seen.required = this.unpackRequired('seed');
        seen.byNamespace = this.unpackByNamespace('app.*');
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Helpers, { id: 'h' });
    await flow.run({ seed: 'planted' });
    expect(seen).toEqual({ own: 42, required: 'planted', byNamespace: { own: 42 } });
    expect(flow.backpack.getItem('own')?.metadata.sourceNodeId).toBe('h');
  });

  it('registers its permissions when added, so the Backpack enforces them', async () => {
    class Reader extends BackpackNode {
      override readonly permissions = { read: ['public.*'], deny: ['pii.*'] };
      override prep(backpack: BackpackHandle) {
        return { pub: backpack.unpack('public.note'), pii: backpack.unpack('pii.email') };
      }
      override post(backpack: BackpackHandle, prepRes: unknown) {
        backpack.pack('observed', prepRes);
        return undefined;
      }
    }
    const flow = new Flow();
    const node = flow.addNode(Reader, { id: 'reader' });
    expect(flow.backpack.getPermissions('reader')).toEqual(node.permissions);
    await flow.run({ 'public.note': 'hello', 'pii.email': 'a@b.c' });
    expect(flow.backpack.peek('observed')).toEqual({ pub: 'hello', pii: undefined });
    expect(flow.eventStreamer.getHistory({ type: StreamEventType.ACCESS_DENIED }).map((e) => e.payload.key)).toEqual(['pii.email']);
  });

  it('unpackRequired of a key it may not read throws AccessDeniedError whether the key exists or not', async () => {
    class Strict extends BackpackNode {
      override readonly permissions = { read: ['allowed'] };
      override prep(backpack: BackpackHandle) {
        return backpack.unpackRequired(this.config.key as string);
      }
    }
    for (const key of ['secret', 'does-not-exist']) {
      const flow = new Flow();
      flow.addNode(Strict, { id: 'strict', key });
      flow.backpack.pack('secret', 'x');
      await expect(flow.run()).rejects.toBeInstanceOf(AccessDeniedError);
    }
  });

  it('retries exec per maxRetries in its config and reports each retry', async () => {
    class Flaky extends BackpackNode {
      override exec(_p: unknown, attempt: Attempt) {
        if (attempt.attempt < 3) throw new Error(`attempt ${attempt.attempt} failed`);
        return 'ok';
      }
      override post(backpack: BackpackHandle, _p: unknown, e: string) {
        backpack.pack('result', e);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'x' });
    flow.addNode(Flaky, { id: 'flaky', maxRetries: 3 });
    await flow.run();
    expect(flow.backpack.peek('result')).toBe('ok');
    const retries = flow.eventStreamer.getHistory({ type: StreamEventType.NODE_RETRY });
    expect(retries.map((e) => e.payload)).toEqual([
      { attempt: 1, maxRetries: 3, delayMs: 0, error: { name: 'Error', message: 'attempt 1 failed' } },
      { attempt: 2, maxRetries: 3, delayMs: 0, error: { name: 'Error', message: 'attempt 2 failed' } },
    ]);
    const exec = flow.eventStreamer.getHistory({ type: StreamEventType.EXEC_COMPLETE });
    expect(exec[0]!.payload.attempts).toBe(3);
  });

  it('reports an exec failure as an error event with its phase and fails the run', async () => {
    class Broken extends BackpackNode {
      override exec(): never {
        throw new Error('kaput');
      }
    }
    const flow = new Flow();
    flow.addNode(Broken, { id: 'broken' });
    await expect(flow.run()).rejects.toBeInstanceOf(NodeExecutionError);
    const [error] = flow.eventStreamer.getHistory({ type: StreamEventType.ERROR });
    expect(error!.payload).toEqual({
      phase: 'exec',
      error: { name: 'NodeExecutionError', message: `Node 'broken' failed on attempt 1 of 1: kaput` },
    });
  });

  it('params are its config without id, segment and retry settings', () => {
    const node = new Flow().addNode(BackpackNode, { id: 'n', namespaceSegment: 's', maxRetries: 2, model: 'm', temperature: 0.5 });
    expect(node.params).toEqual({ model: 'm', temperature: 0.5 });
  });
});

describe('data contracts', () => {
  class Contracted extends BackpackNode {
    static override inputs = { query: z.string().min(3), limit: z.number().int() };
    static override outputs = { results: z.array(z.string()) };
    prepCalled = false;
    override prep(backpack: BackpackHandle) {
      this.prepCalled = true;
      return backpack.unpack('query');
    }
    override post(backpack: BackpackHandle) {
      backpack.pack('results', this.config.results);
      return undefined;
    }
  }

  it('checks inputs before prep and lists every violation', async () => {
    const flow = new Flow();
    const node = flow.addNode(Contracted, { id: 'c', results: ['a'] });
    const error = await flow.run({ query: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContractValidationError);
    const violations = (error as ContractValidationError).violations;
    expect(violations.map((v) => v.key)).toEqual(['query', 'limit']);
    expect(violations[1]!.message).toMatch(/^missing/);
    expect((error as ContractValidationError).direction).toBe('input');
    expect((error as Error).message).toMatch(/Node 'c' input contract failed \(2 violations\)/);
    expect(node.prepCalled).toBe(false);
    expect(flow.eventStreamer.getHistory({ type: StreamEventType.ERROR })[0]!.payload.phase).toBe('contract');
  });

  it('checks outputs after post', async () => {
    const flow = new Flow();
    flow.addNode(Contracted, { id: 'c', results: [1, 'two'] });
    const error = (await flow.run({ query: 'long enough', limit: 5 }).catch((e: unknown) => e)) as ContractValidationError;
    expect(error).toBeInstanceOf(ContractValidationError);
    expect(error.direction).toBe('output');
    expect(error.violations).toEqual([{ key: 'results', path: '0', message: expect.any(String) }]);
  });

  it('passes when inputs and outputs hold', async () => {
    const flow = new Flow();
    flow.addNode(Contracted, { id: 'c', results: ['a', 'b'] });
    await expect(flow.run({ query: 'long enough', limit: 5 })).resolves.toBeUndefined();
    expect(flow.backpack.peek('results')).toEqual(['a', 'b']);
  });
});
