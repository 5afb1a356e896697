/**
 * A tool or provider module that does not import is a UserError naming the module; a TypeScript
 * module that Node cannot load (an installed troupe on Node 20: no loader in the agents' threads)
 * also says what to give instead, not only Node's "Unknown file extension".
 */
import { describe, expect, it } from 'vitest';
import { loadToolModules, ModuleLoader, providerFromConfig } from '../../../src/engines/actor/resources.ts';

/** A loader whose every import fails as Node's own does for a `.ts` file without a loader. */
class NoTypeScriptLoader extends ModuleLoader {
  override load(specifier: string): Promise<Record<string, unknown>> {
    const error = Object.assign(new TypeError(`Unknown file extension ".ts" for ${specifier}`), {
      code: 'ERR_UNKNOWN_FILE_EXTENSION',
    });
    return Promise.reject(error);
  }
}

/** A loader whose every import fails as a missing file does. */
class MissingLoader extends ModuleLoader {
  override load(specifier: string): Promise<Record<string, unknown>> {
    const error = Object.assign(new Error(`Cannot find module '${specifier}'`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    return Promise.reject(error);
  }
}

describe('modules that do not import', () => {
  it('a .ts tool module Node cannot load says to give it as JavaScript', async () => {
    await expect(
      loadToolModules(
        [{ module: '/project/tools/word-count.ts', export: 'wordCount' }],
        new NoTypeScriptLoader(),
      ),
    ).rejects.toMatchObject({
      name: 'UserError',
      code: 'invalid_tool_module',
      message: expect.stringMatching(
        /^Could not import the tool module \/project\/tools\/word-count\.ts: Unknown file extension "\.ts" .*; give it as JavaScript \(\.js or \.mjs/,
      ),
    });
  });

  it('a .mts provider module gets the same hint', async () => {
    await expect(
      providerFromConfig({ kind: 'module', module: '/project/model.mts' }, {}, new NoTypeScriptLoader()),
    ).rejects.toMatchObject({
      code: 'invalid_provider_module',
      message: expect.stringContaining('give it as JavaScript'),
    });
  });

  it("another failure keeps Node's words alone", async () => {
    const failure = loadToolModules([{ module: '/project/tools/gone.mjs' }], new MissingLoader());
    await expect(failure).rejects.toMatchObject({ code: 'invalid_tool_module' });
    await expect(failure).rejects.not.toMatchObject({
      message: expect.stringContaining('give it as JavaScript'),
    });
  });
});
