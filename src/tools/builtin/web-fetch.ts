/**
 * `web_fetch`: a URL as readable text. HTML becomes Markdown (turndown); text, JSON and XML are
 * returned as they are. Every request is bounded (bytes, time, redirects) and every host is
 * checked, redirects included: the allow/deny lists of the tool, the agent's `WebFetch(domain:...)`
 * rules, and, after DNS resolution, the address itself: loopback, private and other non-public
 * addresses are refused unless the host is allowed explicitly. The connection goes to the address
 * that was checked, so a second DNS answer cannot point it elsewhere.
 */
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type TurndownService from 'turndown';
import { followSignal } from '../../abort.ts';
import { UserError } from '../../errors.ts';
import { positiveInt, timeLimit } from '../../option-checks.ts';
import {
  WEB_FETCH_MAX_BYTES_LIMIT,
  WEB_FETCH_MAX_CHARS_LIMIT,
  WEB_FETCH_MAX_HTML_DEPTH,
  WEB_FETCH_MAX_REDIRECTS_LIMIT,
  WEB_FETCH_MAX_STYLE_CHARS,
} from '../constants.ts';
import { isNonPublicAddress } from '../net-address.ts';
import type { Tool, ToolContext, ToolOutcome } from '../types.ts';

/** Bounds and host lists of a `web_fetch` tool. */
export interface WebFetchOptions {
  /**
   * Hosts that may be fetched (`example.com`, `*.example.com`, or an IP literal). When given, every
   * other host is refused. A host listed here may resolve to a non-public address.
   * @default every public host
   */
  readonly allowHosts?: readonly string[];
  /** Hosts that are always refused (same syntax); they win over `allowHosts`. @default [] */
  readonly denyHosts?: readonly string[];
  /** Allow loopback and private addresses for every host. @default false */
  readonly allowPrivateAddresses?: boolean;
  /**
   * Bytes of a response body read at most, counted after decoding a gzip, deflate or br body (a
   * compression bomb stops there); the rest is cut (and the result says so). A positive integer up
   * to 268435456 (256 MiB, `WEB_FETCH_MAX_BYTES_LIMIT`: the body becomes one string, and V8's
   * longest is about 512 MiB). @default 2 MiB
   */
  readonly maxBytes?: number;
  /**
   * Characters of text returned at most (`max_chars` may ask for fewer): a positive integer up to
   * 2,000,000 (`WEB_FETCH_MAX_CHARS_LIMIT`, so the result fits `MAX_TOOL_RESULT_CHARS`).
   * @default 100,000
   */
  readonly maxChars?: number;
  /**
   * Time for the whole fetch, redirects included: a positive integer up to 2147483647
   * (`MAX_TIMER_MS`, about 24.8 days; Node fires a longer timer at once). @default 30,000 ms
   */
  readonly timeoutMs?: number;
  /**
   * Redirects followed at most: an integer from 0 (follows none) to 20 (`WEB_FETCH_MAX_REDIRECTS_LIMIT`,
   * the Fetch standard's limit). @default 5
   */
  readonly maxRedirects?: number;
}

/** Defaults of {@link WebFetchOptions}. */
export const WEB_FETCH_DEFAULTS = {
  maxBytes: 2 * 1024 * 1024,
  maxChars: 100_000,
  timeoutMs: 30_000,
  maxRedirects: 5,
} as const;

/** {@link WebFetchOptions} with their defaults filled in. */
type FetchSettings = Required<Omit<WebFetchOptions, 'allowHosts'>> & Pick<WebFetchOptions, 'allowHosts'>;

type WebFetchArgs = {
  readonly url: string;
  readonly max_chars?: number;
};

/**
 * Builds a `web_fetch` tool with its own host lists and bounds.
 * @throws UserError `invalid_option` (its `option` named, and its `max` for a value past it) for a
 * `timeoutMs` that is not a positive integer up to `MAX_TIMER_MS`, a `maxBytes` or `maxChars` that
 * is not a positive integer up to `WEB_FETCH_MAX_BYTES_LIMIT` or `WEB_FETCH_MAX_CHARS_LIMIT`, or a
 * `maxRedirects` that is not an integer from 0 to `WEB_FETCH_MAX_REDIRECTS_LIMIT`.
 */
export function createWebFetchTool(options: WebFetchOptions = {}): Tool<WebFetchArgs> {
  const settings: FetchSettings = {
    allowHosts: options.allowHosts,
    denyHosts: options.denyHosts ?? [],
    allowPrivateAddresses: options.allowPrivateAddresses ?? false,
    maxBytes: positiveInt(
      'maxBytes',
      options.maxBytes,
      WEB_FETCH_DEFAULTS.maxBytes,
      1,
      WEB_FETCH_MAX_BYTES_LIMIT,
    ),
    maxChars: positiveInt(
      'maxChars',
      options.maxChars,
      WEB_FETCH_DEFAULTS.maxChars,
      1,
      WEB_FETCH_MAX_CHARS_LIMIT,
    ),
    timeoutMs: timeLimit('timeoutMs', options.timeoutMs, WEB_FETCH_DEFAULTS.timeoutMs, 'positive integer'),
    maxRedirects: positiveInt(
      'maxRedirects',
      options.maxRedirects,
      WEB_FETCH_DEFAULTS.maxRedirects,
      0,
      WEB_FETCH_MAX_REDIRECTS_LIMIT,
    ),
  };
  return {
    name: 'web_fetch',
    description:
      'Fetch a web page or document by URL and return it as text (HTML is converted to Markdown). ' +
      `Only http(s); at most ${settings.maxChars} characters are returned.`,
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', minLength: 1, description: 'Absolute http:// or https:// URL.' },
        max_chars: {
          type: 'integer',
          minimum: 1,
          maximum: settings.maxChars,
          description: `Return at most this many characters. Defaults to ${settings.maxChars}.`,
        },
      },
      required: ['url'],
      additionalProperties: false,
    },
    readOnly: true,
    async execute(args, ctx) {
      // Not AbortSignal.any([ctx.signal, AbortSignal.timeout(ms)]): on Node 20 a garbage collection
      // can collect the timeout signal, and the fetch of a server that stalls never ends.
      const controller = new AbortController();
      const signal = controller.signal;
      const unfollow = followSignal(ctx.signal, controller);
      const timer = setTimeout(() => controller.abort(new Error('web_fetch timed out')), settings.timeoutMs);
      try {
        return await fetchFollowing(args, settings, ctx, signal);
      } finally {
        clearTimeout(timer);
        unfollow();
      }
    },
  };
}

async function fetchFollowing(
  args: WebFetchArgs,
  settings: FetchSettings,
  ctx: ToolContext,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  let url = parseUrl(args.url);
  for (let redirects = 0; ; redirects += 1) {
    const address = await checkHost(url, settings, ctx);
    const response = await request(url, address, settings.maxBytes, signal).catch((error: unknown) => {
      if (ctx.signal.aborted) throw error;
      if (signal.aborted) {
        throw new UserError('timeout', `Fetching ${url.href} took longer than ${settings.timeoutMs} ms`);
      }
      throw new UserError('fetch_failed', `Could not fetch ${url.href}: ${(error as Error).message}`);
    });
    const location = response.headers.location;
    if (response.status >= 300 && response.status < 400 && location !== undefined) {
      if (redirects >= settings.maxRedirects) {
        throw new UserError(
          'too_many_redirects',
          `${args.url} redirected more than ${settings.maxRedirects} times`,
        );
      }
      url = parseUrl(new URL(location, url).href);
      continue;
    }
    return render(url, response, Math.min(args.max_chars ?? settings.maxChars, settings.maxChars));
  }
}

/** The built-in `web_fetch`: public hosts only, default bounds. */
export const webFetchTool = createWebFetchTool();

function parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UserError('invalid_url', `Expected an absolute http(s) URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError('invalid_url', `Only http and https URLs can be fetched, got ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UserError('invalid_url', 'URLs with credentials cannot be fetched');
  }
  return url;
}

function hostListed(list: readonly string[], host: string): boolean {
  return list.some((entry) => {
    const pattern = entry.toLowerCase().replace(/^\[|\]$/g, '');
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
  });
}

/** Checks a URL's host against every list and rule, resolves it, and returns the address to use. */
async function checkHost(
  url: URL,
  settings: Pick<FetchSettings, 'allowHosts' | 'denyHosts' | 'allowPrivateAddresses'>,
  ctx: ToolContext,
): Promise<LookupAddress> {
  const host = url.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const refuse = (why: string): never => {
    throw new UserError('host_refused', `Fetching ${url.href} is refused: ${why}`, { host });
  };
  if (hostListed(settings.denyHosts, host)) refuse(`\`${host}\` is on web_fetch's deny list`);
  const listed = settings.allowHosts !== undefined && hostListed(settings.allowHosts, host);
  if (settings.allowHosts !== undefined && !listed) refuse(`\`${host}\` is not on web_fetch's allow list`);
  const ruled = ctx.guard?.host?.(host);
  if (ruled !== undefined) refuse(`this agent's rules refuse \`${host}\` (${ruled})`);
  const family = isIP(host);
  const addresses: LookupAddress[] =
    family === 0
      ? await lookup(host, { all: true, verbatim: true }).catch((error: unknown) =>
          refuse(`its name does not resolve (${(error as NodeJS.ErrnoException).code ?? String(error)})`),
        )
      : [{ address: host, family }];
  const first = addresses[0];
  if (first === undefined) return refuse('its name resolves to no address');
  if (!listed && !settings.allowPrivateAddresses) {
    const internal = addresses.find((candidate) => isNonPublicAddress(candidate.address));
    if (internal) {
      refuse(
        `\`${host}\` resolves to ${internal.address}, a loopback, private or otherwise non-public address ` +
          '(allow the host explicitly to fetch it)',
      );
    }
  }
  return first;
}

interface RawResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** Decoded: `maxBytes` bounds what the decoder gives, so a compression bomb stops there. */
  readonly body: Buffer;
  readonly truncated: boolean;
  /** A `Content-Encoding` web_fetch cannot decode; the body was not read. */
  readonly undecodable?: string;
}

/** The `Content-Encoding`s web_fetch decodes, by name (`x-gzip` is gzip's old name). */
const DECODERS: Readonly<Record<string, () => NodeJS.ReadWriteStream>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

function request(
  url: URL,
  address: LookupAddress,
  maxBytes: number,
  signal: AbortSignal,
): Promise<RawResponse> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'GET',
        signal,
        headers: {
          'user-agent': 'troupe-web-fetch',
          accept: 'text/html,text/*;q=0.9,application/json;q=0.8,*/*;q=0.5',
        },
        // Connect to the address that was checked, whatever DNS says now.
        lookup: (_host, options, callback) => {
          if ((options as { all?: boolean }).all) callback(null, [address]);
          else callback(null, address.address, address.family);
        },
      },
      (res) => {
        const encoding = String(res.headers['content-encoding'] ?? 'identity')
          .trim()
          .toLowerCase();
        const decoder = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding]?.() : undefined;
        if (encoding !== 'identity' && encoding !== '' && decoder === undefined) {
          res.destroy();
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.alloc(0),
            truncated: false,
            undecodable: encoding,
          });
          return;
        }
        const body: Readable = decoder ? (res.pipe(decoder) as unknown as Readable) : res;
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        decoder?.on('error', (error: Error) => {
          if (!truncated)
            reject(new Error(`its ${encoding}-compressed body could not be decoded: ${error.message}`));
        });
        body.on('data', (chunk: Buffer) => {
          if (truncated) return;
          const room = maxBytes - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, room));
            size = maxBytes;
            truncated = true;
            res.destroy();
            if (body !== res) body.destroy();
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
              truncated,
            });
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        body.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            truncated,
          }),
        );
        res.on('error', (error) => {
          if (!truncated) reject(error);
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const TEXTUAL =
  /^(?:text\/|application\/(?:json|xml|xhtml\+xml|javascript|ld\+json|rss\+xml|atom\+xml)|[^;]*\+(?:json|xml))/i;

async function render(url: URL, response: RawResponse, maxChars: number): Promise<ToolOutcome> {
  const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (response.undecodable !== undefined) {
    return {
      ok: false,
      text:
        `${url.href} sent its body compressed with \`${response.undecodable}\`, which web_fetch cannot decode ` +
        `(it decodes ${Object.keys(DECODERS).join(', ')}).`,
    };
  }
  if (!TEXTUAL.test(mediaType)) {
    return {
      ok: false,
      text: `${url.href} returned ${mediaType || 'an unknown type'} (${response.body.length} bytes), which web_fetch cannot show as text.`,
    };
  }
  const charset = /charset=["']?([\w-]+)/i.exec(contentType)?.[1] ?? 'utf-8';
  let text: string;
  try {
    text = new TextDecoder(charset).decode(response.body);
  } catch {
    text = new TextDecoder('utf-8').decode(response.body);
  }
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') {
    // Parsing and converting run on the agent's thread without a pause: a page nested deep enough
    // would hold it past its heartbeat (every agent on it restarted) or overflow the stack.
    if (htmlDepthOver(text, WEB_FETCH_MAX_HTML_DEPTH)) {
      throw new UserError(
        'html_too_deep',
        `${url.href} nests its HTML elements more than ${WEB_FETCH_MAX_HTML_DEPTH} deep, more than web_fetch converts to text`,
        { limit: WEB_FETCH_MAX_HTML_DEPTH },
      );
    }
    text = await htmlToMarkdown(text);
  }
  const notes: string[] = [];
  if (response.truncated) notes.push(`[The response was cut after ${response.body.length} bytes]`);
  if (text.length > maxChars) {
    notes.push(`[${text.length - maxChars} more characters not shown; ask for max_chars or a narrower URL]`);
    text = text.slice(0, maxChars);
  }
  const header = `URL: ${url.href}\nStatus: ${response.status}\nContent-Type: ${mediaType}\n`;
  return { ok: response.status < 400, text: [header, text, ...notes].join('\n') };
}

let turndown: TurndownService | undefined;

/** HTML as Markdown; turndown is imported on the first page, not with the thread's tools. */
async function htmlToMarkdown(html: string): Promise<string> {
  if (!turndown) {
    const { default: TurndownService } = await import('turndown');
    turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
    turndown.remove(['script', 'style', 'noscript', 'template', 'iframe', 'head']);
    // Text a page hides from its reader is a prompt-injection channel: dropped with its element.
    turndown.addRule('hidden', {
      filter: (node) => hiddenElement(node as unknown as HtmlElement),
      replacement: () => '',
    });
    // An inline image's base64 (a 200 KB `data:image/png`) would fill the whole result: named instead.
    turndown.addRule('dataUri', {
      filter: (node) =>
        (node.nodeName === 'IMG' && dataUri(node.getAttribute('src')) !== undefined) ||
        (node.nodeName === 'A' && dataUri(node.getAttribute('href')) !== undefined),
      replacement: (content, node) => {
        const element = node as unknown as HtmlElement;
        const uri = dataUri(element.getAttribute(element.nodeName === 'IMG' ? 'src' : 'href')) ?? '';
        const label = element.nodeName === 'IMG' ? (element.getAttribute('alt') ?? '') : content;
        return `${label}${label === '' ? '' : ' '}[${uri}]`;
      },
    });
  }
  return turndown.turndown(html).trim();
}

/** What the rules read of an element (the thread has no DOM types). */
export interface HtmlElement {
  readonly nodeName: string;
  getAttribute(name: string): string | null;
}

/**
 * Whether a browser would hide `element` and everything in it, as far as its own attributes say:
 * `hidden` (not `hidden="until-found"`, which the reader can reveal by searching),
 * `aria-hidden="true"`, a `<dialog>` without `open`, or an inline `style` with `display: none`,
 * `visibility: hidden | collapse` or `content-visibility: hidden`. Stylesheet rules are not
 * applied (there is no CSS engine here), and a descendant that sets `visibility: visible` is
 * dropped with its hidden ancestor.
 */
export function hiddenElement(element: HtmlElement): boolean {
  const hidden = element.getAttribute('hidden');
  if (hidden !== null && hidden.trim().toLowerCase() !== 'until-found') return true;
  if (element.getAttribute('aria-hidden')?.trim().toLowerCase() === 'true') return true;
  if (element.nodeName === 'DIALOG' && element.getAttribute('open') === null) return true;
  const style = element.getAttribute('style');
  return style !== null && styleHides(style);
}

/** Inline-style properties and the values of theirs that hide an element. */
const HIDING_DECLARATIONS: Readonly<Record<string, readonly string[]>> = {
  display: ['none'],
  visibility: ['hidden', 'collapse'],
  'content-visibility': ['hidden'],
};

/**
 * Whether an inline `style` hides its element ({@link HIDING_DECLARATIONS}), read with its CSS
 * comments dropped and its escapes decoded (`display: n\6f ne` hides), in linear time. A style
 * longer than WEB_FETCH_MAX_STYLE_CHARS hides its element.
 */
export function styleHides(style: string): boolean {
  if (style.length > WEB_FETCH_MAX_STYLE_CHARS) return true;
  for (const declaration of unescapeCss(withoutCssComments(style)).split(';')) {
    const colon = declaration.indexOf(':');
    if (colon === -1) continue;
    const values = HIDING_DECLARATIONS[declaration.slice(0, colon).trim().toLowerCase()];
    const value = declaration
      .slice(colon + 1)
      .replace(/!\s*important\s*$/i, '')
      .trim()
      .toLowerCase();
    if (values?.includes(value)) return true;
  }
  return false;
}

/** `css` without its comments (an unclosed one runs to the end, as in CSS). */
function withoutCssComments(css: string): string {
  let out = '';
  let from = 0;
  for (let start = css.indexOf('/*'); start !== -1; start = css.indexOf('/*', from)) {
    out += css.slice(from, start);
    const end = css.indexOf('*/', start + 2);
    if (end === -1) return out;
    from = end + 2;
  }
  return out + css.slice(from);
}

/** `css` with its escapes decoded: `\6e ` (hex, then one optional space) and `\x` (the character). */
function unescapeCss(css: string): string {
  if (!css.includes('\\')) return css;
  return css.replace(
    /\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|([^\n]))/g,
    (_match, hex?: string, char?: string) => {
      if (hex === undefined) return char ?? '';
      const code = Number.parseInt(hex, 16);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : '\ufffd';
    },
  );
}

/** `data: <media type>, N characters` for a `data:` URI, else undefined. */
function dataUri(value: string | null): string | undefined {
  if (value === null || !/^\s*data:/i.test(value)) return undefined;
  const mediaType = /^\s*data:([^;,]*)/i.exec(value)?.[1]?.trim() || 'text/plain';
  return `data: ${mediaType}, ${value.length} characters`;
}

/** Elements without content, and those whose end tag may be left out (a sibling closes them). */
const UNNESTED_ELEMENTS = new Set([
  ...['area', 'base', 'basefont', 'bgsound', 'br', 'col', 'embed', 'frame', 'hr', 'img', 'input'],
  ...['keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr', 'html', 'head', 'body', 'p'],
  ...['li', 'dt', 'dd', 'tr', 'td', 'th', 'thead', 'tbody', 'tfoot', 'option', 'optgroup'],
  ...['colgroup', 'caption', 'rb', 'rt', 'rtc', 'rp'],
]);

/**
 * Whether the elements of `html` nest more than `limit` deep, in one linear pass: comments and the
 * bodies of `script` and `style` are skipped, an end tag closes the innermost open element of its
 * name (and those inside it) and is ignored when none is open, as the parser does.
 */
export function htmlDepthOver(html: string, limit: number): boolean {
  const open: string[] = [];
  const openCount = new Map<string, number>();
  const tag = /<(\/?)([A-Za-z][A-Za-z0-9-]*)/y;
  const lower = html.toLowerCase();
  let nextGt = -1;
  let at = html.indexOf('<');
  while (at !== -1) {
    if (html.startsWith('<!--', at)) {
      const end = html.indexOf('-->', at + 4);
      if (end === -1) break;
      at = html.indexOf('<', end + 3);
      continue;
    }
    tag.lastIndex = at;
    const match = tag.exec(html);
    if (!match) {
      at = html.indexOf('<', at + 1);
      continue;
    }
    // The next `>` is searched once for every tag it ends, so the pass stays linear.
    if (nextGt < tag.lastIndex) nextGt = html.indexOf('>', tag.lastIndex);
    if (nextGt === -1) break;
    const name = (match[2] ?? '').toLowerCase();
    const after = nextGt + 1;
    if (match[1] === '/') {
      if ((openCount.get(name) ?? 0) > 0) {
        for (let top = open.pop(); top !== undefined; top = open.pop()) {
          openCount.set(top, (openCount.get(top) ?? 1) - 1);
          if (top === name) break;
        }
      }
    } else if (name === 'script' || name === 'style') {
      const end = lower.indexOf(`</${name}`, after);
      if (end === -1) break;
      at = html.indexOf('<', end + 2);
      continue;
    } else if (!UNNESTED_ELEMENTS.has(name) && html[nextGt - 1] !== '/') {
      open.push(name);
      openCount.set(name, (openCount.get(name) ?? 0) + 1);
      if (open.length > limit) return true;
    }
    at = html.indexOf('<', after);
  }
  return false;
}
