/**
 * The option names each runtime call takes, checked at the call: a misspelt option (`dataDirectory`, `inputs`,
 * `runID`) is a TypeError naming it, never ignored (which would record the run elsewhere, without its input, under
 * another id, and report success). TypeScript catches a misspelt literal; this catches what it cannot see (JavaScript,
 * an options object built elsewhere, JSON).
 */

/**
 * The names of `T`'s options, each listed once: the mapped type makes a name the interface gains or loses a compile
 * error here, so the list never drifts from the type.
 */
export function optionNames<T extends object>(names: { [K in keyof Required<T>]: true }): ReadonlySet<string> {
  return new Set(Object.keys(names));
}

/**
 * A TypeError when `options` has an own key `names` does not hold, naming it, the option it may have meant (`meant`
 * names the likely ones for a key, e.g. `answer` for resumeRun's `resume`; else one that differs only in case, that
 * it starts with or extends, or that shares its first five letters) and every option `call` takes.
 */
export function checkOptionNames(options: unknown, names: ReadonlySet<string>, call: string, meant: Readonly<Record<string, string>> = {}): void {
  if (typeof options !== 'object' || options === null) {
    if (options === undefined) return;
    throw new TypeError(`${call}: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (names.has(key)) continue;
    const likely = Object.hasOwn(meant, key) ? meant[key] : closest(key, names);
    throw new TypeError(`${call}: unknown option ${JSON.stringify(key)}${likely === undefined ? '' : ` (did you mean ${likely}?)`}; its options are ${[...names].sort().join(', ')}`);
  }
}

/**
 * The option `key` most likely meant: equal but for case; else the one sharing the longest start with it, when that
 * start is all of one of them (3 letters at least) or 5 letters at least.
 */
function closest(key: string, names: ReadonlySet<string>): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestShared = 0;
  for (const name of names) {
    const other = name.toLowerCase();
    if (other === lower) return name;
    let shared = 0;
    while (shared < other.length && shared < lower.length && other[shared] === lower[shared]) shared++;
    const whole = shared === other.length || shared === lower.length;
    if ((whole ? shared >= 3 : shared >= 5) && shared > bestShared) {
      best = name;
      bestShared = shared;
    }
  }
  return best;
}
