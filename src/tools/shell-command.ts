/**
 * Just enough shell syntax to check a command line against permission rules: where one simple
 * command ends and the next begins (`;`, `&&`, `||`, `|`, `&`, newlines, parentheses), which parts
 * are quoted, and which constructs run text the rules cannot see (`$(...)`, backticks, `<(...)`).
 *
 * It is deliberately not a shell parser (quoting is tracked, nothing is expanded): allow rules only
 * accept what this reader fully understands, and deny rules are checked against every piece it
 * finds, including the insides of substitutions and the command behind wrappers such as `timeout`.
 * Text handed to another interpreter (`bash -c "..."`, `eval`) or a command word made at run time
 * (`$cmd x`) is out of its reach: {@link hidesCommand} finds those, and deny and ask rules match
 * them (they fail closed). A script file (`bash build.sh`), `find -delete` and `xargs` input are
 * out of its reach too; docs/permissions.md says so.
 */

/** A command line cut into simple commands. */
export interface ShellCommandLine {
  /** Each simple command, whitespace outside quotes collapsed to one space. */
  readonly commands: readonly string[];
  /** The text inside `$(...)`, backticks, `<(...)` and `>(...)`, each cut into simple commands too. */
  readonly substituted: readonly string[];
  /** Output redirections other than to `/dev/null` or between descriptors, as written (`> out.txt`). */
  readonly fileRedirections: readonly string[];
  /** Quotes or a substitution left open: the line cannot be read reliably. */
  readonly unterminated: boolean;
}

/** Reads `line` (see the module comment for what is and is not understood). */
export function readCommandLine(line: string): ShellCommandLine {
  const commands: string[] = [];
  const substituted: string[] = [];
  const redirections: string[] = [];
  let current = '';
  let pendingSpace = false;
  let unterminated = false;
  const push = (): void => {
    const command = stripGrouping(current.trim());
    if (command !== '') commands.push(command);
    current = '';
    pendingSpace = false;
  };
  const append = (text: string): void => {
    if (pendingSpace && current !== '') current += ' ';
    pendingSpace = false;
    current += text;
  };
  const substitution = (body: string | undefined): void => {
    if (body === undefined) {
      unterminated = true;
      return;
    }
    const inner = readCommandLine(body);
    substituted.push(...inner.commands, ...inner.substituted);
    redirections.push(...inner.fileRedirections);
    if (inner.unterminated) unterminated = true;
  };

  let i = 0;
  while (i < line.length) {
    const char = line[i] ?? '';
    const next = line[i + 1] ?? '';
    if (char === '\\') {
      append(line.slice(i, i + 2));
      i += 2;
      continue;
    }
    if (char === "'") {
      const end = line.indexOf("'", i + 1);
      if (end === -1) {
        unterminated = true;
        append(line.slice(i));
        break;
      }
      append(line.slice(i, end + 1));
      i = end + 1;
      continue;
    }
    if (char === '"') {
      const end = closingDoubleQuote(line, i + 1, substitution);
      if (end === -1) {
        unterminated = true;
        append(line.slice(i));
        break;
      }
      append(line.slice(i, end + 1));
      i = end + 1;
      continue;
    }
    if (char === '`') {
      const end = line.indexOf('`', i + 1);
      substitution(end === -1 ? undefined : line.slice(i + 1, end));
      append(end === -1 ? line.slice(i) : line.slice(i, end + 1));
      if (end === -1) break;
      i = end + 1;
      continue;
    }
    if ((char === '$' || char === '<' || char === '>') && next === '(') {
      const end = closingParen(line, i + 2);
      substitution(end === -1 ? undefined : line.slice(i + 2, end));
      append(end === -1 ? line.slice(i) : line.slice(i, end + 1));
      if (end === -1) break;
      i = end + 1;
      continue;
    }
    if (char === ' ' || char === '\t') {
      pendingSpace = true;
      i += 1;
      continue;
    }
    if (char === '\n' || char === ';' || char === '(' || char === ')') {
      push();
      i += 1;
      continue;
    }
    if (char === '&' && next === '&') {
      push();
      i += 2;
      continue;
    }
    if (char === '|') {
      push();
      i += next === '|' || next === '&' ? 2 : 1;
      continue;
    }
    if (char === '>' || char === '<' || (char === '&' && next === '>')) {
      const redirection = readRedirection(line, i);
      if (redirection.kind === 'harmless') {
        // `2>&1`, `>/dev/null`: left out of the matched text, with the descriptor number before it.
        current = current.replace(/(^|\s)\d+$/, '$1');
      } else {
        if (redirection.kind === 'write') redirections.push(redirection.text.trim());
        append(redirection.text.trim());
      }
      i = redirection.end;
      continue;
    }
    if (char === '&') {
      push();
      i += 1;
      continue;
    }
    append(char);
    i += 1;
  }
  push();
  return { commands, substituted, fileRedirections: redirections, unterminated };
}

/** Drops `{` and `}` grouping words around a command (`{ rm x` -> `rm x`). */
function stripGrouping(command: string): string {
  return command.replace(/^\{\s+/, '').replace(/(?:^|\s+)\}$/, '');
}

/** Index of the `"` closing a double-quoted string opened before `from`, or -1. */
function closingDoubleQuote(
  line: string,
  from: number,
  substitution: (body: string | undefined) => void,
): number {
  let i = from;
  while (i < line.length) {
    const char = line[i];
    if (char === '\\') {
      i += 2;
      continue;
    }
    if (char === '"') return i;
    if (char === '`') {
      const end = line.indexOf('`', i + 1);
      substitution(end === -1 ? undefined : line.slice(i + 1, end));
      if (end === -1) return -1;
      i = end + 1;
      continue;
    }
    if (char === '$' && line[i + 1] === '(') {
      const end = closingParen(line, i + 2);
      substitution(end === -1 ? undefined : line.slice(i + 2, end));
      if (end === -1) return -1;
      i = end + 1;
      continue;
    }
    i += 1;
  }
  return -1;
}

/** Index of the `)` closing a parenthesis opened before `from` (quotes respected), or -1. */
function closingParen(line: string, from: number): number {
  let depth = 1;
  let i = from;
  while (i < line.length) {
    const char = line[i];
    if (char === '\\') {
      i += 2;
      continue;
    }
    if (char === "'") {
      const end = line.indexOf("'", i + 1);
      if (end === -1) return -1;
      i = end + 1;
      continue;
    }
    if (char === '"') {
      const end = closingDoubleQuote(line, i + 1, () => {});
      if (end === -1) return -1;
      i = end + 1;
      continue;
    }
    if (char === '(') depth += 1;
    if (char === ')') {
      depth -= 1;
      if (depth === 0) return i;
    }
    i += 1;
  }
  return -1;
}

const HARMLESS_TARGET = /^(?:&\d*-?|\/dev\/null)$/;

/**
 * A redirection starting at `start` (`>`, `>>`, `<`, `&>`, `>&2`, with its target word).
 * Redirections to `/dev/null` and between descriptors (`2>&1`) change no file (`harmless`); input
 * redirections only read (`read`); the rest write a file (`write`).
 */
function readRedirection(
  line: string,
  start: number,
): { text: string; end: number; kind: 'harmless' | 'read' | 'write' } {
  let i = start;
  while (i < line.length && '<>&|'.includes(line[i] ?? '')) {
    if (line[i] === '&' && i > start && !/\d|-/.test(line[i + 1] ?? '')) break;
    i += 1;
  }
  const operator = line.slice(start, i);
  while (line[i] === ' ' || line[i] === '\t') i += 1;
  const targetStart = i;
  while (i < line.length && !' \t\n;&|()<>'.includes(line[i] ?? '')) i += 1;
  if (operator.endsWith('&') && /^\d*-?$/.test(line.slice(targetStart, i))) {
    return { text: line.slice(start, i), end: i, kind: 'harmless' };
  }
  const target = (operator.endsWith('&') ? '&' : '') + line.slice(targetStart, i);
  const kind = operator.startsWith('<') ? 'read' : HARMLESS_TARGET.test(target) ? 'harmless' : 'write';
  return { text: ` ${operator} ${line.slice(targetStart, i)} `, end: i, kind };
}

/**
 * Whether a simple command matches a Claude Code Bash pattern: `git diff` (exactly), `git diff:*`
 * or `git diff *` (the command or the command followed by arguments: a word boundary), `npm*` (any
 * text after `npm`), and `*` anywhere for any text (`git * main`).
 */
export function commandMatchesPattern(command: string, pattern: string): boolean {
  return compilePattern(pattern).test(command);
}

const compiled = new Map<string, RegExp>();

function compilePattern(pattern: string): RegExp {
  let regex = compiled.get(pattern);
  if (regex) return regex;
  let text = pattern.trim().replaceAll(/\s+/g, ' ');
  let boundaryTail = false;
  if (text.endsWith(':*')) {
    text = text.slice(0, -2).trimEnd();
    boundaryTail = true;
  } else if (text.endsWith(' *')) {
    text = text.slice(0, -2);
    boundaryTail = true;
  }
  const body = text
    .split('*')
    .map((part) => part.replaceAll(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  regex = new RegExp(`^${body}${boundaryTail ? '(?: .*)?' : ''}$`, 's');
  if (compiled.size > 1000) compiled.clear();
  compiled.set(pattern, regex);
  return regex;
}

/** Commands that run the rest of their arguments as a command; deny rules look behind them. */
const WRAPPERS = new Set([
  'timeout',
  'nice',
  'nohup',
  'time',
  'command',
  'exec',
  'env',
  'stdbuf',
  'sudo',
  'xargs',
  'builtin',
  'ionice',
  'setsid',
  'chrt',
  'taskset',
  'doas',
]);

/** Options of a wrapper that take a value in the next word (`timeout -s KILL 5 rm x`, `sudo -u root rm x`). */
const WRAPPER_VALUE_OPTIONS: Readonly<Record<string, string>> = {
  timeout: 'sk',
  sudo: 'ugCDprtU',
  env: 'uC',
  stdbuf: 'ioe',
  xargs: 'ILPdEasn',
  exec: 'a',
  ionice: 'cnp',
  doas: 'uC',
};

/**
 * Reserved words that may begin a simple command as this reader cuts a line (`if x; then rm y; fi`
 * gives `then rm y`): the command after them runs.
 */
const RESERVED_WORDS = new Set(['if', 'then', 'else', 'elif', 'while', 'until', 'do', '!', 'coproc']);

/**
 * A word without its quotes and backslashes (`'rm'`, `\rm`, `r""m`, `$'\x72m'` -> `rm`), as bash
 * runs it.
 */
function unquoteWord(word: string): string {
  return word.replaceAll(
    /\\(.)|\$'((?:[^'\\]|\\.)*)'|'([^']*)'|\$?"((?:[^"\\]|\\.)*)"/gs,
    (_whole, escaped, ansi, single, double) =>
      escaped ??
      (ansi === undefined ? undefined : ansiCString(ansi)) ??
      single ??
      String(double).replaceAll(/\\([$`"\\])/g, '$1'),
  );
}

const ANSI_C_ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  v: '\v',
};

/** The text of an ANSI-C quoted string `$'...'` with its escapes decoded (`\x72\155` -> `rm`). */
function ansiCString(body: string): string {
  return body.replaceAll(
    /\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)/gs,
    (_whole, sequence: string) => {
      const first = sequence[0] ?? '';
      if (first === 'x' || first === 'u' || first === 'U') {
        const code = Number.parseInt(sequence.slice(1), 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : '';
      }
      if (/[0-7]/.test(first)) return String.fromCharCode(Number.parseInt(sequence, 8));
      return ANSI_C_ESCAPES[first] ?? sequence;
    },
  );
}

/**
 * The line as written and as bash reads it before it splits words, for deny rules: line
 * continuations (backslash-newline) removed (`r\<newline>m` is `rm`) and `$IFS` taken as the space
 * it holds by default (`rm${IFS}-rf` is `rm -rf`). A deny rule is checked against every variant.
 */
export function denyVariants(line: string): string[] {
  const joined = line.replaceAll('\\\n', '');
  const spaced = joined.replaceAll(/\$\{IFS\}|\$IFS(?![A-Za-z0-9_])/g, ' ');
  return [...new Set([line, joined, spaced])];
}

/** A wrapper's name as run: unquoted, without its path (`/usr/bin/timeout` -> `timeout`). */
function wrapperName(word: string): string {
  const name = unquoteWord(word);
  return name.slice(name.lastIndexOf('/') + 1);
}

/** Interpreters that run a string given to them as a command line (with `-c`). */
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'fish']);

/**
 * Programs that run code or commands handed to them (interpreters, wrappers, `find -exec`, `awk`'s
 * `system()`): a remembered approval of such a program's prefix would approve anything.
 */
const RUNS_GIVEN_CODE = new Set([
  'eval',
  'source',
  '.',
  'python',
  'python2',
  'python3',
  'node',
  'nodejs',
  'deno',
  'bun',
  'perl',
  'ruby',
  'php',
  'lua',
  'Rscript',
  'tclsh',
  'osascript',
  'pwsh',
  'powershell',
  'npx',
  'pnpx',
  'bunx',
  'uvx',
  'awk',
  'gawk',
  'mawk',
  'nawk',
  'sed',
  'find',
  'ssh',
  'watch',
  'parallel',
]);

/** Whether the program `name` runs code or a command given to it (a shell, a wrapper, an interpreter). */
export function runsGivenCode(name: string): boolean {
  return SHELLS.has(name) || WRAPPERS.has(name) || RUNS_GIVEN_CODE.has(name);
}

/**
 * Whether a simple command runs a command this reader cannot see: its command word is made at run
 * time (`$cmd x`, `` `which rm` x ``), it is `eval` or `source`, or a shell given a command string
 * (`bash -c "..."`, `sh -ec '...'`). Deny and ask rules match such a command whatever they name.
 */
export function hidesCommand(command: string): boolean {
  return denyForms(command).some((form) => {
    const [first = '', ...rest] = form.split(' ');
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(first)) return false; // `A=$x cmd`: its later form is read.
    const name = first.slice(first.lastIndexOf('/') + 1);
    if (/[$`]/.test(first) || name === 'eval' || name === 'source' || name === '.') return true;
    return SHELLS.has(name) && rest.some((word) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(word));
  });
}

/**
 * The forms of a simple command a deny rule should see: the command itself, without leading
 * `NAME=value` assignments and reserved words (`then rm x` -> `rm x`), with its command word
 * unquoted (`'rm' x` -> `rm x`), and the command behind wrappers (`timeout 5 rm x` -> `rm x`).
 */
export function denyForms(command: string): string[] {
  const forms = new Set([command]);
  let words = command.split(' ');
  const addUnquoted = (): void => {
    const [first, ...rest] = words;
    if (first === undefined) return;
    const name = unquoteWord(first);
    forms.add([name, ...rest].join(' '));
    // A command run by its path (`/bin/rm x`, `./node_modules/.bin/rm x`) is also seen by its name.
    const base = name.slice(name.lastIndexOf('/') + 1);
    if (base !== name && base !== '') forms.add([base, ...rest].join(' '));
  };
  addUnquoted();
  for (let guard = 0; guard < 16 && words.length > 0; guard += 1) {
    const first = words[0] ?? '';
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(first) || RESERVED_WORDS.has(first)) {
      words = words.slice(1);
    } else if (WRAPPERS.has(wrapperName(first))) {
      const valueOptions = WRAPPER_VALUE_OPTIONS[wrapperName(first)] ?? '';
      words = words.slice(1);
      // Options and durations of the wrapper (`-n 10`, `-s KILL`, `5s`, `-k`), up to the wrapped command.
      while (words.length > 0 && /^(?:-|\d)/.test(words[0] ?? '')) {
        const option = words[0] ?? '';
        words = words.slice(1);
        const split = wrapperName(first) === 'env' ? /^(?:-S|--split-string=?)(.*)$/s.exec(option) : null;
        if (split) {
          // `env -S 'rm -rf x'` splits the string it is given into a command and runs it.
          const text = unquoteWord([split[1] ?? '', ...words].join(' ').trim());
          for (const inner of readCommandLine(text).commands) {
            for (const form of denyForms(inner)) forms.add(form);
          }
          words = [];
          break;
        }
        const letter = /^-([a-zA-Z])$/.exec(option)?.[1];
        if (letter !== undefined && (valueOptions.includes(letter) || /^\d/.test(words[0] ?? ''))) {
          words = words.slice(1);
        }
      }
    } else {
      break;
    }
    if (words.length > 0) {
      forms.add(words.join(' '));
      addUnquoted();
    }
  }
  return [...forms];
}
