/** Shared helpers for definition tests: the corpus location and throwaway directory trees. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const corpusDir = join(repoRoot, 'test/fixtures/corpus/agent-definitions');

/** A minimal valid definition file. */
export function definitionText(name: string, extra = '', body = `You are ${name}.`): string {
  return `---\nname: ${name}\ndescription: The ${name} agent.\n${extra}---\n${body}\n`;
}

/** A temporary directory tree; `write` creates parent dirs. Call `remove` in afterEach. */
export class TempTree {
  readonly root = mkdtempSync(join(tmpdir(), 'troupe-def-'));

  path(...parts: string[]): string {
    return join(this.root, ...parts);
  }

  write(relative: string, text: string): string {
    const file = this.path(relative);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  }

  mkdir(relative: string): string {
    const dir = this.path(relative);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
