/**
 * `troupe/testing`: a strict scripted model for users' tests. It records every request, fails on a
 * call it has no step for, and reports steps left unused.
 */

export type {
  ScriptedError,
  ScriptedProviderOptions,
  ScriptedRequest,
  ScriptedResponse,
  ScriptedStep,
  ScriptedToolCall,
} from './providers/scripted.ts';
export { ScriptedProvider } from './providers/scripted.ts';
