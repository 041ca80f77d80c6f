import pc from 'picocolors';

/**
 * Whether CLI output is colored: never when `NO_COLOR` is set (https://no-color.org), never when `FORCE_COLOR=0`, always when
 * `FORCE_COLOR` is set to anything else, else only when stdout is a terminal.
 */
export function useColor(env: NodeJS.ProcessEnv = process.env, isTTY = process.stdout.isTTY === true): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0';
  return isTTY;
}

/** The color functions of both CLIs, on or off per {@link useColor}. */
export const colors = pc.createColors(useColor());
