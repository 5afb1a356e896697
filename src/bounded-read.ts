/**
 * Reading a file with a bound on its length that holds whatever the file does meanwhile. A size
 * from `stat` says nothing about what a later read returns: a file that grows between the two (a
 * log written to), or one whose `stat` says 0 bytes (`/proc` files), was read whole.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** What {@link readFileWithin} found. */
export type BoundedRead =
  | { readonly kind: 'file'; readonly bytes: Buffer }
  /** The file has more than `limit` bytes; at most `limit + 1` of them were read. */
  | { readonly kind: 'too_large' }
  /** Not a regular file: a directory, a device, a FIFO, a socket. */
  | { readonly kind: 'not_file'; readonly directory: boolean };

const CHUNK_BYTES = 64 * 1024;

/**
 * Reads at most `limit + 1` bytes of `file` from one open handle (so the check and the read are
 * of the same file), and says `too_large` when there are more than `limit`. Throws the I/O error
 * when the file cannot be opened or read. A FIFO is opened without waiting for a writer
 * (O_NONBLOCK) and reported as `not_file`, never read.
 */
export async function readFileWithin(file: string, limit: number): Promise<BoundedRead> {
  const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: 'not_file', directory: info.isDirectory() };
    // Sized by what stat says when that is within the bound; grown as needed, never past limit + 1.
    let buffer = Buffer.allocUnsafe(Math.min(limit + 1, Math.max(info.size + 1, CHUNK_BYTES)));
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > limit) return { kind: 'too_large' };
        const grown = Buffer.allocUnsafe(Math.min(limit + 1, buffer.length * 2));
        buffer.copy(grown, 0, 0, length);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > limit) return { kind: 'too_large' };
    return { kind: 'file', bytes: buffer.subarray(0, length) };
  } finally {
    await handle.close();
  }
}

/** What {@link readFilePrefix} found. */
export type PrefixRead =
  | {
      readonly kind: 'file';
      /** The first bytes of the file, at most the count asked for. */
      readonly bytes: Buffer;
      /**
       * The file's size: what `stat` said on the handle read, or the bytes read when more (a file
       * that grew, or one whose `stat` says 0).
       */
      readonly size: number;
    }
  /** Not a regular file: a directory, a device, a FIFO, a socket. */
  | { readonly kind: 'not_file'; readonly directory: boolean };

/**
 * Reads at most `count` bytes from the start of `file`, from one open handle, and the file's size
 * from the same handle: for a file that is shown cut, whose rest is never needed. Throws the I/O
 * error when the file cannot be opened or read. A FIFO is opened without waiting for a writer
 * (O_NONBLOCK) and reported as `not_file`, never read.
 */
export async function readFilePrefix(file: string, count: number): Promise<PrefixRead> {
  const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: 'not_file', directory: info.isDirectory() };
    const buffer = Buffer.allocUnsafe(Math.min(count, Math.max(info.size, CHUNK_BYTES)));
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    // A file whose stat said less (0 for /proc files) may hold more than the buffer sized by it.
    let bytes = buffer.subarray(0, length);
    if (length === buffer.length && length < count) {
      const rest = Buffer.allocUnsafe(count - length);
      let more = 0;
      while (more < rest.length) {
        const { bytesRead } = await handle.read(rest, more, rest.length - more, null);
        if (bytesRead === 0) break;
        more += bytesRead;
      }
      bytes = Buffer.concat([bytes, rest.subarray(0, more)]);
    }
    return { kind: 'file', bytes, size: Math.max(info.size, bytes.length) };
  } finally {
    await handle.close();
  }
}
