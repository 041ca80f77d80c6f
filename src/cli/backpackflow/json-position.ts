/**
 * Where JSON text first goes wrong, for error messages: Node 20's JSON.parse names a position for some errors only
 * ("Unexpected token ',', ... is not valid JSON" has none). A small recursive-descent scanner finds the offset.
 */

const WS = new Set([' ', '\t', '\n', '\r']);

/** The offset of the first character where `text` stops being valid JSON, or -1 when it is valid. */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const ws = (): void => {
    while (i < text.length && WS.has(text[i]!)) i++;
  };
  const literal = (word: string): void => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = (): void => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') {
      const ch = text[i]!;
      if (ch < ' ') fail();
      if (ch === '\\') {
        i++;
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) {
              i += k;
              fail();
            }
          }
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x') || i >= text.length) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const number = (): void => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '' || m[0] === '-') fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return number();
    fail();
  };
  try {
    value();
    ws();
    return i < text.length ? i : -1;
  } catch (offset) {
    return typeof offset === 'number' ? Math.min(offset, text.length) : -1;
  }
}

/** 1-based line and column of `offset` in `text`. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}
