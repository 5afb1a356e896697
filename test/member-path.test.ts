import { describe, expect, it } from 'vitest';
import { memberPath } from '../src/member-path.ts';

describe('memberPath', () => {
  it('dots identifiers, brackets indexes and quotes any other key', () => {
    expect(memberPath(['runs', 2, 'task'])).toBe('runs[2].task');
    expect(memberPath([1, 'pattern'])).toBe('[1].pattern');
    expect(memberPath(['mcpServers', 'my.server', 'env'])).toBe('mcpServers["my.server"].env');
    expect(memberPath(['allowed-tools', 0])).toBe('allowed-tools[0]');
    expect(memberPath(['with space', '"q"', ''])).toBe('["with space"]["\\"q\\""][""]');
    expect(memberPath(['2fast'])).toBe('["2fast"]');
    expect(memberPath([])).toBe('');
  });
});
