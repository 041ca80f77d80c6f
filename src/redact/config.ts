import type { Redactor } from './redactor.js';

const ENV_REFERENCES_ONLY = /^(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+$/;

/**
 * Whether `text` is made only of environment references (`${OPENAI_API_KEY}`, `${USER}${SUFFIX}`): names, resolved
 * when a flow is loaded, never the secret itself.
 */
export function onlyEnvReferences(text: string): boolean {
  return ENV_REFERENCES_ONLY.test(text);
}

/**
 * The redaction of a configuration recorded with a run (its flow config, which a resume or fork builds the flow from
 * again): {@link Redactor.redact}, with each string made only of environment references kept where redaction
 * replaced it (a secret-named param such as `"apiKey": "${OPENAI_API_KEY}"`): it holds a name, not the secret, and
 * the flow resolves it again when it is built. A reference whose text itself holds a secret stays masked; where
 * redaction changed an object's keys, that object stays as redacted.
 */
export function redactConfig(redactor: Redactor, value: unknown): unknown {
  return keepEnvReferences(redactor, value, redactor.redact(value).value);
}

function keepEnvReferences(redactor: Redactor, original: unknown, recorded: unknown): unknown {
  if (original === recorded) return recorded;
  if (typeof original === 'string') return onlyEnvReferences(original) && redactor.redactText(original) === original ? original : recorded;
  if (Array.isArray(original)) {
    return Array.isArray(recorded) && recorded.length === original.length ? recorded.map((item, i) => keepEnvReferences(redactor, original[i], item)) : recorded;
  }
  if (original === null || typeof original !== 'object' || recorded === null || typeof recorded !== 'object' || Array.isArray(recorded)) return recorded;
  const keys = Object.keys(original);
  const kept = Object.keys(recorded);
  if (keys.length !== kept.length || keys.some((key, i) => key !== kept[i])) return recorded;
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const next = keepEnvReferences(redactor, (original as Record<string, unknown>)[key], (recorded as Record<string, unknown>)[key]);
    // (defined, not assigned: a '__proto__' key of JSON data is an ordinary key)
    Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
