import { afterEach, describe, expect, it, vi } from 'vitest';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';

afterEach(() => vi.restoreAllMocks());

// Nothing connects here: the warning is given when the Supervisor is made.
describe('provider options on the redis backend', () => {
  it('warns that an apiKey (or an authorization header) in them is stored in Redis in clear', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const make = (options: Record<string, unknown>) =>
      new Supervisor({
        backend: 'redis',
        redisUrl: 'redis://127.0.0.1:1',
        providers: { main: { kind: 'openai', options: { baseURL: 'http://127.0.0.1:1/v1', ...options } } },
      });
    const supervisors = [
      make({ apiKey: 'sk-x' }),
      make({ headers: { Authorization: 'Bearer x' } }),
      make({}),
    ];
    const codes = warn.mock.calls.map(([, options]) => (options as { code?: string } | undefined)?.code);
    expect(codes).toEqual(['TROUPE_SECRET_IN_REDIS', 'TROUPE_SECRET_IN_REDIS']);
    expect(String(warn.mock.calls[0]?.[0])).toContain('providers.main.options holds apiKey');
    expect(String(warn.mock.calls[0]?.[0])).not.toContain('sk-x');
    for (const supervisor of supervisors) await supervisor.close();
  });
});
