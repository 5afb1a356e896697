/**
 * CLI start-up, measured on the compiled package the way a user runs it: `troupe --help`,
 * `troupe --version`, the first event of `troupe demo --json` and its first started agent (the
 * worker threads are up by then), and how long the demo takes to exit after a Ctrl-C sent at its
 * first event, while its threads are still starting. Targets: --help and --version under 300 ms,
 * exit within 300 ms of a Ctrl-C. Nothing here is asserted; it prints a table (and JSON with
 * --json).
 *
 * The package is laid out as npm installs it (bin/, dist/, examples/ and package.json in a temp
 * folder, dependencies linked from this checkout), so `bin/troupe.mjs` takes its installed path:
 * no sources beside it, compiled dist/. For comparison it also times `--help` from the sources
 * through tsx (this checkout's bin/troupe.mjs).
 *
 * Run: npm run build && node --import tsx bench/cli-start.ts [--runs 20] [--json]
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { commit, loadAverage, machine } from './support/machine.ts';
import { median, quantile } from './support/stats.ts';

const REPO_ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

interface Sample {
  readonly ms: number;
  readonly code: number | string;
}

/** Runs `node args...` to its end; `untilLine` ends the clock at the first stdout line matching it. */
function time(
  args: readonly string[],
  cwd: string,
  options: {
    readonly untilLine?: RegExp;
    readonly interruptAt?: RegExp;
    readonly interruptDelayMs?: number;
  } = {},
): Promise<Sample & { readonly lineMs?: number; readonly afterInterruptMs?: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...args], {
      cwd,
      env: withoutProviderKeys(),
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let lineMs: number | undefined;
    let interruptedAt: number | undefined;
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (lineMs === undefined && options.untilLine?.test(line)) lineMs = performance.now() - started;
        if (interruptedAt === undefined && options.interruptAt?.test(line)) {
          interruptedAt = Number.POSITIVE_INFINITY;
          setTimeout(() => {
            interruptedAt = performance.now();
            child.kill('SIGINT');
          }, options.interruptDelayMs ?? 0);
        }
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const ended = performance.now();
      resolve({
        ms: ended - started,
        code: code ?? signal ?? -1,
        ...(lineMs === undefined ? {} : { lineMs }),
        ...(interruptedAt === undefined || !Number.isFinite(interruptedAt)
          ? {}
          : { afterInterruptMs: ended - interruptedAt }),
      });
    });
  });
}

function withoutProviderKeys(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY']) delete env[key];
  return env;
}

/** bin/, dist/, examples/ and package.json as `npm install` lays them out, dependencies linked. */
function installedLayout(): string {
  if (!existsSync(path.join(REPO_ROOT, 'dist/src/cli/bin.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-cli-start-'));
  for (const entry of ['bin', 'dist', 'examples', 'package.json']) {
    cpSync(path.join(REPO_ROOT, entry), path.join(root, entry), { recursive: true });
  }
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  return root;
}

interface Row {
  readonly what: string;
  readonly samples: readonly number[];
  readonly target?: string;
}

function summarize(row: Row): Record<string, number | string> {
  const round = (ms: number): number => Math.round(ms);
  return {
    what: row.what,
    runs: row.samples.length,
    medianMs: round(median(row.samples)),
    p90Ms: round(quantile(row.samples, 0.9)),
    minMs: round(Math.min(...row.samples)),
    target: row.target ?? '',
  };
}

async function repeat(
  runs: number,
  what: string,
  measure: () => Promise<number | undefined>,
  target?: string,
): Promise<Row> {
  await measure(); // warm the file system cache
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const ms = await measure();
    if (ms !== undefined) samples.push(ms);
  }
  return { what, samples, ...(target === undefined ? {} : { target }) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '20' }, json: { type: 'boolean', default: false } },
  });
  const runs = Number(values.runs);
  const host = machine();
  const root = installedLayout();
  const bin = path.join(root, 'bin/troupe.mjs');
  const out = mkdtempSync(path.join(tmpdir(), 'troupe-cli-start-runs-'));
  const checked = (sample: Sample): number => {
    if (sample.code !== 0 && sample.code !== 130) throw new Error(`exited with ${sample.code}`);
    return sample.ms;
  };
  try {
    const rows: Row[] = [];
    rows.push(
      await repeat(runs, 'node -e 0 (Node itself)', async () => checked(await time(['-e', '0'], root))),
    );
    rows.push(
      await repeat(runs, 'troupe --help', async () => checked(await time([bin, '--help'], root)), '< 300 ms'),
    );
    rows.push(
      await repeat(
        runs,
        'troupe --version',
        async () => checked(await time([bin, '--version'], root)),
        '< 300 ms',
      ),
    );
    const demoRuns = Math.max(3, Math.round(runs / 4));
    let dir = 0;
    const demo = (options: Parameters<typeof time>[2]) => {
      dir += 1;
      return time([bin, 'demo', '--json', '--out', path.join(out, String(dir))], root, options);
    };
    rows.push(
      await repeat(demoRuns, 'troupe demo --json: first event', async () => {
        return (await demo({ untilLine: /"type":"run"/ })).lineMs;
      }),
    );
    rows.push(
      await repeat(demoRuns, 'troupe demo --json: first agent started (threads up)', async () => {
        return (await demo({ untilLine: /"type":"started"/ })).lineMs;
      }),
    );
    // Exit code 130 shows troupe's handler ran (an earlier signal would kill Node outright).
    const interrupted = async (delayMs: number): Promise<number | undefined> => {
      const sample = await demo({ interruptAt: /"type":"run"/, interruptDelayMs: delayMs });
      if (sample.code !== 130) throw new Error(`the demo exited with ${sample.code} after a Ctrl-C`);
      return sample.afterInterruptMs;
    };
    for (const delayMs of [0, 250, 500]) {
      rows.push(
        await repeat(
          demoRuns,
          `troupe demo: exit after a Ctrl-C ${delayMs} ms after its first event (threads starting)`,
          () => interrupted(delayMs),
          '< 300 ms',
        ),
      );
    }
    rows.push(
      await repeat(
        Math.max(3, Math.round(runs / 4)),
        'troupe --help from the sources through tsx (a checkout)',
        async () => checked(await time([path.join(REPO_ROOT, 'bin/troupe.mjs'), '--help'], REPO_ROOT)),
      ),
    );
    const table = rows.map(summarize);
    const report = {
      command: `node --import tsx bench/cli-start.ts --runs ${runs}`,
      date: new Date().toISOString(),
      commit: commit(REPO_ROOT),
      node: process.version,
      machine: { ...host, loadAverage: { start: host.loadAverage.start, end: loadAverage() } },
      table,
    };
    if (values.json) {
      console.log(JSON.stringify(report, null, 2));
      return;
    }
    console.log('| what | runs | median | p90 | min | target |');
    console.log('| --- | ---: | ---: | ---: | ---: | --- |');
    for (const row of table) {
      console.log(
        `| ${row.what} | ${row.runs} | ${row.medianMs} ms | ${row.p90Ms} ms | ${row.minMs} ms | ${row.target} |`,
      );
    }
    console.log(
      `\n${host.cpu}, ${host.cores} cores, node ${process.version}, commit ${report.commit}; load average ${report.machine.loadAverage.start} -> ${report.machine.loadAverage.end}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  }
}

await main();
