import type { Rerender } from '../journal/verify.ts';
import { Projection } from '../projection/projection.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { ToolSpec } from '../tools/types.ts';
import { ProjectionReplay } from './projection-events.ts';

/**
 * A stateful re-render for one pass of `verifyJournal` over one journal. A round's first request
 * re-renders the projection; a later request of the same round adds the history entries replayed
 * since then as its continuation, exactly as the loop hashed it.
 */
export function journalRerender(): Rerender {
  let projection: Projection | undefined;
  let replay: ProjectionReplay | undefined;
  let system = '';
  let modelSettings: ModelSettings | undefined;
  let specs = new Map<string, ToolSpec>();
  let next = 0;
  let roundInput = '';
  let continuation: string[] = [];
  return (events, index) => {
    for (; next < index; next += 1) {
      const event = events[next];
      if (!event) continue;
      if (event.type === 'Started') {
        projection = new Projection({ context: event.context, task: event.task });
        replay = new ProjectionReplay(projection);
        system = event.systemPrompt;
        modelSettings = event.modelSettings;
        specs = new Map(event.toolSpecs.map((spec) => [spec.name, spec]));
      }
      const entry = replay?.apply(event);
      if (entry !== undefined) continuation.push(entry);
    }
    const submitted = events[index];
    if (!projection || submitted?.type !== 'InferenceSubmitted') {
      throw new Error(`Event ${index} is not an InferenceSubmitted after a Started event`);
    }
    const tools = submitted.tools.map((name) => {
      const spec = specs.get(name);
      if (!spec) throw new Error(`Round ${submitted.round} offered ${name}, which Started does not declare`);
      return spec;
    });
    if ((submitted.request ?? 1) <= 1) {
      roundInput = projection.render();
      continuation = [];
      return { system, input: roundInput, tools, ...(modelSettings ? { modelSettings } : {}) };
    }
    return {
      system,
      input: roundInput,
      tools,
      continuation: [...continuation],
      ...(modelSettings ? { modelSettings } : {}),
    };
  };
}
