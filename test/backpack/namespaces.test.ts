import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError } from '../../src/backpack/index.js';

function sample(): Backpack {
  const bp = new Backpack();
  bp.pack('chat', 1, { nodeId: 'c', namespace: 'sales.chat' });
  bp.pack('research', 2, { nodeId: 'r', namespace: 'sales.research' });
  bp.pack('web', 3, { nodeId: 'w', namespace: 'sales.research.web' });
  bp.pack('support', 4, { nodeId: 's', namespace: 'support.chat' });
  bp.pack('plain', 5);
  return bp;
}

describe('namespace queries (D5)', () => {
  it('matches exact namespaces', () => {
    expect(sample().unpackByNamespace('sales.chat')).toEqual({ chat: 1 });
  });

  it('matches * as one segment and ** as any depth', () => {
    const bp = sample();
    expect(bp.unpackByNamespace('sales.*')).toEqual({ chat: 1, research: 2 });
    expect(bp.unpackByNamespace('*.chat')).toEqual({ chat: 1, support: 4 });
    expect(bp.unpackByNamespace('sales.**')).toEqual({ chat: 1, research: 2, web: 3 });
    expect(bp.unpackByNamespace('**')).toEqual({ chat: 1, research: 2, web: 3, support: 4 });
  });

  it('handles edge cases: items without a namespace, no match, invalid pattern', () => {
    const bp = sample();
    expect(bp.unpackByNamespace('nothing.*')).toEqual({});
    expect(Object.keys(bp.unpackByNamespace('**'))).not.toContain('plain');
    expect(() => bp.unpackByNamespace('')).toThrow(BackpackError);
  });

  it('returns items with metadata and lists namespaces', () => {
    const bp = sample();
    const items = bp.getItemsByNamespace('sales.research.*');
    expect(items.map((i) => [i.key, i.metadata.sourceNodeId, i.metadata.sourceNamespace])).toEqual([['web', 'w', 'sales.research.web']]);
    expect(bp.getNamespaces()).toEqual(['sales.chat', 'sales.research', 'sales.research.web', 'support.chat']);
  });

  it('keeps the index in step with repacks, deletes, quarantine and clear', () => {
    const bp = sample();
    bp.pack('chat', 10, { nodeId: 'x', namespace: 'marketing.chat' });
    expect(bp.unpackByNamespace('sales.*')).toEqual({ research: 2 });
    expect(bp.unpackByNamespace('marketing.*')).toEqual({ chat: 10 });
    bp.delete('research');
    bp.quarantine('web', { reason: 'stale' });
    expect(bp.unpackByNamespace('sales.**')).toEqual({});
    expect(bp.getNamespaces()).toEqual(['marketing.chat', 'support.chat']);
    bp.clear();
    expect(bp.getNamespaces()).toEqual([]);
  });

  it('records a read for each key unpacked by namespace', () => {
    const bp = sample();
    const before = bp.headSeq;
    bp.forNode({ nodeId: 'q', nodeName: 'Q', namespace: 'q' }).unpackByNamespace('sales.*');
    const reads = bp.getHistory({ sinceSeq: before });
    expect(reads.map((c) => [c.action, c.key, c.nodeId])).toEqual([
      ['unpack', 'chat', 'q'],
      ['unpack', 'research', 'q'],
    ]);
    expect(bp.getAccessLog('q', 'read')).toEqual(['chat', 'research']);
  });
});
