/**
 * A tiny benchmark harness shared by every `bench/*.bench.ts`: time a function many times, take the median,
 * and print a table with the target and the ratio to it.
 */

/** One row of a benchmark table. */
export interface BenchRow {
  name: string;
  /** Measured median, in `unit`. */
  median: number;
  unit: string;
  /** Target in the same unit; lower is better. */
  target?: number;
  /** A comparison figure for context (another system's number), printed as is. */
  anchor?: string;
}

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Runs `fn` `warmup` times, then `runs` times, and returns the median wall time in milliseconds. */
export async function timeMedianMs(fn: () => unknown, runs: number, warmup = Math.min(3, runs)): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

function format(n: number): string {
  if (n >= 100) return n.toFixed(0);
  if (n >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** Prints the table (Markdown, so it can be pasted into a note) and returns whether every target was met. */
export function printTable(title: string, rows: BenchRow[]): boolean {
  const lines = [
    `### ${title}`,
    '',
    '| measure | median | target | ratio to target | result | anchor |',
    '|---|---|---|---|---|---|',
  ];
  let allMet = true;
  for (const row of rows) {
    const met = row.target === undefined || row.median <= row.target;
    allMet &&= met;
    lines.push(
      `| ${row.name} | ${format(row.median)} ${row.unit} | ${row.target === undefined ? '—' : `<= ${format(row.target)} ${row.unit}`} | ` +
        `${row.target === undefined ? '—' : (row.median / row.target).toFixed(2) + 'x'} | ${row.target === undefined ? '—' : met ? 'pass' : 'MISS'} | ${row.anchor ?? ''} |`,
    );
  }
  lines.push('', `node ${process.version}, ${process.platform}/${process.arch}`);
  console.log(lines.join('\n'));
  return allMet;
}

/**
 * The environment without the variables that make every Node process do extra work before any of its code runs:
 * NODE_OPTIONS, and NODE_EXTRA_CA_CERTS, which Node 20 reads and parses at every start (this machine sets it to the
 * system's whole certificate bundle: about 50 ms of CPU per process, more than the rest of Node's start). Neither is
 * part of the command; git pays nothing for them. The benches that time processes (context, cli) run them without
 * these, and show in one row (`node -e 0` with this machine's own environment) what they cost here.
 */
export function withoutNodeStartupSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _options, NODE_EXTRA_CA_CERTS: _certs, ...rest } = env;
  return rest;
}
