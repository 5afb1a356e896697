/**
 * JSON Schema validation for tool arguments (and anything else that needs it, such as the
 * `complete_task` result): Ajv with ajv-formats, each schema compiled once.
 */
import { createHash } from 'node:crypto';
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
 * schemas of JSON Schema: every value is valid, and none. Each schema is compiled on its own: its
 * `$ref`s reach only its own definitions, and another schema of the same `$id` (another MCP
 * server's) is compiled as well, never refused or taken for it. The last
 * {@link SCHEMA_VALIDATOR_CACHE_ENTRIES} validators are kept by the schema's text and reused.
 */
export function compileSchema(schema: JsonSchema | boolean, label: string): SchemaValidator {
  const shared = ajvFor(schema);
  const key = keyOf(shared, schema);
  const found = key === undefined ? undefined : kept.get(key);
  if (key !== undefined && found !== undefined) {
    kept.delete(key);
    kept.set(key, found);
    return found;
  }
  // An Ajv instance keeps every schema it compiled, and every value its code refers to (the
  // schema's objects, its patterns), for as long as it lives: an eval whose items each carry an
  // expected schema kept all of them (115 MiB for 20,000 items), as did an `outputSchema` compiled
  // for each agent, and a second schema of an `$id` failed "already exists". So the shared
  // instance only checks a schema against the meta-schema (compiled once); the schema is compiled
  // in a scratch instance that forgets it at once and is replaced after SCRATCH_COMPILES compiles
  // (each validator holds its instance: what it keeps is bounded by those compiles). Measured
  // (Node 20, ajv 8): a scratch instance with ajv-formats takes ~33 KiB, so the 16 that 500 MCP
  // tools' validators hold are ~0.5 MiB of the ~2.8 MiB the validators take: not worth compiling
  // standalone code or counting validators per instance for.
  let valid: boolean;
  try {
    valid = shared.validateSchema(schema) === true;
  } catch (error) {
    throw invalidSchema(label, error instanceof Error ? error.message : String(error));
  }
  if (!valid) throw invalidSchema(label, `schema is invalid: ${shared.errorsText(shared.errors)}`);
  const scratch = scratchFor(shared);
  let validator: SchemaValidator;
  try {
    validator = compileWith(scratch, schema, label);
  } finally {
    scratch.removeSchema();
  }
  if (key !== undefined) {
    kept.set(key, validator);
    if (kept.size > SCHEMA_VALIDATOR_CACHE_ENTRIES) {
      const oldest = kept.keys().next().value;
      if (oldest !== undefined) kept.delete(oldest);
    }
  }
  return validator;
}

/** Validators {@link compileSchema} keeps for reuse, by the schema's text: at most this many. */
export const SCHEMA_VALIDATOR_CACHE_ENTRIES = 256;

/** Kept validators, least recently used first. */
const kept = new Map<string, SchemaValidator>();

/** The key of `schema` among the kept validators; undefined when it has no JSON text. */
function keyOf(shared: Ajv | Ajv2020, schema: JsonSchema | boolean): string | undefined {
  try {
    // Hashed: a schema's text may be 256 KiB (an MCP tool's); its key is 66 characters.
    const text = JSON.stringify(schema);
    return `${shared === draft07 ? '7' : 'm'}:${createHash('sha256').update(text).digest('hex')}`;
  } catch {
    return undefined; // a BigInt, a cycle: compiled, not kept
  }
}

/** Compiles in one scratch instance before it is replaced by a fresh one. */
const SCRATCH_COMPILES = 32;

let modernScratch: Ajv2020 | undefined;
let draft07Scratch: Ajv | undefined;
let modernCompiles = 0;
let draft07Compiles = 0;

function scratchFor(shared: Ajv | Ajv2020): Ajv | Ajv2020 {
  const options = { allErrors: true, strict: false, validateSchema: false } as const;
  if (shared === draft07) {
    if (draft07Compiles++ % SCRATCH_COMPILES === 0) draft07Scratch = undefined;
    draft07Scratch ??= withFormats(new Ajv(options));
    return draft07Scratch;
  }
  if (modernCompiles++ % SCRATCH_COMPILES === 0) modernScratch = undefined;
  modernScratch ??= withFormats(new Ajv2020(options));
  return modernScratch;
}

/**
 * What the shared instances hold (schemas, and values their code refers to, meta-schemas'
 * included) and how many validators {@link compileSchema} keeps: for tests, which check that
 * neither grows with the schemas compiled.
 * @internal
 */
export function schemaCacheSizes(): { readonly sharedHeld: number; readonly validators: number } {
  let held = 0;
  for (const ajv of [modern, draft07]) {
    if (ajv === undefined) continue;
    const inner = ajv as unknown as {
      _cache: Map<unknown, unknown>;
      scope: { _values: Record<string, Map<unknown, unknown> | undefined> };
    };
    held += inner._cache.size;
    for (const values of Object.values(inner.scope._values)) held += values?.size ?? 0;
  }
  return { sharedHeld: held, validators: kept.size };
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
