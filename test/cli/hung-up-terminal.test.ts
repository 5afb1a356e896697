/**
 * The terminal stdout was on goes away (a closed window, a dropped ssh session) during a run: the
 * next write fails with EIO. The SIGHUP that comes with it cancels the run like Ctrl-C (summary
 * written, exit 129); the EIO must not crash the process first with an uncaught `write EIO`, which
 * lost summary.json and left the agents' journals without an end.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { processIO } from '../../src/cli/main.ts';

/** A stream whose writes are recorded and whose errors the test raises, as a tty's arrive. */
function fakeStream() {
  const written: string[] = [];
  const stream = Object.assign(new EventEmitter(), {
    write: (text: string | Uint8Array) => {
      written.push(String(text));
      return true;
    },
  });
  const fail = (code: string) => stream.emit('error', Object.assign(new Error(`write ${code}`), { code }));
  return { stream, written, fail };
}

describe('stdout on a terminal that hung up', () => {
  it('EIO stops the output quietly and leaves the run to the SIGHUP (no uncaught error, no "stdout closed")', () => {
    const out = fakeStream();
    const err = fakeStream();
    const io = processIO(out.stream, err.stream);
    io.stdout('frame 1\n');
    expect(() => out.fail('EIO')).not.toThrow();
    io.stdout('frame 2\n');
    expect(out.written).toEqual(['frame 1\n']);
    // Not a reader that went away (EPIPE: exit 0): the signal's exit code (129) stands.
    expect(io.stdoutClosed?.aborted).toBe(false);
  });

  it('EPIPE still means the reader went away, and other errors are still thrown', () => {
    const piped = fakeStream();
    const io = processIO(piped.stream, fakeStream().stream);
    piped.fail('EPIPE');
    expect(io.stdoutClosed?.aborted).toBe(true);
    const other = fakeStream();
    processIO(other.stream, fakeStream().stream);
    expect(() => other.fail('ENOSPC')).toThrow('write ENOSPC');
  });
});
