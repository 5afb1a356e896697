/**
 * The model settings of a fan-out, checked before anything runs: each plan entry's agent must have
 * blocks that resolve and read (a model-settings block with `temperature: 7` is refused), and a
 * built-in provider must be able to send every setting for the entry's model (`topK` on OpenAI).
 * The agents would each fail on it before their first request; checked here, a 5,000-entry plan
 * says so once, at the entry, and leaves no run directory behind.
 *
 * One check per distinct agent, model and settings, as `startRun` makes it (`resolveStartSettings`):
 * the same code decides, so the check cannot pass what a spawn refuses or the reverse. A provider
 * module's own setting checks run in its thread, not here.
 */
import { fileBlockStore } from '../blocks/file-store.ts';
import { discoverAgents } from '../definition/discovery.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { isTroupeError } from '../errors.ts';
import { canonicalJson } from '../journal/canonical-json.ts';
import { resolveStartSettings, type SettingsProvider } from '../loop/pinning.ts';
import { createProvider } from '../providers/factory.ts';
import { mergeModelSettings } from '../providers/model-settings.ts';
import { resolveModel } from '../providers/models.ts';
import type { PlanProblem } from './plan-problems.ts';
import type { PlannedRun, RunPlan } from './run-plan.ts';

/** Distinct problems reported before the rest are summed up in a count. */
const SHOWN_PROBLEMS = 20;

/**
 * The problems of `plan`'s entries whose agent could not start with its settings, one per distinct
 * agent, model and settings, located at the first entry that has it; empty when every entry can.
 */
export async function settingsProblems(
  plan: RunPlan,
  definitions: readonly AgentDefinition[],
): Promise<PlanProblem[]> {
  const { config } = plan.provider;
  const provider: SettingsProvider =
    config.kind === 'module'
      ? { name: plan.provider.name }
      : createProvider(config.kind, config.options ?? {});
  const blocks = fileBlockStore({ cwd: plan.cwd });
  // The plan's own definitions win over those found from its working directory, as in a spawn.
  const found = await discoverAgents({ cwd: plan.cwd });
  const byName = new Map(found.agents.map(({ definition }) => [definition.name, definition]));
  for (const definition of definitions) byName.set(definition.name, definition);
  /** Each distinct agent, model and settings: its first entry, and what refused it (if anything). */
  const checked = new Map<string, { run: PlannedRun; model: string; refusal?: string; entries: number }>();
  for (const run of plan.runs) {
    const definition = byName.get(run.agent);
    if (definition === undefined) continue; // The plan check names unknown agents.
    const model = resolveModel({
      kind: config.kind,
      provider: plan.provider.name,
      ...(plan.model === undefined ? {} : { requested: plan.model }),
      definitionModel: definition.model ?? 'default',
      ...(plan.defaultModel === undefined ? {} : { defaultModel: plan.defaultModel }),
      ...(plan.modelMap === undefined ? {} : { modelMap: plan.modelMap }),
    }).id;
    const overrides = mergeModelSettings(plan.modelSettings, run.modelSettings);
    const key = `${run.agent}\n${model}\n${canonicalJson(overrides)}`;
    const known = checked.get(key);
    if (known !== undefined) {
      known.entries += 1;
      continue;
    }
    const entry: { run: PlannedRun; model: string; refusal?: string; entries: number } = {
      run,
      model,
      entries: 1,
    };
    checked.set(key, entry);
    try {
      await resolveStartSettings({ definition, cwd: plan.cwd, provider, model, blocks, overrides });
    } catch (error) {
      if (!isTroupeError(error) || error.name !== 'UserError') throw error;
      // A refusal naming several files has one per line: indented under the entry's line.
      entry.refusal = `${error.code}: ${error.message.split('\n').join('\n  ')}`;
    }
  }
  const problems: PlanProblem[] = [];
  for (const { run, model, refusal, entries } of checked.values()) {
    if (refusal === undefined) continue;
    const also = entries === 1 ? '' : `; ${entries - 1} more entr${entries === 2 ? 'y' : 'ies'} like it`;
    problems.push({
      file: run.source.file,
      line: run.source.line,
      column: run.source.column,
      field: `runs[${run.index}]`,
      message: `agent \`${run.agent}\` (model ${model}${also}) cannot start: ${refusal}`,
    });
  }
  if (problems.length <= SHOWN_PROBLEMS) return problems;
  const shown = problems.slice(0, SHOWN_PROBLEMS);
  const last = shown.at(-1) as PlanProblem;
  return [...shown, { ...last, message: `and ${problems.length - SHOWN_PROBLEMS} more distinct problem(s)` }];
}
