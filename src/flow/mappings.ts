/**
 * Edge data mappings: a route can copy keys when it is taken (`a.on('done', b, { mappings: { results: 'documents' } })`
 * copies `results` to `documents` before `b` runs). This module checks their shape; the flows apply them
 * (`BaseFlow` on a plain shared object, the namespaced `Flow` as a Backpack commit by the route's source node).
 */

/** Source key → target key, copied when the route is taken. */
export type RouteMappings = Readonly<Record<string, string>>;

/** Options of a route (`node.on(action, next, options)`). */
export interface RouteOptions {
  /** Keys copied when the route is taken: source key → target key. All sources are read before any target is written. */
  mappings?: RouteMappings;
}

/** One problem of a mapping: the source key it concerns (undefined for the whole object) and what is wrong. */
export interface MappingProblem {
  source: string | undefined;
  message: string;
}

/**
 * Every problem of `mappings`: not an object of non-empty string keys to non-empty string values, a key mapped to
 * itself, two sources mapped to one target; `keyProblem` adds the checks of a key's syntax (the Backpack's).
 */
export function mappingProblems(mappings: unknown, keyProblem?: (key: string) => string | undefined): MappingProblem[] {
  if (mappings === null || typeof mappings !== 'object' || Array.isArray(mappings)) {
    return [{ source: undefined, message: `mappings must be an object of source key to target key, got ${Array.isArray(mappings) ? 'an array' : String(mappings)}` }];
  }
  const problems: MappingProblem[] = [];
  const targets = new Map<string, string>();
  for (const [source, target] of Object.entries(mappings)) {
    if (source === '') problems.push({ source, message: 'a source key must be a non-empty string' });
    if (typeof target !== 'string' || target === '') {
      problems.push({ source, message: `target of '${source}' must be a non-empty string (a key), got ${JSON.stringify(target)}` });
      continue;
    }
    if (target === source) problems.push({ source, message: `'${source}' is mapped to itself` });
    const earlier = targets.get(target);
    if (earlier !== undefined) problems.push({ source, message: `'${source}' and '${earlier}' are both mapped to '${target}': one source per target` });
    else targets.set(target, source);
    if (keyProblem) {
      for (const key of source === '' ? [target] : [source, target]) {
        const problem = keyProblem(key);
        if (problem !== undefined) problems.push({ source, message: problem });
      }
    }
  }
  return problems;
}

/**
 * A frozen copy of `mappings`, or a TypeError naming the route and the first problem. The copy is taken first (one
 * read of each entry) and is what is checked and kept: a getter cannot answer a key to the check and an object to
 * the copy (which `route.taken` events show every node).
 */
export function checkMappings(where: string, mappings: unknown, keyProblem?: (key: string) => string | undefined): RouteMappings {
  const copy = mappings === null || typeof mappings !== 'object' || Array.isArray(mappings) ? mappings : ownEntries(mappings);
  const [problem] = mappingProblems(copy, keyProblem);
  if (problem) throw new TypeError(`${where}: ${problem.source === undefined ? '' : `mapping '${problem.source}': `}${problem.message}`);
  return Object.freeze(copy as Record<string, string>);
}

/** A plain object of `object`'s own enumerable string-keyed entries, each read once (a `__proto__` key stays an own key). */
function ownEntries(object: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}
