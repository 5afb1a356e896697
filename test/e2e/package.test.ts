/**
 * The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), installed into
 * an empty project without troupe's dev dependencies, then used from plain JavaScript, from a
 * strict NodeNext TypeScript project, and through `npx troupe`.
 *
 * The install takes troupe's dependencies from the npm cache that `npm ci` filled for this
 * checkout (`--prefer-offline`: the registry is asked only for what the cache lacks). TypeScript
 * and @types/node are this checkout's: the consumer uses them as a user's own would.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnChild } from '../fixtures/children.ts';
import { killWorkers, redisServerPath, startWorker, TestRedis } from '../fixtures/scaleout/processes.ts';
import { repoRoot, simulatedEnv } from '../run-dir/helpers.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'troupe-package-'));
const consumer = path.join(scratch, 'consumer');
const version = (await import('../../package.json', { with: { type: 'json' } })).default.version;

interface Ran {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment for child npm and node processes: no provider keys, none of the parent npm's. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = simulatedEnv();
  for (const key of Object.keys(env)) {
    // `npm test` exports its own context (npm_config_local_prefix is this checkout: an `npm
    // install` inheriting it would install here); the consumer is a project of its own.
    if (
      /^npm_(lifecycle|package|command|execpath|node_execpath)|^npm_config_(local_prefix|call)$|^INIT_CWD$/.test(
        key,
      )
    )
      delete env[key];
  }
  return env;
}

function run(command: string, args: readonly string[], cwd: string): Promise<Ran> {
  const child = spawnChild(command, args, { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? signal ?? -1, stdout, stderr }));
  });
}

function write(relative: string, text: string): void {
  const file = path.join(consumer, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

let packed: { filename: string; files: { path: string }[] };
let installWarnings = '';

beforeAll(async () => {
  const pack = await run('npm', ['pack', '--json', '--pack-destination', scratch], repoRoot);
  expect(pack.code, pack.stderr).toBe(0);
  // The build's output may precede the JSON report.
  const report = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m))) as (typeof packed)[];
  packed = report[0] ?? { filename: '', files: [] };
  write('package.json', `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`);
  const install = await run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--omit=dev',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
      path.join(scratch, packed.filename),
    ],
    consumer,
  );
  expect(install.code, install.stderr).toBe(0);
  installWarnings = install.stderr;
}, 300_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the packed package, installed into an empty project', () => {
  it('ships compiled JavaScript, declarations and the demo files, and no sources or tests', () => {
    const files = packed.files.map((file) => file.path);
    for (const expected of [
      'package.json',
      'LICENSE',
      'bin/troupe.mjs',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/index.js.map',
      'dist/src/testing.js',
      'dist/src/cli/bin.js',
      'dist/workers/actor-host.js',
      'dist/workers/redis-worker.js',
      'dist/examples/orchestrator/orchestrating-model.js',
      'examples/orchestrator/agents/orchestrator.md',
    ]) {
      expect(files).toContain(expected);
    }
    expect(files.filter((file) => /^(src|test|workers|bench)\//.test(file))).toEqual([]);
    // npm 11 lists the install-time scripts of a tarball's package; troupe has none (a `prepare`
    // was named there, although npm never runs it for a tarball).
    expect(installWarnings).not.toMatch(/troupe@\S+ \(/);
    // tsx is a dev dependency: it is not installed with troupe, and neither is any other.
    const modules = readdirSync(path.join(consumer, 'node_modules'));
    expect(modules).toContain('troupe');
    for (const dev of ['tsx', 'typescript', 'vitest', '@biomejs']) expect(modules).not.toContain(dev);
  });

  it('a plain .mjs file imports the API and runs a fan-out on worker threads', async () => {
    write(
      'app.mjs',
      `import { Supervisor } from 'troupe';
import { ScriptedProvider } from 'troupe/testing';

const supervisor = new Supervisor({ threads: 2 });
let announced = 0;
supervisor.on('provider:simulated', () => {
  announced += 1;
});
const files = ['package.json', 'app.mjs', 'app.ts'];
const results = await supervisor
  .fanOut(files.map((file) => ({ agent: 'worker', task: \`Review \${file}.\` })), { concurrency: 3 })
  .all();
await supervisor.close();
console.log(JSON.stringify({
  announced,
  scripted: typeof ScriptedProvider,
  statuses: results.map((r) => r.outcome.status),
  simulated: results.every((r) => JSON.stringify(r.outcome.result).includes('[simulated]')),
}));
`,
    );
    const app = await run(process.execPath, ['app.mjs'], consumer);
    expect(app.code, app.stderr).toBe(0);
    expect(JSON.parse(app.stdout)).toEqual({
      announced: 1,
      scripted: 'function',
      statuses: ['completed', 'completed', 'completed'],
      simulated: true,
    });
    expect(app.stderr).toContain(
      '[TROUPE_SIMULATED_MODEL] TroupeWarning: troupe is using the simulated model',
    );
  });

  it("a .ts file type-checks with the user's strict NodeNext tsc against the shipped declarations", async () => {
    write(
      'tsconfig.json',
      `${JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noUncheckedIndexedAccess: true,
            exactOptionalPropertyTypes: true,
            skipLibCheck: false,
            noEmit: true,
            types: ['node'],
            typeRoots: [path.join(repoRoot, 'node_modules/@types')],
          },
          files: ['app.ts'],
        },
        null,
        2,
      )}\n`,
    );
    write(
      'app.ts',
      `import { type AgentOutcome, Supervisor, type SupervisorOptions } from 'troupe';
import { ScriptedProvider } from 'troupe/testing';

const options: SupervisorOptions = { threads: 2, providers: { simulated: { kind: 'simulated' } } };
const supervisor = new Supervisor(options);
supervisor.on('agent:completed', (event) => console.log(event.agentId, event.outcome.status));
const outcome: AgentOutcome = await supervisor.spawn('worker', { task: 'Review app.ts.' }).result;
if (outcome.status === 'completed') console.log(outcome.result);
else console.log(outcome.reason, outcome.error.code);
const scripted = new ScriptedProvider([{ text: 'hello' }]);
console.log(scripted.name);
await supervisor.close();

// The declarations are real: a wrong option type is an error, not \`any\`.
// @ts-expect-error \`threads\` is a number
new Supervisor({ threads: 'two' });
`,
    );
    const tsc = await run(
      process.execPath,
      [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'],
      consumer,
    );
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
  });

  it("the shipped fan-out example runs from the installed package, importing 'troupe'", async () => {
    // As docs/examples.md runs it, with tsx (the repository's: the consumer installed no dev tools).
    // It imported ../src/index.ts, which the package does not ship.
    const tsx = import.meta.resolve('tsx');
    const ran = await run(
      process.execPath,
      ['--import', tsx, 'node_modules/troupe/examples/fanout.ts'],
      consumer,
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.match(/: completed /g)).toHaveLength(4);
  });

  it("a shipped example plan runs from the installed package, as README's Examples say", async () => {
    const plan = 'node_modules/troupe/examples/prompt-blocks/plan.yaml';
    const out = path.join(consumer, 'runs', 'prompt-blocks');
    const ran = await run('npx', ['--no', '--', 'troupe', 'fanout', plan, '--out', out], consumer);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('finished: 3 of 3 completed, 0 failed');
  });

  it('npx troupe demo runs from the installed package, on its own files', async () => {
    const demo = await run('npx', ['--no', '--', 'troupe', 'demo'], consumer);
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/finished: 1 of 1 completed, 0 failed; 8 spawned by agents \(0 failed\)/);
    expect(demo.stdout).toContain('using the simulated model');
    const runs = path.join(consumer, '.troupe', 'runs');
    expect(existsSync(runs) && readdirSync(runs)).toHaveLength(1);
  });

  it.skipIf(redisServerPath === undefined)(
    "the installed package's `troupe worker` runs a RedisSupervisor's agents (in its worker thread)",
    async () => {
      const redis = await TestRedis.start();
      const worker = await startWorker(
        redis.url,
        ['--queue', 'package-test'],
        cleanEnv() as Record<string, string>,
        {
          bin: path.join(consumer, 'node_modules/troupe/bin/troupe.mjs'),
          cwd: consumer,
        },
      );
      try {
        write(
          'scaleout.mjs',
          `import { RedisSupervisor } from 'troupe';

const supervisor = new RedisSupervisor({ redisUrl: process.argv[2], queueName: 'package-test' });
const results = await supervisor
  .fanOut([1, 2, 3].map((i) => ({ agent: 'worker', task: \`Review file \${i}.\` })))
  .all();
await supervisor.close();
console.log(JSON.stringify(results.map((r) => r.outcome.status)));
`,
        );
        const app = await run(process.execPath, ['scaleout.mjs', redis.url], consumer);
        expect(app.code, `${app.stderr}\n${worker.output()}`).toBe(0);
        expect(JSON.parse(app.stdout)).toEqual(['completed', 'completed', 'completed']);
      } finally {
        await killWorkers([worker]);
        await redis.destroy();
      }
    },
  );

  it('every compiled module loads with only the runtime dependencies installed', async () => {
    // A module that imports a dev dependency (or a package missing from `dependencies`) fails here,
    // not at a user's first use of that feature. bin.js is left out: importing it runs the CLI.
    write(
      'load-all.mjs',
      `import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve('node_modules/troupe/dist/src');
const files = readdirSync(root, { recursive: true })
  .map(String)
  .filter((file) => file.endsWith('.js') && file !== path.join('cli', 'bin.js'));
const failed = [];
for (const file of files) {
  try {
    await import(pathToFileURL(path.join(root, file)).href);
  } catch (error) {
    failed.push(\`\${file}: \${error.message}\`);
  }
}
console.log(JSON.stringify({ loaded: files.length - failed.length, failed }));
`,
    );
    const loaded = await run(process.execPath, ['load-all.mjs'], consumer);
    expect(loaded.code, loaded.stderr).toBe(0);
    const report = JSON.parse(loaded.stdout) as { loaded: number; failed: string[] };
    expect(report.failed).toEqual([]);
    expect(report.loaded).toBeGreaterThan(100);
  });

  it('npx troupe --help lists every command, and `troupe mcp list` reaches an MCP server', async () => {
    const help = await run('npx', ['--no', '--', 'troupe', '--help'], consumer);
    expect(help.code, help.stderr).toBe(0);
    for (const command of [
      'agents',
      'mcp',
      'run',
      'resume',
      'verify',
      'fanout',
      'report',
      'score',
      'compare',
    ]) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
    // The MCP client ships with troupe; the server is the test's own (server-everything over stdio).
    const server = path.join(repoRoot, 'test/fixtures/mcp/everything.mjs');
    write(
      '.mcp.json',
      `${JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [server, 'stdio'] } } })}\n`,
    );
    try {
      const listed = await run('npx', ['--no', '--', 'troupe', 'mcp', 'list', '--json'], consumer);
      expect(listed.code, listed.stderr).toBe(0);
      const [entry] = JSON.parse(listed.stdout) as { name: string; status: string; tools: string[] }[];
      expect(entry).toMatchObject({ name: 'everything', status: 'ready' });
      expect(entry?.tools).toContain('echo');
    } finally {
      rmSync(path.join(consumer, '.mcp.json'), { force: true });
    }
  });

  it('npx troupe --version prints the version', async () => {
    const shown = await run('npx', ['--no', '--', 'troupe', '--version'], consumer);
    expect(shown).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});
