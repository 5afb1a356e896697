/**
 * The model-settings flags `troupe run` and `troupe fanout` share (`--temperature`,
 * `--reasoning-effort`...): each value is checked by the same reader as a definition's
 * `modelSettings`, so a flag and a file accept exactly the same values.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { describeValue } from '../../errors.ts';
import {
  type ModelSettings,
  mergeModelSettings,
  REASONING_EFFORTS,
  readModelSettings,
} from '../../providers/model-settings.ts';

/** The flags as commander parses them (camelCase), each already checked. */
export interface ModelSettingsFlags {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly maxOutputTokens?: number;
  readonly reasoningEffort?: ModelSettings['reasoningEffort'];
  readonly stop?: string[];
  readonly seed?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
}

/**
 * A parser for one numeric setting: a number the settings reader accepts. An integer setting
 * (`--seed`, `--top-k`, `--max-output-tokens`) is written in digits (a `-` allowed for the seed),
 * as every integer flag is (see `integer-flag.ts`): `1e3` is refused, not taken for 1000.
 */
function numberSetting(key: keyof ModelSettings, integer = false): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (integer && !/^\s*-?\d+\s*$/.test(value)) {
      throw new InvalidArgumentError(
        `Expected an integer (decimal digits only), got ${describeValue(value)}.`,
      );
    }
    if (value.trim() === '' || Number.isNaN(parsed)) {
      throw new InvalidArgumentError(`Expected a number, got ${describeValue(value)}.`);
    }
    const problem = readModelSettings({ [key]: parsed }).problems[0];
    if (problem) throw new InvalidArgumentError(`${problem.message}.`);
    return parsed;
  };
}

function effort(value: string): ModelSettings['reasoningEffort'] {
  const problem = readModelSettings({ reasoningEffort: value }).problems[0];
  if (problem) throw new InvalidArgumentError(`${problem.message}.`);
  return value as ModelSettings['reasoningEffort'];
}

/**
 * Adds the model-settings flags to `command`. `scope` ends each description: what the flag sets
 * and what it wins over.
 */
export function addModelSettingsOptions(command: Command, scope: string): Command {
  return command
    .option('--temperature <t>', `sampling temperature, 0-2 (${scope})`, numberSetting('temperature'))
    .option('--top-p <p>', `nucleus sampling, above 0 and at most 1 (${scope})`, numberSetting('topP'))
    .option(
      '--top-k <k>',
      `sample from the k likeliest tokens; Anthropic only (${scope})`,
      numberSetting('topK', true),
    )
    .option(
      '--max-output-tokens <n>',
      `output tokens per model request (${scope})`,
      numberSetting('maxOutputTokens', true),
    )
    .option(
      '--reasoning-effort <effort>',
      `${REASONING_EFFORTS.join(', ')}: OpenAI reasoning_effort, Anthropic thinking budget (${scope})`,
      effort,
    )
    .option('--stop <sequence...>', `stop sequences (${scope})`)
    .option(
      '--seed <n>',
      `sampling seed; OpenAI-compatible servers only (${scope})`,
      numberSetting('seed', true),
    )
    .option(
      '--presence-penalty <p>',
      `-2 to 2; OpenAI-compatible only (${scope})`,
      numberSetting('presencePenalty'),
    )
    .option(
      '--frequency-penalty <p>',
      `-2 to 2; OpenAI-compatible only (${scope})`,
      numberSetting('frequencyPenalty'),
    );
}

/**
 * The model settings the flags set (none when no flag is given). Throws commander's
 * InvalidArgumentError for stop sequences the reader refuses (the numbers were checked as parsed).
 */
export function modelSettingsFromFlags(flags: ModelSettingsFlags): ModelSettings {
  const { settings, problems } = readModelSettings({
    temperature: flags.temperature,
    topP: flags.topP,
    topK: flags.topK,
    maxOutputTokens: flags.maxOutputTokens,
    reasoningEffort: flags.reasoningEffort,
    stop: flags.stop,
    seed: flags.seed,
    presencePenalty: flags.presencePenalty,
    frequencyPenalty: flags.frequencyPenalty,
  });
  const problem = problems[0];
  if (problem) throw new InvalidArgumentError(`--stop: ${problem.message}.`);
  return mergeModelSettings(settings);
}
