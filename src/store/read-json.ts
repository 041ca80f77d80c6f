import { readTextIfExists } from '../fs/index.js';
import { describeIssues } from './errors.js';

/** The part of a zod schema {@link readJsonIfExists} uses. */
export interface JsonSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> } };
}

/**
 * The file at `path` parsed as JSON and validated with `schema`, or undefined when it does not exist. A file that is
 * not JSON or does not fit the schema throws `corrupt(reason)`, the reason naming what is wrong where.
 */
export async function readJsonIfExists<T>(path: string, schema: JsonSchema<T>, corrupt: (reason: string, cause?: unknown) => Error): Promise<T | undefined> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw corrupt(`not JSON (${(error as Error).message})`, error);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw corrupt(describeIssues(parsed.error, '(root)'));
  return parsed.data;
}
