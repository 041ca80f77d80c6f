/**
 * Redaction of secrets before anything is persisted (DESIGN D15): one pass, used by the store, the runtime, the
 * CLI and the context engine. A ground-floor module: it imports nothing else of ours.
 */
export { Redactor, redactorFor, renewEnvironmentSecrets, redact, containsSecrets, isItemShape, isSecretKey, isSecretOptionValue, looksLikeStoredKey, REDACTED, KNOWN_MIN_LENGTH } from './redactor.js';
export type { RedactionOptions, RedactionResult } from './redactor.js';
export { onlyEnvReferences, redactConfig } from './config.js';
export { maskUrlCredentials, urlCredentials } from './url-credentials.js';
export { SecretKeyMatcher } from './keys.js';
export { blankSchemaSecrets, isSecretSchema } from './schema-secrets.js';
export { DEFAULT_SECRET_PATTERNS } from './patterns.js';
export type { SecretPattern } from './patterns.js';
