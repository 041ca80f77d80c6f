/**
 * `JSON.parse` of a file read in chunks, so that a large JSON file never has its whole text in memory beside the
 * value parsed from it (the text of a 74 MB file is 74 MB more, kept until the next full garbage collection).
 * Small values are parsed by `JSON.parse` itself, many at a time (runs of array items or object members of up to
 * 64 KB); only the containers too large for that are walked here. So the value is exactly what `JSON.parse` of the
 * whole text gives. Anything this reader does not take (malformed JSON, large containers nested very deep, a file
 * that grew past its limit) it leaves to the caller, who then parses the text whole and reports JSON.parse's error.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** Bytes read from the file at once. */
const WINDOW = 1 << 20;
/** Longest run of items or members parsed by one JSON.parse (its text stays in the young generation). */
const BATCH = 1 << 16;
/** Most nested large containers walked here; deeper, the caller parses the whole text. */
const MAX_OPEN = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Thrown inside the reader for what it does not take; the caller falls back to the whole text. */
class NotTaken extends Error {}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Sets an own, enumerable property, also for the key `__proto__` (as JSON.parse does). */
function setMember(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** A container being filled: its items or members so far, and whether one must come next (after a comma). */
interface Open {
  readonly array: unknown[] | undefined;
  readonly object: Record<string, unknown> | undefined;
  /** The member whose (large) value is being read. */
  key: string | undefined;
  /** 'first' just after the opening bracket, 'next' after a comma, 'after' after an item or member. */
  state: 'first' | 'next' | 'after';
}

/** End of the scanned value (exclusive), or one of these. */
const NEED_MORE = -1;
const TOO_LONG = -2;

class ChunkedReader {
  readonly #fd: number;
  readonly #maxBytes: number;
  readonly #batch: number;
  #buf: Buffer;
  /** Valid bytes of the window. */
  #len = 0;
  /** Where parsing stands in the window. */
  #pos = 0;
  #eof = false;
  #read = 0;

  constructor(fd: number, maxBytes: number, window: number, batch: number) {
    this.#fd = fd;
    this.#maxBytes = maxBytes;
    this.#buf = Buffer.allocUnsafe(window);
    this.#batch = batch;
  }

  /** Moves the bytes from `#pos` to the front and reads more after them; false when the file has no more. */
  #more(): boolean {
    if (this.#eof) return false;
    if (this.#pos > 0) {
      this.#buf.copy(this.#buf, 0, this.#pos, this.#len);
      this.#len -= this.#pos;
      this.#pos = 0;
    }
    if (this.#len === this.#buf.length) return false;
    const n = readSync(this.#fd, this.#buf, this.#len, this.#buf.length - this.#len, null);
    if (n === 0) {
      this.#eof = true;
      return false;
    }
    this.#read += n;
    if (this.#read > this.#maxBytes) throw new NotTaken();
    this.#len += n;
    return true;
  }

  /** The next byte that is not white space (its position is `#pos`), or -1 at the end of the file. */
  #peek(): number {
    for (;;) {
      while (this.#pos < this.#len && isSpace(this.#buf[this.#pos]!)) this.#pos++;
      if (this.#pos < this.#len) return this.#buf[this.#pos]!;
      if (!this.#more()) return -1;
    }
  }

  /** End (after the closing quote) of the string whose text starts at `from`; NEED_MORE at the window's end. */
  #stringEnd(from: number): number {
    const buf = this.#buf;
    const len = this.#len;
    for (let i = from; i < len; i++) {
      const b = buf[i];
      if (b === QUOTE) return i + 1;
      if (b === BACKSLASH) i++;
    }
    return NEED_MORE;
  }

  /** End of the value starting at `start` if it ends within `limit` bytes, else TOO_LONG or NEED_MORE. */
  #valueEnd(start: number, limit: number): number {
    const buf = this.#buf;
    const len = this.#len;
    const stop = start + limit;
    const c = buf[start]!;
    if (c === QUOTE) {
      const end = this.#stringEnd(start + 1);
      if (end === NEED_MORE) return this.#len - start > limit ? TOO_LONG : NEED_MORE;
      return end - start > limit ? TOO_LONG : end;
    }
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      let depth = 0;
      for (let i = start; i < len; i++) {
        if (i >= stop) return TOO_LONG;
        const b = buf[i]!;
        if (b === QUOTE) {
          const end = this.#stringEnd(i + 1);
          if (end === NEED_MORE) return len - start > limit ? TOO_LONG : NEED_MORE;
          i = end - 1;
        } else if (b === OPEN_ARRAY || b === OPEN_OBJECT) depth++;
        else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) {
          if (--depth === 0) return i + 1 - start > limit ? TOO_LONG : i + 1;
        }
      }
      return NEED_MORE;
    }
    // A number or a literal: up to the next delimiter.
    let i = start;
    while (i < len && !isSpace(buf[i]!) && buf[i] !== COMMA && buf[i] !== CLOSE_ARRAY && buf[i] !== CLOSE_OBJECT) {
      if (++i - start > limit) return TOO_LONG;
    }
    if (i === start) throw new NotTaken();
    return i === len && !this.#eof ? NEED_MORE : i;
  }

  /** JSON.parse of window bytes `[from, to)`, wrapped in `before`/`after`. */
  #parse(from: number, to: number, before = '', after = ''): unknown {
    const text = this.#buf.toString('utf8', from, to);
    try {
      return JSON.parse(before === '' ? text : before + text + after);
    } catch {
      throw new NotTaken();
    }
  }

  /**
   * Reads the members of `open` that fit, as many as fit in one batch at a time, into it. Returns when the container
   * is closed (true) or when the next member is too long for a batch (false; `#pos` is at it, after its key for an
   * object).
   */
  #fill(open: Open): boolean {
    const isArray = open.array !== undefined;
    const close = isArray ? CLOSE_ARRAY : CLOSE_OBJECT;
    for (;;) {
      let c = this.#peek();
      if (c === close && open.state !== 'next') {
        this.#pos++;
        return true;
      }
      if (open.state === 'after') {
        if (c !== COMMA) throw new NotTaken();
        this.#pos++;
        open.state = 'next';
        c = this.#peek();
      }
      if (c < 0) throw new NotTaken();
      // A batch: complete members from #pos, separated by commas, within BATCH bytes.
      const start = this.#pos;
      let end = start;
      let count = 0;
      let closed = false;
      for (let i = start; ; ) {
        let valueStart = i;
        if (!isArray) {
          if (this.#buf[i] !== QUOTE) throw new NotTaken();
          const keyEnd = this.#stringEnd(i + 1);
          if (keyEnd === NEED_MORE || keyEnd - start > this.#batch) break;
          let j = keyEnd;
          while (j < this.#len && isSpace(this.#buf[j]!)) j++;
          if (j >= this.#len) break;
          if (this.#buf[j] !== COLON) throw new NotTaken();
          j++;
          while (j < this.#len && isSpace(this.#buf[j]!)) j++;
          if (j >= this.#len) break;
          valueStart = j;
        }
        const valueEnd = this.#valueEnd(valueStart, this.#batch - (valueStart - start));
        if (valueEnd < 0) break;
        end = valueEnd;
        count++;
        let j = valueEnd;
        while (j < this.#len && isSpace(this.#buf[j]!)) j++;
        if (j >= this.#len) break;
        if (this.#buf[j] === close) {
          closed = true;
          end = j;
          break;
        }
        if (this.#buf[j] !== COMMA) throw new NotTaken();
        j++;
        while (j < this.#len && isSpace(this.#buf[j]!)) j++;
        if (j >= this.#len) break;
        i = j;
      }
      if (count === 0) {
        // Not one member fits in what the window holds: read more, unless a batch's worth is there (then the
        // member is too long for a batch, and read on its own).
        if (this.#len - start < this.#batch && this.#more()) continue;
        if (!isArray) this.#readKey(open);
        return false;
      }
      if (closed) {
        this.#take(open, this.#parse(start, end, isArray ? '[' : '{', isArray ? ']' : '}'));
        this.#pos = end + 1;
        return true;
      }
      this.#take(open, this.#parse(start, end, isArray ? '[' : '{', isArray ? ']' : '}'));
      this.#pos = end;
      open.state = 'after';
    }
  }

  /** Adds a parsed batch (an array of items, or an object of members) to `open`. */
  #take(open: Open, batch: unknown): void {
    if (open.array !== undefined) {
      for (const item of batch as unknown[]) open.array.push(item);
    } else {
      const members = batch as Record<string, unknown>;
      for (const key of Object.keys(members)) setMember(open.object!, key, members[key]);
    }
  }

  /** Reads the key of the object member at `#pos` (and its colon) into `open.key`. */
  #readKey(open: Open): void {
    if (this.#buf[this.#pos] !== QUOTE) throw new NotTaken();
    open.key = this.#token() as string;
    if (this.#peek() !== COLON) throw new NotTaken();
    this.#pos++;
    this.#peek();
  }

  /** A string or scalar at `#pos` of any length (read past the window when long). */
  #token(): unknown {
    for (;;) {
      const end = this.#valueEnd(this.#pos, Number.MAX_SAFE_INTEGER);
      if (end >= 0) {
        const value = this.#parse(this.#pos, end);
        this.#pos = end;
        return value;
      }
      if (this.#more()) continue;
      if (this.#eof) {
        // At the end of the file a scalar ends there too.
        const last = this.#valueEnd(this.#pos, Number.MAX_SAFE_INTEGER);
        if (last < 0) throw new NotTaken();
        const value = this.#parse(this.#pos, last);
        this.#pos = last;
        return value;
      }
      // The window is full and the token goes on: grow the window (a string longer than a megabyte).
      const bigger = Buffer.allocUnsafe(this.#buf.length * 2);
      this.#buf.copy(bigger, 0, this.#pos, this.#len);
      this.#len -= this.#pos;
      this.#pos = 0;
      this.#buf = bigger;
    }
  }

  /** The whole file's value. */
  read(): unknown {
    // A leading byte order mark is not part of the JSON.
    this.#more();
    if (this.#buf[0] === 0xef && this.#buf[1] === 0xbb && this.#buf[2] === 0xbf) this.#pos = 3;
    const stack: Open[] = [];
    let value: unknown;
    let have = false;
    for (;;) {
      if (!have) {
        // A value at #pos: small enough for one JSON.parse, or a container opened here, or a long token.
        const c = this.#peek();
        if (c < 0) throw new NotTaken();
        if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
          let end = this.#valueEnd(this.#pos, this.#batch);
          while (end === NEED_MORE && this.#more()) end = this.#valueEnd(this.#pos, this.#batch);
          if (end >= 0) {
            value = this.#parse(this.#pos, end);
            this.#pos = end;
            have = true;
          } else {
            if (stack.length >= MAX_OPEN) throw new NotTaken();
            this.#pos++;
            stack.push({ array: c === OPEN_ARRAY ? [] : undefined, object: c === OPEN_OBJECT ? {} : undefined, key: undefined, state: 'first' });
          }
        } else {
          value = this.#token();
          have = true;
        }
      }
      if (have) {
        const open = stack.at(-1);
        if (open === undefined) break;
        if (open.array !== undefined) open.array.push(value);
        else setMember(open.object!, open.key!, value);
        open.state = 'after';
        have = false;
      }
      const open = stack.at(-1)!;
      if (this.#fill(open)) {
        stack.pop();
        value = open.array ?? open.object;
        have = true;
        if (stack.length === 0) break;
      }
    }
    if (this.#peek() >= 0) throw new NotTaken();
    return value;
  }
}

/** Options of {@link readJsonChunked}. */
export interface ReadJsonOptions {
  /** Most bytes read: past them the file is not taken (default: no limit). */
  maxBytes?: number;
  /** Bytes read at once (default 1 MiB). */
  window?: number;
  /** Longest run of items or members parsed by one JSON.parse (default 64 KiB); smaller than the window. */
  batch?: number;
}

/**
 * `JSON.parse` of the file at `path` (a leading UTF-8 byte order mark skipped), read in chunks: the whole text is never
 * held. Returns `{ value }`, or undefined when the reader does not take the file: malformed JSON, large containers
 * nested deeper than it walks, or more than `maxBytes` bytes read. Then parse the text whole, which reports why.
 * Errors of the file system (missing, a directory) are thrown.
 */
export function readJsonChunked(path: string, options: ReadJsonOptions = {}): { value: unknown } | undefined {
  const { maxBytes = Number.MAX_SAFE_INTEGER, window = WINDOW, batch = BATCH } = options;
  if (!(batch > 0 && window > batch)) throw new RangeError(`readJsonChunked: the window (${window}) must be larger than the batch (${batch})`);
  const fd = openSync(path, 'r');
  try {
    return { value: new ChunkedReader(fd, maxBytes, window, batch).read() };
  } catch (error) {
    if (error instanceof NotTaken) return undefined;
    throw error;
  } finally {
    closeSync(fd);
  }
}
