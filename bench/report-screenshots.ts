/**
 * Takes the screenshots of the HTML report in docs/images/: runs the report scenario (an
 * orchestrator with two workers, a rate-limited worker, a thread crash, a failing server; see
 * test/fixtures/report/scenario-server.ts) with `troupe fanout` against a loopback model server,
 * writes `troupe report --html`, and photographs it in headless Chromium (Debian's
 * /usr/bin/chromium, driven by playwright-core).
 *
 *   node --import tsx bench/report-screenshots.ts [--out DIR] [--keep]
 *
 * --out: where the PNGs go (default docs/images); --keep: keep the run directory and report.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startScenarioServer, writeScenario } from '../test/fixtures/report/scenario-server.ts';

const REPO_ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const CHROMIUM = '/usr/bin/chromium';
const { values } = parseArgs({
  options: { out: { type: 'string' }, keep: { type: 'boolean' } },
});
const out = path.resolve(values.out ?? path.join(REPO_ROOT, 'docs', 'images'));

function troupe(args: readonly string[], cwd: string): Promise<number> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '' };
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'troupe.mjs'), ...args], {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

if (!existsSync(CHROMIUM)) {
  console.error(`report-screenshots: ${CHROMIUM} is missing (apt-get install chromium)`);
  process.exit(1);
}
const work = mkdtempSync(path.join(tmpdir(), 'troupe-screens-'));
const server = await startScenarioServer();
try {
  const plan = writeScenario(
    work,
    server.baseURL,
    path.join(REPO_ROOT, 'test', 'fixtures', 'supervisor', 'fault-tools.ts'),
  );
  const runDir = path.join(work, 'run');
  const code = await troupe(['fanout', plan, '--out', runDir], work);
  if (code !== 1)
    console.error(`report-screenshots: the scenario exited ${code} (expected 1: one agent fails)`);
  const html = path.join(work, 'report.html');
  if ((await troupe(['report', runDir, '--html', html], work)) !== 0) throw new Error('troupe report failed');

  const { chromium } = await import('playwright-core');
  const context = await chromium.launchPersistentContext(path.join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 1000 },
    deviceScaleFactor: 1,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
  try {
    const page = await context.newPage();
    await page.goto(pathToFileURL(html).href);
    mkdirSync(out, { recursive: true });
    await page.screenshot({ path: path.join(out, 'report-overview.png') });
    // The timeline from the first agent on (the overview shows it from the run's first event).
    if ((await page.locator('#zoom-agents').count()) > 0) await page.click('#zoom-agents');
    await page
      .locator('section', { hasText: 'Timeline' })
      .first()
      .screenshot({ path: path.join(out, 'report-timeline.png') });
    // The worker whose thread crashed: its transcript with its last round's input open.
    const crashed = page.locator('details.transcript', {
      has: page.locator('li.e-tool[data-tool="crash_exit"]'),
    });
    await crashed.locator('summary').first().click();
    const lastInput = crashed.locator('details.input').last();
    await lastInput.locator('summary').first().click();
    await lastInput.locator('.input-body details.sec summary', { hasText: 'History' }).first().click();
    await crashed.screenshot({ path: path.join(out, 'report-transcript.png') });
    const orchestrator = page.locator('details.transcript', {
      has: page.locator('li.e-tool[data-tool="spawn_agent"]'),
    });
    await orchestrator.locator('summary').first().click();
    await orchestrator.screenshot({ path: path.join(out, 'report-orchestrator.png') });
    console.log(`report-screenshots: wrote ${out}/report-{overview,timeline,transcript,orchestrator}.png`);
  } finally {
    await context.close();
  }
} finally {
  await server.close();
  if (values.keep) console.log(`report-screenshots: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
