/**
 * Repeated keys in a flow file's JSON. `JSON.parse` keeps the last of two members with one key, silently: a person
 * reviewing the file (or a diff of it) reads the first (`"value": "harmless text", ..., "value": "${DB_PASSWORD}"`)
 * while the run uses the other. A flow file is trusted like code, and review is what makes that trust; so a repeated
 * key is a problem of the file, at its JSON pointer, refused by `validate` and `run` alike (adversarial review of
 * 2026-11-28).
 *
 * The scan runs on text `JSON.parse` already accepted, fed in pieces (a file read in chunks is never whole in
 * memory): it only follows strings, brackets, commas and colons.
 */
import type { ConfigProblem } from './errors.js';

/** Most repeated keys reported for one file. */
const MAX_REPORTED = 20;

interface Frame {
  readonly object: boolean;
  /** Keys of this object so far (objects only). */
  readonly keys: Set<string> | undefined;
  /** The member's key or the item's index being read. */
  at: string | number;
  /** In an object: the next string is a key. */
  expectKey: boolean;
}

/** Follows JSON text fed in pieces and collects its repeated keys. */
export class RepeatedKeyScanner {
  readonly #stack: Frame[] = [];
  readonly problems: ConfigProblem[] = [];
  /** Inside a string: its raw text so far (with its opening quote) when it is a key, '' for any other string. */
  #string: string | undefined;
  #escaped = false;

  /** Feeds the next piece of the text. */
  push(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (this.#string !== undefined) {
        // Only a key's text is kept (a value's can be megabytes): the rest of the string is skipped to its end.
        const key = this.#string !== '';
        if (key) this.#string += c;
        if (this.#escaped) this.#escaped = false;
        else if (c === '\\') this.#escaped = true;
        else if (c === '"') this.#endString(key);
        continue;
      }
      switch (c) {
        case '"': {
          const top = this.#stack.at(-1);
          this.#string = top !== undefined && top.object && top.expectKey ? '"' : '';
          break;
        }
        case '{':
          this.#stack.push({ object: true, keys: new Set(), at: '', expectKey: true });
          break;
        case '[':
          this.#stack.push({ object: false, keys: undefined, at: 0, expectKey: false });
          break;
        case '}':
        case ']':
          this.#stack.pop();
          break;
        case ',': {
          const top = this.#stack.at(-1);
          if (top?.object) top.expectKey = true;
          else if (top !== undefined) top.at = (top.at as number) + 1;
          break;
        }
        default:
          break;
      }
    }
  }

  #endString(isKey: boolean): void {
    const raw = this.#string!;
    this.#string = undefined;
    if (!isKey) return;
    const top = this.#stack.at(-1)!;
    top.expectKey = false;
    const key = JSON.parse(raw) as string;
    top.at = key;
    if (!top.keys!.has(key)) {
      top.keys!.add(key);
      return;
    }
    if (this.problems.length >= MAX_REPORTED) return;
    this.problems.push({
      path: this.#pointer(),
      message: `the key ${JSON.stringify(key)} appears twice in this object: JSON keeps only the last, so the file reads otherwise than it runs; remove one`,
    });
  }

  /** The JSON pointer of the member being read. */
  #pointer(): string {
    return this.#stack.map((frame) => `/${String(frame.at).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
  }
}

/** The repeated keys of JSON `text` (already accepted by `JSON.parse`), at their JSON pointers. */
export function repeatedKeys(text: string): ConfigProblem[] {
  const scanner = new RepeatedKeyScanner();
  scanner.push(text);
  return scanner.problems;
}
