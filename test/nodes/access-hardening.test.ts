/**
 * Audit findings on what node code can reach (audit-acl 2, 3, 5, 6, 7, 8): a subflow reached through a route, a
 * plain node in a flow of BackpackNodes, the node's event view, emitted events, the owner's lookups by node id,
 * other nodes' methods, and the answers of delete and quarantine.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesNamespace, type BackpackHandle, type NodePermissions } from '../../src/backpack/index.js';
import { BaseNode, Node } from '../../src/flow/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';

const KEYS = ['token', 'pub', 'pii.ssn', 'doc'] as const;
const WRITERS = ['hr', 'pub'] as const;

interface Pack {
  writer: (typeof WRITERS)[number];
  key: (typeof KEYS)[number];
  /** Item rule: only the writer itself may read it. */
  private: boolean;
}

const packArb: fc.Arbitrary<Pack> = fc.record({ writer: fc.constantFrom(...WRITERS), key: fc.constantFrom(...KEYS), private: fc.boolean() });
const patterns = (pool: readonly string[]) => fc.option(fc.uniqueArray(fc.constantFrom(...pool), { maxLength: 2 }), { nil: undefined });
const rulesArb: fc.Arbitrary<NodePermissions> = fc
  .record({ read: patterns(['pub', 'doc', 'pii.*']), deny: patterns(['token', 'pii.*']), namespaceRead: patterns(['app.pub', 'app.hr']) })
  .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as NodePermissions);

/** Everything `probe` reached, as text (errors as their message). */
function reach(probe: () => unknown): string {
  try {
    return JSON.stringify(probe() ?? null, (_k, v: unknown) => (v instanceof Map || v instanceof Set ? [...v] : typeof v === 'object' && v !== null && v.constructor?.name === 'Backpack' ? 'OWNER-BACKPACK' : v));
  } catch (error) {
    return `threw ${(error as Error).message}`;
  }
}

describe('what node code reaches holds no denied value and never the owner view', () => {
  it('for any rules and any sequence of packs by other nodes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(packArb, { minLength: 1, maxLength: 6 }), rulesArb, async (packs, rules) => {
        const seen: string[] = [];
        let n = 0;
        class Writer extends BackpackNode {
          override post(bp: BackpackHandle): undefined {
            for (const p of packs.filter((q) => q.writer === this.id)) {
              bp.pack(p.key, `SECRET-${this.id}-${n++}`, p.private ? { accessControl: { read: [this.namespace] } } : undefined);
            }
          }
        }
        class Evil extends BackpackNode {
          override get permissions() {
            return { ...rules, write: ['**'] };
          }
          override async post(bp: BackpackHandle) {
            const sub = this.successors.get('default') as Flow;
            seen.push(reach(() => sub.backpack), reach(() => sub.eventStreamer), reach(() => sub.getStats()));
            seen.push(await sub.run({ forged: 1 }).then(String, (e: Error) => `threw ${e.message}`));
            seen.push(reach(() => this.eventStreamer.getHistory()));
            for (const key of KEYS) {
              // Readable keys are the node's to see; what it reaches otherwise must not tell it anything (a write
              // its key rules refuse is refused whether or not the key exists).
              if (bp.has(key)) continue;
              seen.push(reach(() => `delete ${key}: ${String(bp.delete(key))}`));
            }
            return undefined;
          }
        }
        class Tool extends BackpackNode {}
        const flow = new Flow({ namespace: 'app' });
        const evil = flow.addNode(Writer, { id: 'hr' }).next(flow.addNode(Writer, { id: 'pub' })).next(flow.addNode(Evil, { id: 'evil' }));
        const sub = flow.addSubflow({ namespace: 'tools' });
        sub.addNode(Tool, { id: 't' });
        evil.next(sub);
        await flow.run();
        const text = seen.join('\n');
        expect(text).not.toMatch(/SECRET|OWNER-BACKPACK|backpackSize/);
        expect(text).not.toMatch(/delete \S+: true/);
        expect(flow.backpack.has('forged')).toBe(false);
      }),
      { numRuns: 40 },
    );
  });

  it('a subflow does not give out the owner Backpack or streamer, and does not run on its own', async () => {
    const flow = new Flow({ namespace: 'app' });
    const sub = flow.addSubflow({ namespace: 'tools' });
    expect(() => sub.backpack).toThrow(/Flow 'tools' is a subflow of flow 'app': it does not give out the owner's Backpack .*use flow 'app'.backpack/);
    expect(() => sub.eventStreamer).toThrow(/does not give out the owner's event streamer/);
    await expect(sub.run({ x: 1 })).rejects.toThrow(/runs as a step of that flow/);
    expect(flow.backpack.has('x')).toBe(false);
  });

  it('a route to a top-level flow is refused: node code could read its Backpack', () => {
    class A extends BackpackNode {}
    const flow = new Flow({ namespace: 'app' });
    const other = new Flow({ namespace: 'other', backpack: flow.backpack });
    const a = flow.addNode(A, { id: 'a' });
    expect(() => a.next(other)).toThrow(/Node 'a', route 'default': flow 'other' holds the owner's Backpack .*addSubflow/);
    expect(() => flow.addSubflow({ namespace: 's' }).next(other)).toThrow(/Flow 's', route 'default': flow 'other' holds/);
  });
});

describe('a plain Node never receives the owner Backpack', () => {
  class Plain extends Node {
    got: unknown = 'never ran';
    override prep(shared: unknown) {
      this.got = shared;
    }
  }

  it('is refused as a route target or entry node, naming it', () => {
    class A extends BackpackNode {}
    const flow = new Flow({ namespace: 'app' });
    const a = flow.addNode(A, { id: 'a' });
    expect(() => a.next(new Plain({ id: 'tool' }))).toThrow(/Node 'a', route 'default': node 'tool' is a Plain, not a BackpackNode/);
    expect(() => flow.setEntryNode(new Plain({ id: 'tool' }))).toThrow(/cannot make it the entry node: node 'tool' is a Plain/);
  });

  it('is refused when node code calls the base class\'s route method on its own node (the route never exists)', async () => {
    const plain = new Plain({ id: 'tool' });
    class Rewire extends BackpackNode {
      override post() {
        BaseNode.prototype.on.call(this, 'sneak', plain);
        return 'sneak';
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Rewire, { id: 'r' });
    await expect(flow.run({ token: 'SECRET' })).rejects.toThrow(/Node 'r' belongs to flow 'app', which has already run: its routes cannot change/);
    expect(plain.got).toBe('never ran');
  });
});

describe('node identity cannot be forged', () => {
  it('an event a node emits carries its own id, class, run and span, whatever the input says', async () => {
    class Evil extends BackpackNode {
      override post(): undefined {
        this.eventStreamer.emit({ type: 'custom', nodeId: 'verifier', nodeName: 'Verifier', runId: 'other-run', spanId: 's', parentSpanId: 'p', payload: { action: 'approved' } });
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Evil, { id: 'evil' });
    await flow.run(undefined, { runId: 'run-1' });
    const forged = flow.eventStreamer.getHistory().filter((e) => e.payload.action === 'approved');
    expect(forged).toHaveLength(1);
    const started = flow.eventStreamer.getHistory({ type: 'node.started' })[0]!;
    expect(forged[0]).toMatchObject({ nodeId: 'evil', nodeName: 'Evil', namespace: 'app.evil', runId: 'run-1', spanId: started.spanId, parentSpanId: started.parentSpanId });
  });

  it('an id two nodes share is not resolved to either: the owner names it with its namespace', async () => {
    class Evil extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.registerChild({ nodeId: 'verifier', nodeName: 'Verifier', namespace: 'app.evil.verifier' }).handle.pack('claim.verified', true);
      }
    }
    class Verifier extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('verifier.ran', true);
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Verifier, { id: 'verifier' }));
    await flow.run();
    const bp = flow.backpack;
    expect(() => bp.getAccessLog('verifier', 'write')).toThrow(/Node id 'verifier' names 2 nodes \(namespaces 'app.verifier', 'app.evil.verifier'\): name it as \{ nodeId, namespace \}/);
    expect(() => bp.getSnapshotBeforeNode('verifier')).toThrow(/names 2 nodes/);
    expect(bp.getAccessLog({ nodeId: 'verifier', namespace: 'app.verifier' }, 'write')).toEqual(['verifier.ran']);
    expect(bp.getAccessLog({ nodeId: 'verifier', namespace: 'app.evil.verifier' }, 'write')).toEqual(['claim.verified']);
    expect(bp.getSnapshotBeforeNode({ nodeId: 'verifier', namespace: 'app.verifier' }).has('claim.verified')).toBe(true);
    expect(bp.getAccessLog('evil', 'write')).toEqual([]);
  });
});

describe("a node cannot change another node's methods", () => {
  it('a successor cannot be given an own prep, nor a method field be replaced; its own data fields stay writable', async () => {
    const attempts: string[] = [];
    class Auditor extends BackpackNode {
      runs = 0;
      check = (): string => 'genuine';
      override post(bp: BackpackHandle): undefined {
        this.runs++;
        bp.pack('verdict', this.check());
      }
    }
    class Evil extends BackpackNode {
      override post(): undefined {
        const next = this.successors.get('default') as Auditor;
        for (const patch of [
          () => Object.defineProperty(next, 'prep', { value: () => 'patched' }),
          () => void (next.check = () => 'patched'),
          () => void delete (next as Partial<Auditor>).check,
        ]) {
          try {
            patch();
          } catch (error) {
            attempts.push((error as Error).constructor.name);
          }
        }
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const auditor = flow.addNode(Evil, { id: 'evil' }).next(flow.addNode(Auditor, { id: 'auditor' }));
    await flow.run();
    expect(attempts).toEqual(['TypeError', 'TypeError', 'TypeError']);
    expect(flow.backpack.peek('verdict')).toBe('genuine');
    expect(auditor.runs).toBe(1);
  });

  it("a subflow and a composite's internal flow are frozen", () => {
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(BackpackNode, { id: 'inner' });
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const composite = flow.addNode(Composite, { id: 'c' });
    expect(Object.isFrozen(flow.addSubflow({ namespace: 's' }))).toBe(true);
    expect(Object.isFrozen(composite.internalFlow)).toBe(true);
  });
});

describe('delete and quarantine do not tell a node that may not read a key whether it exists', () => {
  it('for any rules, their answer for a key it may not read is the answer for a missing key (property)', async () => {
    await fc.assert(
      fc.asyncProperty(rulesArb, fc.subarray([...KEYS]), fc.boolean(), async (rules, present, quarantine) => {
        const answers: Record<string, boolean> = {};
        class Vault extends BackpackNode {
          override post(bp: BackpackHandle): undefined {
            for (const key of present) bp.pack(key, 'v');
          }
        }
        class Probe extends BackpackNode {
          override get permissions() {
            return { ...rules, write: ['**'] };
          }
          override post(bp: BackpackHandle): undefined {
            for (const key of KEYS) {
              if (bp.has(key) || rules.deny?.some((d) => d === key || (d === 'pii.*' && key.startsWith('pii.')))) continue;
              answers[key] = quarantine ? bp.quarantine(key, { reason: 'probe' }) : bp.delete(key);
            }
          }
        }
        const flow = new Flow({ namespace: 'app' });
        flow.addNode(Vault, { id: 'vault' }).next(flow.addNode(Probe, { id: 'probe' }));
        await flow.run();
        for (const key of Object.keys(answers)) expect(answers[key]).toBe(false);
        // The write itself still happened.
        for (const key of Object.keys(answers)) expect(flow.backpack.has(key)).toBe(false);
      }),
      { numRuns: 40 },
    );
  });
});

describe("a node's constructor (node code) gets no way to its flow", () => {
  it('the context it receives holds an opaque token for the flow: nothing on it reaches the Backpack, and the node still works', async () => {
    const seen: unknown[] = [];
    class Vault extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('token', 'sk-SECRET');
        return undefined;
      }
    }
    class Curious extends BackpackNode {
      constructor(config: ConstructorParameters<typeof BackpackNode>[0], context: ConstructorParameters<typeof BackpackNode>[1]) {
        super(config, context);
        const token = context.flow as unknown as Record<string, unknown>;
        seen.push(Object.getPrototypeOf(token), Reflect.ownKeys(token), reach(() => token['backpack']), Object.isFrozen(token));
      }
      override prep(backpack: BackpackHandle): unknown {
        return backpack.unpack('token') ?? 'hidden';
      }
      override post(backpack: BackpackHandle, prepared: unknown): undefined {
        backpack.pack('seen', prepared);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const vault = flow.addNode(Vault, { id: 'vault' });
    vault.next(flow.addNode(Curious, { id: 'curious', permissions: { deny: ['token'] } }));
    expect(seen).toEqual([null, [], 'null', true]);
    await flow.run();
    expect(flow.backpack.unpack('seen')).toBe('hidden');
    // Made by hand with a context that does not come from a flow, a node is refused, naming the way to make one.
    expect(() => new Curious({ id: 'x' }, { namespace: 'app.x', flow: {} as never })).toThrow(/use flow\.addNode\(Curious/);
  });
});

describe("another node's internal flow is not node code's to change", () => {
  it("a declared internal flow is complete once declared, and no node builds a flow on another one (it would run with that node's rules)", async () => {
    const attempts: string[] = [];
    class Reader extends BackpackNode {
      override prep(backpack: BackpackHandle): unknown {
        return backpack.unpack('token') ?? 'hidden';
      }
      override post(backpack: BackpackHandle, prepared: unknown): undefined {
        backpack.pack('read', prepared);
        return undefined;
      }
    }
    class Composite extends BackpackNode {
      protected override buildInternalFlow(flow: Flow): void {
        flow.addNode(Reader, { id: 'inner' });
      }
    }
    class Vault extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        backpack.pack('token', 'sk-SECRET');
        return undefined;
      }
    }
    class Evil extends BackpackNode {
      override exec(): undefined {
        const target = this.successors.get('default') as Composite;
        attempts.push(reach(() => target.internalFlow!.addNode(Reader, { id: 'planted' })));
        attempts.push(reach(() => target.createNestedFlow()));
        attempts.push(reach(() => target.createInternalFlow()));
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const vault = flow.addNode(Vault, { id: 'vault' });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { deny: ['token'] } });
    const composite = flow.addNode(Composite, { id: 'composite' });
    vault.next(evil).next(composite);
    await flow.run();
    expect(attempts).toEqual([
      expect.stringMatching(/threw Flow 'composite' is the internal flow node 'composite' declared \(buildInternalFlow\), complete once declared and cannot change: cannot add a node/),
      "threw Node 'evil' cannot build a flow on node 'composite': a node builds flows only on itself and on the nodes it runs",
      "threw Node 'evil' cannot build a flow on node 'composite': a node builds flows only on itself and on the nodes it runs",
    ]);
    // The declared flow ran as declared: its one node read the token with the composite's (unrestricted) rules.
    expect(flow.backpack.unpack('read')).toBe('sk-SECRET');
    expect(composite.internalFlow!.getStats().nodeCount).toBe(1);
  });
});

describe("an item's own rules bound the nodes that node code nests", () => {
  it('a nested node reads or writes an item only when the item admits it and every node it runs inside (property)', async () => {
    const ids = ['c', 'auth', 'y'] as const;
    const rule = fc.uniqueArray(fc.constantFrom('**.auth', 'app.c', 'app.c.**', 'app.*', 'app.*.auth', '**'), { minLength: 1, maxLength: 2 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...ids), { minLength: 1, maxLength: 4 }), rule, rule, async (chain, read, write) => {
        const seen: { read?: unknown; wrote?: boolean } = {};
        /** Runs the rest of its chain as a nested flow of its own making; the last one reads and writes the item. */
        class Nest extends BackpackNode {
          override async exec(): Promise<void> {
            const rest = this.config['rest'] as string[];
            if (rest.length > 0) {
              const flow = this.createNestedFlow();
              flow.addNode(Nest, { id: rest[0]!, rest: rest.slice(1) });
              await flow.run({});
              return;
            }
            seen.read = this.backpack.unpack('token');
            try {
              this.backpack.pack('token', 'overwritten');
              seen.wrote = true;
            } catch {
              seen.wrote = false;
            }
          }
        }
        const flow = new Flow({ namespace: 'app' });
        flow.backpack.pack('token', 'SECRET', { nodeId: 'seed', accessControl: { read, write } });
        flow.addNode(Nest, { id: chain[0]!, rest: chain.slice(1) });
        await flow.run();
        // The namespaces of the chain, outermost first: app.c, app.c.auth, ...
        const namespaces = chain.map((_, i) => ['app', ...chain.slice(0, i + 1)].join('.'));
        const admits = (patterns: string[]) => namespaces.every((ns) => patterns.some((p) => matchesNamespace(p, ns)));
        expect(seen.read, `read by ${namespaces.at(-1)} under ${JSON.stringify(read)}`).toBe(admits(read) ? 'SECRET' : undefined);
        expect(seen.wrote, `written by ${namespaces.at(-1)} under ${JSON.stringify(write)}`).toBe(admits(write));
        expect(flow.backpack.peek('token')).toBe(admits(write) ? 'overwritten' : 'SECRET');
      }),
      { numRuns: 200 },
    );
  });
});
