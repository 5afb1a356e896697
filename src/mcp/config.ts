/**
 * MCP server declarations in Claude Code's format, wherever they are written: a definition's
 * `mcpServers`, `.mcp.json` at the project root, the Supervisor's `mcpServers` option, a plan file.
 *
 * ```json
 * { "mcpServers": {
 *     "everything": { "command": "npx", "args": ["@modelcontextprotocol/server-everything"], "env": {} },
 *     "docs": { "type": "http", "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } } } }
 * ```
 *
 * `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`, `url` and `headers` are expanded from
 * the environment of the process that starts the connection, when it starts it: secrets stay out
 * of definitions, plans and journals.
 */
import path from 'node:path';
import { readFileWithin } from '../bounded-read.ts';
import { describeValue, UserError } from '../errors.ts';
import { registerSecretValues, SECRET_KEY_PATTERN } from '../journal/redact.ts';
import {
  MCP_CONFIG_BYTE_LIMIT,
  MCP_MAX_MESSAGE_BYTES_CEILING,
  MCP_SERVER_NAME_PATTERN,
} from './constants.ts';

/** A server started as a child process that speaks MCP over its stdin and stdout. */
export interface McpStdioServer {
  readonly type: 'stdio';
  readonly command: string;
  readonly args: readonly string[];
  /** Added to the inherited environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of the process. @default the agent's working directory */
  readonly cwd?: string;
  /**
   * Bytes one message from this server may have; a longer answer fails its call (the server goes
   * on). At most MCP_MAX_MESSAGE_BYTES_CEILING. @default the connection's (MCP_STDIO_MAX_MESSAGE_BYTES)
   */
  readonly maxMessageBytes?: number;
}

/** A server reached over HTTP: Streamable HTTP (`http`), or the older HTTP+SSE transport (`sse`). */
export interface McpHttpServer {
  readonly type: 'http' | 'sse';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Bytes one message from this server may have (a JSON body, or one server-sent event); a longer
   * JSON answer fails its call, a longer event ends the session. At most MCP_MAX_MESSAGE_BYTES_CEILING.
   * @default the connection's (MCP_STDIO_MAX_MESSAGE_BYTES)
   */
  readonly maxMessageBytes?: number;
}

/** One MCP server's connection settings. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/** MCP servers by name. */
export type McpServers = Readonly<Record<string, McpServerConfig>>;

/**
 * An entry of a definition's `mcpServers`: the name of a server configured elsewhere (`.mcp.json`,
 * the supervisor), or a server of its own.
 */
export type McpServerRef = string | { readonly name: string; readonly config: McpServerConfig };

/** A problem found in a declaration: what is wrong and where (a path below the declaration). */
export interface McpConfigProblem {
  readonly message: string;
  readonly path: readonly (string | number)[];
}

const STDIO_KEYS = ['type', 'command', 'args', 'env', 'cwd', 'maxMessageBytes'];
const HTTP_KEYS = ['type', 'url', 'headers', 'maxMessageBytes'];
/**
 * Keys other MCP clients write in the same file (Cline, Cursor, VS Code extensions): read past, so
 * an `.mcp.json` shared with them works. `disabled: true` leaves the server out.
 */
const OTHER_CLIENTS_KEYS = ['disabled', 'timeout', 'autoApprove', 'alwaysAllow', 'description'];

/**
 * Reads one server's settings. Unknown keys are problems too: a misspelt `args` must not be lost.
 * A server marked `disabled: true` (as other MCP clients write it) is `{ disabled: true }`.
 */
export function readMcpServerConfig(
  value: unknown,
):
  | { readonly config: McpServerConfig }
  | { readonly problem: McpConfigProblem }
  | { readonly disabled: true } {
  const fail = (message: string, at: (string | number)[] = []) => ({ problem: { message, path: at } });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(`Expected an MCP server's settings (\`command\` or \`url\`), got ${describeValue(value)}`);
  }
  const object = value as Record<string, unknown>;
  const type = object.type ?? (object.url === undefined ? 'stdio' : 'http');
  if (type !== 'stdio' && type !== 'http' && type !== 'sse' && type !== 'streamable-http') {
    return fail(`Expected \`type\` to be \`stdio\`, \`http\` or \`sse\`, got ${describeValue(type)}`, [
      'type',
    ]);
  }
  const allowed = type === 'stdio' ? STDIO_KEYS : HTTP_KEYS;
  const unknown = Object.keys(object).find(
    (key) => !allowed.includes(key) && !OTHER_CLIENTS_KEYS.includes(key),
  );
  if (unknown !== undefined) {
    return fail(
      `Unknown key \`${unknown}\` for a ${type} MCP server (expected ${allowed.join(', ')}; ${OTHER_CLIENTS_KEYS.join(', ')} of other clients are read past)`,
      [unknown],
    );
  }
  if (object.disabled === true) return { disabled: true };
  const max = object.maxMessageBytes;
  if (
    max !== undefined &&
    (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MCP_MAX_MESSAGE_BYTES_CEILING)
  ) {
    return fail(
      `Expected \`maxMessageBytes\` to be an integer from 1 to ${MCP_MAX_MESSAGE_BYTES_CEILING}, got ${describeValue(max)}`,
      ['maxMessageBytes'],
    );
  }
  const bound = max === undefined ? {} : { maxMessageBytes: max };
  if (type === 'stdio') {
    if (typeof object.command !== 'string' || object.command.trim() === '') {
      return fail(`Expected \`command\` to be the program to start, got ${describeValue(object.command)}`, [
        'command',
      ]);
    }
    const args = object.args ?? [];
    if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string')) {
      return fail(`Expected \`args\` to be a list of strings, got ${describeValue(args)}`, ['args']);
    }
    const env = readStringMap(object.env, 'env');
    if ('problem' in env) return env;
    if (object.cwd !== undefined && typeof object.cwd !== 'string') {
      return fail(`Expected \`cwd\` to be a directory, got ${describeValue(object.cwd)}`, ['cwd']);
    }
    return {
      config: {
        type: 'stdio',
        command: object.command,
        args: args as string[],
        env: env.map,
        ...(typeof object.cwd === 'string' ? { cwd: object.cwd } : {}),
        ...bound,
      },
    };
  }
  if (typeof object.url !== 'string' || !/^(?:https?:\/\/|\$\{)/.test(object.url)) {
    return fail(`Expected \`url\` to be an http(s) URL, got ${describeValue(object.url)}`, ['url']);
  }
  const headers = readStringMap(object.headers, 'headers');
  if ('problem' in headers) return headers;
  return {
    config: { type: type === 'sse' ? 'sse' : 'http', url: object.url, headers: headers.map, ...bound },
  };
}

function readStringMap(
  value: unknown,
  key: string,
): { readonly map: Record<string, string> } | { readonly problem: McpConfigProblem } {
  if (value === undefined || value === null) return { map: {} };
  const ok =
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.values(value as object).every((item) => typeof item === 'string');
  if (!ok) {
    return {
      problem: {
        message: `Expected \`${key}\` to map names to strings, got ${describeValue(value)}`,
        path: [key],
      },
    };
  }
  return { map: { ...(value as Record<string, string>) } };
}

/** Whether `name` can be an MCP server name (it becomes part of tool names: `mcp__<name>__<tool>`). */
export function isMcpServerName(name: string): boolean {
  return MCP_SERVER_NAME_PATTERN.test(name);
}

/**
 * Reads a `{ name: settings }` map (`.mcp.json`'s `mcpServers`, the supervisor option). Servers
 * with problems are left out and reported.
 */
export function readMcpServerMap(value: unknown): {
  readonly servers: McpServers;
  readonly problems: readonly McpConfigProblem[];
} {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      servers: {},
      problems: [
        { message: `Expected a map of server names to settings, got ${describeValue(value)}`, path: [] },
      ],
    };
  }
  const servers: Record<string, McpServerConfig> = {};
  const problems: McpConfigProblem[] = [];
  for (const [name, settings] of Object.entries(value)) {
    if (!isMcpServerName(name)) {
      problems.push({
        message: `Expected a server name of letters, digits, \`_\` or \`-\`, got ${JSON.stringify(name)}`,
        path: [name],
      });
      continue;
    }
    const read = readMcpServerConfig(settings);
    if ('problem' in read) problems.push({ ...read.problem, path: [name, ...read.problem.path] });
    else if ('config' in read) servers[name] = read.config;
  }
  return { servers, problems };
}

/** What {@link loadProjectMcpFile} found. */
export interface ProjectMcpFile {
  /** The file read, or undefined when there is none. */
  readonly file: string | undefined;
  readonly servers: McpServers;
  readonly problems: readonly McpConfigProblem[];
}

/** Reads `.mcp.json` in `projectRoot`; a missing file is no servers and no problem. */
export async function loadProjectMcpFile(projectRoot: string): Promise<ProjectMcpFile> {
  const file = path.join(projectRoot, '.mcp.json');
  let text: string;
  try {
    const read = await readFileWithin(file, MCP_CONFIG_BYTE_LIMIT);
    if (read.kind !== 'file') {
      const found = read.kind === 'too_large' ? 'more' : read.directory ? 'a directory' : 'no regular file';
      return {
        file,
        servers: {},
        problems: [
          { message: `Expected a file of at most ${MCP_CONFIG_BYTE_LIMIT} bytes, found ${found}`, path: [] },
        ],
      };
    }
    text = read.bytes.toString('utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { file: undefined, servers: {}, problems: [] };
    return {
      file,
      servers: {},
      problems: [{ message: `Could not read ${file}: ${String(error)}`, path: [] }],
    };
  }
  // Some editors save a byte order mark, which JSON.parse refuses.
  const json = parseJsonText(text.startsWith('\uFEFF') ? text.slice(1) : text);
  if ('problem' in json) return { file, servers: {}, problems: [{ message: json.problem, path: [] }] };
  const map = (json.value as { mcpServers?: unknown } | null)?.mcpServers;
  if (map === undefined) return { file, servers: {}, problems: [] };
  const read = readMcpServerMap(map);
  return {
    file,
    servers: read.servers,
    problems: read.problems.map((p) => ({ ...p, path: ['mcpServers', ...p.path] })),
  };
}

/** JSON text parsed, or what is wrong with it, located at its line and column when JSON.parse says where. */
function parseJsonText(text: string): { readonly value: unknown } | { readonly problem: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    const message = (error as Error).message;
    const offset = /at position (\d+)/.exec(message)?.[1];
    if (offset === undefined) return { problem: `Expected JSON: ${message}` };
    const before = text.slice(0, Number(offset));
    const line = before.split('\n').length;
    const column = Number(offset) - before.lastIndexOf('\n');
    return {
      problem: `Expected JSON: ${message.replace(/ in JSON at position \d+.*$/s, '')} at line ${line}, column ${column}`,
    };
  }
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Expands `${VAR}` and `${VAR:-default}` in every string of a server's settings, as a shell does:
 * `${VAR}` is the variable's value, empty included; `${VAR:-default}` is the default when the
 * variable is unset or empty. Unset variables without a default are listed in `missing` (and
 * expand to nothing).
 */
/**
 * An `mcpServers` option (the Supervisor's, `runAgent`'s) read as a `.mcp.json` map is read:
 * `{ command, args }` without `type` or `env` is a stdio server. Throws UserError `invalid_option`
 * (field `option`: `mcpServers.<name>...`) for the first entry that does not read.
 */
export function mcpServersOption(value: unknown): McpServers {
  const read = readMcpServerMap(value);
  const problem = read.problems[0];
  if (problem) {
    const option = ['mcpServers', ...problem.path].join('.');
    throw new UserError('invalid_option', `\`${option}\`: ${problem.message}`, { option });
  }
  return read.servers;
}

export function expandMcpServerConfig(
  config: McpServerConfig,
  env: Readonly<Record<string, string | undefined>>,
): { readonly config: McpServerConfig; readonly missing: readonly string[] } {
  const missing = new Set<string>();
  const expand = (text: string): string =>
    text.replaceAll(VARIABLE, (_whole, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
      if (value !== undefined) return value;
      missing.add(name);
      return '';
    });
  const map = (record: Readonly<Record<string, string>>) =>
    Object.fromEntries(Object.entries(record).map(([key, value]) => [key, expand(value)]));
  const expanded: McpServerConfig =
    config.type === 'stdio'
      ? {
          ...config,
          command: expand(config.command),
          args: config.args.map(expand),
          env: map(config.env),
          ...(config.cwd === undefined ? {} : { cwd: expand(config.cwd) }),
        }
      : { ...config, url: expand(config.url), headers: map(config.headers) };
  return { config: expanded, missing: [...missing] };
}

/**
 * Registers for masking ({@link registerSecretValues}) the values of the server's environment
 * variables and headers whose names say they hold a credential (`GITHUB_TOKEN`, `Authorization`,
 * `X-Api-Key`, `*_SECRET`, `*_PRIVATE_KEY`, `Cookie`), and of its credential options (`--token X`, `--api-key=X`),
 * as given (expand the config first for its `${VAR}` values):
 * a server that cannot start often quotes what it was given on stderr, whose tail becomes the
 * agent's warning, and a token of no known shape would be written as it is.
 */
export function registerServerCredentials(config: McpServerConfig): void {
  const named = config.type === 'stdio' ? config.env : config.headers;
  registerSecretValues(
    Object.entries(named)
      .filter(([name]) => SECRET_KEY_PATTERN.test(name))
      .flatMap(([, value]) => [value, value.replace(/^(?:Bearer|Basic|Token)\s+/i, '')])
      .concat(config.type === 'stdio' ? credentialArgs(config.args) : []),
  );
}

/** A command-line option that names a credential: `--token`, `--api-key`, `-password`, `--client-secret`. */
const CREDENTIAL_OPTION = /^--?[A-Za-z0-9_-]*(?:api[_-]?key|secret|passw(?:or)?d|token)$/i;

/**
 * The values of a stdio server's credential options (`--token X`, `--api-key=X`): a server that
 * refuses its options quotes them on stderr (`bad option: --token X`), where `--token X` with a
 * space matches no masking pattern.
 */
function credentialArgs(args: readonly string[]): string[] {
  const values: string[] = [];
  args.forEach((arg, index) => {
    const equals = arg.indexOf('=');
    if (equals > 0 && CREDENTIAL_OPTION.test(arg.slice(0, equals))) values.push(arg.slice(equals + 1));
    else if (CREDENTIAL_OPTION.test(arg)) {
      const next = args[index + 1];
      if (next !== undefined && !next.startsWith('-')) values.push(next);
    }
  });
  return values;
}

/**
 * Registers the credentials of every server of `servers` ({@link registerServerCredentials}), as
 * `env` expands them: the thread that writes run directories and events masks what the agents'
 * threads, which start the servers, do.
 */
export function registerMcpCredentials(
  servers: McpServers,
  env: Readonly<Record<string, string | undefined>> = process.env,
): void {
  for (const config of Object.values(servers))
    registerServerCredentials(expandMcpServerConfig(config, env).config);
}
