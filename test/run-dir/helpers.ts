/** Test helpers for fan-out runs: temp dirs, the CLI as a child process, bounded polling. */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { CliIO } from '../../src/cli/shared/io.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import { spawnChild } from '../fixtures/children.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const troupeBin = path.join(repoRoot, 'bin', 'troupe.mjs');

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'troupe-fanout-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment without provider keys, so the simulated model is chosen. */
export function simulatedEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const key of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL']) {
    if (!(key in extra)) delete env[key];
  }
  return env;
}

/** A CLI child process and what it printed. */
export interface CliRun {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code (or the signal name). */
  readonly exited: Promise<number | string>;
}

/** Starts `node bin/troupe.mjs ...args` in `cwd`. */
export function startCli(args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): CliRun {
  const child = spawnChild(process.execPath, [troupeBin, ...args], {
    cwd: options.cwd,
    env: options.env ?? simulatedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | string>((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs a node script (TypeScript through tsx, then `imports` preloaded with --import) to its end. */
export async function runScript(
  script: string,
  options: { cwd: string; env?: NodeJS.ProcessEnv; imports?: readonly string[] },
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const preloads = (options.imports ?? []).flatMap((module) => ['--import', pathToFileURL(module).href]);
  const child = spawnChild(process.execPath, ['--import', 'tsx', ...preloads, script], {
    cwd: options.cwd,
    env: options.env ?? simulatedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const code = await new Promise<number | string>((resolve) =>
    child.on('close', (exit, signal) => resolve(exit ?? signal ?? -1)),
  );
  return { code, stdout, stderr };
}

/**
 * Polls `check` until it returns true. Bounded: fails the test after `attempts` polls instead of
 * hanging; the interval only spaces the polls, nothing depends on its length.
 */
export async function waitUntil(check: () => boolean, what: string, attempts = 1200): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Timed out waiting until ${what}`);
}

/** The complete lines of a results.jsonl file (a torn last line is left out). */
export function readResults(file: string): ResultLine[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .split('\n')
    .slice(0, -1)
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as ResultLine);
}

/**
 * Journal event types of one agent, in order, from its complete lines: a journal read while its
 * agent runs can end in a line still being written (a write of more than 8 KiB lands in parts).
 */
export function journalTypes(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .slice(0, -1)
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { type: string }).type);
}

/** A CliIO that records what the command printed. */
export function captureIO(): CliIO & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    out: () => out,
    err: () => err,
  };
}
