/**
 * Text a run stored (or a user typed) made safe to print on a terminal. A key, an error message, a node id or a memory
 * item may hold characters a terminal obeys rather than shows: C0 controls (`\r`, ESC starting an ANSI sequence that
 * clears the line, conceals text, writes the clipboard or draws a hyperlink), DEL, C1 controls (U+009B is a one-byte
 * CSI) and the bidirectional and line-separator format characters (U+061C, U+200E-U+200F, U+2028-U+202E,
 * U+2066-U+2069) that reorder or break what follows. Every human-readable renderer of both CLIs and the live trace
 * passes such text through {@link terminalText}; `--json` output is JSON and is left to its consumer.
 */

/** Any character that a terminal may act on (the single-line rule). */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
/** The same without newline, which multi-line text keeps (a carriage return before a newline goes with it). */
// eslint-disable-next-line no-control-regex
const UNSAFE_IN_LINES = /\r\n|[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
const UNSAFE_IN_LINES_ALL = new RegExp(UNSAFE_IN_LINES.source, 'g');

const SHORT: Readonly<Record<string, string>> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

/** A character's visible escape, as a JSON string writes it: `\n`, `\r`, `\t`, `\b`, `\f`, else `\u` and four hex digits. */
function escape(ch: string): string {
  return SHORT[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Options of {@link terminalText}. */
export interface TerminalTextOptions {
  /**
   * Keep the text's lines (multi-line fields: memory content, frame content, model output, an error of several
   * lines): its newlines (and CRLF line ends, printed as a newline) stay, and every line after the first begins with
   * `continuation`, so that no stored line can pass for a line of the program's own (give a non-empty indent).
   * Without it, the text is one line: a newline is shown as `\n`.
   */
  continuation?: string;
}

/**
 * `text` with every character a terminal would act on shown as a visible escape: the control characters (C0 except,
 * for multi-line text, newline; DEL; C1) and the bidirectional and line-separator format characters become
 * the escapes a JSON string would use (`\r`, `\u001b`, `\u009b`, `\u202e`). A backslash is left as it is, so the
 * text `\u001b` and an escaped ESC print alike: `--json` gives the exact text. Most text has nothing to escape and
 * is returned as it is after one regular-expression test.
 */
export function terminalText(text: string, options?: TerminalTextOptions): string {
  const continuation = options?.continuation;
  if (continuation === undefined) return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, escape) : text;
  const safe = UNSAFE_IN_LINES.test(text) ? text.replace(UNSAFE_IN_LINES_ALL, (ch) => (ch === '\r\n' ? '\n' : escape(ch))) : text;
  return safe.includes('\n') ? safe.replace(/\n/g, `\n${continuation}`) : safe;
}
