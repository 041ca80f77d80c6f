import { describe, expect, it } from 'vitest';
import { AccessDeniedError, Backpack, BackpackError, KeyNotFoundError, type BackpackEvent } from '../../src/backpack/index.js';

function withSink(options: { strictMode?: boolean } = {}): { bp: Backpack; events: BackpackEvent[] } {
  const events: BackpackEvent[] = [];
  const bp = new Backpack(undefined, { ...options, eventStreamer: { emit: (e) => events.push(e) } });
  return { bp, events };
}

describe('access control (D9)', () => {
  it('allows everything for a node without registered rules and for the owner', () => {
    const bp = new Backpack({ a: 1 });
    expect(bp.unpack('a', 'anyone')).toBe(1);
    bp.registerPermissions('reader', { read: ['b'] });
    expect(bp.unpack('a')).toBe(1);
  });

  it('allows reads matching the read list and denies others (graceful: undefined)', () => {
    const bp = new Backpack({ researchResults: 'r', userQuery: 'q', validationError: 'boom' });
    bp.registerPermissions('summary', { read: ['researchResults', 'userQuery'] });
    expect(bp.unpack('researchResults', 'summary')).toBe('r');
    expect(bp.unpack('validationError', 'summary')).toBeUndefined();
  });

  it('throws AccessDeniedError in strict mode, naming key, node and rule', () => {
    const bp = new Backpack({ validationError: 'boom' }, { strictMode: true });
    bp.registerPermissions('summary', { read: ['researchResults'] });
    const err = (() => {
      try {
        bp.unpack('validationError', 'summary');
      } catch (e) {
        return e as AccessDeniedError;
      }
    })();
    expect(err).toBeInstanceOf(AccessDeniedError);
    expect(err).toBeInstanceOf(BackpackError);
    expect(err!.message).toMatch(/node 'summary' may not read key 'validationError'.*no read rule matches \(read: \[researchResults\]\)/);
    expect(err!.rule).toMatch(/no read rule matches/);
    expect(err!.key).toBe('validationError');
    expect(err!.nodeId).toBe('summary');
  });

  it('lets deny win over allow lists: deny pii.* blocks pii.email', () => {
    const bp = new Backpack();
    bp.pack('pii.email', 'a@b.c');
    bp.pack('pii.name', 'Ann');
    bp.registerPermissions('chat', { read: ['pii.email', 'pii.name'], deny: ['pii.*'] });
    expect(bp.unpack('pii.email', 'chat')).toBeUndefined();
    expect(() => bp.unpackRequired('pii.email', 'chat')).toThrow(/deny 'pii\.\*'/);
    expect(() => bp.pack('pii.name', 'x', { nodeId: 'chat' })).toThrow(AccessDeniedError);
  });

  it('throws AccessDeniedError from unpackRequired whether the excluded key exists or not', () => {
    const bp = new Backpack({ secret: 's' });
    bp.registerPermissions('n', { read: ['public'] });
    expect(() => bp.unpackRequired('secret', 'n')).toThrow(AccessDeniedError);
    expect(() => bp.unpackRequired('does-not-exist', 'n')).toThrow(AccessDeniedError);
    expect(() => bp.unpackRequired('public', 'n')).toThrow(KeyNotFoundError);
  });

  it('applies item-level rules first: a PII item readable by auth-node only (PRD example 4)', () => {
    const bp = new Backpack();
    bp.registerNode({ nodeId: 'auth-node', nodeName: 'Auth', namespace: 'agent.auth' });
    bp.registerNode({ nodeId: 'chat-node-123', nodeName: 'Chat', namespace: 'agent.chat' });
    bp.pack('userEmail', 'user@example.com', { tags: ['pii'], accessControl: { read: ['agent.auth'], write: ['agent.auth'] } });
    expect(bp.unpack('userEmail', 'auth-node')).toBe('user@example.com');
    expect(bp.unpack('userEmail', 'chat-node-123')).toBeUndefined();
    // Refused by an item rule: to the node the key is missing; the reason goes to the denial record only.
    expect(() => bp.unpackRequired('userEmail', 'chat-node-123')).toThrow(KeyNotFoundError);
    expect(bp.getAccessDenials('chat-node-123').at(-1)!.rule).toMatch(/item accessControl\.read allows only \[agent\.auth\]/);
    expect(() => bp.pack('userEmail', 'x', { nodeId: 'chat-node-123' })).toThrow(/may not write key 'userEmail'/);
    expect(() => bp.delete('userEmail', { nodeId: 'chat-node-123' })).toThrow(AccessDeniedError);
    expect(bp.unpack('userEmail')).toBe('user@example.com');
  });

  it("lets the node's deny override an item-level allow", () => {
    const bp = new Backpack();
    bp.pack('token', 't', { accessControl: { read: ['auth'] } });
    bp.registerPermissions('auth', { deny: ['token'] });
    expect(bp.unpack('token', 'auth')).toBeUndefined();
  });

  it('matches namespaceRead against the source namespace of the item', () => {
    const bp = new Backpack();
    bp.pack('facts', 'f', { nodeId: 'r1', namespace: 'sales.research' });
    bp.pack('draft', 'd', { nodeId: 'w1', namespace: 'sales.writer.deep' });
    bp.registerPermissions('summary', { namespaceRead: ['sales.research', 'sales.*'] });
    expect(bp.unpack('facts', 'summary')).toBe('f');
    expect(bp.unpack('draft', 'summary')).toBeUndefined();
    bp.registerPermissions('summary', { namespaceRead: ['sales.**'] });
    expect(bp.unpack('draft', 'summary')).toBe('d');
  });

  it("matches namespaceWrite against the writer's own namespace", () => {
    const bp = new Backpack();
    bp.registerNode({ nodeId: 'w', nodeName: 'W', namespace: 'reporting.daily', permissions: { namespaceWrite: ['reporting.*'] } });
    bp.registerNode({ nodeId: 'v', nodeName: 'V', namespace: 'sales.daily', permissions: { namespaceWrite: ['reporting.*'] } });
    bp.pack('report', 1, { nodeId: 'w' });
    expect(() => bp.pack('report', 2, { nodeId: 'v' })).toThrow(/namespaceWrite: \[reporting\.\*\] \(namespace 'sales\.daily'\)/);
    // The namespace comes from the registration: claiming another one is an error naming both.
    expect(() => bp.pack('report', 3, { nodeId: 'v', namespace: 'reporting.daily' })).toThrow(/registered with namespace 'sales\.daily', not 'reporting\.daily'/);
    expect(bp.unpack('report')).toBe(1);
  });

  it('denies by default only the operation a node declared rules for', () => {
    const bp = new Backpack({ a: 1 });
    bp.registerPermissions('n', { read: ['a'] });
    bp.pack('b', 2, { nodeId: 'n' });
    expect(bp.unpack('b', 'n')).toBeUndefined();
    bp.registerPermissions('m', { write: [] });
    expect(() => bp.pack('c', 3, { nodeId: 'm' })).toThrow(AccessDeniedError);
    expect(bp.unpack('a', 'm')).toBe(1);
  });

  it('records and emits every denial, without values', () => {
    const { bp, events } = withSink();
    bp.pack('secret', 'the-secret-value');
    bp.registerPermissions('n', { deny: ['secret'] });
    bp.unpack('secret', 'n');
    expect(() => bp.pack('secret', 'x', { nodeId: 'n' })).toThrow(AccessDeniedError);
    const denials = bp.getAccessDenials('n');
    expect(denials.map((d) => [d.key, d.operation, d.rule])).toEqual([
      ['secret', 'read', "deny 'secret'"],
      ['secret', 'write', "deny 'secret'"],
    ]);
    const denied = events.filter((e) => e.type === 'access.denied');
    expect(denied.map((e) => e.payload)).toEqual([
      { key: 'secret', operation: 'read', rule: "deny 'secret'" },
      { key: 'secret', operation: 'write', rule: "deny 'secret'" },
    ]);
    expect(denied[0]!.nodeId).toBe('n');
    expect(JSON.stringify(denied)).not.toContain('the-secret-value');
    expect(bp.getAccessDenials('other')).toEqual([]);
  });

  it('filters namespace queries to what the node may read', () => {
    const bp = new Backpack();
    bp.pack('pub', 1, { nodeId: 'a', namespace: 'sales.a' });
    bp.pack('pii.x', 2, { nodeId: 'a', namespace: 'sales.a' });
    const h = bp.registerNode({ nodeId: 'r', nodeName: 'R', namespace: 'r', permissions: { namespaceRead: ['sales.*'], deny: ['pii.*'] } }).handle;
    expect(h.unpackByNamespace('sales.*')).toEqual({ pub: 1 });
    expect(h.getItemsByNamespace('sales.*').map((i) => i.key)).toEqual(['pub']);
    expect(h.has('pii.x')).toBe(false);
    expect(h.peek('pii.x')).toBeUndefined();
    expect(h.getItem('pii.x')).toBeUndefined();
  });

  it('validates registered permissions and returns them', () => {
    const bp = new Backpack();
    expect(() => bp.registerPermissions('n', { read: 'a' as unknown as string[] })).toThrow(/node 'n' at 'read'/);
    expect(() => bp.registerPermissions('n', { reed: ['a'] } as never)).toThrow(/node 'n'/);
    expect(() => bp.registerPermissions('n', { deny: [''] })).toThrow(/deny\[0\]/);
    bp.registerPermissions('n', { read: ['a'], namespaceRead: ['x.*'] });
    expect(bp.getPermissions('n')).toEqual({ read: ['a'], namespaceRead: ['x.*'] });
    expect(bp.getPermissions('other')).toBeUndefined();
  });

  it('requires write access to every key for a node to clear', () => {
    const bp = new Backpack({ a: 1, b: 2 });
    bp.registerPermissions('n', { write: ['a'] });
    expect(() => bp.clear({ nodeId: 'n' })).toThrow(/may not write key 'b'/);
    expect(bp.size).toBe(2);
  });
});

describe('access denial log', () => {
  it('keeps the newest maxHistorySize denials', () => {
    const bp = new Backpack({ s: 1 }, { maxHistorySize: 3 });
    bp.registerPermissions('n', { read: [] });
    for (let i = 0; i < 10; i++) bp.unpack(`k${i}`, 'n');
    expect(bp.getAccessDenials().map((d) => d.key)).toEqual(['k7', 'k8', 'k9']);
    expect(bp.toJSON().accessDenials.map((d) => d.key)).toEqual(['k7', 'k8', 'k9']);
  });
});
