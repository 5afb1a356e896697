// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
import { describe, expect, it } from 'vitest';
import { hasErrorCode, type TroupeError } from '../../src/errors.ts';
import { renderTemplate } from '../../src/prompt/template.ts';

const variables = {
  tools: { read_file: 'Read', run_terminal_cmd: '' },
  os_name: 'Linux 6.1',
  working_directory: '/work',
};

const render = (text: string, firstLine = 1) =>
  renderTemplate({ text, file: '/defs/agent.md', firstLine }, variables);

async function templateError(text: string, firstLine = 1): Promise<TroupeError> {
  const error = await render(text, firstLine).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(hasErrorCode(error, 'template_error')).toBe(true);
  return error as TroupeError;
}

describe('prompt templates', () => {
  it.each([
    ['a liquid output in prose', 'Use {{ user.name }} in Jinja.'],
    ['a liquid tag in prose', 'Write {% for x in xs %} loops.'],
    ['a dollar amount', 'It costs $5 or $ 10.'],
    ['a JS template interpolation', 'In JS, write `${ value }` or ${name}.'],
    ['closing delimiters alone', 'a }} b %} c'],
    ['a GitHub Actions-style expression without the dollar', 'run: {{ secrets.TOKEN }}'],
  ])('%s passes through unchanged', async (_label, text) => {
    expect(await render(text)).toBe(text);
  });

  it('substitutes ${{ }} expressions and nested tool names', async () => {
    expect(await render('OS ${{ os_name }}, read with ${{ tools.read_file }}.')).toBe(
      'OS Linux 6.1, read with Read.',
    );
  });

  it('drops a block whose tool is not admitted (empty name is false) and keeps an admitted one', async () => {
    const text = [
      'start',
      '${%- if tools.run_terminal_cmd %}',
      'SHELL',
      '${%- endif %}',
      '${%- if tools.read_file %}',
      'READ with ${{ tools.read_file }}',
      '${%- endif %}',
      'end',
    ].join('\n');
    expect(await render(text)).toBe('start\nREAD with Read\nend');
  });

  it('trims whitespace on the side of a `-` marker only', async () => {
    expect(await render('a  \n  ${{- os_name -}}  \n  b')).toBe('aLinux 6.1b');
    expect(await render('a ${{ os_name -}}   b')).toBe('a Linux 6.1b');
    expect(await render('a   ${%- if true %}x${% endif -%}   b')).toBe('axb');
  });

  it('keeps a ${{ }} literal inside a raw block', async () => {
    expect(await render('${% raw %}${{ secrets.TOKEN }}${% endraw %}')).toBe('${{ secrets.TOKEN }}');
  });

  it('reports an unknown variable at its line and column in the definition file', async () => {
    const error = await templateError('line one\nline two\n  ${{ nope }}', 7);
    expect(error.fields).toEqual({ file: '/defs/agent.md', line: 9, column: 7 });
    expect(error.message).toContain('unknown variable `nope`');
    expect(error.message).toContain('os_name');
  });

  it('reports an unknown tool with the tool names it knows', async () => {
    const error = await templateError('${%- if tools.bash %}x${%- endif %}', 3);
    expect(error.fields).toMatchObject({ line: 3, column: 9 });
    expect(error.message).toContain('tools.read_file, tools.run_terminal_cmd');
  });

  it('reports an unclosed tag at the tag', async () => {
    const error = await templateError('one\n\n${% if tools.read_file %}\nnever closed', 10);
    expect(error.fields).toMatchObject({ line: 12, column: 1 });
    expect(error.message).toContain('not closed');
  });

  it('reports an unclosed output at its start', async () => {
    const error = await templateError('one\ntwo ${{ os_name', 1);
    expect(error.fields).toMatchObject({ line: 2, column: 5 });
  });

  it('reports an unknown filter and an unknown tag', async () => {
    expect((await templateError('${{ os_name | shout }}', 4)).fields).toMatchObject({ line: 4 });
    expect((await templateError('\n${% frobnicate %}', 4)).fields).toMatchObject({ line: 5, column: 1 });
  });

  it('renders a mapping or a list as JSON; filters and loops still get the value itself', async () => {
    const settings = { acme: { list: [1, 2], nested: { a: 'say "hi"', b: [true] }, none: null } };
    const text = [
      '${{ settings.acme.list }}',
      '${{ settings.acme.nested }}',
      '${{ settings.acme.list | join: ", " }}',
      '${% for x in settings.acme.list %}${{ x }};${% endfor %}',
      '${{ settings.acme.nested.b | first }}',
      '${{ settings.acme.none }}',
      '${% echo settings.acme.list %}',
    ].join('|');
    const rendered = await renderTemplate({ text, file: '/defs/agent.md', firstLine: 1 }, { settings });
    expect(rendered).toBe('[1,2]|{"a":"say \\"hi\\"","b":[true]}|1, 2|1;2;|true||[1,2]');
  });

  it.each(['include', 'render', 'layout'])('refuses the file-reading `%s` tag', async (tag) => {
    const error = await templateError(`\${% ${tag} "secrets.txt" %}`, 2);
    expect(error.message).toContain(`\`${tag}\` tag is not available`);
    expect(error.fields).toMatchObject({ line: 2 });
  });
});
