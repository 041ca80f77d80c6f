import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { readJsonChunked } from '../fs/index.js';
import { FlowConfigError, type ConfigProblem } from './errors.js';
import { DEFAULT_MAX_FLOW_BYTES, MAX_JSON_NESTING, nestingProblem, sizeProblem, stripBom } from './limits.js';
import { RepeatedKeyScanner, repeatedKeys } from './repeated-keys.js';

/** Options of {@link parseFlowConfig}. */
export interface ParseFlowConfigOptions {
  /** Longest text accepted, in UTF-8 bytes (default {@link DEFAULT_MAX_FLOW_BYTES}, 16 MiB). */
  maxBytes?: number;
}

/**
 * Parses the text of a flow config file: a leading byte order mark is ignored; malformed JSON, text over
 * `maxBytes` and nesting deeper than {@link MAX_JSON_NESTING} are FlowConfigErrors naming line and column, the
 * size, or the JSON path and the limit.
 */
export function parseFlowConfig(text: string, source = 'flow config', options: ParseFlowConfigOptions = {}): unknown {
  const tooLarge = sizeProblem(Buffer.byteLength(text, 'utf8'), options.maxBytes ?? DEFAULT_MAX_FLOW_BYTES, source);
  if (tooLarge) throw new FlowConfigError([tooLarge], `${source} is too large`);
  const json = stripBom(text);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw malformed(json, source, error);
  }
  const deep = nestingProblem(value, MAX_JSON_NESTING);
  if (deep) throw new FlowConfigError([deep], `${source} is nested too deeply`);
  const repeated = repeatedKeys(json);
  if (repeated.length > 0) throw new FlowConfigError(repeated, `${source} repeats a key`);
  return value;
}

/**
 * Reads and parses a flow config file as {@link parseFlowConfig} parses its text (same value, same errors, `path` as
 * the source), but without holding the whole text beside the parsed config: the file is read in chunks. Only a file
 * the chunked reader does not take (malformed, say) is read whole, for the error's line and column. Errors of the
 * file system (missing, unreadable) are thrown as they are.
 */
export function readFlowConfigFile(path: string, options: ParseFlowConfigOptions = {}): unknown {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_FLOW_BYTES;
  const read = readJsonChunked(path, { maxBytes });
  if (read === undefined) return parseFlowConfig(readFileSync(path, 'utf8'), path, { maxBytes });
  const deep = nestingProblem(read.value, MAX_JSON_NESTING);
  if (deep) throw new FlowConfigError([deep], `${path} is nested too deeply`);
  const repeated = repeatedKeysOfFile(path);
  if (repeated.length > 0) throw new FlowConfigError(repeated, `${path} repeats a key`);
  return read.value;
}

/** {@link repeatedKeys} of a file, read in chunks as the config was (its whole text is never held). */
function repeatedKeysOfFile(path: string): ConfigProblem[] {
  const scanner = new RepeatedKeyScanner();
  const decoder = new StringDecoder('utf8');
  const chunk = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(path, 'r');
  try {
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) scanner.push(decoder.write(chunk.subarray(0, n)));
    scanner.push(decoder.end());
  } finally {
    closeSync(fd);
  }
  return scanner.problems;
}

function malformed(text: string, source: string, error: unknown): FlowConfigError {
  const offset = jsonErrorOffset(text);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  const message = (error as Error).message;
  return new FlowConfigError([{ path: '', message: `${source} is not valid JSON at line ${line}, column ${column}: ${message}` }], `Malformed ${source}`);
}

/**
 * Offset of the first syntax error in `text` (JSON.parse names no position for some errors on this Node version),
 * found by a small recursive-descent scan of the JSON grammar. Nesting past {@link MAX_JSON_NESTING} stops the
 * scan there (so that no input can exhaust the stack).
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  class Stop extends Error {}
  const fail = (): never => {
    throw new Stop();
  };
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const literal = (word: string): void => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = (): void => {
    if (text[i] !== '"') fail();
    i++;
    while (i < text.length && text[i] !== '"') {
      const code = text.charCodeAt(i);
      if (code < 0x20) fail();
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          for (let k = 0; k < 4; k++) {
            i++;
            if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail();
          }
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x')) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const number = (): void => {
    const match = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (!match) fail();
    i += match![0].length;
  };
  let depth = 0;
  const value = (): void => {
    ws();
    const ch = text[i];
    if ((ch === '{' || ch === '[') && depth >= MAX_JSON_NESTING) fail();
    if (ch === '{' || ch === '[') depth++;
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') return void (i++, depth--);
      for (;;) {
        ws();
        string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void (i++, depth--);
        else fail();
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') return void (i++, depth--);
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void (i++, depth--);
        else fail();
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    number();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
  return Math.min(i, text.length);
}
