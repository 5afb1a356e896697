/**
 * One object per distinct agent definition, for a process (or thread) that runs many agents.
 *
 * Every spawn brings its own copy of its definition: a structured clone on the thread path, a
 * JSON parse of the job data on the redis path. Per-definition work is cached by object (its
 * content hash, its JSON text, its compiled permission rules, its prompt's cache key: WeakMaps in
 * src/loop and src/tools), so without this it is done again for every agent.
 */
import type { AgentDefinition } from '../../definition/types.ts';

/** Distinct definitions kept; more start over. */
const DEFINITIONS_KEPT = 64;

/** Maps each definition received to the one kept object equal to it. */
export class SharedDefinitions {
  readonly #byJson = new Map<string, AgentDefinition>();
  /**
   * The kept object for each definition object received: the specs of one thread message share
   * one definition object (a clone keeps shared references), so its JSON text, ~10 µs per agent,
   * is built once per message rather than once per agent.
   */
  readonly #byObject = new WeakMap<object, AgentDefinition>();

  /** The kept object equal to `definition` (`definition` itself when it is the first such). */
  of(definition: AgentDefinition): AgentDefinition {
    const seen = this.#byObject.get(definition);
    if (seen) return seen;
    const key = JSON.stringify(definition);
    let known = this.#byJson.get(key);
    if (!known) {
      if (this.#byJson.size >= DEFINITIONS_KEPT) this.#byJson.clear();
      this.#byJson.set(key, definition);
      known = definition;
    }
    this.#byObject.set(definition, known);
    return known;
  }
}
