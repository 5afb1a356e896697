import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GREP_RESULT_LIMIT,
  LIST_DIR_ENTRY_LIMIT,
  READ_FILE_OUTPUT_BYTE_LIMIT,
} from '../../src/tools/constants.ts';
import { useTempDirs, writeTree } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

async function setup(files: Record<string, string>) {
  const cwd = await tempDir();
  await writeTree(cwd, files);
  return { cwd, toolbox: toolboxFor(cwd) };
}

describe('read_file', () => {
  it('numbers lines and reads an inclusive range', async () => {
    const { toolbox } = await setup({ 'a.txt': 'one\r\ntwo\nthree\nfour\n' });
    expect((await toolbox.call('read_file', { path: 'a.txt' })).text).toBe(
      'a.txt: lines 1-4 of 4\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour',
    );
    expect((await toolbox.call('read_file', { path: 'a.txt', start_line: 2, end_line: 3 })).text).toBe(
      'a.txt: lines 2-3 of 4\n     2\ttwo\n     3\tthree',
    );
    expect((await toolbox.call('read_file', { path: 'a.txt', start_line: 4, end_line: 99 })).text).toBe(
      'a.txt: lines 4-4 of 4\n     4\tfour',
    );
  });

  it('fails clearly for a range past the end, a missing file, a directory and a binary file', async () => {
    const { toolbox, cwd } = await setup({ 'a.txt': 'one\n', 'dir/x': '' });
    await writeFile(path.join(cwd, 'bin.dat'), Buffer.from([1, 2, 0, 3]));
    const failures: [Record<string, unknown>, string][] = [
      [{ path: 'a.txt', start_line: 5 }, 'past the end'],
      [{ path: 'a.txt', start_line: 1, end_line: 0 }, '`/end_line` must be >= 1'],
      [{ path: 'nope.txt' }, 'does not exist'],
      [{ path: 'dir' }, 'is a directory'],
      [{ path: 'bin.dat' }, 'binary file'],
    ];
    for (const [args, message] of failures) {
      const result = await toolbox.call('read_file', args);
      expect(result.ok).toBe(false);
      expect(result.text).toContain(message);
    }
    expect((await toolbox.call('read_file', { path: 'dir/x' })).text).toBe('dir/x is empty.');
  });

  it('refuses a FIFO instead of blocking on it: read_file, grep, write_file, search_replace', async () => {
    const { toolbox, cwd } = await setup({ 'a.txt': 'one\n' });
    const fifo = path.join(cwd, 'pipe');
    execFileSync('mkfifo', [fifo]);
    // Without a writer, opening the FIFO to read blocked a libuv pool thread for good, whatever the
    // signal said (and to write, without a reader). Should a tool block, the other end opens every
    // half second, so the test fails instead of leaving the thread (and the test process) stuck: a
    // write end that opens at once means a reader was blocked on the FIFO.
    let readersUnblocked = 0;
    const unblock = setInterval(() => {
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
        readersUnblocked += 1;
      } catch {
        // ENXIO: no reader waiting.
      }
      closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
    }, 500);
    try {
      const read = await toolbox.call('read_file', { path: 'pipe' });
      const grep = await toolbox.call('grep', { pattern: 'x', path: 'pipe' });
      const write = await toolbox.call('write_file', { path: 'pipe', content: 'x' });
      const edit = await toolbox.call('search_replace', { path: 'pipe', old_string: 'a', new_string: 'b' });
      expect(readersUnblocked).toBe(0);
      for (const result of [read, write, edit]) {
        expect(result).toMatchObject({ ok: false });
        expect(result.text).toContain('is not a regular file');
      }
      expect(grep.text).toContain('No matches');
    } finally {
      clearInterval(unblock);
    }
  });

  it('stops a long read at a line under the size cap and says where to continue', async () => {
    const line = 'x'.repeat(999);
    const count = Math.ceil((READ_FILE_OUTPUT_BYTE_LIMIT * 2) / 1000);
    const { toolbox } = await setup({ 'big.txt': `${line}\n`.repeat(count) });
    const result = await toolbox.call('read_file', { path: 'big.txt' });
    expect(Buffer.byteLength(result.text)).toBeLessThan(READ_FILE_OUTPUT_BYTE_LIMIT + 200);
    const last = Number(/Output stopped at line (\d+)/.exec(result.text)?.[1]);
    expect(last).toBeGreaterThan(50);
    expect(result.text).toContain(`read on with start_line=${last + 1}`);
    expect(result.text).toContain(`${String(last).padStart(6)}\t${line}\n[Output stopped`);
  });

  it('shows only the start of a line longer than the size cap, cut on a character boundary', async () => {
    const { toolbox } = await setup({
      'blob.txt': `short\n${'é'.repeat(READ_FILE_OUTPUT_BYTE_LIMIT)}\nend\n`,
    });
    const first = await toolbox.call('read_file', { path: 'blob.txt' });
    expect(first.text).toContain('Output stopped at line 1');
    const result = await toolbox.call('read_file', { path: 'blob.txt', start_line: 2 });
    expect(result.ok).toBe(true);
    expect(Buffer.byteLength(result.text)).toBeLessThan(READ_FILE_OUTPUT_BYTE_LIMIT + 400);
    expect(result.text).not.toContain('\ufffd');
    expect(result.text).toContain(`[Line 2 has ${2 * READ_FILE_OUTPUT_BYTE_LIMIT + 7} bytes; only its first`);
    expect(result.text).toContain('read on with start_line=3');
  });
});

describe('list_dir', () => {
  it('lists entries sorted, marking directories and symlinks', async () => {
    const { toolbox } = await setup({ 'b.txt': '', 'a/x': '', '.hidden': '' });
    expect((await toolbox.call('list_dir', {})).text).toBe('. (3 entries):\n.hidden\na/\nb.txt');
    expect((await toolbox.call('list_dir', { path: 'a' })).text).toBe('a (1 entries):\nx');
    expect((await toolbox.call('list_dir', { path: 'b.txt' })).text).toContain('is a file');
  });

  it('stops at the entry limit with a note', async () => {
    const files = Object.fromEntries(
      Array.from({ length: LIST_DIR_ENTRY_LIMIT + 5 }, (_, i) => [`f${String(i).padStart(5, '0')}`, '']),
    );
    const { toolbox } = await setup(files);
    expect((await toolbox.call('list_dir', {})).text).toMatch(/\n\[5 more entries not shown\]$/);
  });
});

describe('grep', () => {
  const tree = {
    'src/a.ts': 'const TODO = 1;\n// todo later\n',
    'src/deep/b.ts': 'nothing\nTODO: b\n',
    'docs/readme.md': 'TODO in docs\n',
    'node_modules/pkg/index.ts': 'TODO in deps\n',
    '.git/config': 'TODO in git\n',
  };

  it('searches recursively with a JS regex, skipping node_modules and .git', async () => {
    const { toolbox } = await setup(tree);
    expect((await toolbox.call('grep', { pattern: 'TODO\\b' })).text).toBe(
      ['docs/readme.md:1: TODO in docs', 'src/a.ts:1: const TODO = 1;', 'src/deep/b.ts:2: TODO: b'].join(
        '\n',
      ),
    );
    expect((await toolbox.call('grep', { pattern: 'todo', case_insensitive: true, path: 'src' })).text).toBe(
      ['src/a.ts:1: const TODO = 1;', 'src/a.ts:2: // todo later', 'src/deep/b.ts:2: TODO: b'].join('\n'),
    );
  });

  it("skips troupe's own run output: a journal in .troupe/runs holds the call being made", async () => {
    const { toolbox } = await setup({
      ...tree,
      '.troupe/runs/20261130T070520Z-reader-4bb299f3.jsonl': '{"name":"grep","args":{"pattern":"TODO"}}\n',
      '.troupe/runs/run-1/journals/a-0.jsonl': 'TODO copied from a file an earlier run read\n',
      '.troupe/agents/reader.md': 'TODO in a definition\n',
    });
    expect((await toolbox.call('grep', { pattern: 'TODO', glob: '*.{jsonl,md}' })).text).toBe(
      ['.troupe/agents/reader.md:1: TODO in a definition', 'docs/readme.md:1: TODO in docs'].join('\n'),
    );
    expect((await toolbox.call('glob', { pattern: '**/*.jsonl' })).text).toMatch(/^No files match/);
    // Asked for by name, the run output is searched.
    expect((await toolbox.call('grep', { pattern: 'copied', path: '.troupe/runs' })).text).toBe(
      '.troupe/runs/run-1/journals/a-0.jsonl:1: TODO copied from a file an earlier run read',
    );
  });

  it('filters files by glob, by name or by path below the searched directory', async () => {
    const { toolbox } = await setup(tree);
    expect((await toolbox.call('grep', { pattern: 'TODO', glob: '*.md' })).text).toBe(
      'docs/readme.md:1: TODO in docs',
    );
    expect((await toolbox.call('grep', { pattern: 'TODO', glob: 'deep/*.ts', path: 'src' })).text).toBe(
      'src/deep/b.ts:2: TODO: b',
    );
  });

  it('caps results and says so, and reports no matches and bad patterns', async () => {
    const { toolbox } = await setup({ 'many.txt': 'hit\n'.repeat(GREP_RESULT_LIMIT + 10) });
    const capped = await toolbox.call('grep', { pattern: 'hit' });
    expect(capped.text.split('\n').filter((line) => line.startsWith('many.txt:'))).toHaveLength(
      GREP_RESULT_LIMIT,
    );
    expect(capped.text).toContain(`[Stopped at ${GREP_RESULT_LIMIT} matches`);
    expect((await toolbox.call('grep', { pattern: 'hit', max_results: 2 })).text).toBe(
      'many.txt:1: hit\nmany.txt:2: hit\n[Stopped at 2 matches; narrow the pattern, path or glob to see the rest]',
    );
    expect((await toolbox.call('grep', { pattern: 'miss' })).text).toBe(
      'No matches for /miss/ in the working directory.',
    );
    const bad = await toolbox.call('grep', { pattern: '(unclosed' });
    expect(bad.ok).toBe(false);
    expect(bad.text).toContain('Invalid regular expression');
  });

  it('runs a catastrophic-backtracking pattern in linear time: ^(a+)+$ on a 35-character line', async () => {
    // A backtracking engine takes minutes here (2^34 ways to split the run of a's).
    const { toolbox } = await setup({ 'evil.txt': `${'a'.repeat(34)}!\n${'a'.repeat(35)}\n` });
    expect((await toolbox.call('grep', { pattern: '^(a+)+$' })).text).toBe(`evil.txt:2: ${'a'.repeat(35)}`);
    expect((await toolbox.call('grep', { pattern: '(x+x+)+y' })).text).toBe(
      'No matches for /(x+x+)+y/ in the working directory.',
    );
  });

  it('accepts the usual JavaScript syntax and refuses what cannot run in linear time, saying why', async () => {
    const { toolbox } = await setup({ 'a.txt': 'café/\u00e9 x1\nid: 42\nfoo_bar\n' });
    expect((await toolbox.call('grep', { pattern: 'caf\\u00e9\\/' })).text).toBe('a.txt:1: café/é x1');
    expect((await toolbox.call('grep', { pattern: '\\u{e9} x\\d' })).text).toBe('a.txt:1: café/é x1');
    expect((await toolbox.call('grep', { pattern: '(?<key>\\w+): \\d+$' })).text).toBe('a.txt:2: id: 42');
    expect((await toolbox.call('grep', { pattern: '(?<=foo_)bar' })).text).toBe('a.txt:3: foo_bar');
    for (const pattern of ['foo(?=_bar)', '(o)\\1']) {
      const refused = await toolbox.call('grep', { pattern });
      expect(refused.ok).toBe(false);
      expect(refused.text).toContain('linear time');
    }
  });
});

describe('search_replace', () => {
  it('changes only the replaced bytes of a file that is not UTF-8 (Latin-1 text, binary data)', async () => {
    const { toolbox, cwd } = await setup({});
    const latin1 = Buffer.from('Caf\xe9 cr\xe8me\nTODO fix\n', 'latin1');
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0xff, 0xd8]),
      Buffer.from(' MARKER \xfe', 'latin1'),
    ]);
    await writeFile(path.join(cwd, 'old.txt'), latin1);
    await writeFile(path.join(cwd, 'img.png'), png);
    for (const [file, from, to] of [
      ['old.txt', 'TODO', 'DONE'],
      ['img.png', 'MARKER', 'marker'],
    ] as const) {
      const result = await toolbox.call('search_replace', { path: file, old_string: from, new_string: to });
      expect(result.text).toBe(`Replaced 1 occurrence in ${file}.`);
    }
    expect(await readFile(path.join(cwd, 'old.txt'))).toEqual(
      Buffer.from('Caf\xe9 cr\xe8me\nDONE fix\n', 'latin1'),
    );
    expect(await readFile(path.join(cwd, 'img.png'))).toEqual(
      Buffer.concat([png.subarray(0, 7), Buffer.from(' marker \xfe', 'latin1')]),
    );
  });

  it('replaces an exact, unique match, taking new_string literally', async () => {
    const { toolbox, cwd } = await setup({ 'a.ts': 'const a = 1;\nconst b = 2;\n' });
    const result = await toolbox.call('search_replace', {
      path: 'a.ts',
      old_string: 'const b = 2;',
      new_string: "const b = '$&$1';",
    });
    expect(result).toMatchObject({ ok: true, text: 'Replaced 1 occurrence in a.ts.' });
    expect(await readFile(path.join(cwd, 'a.ts'), 'utf8')).toBe("const a = 1;\nconst b = '$&$1';\n");
  });

  it('fails without changing the file when old_string matches zero or several times', async () => {
    const original = 'x = 1\nx = 1\naaa\n';
    const { toolbox, cwd } = await setup({ 'a.py': original });
    const cases: [string, string][] = [
      ['x = 2', 'was not found'],
      ['x = 1', 'occurs 2 times'],
      ['aa', 'occurs 2 times'],
    ];
    for (const [oldString, message] of cases) {
      const result = await toolbox.call('search_replace', {
        path: 'a.py',
        old_string: oldString,
        new_string: 'y',
      });
      expect(result.ok).toBe(false);
      expect(result.text).toContain(message);
    }
    expect(await readFile(path.join(cwd, 'a.py'), 'utf8')).toBe(original);
  });

  it('creates a new file from an empty old_string, but never overwrites one that exists', async () => {
    const { toolbox, cwd } = await setup({ 'old.txt': 'keep' });
    expect(
      (await toolbox.call('search_replace', { path: 'new/dir/f.txt', old_string: '', new_string: 'hi' }))
        .text,
    ).toBe('Created new/dir/f.txt.');
    expect(await readFile(path.join(cwd, 'new/dir/f.txt'), 'utf8')).toBe('hi');
    const refused = await toolbox.call('search_replace', {
      path: 'old.txt',
      old_string: '',
      new_string: 'x',
    });
    expect(refused.ok).toBe(false);
    expect(refused.text).toContain('already exists');
    expect(await readFile(path.join(cwd, 'old.txt'), 'utf8')).toBe('keep');
    const missing = await toolbox.call('search_replace', {
      path: 'none.txt',
      old_string: 'a',
      new_string: 'b',
    });
    expect(missing.text).toContain('does not exist');
  });
});
