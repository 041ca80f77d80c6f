import { jsonPointer, MAX_JSON_NESTING, nestingProblem } from '../../backpack/nesting.js';
import { TOOL_RECORD_LEVELS } from './tool-input.js';

/**
 * Deepest nesting of arrays and objects accepted in a tool's result, as in its arguments
 * ({@link MAX_TOOL_INPUT_NESTING}): the Backpack, the value codec, redaction and the AI SDK all recurse over it. It
 * leaves room under `MAX_JSON_NESTING`, the Backpack's bound, for the records a result is packed in (a list of
 * results, each a record holding it, a conversation's messages).
 */
export const MAX_TOOL_OUTPUT_NESTING = MAX_JSON_NESTING - TOOL_RECORD_LEVELS;

/**
 * Why a tool's result is not JSON data the model, the Backpack and the event log can all take as it is, or undefined
 * when it is. The result is checked, never converted: a value JSON would turn into something else is refused, so the
 * model, the Backpack and the event log never see different values. JSON data is `null`, booleans, strings, finite
 * numbers, arrays and plain objects (prototype `Object.prototype` or `null`) of JSON data, nested at most
 * {@link MAX_TOOL_OUTPUT_NESTING} levels deep. Refused: `NaN` and infinities, BigInt, functions, symbols, class
 * instances (a Date, Map, Set, typed array, Error, ...), `undefined` or a hole in an array, symbol-keyed
 * properties, and a value that contains itself. An object property whose value is `undefined` is accepted: JSON
 * leaves it out, and reading it gives `undefined` either way. (`undefined` as the whole result is `null`, see
 * `runTool`.) The problem names where, as a JSON pointer (`''` for the result itself), and what was found there.
 */
export function toolOutputProblem(value: unknown): { path: string; message: string } | undefined {
  // Iterative, so any depth is safe to check; below the limit the walk that follows may recurse.
  const deep = nestingProblem(value, MAX_TOOL_OUTPUT_NESTING);
  if (deep !== undefined) return deep;
  const path: string[] = [];
  const message = notJson(value, path, []);
  return message === undefined ? undefined : { path: jsonPointer(path), message };
}

/** What is not JSON in `value` (its path left in `path`), or undefined. `ancestors` are the containers above it. */
function notJson(value: unknown, path: string[], ancestors: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${value} (not a JSON number; JSON.stringify would write null)`;
    case 'bigint':
      return `a BigInt (${value}n; JSON.stringify cannot encode it)`;
    case 'undefined':
      return 'undefined (JSON.stringify would write null)';
    case 'function':
      return 'a function (not data)';
    case 'symbol':
      return 'a symbol (not data)';
  }
  if (value === null) return undefined;
  const object = value as object;
  if (ancestors.includes(object)) return `a reference back to the value at '${jsonPointer(path.slice(0, ancestors.indexOf(object)))}', which contains it (a cycle)`;
  if (Object.getOwnPropertySymbols(object).length > 0) return 'an object with symbol-keyed properties (JSON.stringify would leave them out)';
  ancestors.push(object);
  const problem = Array.isArray(value) ? arrayProblem(value, path, ancestors) : objectProblem(object, path, ancestors);
  ancestors.pop();
  return problem;
}

function arrayProblem(array: unknown[], path: string[], ancestors: object[]): string | undefined {
  if (Object.getPrototypeOf(array) !== Array.prototype) return `${kindOf(array)} (not a plain array)`;
  for (let i = 0; i < array.length; i++) {
    path.push(String(i));
    if (!(i in array)) return 'a hole in an array (JSON.stringify would write null)';
    const problem = notJson(array[i], path, ancestors);
    if (problem !== undefined) return problem;
    path.pop();
  }
  return undefined;
}

function objectProblem(object: object, path: string[], ancestors: object[]): string | undefined {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) return `${kindOf(object)} (not a plain object; convert it to JSON data, e.g. a Date with toISOString())`;
  for (const [key, child] of Object.entries(object)) {
    if (child === undefined) continue;
    path.push(key);
    const problem = notJson(child, path, ancestors);
    if (problem !== undefined) return problem;
    path.pop();
  }
  return undefined;
}

/** 'a Date', 'a Map', 'an instance of class Foo': the kind of a non-plain object, for messages. */
function kindOf(object: object): string {
  const name = (object as { constructor?: { name?: unknown } }).constructor?.name;
  if (typeof name !== 'string' || name === '') return 'an object of a class';
  return `${/^[AEIO]/.test(name) ? 'an' : 'a'} ${name}`;
}
