/**
 * What the terminal the live display draws on may be sent, from the conventions every terminal
 * program follows: `NO_COLOR` (any non-empty value, no-color.org) and `FORCE_COLOR=0` turn colours
 * off; `TERM=dumb` (Emacs `M-x shell`, log viewers that fake a terminal) shows escape sequences as
 * text, so it gets no colours and no cursor movement either: plain lines, as off a terminal.
 */

/** What a terminal may be sent. */
export interface TerminalAbilities {
  /** SGR colour and weight sequences. */
  readonly colour: boolean;
  /** Cursor movement and erasing, which the redrawn status block needs. */
  readonly cursor: boolean;
}

/** What the terminal described by `env` may be sent. */
export function terminalAbilities(env: NodeJS.ProcessEnv = process.env): TerminalAbilities {
  const cursor = env.TERM !== 'dumb';
  const forcedOff = env.FORCE_COLOR === '0' || env.FORCE_COLOR === 'false';
  return { cursor, colour: cursor && !forcedOff && (env.NO_COLOR ?? '') === '' };
}

/** The SGR sequences the live display writes; all empty when the terminal takes no colour. */
export interface Palette {
  readonly green: string;
  readonly red: string;
  readonly yellow: string;
  readonly dim: string;
  readonly bold: string;
  readonly reset: string;
}

const COLOURS: Palette = {
  green: '\x1b[32m',
  red: '\x1b[31m',
  yellow: '\x1b[33m',
  dim: '\x1b[2m',
  bold: '\x1b[1m',
  reset: '\x1b[0m',
};

const NO_COLOURS: Palette = { green: '', red: '', yellow: '', dim: '', bold: '', reset: '' };

/** The palette for a terminal that does (or does not) take colours. */
export function palette(colour: boolean): Palette {
  return colour ? COLOURS : NO_COLOURS;
}
