/** Parsers of option values: each fails with a usage error naming the option. */
import { idProblem } from '../../store/paths.js';
import { UsageError } from './errors.js';

/** Parses a non-negative integer option value, or fails with a usage error naming the option. */
export function nonNegativeInteger(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError(`${name} must be a non-negative integer, got '${value}'`);
    return n;
  };
}

/** Parses a positive integer option value, or fails with a usage error naming the option. */
export function positiveInteger(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer, got '${value}'`);
    return n;
  };
}

/** Parses an id option (`--session`, `--run-id`, ...), or fails with a usage error naming the option and the reason. */
export function validId(name: string): (value: string) => string {
  return (value) => {
    const problem = idProblem(value);
    if (problem !== undefined) throw new UsageError(`${name}: invalid id '${value}': ${problem}`);
    return value;
  };
}
