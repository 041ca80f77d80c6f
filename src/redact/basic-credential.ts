/**
 * A `user:password` pair in base64, as `~/.docker/config.json` keeps one per registry (`auths.<registry>.auth`) and
 * HTTP Basic authentication sends it, or as it is (Node's `http.request({ auth: 'user:password' })`). The redactor
 * blanks such a value under a key named `auth` (in objects and in text), where `auth` is otherwise not a secret name
 * (`auth: 'none'` is a setting).
 */

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Whether `value` is base64 (padded, 4 to 1024 characters) of `user:password`: text with no control character, a
 * `:` after at least one character and before at least one more. Words such as `none`, `true` or `oauth2` are not
 * (their length is not a multiple of 4, or they decode to bytes without a `:`).
 */
export function isBasicCredential(value: string): boolean {
  if (value.length < 4 || value.length > 1024 || value.length % 4 !== 0 || !BASE64.test(value)) return false;
  const text = Buffer.from(value, 'base64').toString('latin1');
  const colon = text.indexOf(':');
  if (colon < 1 || colon === text.length - 1) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

/**
 * `user:password` as it is: one token with a `:` inside, not a URL (`https://…`) nor a `scheme:` alone. The user may
 * be an email address (`bot@acme.com:<token>`, Atlassian's basic auth).
 */
const USER_PASSWORD = /^[^\s:/]{1,256}:(?!\/\/)\S{1,1024}$/;

/**
 * Whether `value`, found under a key named `auth`, is credentials: {@link isBasicCredential}, or `user:password` as
 * it is, the form of Node's `http.request({ auth })` and of `url.parse(...).auth`. Settings (`none`, `oauth2`,
 * `true`) and URLs are not.
 */
export function isAuthCredential(value: string): boolean {
  return isBasicCredential(value) || USER_PASSWORD.test(value);
}
