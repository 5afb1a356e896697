/**
 * `paramNameOverrides` for one tool: the model sees renamed top-level parameters, and its arguments
 * are mapped back to canonical names before validation.
 */
import { UserError } from '../errors.ts';
import type { SchemaProblem } from './schema.ts';
import type { JsonSchema } from './types.ts';

/** Both directions of one tool's parameter renames. */
export interface ParamMapping {
  /** The tool's schema as the model sees it: properties and `required` renamed. */
  readonly schema: JsonSchema;
  /** Maps model-facing argument names back to canonical ones, or explains which name is wrong. */
  toCanonical(args: Readonly<Record<string, unknown>>): { args: Record<string, unknown> } | { error: string };
  /** Rewrites validation problems (found on canonical args) into model-facing names. */
  problemsToModel(problems: readonly SchemaProblem[]): SchemaProblem[];
}

/**
 * Builds the mapping for a tool. Throws UserError `param_name_conflict` when two parameters would
 * share a model-facing name, and `unknown_param_override` for a parameter the tool does not have.
 */
export function buildParamMapping(
  toolName: string,
  schema: JsonSchema,
  overrides: Readonly<Record<string, string>> | undefined,
): ParamMapping {
  const renames = Object.entries(overrides ?? {}).filter(([canonical, model]) => canonical !== model);
  if (renames.length === 0) return identityMapping(schema);
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const toModel = new Map<string, string>();
  for (const [canonical, model] of renames) {
    if (!Object.hasOwn(properties, canonical)) {
      throw new UserError(
        'unknown_param_override',
        `paramNameOverrides.${toolName} renames \`${canonical}\`, but tool \`${toolName}\` has no such parameter (it has: ${Object.keys(properties).join(', ') || 'none'})`,
        { tool: toolName, param: canonical },
      );
    }
    toModel.set(canonical, model);
  }
  const toCanonicalName = new Map<string, string>();
  for (const canonical of Object.keys(properties)) {
    const model = toModel.get(canonical) ?? canonical;
    const other = toCanonicalName.get(model);
    if (other !== undefined) {
      throw new UserError(
        'param_name_conflict',
        `paramNameOverrides.${toolName}: parameters \`${other}\` and \`${canonical}\` would both be called \`${model}\``,
        { tool: toolName, param: model },
      );
    }
    toCanonicalName.set(model, canonical);
  }
  const modelName = (canonical: string): string => toModel.get(canonical) ?? canonical;

  const renamedProperties = Object.fromEntries(
    Object.entries(properties).map(([name, value]) => [modelName(name), value]),
  );
  const required = Array.isArray(schema.required)
    ? schema.required.map((name) => (typeof name === 'string' ? modelName(name) : name))
    : undefined;
  const modelSchema: JsonSchema = {
    ...schema,
    properties: renamedProperties,
    ...(required === undefined ? {} : { required }),
  };

  return {
    schema: modelSchema,
    toCanonical(args) {
      const mapped: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(args)) {
        const canonical = toCanonicalName.get(key);
        if (canonical !== undefined) {
          mapped[canonical] = value;
        } else if (toModel.has(key)) {
          return { error: `unexpected property \`${key}\` (this parameter is called \`${modelName(key)}\`)` };
        } else {
          mapped[key] = value;
        }
      }
      return { args: mapped };
    },
    problemsToModel(problems) {
      return problems.map((problem) => {
        const [, first, ...rest] = problem.path.split('/');
        const path = first === undefined ? '' : ['', modelName(first), ...rest].join('/');
        const property =
          problem.property !== undefined && path === '' ? modelName(problem.property) : problem.property;
        return { ...problem, path, ...(property === undefined ? {} : { property }) };
      });
    },
  };
}

/**
 * The arguments of a journalled call of tool `tool` (canonical name), given under the model-facing
 * parameter names of `overrides` (a definition's `paramNameOverrides`), with their canonical names:
 * the renaming {@link ParamMapping.toCanonical} applies, read back without the tool's schema (a
 * replay reads recorded calls this way). A name no override gives keeps its name. Returns `args`
 * itself when the tool has no renames.
 */
export function canonicalArgs(
  tool: string,
  args: Readonly<Record<string, unknown>>,
  overrides: Readonly<Record<string, Readonly<Record<string, string>>>>,
): Readonly<Record<string, unknown>> {
  const renames = Object.hasOwn(overrides, tool) ? overrides[tool] : undefined;
  if (renames === undefined) return args;
  const toCanonicalName = new Map<string, string>();
  for (const [canonical, model] of Object.entries(renames)) {
    if (canonical !== model) toCanonicalName.set(model, canonical);
  }
  if (toCanonicalName.size === 0) return args;
  const mapped: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) mapped[toCanonicalName.get(key) ?? key] = value;
  return mapped;
}

/** Mappings without renames, by schema: one per tool schema, not one per agent and tool. */
const identities = new WeakMap<JsonSchema, ParamMapping>();
const copyArgs = (args: Readonly<Record<string, unknown>>): { args: Record<string, unknown> } => ({
  args: { ...args },
});
const copyProblems = (problems: readonly SchemaProblem[]): SchemaProblem[] => [...problems];

function identityMapping(schema: JsonSchema): ParamMapping {
  let mapping = identities.get(schema);
  if (mapping === undefined) {
    mapping = { schema, toCanonical: copyArgs, problemsToModel: copyProblems };
    identities.set(schema, mapping);
  }
  return mapping;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
