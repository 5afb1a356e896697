import { describe, expect, it } from 'vitest';
import { deserializeError, hasErrorCode, isTroupeError, serializeError, UserError } from '../src/errors.ts';

describe('errors', () => {
  it('a troupe error survives serialization with its class, code and fields', () => {
    const original = new UserError('invalid_field', 'Expected a number', { file: 'a.md', line: 3 });
    const rebuilt = deserializeError(structuredClone(serializeError(original)));
    expect(rebuilt).toBeInstanceOf(UserError);
    expect(rebuilt.code).toBe('invalid_field');
    expect(rebuilt.fields).toEqual({ file: 'a.md', line: 3 });
    expect(isTroupeError(rebuilt)).toBe(true);
    expect(hasErrorCode(rebuilt, 'invalid_field')).toBe(true);
  });

  it('a plain error becomes code internal', () => {
    expect(serializeError(new Error('boom'))).toMatchObject({ code: 'internal', message: 'boom' });
    expect(isTroupeError(new Error('x'))).toBe(false);
  });
});
