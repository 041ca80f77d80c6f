/**
 * How many trials a crash or property loop runs: a few in `npm test` (every kind of kill still happens, in seconds),
 * many in `npm run test:soak` (SOAK=1), which `.ci/run` also runs.
 */
export const SOAK = process.env['SOAK'] === '1';

/** `quick` trials in `npm test`, `soak` with SOAK=1. */
export function trials(quick: number, soak: number): number {
  return SOAK ? soak : quick;
}
