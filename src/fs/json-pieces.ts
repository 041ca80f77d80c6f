/**
 * `JSON.stringify` of a large value in pieces, so that writing a value of hundreds of megabytes never holds its
 * whole text (nor the bytes of it) at once: the file writers (atomic writes, the event log) take the pieces one by
 * one. The text is exactly `JSON.stringify(value)`: small parts are stringified natively, only the containers
 * around them are walked here.
 */

/** A container with more members than this (counted all through) is walked; a smaller one is stringified at once. */
const NATIVE_BUDGET = 4096;

/** Pieces are handed out once they reach about this many characters. */
const PIECE_LENGTH = 1 << 20;

/** Whether `value` holds more than `budget` members all through (stops counting there). */
export function isLargeJson(value: unknown, budget = NATIVE_BUDGET): boolean {
  return membersLeft(value, budget) < 0;
}

/** `left` less the members of `value` all through; stops below zero. */
function membersLeft(value: unknown, left: number): number {
  if (value === null || typeof value !== 'object') return left;
  if (Array.isArray(value)) {
    left -= value.length;
    for (let i = 0; i < value.length && left >= 0; i++) left = membersLeft(value[i], left);
    return left;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (--left < 0) return left;
    left = membersLeft((value as Record<string, unknown>)[key], left);
    if (left < 0) return left;
  }
  return left;
}

class PieceWriter {
  text = '';
  readonly ancestors = new Set<object>();
  constructor(readonly emit: (piece: string) => void) {}

  add(text: string): void {
    this.text += text;
    if (this.text.length >= PIECE_LENGTH) this.flush();
  }

  flush(): void {
    if (this.text === '') return;
    this.emit(this.text);
    this.text = '';
  }

  /** `value` as JSON sees it at `key` of its holder: what its `toJSON(key)` returns, if it has one. */
  resolve(value: unknown, key: string): unknown {
    if (value !== null && (typeof value === 'object' || typeof value === 'bigint') && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
      return (value as { toJSON: (key: string) => unknown }).toJSON(key);
    }
    return value;
  }

  /** Writes `v` (resolved); false when JSON leaves it out (undefined, a function, a symbol). */
  value(v: unknown): boolean {
    if (v === null || typeof v !== 'object' || !isLargeJson(v)) {
      const text = JSON.stringify(v);
      if (text === undefined) return false;
      this.add(text);
      return true;
    }
    if (this.ancestors.has(v)) throw new TypeError('Converting circular structure to JSON');
    this.ancestors.add(v);
    if (Array.isArray(v)) {
      this.add('[');
      for (let i = 0; i < v.length; i++) {
        if (i > 0) this.add(',');
        if (!this.value(this.resolve(v[i], String(i)))) this.add('null');
      }
      this.add(']');
    } else {
      this.add('{');
      let first = true;
      for (const k of Object.keys(v)) {
        const member = this.resolve((v as Record<string, unknown>)[k], k);
        // Left out as JSON leaves it out: checked before the key is written.
        const kind = typeof member;
        if (kind === 'undefined' || kind === 'function' || kind === 'symbol') continue;
        this.add(first ? `${JSON.stringify(k)}:` : `,${JSON.stringify(k)}:`);
        first = false;
        this.value(member);
      }
      this.add('}');
    }
    this.ancestors.delete(v);
    return true;
  }
}

/**
 * Hands `JSON.stringify(value)` to `emit` in pieces of about a megabyte (one piece for a small value). Throws as
 * `JSON.stringify` does (a BigInt, a circular structure); a value JSON cannot hold at all (undefined) is an error.
 */
export function writeJsonPieces(value: unknown, emit: (piece: string) => void): void {
  const writer = new PieceWriter(emit);
  if (!writer.value(writer.resolve(value, ''))) throw new TypeError(`${typeof value} is not JSON`);
  writer.flush();
}
