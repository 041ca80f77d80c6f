/**
 * Keeping a node's own secrets (its API key) out of what it emits and packs. The run's redaction knows secrets by
 * their names and shapes; a key of a self-hosted or proxy endpoint has no known shape, and a server may echo it (in
 * a response id, a model name, the text). The node knows its key: it removes it itself, from errors
 * (`redactSecrets`), replies, streamed text and tool results.
 *
 * @module
 */

/** What a secret is replaced with. */
const MASK = '***';

/** The secrets worth looking for: non-empty strings of 4 characters or more. */
export function usableSecrets(secrets: readonly (string | undefined)[]): string[] {
  return secrets.filter((s): s is string => s !== undefined && s.length >= 4);
}

/** `text` with every occurrence of each of `secrets` (as given by {@link usableSecrets}) replaced with `***`. */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(MASK);
  return out;
}

/**
 * `value` with the secrets removed from every string in it (object keys included): the same value when none holds
 * one, else a copy of the containers on the way to the strings that changed. Class instances (a Uint8Array of a
 * file part, a URL) are kept as they are. Without secrets, `value` itself, at no cost.
 */
export function scrubSecrets<T>(value: T, secrets: readonly string[]): T {
  return secrets.length === 0 ? value : (scrub(value, secrets, new Set()) as T);
}

function scrub(value: unknown, secrets: readonly string[], seen: Set<object>): unknown {
  if (typeof value === 'string') return withoutSecrets(value, secrets);
  if (value === null || typeof value !== 'object' || seen.has(value)) return value;
  if (Array.isArray(value)) {
    seen.add(value);
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = scrub(value[i], secrets, seen);
      if (item !== value[i]) (out ??= [...value])[i] = item;
    }
    seen.delete(value);
    return out ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  seen.add(value);
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const k = withoutSecrets(key, secrets);
    const v = scrub(item, secrets, seen);
    if (k !== key || v !== item) changed = true;
    return [k, v] as const;
  });
  seen.delete(value);
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * Streamed text without the secrets, a secret split across deltas included: each delta is passed on up to where
 * the text could be the start of a secret; that end is held back until the next delta shows what it is.
 */
export class StreamScrubber {
  #held = '';
  constructor(private readonly secrets: readonly string[]) {}

  /** The text to pass on now that `delta` arrived ('' while all of it could still start a secret). */
  push(delta: string): string {
    const text = withoutSecrets(this.#held + delta, this.secrets);
    const keep = this.#secretStartAtEnd(text);
    this.#held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** What is held back, at the end of the stream (it was not the start of a secret). */
  flush(): string {
    const rest = this.#held;
    this.#held = '';
    return rest;
  }

  /** The length of the longest end of `text` that is the start (not the whole) of a secret. */
  #secretStartAtEnd(text: string): number {
    let longest = 0;
    for (const secret of this.secrets) {
      for (let k = Math.min(secret.length - 1, text.length); k > longest; k--) {
        if (text.endsWith(secret.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }
}
