/**
 * The report on a run with everything in it: an orchestrator and its two workers, a worker rate
 * limited once (retried), a worker whose thread dies (restarted from its journal), a worker whose
 * server keeps failing (retried, then Failed). The HTML must parse without a single parse error
 * (parse5), hold a transcript for every agent with every tool call its journal records, and work
 * in a real browser; `troupe show` and `troupe report JOURNAL` read the same journals.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type DefaultTreeAdapterMap, parse } from 'parse5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { AuditEvent } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import { readRunDir } from '../../src/run-dir/run-dir.ts';
import { buildTimeline } from '../../src/run-dir/timeline.ts';
import {
  type ScenarioServer,
  startScenarioServer,
  writeScenario,
} from '../fixtures/report/scenario-server.ts';
import { captureIO, readResults, repoRoot, startCli } from '../run-dir/helpers.ts';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

const CHROMIUM = '/usr/bin/chromium';

let work: string;
let server: ScenarioServer;
let runDir: string;
let results: ResultLine[];
let journals: Map<string, AuditEvent[]>;
let html: string;
let htmlFile: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'troupe-drilldown-'));
  server = await startScenarioServer();
  const plan = writeScenario(
    work,
    server.baseURL,
    path.join(repoRoot, 'test/fixtures/supervisor/fault-tools.ts'),
  );
  runDir = path.join(work, 'run');
  const cli = startCli(['fanout', plan, '--out', runDir, '--json'], {
    cwd: work,
    env: { PATH: process.env.PATH ?? '' },
  });
  expect(await cli.exited, cli.stderr()).toBe(1);
  results = readResults(path.join(runDir, 'results.jsonl'));
  journals = new Map(
    readdirSync(path.join(runDir, 'journals')).map((file) => [
      file.replace(/\.jsonl$/, ''),
      readJournal(path.join(runDir, 'journals', file)).events,
    ]),
  );
  htmlFile = path.join(work, 'report.html');
  const io = captureIO();
  expect(await main(['report', runDir, '--html', htmlFile], io), io.err()).toBe(0);
  html = readFileSync(htmlFile, 'utf8');
});
afterAll(async () => {
  await server?.close();
  rmSync(work, { recursive: true, force: true });
});

function attr(node: Element, name: string): string | undefined {
  return node.attrs.find((a) => a.name === name)?.value;
}

function* walk(node: Node): Generator<Element> {
  if ('tagName' in node) yield node;
  if ('childNodes' in node) for (const child of node.childNodes) yield* walk(child);
  if ('content' in node && node.content) yield* walk(node.content as Node);
}

function text(node: Node): string {
  if (node.nodeName === '#text') return (node as DefaultTreeAdapterMap['textNode']).value;
  return 'childNodes' in node ? node.childNodes.map(text).join('') : '';
}

/** The agent whose tool killed its thread (others on that thread may have been restarted too). */
function crashedAgent(): string {
  const found = [...journals.entries()].find(([, events]) =>
    events.some((e) => e.type === 'ToolCall' && e.name === 'crash_exit'),
  );
  if (found === undefined) throw new Error('no agent called crash_exit');
  return found[0];
}

function classes(node: Element): string[] {
  return (attr(node, 'class') ?? '').split(/\s+/);
}

describe('the run the report is about', () => {
  it('had a failure, retries, a thread crash and agents spawned by agents', () => {
    expect(
      results.map((line) => [line.label ?? line.parentId, line.status, line.reason ?? null]),
    ).toHaveLength(6);
    expect(
      results.filter((line) => line.status === 'failed').map((line) => [line.label, line.reason]),
    ).toEqual([['unavailable', 'provider_error']]);
    expect(results.filter((line) => line.parentId !== null)).toHaveLength(2);
    expect(server.counts.rate_limited).toBeGreaterThanOrEqual(1);
    const events = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8');
    expect(events).toContain('"event":"crashed"');
    const resumed = [...journals.values()].filter((events) => events.some((e) => e.type === 'Resumed'));
    expect(resumed.length).toBeGreaterThanOrEqual(1);
  });
});

describe('troupe report --html on it', () => {
  it('parses without a single HTML parse error', () => {
    const errors: string[] = [];
    parse(html, {
      onParseError: (error) => errors.push(`${error.code} at ${error.startLine}:${error.startCol}`),
    });
    expect(errors).toEqual([]);
  });

  it('holds a transcript for every agent, with every tool call of its journal', () => {
    const document = parse(html);
    const transcripts = new Map<string, Element>();
    for (const element of walk(document)) {
      if (element.tagName === 'details' && classes(element).includes('transcript'))
        transcripts.set(attr(element, 'data-agent') ?? '', element);
    }
    expect([...transcripts.keys()].sort()).toEqual([...journals.keys()].sort());
    for (const [agentId, events] of journals) {
      const section = transcripts.get(agentId) as Element;
      const calls = new Map<string, Element>();
      for (const element of walk(section))
        if (element.tagName === 'li' && classes(element).includes('e-tool'))
          calls.set(attr(element, 'data-call') ?? '', element);
      const journalled = events
        .filter((e) => e.type === 'ToolCall')
        .map((e) => (e.type === 'ToolCall' ? e.callId : ''));
      expect([...calls.keys()], agentId).toEqual(journalled);
      for (const event of events) {
        if (event.type !== 'ToolCall') continue;
        const call = calls.get(event.callId) as Element;
        expect(attr(call, 'data-tool')).toBe(event.name);
        const result = events.find((e) => e.type === 'ToolResult' && e.callId === event.callId);
        if (result?.type === 'ToolResult') expect(text(call)).toContain(result.text.slice(0, 60));
      }
    }
  });

  it('shows the retries, the failure, the crash and the restart where they happened', () => {
    const document = parse(html);
    const byLabel = (label: string): Element => {
      const line = results.find((r) => r.label === label) as ResultLine;
      return [...walk(document)].find(
        (e) => e.tagName === 'details' && attr(e, 'data-agent') === line.agentId,
      ) as Element;
    };
    const unavailable = text(byLabel('unavailable'));
    expect(unavailable).toMatch(/2 retries/);
    expect(unavailable.match(/server_error \(HTTP 503\)/g)).toHaveLength(2);
    expect(unavailable).toContain('Failed: provider_error');
    expect(text(byLabel('limited'))).toMatch(/rate_limited \(HTTP 429\) at \+\S+, retried after 30ms/);
    const crashed = [...walk(document)].find(
      (e) => e.tagName === 'details' && attr(e, 'data-agent') === crashedAgent(),
    ) as Element;
    const crashedText = text(crashed);
    expect(crashedText).toContain('restarted from the journal');
    expect(crashedText).toMatch(/crash_exit · interrupted/);
    expect(html).toMatch(/<g class="crash">/);
    expect(html).toMatch(/class="down"/);
    expect(html).toMatch(/class="retry"/);
  });

  it('links parents and children, shows plan ids and models, and counts every agent in the cards', () => {
    const orchestrator = results.find((r) => r.label === 'review') as ResultLine;
    const children = results.filter((r) => r.parentId === orchestrator.agentId);
    expect(children).toHaveLength(2);
    const document = parse(html);
    const anchorOf = (agentId: string): string =>
      attr(
        [...walk(document)].find(
          (e) => e.tagName === 'details' && attr(e, 'data-agent') === agentId,
        ) as Element,
        'id',
      ) ?? '';
    const section = [...walk(document)].find(
      (e) => e.tagName === 'details' && attr(e, 'data-agent') === orchestrator.agentId,
    ) as Element;
    const links = [...walk(section)].filter((e) => e.tagName === 'a').map((e) => attr(e, 'href'));
    for (const child of children) expect(links).toContain(`#${anchorOf(child.agentId)}`);
    expect(html).toContain('<span class="tag">review</span>');
    expect(html).toContain('scenario-model');
    expect(html).toMatch(
      /<b>6<\/b><span>agents<\/span><small>4 plan entries \+ 2 spawned by agents<\/small>/,
    );
    expect(html).toMatch(/<b>1<\/b><span>failed<\/span>/);
  });

  it('keeps tool colours by name, masks secrets and loads nothing', () => {
    expect(html).toContain('background:#16a34a">read_file');
    expect(html).not.toContain('sk-scenarioSECRET');
    expect(html).not.toContain('sk-test-scenario');
    expect(html).not.toMatch(/https?:\/\/|<link|\bsrc=|url\(/i);
  });

  it("carries each round's input as JSON the page builds on demand", () => {
    const document = parse(html);
    const blocks = [...walk(document)].filter(
      (e) => e.tagName === 'script' && attr(e, 'type') === 'application/json',
    );
    expect(blocks).toHaveLength(journals.size);
    for (const block of blocks) {
      const data = JSON.parse(text(block)) as { r: { h: [number, number][] }[]; t: string[]; k: number };
      expect(data.t[data.k]).toBeTypeOf('string');
      for (const round of data.r) for (const [index] of round.h) expect(data.t[index]).toBeTypeOf('string');
    }
  });
});

describe('troupe show and troupe report JOURNAL', () => {
  it('show prints an agent found by plan id: its requests, retries, tool calls and outcome', async () => {
    const io = captureIO();
    expect(await main(['show', runDir, 'unavailable'], io), io.err()).toBe(0);
    const out = io.out();
    expect(out).toMatch(/^agent \S+-2 \(worker\) \[unavailable\]: failed \(provider_error\)/);
    expect(out.match(/retry: server_error \(HTTP 503\)/g)).toHaveLength(2);
    expect(out).toMatch(/failed \+\S+: provider_error \(server_error\)/);
  });

  it('show finds an agent by a unique id prefix and prints every tool call with its arguments', async () => {
    const crashed = crashedAgent();
    const io = captureIO();
    expect(await main(['show', runDir, crashed.slice(0, 8), '--inputs'], io), io.err()).toBe(0);
    const out = io.out();
    const calls = (journals.get(crashed) ?? []).filter((e) => e.type === 'ToolCall');
    for (const call of calls) expect(out).toContain(`call ${call.type === 'ToolCall' ? call.callId : ''}`);
    expect(out).toContain('restarted from the journal');
    expect(out).toContain('[task]');
  });

  it('show fails with the candidates when the agent is ambiguous or unknown', async () => {
    const io = captureIO();
    expect(await main(['show', runDir, 'nobody'], io)).toBe(1);
    expect(io.err()).toMatch(/unknown_agent: .*names none of the 6 agents/);
    // Without an agent: the ids, each with its plan id, which is what a user typed in the plan.
    const none = captureIO();
    expect(await main(['show', runDir], none)).toBe(1);
    expect(none.err()).toMatch(/missing_agent: .*found none; it has 6: .*\(unavailable\)/);
  });

  it("show reads only the journals of the agent it shows: another agent's unreadable journal is no matter", async () => {
    const copy = path.join(work, 'run-show-one');
    cpSync(runDir, copy, { recursive: true });
    const orchestrator = results.find((line) => line.parentId === null && line.agent !== 'worker');
    const child = results.find((line) => line.parentId === orchestrator?.agentId);
    const other = results.find(
      (line) => line.agentId !== child?.agentId && line.agentId !== orchestrator?.agentId,
    );
    if (orchestrator === undefined || child === undefined || other === undefined)
      throw new Error('no agents');
    // A directory where another agent's journal was: reading it fails.
    const journal = path.join(copy, 'journals', `${other.agentId}.jsonl`);
    rmSync(journal);
    mkdirSync(journal);
    for (const agentId of [orchestrator.agentId, child.agentId]) {
      const io = captureIO();
      expect(await main(['show', copy, agentId], io), io.err()).toBe(0);
      expect(io.out()).toContain(`agent ${agentId}`);
    }
    // The shown agent's own journal is read.
    const io = captureIO();
    expect(await main(['show', copy, other.agentId], io)).toBe(1);
    expect(io.err()).toMatch(/EISDIR|directory/);
  });

  it('builds no transcript until one is read: the report keeps only those it shows', () => {
    const copy = path.join(work, 'run-lazy');
    cpSync(runDir, copy, { recursive: true });
    const timeline = buildTimeline(readRunDir(copy), { inputs: true });
    const first = timeline.agents[0];
    const second = timeline.agents[1];
    if (first === undefined || second === undefined) throw new Error('no agents');
    expect(first.transcript?.agentId).toBe(first.agentId);
    // Its journal gone after the timeline was built: its transcript was not built with the rest.
    rmSync(path.join(copy, 'journals', `${second.agentId}.jsonl`));
    expect(second.status).not.toBe('not run');
    expect(second.spans.length).toBeGreaterThan(0);
    expect(second.transcript).toBeUndefined();
  });

  it('report JOURNAL prints the agent; --html writes its page with its transcript', async () => {
    // A plan entry's journal: read alone, its agent has no index and no parent.
    const agentId = results.find((line) => line.parentId === null)?.agentId ?? '';
    const file = path.join(runDir, 'journals', `${agentId}.jsonl`);
    const io = captureIO();
    expect(await main(['report', file], io), io.err()).toBe(0);
    expect(io.out()).toContain(agentId);
    // Not marked `↳` (spawned by an agent), which it was not.
    expect(io.out()).toMatch(new RegExp(`^-\\s+${agentId}\\s`, 'm'));
    expect(io.out()).toContain(`troupe show ${file}`);
    const page = path.join(work, 'one.html');
    expect(await main(['report', file, '--html', page], captureIO())).toBe(0);
    const one = readFileSync(page, 'utf8');
    const errors: string[] = [];
    parse(one, { onParseError: (error) => errors.push(error.code) });
    expect(errors).toEqual([]);
    expect(one).toContain(`data-agent="${agentId}"`);
    const shown = captureIO();
    expect(await main(['show', file], shown)).toBe(0);
    expect(shown.out()).toContain(`agent ${agentId}`);
  });

  it('report on a file that is no journal says so', async () => {
    const io = captureIO();
    expect(await main(['report', path.join(work, 'a.md')], io)).toBe(1);
    expect(io.err()).toContain('not_a_journal');
  });
});

describe.skipIf(!existsSync(CHROMIUM))(`the report in headless Chromium (${CHROMIUM})`, () => {
  it('opens a transcript from the timeline and builds a round input, loading nothing', async () => {
    const { chromium } = await import('playwright-core');
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
      await page.goto(pathToFileURL(htmlFile).href);
      const crashed = crashedAgent();
      await page.locator(`g.row[data-agent="${crashed}"] text.label`).first().click();
      const transcript = page.locator(`details.transcript[data-agent="${crashed}"]`);
      expect(await transcript.evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(true);
      const input = transcript.locator('details.input').last();
      await input.locator('summary').first().click();
      await input.locator('.input-body details.sec summary', { hasText: 'History' }).click();
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text.
      const history = await input.locator('.input-body').innerText();
      expect(history).toContain('Tool call: crash_exit {}');
      expect(history).toContain('interrupted');
      expect(errors).toEqual([]);
      expect(requests.filter((url) => !url.startsWith('file:'))).toEqual([]);
      // The page's policy lets its own script run (above) and no other: a script element added
      // with any text, as a wrongly escaped text might one day make, does not run.
      const ran = await page.evaluate(
        `(() => { const script = document.createElement('script'); script.textContent = 'document.body.dataset.pwned = "yes"'; document.body.append(script); return document.body.dataset.pwned ?? 'no'; })()`,
      );
      expect(ran).toBe('no');
    } finally {
      await context.close();
    }
  });
});
