import type { Rerender } from '../journal/verify.ts';
import { Projection } from '../projection/projection.ts';
import type { ToolSpec } from '../tools/types.ts';
import { ProjectionReplay } from './projection-events.ts';

/** A stateful re-render for one pass of `verifyJournal` over one journal. */
export function journalRerender(): Rerender {
  let projection: Projection | undefined;
  let replay: ProjectionReplay | undefined;
  let system = '';
  let specs = new Map<string, ToolSpec>();
  let next = 0;
  return (events, index) => {
    for (; next < index; next += 1) {
      const event = events[next];
      if (!event) continue;
      if (event.type === 'Started') {
        projection = new Projection({ context: event.context, task: event.task });
        replay = new ProjectionReplay(projection);
        system = event.systemPrompt;
        specs = new Map(event.toolSpecs.map((spec) => [spec.name, spec]));
      }
      replay?.apply(event);
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
    return { system, input: projection.render(), tools };
  };
}
