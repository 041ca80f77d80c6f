/**
 * One measurement of `npm run bench:flow-memory`: runs the backpackflow CLI in this process (`validate` or `run` of
 * a flow file) and prints `{"code":…,"maxRssBytes":…}`, the peak resident memory of the process.
 * argv: command flowFile dataDir
 */
import { join } from 'node:path';
import { main } from '../../src/cli/backpackflow/program.js';

const [command, file, dataDir] = process.argv.slice(2) as [string, string, string];
const args = [command, file, '--modules', join(import.meta.dirname, 'nodes.ts'), '--max-flow-bytes', String(2 ** 31), '--json'];
if (command === 'run') args.push('--data-dir', dataDir);
// The CLI's own output (one JSON document) is not what is measured.
process.stdout.write = (() => true) as typeof process.stdout.write;
const code = await main(['node', 'backpackflow', ...args]);
process.stderr.write(`${JSON.stringify({ code, maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
