/**
 * The demo from source, without a build: `npx tsx examples/demo/main.ts [--workspace dir] [--data-dir dir]
 * [--question text] [--json]`. Same as `backpackflow demo` (see README.md here).
 */
import { main } from '../../src/cli/backpackflow/program.js';

process.exitCode = await main([process.argv[0]!, 'backpackflow', 'demo', ...process.argv.slice(2)]);
