import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWebFetchTool,
  htmlDepthOver,
  styleHides,
  webFetchTool,
} from '../../src/tools/builtin/web-fetch.ts';
import { createWebSearchTool } from '../../src/tools/builtin/web-search.ts';
import { WEB_FETCH_MAX_STYLE_CHARS } from '../../src/tools/constants.ts';
import type { ToolContext } from '../../src/tools/types.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

/** A page server on 127.0.0.1, port 0. */
async function pages(
  routes: Record<string, (res: import('node:http').ServerResponse) => void>,
): Promise<string> {
  const server = createServer((req, res) => {
    const route = routes[req.url ?? ''];
    if (route) route(res);
    else res.writeHead(404).end('missing');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const ctx = (guard?: ToolContext['guard']): ToolContext => ({
  signal: new AbortController().signal,
  cwd: '/',
  agentId: 'a',
  fitsState: () => true,
  ...(guard ? { guard } : {}),
});

describe('web_fetch', () => {
  it('returns a loopback HTML page as Markdown when the host is allowed explicitly', async () => {
    const base = await pages({
      '/page': (res) =>
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            '<html><head><title>t</title><script>alert(1)</script></head><body><h1>Hello</h1><p>A <a href="/x">link</a>.</p><ul><li>one</li></ul></body></html>',
          ),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'] });
    const result = await tool.execute({ url: `${base}/page` }, ctx());
    expect(result.ok).toBe(true);
    expect(result.text).toContain('Status: 200');
    expect(result.text).toContain('# Hello');
    expect(result.text).toContain('A [link](/x).');
    expect(result.text).toContain('-   one');
    expect(result.text).not.toContain('alert(1)');
  });

  it('refuses loopback and private addresses unless allowed, redirects included', async () => {
    const base = await pages({
      '/page': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hi'),
    });
    await expect(webFetchTool.execute({ url: `${base}/page` }, ctx())).rejects.toThrow(
      /resolves to 127\.0\.0\.1, a loopback, private or otherwise non-public address/,
    );
    for (const url of [
      'http://10.0.0.1/',
      'http://[::1]/',
      'http://169.254.169.254/latest/meta-data',
      'http://localhost/',
    ]) {
      await expect(webFetchTool.execute({ url }, ctx()), url).rejects.toThrow(/non-public address/);
    }
    const redirector = await pages({
      '/go': (res) => res.writeHead(302, { location: 'http://127.0.0.2/private' }).end(),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'] });
    await expect(tool.execute({ url: `${redirector}/go` }, ctx())).rejects.toThrow(
      /not on web_fetch's allow list/,
    );
  });

  it('times out a server that never answers, even when garbage is collected meanwhile', async () => {
    // On Node 20, AbortSignal.any([signal, AbortSignal.timeout(ms)]) lets a collection take the
    // timeout signal: the fetch then waited for the stalled server for good.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const base = await pages({ '/stall': () => {} });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'], timeoutMs: 300 });
    const fetching = Promise.resolve(tool.execute({ url: `${base}/stall` }, ctx()));
    const collect = setInterval(gc, 20);
    try {
      // Without the fix this never settles, and the test fails on its timeout.
      await expect(fetching).rejects.toThrow(/took longer than 300 ms/);
    } finally {
      clearInterval(collect);
    }
  });

  it('names an inline data: image or link instead of passing its base64 on', async () => {
    const png = `data:image/png;base64,${'A'.repeat(200_000)}`;
    const base = await pages({
      '/inline': (res) =>
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<p>Chart: <img alt="sales" src="${png}"> and <a href="data:text/csv,a%2Cb">the data</a>.</p>`,
          ),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'] });
    const result = await tool.execute({ url: `${base}/inline` }, ctx());
    expect(result.text).toContain(`Chart: sales [data: image/png, ${png.length} characters]`);
    expect(result.text).toContain('the data [data: text/csv, 19 characters]');
    expect(result.text).not.toContain('AAAA');
  });

  it('drops text the page hides with attributes or inline style: a prompt-injection channel', async () => {
    const hidden = [
      '<p hidden>INJECT-1 hidden attribute</p>',
      '<div aria-hidden="true"><p>INJECT-2 aria-hidden</p></div>',
      '<span style="display:none">INJECT-3 display none</span>',
      '<p style="color: red; VISIBILITY : Hidden !important">INJECT-4 visibility hidden</p>',
      '<div style="display:/* x */n\\6f ne">INJECT-5 escaped and commented</div>',
      '<section style="content-visibility: hidden"><h2>INJECT-6 content-visibility</h2></section>',
      '<dialog><p>INJECT-7 closed dialog</p></dialog>',
      '<template><p>INJECT-8 template</p></template>',
      '<noscript><p>INJECT-9 noscript</p></noscript>',
      `<p style="${' '.repeat(WEB_FETCH_MAX_STYLE_CHARS)}color:red">INJECT-10 padded style</p>`,
      '<ul><li style="visibility:collapse">INJECT-11 collapsed</li><li>kept item</li></ul>',
    ].join('');
    const visible =
      '<h1>Title</h1><p style="display: block; color: red">shown paragraph</p>' +
      '<p hidden="until-found">found by search</p><dialog open><p>open dialog</p></dialog>' +
      '<div aria-hidden="false">not hidden</div>';
    const base = await pages({
      '/hiding': (res) =>
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<html><body>${visible}${hidden}<p>last words</p></body></html>`),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'] });
    const result = await tool.execute({ url: `${base}/hiding` }, ctx());
    expect(result.ok).toBe(true);
    expect(result.text).not.toContain('INJECT');
    for (const text of [
      '# Title',
      'shown paragraph',
      'found by search',
      'open dialog',
      'not hidden',
      'kept item',
      'last words',
    ])
      expect(result.text).toContain(text);
  });

  it('reads an inline style in bounded, linear work, and treats an overlong one as hiding', () => {
    expect(styleHides('display:none')).toBe(true);
    expect(styleHides('display: nonesuch; visibility: visible')).toBe(false);
    expect(styleHides(`${'/*'.repeat(30_000)}display:none`)).toBe(false);
    expect(styleHides(`${'\\'.repeat(30_000)}`)).toBe(false);
    expect(styleHides(`${'!'.repeat(30_000)}`)).toBe(false);
    expect(styleHides(`x:${' '.repeat(WEB_FETCH_MAX_STYLE_CHARS)}`)).toBe(true);
  });

  it('refuses a page nested deeper than WEB_FETCH_MAX_HTML_DEPTH instead of parsing it on the thread', async () => {
    // 100,000 nested <div>s (500 KB) kept the HTML parser busy for minutes (a thread's heartbeat
    // is 20 s); 5,000 nested <b>s overflowed turndown's stack.
    const base = await pages({
      '/deep': (res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`${'<b>'.repeat(5_000)}x`),
      '/sloppy': (res) =>
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<ul>${'<li>item <p>para <br><img src=x>'.repeat(2_000)}</ul><script>${'<div>'.repeat(2_000)}</script>`,
          ),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'] });
    await expect(tool.execute({ url: `${base}/deep` }, ctx())).rejects.toThrow(
      /nests its HTML elements more than 512 deep/,
    );
    const sloppy = await tool.execute({ url: `${base}/sloppy` }, ctx());
    expect(sloppy.ok).toBe(true);
    expect(sloppy.text).toContain('para');

    expect(htmlDepthOver('<div>'.repeat(100_000), 512)).toBe(true);
    expect(htmlDepthOver(`${'<div></x>'.repeat(600)}`, 512)).toBe(true);
    expect(htmlDepthOver(`${'<div></div>'.repeat(100_000)}`, 512)).toBe(false);
    expect(htmlDepthOver('<'.repeat(2_000_000), 512)).toBe(false);
    expect(htmlDepthOver(`${'<a '.repeat(500_000)}>`, 512)).toBe(false);
  });

  it('cuts large bodies and long texts and says so', async () => {
    const base = await pages({
      '/big': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(50_000)),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'], maxBytes: 1000 });
    const result = await tool.execute({ url: `${base}/big`, max_chars: 100 }, ctx());
    expect(result.text).toContain('[The response was cut after 1000 bytes]');
    expect(result.text).toContain('[900 more characters not shown');
  });

  it('decodes gzip, deflate and br bodies, bounds the decoded bytes, and refuses an encoding it cannot read', async () => {
    const text = 'Hello, compressed world.';
    // 64 MiB of `a`s gzip to about 64 KiB: only maxBytes of it may be decoded.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 'a'));
    const encoded = (encoding: string, body: Buffer) => (res: import('node:http').ServerResponse) =>
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': encoding }).end(body);
    const base = await pages({
      '/gzip': encoded('gzip', gzipSync(text)),
      '/deflate': encoded('deflate', deflateSync(text)),
      '/br': encoded('br', brotliCompressSync(text)),
      '/bomb': encoded('gzip', bomb),
      '/zstd': encoded('zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd])),
      '/corrupt': encoded('gzip', Buffer.from('not gzip at all')),
    });
    const tool = createWebFetchTool({ allowHosts: ['127.0.0.1'], maxBytes: 100_000 });
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const result = await tool.execute({ url: `${base}/${encoding}` }, ctx());
      expect(result, encoding).toMatchObject({ ok: true });
      expect(result.text.split('\n').slice(3).join('\n'), encoding).toBe(`\n${text}`);
    }
    const cut = await tool.execute({ url: `${base}/bomb`, max_chars: 10 }, ctx());
    expect(cut.text).toContain(
      '\naaaaaaaaaa\n[The response was cut after 100000 bytes]\n[99990 more characters',
    );
    expect(await tool.execute({ url: `${base}/zstd` }, ctx())).toEqual({
      ok: false,
      text: `${base}/zstd sent its body compressed with \`zstd\`, which web_fetch cannot decode (it decodes gzip, x-gzip, deflate, br).`,
    });
    await expect(tool.execute({ url: `${base}/corrupt` }, ctx())).rejects.toThrow(
      /^Could not fetch .*\/corrupt: its gzip-compressed body could not be decoded: /,
    );
  });

  it("follows the agent's domain rules through the guard", async () => {
    const base = await pages({
      '/page': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hi'),
    });
    const tool = createWebFetchTool({ allowPrivateAddresses: true });
    const guard = {
      host: (host: string) =>
        host === '127.0.0.1' ? '`WebFetch(domain:127.0.0.1)` in disallowedTools' : undefined,
    };
    await expect(tool.execute({ url: `${base}/page` }, ctx(guard))).rejects.toThrow(
      /this agent's rules refuse/,
    );
  });

  it('refuses other schemes and binary content', async () => {
    await expect(webFetchTool.execute({ url: 'file:///etc/passwd' }, ctx())).rejects.toThrow(
      /Only http and https/,
    );
    const base = await pages({
      '/bin': (res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0, 1, 2])),
    });
    const result = await createWebFetchTool({ allowHosts: ['127.0.0.1'] }).execute(
      { url: `${base}/bin` },
      ctx(),
    );
    expect(result).toMatchObject({ ok: false });
    expect(result.text).toContain('image/png');
  });
});

describe('web_fetch options', () => {
  // Before, these were taken as given: `maxChars: 0` built a schema whose `max_chars` had minimum 1
  // and maximum 0 (no call could pass it), `maxRedirects: NaN` followed no redirect and said "more
  // than NaN times", and a negative or fractional `maxBytes` cut every body.
  it.each([
    ['maxBytes', 0],
    ['maxBytes', -1],
    ['maxBytes', 1.5],
    ['maxBytes', Number.POSITIVE_INFINITY],
    ['maxChars', 0],
    ['maxChars', Number.NaN],
    ['maxChars', '100'],
    ['maxRedirects', -1],
    ['maxRedirects', Number.NaN],
    ['maxRedirects', 2.5],
  ] as const)('refuses %s: %s with invalid_option naming it', (option, value) => {
    expect(() => createWebFetchTool({ [option]: value as number })).toThrow(
      expect.objectContaining({ code: 'invalid_option', fields: expect.objectContaining({ option }) }),
    );
    expect(() => createWebFetchTool({ [option]: value as number })).toThrow(`\`${option}\``);
  });

  // Before, these had no upper bound: a `maxBytes` past V8's longest string (about 512 MiB) let a
  // big enough body crash the thread ("Invalid string length") instead of being cut.
  it.each([
    ['maxBytes', 256 * 1024 * 1024 + 1, 256 * 1024 * 1024],
    ['maxBytes', 2 ** 31, 256 * 1024 * 1024],
    ['maxChars', 2_000_001, 2_000_000],
    ['maxRedirects', 21, 20],
  ] as const)('refuses %s: %s past its cap, naming the option and the cap', (option, value, max) => {
    expect(() => createWebFetchTool({ [option]: value })).toThrow(
      expect.objectContaining({ code: 'invalid_option', fields: { option, max } }),
    );
    expect(() => createWebFetchTool({ [option]: value })).toThrow(`up to ${max}`);
  });

  it('takes the largest value of each range', () => {
    expect(() =>
      createWebFetchTool({ maxBytes: 256 * 1024 * 1024, maxChars: 2_000_000, maxRedirects: 20 }),
    ).not.toThrow();
  });

  it('takes the smallest values of each range, and builds a schema a call can pass', () => {
    const tool = createWebFetchTool({ maxBytes: 1, maxChars: 1, maxRedirects: 0 });
    const maxChars = (tool.parameters as { properties: { max_chars: { minimum: number; maximum: number } } })
      .properties.max_chars;
    expect(maxChars.maximum).toBeGreaterThanOrEqual(maxChars.minimum);
  });
});

describe('web_search', () => {
  it('answers that no backend is configured when none is', async () => {
    const result = await createWebSearchTool().execute({ query: 'troupe' }, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain('no search backend is configured');
  });

  it('lists the hits of a backend', async () => {
    const tool = createWebSearchTool({
      name: 'fake',
      search: async ({ query, maxResults }) => [
        { title: `About ${query}`, url: 'https://e.com', snippet: `${maxResults}` },
      ],
    });
    const result = await tool.execute({ query: 'troupe', max_results: 3 }, ctx());
    expect(result.text).toBe('Results for "troupe" (fake):\n1. About troupe\n   https://e.com\n   3');
  });
});
