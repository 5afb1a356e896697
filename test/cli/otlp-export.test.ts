import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { otlpChoice } from '../../src/cli/shared/telemetry.ts';
import { simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';

interface OtlpValue {
  readonly stringValue?: string;
  readonly intValue?: number | string;
  readonly boolValue?: boolean;
  readonly doubleValue?: number;
  readonly arrayValue?: { values: OtlpValue[] };
}
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly attributes: { key: string; value: OtlpValue }[];
  readonly events?: { name: string }[];
}
interface OtlpRequest {
  readonly resourceSpans: {
    resource: { attributes: { key: string; value: OtlpValue }[] };
    scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
  }[];
}

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.arrayValue;
};

let dir: string;
let cleanup: () => void;
let server: Server;
let requests: { path: string; contentType: string; body: OtlpRequest }[];
beforeEach(async () => {
  ({ dir, cleanup } = tempDir());
  requests = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterEach(async () => {
  cleanup();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('troupe fanout --otlp', () => {
  it('exports the run as one trace over OTLP/HTTP: workflow, agents, model requests and tool calls', async () => {
    writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      [
        'name: otlp check',
        'threads: 2',
        'runs:',
        '  - agent: worker',
        '    task: Review a.md',
        '  - agent: worker',
        '    task: Review a.md again',
        '',
      ].join('\n'),
    );
    const { port } = server.address() as AddressInfo;
    const run = startCli(['fanout', 'plan.yaml', '--otlp', `http://127.0.0.1:${port}`], {
      cwd: dir,
      env: { ...simulatedEnv(), OTEL_SERVICE_NAME: 'troupe-e2e' },
    });
    expect(await run.exited, run.stderr()).toBe(0);

    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      expect(request.path).toBe('/v1/traces');
      expect(request.contentType).toContain('application/json');
    }
    const resources = requests.flatMap((r) => r.body.resourceSpans);
    for (const resource of resources) {
      expect(resource.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue).toBe(
        'troupe-e2e',
      );
    }
    const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const root = spans.filter((s) => !s.parentSpanId);
    expect(root.map((s) => s.name)).toEqual(['invoke_workflow otlp check']);
    const agents = spans.filter((s) => attr(s, 'gen_ai.operation.name') === 'invoke_agent');
    expect(agents.map((s) => s.name)).toEqual(['invoke_agent worker', 'invoke_agent worker']);
    for (const agent of agents) {
      expect(agent.parentSpanId).toBe(root[0]?.spanId);
      expect(attr(agent, 'gen_ai.system')).toBe('simulated');
      expect(attr(agent, 'troupe.agent.status')).toBe('completed');
      const chats = spans.filter(
        (s) => s.parentSpanId === agent.spanId && attr(s, 'gen_ai.operation.name') === 'chat',
      );
      expect(chats.length).toBeGreaterThan(0);
      for (const chat of chats) {
        expect(attr(chat, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
        expect(attr(chat, 'gen_ai.response.model')).toEqual(expect.any(String));
      }
      const tools = spans.filter(
        (s) => s.parentSpanId === agent.spanId && attr(s, 'gen_ai.operation.name') === 'execute_tool',
      );
      expect(tools.map((s) => attr(s, 'gen_ai.tool.name'))).toContain('complete_task');
      for (const tool of tools) expect(attr(tool, 'gen_ai.tool.call.id')).toEqual(expect.any(String));
      // No content without --otlp-content.
      for (const tool of tools) expect(attr(tool, 'gen_ai.tool.call.arguments')).toBeUndefined();
    }
  });
});

describe('troupe run --otlp --otlp-content', () => {
  it('exports the one agent under the run span, with its task and tool arguments', async () => {
    writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
    const { port } = server.address() as AddressInfo;
    const run = startCli(
      [
        'run',
        'worker',
        '--task',
        'Review a.md',
        '--otlp',
        `http://127.0.0.1:${port}/v1/traces`,
        '--otlp-content',
      ],
      { cwd: dir },
    );
    expect(await run.exited, run.stderr()).toBe(0);
    const spans = requests.flatMap((r) =>
      r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)),
    );
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const root = spans.filter((s) => !s.parentSpanId);
    expect(root.map((s) => s.name)).toEqual(['invoke_workflow run worker']);
    const agent = spans.find((s) => attr(s, 'gen_ai.operation.name') === 'invoke_agent');
    expect(agent?.parentSpanId).toBe(root[0]?.spanId);
    expect(attr(agent as OtlpSpan, 'troupe.agent.task')).toBe('Review a.md');
    const tools = spans.filter(
      (s) => s.parentSpanId === agent?.spanId && attr(s, 'gen_ai.operation.name') === 'execute_tool',
    );
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) expect(attr(tool, 'gen_ai.tool.call.arguments')).toEqual(expect.any(String));
    expect(
      spans.some((s) => s.parentSpanId === agent?.spanId && attr(s, 'gen_ai.operation.name') === 'chat'),
    ).toBe(true);
  });
});

describe('otlpChoice', () => {
  it('--otlp and OTEL_EXPORTER_OTLP_ENDPOINT are base URLs; the traces variable is used as given', () => {
    expect(otlpChoice(undefined, undefined, {})).toBeUndefined();
    expect(otlpChoice('http://c:4318/', undefined, {})).toEqual({
      url: 'http://c:4318/v1/traces',
      serviceName: 'troupe',
      captureContent: false,
    });
    expect(otlpChoice(undefined, undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })?.url).toBe(
      'http://c:4318/v1/traces',
    );
    expect(
      otlpChoice(undefined, undefined, {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9/custom',
      })?.url,
    ).toBe('http://t:9/custom');
    expect(otlpChoice('http://c/v1/traces', undefined, { OTEL_SERVICE_NAME: 'svc' })).toMatchObject({
      url: 'http://c/v1/traces',
      serviceName: 'svc',
    });
    expect(
      otlpChoice('http://c', undefined, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' })
        ?.captureContent,
    ).toBe(true);
    expect(otlpChoice('http://c', true, {})?.captureContent).toBe(true);
  });

  it('refuses an endpoint that is not an http(s) URL with invalid_option, naming where it came from', () => {
    expect(() => otlpChoice(undefined, undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' })).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        message: expect.stringContaining('OTEL_EXPORTER_OTLP_ENDPOINT'),
      }),
    );
    expect(() =>
      otlpChoice(undefined, undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/v1/traces' }),
    ).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    expect(() => otlpChoice('localhost:4318', undefined, {})).toThrow(
      expect.objectContaining({ code: 'invalid_option', message: expect.stringContaining('--otlp') }),
    );
    // The value the user set is named, not the traces URL made from it.
    expect(() => otlpChoice(undefined, undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' })).toThrow(
      'Expected OTEL_EXPORTER_OTLP_ENDPOINT to be an http or https URL (e.g. http://localhost:4318), got `"localhost:4318"`',
    );
  });
});

describe('troupe fanout --otlp with a bad URL', () => {
  it('exits 1 before anything runs, with what was expected and no stack trace', async () => {
    writeFileSync(path.join(dir, 'plan.yaml'), 'runs:\n  - agent: worker\n    task: Review a.md\n');
    const run = startCli(['fanout', 'plan.yaml', '--otlp', 'notaurl', '--out', 'run'], { cwd: dir });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("option '--otlp <url>' argument 'notaurl' is invalid");
    expect(run.stderr()).toContain('Expected an http or https URL');
    expect(run.stderr()).not.toContain('internal error');
    expect(existsSync(path.join(dir, 'run'))).toBe(false);
  });

  it('--otlp-content without an endpoint fails with invalid_option before anything runs', async () => {
    const journal = path.join(dir, 'run.jsonl');
    const run = startCli(['run', 'worker', '--task', 'Review a.md', '--journal', journal, '--otlp-content'], {
      cwd: dir,
      env: { ...simulatedEnv(), OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('troupe: invalid_option: --otlp-content goes with --otlp URL');
    expect(existsSync(journal)).toBe(false);
  });

  it('a bad OTEL_EXPORTER_OTLP_ENDPOINT fails troupe run with invalid_option before its journal exists', async () => {
    const journal = path.join(dir, 'run.jsonl');
    const run = startCli(['run', 'worker', '--task', 'Review a.md', '--journal', journal], {
      cwd: dir,
      env: { ...simulatedEnv(), OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' },
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('troupe: invalid_option: Expected OTEL_EXPORTER_OTLP_ENDPOINT to be');
    expect(existsSync(journal)).toBe(false);
  });
});
