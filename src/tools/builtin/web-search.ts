/**
 * `web_search`: a web search through a pluggable backend. troupe ships no search service of its
 * own; without a backend the tool is still offered (so `WebSearch` in a Claude Code definition
 * maps to a real tool) and every call answers that no backend is configured.
 */
import type { Tool } from '../types.ts';

/** One search hit. */
export interface WebSearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet?: string;
}

/** What a backend is asked. */
export interface WebSearchRequest {
  readonly query: string;
  /** Hits wanted at most. */
  readonly maxResults: number;
  /** Only hits from these domains, when given. */
  readonly allowedDomains?: readonly string[];
  /** No hits from these domains. */
  readonly blockedDomains?: readonly string[];
  readonly signal: AbortSignal;
}

/** A search service: anything that turns a query into hits (an HTTP API, a local index). */
export interface WebSearchBackend {
  /** Shown in results, e.g. `brave` or `searxng`. */
  readonly name: string;
  search(request: WebSearchRequest): Promise<readonly WebSearchResult[]>;
}

/** Hits one call returns at most. */
export const WEB_SEARCH_MAX_RESULTS = 20;

type WebSearchArgs = {
  readonly query: string;
  readonly max_results?: number;
  readonly allowed_domains?: readonly string[];
  readonly blocked_domains?: readonly string[];
};

/**
 * Builds `web_search` on `backend`. To give threads a backend, export the tool this returns from
 * a tool module (`toolModules`): it replaces the built-in one.
 */
export function createWebSearchTool(backend?: WebSearchBackend): Tool<WebSearchArgs> {
  return {
    name: 'web_search',
    description:
      'Search the web. Returns titles, URLs and snippets of the best matches; fetch a page with ' +
      'web_fetch to read it.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 2, description: 'The search query.' },
        max_results: {
          type: 'integer',
          minimum: 1,
          maximum: WEB_SEARCH_MAX_RESULTS,
          description: 'Hits to return. Defaults to 8.',
        },
        allowed_domains: { type: 'array', items: { type: 'string' }, description: 'Only these domains.' },
        blocked_domains: { type: 'array', items: { type: 'string' }, description: 'Never these domains.' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    readOnly: true,
    async execute(args, ctx) {
      if (!backend) {
        return {
          ok: false,
          text:
            'web_search cannot run: no search backend is configured in this troupe setup. Do not ' +
            'retry; work from what you know, or fetch a page you know the URL of with web_fetch.',
        };
      }
      const hits = await backend.search({
        query: args.query,
        maxResults: Math.min(args.max_results ?? 8, WEB_SEARCH_MAX_RESULTS),
        ...(args.allowed_domains ? { allowedDomains: args.allowed_domains } : {}),
        ...(args.blocked_domains ? { blockedDomains: args.blocked_domains } : {}),
        signal: ctx.signal,
      });
      if (hits.length === 0)
        return { ok: true, text: `No results for ${JSON.stringify(args.query)} (${backend.name}).` };
      const lines = hits
        .slice(0, WEB_SEARCH_MAX_RESULTS)
        .map(
          (hit, index) =>
            `${index + 1}. ${hit.title}\n   ${hit.url}${hit.snippet ? `\n   ${hit.snippet}` : ''}`,
        );
      return {
        ok: true,
        text: `Results for ${JSON.stringify(args.query)} (${backend.name}):\n${lines.join('\n')}`,
      };
    },
  };
}

/** The built-in `web_search`, with no backend. */
export const webSearchTool = createWebSearchTool();
