/**
 * What a blocked thread is running: its JavaScript call stack, taken through the inspector when
 * the thread stops answering heartbeats. A busy loop never yields to its event loop, but V8 still
 * serves inspector messages between statements (they arrive as interrupts), so `Debugger.pause`
 * stops it where it is and reports the frames. The stack names the code that held the thread: a
 * provider module, a tool module, troupe itself. Used for the thread death's cause (the frames are
 * in its fields) and to charge the death to the agent whose code it was (thread-engine.ts).
 *
 * The probe attaches to the one thread for a moment and detaches; nothing runs while threads are
 * healthy. A thread blocked outside JavaScript (a synchronous system call, `Atomics.wait`) cannot
 * be paused: the probe gives up after its timeout and the death is judged without a stack.
 */
import { readFile, stat } from 'node:fs/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../package-files.ts';

/** One frame of a probed stack, innermost first. */
export interface ProbedFrame {
  /** The function's name, `''` for an anonymous one. */
  readonly functionName: string;
  /** The script's URL as V8 knows it (`file:///...`, `node:internal/...`), `''` when it has none. */
  readonly url: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

const WORKER_TITLE = /^\[worker (\d+)\]/;

/** Frames kept from a probed stack. */
const MAX_FRAMES = 12;

/** Larger source maps are not read: the frame keeps its generated location. */
const MAX_SOURCE_MAP_BYTES = 50 * 1024 * 1024;

interface Script {
  readonly url: string;
  readonly sourceMapURL: string;
}

interface RawFrame {
  readonly functionName: string;
  readonly script: Script | undefined;
  readonly line: number;
  readonly column: number;
}

interface WorkerMessage {
  readonly id?: number;
  readonly method?: string;
  readonly params?: {
    readonly scriptId?: string;
    readonly url?: string;
    readonly sourceMapURL?: string;
    readonly callFrames?: readonly {
      readonly functionName: string;
      readonly location: {
        readonly scriptId: string;
        readonly lineNumber: number;
        readonly columnNumber?: number;
      };
    }[];
  };
}

/**
 * The call stack of the worker thread `threadId` (innermost frame first, at most 12), or undefined
 * when it could not be paused within `timeoutMs` or the inspector is not available. A frame in a
 * script with a source map (a bundle, compiled TypeScript) is given at its original source.
 */
export async function probeThreadStack(
  threadId: number,
  timeoutMs: number,
): Promise<ProbedFrame[] | undefined> {
  const frames = await pauseThread(threadId, timeoutMs);
  return frames === undefined ? undefined : Promise.all(frames.map(originalFrame));
}

async function pauseThread(threadId: number, timeoutMs: number): Promise<RawFrame[] | undefined> {
  let inspector: typeof import('node:inspector');
  try {
    inspector = await import('node:inspector');
  } catch {
    return undefined; // Node built without the inspector.
  }
  const session = new inspector.Session();
  try {
    session.connect();
  } catch {
    return undefined; // Another in-process session (or a policy) may forbid one.
  }
  let timer: NodeJS.Timeout | undefined;
  let sessionId: string | undefined;
  try {
    return await new Promise<RawFrame[] | undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      const scripts = new Map<string, Script>();
      session.on('NodeWorker.attachedToWorker', ({ params }) => {
        // The inspector numbers workers its own way; the title names the thread: `[worker <threadId>]`.
        if (WORKER_TITLE.exec(params.workerInfo.title)?.[1] !== String(threadId) || sessionId !== undefined)
          return;
        sessionId = params.sessionId;
        const send = (id: number, method: string): void =>
          session.post('NodeWorker.sendMessageToWorker', {
            sessionId: params.sessionId,
            message: JSON.stringify({ id, method }),
          });
        // Enabling the debugger reports every script it has (scriptParsed), so frames get URLs.
        send(1, 'Debugger.enable');
        send(2, 'Debugger.pause');
      });
      session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
        if (params.sessionId !== sessionId) return;
        let message: WorkerMessage;
        try {
          message = JSON.parse(params.message) as WorkerMessage;
        } catch {
          return;
        }
        const body = message.params;
        if (message.method === 'Debugger.scriptParsed' && body?.scriptId !== undefined)
          scripts.set(body.scriptId, { url: body.url ?? '', sourceMapURL: body.sourceMapURL ?? '' });
        else if (message.method === 'Debugger.paused' && body?.callFrames !== undefined) {
          resolve(
            body.callFrames.slice(0, MAX_FRAMES).map((frame) => ({
              functionName: frame.functionName,
              script: scripts.get(frame.location.scriptId),
              line: frame.location.lineNumber,
              column: frame.location.columnNumber ?? 0,
            })),
          );
        }
      });
      session.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, (error) => {
        if (error) resolve(undefined);
      });
    });
  } finally {
    clearTimeout(timer);
    // A paused thread stays paused (and cannot be terminated) until it is resumed and detached.
    if (sessionId !== undefined) {
      session.post('NodeWorker.sendMessageToWorker', {
        sessionId,
        message: JSON.stringify({ id: 3, method: 'Debugger.resume' }),
      });
      session.post('NodeWorker.detach', { sessionId });
    }
    session.post('NodeWorker.disable');
    session.disconnect();
  }
}

/** `frame` at its original source when its script has a readable source map, else as it ran. */
async function originalFrame(frame: RawFrame): Promise<ProbedFrame> {
  const url = frame.script?.url ?? '';
  const generated = { functionName: frame.functionName, url, line: frame.line + 1, column: frame.column + 1 };
  const mapURL = frame.script?.sourceMapURL ?? '';
  if (mapURL === '' || !url.startsWith('file:')) return generated;
  try {
    const mapFile = fileURLToPath(new URL(mapURL, url));
    if ((await stat(mapFile)).size > MAX_SOURCE_MAP_BYTES) return generated;
    const payload = JSON.parse(await readFile(mapFile, 'utf8')) as SourceMapPayload;
    const entry = new SourceMap(payload).findEntry(frame.line, frame.column) as {
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
    };
    if (entry.originalSource === undefined || entry.originalLine === undefined) return generated;
    return {
      functionName: frame.functionName,
      url: new URL(entry.originalSource, new URL(mapURL, url)).href,
      line: entry.originalLine + 1,
      column: (entry.originalColumn ?? 0) + 1,
    };
  } catch {
    return generated; // A map that is missing, unreadable or not JSON: the generated location.
  }
}

/** `name (url:line:column)`, as a stack trace prints a frame. */
export function formatFrame(frame: ProbedFrame): string {
  return `${frame.functionName === '' ? '<anonymous>' : frame.functionName} (${frame.url}:${frame.line}:${frame.column})`;
}

/**
 * The file of the innermost frame that is neither troupe's own code nor Node's: the user code
 * (a provider or tool module, or a package it uses) that held the thread. Undefined when every
 * frame is troupe's or Node's.
 */
export function culpritFile(frames: readonly ProbedFrame[]): string | undefined {
  for (const frame of frames) {
    const file = fileOf(frame.url);
    if (file === undefined) continue;
    if (
      file === PACKAGE_ROOT ||
      file.startsWith(`${PACKAGE_ROOT}/`) ||
      file.startsWith(`${PACKAGE_ROOT}\\`)
    ) {
      // troupe's own code, unless it is a user's module kept inside troupe's folder (examples, tests).
      const inside = file.slice(PACKAGE_ROOT.length + 1).replace(/\\/g, '/');
      if (/^(?:dist\/)?(?:src|workers)\//.test(inside) || inside.startsWith('node_modules/')) continue;
    }
    return file;
  }
  return undefined;
}

/** The file path of a script URL (`file:` URLs and absolute paths); undefined for others. */
export function fileOf(url: string): string | undefined {
  if (url.startsWith('file:')) {
    try {
      return fileURLToPath(url);
    } catch {
      return undefined;
    }
  }
  return url.startsWith('/') || /^[A-Za-z]:[\\/]/.test(url) ? url : undefined;
}
