/**
 * JSON Schema validation for tool arguments (and anything else that needs it, such as the
 * `complete_task` result): Ajv with ajv-formats, each schema compiled once.
 */
import type * as AjvModule from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type * as AjvFormats from 'ajv-formats';
import { UserError } from '../errors.ts';
import { requirePackage } from '../require-package.ts';

// CommonJS: required, not imported (src/require-package.ts says why).
const { Ajv } = requirePackage('ajv') as typeof AjvModule;
type Ajv = AjvModule.Ajv;
const { Ajv2020 } = requirePackage('ajv/dist/2020.js') as typeof Ajv2020Module;
type Ajv2020 = Ajv2020Module.Ajv2020;
const addFormats = (requirePackage('ajv-formats') as typeof AjvFormats).default;

import type { JsonSchema } from './types.ts';

/** A compiled schema: returns the problems with `value`, empty when it is valid. */
export type SchemaValidator = (value: unknown) => readonly SchemaProblem[];

/** One validation problem, located by a JSON pointer into the validated value. */
export interface SchemaProblem {
  /** JSON pointer to the offending value, `` for the value itself. */
  readonly path: string;
  readonly message: string;
  readonly keyword: string;
  /** For `required`: the missing property; for `additionalProperties`: the extra one. */
  readonly property?: string;
}

// Tool schemas in the wild are written against draft-07 as often as 2020-12. One instance per
// dialect, chosen by `$schema`; `strict: false` because wild schemas carry unknown keywords.
let modern: Ajv2020 | undefined;
let draft07: Ajv | undefined;

function ajvFor(schema: JsonSchema | boolean): Ajv | Ajv2020 {
  const dialect = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : '';
  if (/draft-0[4-7]/.test(dialect)) {
    draft07 ??= withFormats(new Ajv({ allErrors: true, strict: false }));
    return draft07;
  }
  modern ??= withFormats(new Ajv2020({ allErrors: true, strict: false }));
  return modern;
}

function withFormats<T extends Ajv | Ajv2020>(ajv: T): T {
  addFormats.default(ajv);
  return ajv;
}

/** Whether `value` has the shape of a JSON Schema: a mapping, or the boolean schema `true` or `false`. */
export function isSchema(value: unknown): value is JsonSchema | boolean {
  return typeof value === 'boolean' || (typeof value === 'object' && value !== null && !Array.isArray(value));
}

/**
 * Compiles `schema` into a validator. Throws a UserError `invalid_schema` (fields: `schema`, the
 * given label) when the schema itself is not valid JSON Schema. `true` and `false` are the boolean
 * schemas of JSON Schema: every value is valid, and none. A schema with an `$id` is compiled on its
 * own: its `$ref`s reach only its own definitions, and another schema of the same `$id` (another
 * MCP server's) is compiled as well, never refused or taken for it.
 */
export function compileSchema(schema: JsonSchema | boolean, label: string): SchemaValidator {
  const shared = ajvFor(schema);
  if (!hasId(schema)) return compileWith(shared, schema, label);
  // An instance keeps every schema it compiled under its `$id`: a second schema of the same id
  // (another MCP server's, or the same server's listed again for the next agent) failed "already
  // exists" and went unchecked, or a `$ref` reached the first one's definitions. Such a schema is
  // checked against the meta-schema by the shared instance (compiled once), then compiled alone in
  // a scratch instance that forgets it at once (the validator keeps what it resolved).
  let valid: boolean;
  try {
    valid = shared.validateSchema(schema) === true;
  } catch (error) {
    throw invalidSchema(label, error instanceof Error ? error.message : String(error));
  }
  if (!valid) throw invalidSchema(label, `schema is invalid: ${shared.errorsText(shared.errors)}`);
  const scratch = scratchFor(schema);
  try {
    return compileWith(scratch, schema, label);
  } finally {
    scratch.removeSchema();
  }
}

let modernScratch: Ajv2020 | undefined;
let draft07Scratch: Ajv | undefined;

function scratchFor(schema: JsonSchema | boolean): Ajv | Ajv2020 {
  const options = { allErrors: true, strict: false, validateSchema: false } as const;
  if (ajvFor(schema) === draft07) {
    draft07Scratch ??= withFormats(new Ajv(options));
    return draft07Scratch;
  }
  modernScratch ??= withFormats(new Ajv2020(options));
  return modernScratch;
}

/** Whether an `$id` is written anywhere in `schema` (looked for without recursion). */
function hasId(schema: JsonSchema | boolean): boolean {
  const pending: unknown[] = [schema];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next !== 'object' || next === null) continue;
    if (Array.isArray(next)) {
      for (const item of next) pending.push(item);
      continue;
    }
    const record = next as Record<string, unknown>;
    if (typeof record.$id === 'string') return true;
    for (const key in record) pending.push(record[key]);
  }
  return false;
}

function invalidSchema(label: string, message: string): UserError {
  return new UserError('invalid_schema', `The JSON Schema of ${label} is invalid: ${message}`, {
    schema: label,
  });
}

let own: Ajv2020 | undefined;

/**
 * Compiles a schema troupe ships (a built-in tool's), without first checking it against the JSON
 * Schema meta-schema: compiling the meta-schema was most of the cost of an actor-host thread's
 * first tool (~100 ms of ~120). test/tools/registry.test.ts checks every built-in schema with
 * {@link compileSchema}.
 */
export function compileOwnSchema(schema: JsonSchema, label: string): SchemaValidator {
  own ??= withFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false }));
  return compileWith(own, schema, label);
}

function compileWith(ajv: Ajv | Ajv2020, schema: JsonSchema | boolean, label: string): SchemaValidator {
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw invalidSchema(label, error instanceof Error ? error.message : String(error));
  }
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map(toProblem));
}

function toProblem(error: ErrorObject): SchemaProblem {
  const params = error.params as { missingProperty?: unknown; additionalProperty?: unknown };
  const property =
    typeof params.missingProperty === 'string'
      ? params.missingProperty
      : typeof params.additionalProperty === 'string'
        ? params.additionalProperty
        : undefined;
  return {
    path: error.instancePath,
    message: error.message ?? `fails \`${error.keyword}\``,
    keyword: error.keyword,
    ...(property === undefined ? {} : { property }),
  };
}

/** Formats problems for a model: "`/path`: must be string; missing required property `x`". */
export function describeProblems(problems: readonly SchemaProblem[]): string {
  return problems
    .map((problem) => {
      if (problem.keyword === 'required' && problem.property !== undefined) {
        return `${problem.path ? `\`${problem.path}\`: ` : ''}missing required property \`${problem.property}\``;
      }
      if (problem.keyword === 'additionalProperties' && problem.property !== undefined) {
        return `${problem.path ? `\`${problem.path}\`: ` : ''}unexpected property \`${problem.property}\``;
      }
      return `\`${problem.path || '/'}\` ${problem.message}`;
    })
    .join('; ');
}
