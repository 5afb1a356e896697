import type { Command } from 'commander';
import type { CliIO } from './main.ts';

/** Placeholder: registers nothing until the `resume` subcommand lands. */
export function register(_program: Command, _io: CliIO, _setExit: (code: number) => void): void {}
