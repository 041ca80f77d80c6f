/**
 * Copies of events (or their payloads) for code that must not change them: node code (DESIGN D6, D12). The streamer
 * hands the owner's subscribers, its history and the durable runtime one event object each; a node gets a copy of its
 * own instead, made when it asks (see nodes/event-view.ts), so that nothing a node holds is an object anyone else
 * reads. Found by the adversarial review of 2026-11-28: a node that kept the object its `emit` returned, or one its
 * subscriber got, could rewrite it into another node's `node.completed` or a `checkpoint.saved` before the step's
 * batch was written.
 */

/**
 * A copy of `value` that shares no object a caller could change with it: plain objects and arrays are copied
 * member by member and frozen (a `__proto__` key stays an own key, as in the original); Maps, Sets, Dates, typed
 * arrays and ArrayBuffers are copied (`Object.freeze` does not freeze their contents, so each copy is its holder's
 * own); an instance of another class (or a Proxy that claims to be one) becomes its JSON form, taken now and copied
 * as data (the log records events as JSON anyway): so nothing its holder changes, and no trap or `toJSON` that runs
 * later, changes the copy. One whose JSON form cannot be taken (a cycle through it, a BigInt) is kept as it is.
 * Functions are kept (JSON leaves them out). Cycles of plain data stay cycles; getters are read once, into data
 * properties. Any depth: the copy
 * uses a work list, not recursion (the store then decides what it can write: the redaction pass refuses a value
 * nested over 5,000 levels, naming it).
 */
export function snapshot<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const seen = new Map<object, unknown>();
  /** Tasks, last in first out: each sets one member of a copy, or freezes a copy once its members are set. */
  const work: (() => void)[] = [];
  const copyOf = (member: unknown): unknown => {
    if (member === null || typeof member !== 'object') return member;
    return seen.has(member) ? seen.get(member) : shell(member);
  };
  /** A new copy of `original`, empty; tasks on `work` fill its members in order. */
  const shell = (original: object): unknown => {
    if (Array.isArray(original)) {
      const out: unknown[] = new Array(original.length);
      seen.set(original, out);
      fill(original.length, (i) => (out[i] = copyOf(original[i])), () => Object.freeze(out));
      return out;
    }
    const proto = Object.getPrototypeOf(original) as unknown;
    if (proto === Object.prototype || proto === null) {
      const out: Record<string, unknown> = proto === null ? Object.create(null) : {};
      seen.set(original, out);
      const keys = Object.keys(original);
      fill(keys.length, (i) => {
        const key = keys[i]!;
        const member = copyOf((original as Record<string, unknown>)[key]);
        if (key === '__proto__') Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true });
        else out[key] = member;
      }, () => Object.freeze(out));
      return out;
    }
    if (original instanceof Map) {
      const out = new Map<unknown, unknown>();
      seen.set(original, out);
      const entries = [...original];
      fill(entries.length, (i) => out.set(copyOf(entries[i]![0]), copyOf(entries[i]![1])));
      return out;
    }
    if (original instanceof Set) {
      const out = new Set<unknown>();
      seen.set(original, out);
      const items = [...original];
      fill(items.length, (i) => out.add(copyOf(items[i])));
      return out;
    }
    if (original instanceof Date) return new Date(original.getTime());
    if (ArrayBuffer.isView(original) && !(original instanceof DataView)) return (original as unknown as { slice(): unknown }).slice();
    if (original instanceof ArrayBuffer) return original.slice(0);
    let form: unknown;
    try {
      form = JSON.parse(JSON.stringify(original) ?? 'null');
    } catch {
      return original;
    }
    const copied = form === null || typeof form !== 'object' ? form : shell(form);
    seen.set(original, copied);
    return copied;
  };
  /**
   * Queues `set(0)` ... `set(count - 1)`, then `done`: each member is set before the next one (so a copied object
   * lists its keys in the original's order), after what the previous member queued (depth first).
   */
  const fill = (count: number, set: (i: number) => void, done?: () => void): void => {
    const step = (i: number): void => {
      if (i === count) return done?.();
      work.push(() => step(i + 1));
      set(i);
    };
    work.push(() => step(0));
  };
  const root = copyOf(value);
  for (let task = work.pop(); task !== undefined; task = work.pop()) task();
  return root as T;
}
