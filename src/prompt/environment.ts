/** What the prompt tells the model about the machine it works on. */
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Facts about the environment, as shown in `<user_info>` and the template variables. */
export interface PromptEnvironment {
  /** e.g. `Linux 6.8.0-45-generic`, `macOS 23.6.0`. */
  readonly osName: string;
  /** The shell `run_terminal_cmd` runs commands in. */
  readonly shellPath: string;
}

let detected: PromptEnvironment | undefined;

/** Detects the OS and the bash that `run_terminal_cmd` will run (first `bash` on PATH). */
export function detectEnvironment(): PromptEnvironment {
  detected ??= { osName: describeOs(), shellPath: findOnPath('bash') ?? 'bash' };
  return detected;
}

function describeOs(): string {
  const names: Record<string, string> = { darwin: 'macOS', linux: 'Linux', win32: 'Windows' };
  return `${names[process.platform] ?? os.type()} ${os.release()}`;
}

function findOnPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** `now` as YYYY-MM-DD in the local time zone. */
export function localDate(now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}
