/**
 * The quick pass of prepareValue over a grown array's kept elements (values.ts), on adversarial packs over a stored
 * array: proxies, getters on indices (that change their answer, or shrink the array), sparse arrays, holes the
 * prototype fills, -0/NaN, elements shared with the stored value, arrays longer or shorter, adopted stored values.
 * What is stored is sized and flagged as a fresh pack of it would be, each element is read once, and growth is
 * recorded only when the stored array really starts with the stored one's elements. (From the review of session 19,
 * whose differential form compared it with the walk before the quick pass.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as NEW from '../../src/backpack/values.js';
import { trials } from '../support/soak.js';

type Mod = Pick<typeof NEW, 'prepareValue' | 'adoptValue' | 'extendsStored' | 'isStoredJson'>;

/** A canonical text of a stored value: -0, NaN, undefined, holes, bigint, Maps, Sets, Dates and frozenness told apart. */
function canon(v: unknown, seen = new Set<object>()): string {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return 'undefined';
  if (v === null || typeof v !== 'object') return String(v);
  if (seen.has(v)) return '<cycle>';
  seen.add(v);
  const f = Object.isFrozen(v) ? '' : '~mutable~';
  let out: string;
  if (Array.isArray(v)) {
    const parts: string[] = [];
    for (let i = 0; i < v.length; i++) parts.push(i in v ? canon(v[i], seen) : '<hole>');
    const extra = Object.keys(v).filter((k) => !/^\d+$/.test(k));
    out = `[${parts.join(',')}]${extra.length ? `+${extra.join('|')}` : ''}`;
  } else if (v instanceof Map) out = `Map(${[...v].map(([k, x]) => `${canon(k, seen)}=>${canon(x, seen)}`).join(',')})`;
  else if (v instanceof Set) out = `Set(${[...v].map((x) => canon(x, seen)).join(',')})`;
  else if (v instanceof Date) out = `Date(${v.getTime()})`;
  else {
    const proto = Object.getPrototypeOf(v);
    out = `${proto === null ? 'null:' : ''}{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k], seen)}`).join(',')}}`;
  }
  seen.delete(v);
  return f + out;
}

const leaf = fc.oneof(
  fc.string({ maxLength: 3 }),
  fc.constantFrom(0, -0, NaN, 1, Infinity, -1.5, true, null, undefined, 10n, ''),
  fc.integer(),
);
const element: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small', maxDepth: 2 }, leaf, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.constantFrom('a', 'b', '$bp'), tie('v'), { maxKeys: 2 })),
})).v;

type Kind = 'grow' | 'replace' | 'proxy' | 'getter-flip' | 'getter-shrink' | 'sparse' | 'negzero' | 'shorter' | 'same' | 'shared-elsewhere' | 'proto-hole';
const spec = fc.record({
  first: fc.array(element, { maxLength: 6 }),
  extra: fc.array(element, { maxLength: 3 }),
  change: element,
  at: fc.nat(10),
  kind: fc.constantFrom<Kind>('grow', 'replace', 'proxy', 'getter-flip', 'getter-shrink', 'sparse', 'negzero', 'shorter', 'same', 'shared-elsewhere', 'proto-hole'),
  adopt: fc.boolean(),
  nest: fc.boolean(),
});
type Spec = typeof spec extends fc.Arbitrary<infer T> ? T : never;

/** JSON-only copy of `first` (what adoptValue takes). */
function jsonOnly(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : x === undefined ? null : x)) ?? 'null');
}

/** A mutable deep copy of a stored value (arrays and plain objects rebuilt, holes kept), for a fresh pack. */
function thaw(v: unknown): unknown {
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) if (i in v) out[i] = thaw(v[i]);
    return out;
  }
  if (v !== null && typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
    const out: Record<string, unknown> = Object.getPrototypeOf(v) === null ? Object.create(null) : {};
    for (const k of Object.keys(v)) Object.defineProperty(out, k, { value: thaw((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

function run(M: Mod, s: Spec): { freshBytes: number; freshJson: boolean | undefined; canon: string; bytes: number; copyOnRead: boolean; json: boolean | undefined; ext: boolean; sameElements: boolean; reads: number[] } {
  let prev: unknown[];
  if (s.adopt) {
    prev = jsonOnly(s.first) as unknown[];
    M.adoptValue('k', prev);
  } else prev = M.prepareValue('k', s.first).value as unknown[];
  const reads: number[] = [];
  let next: unknown[];
  const j = prev.length === 0 ? 0 : s.at % prev.length;
  switch (s.kind) {
    case 'grow':
      next = [...prev, ...s.extra];
      break;
    case 'same':
      next = [...prev];
      break;
    case 'replace':
      next = [...prev, ...s.extra];
      if (prev.length > 0) next[j] = s.change;
      break;
    case 'negzero':
      next = [...prev, ...s.extra].map((x) => (x === 0 ? (Object.is(x, 0) ? -0 : 0) : x));
      break;
    case 'shorter':
      next = prev.slice(0, Math.max(0, prev.length - 1));
      break;
    case 'shared-elsewhere':
      // Stored elements, in another order (objects shared with the stored value, not in place).
      next = [...prev].reverse().concat(s.extra);
      break;
    case 'proxy': {
      const target = [...prev, ...s.extra];
      next = new Proxy(target, {
        get(t, p, r) {
          if (typeof p === 'string' && /^\d+$/.test(p)) reads.push(Number(p));
          return Reflect.get(t, p, r);
        },
      });
      break;
    }
    case 'getter-flip': {
      // Index j answers the stored element at the first read, `change` at any later read.
      next = [...prev, ...s.extra];
      if (prev.length > 0) {
        let n = 0;
        Object.defineProperty(next, j, {
          get: () => {
            reads.push(j);
            return n++ === 0 ? prev[j] : s.change;
          },
          enumerable: true,
        });
      }
      break;
    }
    case 'getter-shrink': {
      // Reading index j empties the array (elements after it are gone).
      next = [...prev, ...s.extra];
      if (prev.length > 0) {
        const arr = next;
        const keep = prev[j];
        Object.defineProperty(arr, j, {
          get: () => {
            reads.push(j);
            arr.length = j + 1;
            return keep;
          },
          enumerable: true,
          configurable: true,
        });
      }
      break;
    }
    case 'sparse': {
      next = new Array(prev.length + s.extra.length);
      for (let i = 0; i < prev.length; i++) if (i !== j) next[i] = prev[i];
      for (let i = 0; i < s.extra.length; i++) next[prev.length + i] = s.extra[i];
      break;
    }
    case 'proto-hole': {
      // A hole the prototype chain fills with the stored element (read through Array.prototype).
      next = new Array(prev.length + s.extra.length);
      for (let i = 0; i < prev.length; i++) if (i !== j) next[i] = prev[i];
      for (let i = 0; i < s.extra.length; i++) next[prev.length + i] = s.extra[i];
      break;
    }
  }
  const polluted = s.kind === 'proto-hole' && prev.length > 0;
  if (polluted) (Array.prototype as unknown as Record<number, unknown>)[j] = prev[j];
  let over;
  try {
    over = s.nest ? M.prepareValue('k', { list: next, n: 1 }, { list: prev, n: 1 }) : M.prepareValue('k', next, prev);
  } finally {
    if (polluted) delete (Array.prototype as unknown as Record<number, unknown>)[j];
  }
  const list = (s.nest ? (over.value as { list: unknown[] }).list : over.value) as unknown[];
  const fresh = M.prepareValue('k', thaw(over.value));
  const sameElements = list.length >= prev.length && prev.every((x, i) => i in list && Object.is(x, list[i]));
  return {
    canon: canon(over.value),
    bytes: over.bytes,
    copyOnRead: over.copyOnRead,
    json: typeof over.value === 'object' && over.value !== null ? M.isStoredJson(over.value) : undefined,
    ext: M.extendsStored(list, prev),
    sameElements,
    reads,
    freshBytes: fresh.bytes,
    freshJson: typeof fresh.value === 'object' && fresh.value !== null ? M.isStoredJson(fresh.value) : undefined,
  };
}

describe('prepareValue over a stored array: the quick pass over kept elements', () => {
  it('stores what is sized and flagged as a fresh pack of it would be, and records growth only for real growth, whatever the packer did (property)', () => {
    fc.assert(
      fc.property(spec, (s) => {
        const now = run(NEW, s);
        expect(now.bytes).toBe(now.freshBytes);
        if (now.json !== undefined) expect(now.json).toBe(now.freshJson);
        if (now.ext) expect(now.sameElements).toBe(true);
        return true;
      }),
      { numRuns: trials(800, 8000) },
    );
  });

  it('reads each element of a proxy or getter once (property)', () => {
    fc.assert(
      fc.property(spec.filter((s) => s.kind === 'proxy' || s.kind === 'getter-flip'), (s) => {
        const { reads } = run(NEW, s);
        expect(new Set(reads).size).toBe(reads.length);
        return true;
      }),
      { numRuns: trials(400, 4000) },
    );
  });

  it("copies an adopted list's inner objects into a list grown from it, as the walk does (they are not stored values of their own)", () => {
    const config = [['visible'], { a: 1 }];
    NEW.adoptValue('list', config);
    const grown = NEW.prepareValue('list', [...config, 'x'], config).value as unknown[];
    expect(grown[0]).toEqual(['visible']);
    expect(grown[0]).not.toBe(config[0]);
    expect(grown[1]).not.toBe(config[1]);
    expect(NEW.extendsStored(grown, config)).toBe(false);
  });

  it('refuses to adopt an array holding properties besides its elements (a toJSON would write something else than its data)', () => {
    const inner: unknown[] & { toJSON?: () => unknown } = ['visible'];
    inner.toJSON = () => 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
    expect(() => NEW.adoptValue('list', [inner])).toThrow(/the value at '\[0\]' has properties other than its elements/);
    const tagged = Object.assign(['a'], { note: 'x' });
    expect(() => NEW.adoptValue('list', tagged)).toThrow(/the value has properties other than its elements/);
  });
});
