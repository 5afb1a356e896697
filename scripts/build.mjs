// `npm run build` (and `prepack`, so `npm pack` and `npm publish`; npm runs only `prepare` for a git dependency):
// compiles src/, workers/ and the demo's model to dist/ with tsc (tsconfig.build.json). A full
// compile takes ~20 s of CPU; when dist/ was built from exactly the files it would be built from now
// (a SHA-256 over their paths and contents, kept in dist/.inputs-sha256), it is kept as it is: a
// second `npm pack` does not compile again. `--force` compiles regardless.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const stamp = path.join(root, 'dist', '.inputs-sha256');
const force = process.argv.includes('--force');

/** Every file the compile reads from this package: sources, configs, and the lock (types). */
function inputs() {
  const files = [
    'examples/orchestrator/orchestrating-model.ts',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'package-lock.json',
  ];
  for (const dir of ['src', 'workers']) {
    for (const entry of readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(path.relative(root, path.join(entry.parentPath, entry.name)));
    }
  }
  return files.sort();
}

function inputsHash() {
  const hash = createHash('sha256');
  for (const file of inputs()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

const hash = inputsHash();
if (!force && existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) {
  console.log('dist/ is up to date with the sources (npm run build -- --force compiles anyway)');
  process.exit(0);
}
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [
    createRequire(import.meta.url).resolve('typescript/bin/tsc'),
    '-p',
    path.join(root, 'tsconfig.build.json'),
  ],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
writeFileSync(stamp, hash);
