/**
 * The environment for a child process whose output a test compares as text: the parent's, without `FORCE_COLOR` (which
 * CI sets and which makes Node color `console.log` output) and with `NO_COLOR`.
 */
export function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...extra };
  delete env.FORCE_COLOR;
  return env;
}
