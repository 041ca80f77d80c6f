/**
 * Issue 12's property: whatever the permissions (declared as a field, a getter, a static or in the config; key
 * lists, deny globs, namespace rules, item rules, an enclosing composite's rules) and whatever a node reads through
 * (its handle, its event view, live subscriptions, and the owner's as-node reads: history, snapshots, diff, export),
 * a node never learns a value or the existence of an item it may not read: its observations are the same whether
 * those items exist or not, and match an independent model of D9. Every commit is attributed to the node that made it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BackpackHandle, ItemAccessControl, NodePermissions } from '../../src/backpack/index.js';
import { BackpackNode, Flow, type BackpackNodeClass } from '../../src/nodes/index.js';
import { trials } from '../support/soak.js';

const KEYS = ['a', 'a.b', 'pii.x', 'sales.c', 'doc'] as const;
const KEY_PATTERNS = ['a', 'a.*', 'a.**', 'pii.*', '*', '**', 'sales.c', 'doc', 'none'];
const NS_PATTERNS = ['agent.w', 'agent.*', 'agent.**', 'agent.sales.*', 'agent.r', 'agent.c.r', 'agent.c.*', 'other.**'];
const WRITERS = ['w', 'v'] as const;
const WRITER_NS: Record<(typeof WRITERS)[number], string> = { w: 'agent.w', v: 'agent.sales.v' };

type How = 'field' | 'getter' | 'static' | 'config';
interface Item {
  key: (typeof KEYS)[number];
  writer: (typeof WRITERS)[number];
  acl?: ItemAccessControl;
}
interface Scenario {
  items: Item[];
  reader: NodePermissions | undefined;
  how: How;
  composite: NodePermissions | undefined | 'none';
  strict: boolean;
  queries: string[];
}

const patterns = (pool: string[]) => fc.option(fc.uniqueArray(fc.constantFrom(...pool), { maxLength: 3 }), { nil: undefined });
const permsArb: fc.Arbitrary<NodePermissions | undefined> = fc.option(
  fc.record({ read: patterns(KEY_PATTERNS), deny: patterns(KEY_PATTERNS), namespaceRead: patterns(NS_PATTERNS) }).map((p) => {
    const out: NodePermissions = {};
    for (const [k, v] of Object.entries(p)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
    return out;
  }),
  { nil: undefined },
);
const itemArb: fc.Arbitrary<Item> = fc.record(
  { key: fc.constantFrom(...KEYS), writer: fc.constantFrom(...WRITERS), acl: fc.option(fc.record({ read: fc.uniqueArray(fc.constantFrom(...NS_PATTERNS), { minLength: 1, maxLength: 2 }) }), { nil: undefined }) },
  { requiredKeys: ['key', 'writer'] },
);
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  items: fc.uniqueArray(itemArb, { selector: (i) => i.key, maxLength: KEYS.length }),
  reader: permsArb,
  how: fc.constantFrom<How>('field', 'getter', 'static', 'config'),
  composite: fc.oneof(fc.constant('none' as const), permsArb),
  strict: fc.boolean(),
  queries: fc.uniqueArray(fc.constantFrom('agent.*', 'sales.**', '**', 'agent.w'), { maxLength: 2 }),
});

// ---- an independent model of D5 and D9

function matches(pattern: string, name: string): boolean {
  const go = (p: string[], n: string[]): boolean => {
    if (p.length === 0) return n.length === 0;
    if (p[0] === '**') return Array.from({ length: n.length + 1 }, (_, i) => i).some((i) => go(p.slice(1), n.slice(i)));
    if (n.length === 0) return false;
    return (p[0] === '*' ? n[0] !== '' : p[0] === n[0]) && go(p.slice(1), n.slice(1));
  };
  return go(pattern.split('.'), name.split('.'));
}
const any = (ps: readonly string[] | undefined, name: string) => (ps ?? []).some((p) => matches(p, name));

function rulesAllow(perms: NodePermissions | undefined, key: string, sourceNs: string, itemAllowed: boolean): boolean {
  if (!perms) return true;
  if (any(perms.deny, key)) return false;
  if (itemAllowed) return true;
  if (any(perms.read, key) || any(perms.namespaceRead, sourceNs)) return true;
  return perms.read === undefined && perms.namespaceRead === undefined;
}

function modelReadable(s: Scenario, item: Item, readerNs: string): boolean {
  const sourceNs = WRITER_NS[item.writer];
  if (item.acl?.read && !any(item.acl.read, readerNs)) return false;
  // An item's own rules bound the composite the reader runs inside too (its parts gain nothing it lacks).
  if (item.acl?.read && s.composite !== 'none' && !any(item.acl.read, 'agent.c')) return false;
  if (!rulesAllow(s.reader, item.key, sourceNs, item.acl?.read !== undefined)) return false;
  return s.composite === 'none' || rulesAllow(s.composite, item.key, sourceNs, false);
}

// ---- one run

const VOLATILE = new Set(['id', 'seq', 'timestamp', 'durationMs', 'commitId', 'lineage', 'lineages', 'spanId', 'parentSpanId', 'runId', 'baseSeq', 'baseTimestamp', 'bytes']);
const normalize = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value, (k, v) => (VOLATILE.has(k) ? undefined : v))));
const secretOf = (key: string) => `<secret value of ${key}>`;

function readerClass(s: Scenario, observe: (what: string, value: unknown) => void): BackpackNodeClass {
  class Reader extends BackpackNode {
    override prep(backpack: BackpackHandle) {
      this.eventStreamer.on('*', (e) => void observe('live', normalize(e)));
      for (const key of [...KEYS, 'absent']) {
        observe(`unpack ${key}`, attempt(() => backpack.unpack(key)));
        observe(`required ${key}`, attempt(() => backpack.unpackRequired(key)));
        observe(`peek ${key}`, backpack.peek(key));
        observe(`has ${key}`, backpack.has(key));
        observe(`item ${key}`, normalize(backpack.getItem(key)));
      }
      observe('keys', backpack.keys());
      for (const q of s.queries) {
        observe(`ns ${q}`, backpack.unpackByNamespace(q));
        observe(`items ${q}`, normalize(backpack.getItemsByNamespace(q)));
      }
      observe('history', normalize(this.eventStreamer.getHistory()));
      observe('flow', normalize(this.flow));
      return undefined;
    }
  }
  const perms = s.reader;
  if (s.how === 'field') return class extends Reader { override readonly permissions = perms; };
  if (s.how === 'getter') return class extends Reader { override get permissions() { return perms; } };
  if (s.how === 'static') return class extends Reader { static permissions = perms; };
  return Reader;
}

function attempt(read: () => unknown): unknown {
  try {
    return { value: read() };
  } catch (e) {
    return { error: (e as Error).name, message: (e as Error).message };
  }
}

async function observeRun(s: Scenario, items: Item[]): Promise<{ seen: Record<string, unknown[]>; readerNs: string; commits: { action: string; nodeId?: string; namespace?: string; key: string }[] }> {
  const seen: Record<string, unknown[]> = {};
  const observe = (what: string, value: unknown) => void (seen[what] ??= []).push(value);
  const flow = new Flow({ namespace: 'agent', backpackOptions: { strictMode: s.strict } });
  class Writer extends BackpackNode {
    override post(backpack: BackpackHandle) {
      for (const item of items) if (item.writer === this.id) backpack.pack(item.key, secretOf(item.key), item.acl ? { accessControl: item.acl } : undefined);
      return undefined;
    }
  }
  const w = flow.addNode(Writer, { id: 'w' });
  const salesV = flow.addSubflow({ namespace: 'sales' });
  const v = salesV.addNode(Writer, { id: 'v' });
  const Reader = readerClass(s, observe);
  const config = s.how === 'config' && s.reader ? { permissions: s.reader } : {};
  let reader: BackpackNode;
  if (s.composite === 'none') {
    reader = flow.addNode(Reader, { id: 'r', ...config });
  } else {
    const outer = s.composite;
    class Composite extends BackpackNode {
      override readonly permissions = outer;
      protected override buildInternalFlow(inner: Flow) {
        inner.addNode(Reader, { id: 'r', ...config });
      }
    }
    reader = flow.addNode(Composite, { id: 'c' });
  }
  salesV.setEntryNode(v);
  w.next(salesV);
  salesV.next(reader);
  await flow.run();
  const bp = flow.backpack;
  const readerNs = s.composite === 'none' ? 'agent.r' : 'agent.c.r';
  const as = { nodeId: 'r' };
  observe('owner history as r', normalize(bp.getHistory(as)));
  observe('owner snapshot as r', normalize(bp.getSnapshot(Date.now(), as).toObject()));
  observe('owner toObject as r', bp.toObject('r'));
  observe('owner ns as r', bp.unpackByNamespace('**', 'r'));
  observe('owner export as r', normalize(bp.exportState(undefined, as)));
  observe('owner json as r', normalize(bp.toJSON(as)));
  observe('owner diff as r', normalize(bp.diff(bp.getSnapshot(0), bp, as)));
  observe('owner quarantined as r', normalize([...bp.getQuarantined(as)]));
  return { seen, readerNs, commits: bp.getHistory().map((c) => ({ action: c.action, nodeId: c.nodeId, namespace: c.namespace, key: c.key })) };
}

describe('trust property (issue 12)', () => {
  it('a node never learns a value or the existence of an item it may not read, and every commit names its maker', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const readerNs = s.composite === 'none' ? 'agent.r' : 'agent.c.r';
        const readable = s.items.filter((i) => modelReadable(s, i, readerNs));
        const full = await observeRun(s, s.items);
        const onlyReadable = await observeRun(s, readable);
        // Invariance: the hidden items change nothing the node (or the owner asking as the node) can observe.
        expect(full.seen).toStrictEqual(onlyReadable.seen);
        // Agreement with the model: what it may read, it reads; nothing else appears.
        const text = JSON.stringify(full.seen);
        for (const item of s.items) {
          if (readable.includes(item)) expect(full.seen[`peek ${item.key}`]).toEqual([secretOf(item.key)]);
          else expect(text).not.toContain(secretOf(item.key));
        }
        // Attribution: packs by their writer, reads by the reader, with registered namespaces.
        for (const c of full.commits) {
          if (c.action === 'pack') expect([c.nodeId, c.namespace]).toEqual([KEYS.includes(c.key as never) ? s.items.find((i) => i.key === c.key)!.writer : undefined, WRITER_NS[s.items.find((i) => i.key === c.key)!.writer]]);
          if (c.action === 'unpack') expect([c.nodeId, c.namespace]).toEqual(['r', full.readerNs]);
        }
      }),
      { numRuns: trials(50, 600) },
    );
  });
});
