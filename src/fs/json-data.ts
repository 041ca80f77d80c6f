/**
 * JSON data: what a value must be for a file (or a row) to hold it as it is. Shared by the stores and the context
 * engine, which write such values (keyframes, memory metadata, frame metadata).
 */
/**
 * What keeps `value` from being JSON data, or undefined when it is: strings, finite numbers, booleans, null, arrays
 * and plain objects (prototype `Object.prototype` or null, no symbol keys) all through; an own `"__proto__"` key is
 * data like any other key (`JSON.parse` makes one). On a problem, `path` is where it is. With `undefinedFields`, an
 * object's field whose value is undefined passes (JSON leaves it out, and reading it back gives undefined as well).
 * A value nested too deep to walk (or that refers to itself) is a problem at the top (`path` empty).
 */
export function jsonProblem(value: unknown, path: (string | number)[], undefinedFields = false): string | undefined {
  try {
    return problemAt(value, path, undefinedFields);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    path.length = 0;
    return 'nested too deep to check (or refers to itself)';
  }
}

function problemAt(value: unknown, path: (string | number)[], undefinedFields: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : notJson(String(value));
    case 'object':
      break;
    default:
      return notJson(typeof value === 'undefined' ? 'undefined (or a hole in an array)' : `a ${typeof value}`);
  }
  if (value === null) return undefined;
  const proto = Object.getPrototypeOf(value) as object | null;
  if (Array.isArray(value) ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) return notJson(`an instance of ${className(proto)}`);
  if (Object.getOwnPropertySymbols(value).length > 0) return notJson('an object with symbol keys');
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const problem = problemAt(value[i], path, undefinedFields);
      if (problem) return problem;
      path.pop();
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined && undefinedFields) continue;
    path.push(key);
    const problem = problemAt(field, path, undefinedFields);
    if (problem) return problem;
    path.pop();
  }
  return undefined;
}

function notJson(what: string): string {
  return `expected JSON data (a string, finite number, boolean, null, array or plain object), got ${what}`;
}

/** The class name a prototype shows, read without running any getter of it. */
function className(proto: object | null): string {
  const ctor = proto && (Object.getOwnPropertyDescriptor(proto, 'constructor')?.value as unknown);
  const name = typeof ctor === 'function' ? (Object.getOwnPropertyDescriptor(ctor, 'name')?.value as unknown) : undefined;
  return typeof name === 'string' && name !== '' ? name : 'a class';
}

/**
 * What a bad input is, for an error message: its kind (`a string`, `null`, `an array`, `an invalid Date`, ...), never
 * its text (which may be a secret, or anyone's).
 */
export function valueKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : 'a Date';
  const type = typeof value;
  return type === 'undefined' ? 'undefined' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}
