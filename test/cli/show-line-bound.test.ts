/** `troupe show` and `troupe replay`'s plan read a journal a line at a time, each line bounded. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { planReplay } from '../../src/run-dir/replay-plan.ts';
import { writeSampleRun } from '../journal/helpers.ts';
import { captureIO } from '../run-dir/helpers.ts';

let dir: string;
let file: string;
let lines: string[];
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-show-bound-'));
  const journal = new MemoryJournal();
  writeSampleRun(journal);
  lines = journal.toJsonl().split('\n').slice(0, -1);
  file = path.join(dir, 'agent.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first line longer than `bound` bytes (1-based) and the bound that makes line 1 fit. */
function longestLine(): { line: number; bound: number } {
  const lengths = lines.map((line) => Buffer.byteLength(line));
  const bound = Math.max(...lengths) - 1;
  return { line: lengths.findIndex((length) => length > bound) + 1, bound };
}

describe('troupe show JOURNAL --max-line-bytes', () => {
  it('fails a line over the bound with journal_line_too_long, naming the file, the line and the bound', async () => {
    const { line, bound } = longestLine();
    const io = captureIO();
    expect(await main(['show', file, '--max-line-bytes', String(bound)], io)).toBe(1);
    expect(io.out()).toBe('');
    expect(io.err()).toContain('troupe: journal_line_too_long: ');
    expect(io.err()).toContain(`journal ${file}`);
    expect(io.err()).toContain(`at most ${bound} bytes`);
    expect(io.err()).toContain(`line ${line} `);
  });

  it('shows the journal when every line fits the bound', async () => {
    const { bound } = longestLine();
    const io = captureIO();
    expect(await main(['show', file, '--max-line-bytes', String(bound + 1)], io)).toBe(0);
    expect(io.out()).not.toBe('');
  });
});

describe("troupe replay's plan of a journal", () => {
  it('reads its first line only, bounded: a longer one is journal_line_too_long, a long later one is not read', async () => {
    const first = Buffer.byteLength(lines[0] ?? '');
    await expect(
      planReplay({ source: file, cwd: dir, maxLineBytes: first - 1, env: {} }),
    ).rejects.toMatchObject({
      code: 'journal_line_too_long',
      fields: { path: file, line: 1, offset: 0, limit: first - 1 },
    });
    const longer = path.join(dir, 'long-tail.jsonl');
    writeFileSync(longer, `${lines.join('\n')}\n${'x'.repeat(first * 4)}\n`);
    const { plan } = await planReplay({ source: longer, cwd: dir, maxLineBytes: first, env: {} });
    expect(plan.runs).toHaveLength(1);
  });
});
