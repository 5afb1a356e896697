/** Checks `complete_task` results against their definition's outputSchema, one compiled validator per definition. */
import type { AgentDefinition } from '../definition/types.ts';
import { compileSchema, describeProblems, type SchemaValidator } from '../tools/schema.ts';

export class ResultCheck {
  readonly #validators = new Map<string, SchemaValidator>();

  /** What is wrong with `value` as a result of `definition`, or undefined when nothing is. */
  problems(definition: AgentDefinition | undefined, value: unknown): string | undefined {
    const schema = definition?.outputSchema;
    if (!definition || !schema) return undefined;
    const key = definition.path + definition.name;
    let validate = this.#validators.get(key);
    if (!validate) {
      validate = compileSchema(schema, `the outputSchema of ${definition.name}`);
      this.#validators.set(key, validate);
    }
    const problems = validate(value);
    return problems.length === 0 ? undefined : describeProblems(problems);
  }
}
