/**
 * How a connection checks a tool's structured result against the tool's `outputSchema`, in place
 * of the SDK's default. The SDK compiled every listed tool's output schema when the tools were
 * listed: one schema Ajv refused made the whole server unavailable (every tool lost, for a tool
 * the agent might never call), and a large one cost seconds and hundreds of MB before any call.
 * Here a schema is compiled at its tool's first call, once; a schema longer than
 * {@link MCP_MAX_SCHEMA_BYTES} or one that does not compile is not checked (the result is taken
 * as the server sent it: troupe passes structured content on as data, and the model reads text).
 */
import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/sdk/validation';
import { compileSchema, describeProblems, isSchema, type SchemaValidator } from '../tools/schema.ts';
import type { JsonSchema } from '../tools/types.ts';
import { MCP_MAX_SCHEMA_BYTES } from './constants.ts';

/** A validator that compiles each output schema at its first use, within the bound. */
export const lazyOutputSchemas: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let check: SchemaValidator | null | undefined;
    return (input) => {
      check ??= compiled(schema);
      const problems = check === null ? [] : check(input);
      return problems.length === 0
        ? { valid: true, data: input as T, errorMessage: undefined }
        : { valid: false, data: undefined, errorMessage: describeProblems(problems) };
    };
  },
};

/** The schema compiled, or null when it is over the bound or not one troupe can compile. */
function compiled(schema: unknown): SchemaValidator | null {
  if (!isSchema(schema)) return null;
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(schema));
  } catch {
    return null;
  }
  if (bytes > MCP_MAX_SCHEMA_BYTES) return null;
  try {
    return compileSchema(schema as JsonSchema | boolean, 'an MCP tool output');
  } catch {
    return null;
  }
}
