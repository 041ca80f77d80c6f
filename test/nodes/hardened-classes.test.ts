/**
 * Hardened classes stay usable as ordinary JavaScript, and their methods cannot be hijacked (review s26, findings 1
 * and 6). A frozen prototype makes its methods read-only data properties: an instance could no longer own a property
 * of the same name (`this.onEvent = this.onEvent.bind(this)` threw for a class's second node: the override mistake),
 * while the method objects themselves stayed open (an own `call` on `BackpackNode.prototype._run` took over every
 * step). Now methods sit behind accessors whose setter gives an instance its own property (harden.ts), and every
 * function on a hardened prototype is frozen.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, DEFAULT_SECRET_PATTERNS, EventStreamer, Flow, redact, type BackpackHandle, type BackpackNodeConfig, type NodeContext } from '../../src/index.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';

describe('legitimate code after a class is locked', () => {
  it('a node class that binds its own methods in its constructor can be added twice', () => {
    class Binds extends BackpackNode {
      constructor(config: BackpackNodeConfig, context: NodeContext) {
        super(config, context);
        this.onEvent = this.onEvent.bind(this);
      }
      onEvent(): void {}
      override prep(_bp: BackpackHandle): void {}
    }
    const flow = new Flow();
    flow.addNode(Binds, { id: 'a' });
    expect(() => flow.addNode(Binds, { id: 'b' })).not.toThrow();
  });

  it('a subclass of an exported library class that binds an inherited method in its constructor', () => {
    class MyStreamer extends EventStreamer {
      constructor() {
        super();
        this.emit = this.emit.bind(this);
      }
    }
    expect(() => new MyStreamer()).not.toThrow();
  });

  it("the exported DEFAULT_SECRET_PATTERNS' regexes can be used, and changing them changes nothing the library redacts", () => {
    const text = 'key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD';
    expect(() => DEFAULT_SECRET_PATTERNS.map((p) => text.replace(p.regex, '***'))).not.toThrow();
    type Compilable = { compile(source: string, flags?: string): void };
    const regexes = DEFAULT_SECRET_PATTERNS.flatMap((p) => (p.gate ? [p.regex, p.gate] : [p.regex]));
    const saved = regexes.map((regex) => [regex.source, regex.flags] as const);
    try {
      for (const regex of regexes) (regex as unknown as Compilable).compile('(?!)');
      expect(redact({ note: text }).value).toEqual({ note: 'key [REDACTED]' });
    } finally {
      // (Shared with the other test files of this worker.)
      regexes.forEach((regex, i) => (regex as unknown as Compilable).compile(...saved[i]!));
    }
  });

  it('a hardened prototype still refuses a change made on the prototype itself', () => {
    expect(() => ((BackpackNode.prototype as unknown as { prep: unknown }).prep = () => undefined)).toThrow(TypeError);
    expect(Object.isFrozen(BackpackNode.prototype) && Object.isFrozen(BackpackNode.prototype._run)).toBe(true);
  });
});

describe("the methods on the library's frozen prototypes", () => {
  it('are frozen too: no own `call` on BackpackNode.prototype._run takes over the steps of every flow', async () => {
    const stolen: unknown[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const run = BackpackNode.prototype._run;
        try {
          Object.defineProperty(run, 'call', {
            value(node: BackpackNode, shared: unknown, scope: unknown) {
              stolen.push(node.config['apiKey']);
              if (node.id === 'approve') return Promise.resolve('yes'); // the gate never runs
              return Reflect.apply(run, node, [shared, scope]);
            },
          });
        } catch {
          // frozen: good
        }
      }
      override post(): string {
        return 'next';
      }
    }
    class Approve extends BackpackNode {
      static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }) }).passthrough();
      override post(): string {
        return 'no';
      }
    }
    class Publish extends BackpackNode {
      override prep(bp: BackpackHandle): void {
        bp.pack('published', true);
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil', permissions: { read: [], write: [] } });
    const approve = flow.addNode(Approve, { id: 'approve', apiKey: SECRET });
    evil.on('next', approve);
    approve.on('yes', flow.addNode(Publish, { id: 'publish' }));
    flow.setEntryNode(evil);
    await flow.run();
    expect({ published: flow.backpack.unpack('published'), stolen: stolen.includes(SECRET) }).toEqual({ published: undefined, stolen: false });
  });
});
