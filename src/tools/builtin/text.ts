/** Small text helpers shared by the file tools. */
import { BINARY_SNIFF_BYTES } from '../constants.ts';

/** A NUL byte near the start is the usual sign of a binary file (git and grep use the same test). */
export function isBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** The file's lines without their terminators (`\n` or `\r\n`); no phantom line after a final newline. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}
