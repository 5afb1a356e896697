/** Checks a definition's `outputSchema` is a JSON Schema Ajv can compile, before any agent runs. */
import type * as AjvModule from 'ajv';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import { requirePackage } from '../require-package.ts';

// CommonJS: required, not imported (src/require-package.ts says why).
const { Ajv } = requirePackage('ajv') as typeof AjvModule;
type Ajv = AjvModule.Ajv;
const { Ajv2020 } = requirePackage('ajv/dist/2020.js') as typeof Ajv2020Module;
type Ajv2020 = Ajv2020Module.Ajv2020;

// Same dialect choice as the tool layer: draft-07 when `$schema` says so, 2020-12 otherwise.
// `strict: false` because schemas written for other tools carry keywords Ajv does not know.
let modern: Ajv2020 | undefined;
let draft07: Ajv | undefined;

function ajvFor(schema: Readonly<Record<string, unknown>>): Ajv | Ajv2020 {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (/draft-0[4-7]/.test(dialect)) {
    draft07 ??= new Ajv({ allErrors: true, strict: false });
    return draft07;
  }
  modern ??= new Ajv2020({ allErrors: true, strict: false });
  return modern;
}

/** The reasons `schema` is not a usable JSON Schema; empty when it is one. */
export function outputSchemaProblems(schema: Readonly<Record<string, unknown>>): string[] {
  const ajv = ajvFor(schema);
  try {
    const valid = ajv.validateSchema(schema);
    if (valid !== true) {
      return (ajv.errors ?? []).map(
        (error) => `${error.instancePath || '/'} ${error.message ?? 'is invalid'}`,
      );
    }
    ajv.compile(schema);
    return [];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  } finally {
    // Compiled schemas are cached by `$id`; drop them so a corrected file can reuse the id.
    ajv.removeSchema(schema);
  }
}
