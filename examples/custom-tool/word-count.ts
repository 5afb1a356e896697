/**
 * A custom tool module. troupe imports it inside every worker thread (Supervisor option
 * `toolModules: [{ module, export }]`, or `toolModules:` in a plan), so the tool runs next to the
 * agents that call it, not on the main thread.
 */
import { threadId } from 'node:worker_threads';
import type { Tool } from 'troupe';

export const wordCount: Tool = {
  name: 'word_count',
  description: 'Count the words and characters of a text.',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string', description: 'The text to count.' } },
    required: ['text'],
    additionalProperties: false,
  },
  readOnly: true,
  execute: (args) => {
    const text = String(args.text);
    const words = text.split(/\s+/).filter((word) => word !== '').length;
    return { ok: true, text: `${words} words, ${text.length} characters (counted in thread ${threadId})` };
  },
};
