/**
 * How tool calls and results read in the projection history. The simulated model reads progress
 * from lines starting with "Tool call" and "Tool result", so these prefixes are part of its contract.
 */

import { canonicalJson } from '../journal/canonical-json.ts';

/**
 * "Tool call: read_file {"path":"a.md"}". Arguments are shown as canonical JSON (sorted keys): a
 * replay rebuilds the entry from the journalled arguments, whose key order is canonical.
 */
export function formatToolCall(modelName: string, args: unknown, rawArgs: string | undefined): string {
  const shown = args === undefined ? (rawArgs ?? '') : canonicalJson(args);
  return `Tool call: ${modelName} ${shown}`;
}

/** "Tool result (read_file): ..." or "Tool result (read_file, failed): ..." */
export function formatToolResult(modelName: string, ok: boolean, text: string): string {
  return `Tool result (${modelName}${ok ? '' : ', failed'}): ${text}`;
}

/** Prefix of a session's user message in the history. */
export const USER_PREFIX = 'User: ';

/** "User: <message>": a session's user message as the history holds it. */
export function formatUser(text: string): string {
  return `${USER_PREFIX}${text}`;
}

/** Prefix of the model's own text in the history. */
export const ASSISTANT_PREFIX = 'Assistant: ';

/** The model's own text between tool calls or at the end of a turn. */
export function formatAssistant(text: string): string {
  return `${ASSISTANT_PREFIX}${text}`;
}

/**
 * What the model is shown before a capture turn: which tool asks for a freeform answer, and the
 * tool's own prompt (`CaptureRequest.prompt`).
 */
export function formatCapturePrompt(modelName: string, prompt: string): string {
  return `Freeform answer requested by ${modelName} (answer with text only; no tools this turn): ${prompt}`;
}
