/**
 * Two shapes of secrets in text that the one-value `name: value` rule of the redactor does not see whole:
 *
 * - a secret-named field whose value is a structure (`{secrets: {db: "hunter2"}}`, `"passwords": ["a", "b"]`, a value
 *   summary, JSON, a YAML flow mapping): every scalar in it is replaced, as every string under such a key is in an
 *   object; keys, numbers, booleans and `null` are kept;
 * - a record that names its value in another field (`{name: "DB_PASSWORD", value: "hunter2"}`, HAR headers,
 *   Kubernetes env, `- name: X_API_KEY` then `value: …` in YAML): the value is replaced when the name is secret-named.
 */

/** The marker's text as a bare scalar reads it. */
const MARKER_WORD = 'REDACTED';
/** A bare scalar kept in a structure: a number, a boolean, null. */
const KEPT_SCALAR = /^(?:-?\d[\d_.eE+-]*|true|false|null|undefined|None|True|False)$/;

/** A character that ends a bare scalar in a structure. */
function endsBare(c: number): boolean {
  // blank, tab, CR, LF, `"`, `'`, `,`, `:`, `{`, `}`, `[`, `]`, `\`, `=`, `;`, and `>` (of `=>`, a Map entry's mark
  // in `util.inspect` text, and a Ruby hash's)
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a || c === 0x22 || c === 0x27 || c === 0x2c || c === 0x3a || c === 0x7b || c === 0x7d || c === 0x5b || c === 0x5d || c === 0x5c || c === 0x3d || c === 0x3b || c === 0x3e;
}

/** Whether a key mark (`:`, `=`, `=>`) follows `at` in `text`, past blanks. */
function keyMarkAt(text: string, at: number): boolean {
  while (at < text.length && (text.charCodeAt(at) === 0x20 || text.charCodeAt(at) === 0x09)) at++;
  const c = text.charCodeAt(at);
  return c === 0x3a || c === 0x3d;
}

/** A bare scalar that is a number. */
const NUMBER = /^-?\d/;

/**
 * The structure starting at `start` (a `{` or `[`) in `text`, to its matching bracket (or the end of the text, when a
 * summary cut it short), with every scalar that is not a key, a number, a boolean or `null` replaced by `marker`
 * (a quoted one keeps its quotes); a number right after a key for which `numberIsSecret` says so is replaced too (as
 * the object form redacts a number right under a secret-named key, or a Backpack item's `value`). Returns the
 * replaced text and where the structure ends.
 */
export function blankStructure(text: string, start: number, marker: string, numberIsSecret: (key: string) => boolean = () => false): { text: string; end: number } {
  let out = '';
  let from = start;
  let depth = 0;
  let i = start;
  /** The key the next scalar is the value of, when one was just read. */
  let key: string | undefined;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      key = undefined;
      depth++;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      i++;
      if (depth === 0) break;
    } else if (c === 0x22 || c === 0x27 || (c === 0x5c && (text.charCodeAt(i + 1) === 0x22 || text.charCodeAt(i + 1) === 0x5c))) {
      // A quoted scalar: `"…"`, `'…'`, or escaped at any depth (`\"…\"`, JSON quoted inside a string).
      let q = i;
      while (text.charCodeAt(q) === 0x5c) q++;
      const quote = text.slice(i, q + 1);
      if (text.charCodeAt(q) !== 0x22 && text.charCodeAt(q) !== 0x27) {
        i = q + 1;
        continue;
      }
      const bodyStart = q + 1;
      let close = text.indexOf(quote, bodyStart);
      // In `"…"`, a quote after a backslash is part of the value.
      while (quote.length === 1 && close > 0 && text.charCodeAt(close - 1) === 0x5c) close = text.indexOf(quote, close + 1);
      const bodyEnd = close < 0 ? (text.endsWith('…') ? text.length - 1 : text.length) : close;
      const next = close < 0 ? bodyEnd : close + quote.length;
      const body = text.slice(bodyStart, bodyEnd);
      const isKey = keyMarkAt(text, next);
      if (!isKey && body !== marker && body !== '') {
        out += text.slice(from, bodyStart) + marker;
        from = bodyEnd;
      }
      key = isKey ? body : undefined;
      i = next;
    } else if (endsBare(c) || c === 0x2026) {
      i++;
    } else {
      let j = i + 1;
      while (j < text.length && !endsBare(text.charCodeAt(j)) && text.charCodeAt(j) !== 0x2026) j++;
      const word = text.slice(i, j);
      const isKey = keyMarkAt(text, j);
      if (!isKey && word !== MARKER_WORD && (!KEPT_SCALAR.test(word) || (key !== undefined && NUMBER.test(word) && numberIsSecret(key)))) {
        out += text.slice(from, i) + marker;
        from = j;
      }
      key = isKey ? word : undefined;
      i = j;
    }
  }
  return { text: out + text.slice(from, i), end: i };
}

/**
 * A field that names a record's value and the field holding it, in text: `name: "DB_PASSWORD", value: "…"` (a value
 * summary, JSON, a JS literal), or on the next line (`- name: DB_PASSWORD` then `  value: …` in YAML). Groups: the
 * naming field, the name, the value field, the value's start (what follows the value field's mark).
 */
export const NAMED_PAIR = new RegExp(
  String.raw`(?<![\w$.\\-])\\*["']?(key|name|Name|Key|ParameterKey|header)\\*["']?[ \t]*[:=][ \t]*\\*["']?([A-Za-z_$][\w$.-]{0,200})\\*["']?[ \t]*(?:,[ \t]*(?:\r?\n[ \t]*)?|\r?\n[ \t]*|[ \t]+)\\*["']?(value|Value|ParameterValue)\\*["']?[ \t]*[:=][ \t]*`,
  'g',
);
