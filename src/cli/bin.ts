/**
 * The `troupe` process: runs the CLI on this process's arguments and ends with its exit code.
 * `bin/troupe.mjs` loads it compiled (`dist/src/cli/bin.js`) when installed and through tsx in a
 * source checkout.
 */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
