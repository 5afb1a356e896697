import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { hasErrorCode } from '../../src/errors.ts';
import { assembleSystemPrompt } from '../../src/prompt/assemble.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { declareCompleteTask, declareWaitForInstruction } from '../../src/tools/builtin/orchestration.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import { useTempDirs, writeTree } from './temp-dir.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpus = path.resolve(repoRoot, 'test/fixtures/corpus/agent-definitions');
const tempDir = useTempDirs();
const environment = { osName: 'TestOS 1.0', shellPath: '/bin/bash' };

async function markdownFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await markdownFiles(full)));
    else if (entry.name.endsWith('.md') && entry.name !== 'SOURCES.md') found.push(full);
  }
  return found.sort();
}

async function corpusDefinitions(): Promise<AgentDefinition[]> {
  const definitions: AgentDefinition[] = [];
  for (const file of await markdownFiles(corpus)) {
    const result = parseDefinition(await readFile(file, 'utf8'), file, { source: 'compat', mode: 'lenient' });
    if (result.definition) definitions.push(result.definition);
  }
  return definitions;
}

type Outcome = 'ok' | 'template_error';

async function assembleEach(definitions: readonly AgentDefinition[], mode: 'extend' | 'full') {
  const cwd = await tempDir();
  // The corpus names skills that exist only in its authors' setups; give each one a stub so that
  // pre-loading runs instead of stopping at `unknown_skill`.
  const skillNames = new Set(definitions.flatMap((def) => def.skills));
  await writeTree(
    cwd,
    Object.fromEntries(
      [...skillNames].map((name) => [
        `.troupe/skills/${name}/SKILL.md`,
        `---\nname: ${name}\ndescription: Stub for ${name}\n---\nStub body of ${name}.\n`,
      ]),
    ),
  );
  const registry = createToolRegistry([declareCompleteTask(), declareWaitForInstruction()]);
  const outcomes = new Map<string, Outcome>();
  for (const def of definitions) {
    const toolbox = buildToolbox(def, registry, { cwd, agentId: def.name });
    try {
      const prompt = await assembleSystemPrompt(
        { ...def, promptMode: mode },
        { cwd, tools: toolbox.promptTools, environment, skills: { homeDir: cwd } },
      );
      expect(prompt.length).toBeGreaterThan(0);
      for (const name of def.skills) expect(prompt).toContain(`Stub body of ${name}.`);
      outcomes.set(def.path, 'ok');
    } catch (error) {
      if (!hasErrorCode(error, 'template_error')) {
        throw new Error(`${def.path} (${mode}) threw something other than template_error`, { cause: error });
      }
      const fields = (error as { fields: { file?: unknown; line?: unknown } }).fields;
      expect(fields.file).toBe(def.path);
      expect(fields.line).toBeGreaterThanOrEqual(def.bodyLine);
      outcomes.set(def.path, 'template_error');
    }
  }
  return outcomes;
}

const count = (outcomes: Map<string, Outcome>, outcome: Outcome) =>
  [...outcomes.values()].filter((value) => value === outcome).length;

describe('prompt assembly over the agent-definitions corpus', () => {
  it('assembles every leniently loaded corpus definition in extend mode (their default)', async () => {
    const definitions = await corpusDefinitions();
    expect(definitions.length).toBeGreaterThan(250);
    expect(definitions.every((def) => def.promptMode === 'extend')).toBe(true);
    const outcomes = await assembleEach(definitions, 'extend');
    console.log(`extend: ${count(outcomes, 'ok')} of ${definitions.length} assembled`);
    // An extend body is never a template, so nothing in the wild prose can fail.
    expect(count(outcomes, 'ok')).toBe(definitions.length);
  });

  it('renders every corpus body as a full-mode template or reports a template_error, never throws otherwise', async () => {
    const definitions = await corpusDefinitions();
    const outcomes = await assembleEach(definitions, 'full');
    const ok = count(outcomes, 'ok');
    const failed = count(outcomes, 'template_error');
    console.log(`full: ${ok} rendered, ${failed} template_error, of ${definitions.length}`);
    expect(ok + failed).toBe(definitions.length);
    // Wild prose uses {{ }}, {% %} and ${ } freely; only bodies that contain troupe's own
    // delimiters can fail.
    const withDelimiters = new Set(
      definitions.filter((def) => /\$\{\{|\$\{%/.test(def.body)).map((def) => def.path),
    );
    for (const [file, outcome] of outcomes) {
      if (outcome === 'template_error') expect(withDelimiters.has(file)).toBe(true);
    }
  });
});
