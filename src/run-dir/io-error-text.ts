/** File-system errors said in words, for the messages of the CLI's commands. */

const WHY: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exceeded',
  ELOOP: 'a symlink loop',
  ENAMETOOLONG: 'the name is too long',
  EMFILE: 'too many open files',
  EEXIST: 'it already exists',
};

/**
 * Why a file operation failed, in words (`no such file or directory`): not `String(error)`, which
 * printed `Error: ENOENT: no such file or directory, open '/x/plan.yaml'` after the path the
 * message had already named. An error with no known code says its own message.
 */
export function ioErrorText(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && Object.hasOwn(WHY, code)) return WHY[code] ?? code;
  if (error instanceof Error) return error.message;
  return String(error);
}
