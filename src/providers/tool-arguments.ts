/** Parses a tool call's JSON arguments, keeping the raw text and the reason when they do not parse. */

import { asRecord } from './json-shapes.ts';
import type { ToolCall } from './types.ts';

/** Builds a {@link ToolCall}: empty arguments mean `{}`; anything but a JSON object is a parse error. */
export function toolCall(id: string, name: string, rawArguments: string): ToolCall {
  if (rawArguments.trim() === '') return { id, name, arguments: {}, rawArguments };
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawArguments);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      id,
      name,
      arguments: undefined,
      rawArguments,
      parseError: `Arguments are not valid JSON: ${reason}`,
    };
  }
  const object = asRecord(parsed);
  if (object === undefined) {
    const kind = Array.isArray(parsed) ? 'array' : parsed === null ? 'null' : typeof parsed;
    return {
      id,
      name,
      arguments: undefined,
      rawArguments,
      parseError: `Expected a JSON object, got ${kind}.`,
    };
  }
  return { id, name, arguments: object, rawArguments };
}
