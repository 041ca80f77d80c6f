/**
 * The catalogue of secret-looking values: a documented subset of two maintained catalogues, ported as regular
 * expressions (both MIT licensed):
 *
 * - gitleaks' default rule set (`config/gitleaks.toml`, https://github.com/gitleaks/gitleaks): rule ids are given
 *   as `gitleaks:<id>`;
 * - secretlint's recommended preset (`@secretlint/secretlint-rule-preset-recommend`,
 *   https://github.com/secretlint/secretlint): rule ids are given as `secretlint:<rule>`.
 *
 * Why a port and not the package: secretlint's rules run per file through a rule context (report, translate,
 * allow-lists); driven per string, the preset costs about 15 µs for one short string on this machine, and a step
 * persists dozens of strings, where the budget for all of redaction and hashing is 10 µs per step. gitleaks is Go.
 * So the patterns are ported, lower bounds on lengths are kept a little looser than the originals (a secret
 * one character shorter than the vendor's format is still a secret), and every pattern is gated by a cheap
 * pre-check ({@link SecretPattern.gate}) so that ordinary text costs one combined scan.
 */

import { END, START, standsApart } from './boundary.js';
import { CONNECTION_KEY_PATTERN, DISCORD_WEBHOOK_PATTERN, VENDOR_TOKEN_PATTERN } from './vendor-patterns.js';

/** One kind of secret-looking value. */
export interface SecretPattern {
  /** A stable name, e.g. `github-pat`; reported nowhere on disk (the marker is the same for every kind). */
  readonly id: string;
  /** Where the pattern comes from (catalogue and rule id). */
  readonly source: string;
  /**
   * A global regular expression. When it has a capture group named `secret`, only that group is replaced (the
   * user name of a URL or the name of an assignment stays readable); otherwise the whole match is.
   */
  readonly regex: RegExp;
  /**
   * A cheap pre-check every match passes (a few literals; tested case-insensitively as part of one combined
   * scan), or undefined when the pattern must always run on strings of {@link minLength} or more.
   */
  readonly gate?: RegExp;
  /** Strings shorter than this are never scanned with this pattern. */
  readonly minLength: number;
  /**
   * Instead of a gate: every match holds a run of at least this many token characters (letters, digits and
   * `_+/=.~%-`), so only text holding such a run is scanned with this pattern (one pass over the text finds the
   * longest run; a long union of vendor prefixes as a gate cost twice the whole pre-check).
   */
  readonly minRun?: number;
  /**
   * A check of each match in code (cheaper than the same check as lookaheads at every position); default: all.
   * `before` is the character right before the match (`''` at the start of the text).
   */
  readonly accept?: (match: string, before: string) => boolean;
}

/**
 * What `util.inspect` writes before a collection or a null-prototype object (what error messages quote): `Set(1) {`,
 * `Map(2) {`, `Store(1) [Map] {` (a subclass), `Uint8Array(3) [`, `[Object: null prototype] {`, `<ref *1> {` (a
 * circular object), `[Function: f] {`, `[class X] {`, `[Map Entries] [`. A field's value that starts with one is no bare word
 * to replace: the named pass blanks the structure after it. (A class instance's name, `Creds {`, looks like any word
 * before a brace, `Hunter22 {`: the named pass replaces that word and blanks the structure too.)
 */
export const INSPECT_TAG = String.raw`(?:[A-Z][\w$]*\(\d+\)(?: \[[A-Z][\w$]*\])?|\[[\w$]+(?:\(\d+\))?: null prototype\]|<ref \*\d+>|\[Function(?:: [\w$]+)?\]|\[class [\w$]+(?: extends [\w$.]+)?\]|\[(?:Map|Set) Entries\])`;
/** How `util.inspect` writes bytes: `<Buffer 5a 71 …>`, `<Uint8Array …>` (one value, replaced whole). */
export const INSPECT_BYTES = String.raw`<[A-Z]\w*(?: [\w .]{0,8192})?>`;

/**
 * Words that make an identifier name a secret in an assignment (`DB_PASSWORD=...`, `"apiKey": "..."`); case-insensitive.
 * What comes before them is at most 64 characters: unbounded, each start in a long dashed or dotted run scanned the
 * rest of it (64 KB of `a-a-…password` took 0.6 s). A longer name is still the named pass's (it looks at the marks).
 */
const ASSIGNED_NAME = String.raw`(?:[a-z0-9_][a-z0-9_.-]{0,63}?)?(?:secret|password|passwd|pwd|token|api_?key|access_?key|private_?key|credentials?)`;

/**
 * The password of a URL (`scheme://user:password@host`): everything from the user name's `:` to the last `@` before the
 * host, so a password holding `/` or `@` (`alice:Pg/s3@cret@db`) is replaced whole. RFC 3986 has userinfo escape `@`
 * and `/`, but people paste them raw; on the secret side the pattern is generous: the password runs to the last `@`
 * of the URL that a host follows (no `@` in it, ended by a blank, quote, `\`, `/`, `?`, `#` or the end of the text),
 * so a credential URL with another `@` in its path (`/@scope/pkg`) loses that part of the path too. It stops at a
 * quote, also an escaped one (`\"`, JSON quoted inside a string). A port (`host:8080/path?mail=a@b.c`,
 * `localhost:4873/@scope/pkg`) is not a password. The pattern starts at `://`, so whatever precedes the scheme
 * (`DSN_postgres://`, `jdbc:postgresql://`) does not matter. Lengths are bounded (a password of 256 characters at most,
 * a host of 255), so the scan from each `://` is bounded.
 */
const URL_PASSWORD =
  /:\/\/[^\s:@/?#"'`[\]\\]*:(?!\d{1,5}(?:[/?#\\]|$))(?<secret>(?:[^\s"'`\\]|\\(?!["'])){1,256})@(?=[^\s"'`@/?#\\]{0,255}(?:[\s"'`/?#\\]|$))/g;

/**
 * The shortest match of the netrc pattern: `default port 1 password p` (`port` is one letter shorter than `login`;
 * the catalogue's property test found it). Such text may hold no upper-case letter, `_`, `-`, `:` or `=` (which every
 * other pattern's matches hold): the redactor looks for `password` in text this long that has none of them.
 */
export const NETRC_MIN_LENGTH = 25;

/** An entry of a .netrc machine that makes `password` there a netrc password (not a word of prose). */
const NETRC_ENTRY = /\s(?:login|account|port)\s/;

/** An HTTP auth scheme (RFC 9110's token), or the marker in its place. */
const AUTH_SCHEME = String.raw`[\w!#$%&*+.^|~[\]-]{1,64}`;
/** One auth-param of a header's credentials (`response="…"`, `realm=x`), quoted or escaped-quoted or bare. */
const AUTH_PARAM = String.raw`[\w!#$%&*+.^|~-]{1,64}[ \t]*=[ \t]*(?:\\*"[^"\\]{0,512}\\*"|[^\s,"'\\]{1,512})`;
/** A character of a credential token: no blank, quote, bracket, parenthesis, comma or semicolon. */
const AUTH_TOKEN_CHAR = String.raw`[^\s"'\\,;()\`“”‘’«»<>]`;
/**
 * A header's credentials: a list of auth-params (`Digest username="…", response="…"`), or a token (`Token 9944…`,
 * `SSWS …`, `abc:…`) of 8 or more characters holding a digit and a letter, or 24, so that prose and code keep their
 * words (`authorization: submitted 03/14/2024`, `authorization = await fetchToken(user1)`).
 */
const AUTH_CREDENTIALS =
  String.raw`${AUTH_PARAM}(?:[ \t]*,[ \t]*${AUTH_PARAM}){0,31}` +
  String.raw`|(?:(?=${AUTH_TOKEN_CHAR}{0,4095}\d)(?=${AUTH_TOKEN_CHAR}{0,4095}[A-Za-z])${AUTH_TOKEN_CHAR}{8,4096}|${AUTH_TOKEN_CHAR}{24,4096})`;

/** A date, or a date and time, and nothing else (ISO 8601, `14-Mar-2024`). */
const DATE_ALONE = /^(?:\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?(?:Z|[+-]\d\d:?\d\d)?|\d{1,2}[-/ ][A-Za-z]{3}[-/ ]\d{2,4})$/;

/** Whether `token` is a date alone (see DATE_ALONE). */
export function isDateAlone(token: string): boolean {
  return DATE_ALONE.test(token);
}

/** The last blank-separated word of `text`, without the quotes and brackets around it. */
export function lastToken(text: string): string {
  const at = text.search(/\S+$/);
  return (at < 0 ? '' : text.slice(at)).replace(/^[`"'“‘«<(\\]+|[`"'”’»>)\\]+$/g, '');
}

/** The default catalogue, in the order the patterns are applied. */
export const DEFAULT_SECRET_PATTERNS: readonly SecretPattern[] = [
  {
    id: 'private-key',
    source: 'gitleaks:private-key, secretlint:privatekey',
    regex: /-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/g,
    gate: /PRIVATE KEY/,
    minLength: 20,
  },
  {
    id: 'private-key-base64',
    source: 'gitleaks:private-key, secretlint:privatekey, in base64 (kubeconfig client-key-data, Kubernetes and Helm secrets, CI variables)',
    // The base64 of a PEM file that starts with the header of a private key (the kinds the private-key pattern takes
    // in clear text: plain, RSA, EC, DSA, OpenSSH, encrypted, PGP), to the end of the base64 and of the lines that
    // continue it when it is wrapped (each line starting with 16 or more base64 characters; the short last line of
    // a wrapped PEM is the base64 of its END line). A certificate
    // (`certificate-authority-data`, `LS0tLS1CRUdJTiBDRVJU…`) is public and kept; so is any other base64.
    regex:
      /(?<![A-Za-z0-9+/=])LS0tLS1CRUdJTiB(?:QUklWQVRFIEtF|SU0EgUFJJVkFURSBL|FQyBQUklWQVRFIEtF|EU0EgUFJJVkFURSBL|PUEVOU1NIIFBSSVZBVEUgS0VZ|FTkNSWVBURUQgUFJJVkFURSBL|QR1AgUFJJVkFURSBL)[A-Za-z0-9+/]*={0,2}(?:\r?\n[ \t]*[A-Za-z0-9+/]{16,}={0,2})*/g,
    gate: /LS0tLS1CRUdJTiB/,
    // The shortest match: `LS0tLS1CRUdJTiBQUklWQVRFIEtF` (28).
    minLength: 28,
  },
  {
    id: 'netrc-password',
    source: 'the password of a .netrc entry (curl, git, ftp): `machine <host> login <user> password <secret>`, or `default …`',
    // Only in an entry of `machine <host>` or `default` that also has a `login`, `account` or `port` (before the
    // password or right after it), so that prose with the word password in it is left alone. A quoted password may
    // hold blanks.
    regex: /(?<![A-Za-z0-9])(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+)*\s+password\s+(?<secret>"(?:[^"\\]|\\.)*"|\S+)(?:\s+(?:login|account|port)\s+\S+)?/g,
    accept: (match) => NETRC_ENTRY.test(match),
    gate: /password/,
    minLength: NETRC_MIN_LENGTH,
  },
  {
    id: 'url-password',
    source: 'secretlint:database-connection-string, secretlint:basicauth (credentials in a URL)',
    regex: URL_PASSWORD,
    gate: /:\/\//,
    // The shortest match: `://:x@` (6).
    minLength: 6,
  },
  {
    id: 'github-token',
    source: 'gitleaks:github-pat, github-oauth, github-app-token, github-refresh-token; secretlint:github',
    regex: new RegExp(String.raw`${START}gh[pousr]_[A-Za-z0-9_]{30,255}`, 'g'),
    accept: standsApart,
    gate: /gh[pousr]_/,
    minLength: 34,
  },
  {
    id: 'github-fine-grained-pat',
    source: 'gitleaks:github-fine-grained-pat, secretlint:github',
    regex: new RegExp(String.raw`${START}github_pat_[A-Za-z0-9_]{20,255}`, 'g'),
    accept: standsApart,
    gate: /github_pat_/,
    minLength: 31,
  },
  {
    id: 'gitlab-token',
    source: 'gitleaks:gitlab-pat, secretlint:gitlab',
    regex: new RegExp(String.raw`${START}gl(?:pat|ptt|rt|dt|cbt|oas|soat)-[A-Za-z0-9_-]{20,}`, 'g'),
    accept: standsApart,
    gate: /gl(?:pat|ptt|rt|dt|cbt|oas|soat)-/,
    minLength: 24,
  },
  {
    id: 'openai-anthropic-key',
    source: 'gitleaks:openai-api-key, anthropic-api-key; secretlint:openai, anthropic',
    regex: new RegExp(String.raw`${START}sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`, 'g'),
    accept: standsApart,
    gate: /sk-/,
    minLength: 23,
  },
  {
    id: 'stripe-key',
    source: 'gitleaks:stripe-access-token',
    regex: new RegExp(String.raw`${START}(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,247}${END}|whsec_[A-Za-z0-9]{20,})`, 'g'),
    accept: standsApart,
    gate: /_live_|_test_|whsec_/,
    minLength: 18,
  },
  {
    id: 'slack-token',
    source: 'gitleaks:slack-bot-token, slack-user-token, slack-app-token, slack-legacy-token; secretlint:slack',
    regex: new RegExp(String.raw`${START}(?:xox[abeposr]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)`, 'gi'),
    accept: standsApart,
    gate: /xox|xapp-/,
    // The shortest match: `xapp-1-A-1-a` (12); `xoxb-` and ten characters is 15.
    minLength: 12,
  },
  {
    id: 'slack-webhook',
    source: 'gitleaks:slack-webhook-url, secretlint:slack',
    regex: /https?:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9+/_-]{20,}/g,
    gate: /hooks\.slack\.com/,
    minLength: 40,
  },
  {
    id: 'google-api-key',
    source: 'gitleaks:gcp-api-key, secretlint:gcp',
    regex: new RegExp(String.raw`${START}AIza[0-9A-Za-z_-]{30,}`, 'g'),
    gate: /AIza/,
    minLength: 34,
  },
  {
    id: 'aws-access-key-id',
    source: 'gitleaks:aws-access-token, secretlint:aws',
    regex: new RegExp(String.raw`${START}(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}${END}`, 'g'),
    gate: /A3T|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA/,
    minLength: 20,
  },
  {
    id: 'npm-token',
    source: 'gitleaks:npm-access-token, secretlint:npm',
    regex: new RegExp(String.raw`${START}npm_[A-Za-z0-9]{36}${END}`, 'g'),
    accept: standsApart,
    gate: /npm_/,
    minLength: 40,
  },
  {
    id: 'huggingface-token',
    source: 'gitleaks:huggingface-access-token, secretlint:huggingface',
    regex: new RegExp(String.raw`${START}hf_[A-Za-z]{34}${END}`, 'g'),
    accept: standsApart,
    gate: /hf_/,
    minLength: 37,
  },
  {
    id: 'jwt',
    source: 'gitleaks:jwt',
    regex: new RegExp(String.raw`${START}eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`, 'g'),
    gate: /eyJ/,
    minLength: 16,
  },
  {
    id: 'authorization-header',
    source: 'secretlint:basicauth; bearer tokens',
    regex: new RegExp(String.raw`${START}(?:Bearer\s+[A-Za-z0-9._~+/-]{8,}=*|Basic\s+(?=[A-Za-z0-9+/]*[0-9+/])[A-Za-z0-9+/]{8,}=*)`, 'g'),
    gate: /Bearer|Basic/,
    minLength: 14,
  },
  {
    id: 'authorization-credentials',
    source: 'HTTP Authorization and Proxy-Authorization headers (RFC 9110 section 11.6.2): any scheme, any case',
    // `Authorization: <scheme> <credentials>` in text (curl -v output, a request log, a header quoted in JSON or in
    // JSON inside a string, a flat list of names and values as Node's rawHeaders or a Python tuple list holds them):
    // the credentials after the scheme are the secret (see AUTH_CREDENTIALS). The scheme is any token (RFC 9110: no
    // `=` or `:` in it), also the marker the named-value pass has already put there, quoted or bracketed or not
    // (`` `Token …` ``, `“Token …”`, `<Token …>`). The name may end a longer one (`HTTP_AUTHORIZATION`, as CGI and
    // Django name the header). The header's name followed by its separator is never a scheme (`Authorization:
    // authorization :Token 9f…`: the first name's match must not take the second name for its scheme and the real
    // scheme for its credentials, which would leave the real ones). Every run is bounded, so that a text of many
    // near-matches costs time in proportion to its length. (The same credential rule reads a flat list's value:
    // redactor.ts, LISTED_CREDENTIAL.)
    regex: new RegExp(
      String.raw`(?:proxy-)?authorization(?:\\*["'])?[ \t]*[:=,][ \t]*(?:b?\\*["']|[\`“‘«<(])?(?!(?:proxy-)?authorization(?:\\*["'])?[ \t]*[:=,])${AUTH_SCHEME}[ \t]+(?:\\*["'])?(?<secret>${AUTH_CREDENTIALS})`,
      'gi',
    ),
    gate: /authorization/,
    // A date alone is not a credential (`authorization: expires 2025-12-31T00:00:00.000Z`).
    accept: (match) => !isDateAlone(lastToken(match)),
    // The shortest match: `authorization:a b=c` (19).
    minLength: 19,
  },
  {
    id: 'secret-assignment',
    source: 'gitleaks:generic-api-key (keyword = value), secretlint:aws (AWS_SECRET_ACCESS_KEY = ...)',
    // The quotes may be escaped, at any depth (`{\"password\":\"...\"}`, JSON quoted inside a string, and that
    // quoted again); the value stops at a quote, escaped or not, and holds any other backslash. A value that is a
    // structure (`credentials: {user: …}`, also after an inspect tag: `Set(1) {`) or inspect's bytes (`<Buffer …>`) is
    // left to the redactor's named pass, which replaces each of its scalars, or the bytes whole.
    regex: new RegExp(String.raw`\b${ASSIGNED_NAME}(?:\\*["'])?[ \t]*(?:=|:|=>)[ \t]*(?:\\*["'])?(?<secret>(?![{[]|${INSPECT_TAG}[ \t]+(?:\{|\[(?!REDACTED\]))|${INSPECT_BYTES})(?:[^\s"'\`,;&\\]|\\+(?![\\"'])){3,})`, 'gi'),
    gate: /secret|passw|pwd|token|api_?key|access_?key|private_?key|credential/,
    // The shortest match: `pwd=abc` (7).
    minLength: 7,
  },
  VENDOR_TOKEN_PATTERN,
  CONNECTION_KEY_PATTERN,
  DISCORD_WEBHOOK_PATTERN,
  // After the vendor tokens: a 40-character body of one (`lin_api_…`, `shippo_live_…`) is not taken alone.
  {
    id: 'aws-secret-access-key',
    source: 'secretlint:aws (AWSSecretAccessKey), shape only: 40 base64 characters mixing upper case, lower case and digits',
    regex: /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    minLength: 40,
    minRun: 40,
    accept: (match) => /[A-Z]/.test(match) && /[a-z]/.test(match) && /[0-9]/.test(match) && !pathLike(match),
  },
];

/**
 * Whether a run of the AWS secret key's shape is a file path (`rx5Xbf/sessions/default/runs/torn/events`, from a temp
 * folder's random name on): three or more of its `/`-separated parts are lower-case words of three letters or more.
 * A random key has that less than once in 10,000 (it needs three slashes, 2.6% of keys, and three such parts between
 * them); the assignment rule still takes a key written as `aws_secret_access_key = ...` whatever it holds.
 */
function pathLike(run: string): boolean {
  let words = 0;
  for (const part of run.split('/')) if (/^[a-z]{3,}$/.test(part) && ++words >= 3) return true;
  return false;
}

/**
 * Beginnings of secrets, for text cut short by a summary (`"ghp_abc…`): when a string ends with `…` and its last
 * word starts like a secret (a vendor prefix, also right after `_`, a URL with a password, which may hold `/` and `@`
 * as {@link URL_PASSWORD} allows, or six or more key-like characters mixing
 * case or holding digits), that word is replaced even though the cut left it too short to match in full.
 */
export const TRUNCATED_SECRET_TAIL =
  /(?:-----BEGIN[\s\S]*|(?<![A-Za-z0-9])(?:sk-|sk_live_|rk_live_|sk_test_|rk_test_|gh[pousr]_|github_pat_|gl(?:pat|ptt|rt)-|xox[abeposr]-|AKIA|ASIA|AIza|eyJ|npm_|hf_|whsec_)[^\s"'`]*|[A-Za-z][A-Za-z0-9+.-]{1,30}:\/\/[^\s:@/?#"'`[\]\\]*:(?!\d{1,5}(?:[/?#\\…]|$))[^\s"'`]*|(?<![A-Za-z0-9])(?:Bearer|Basic)\s+[^\s"'`]*|(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[a-z][A-Za-z0-9/+]*[A-Z]|[A-Za-z0-9/+]*[0-9/+])[A-Za-z0-9/+]{6,})…$/;
