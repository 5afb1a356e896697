/**
 * MCP tools as troupe tools: named `mcp__<server>__<tool>` as Claude Code names them, with the
 * server's input schema, run through the connection, their content turned into the text the model
 * sees. Policy, argument validation, journalling and retries are the toolbox's, as for any tool.
 */
import { createHash } from 'node:crypto';
import { compileSchema } from '../tools/schema.ts';
import type { JsonSchema, Tool, ToolOutcome } from '../tools/types.ts';
import type { McpCallResult, McpConnection, McpToolInfo } from './connection.ts';
import {
  MCP_MAX_LIST_PAGES,
  MCP_MAX_SCHEMA_BYTES,
  MCP_MAX_SERVER_SCHEMA_BYTES,
  MCP_MAX_TOOLS_PER_SERVER,
  MCP_RESULT_CHAR_LIMIT,
} from './constants.ts';

const INVALID_NAME_CHARS = /[^A-Za-z0-9_-]/g;
const MAX_TOOL_NAME = 64;

/**
 * The troupe name of a server's tool: `mcp__<server>__<tool>`, characters providers reject
 * replaced by `_`, and names over 64 characters cut with a hash suffix so they stay distinct.
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp__${server}__${tool}`.replaceAll(INVALID_NAME_CHARS, '_');
  if (name.length <= MAX_TOOL_NAME) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
}

/** The troupe tools of one server, and what of its listing they leave out. */
export interface McpServerTools {
  readonly tools: Tool[];
  /**
   * What the agent cannot reach, said for a person: tools not read, names taken by another, input
   * schemas over the bounds.
   */
  readonly notices: string[];
}

/** The troupe tools of one connected server. */
export function mcpTools(connection: McpConnection, listed: readonly McpToolInfo[]): McpServerTools {
  const seen = new Map<string, string>();
  const tools: Tool[] = [];
  const shadowed: string[] = [];
  const oversized: string[] = [];
  const overTotal: string[] = [];
  let schemaBytes = 0;
  for (const info of listed) {
    const name = mcpToolName(connection.name, info.name);
    const first = seen.get(name);
    if (first !== undefined) {
      shadowed.push(`\`${info.name}\` (its name \`${name}\` is \`${first}\`'s)`);
      continue;
    }
    // Measured before Ajv compiles the schema and before the toolbox counts its tokens.
    const bytes = Buffer.byteLength(JSON.stringify(info.inputSchema ?? {}));
    if (bytes > MCP_MAX_SCHEMA_BYTES) {
      oversized.push(`\`${info.name}\` (${bytes} bytes)`);
      continue;
    }
    if (schemaBytes + bytes > MCP_MAX_SERVER_SCHEMA_BYTES) {
      overTotal.push(`\`${info.name}\``);
      continue;
    }
    schemaBytes += bytes;
    seen.set(name, info.name);
    tools.push({
      name,
      description: info.description ?? `Tool \`${info.name}\` of MCP server \`${connection.name}\`.`,
      parameters: usableSchema(info.inputSchema),
      // Only a server's explicit read-only hint counts: plan agents get nothing that might write.
      readOnly: info.readOnlyHint === true,
      // Bounded by the connection's own call timeout (`MCP_CALL_TIMEOUT_MS`).
      timeoutMs: 0,
      async execute(args, ctx) {
        try {
          const trace = await ctx.traceContext?.();
          return toOutcome(await connection.call(info.name, args, ctx.signal, trace));
        } catch (error) {
          if (ctx.signal.aborted) throw error;
          const code = (error as { code?: unknown }).code;
          return {
            ok: false,
            text: error instanceof Error ? error.message : String(error),
            // Nothing was sent when the server could not be reached: trying again is safe.
            retryable: code === 'mcp_unavailable',
          };
        }
      },
    });
  }
  const notices: string[] = [];
  if (connection.toolsCut) {
    notices.push(
      `MCP server \`${connection.name}\` lists more tools than troupe takes from one server ` +
        `(${MCP_MAX_TOOLS_PER_SERVER}, in at most ${MCP_MAX_LIST_PAGES} pages): the rest are not offered`,
    );
  }
  if (shadowed.length > 0) {
    notices.push(
      `MCP server \`${connection.name}\`: ${shadowed.length} tool(s) not offered, their names being the same as ` +
        `another's once made valid: ${shadowed.join(', ')}`,
    );
  }
  if (oversized.length > 0) {
    notices.push(
      `MCP server \`${connection.name}\`: ${oversized.length} tool(s) not offered, their input schema being ` +
        `longer than the ${MCP_MAX_SCHEMA_BYTES} bytes troupe takes for one tool: ${oversized.join(', ')}`,
    );
  }
  if (overTotal.length > 0) {
    notices.push(
      `MCP server \`${connection.name}\`: ${overTotal.length} tool(s) not offered, as their input schemas would ` +
        `bring the server's past the ${MCP_MAX_SERVER_SCHEMA_BYTES} bytes troupe takes from one server: ` +
        overTotal.join(', '),
    );
  }
  return { tools, notices };
}

/**
 * Schemas made usable, by the listed schema: each agent a thread starts gets the tools of the
 * same listing, and a new schema object per agent was compiled anew (Ajv keeps every schema it
 * compiled, so each agent's start cost a compile and its memory per tool, kept for good).
 */
const usable = new WeakMap<object, JsonSchema>();

/** The server's input schema, or an open object schema when it is not one troupe can compile. */
function usableSchema(schema: Readonly<Record<string, unknown>>): JsonSchema {
  let made = usable.get(schema);
  if (made === undefined) {
    const candidate = { ...schema, type: 'object' };
    try {
      compileSchema(candidate, 'an MCP tool');
      made = candidate;
    } catch {
      made = { type: 'object', additionalProperties: true };
    }
    usable.set(schema, made);
  }
  return made;
}

/** The text the model sees for a call result: text items as they are, other content described. */
export function toOutcome(result: McpCallResult): ToolOutcome {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    switch (item.type) {
      case 'text':
        parts.push(String(item.text ?? ''));
        break;
      case 'image':
      case 'audio':
        parts.push(
          `[${item.type}: ${String(item.mimeType ?? 'unknown type')}, ${base64Bytes(item.data)} bytes]`,
        );
        break;
      case 'resource_link':
        parts.push(`[resource: ${String(item.name ?? '')} ${String(item.uri ?? '')}]`.replace('  ', ' '));
        break;
      case 'resource': {
        const resource = (item.resource ?? {}) as Record<string, unknown>;
        parts.push(
          typeof resource.text === 'string'
            ? `[resource ${String(resource.uri ?? '')}]\n${resource.text}`
            : `[resource ${String(resource.uri ?? '')}: ${String(resource.mimeType ?? 'binary')}]`,
        );
        break;
      }
      default:
        parts.push(JSON.stringify(item));
    }
  }
  const structured = result.structuredContent;
  // Kept as the result's data (journalled with it) only within the bound on a result's text.
  const structuredChars = structured === undefined ? 0 : (JSON.stringify(structured)?.length ?? 0);
  const keep = structured !== undefined && structuredChars <= MCP_RESULT_CHAR_LIMIT;
  if (parts.length === 0 && structured !== undefined) {
    parts.push(keep ? JSON.stringify(structured, null, 2) : (JSON.stringify(structured) ?? ''));
  }
  let text = parts.join('\n');
  if (text.length > MCP_RESULT_CHAR_LIMIT) {
    text = `${text.slice(0, MCP_RESULT_CHAR_LIMIT)}\n[${text.length - MCP_RESULT_CHAR_LIMIT} more characters of the result were cut]`;
  }
  if (structured !== undefined && !keep) {
    text += `\n[the structured content (${structuredChars} characters of JSON, over ${MCP_RESULT_CHAR_LIMIT}) was not kept]`;
  }
  return {
    ok: result.isError !== true,
    text: text === '' ? '(the tool returned no content)' : text,
    ...(keep ? { data: structured } : {}),
  };
}

function base64Bytes(data: unknown): number {
  return typeof data === 'string' ? Math.floor((data.replace(/=+$/, '').length * 3) / 4) : 0;
}
