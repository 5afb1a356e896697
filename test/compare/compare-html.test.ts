/**
 * The compare page in a real headless browser: Debian's chromium driven by playwright-core (.ci/run
 * installs it). It must render the runs, scorers, gates and items from one self-contained file,
 * show markup from agent output as text, load nothing from the network, and its controls must work.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareRunDirs } from '../../src/compare/compare.ts';
import { renderCompareHtml } from '../../src/compare/compare-html.ts';
import { checkGates, parseGate } from '../../src/compare/gate.ts';
import { makeRuns, type Runs } from './helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(
    `compare-html.test.ts: skipping the browser test: ${CHROMIUM} is not installed (.ci/run installs Debian's chromium)`,
  );

const HOSTILE =
  ' <img src=x onerror="document.title=\'pwned\'"></script><script>document.title="pwned"</script>';

let runs: Runs;
let html: string;
beforeAll(async () => {
  runs = await makeRuns(HOSTILE);
  const comparison = compareRunDirs(runs.runA, runs.runB);
  html = renderCompareHtml(
    comparison,
    checkGates(comparison, [parseGate('mentions')]),
    new Date('2026-01-02T03:04:05Z'),
  );
});
afterAll(() => runs.cleanup());

describe('compare page', () => {
  it('is one self-contained file with the markup from agents escaped', () => {
    expect(html).not.toMatch(/<(link|img|iframe)\b/i);
    expect(html).not.toMatch(/<[^>]*\bsrc=/i);
    expect(html.match(/<script>/g)).toHaveLength(1);
    expect(html).toContain('&lt;img src=x onerror=&quot;document.title=&#39;pwned&#39;&quot;&gt;');
  });

  describe.skipIf(!hasChromium)(`in headless Chromium (${CHROMIUM})`, () => {
    it('renders runs, gate, scorers and items, and its controls work', async () => {
      const { chromium } = await import('playwright-core');
      const work = mkdtempSync(path.join(tmpdir(), 'troupe-browser-'));
      const file = path.join(work, 'compare.html');
      writeFileSync(file, html);
      const context = await chromium.launchPersistentContext(path.join(work, 'profile'), {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1280, height: 900 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      try {
        const page = await context.newPage();
        const requests: string[] = [];
        page.on('request', (request) => requests.push(request.url()));
        const errors: string[] = [];
        page.on('pageerror', (error) => errors.push(error.message));
        await page.goto(pathToFileURL(file).href);

        expect(await page.title()).toMatch(/^troupe compare \S+ vs \S+$/);
        expect(await page.textContent('h1')).toBe('before vs after');
        expect(await page.textContent('#gates')).toContain('mentions:0: FAILED');
        // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text, with line breaks between cells.
        const scorerRow = await page.locator('#scorers tbody tr').first().innerText();
        expect(scorerRow.replace(/\s+/g, ' ')).toContain('mentions 3/3 (100.0%) 2/3 (66.7%) -33.3 pp');
        // Unchanged items are hidden until "changed items only" is unchecked.
        expect(await page.locator('tr.item:visible').count()).toBe(2);
        await page.uncheck('#changed-only');
        expect(await page.locator('tr.item:visible').count()).toBe(4);
        await page.fill('#filter', 'absent');
        expect(await page.locator('tr.item:visible').count()).toBe(1);
        await page.fill('#filter', '');
        // The item that regressed is marked and lists the tool calls that differ.
        const regressed = page.locator('tr.item.regressed');
        expect(await regressed.count()).toBe(1);
        // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text, with line breaks between cells.
        expect(await regressed.locator('.calls').innerText()).toBe(
          '− read_file {"path":"b.md"}\n+ read_file {"path":"c.md"}',
        );
        // Markup in a task is text: no element was made from it and its script never ran.
        expect(await page.locator('main img').count()).toBe(0);
        expect(await page.locator('script').count()).toBe(1);
        await page.locator('tr.item[data-key="id:a"] summary', { hasText: 'task' }).click();
        // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text, with line breaks between cells.
        expect(await page.locator('tr.item[data-key="id:a"] pre').first().innerText()).toContain(
          '<img src=x onerror=',
        );
        expect(errors).toEqual([]);
        expect(requests).toEqual([pathToFileURL(file).href]);
        // The page's policy runs its own script (the filters above) and no other.
        const ran = await page.evaluate(
          `(() => { const script = document.createElement('script'); script.textContent = 'document.body.dataset.pwned = "yes"'; document.body.append(script); return document.body.dataset.pwned ?? 'no'; })()`,
        );
        expect(ran).toBe('no');

        const png = await page.screenshot({ fullPage: true });
        expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
        // Width and height from the IHDR chunk: the full page, at least the viewport's size.
        expect(png.readUInt32BE(16)).toBe(1280);
        expect(png.readUInt32BE(20)).toBeGreaterThanOrEqual(900);
        writeFileSync(path.join(work, 'compare.png'), png);
        expect(readFileSync(path.join(work, 'compare.png')).length).toBeGreaterThan(10_000);
      } finally {
        await context.close();
        rmSync(work, { recursive: true, force: true });
      }
    });
  });
});
