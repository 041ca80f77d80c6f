/**
 * Redaction of secrets before anything is persisted (DESIGN D15). Two rules:
 *
 * - secret-named keys: the key split into words (camelCase, snake_case, kebab-case) ends with `token`, `secret`,
 *   `password`, `passwd`, `passphrase`, `credential(s)`, `authorization`, `apikey`, `cookie`, or with `key` after
 *   another word (`apiKey`, `OPENAI_API_KEY`, `privateKey`), except structural keys (`sessionKey`, `cacheKey`, ...).
 *   A bare `key`, `keys`, `keywords`, `tokens`, `tokenUsage` or `maxTokens` is not a secret name. Under a
 *   secret-named key every string becomes `'[REDACTED]'`; numbers, booleans and the shape of objects are kept. A
 *   Backpack item under such a key keeps its provenance (`metadata`, `accessControl`): only its value is blanked.
 * - secret-looking values anywhere: OpenAI/Anthropic-style `sk-...` keys, `Bearer ...` tokens, PEM private key
 *   blocks, JWTs, GitHub tokens and AWS access key ids; the matching part of a string becomes `'[REDACTED]'`.
 *
 * The walk is copy-on-write: nothing is allocated unless something is redacted, and the input is never modified.
 */

/** What replaces a secret. */
export const REDACTED = '[REDACTED]';

const SECRET_LAST_WORDS = new Set([
  'token',
  'secret',
  'password',
  'passwd',
  'passphrase',
  'credential',
  'credentials',
  'authorization',
  'apikey',
  'cookie',
]);

/** Words before `key` that make it a structural key, not a secret. */
const STRUCTURAL_KEY_PREFIXES = new Set([
  'session',
  'cache',
  'sort',
  'primary',
  'partition',
  'foreign',
  'hash',
  'map',
  'lookup',
  'idempotency',
  'dedupe',
  'unique',
  'node',
  'route',
  'item',
  'memory',
  'run',
  'event',
  'backpack',
  'group',
  'storage',
  'object',
  'row',
  'column',
  'index',
  'public',
  'sub',
  'parent',
  'child',
  'state',
  'value',
  'react',
  'query',
]);

const keyVerdicts = new Map<string, boolean>();

/** Whether an object key names a secret (see the module comment for the rule). Cached per key. */
export function isSecretKey(key: string): boolean {
  let verdict = keyVerdicts.get(key);
  if (verdict === undefined) {
    verdict = classifyKey(key);
    if (keyVerdicts.size < 10_000) keyVerdicts.set(key, verdict);
  }
  return verdict;
}

function classifyKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  if (SECRET_LAST_WORDS.has(last)) return true;
  if (last === 'key' && words.length > 1) return !STRUCTURAL_KEY_PREFIXES.has(words[words.length - 2]!);
  return false;
}

const SECRET_VALUE =
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)|\bsk-[A-Za-z0-9_-]{20,}|\bBearer\s+[A-Za-z0-9._~+/-]{8,}=*|\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*|\bgh[pousr]_[A-Za-z0-9]{30,}|\bAKIA[0-9A-Z]{16}\b/g;

/** Cheap pre-check: every secret pattern contains one of these substrings. */
const HINTS = ['sk-', 'Bearer', 'PRIVATE KEY', 'eyJ', 'gh', 'AKIA'];

function redactString(value: string): string {
  if (value.length < 8) return value;
  let hinted = false;
  for (const hint of HINTS) {
    if (value.includes(hint)) {
      hinted = true;
      break;
    }
  }
  if (!hinted) return value;
  SECRET_VALUE.lastIndex = 0;
  return SECRET_VALUE.test(value) ? value.replace(SECRET_VALUE, REDACTED) : value;
}

/** Result of {@link redact}: the redacted copy (the input itself when nothing was redacted) and whether anything was. */
export interface RedactionResult<T> {
  value: T;
  redacted: boolean;
}

/** Replaces every string under a secret-named key, keeping the shape (copy-on-write like {@link walk}). */
function redactAllStrings(value: unknown): unknown {
  if (typeof value === 'string') return value === REDACTED ? value : REDACTED;
  return mapChildren(value, redactAllStrings);
}

/** Applies `fn` to each element of an array or plain object; returns the input itself when nothing changed. */
function mapChildren(value: unknown, fn: (child: unknown, key: string | undefined) => unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i] as unknown;
      const next = fn(item, undefined);
      if (next !== item) {
        out ??= value.slice();
        out[i] = next;
      }
    }
    return out ?? value;
  }
  if (!isPlainObject(value)) return value;
  let out: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const item = record[key];
    const next = fn(item, key);
    if (next !== item) {
      out ??= { ...record };
      out[key] = next;
    }
  }
  return out ?? value;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function walk(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactString(value);
  if (depth > 200) return value;
  return mapChildren(value, (child, key) =>
    key !== undefined && isSecretKey(key) ? redactSecretEntry(child, depth + 1) : walk(child, depth + 1),
  );
}

/**
 * What is stored under a secret-named key: every string blanked, except that a Backpack item there (an object with
 * a `metadata` object: a state item, a quarantined item, a state-delta entry) keeps its provenance. Its `metadata`
 * and `accessControl` (who wrote it, when, which rules) are walked like any other data, so only secret-looking
 * values in them are replaced.
 */
function redactSecretEntry(value: unknown, depth: number): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && isPlainObject(value)) {
    const metadata = (value as { metadata?: unknown }).metadata;
    if (metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)) {
      return mapChildren(value, (child, key) => (key === 'metadata' || key === 'accessControl' ? walk(child, depth + 1) : redactAllStrings(child)));
    }
  }
  return redactAllStrings(value);
}

/**
 * Returns a copy of `value` with secrets replaced by `'[REDACTED]'`, and whether anything was replaced.
 * When nothing is secret the input itself is returned (no allocation). Plain objects and arrays are walked;
 * other objects (Date, Map, class instances) are kept as they are.
 */
export function redact<T>(value: T): RedactionResult<T> {
  const next = walk(value, 0);
  return { value: next as T, redacted: next !== value };
}

/** Whether `value` holds anything {@link redact} would replace. */
export function containsSecrets(value: unknown): boolean {
  return walk(value, 0) !== value;
}
