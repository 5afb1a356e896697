import type { Command } from 'commander';
import type { CliIO } from './main.ts';

/** Placeholder until the definitions loader lands. */
export function register(_program: Command, _io: CliIO, _setExit: (code: number) => void): void {}
