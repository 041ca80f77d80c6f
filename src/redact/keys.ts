/**
 * Secret-named keys: whether an object key (or a Map key, or the `key` of a Backpack event) names a secret.
 *
 * The key is split into words (camelCase, snake_case, kebab-case). It names a secret when its last word is `token`,
 * `secret`, `password`, `passwd`, `pw`, `passphrase`, `credential`, `authorization`, `apikey` or `cookie`, or the
 * plural of one (`secrets`, `passwords`, `API_KEYS`, `cookies`), or when it ends with `key` or `keys` after another
 * word (`apiKey`, `OPENAI_API_KEY`, `privateKeys`), except structural keys (`sessionKey`, `cacheKey`, `sortKeys`,
 * `requiredKeys`, ...), or with `tokens` after another word (`accessTokens`, `githubTokens`) except counts and
 * settings of a model's tokens (`maxTokens`, `inputTokens`, `cache_read_input_tokens`, `stopTokens`, ...); a last
 * word ending in `password` or `passwd` (`PGPASSWORD`), or `pass` or `pwd` after another word (`DB_PASS`,
 * `MYSQL_PWD`; a bare `pwd` is a directory); a last word `passcode`, `privkey` or `mnemonic` (or its plural); the
 * two last words `seed phrase`, `recovery phrase`, `client assertion`, `code verifier`, `auth code` or
 * `authorization code` (`seedPhrase`, `client_assertion`); a last word that runs a secret word into another, as lower-case JSON
 * does (`identitytoken`, `clientsecret`, `privatekey`: see `GLUED_SECRET_SUFFIXES`). A bare `key`, `keys`, `keywords`, `tokens`, `tokenUsage` or `maxTokens`
 * is not a secret name. Nor is `auth`: it holds credentials in some configs (`auth: { user, pass }`, whose `pass` is
 * blanked) and settings in others (`auth: 'none'`, `auth: { type: 'oauth' }`), and a flow param named so would be
 * masked in every recorded flow; its values are still checked against the catalogue (Bearer tokens, keys, URLs with a
 * password), and a base64 `user:password` under it is blanked by the redactor.
 * Users add names of their own ({@link SecretKeyMatcher}).
 */

const SECRET_LAST_WORDS = new Set([
  'token',
  'secret',
  'password',
  'passwd',
  // An abbreviation of a password only, alone or last (`pw`, `adminPw`, `DB_PW`), never a directory as `pwd` can be.
  'pw',
  'passphrase',
  'credential',
  'credentials',
  'authorization',
  'apikey',
  'cookie',
  // A PIN-like code a person types (`passcode`), a private key's short name (`privkey`), a wallet's recovery words
  // (`mnemonic`), which no pattern can recognize.
  'passcode',
  'privkey',
  'mnemonic',
  // Their plurals: a list or a map of secrets (`secrets: { db: … }`, `passwords: […]`). Not `tokens` (see below).
  'secrets',
  'passwords',
  'passwds',
  'passphrases',
  'apikeys',
  'cookies',
  'passcodes',
  'privkeys',
  'mnemonics',
]);

/**
 * Two-word endings that name a secret where neither word does alone (`search_phrase` and `assertion` are not):
 * a wallet's recovery words (`seedPhrase`, `recovery_phrase`), OAuth's client assertion (a signed JWT), PKCE code
 * verifier and authorization code.
 */
const SECRET_LAST_PAIRS = new Set(['seed phrase', 'recovery phrase', 'client assertion', 'code verifier', 'auth code', 'authorization code']);

/** Words before `key` or `keys` that make it a structural key, not a secret. */
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
  // CloudFormation's `{ ParameterKey, ParameterValue }`: the name of a parameter (its value is blanked when the name
  // is secret-named, see the redactor's records that name their value).
  'parameter',
]);

/**
 * Words before `keys` (not `key`) that make it a list of key names, not of secrets: `requiredKeys`, `omitKeys`,
 * `headerKeys`, `translationKeys`, `hotkeys`.
 */
const STRUCTURAL_KEYS_PREFIXES = new Set([
  'required',
  'optional',
  'allowed',
  'known',
  'unknown',
  'extra',
  'missing',
  'omit',
  'omitted',
  'pick',
  'picked',
  'only',
  'all',
  'excluded',
  'exclude',
  'included',
  'include',
  'ignored',
  'ignore',
  'changed',
  'dirty',
  'sorted',
  'ordered',
  'valid',
  'invalid',
  'data',
  'dict',
  'record',
  'entry',
  'field',
  'property',
  'prop',
  'attribute',
  'attr',
  'header',
  'json',
  'env',
  'config',
  'translation',
  'i18n',
  'locale',
  'message',
  'hot',
  'shortcut',
  'keyboard',
  'nested',
  'top',
  'own',
]);

/**
 * Words before `tokens` that make it a count or a setting of a model's tokens (`maxTokens`, `max_new_tokens`,
 * `inputTokens`, `cache_read_input_tokens`, `accepted_prediction_tokens`, `thinking.budget_tokens`,
 * `x-ratelimit-remaining-tokens`) or a tokenizer's (`stopTokens`, `special_tokens`), not a list of credentials.
 */
const TOKEN_COUNT_PREFIXES = new Set([
  'max',
  'min',
  'new',
  'num',
  'n',
  'input',
  'output',
  'total',
  'prompt',
  'completion',
  'reasoning',
  'cached',
  'cache',
  'read',
  'write',
  'creation',
  'text',
  'audio',
  'image',
  'video',
  'tool',
  'budget',
  'thinking',
  'used',
  'remaining',
  'limit',
  'context',
  'estimated',
  'prediction',
  'generated',
  'billed',
  'request',
  'response',
  'batch',
  'special',
  'stop',
  'added',
  'bos',
  'eos',
  'pad',
  'unk',
  'design',
]);

function words(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/** Lower case, letters and digits only: `OPENAI_API_KEY` and `openaiApiKey` both become `openaiapikey`. */
function normalized(key: string): string {
  return key.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/**
 * Secret words that lower-case JSON runs into the word before them (`identitytoken` and `registrytoken` in
 * `~/.docker/config.json`, `clientsecret`, `accesstoken`, `awscredentials`): a last word longer than one of these and
 * ending with it names a secret, as its camelCase form does, except a count or setting of a model's tokens
 * (`maxtoken`, `eostoken`: see {@link TOKEN_COUNT_PREFIXES}).
 */
const GLUED_SECRET_SUFFIXES = ['token', 'secret', 'credential', 'credentials', 'passphrase', 'cookie'] as const;

/**
 * Words that make a `key` or `keys` run into them a secret (`privatekey`, `accesskey`, `secretkeys`). Unlike
 * {@link GLUED_SECRET_SUFFIXES}, a word merely ending with `key` is not one (`monkey`, `hotkey`, `turnkey`).
 */
const GLUED_KEY_PREFIXES = new Set(['secret', 'private', 'access', 'signing', 'master', 'encryption', 'decryption', 'auth', 'pass', 'shared', 'hmac', 'webhook', 'license', 'account', 'consumer', 'client', 'app', 'admin', 'service', 'subscription', 'deploy']);

/** Whether one lower-case word runs a secret word into another (see {@link GLUED_SECRET_SUFFIXES}). */
function isGluedSecret(word: string): boolean {
  for (const suffix of GLUED_SECRET_SUFFIXES) {
    if (word.length > suffix.length && word.endsWith(suffix)) return suffix !== 'token' || !TOKEN_COUNT_PREFIXES.has(word.slice(0, -suffix.length));
  }
  const stem = word.endsWith('keys') ? word.slice(0, -4) : word.endsWith('key') ? word.slice(0, -3) : undefined;
  return stem !== undefined && GLUED_KEY_PREFIXES.has(stem);
}

/** Last words that name a secret only after another word (`DB_PASS`, `MYSQL_PWD`); alone, `pwd` is a directory. */
const QUALIFIED_SECRET_LAST_WORDS = new Set(['pass', 'pwd']);

function isBuiltInSecretKey(key: string): boolean {
  const parts = words(key);
  const last = parts[parts.length - 1];
  if (last === undefined) return false;
  if (SECRET_LAST_WORDS.has(last)) return true;
  // A password run into the word before it: `PGPASSWORD`, `MYSQL_ROOTPASSWORD`.
  if (last.endsWith('password') || last.endsWith('passwd')) return true;
  if (isGluedSecret(last)) return true;
  if (QUALIFIED_SECRET_LAST_WORDS.has(last) && parts.length > 1) return true;
  if (parts.length < 2) return false;
  const before = parts[parts.length - 2]!;
  if (SECRET_LAST_PAIRS.has(`${before} ${last}`)) return true;
  if (last === 'key') return !STRUCTURAL_KEY_PREFIXES.has(before);
  if (last === 'keys') return !STRUCTURAL_KEY_PREFIXES.has(before) && !STRUCTURAL_KEYS_PREFIXES.has(before);
  if (last === 'tokens') return !TOKEN_COUNT_PREFIXES.has(before);
  return false;
}

/** Decides secret-named keys: the built-in rule plus names given by the user; verdicts are cached. */
export class SecretKeyMatcher {
  private readonly extra: Set<string>;
  private readonly verdicts = new Map<string, boolean>();

  /**
   * @param extraNames more secret key names. A key is secret when its normalized form (lower case, letters and
   *   digits only) equals a name's, or when its last word does: `['pin']` covers `pin`, `PIN`, `userPin`, `user_pin`.
   */
  constructor(extraNames: readonly string[] = []) {
    for (const name of extraNames) {
      if (typeof name !== 'string' || normalized(name) === '') {
        throw new TypeError(`redaction: secretKeys must hold non-empty names of letters or digits, got ${JSON.stringify(name)}`);
      }
    }
    this.extra = new Set(extraNames.map(normalized));
  }

  /** Whether the user added names of their own (which no fixed word list covers). */
  get hasExtra(): boolean {
    return this.extra.size > 0;
  }

  /** Whether `key` names a secret. */
  isSecretKey(key: string): boolean {
    let verdict = this.verdicts.get(key);
    if (verdict === undefined) {
      verdict = isBuiltInSecretKey(key) || (this.extra.size > 0 && this.isExtra(key));
      if (this.verdicts.size < 10_000) this.verdicts.set(key, verdict);
    }
    return verdict;
  }

  private isExtra(key: string): boolean {
    if (this.extra.has(normalized(key))) return true;
    const parts = words(key);
    return parts.length > 0 && this.extra.has(parts[parts.length - 1]!);
  }
}
