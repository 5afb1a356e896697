// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
/**
 * Blocks and model settings on the command line: `troupe run`/`fanout` flags, `troupe blocks`,
 * `troupe agents validate`, and `troupe resume` of a journal or a run directory whose definition
 * changed since the run started (the recorded one runs; the CLI says so; the journal verifies).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { PROVIDER_ENV, Project, runCli } from '../fixtures/cli/cli-helpers.ts';

const TRIAGE = `---
name: triage
description: Triages tickets.
tools: [read_file, complete_task]
instructions: { prompt: acme.intake, version: ^1 }
settings: [{ id: acme.weights, version: ^1 }]
modelSettings: { temperature: 0.2, maxOutputTokens: 300 }
---
`;

let project: Project;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  project = new Project({ 'a.md': '# A\nalpha\n' });
  project.write('.troupe/agents/triage.md', TRIAGE);
  project.write(
    '.troupe/blocks/acme.intake/1.0.0.md',
    '---\nparameters:\n  queue: { default: billing }\n---\nOld triage of ${{ queue }}.\n',
  );
  project.write(
    '.troupe/blocks/acme.intake/1.1.0.md',
    '---\nparameters:\n  queue: { default: billing }\n---\nTriage ${{ queue }} tickets; urgency ${{ settings.acme.weights.urgency }}.\n',
  );
  project.write('.troupe/blocks/acme.intake/2.0.0.md', 'Version two.\n');
  project.write('.troupe/blocks/acme.weights/1.2.0.yaml', 'urgency: 0.5\n');
  saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
  for (const name of PROVIDER_ENV) delete process.env[name];
  process.env.HOME = project.home;
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  project.remove();
});

function startedOf(file: string): EventOf<'Started'> {
  const first = readJournal(file).events[0];
  if (first?.type !== 'Started') throw new Error('expected a Started event');
  return first;
}

describe('troupe blocks', () => {
  it('lists every block with its versions, highest first', async () => {
    const result = await runCli('blocks', 'list', '--cwd', project.root);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').slice(0, 3)).toEqual([
      'ID            KIND      SOURCE   VERSIONS             DIR',
      'acme.intake   prompt    project  2.0.0, 1.1.0, 1.0.0  .troupe/blocks/acme.intake',
      'acme.weights  settings  project  1.2.0                .troupe/blocks/acme.weights',
    ]);
  });

  it('shows the highest version in a range, with its hash', async () => {
    const result = await runCli('blocks', 'show', 'acme.intake', '~1.0', '--cwd', project.root);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^# acme\.intake 1\.0\.0 \(prompt\) \.troupe\/blocks\/acme\.intake\/1\.0\.0\.md\n# versions: 2\.0\.0, 1\.1\.0, 1\.0\.0\n# sha256: [0-9a-f]{64}\n---\nparameters:/,
    );
    const json = await runCli('blocks', 'show', 'acme.weights', '--json', '--cwd', project.root);
    expect(JSON.parse(json.stdout)).toMatchObject({
      kind: 'settings',
      version: '1.2.0',
      values: { urgency: 0.5 },
    });
    const missing = await runCli('blocks', 'show', 'acme.intake', '^3', '--cwd', project.root);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'troupe: block_unresolvable: Expected prompt block `acme.intake` satisfying `^3`, found only 2.0.0, 1.1.0, 1.0.0',
    );
  });
});

describe('warnings of block files', () => {
  // A typo in a model-settings block (`top_k` for `topK`) is ignored: it must be said, not silent.
  beforeEach(() => {
    project.write('.troupe/blocks/acme.careful/1.0.0.yaml', 'temperature: 0.2\ntop_k: 3\n');
    project.write(
      '.troupe/agents/careful.md',
      '---\nname: careful\ndescription: Careful.\nmodelSettings: { id: acme.careful, version: ^1 }\n---\nBe careful.\n',
    );
  });

  it('troupe blocks show prints an unknown key of a model-settings block, located, with a hint', async () => {
    const result = await runCli(
      'blocks',
      'show',
      'acme.careful',
      '--kind',
      'model-settings',
      '--cwd',
      project.root,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      '.troupe/blocks/acme.careful/1.0.0.yaml:2:1: warning unknown_key: Unknown model setting `top_k` (did you mean `topK`?)',
    );
  });

  it('troupe agents validate reports the unknown key of a block the definition reads', async () => {
    const result = await runCli(
      'agents',
      'validate',
      project.path('.troupe/agents/careful.md'),
      '--cwd',
      project.root,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /acme\.careful\/1\.0\.0\.yaml:2:1: warning unknown_key: Unknown model setting `top_k`/,
    );
    expect(result.stdout).toContain('(0 error(s), 1 warning(s))');
  });
});

describe('troupe agents validate resolves block references', () => {
  it('reports a parameter the block does not declare and a range nothing satisfies, located', async () => {
    const file = project.write(
      '.troupe/agents/triage.md',
      TRIAGE.replace(
        'version: ^1 }\nsettings',
        'version: ~1.0, parameters: { colour: red } }\nsettings',
      ).replace('{ id: acme.weights, version: ^1 }', '{ id: acme.weights, version: ^4 }'),
    );
    const result = await runCli('agents', 'validate', file, '--cwd', project.root);
    expect(result.code).toBe(1);
    expect(result.stdout.split('\n').slice(0, 2)).toEqual([
      `${file}:5:67: error unknown_parameter: Expected parameters that prompt block \`acme.intake\` 1.0.0 declares (queue), found \`colour\` (/instructions/parameters/colour)`,
      `${file}:6:41: error block_unresolvable: Expected a version of settings block \`acme.weights\` that satisfies \`^4\`, found only 1.2.0 (/settings/0/version)`,
    ]);
    // The prompt is rendered too: a settings key the block reads and the settings lack is named
    // where the template reads it (a run fails on it before its first request).
    const block = project.write(
      '.troupe/blocks/acme.intake/1.2.0.md',
      '---\nparameters:\n  queue: { default: billing }\n---\nTriage ${{ queue }}: ${{ settings.acme.weights.missing }}.\n',
    );
    const rendered = await runCli(
      'agents',
      'validate',
      project.write('.troupe/agents/triage.md', TRIAGE),
      '--cwd',
      project.root,
    );
    expect(rendered.code).toBe(1);
    expect(rendered.stdout.split('\n')[0]).toBe(
      `${block}:5:26: error template_error: unknown variable \`settings.acme.weights.missing\` (known: settings.acme.weights.urgency)`,
    );
    // Without --cwd the blocks are looked up from the current directory, which has none of them.
    const elsewhere = await runCli('agents', 'validate', file);
    expect(elsewhere.stdout).toContain(
      'error block_unresolvable: Expected prompt block `acme.intake` in the block store, found none',
    );
  });
});

describe('troupe run with model-settings flags', () => {
  it('sends and journals the flags over the definition, and the pinned blocks', async () => {
    const journal = project.path('run.jsonl');
    const result = await runCli(
      'run',
      'triage',
      '--task',
      'Triage a.md',
      '--cwd',
      project.root,
      '--journal',
      journal,
      '--temperature',
      '0.7',
      '--reasoning-effort',
      'low',
      '--stop',
      'END',
      'STOP',
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      'model settings: temperature=0.7, maxOutputTokens=300, reasoningEffort="low", stop=["END","STOP"]',
    );
    expect(result.stderr).toContain('blocks: acme.intake@1.1.0 (^1), acme.weights@1.2.0 (^1)');
    const started = startedOf(journal);
    expect(started.modelSettings).toEqual({
      temperature: 0.7,
      maxOutputTokens: 300,
      reasoningEffort: 'low',
      stop: ['END', 'STOP'],
    });
    expect(started.systemPrompt).toContain('Triage billing tickets; urgency 0.5.');
  });

  it('refuses a flag value the settings reader refuses, before anything runs', async () => {
    const result = await runCli('run', 'triage', '--task', 'x', '--cwd', project.root, '--top-p', '0');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "option '--top-p <p>' argument '0' is invalid. Expected `topP` to be a number greater than 0 and at most 1",
    );
    expect(readdirSync(project.root)).not.toContain('run.jsonl');
  });
});

describe('troupe resume of a changed definition', () => {
  it('runs the recorded definition, says the file changed, and the journal verifies', async () => {
    const journal = project.path('run.jsonl');
    expect(
      (await runCli('run', 'triage', '--task', 'Triage a.md', '--cwd', project.root, '--journal', journal))
        .code,
    ).toBe(0);
    const full = readJournal(journal).events;
    // A crash right after the first model request was journalled.
    const cut = full.findIndex((event) => event.type === 'InferenceSubmitted') + 1;
    writeFileSync(journal, `${readFileSync(journal, 'utf8').split('\n').slice(0, cut).join('\n')}\n`);
    const edited = TRIAGE.replace('temperature: 0.2', 'temperature: 0.9').replace(
      'tools: [read_file, complete_task]',
      'tools: [complete_task]',
    );
    project.write('.troupe/agents/triage.md', edited);
    project.write('.troupe/blocks/acme.intake/1.5.0.md', 'Published later.\n');

    const resumed = await runCli('resume', journal, '--cwd', project.root);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain(
      '/.troupe/agents/triage.md) changed since the run started; the agent continues with the definition recorded in its journal, not the file',
    );
    const events = readJournal(journal).events;
    const submitted = events.filter(
      (event): event is EventOf<'InferenceSubmitted'> => event.type === 'InferenceSubmitted',
    );
    const original = full.filter(
      (event): event is EventOf<'InferenceSubmitted'> => event.type === 'InferenceSubmitted',
    );
    // Nothing reached the projection before the crash: the resumed agent's first request sends
    // exactly what the original's first did (the recorded system prompt, tools and settings).
    expect(original).toHaveLength(2);
    expect(submitted[1]?.inputHash).toBe(original[0]?.inputHash);
    expect(submitted.every((event) => event.tools.includes('read_file'))).toBe(true);
    expect(
      events.find((event): event is EventOf<'Resumed'> => event.type === 'Resumed')?.definitionChanged,
    ).toBeDefined();
    expect(verifyJournalFile(journal, { rerender: journalRerender() })).toMatchObject({ ok: true });
    expect((await runCli('verify', journal)).code).toBe(0);
  });
});

describe('troupe fanout and resume RUN_DIR', () => {
  it('refuses settings every agent would fail on before anything runs, once per distinct problem', async () => {
    project.write('.troupe/blocks/acme.hot/1.0.0.yaml', 'temperature: 7\n');
    project.write(
      '.troupe/agents/hot.md',
      '---\nname: hot\ndescription: Runs hot.\nmodelSettings: { id: acme.hot, version: ^1 }\n---\nAnswer.\n',
    );
    const plan = project.write(
      'plan.yaml',
      [
        'cwd: .',
        'threads: 1',
        'runs:',
        '  - { agent: hot, task: one }',
        '  - { agent: hot, task: two }',
        '  - { agent: triage, task: three }',
      ].join('\n'),
    );
    const out = project.path('refused');
    const result = await runCli('fanout', plan, '--out', out);
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toMatch(
      /plan\.yaml:4:5: runs\[0\]: agent `hot` \(model simulated; 1 more entry like it\) cannot start: invalid_block: .*acme\.hot\/1\.0\.0\.yaml:1:14: Expected `temperature` to be a number from 0 to 2, got `7` \(number\)$/,
    );
    expect(lines[1]).toMatch(/^ {2}.*hot\.md:4:22: model-settings block `acme\.hot` cannot be used/);
    expect(lines.at(-1)).toBe('troupe: 1 problem(s) with the model settings; nothing was run');
    expect(existsSync(out)).toBe(false);

    // A setting the provider cannot send: refused by the provider's own check, no request made
    // (nothing listens at the base URL).
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/v1';
    const openai = await runCli('fanout', plan, '--out', out, '--provider', 'openai', '--top-k', '3');
    expect(openai.code).toBe(1);
    expect(openai.stderr).toMatch(
      /runs\[2\]: agent `triage` \(model \S+\) cannot start: unsupported_setting: .*`top_k`/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('layers run > flags > plan > definition, and a resumed run says a definition changed', async () => {
    project.write(
      'plan.yaml',
      [
        'agent: triage',
        'cwd: .',
        'threads: 1',
        'modelSettings: { temperature: 0.1, topP: 0.5, seed: 3 }',
        'runs:',
        '  - { task: Triage a.md, id: one }',
        '  - { task: Triage a.md again, id: two, modelSettings: { temperature: 0.8 } }',
      ].join('\n'),
    );
    const out = project.path('run-dir');
    {
      const result = await runCli('fanout', project.path('plan.yaml'), '--out', out, '--top-p', '0.6');
      expect(result.code, result.stderr).toBe(0);
      const journals = path.join(out, 'journals');
      const files = readdirSync(journals).sort();
      const settings = files.map((file) => startedOf(path.join(journals, file)).modelSettings);
      expect(settings).toEqual([
        { temperature: 0.1, topP: 0.6, maxOutputTokens: 300, seed: 3 },
        { temperature: 0.8, topP: 0.6, maxOutputTokens: 300, seed: 3 },
      ]);

      // Interrupt the second run after its first request, then edit the definition.
      const second = path.join(journals, files[1] ?? '');
      const events: readonly AuditEvent[] = readJournal(second).events;
      const cut = events.findIndex((event) => event.type === 'InferenceSubmitted') + 1;
      writeFileSync(second, `${readFileSync(second, 'utf8').split('\n').slice(0, cut).join('\n')}\n`);
      const results = path.join(out, 'results.jsonl');
      const lines = readFileSync(results, 'utf8').trim().split('\n');
      writeFileSync(
        results,
        `${lines.filter((line) => !line.includes(files[1]?.replace('.jsonl', '') ?? '?')).join('\n')}\n`,
      );
      project.write('.troupe/agents/triage.md', TRIAGE.replace('temperature: 0.2', 'temperature: 0.9'));

      const resumed = await runCli('resume', out);
      expect(resumed.code).toBe(0);
      expect(resumed.stderr).toContain('note: the definition of `triage` (');
      expect(resumed.stderr).toContain(
        'changed since the run started; 1 resumed agent(s) continue with the definition recorded in their journals, not the file',
      );
      // The resumed agent's first request sends what the original's first did (settings included).
      const after = readJournal(second).events;
      expect(after.some((event) => event.type === 'Resumed')).toBe(true);
      const hashes = after
        .filter((event): event is EventOf<'InferenceSubmitted'> => event.type === 'InferenceSubmitted')
        .map((event) => event.inputHash);
      expect(hashes.length).toBeGreaterThan(1);
      expect(hashes[1]).toBe(hashes[0]);
      expect(startedOf(second).modelSettings).toMatchObject({ temperature: 0.8 });
      expect(verifyJournalFile(second, { rerender: journalRerender() })).toMatchObject({ ok: true });
    }
  });
});
