/**
 * Child-process entry: runs one benchmark and prints its result line.
 * `node --import tsx bench/support/run-one.ts <name> [--quick]`
 */
import { emitResult } from './child.ts';
import { benchByName } from './registry.ts';

const name = process.argv[2] ?? '';
const bench = benchByName(name);
if (!bench) {
  console.error(`Unknown benchmark ${JSON.stringify(name)}`);
  process.exit(2);
}
const output = await bench.run({ quick: process.argv.includes('--quick') });
emitResult(output);
// Libraries under test may leave handles (timers, pools) behind; the result is out, so stop here.
process.exit(0);
