/**
 * OpenTelemetry export for CLI runs: `--otlp URL`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables, sends the run's spans over OTLP/HTTP (JSON) to a
 * collector, Jaeger, Langfuse or any OTLP receiver; `OTEL_SERVICE_NAME` names the service
 * (default `troupe`). The SDK is loaded only when export is asked for: runs without it load none.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { describeValue, UserError } from '../../errors.ts';
import { redactText } from '../../journal/redact.ts';
import type { SupervisorOptions } from '../../supervisor/options.ts';
import type { CliIO } from './io.ts';

/** Where and how a CLI run exports its spans. */
export interface OtlpChoice {
  /** Full URL spans are POSTed to (`.../v1/traces`). */
  readonly url: string;
  readonly serviceName: string;
  /** Prompts, tool arguments and results on spans (masked): `--otlp-content` or the GenAI variable. */
  readonly captureContent: boolean;
}

/** The variable OpenTelemetry's GenAI instrumentations read to record message content. */
export const CAPTURE_CONTENT_ENV = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

/** The export `flag` and the environment ask for; undefined when neither does. */
export function otlpChoice(
  flag: string | undefined,
  content: boolean | undefined,
  env: NodeJS.ProcessEnv = process.env,
): OtlpChoice | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = flag ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  // The signal-specific variable is used as given; a base URL gets the traces path (OTLP spec).
  const url =
    flag === undefined && traces !== undefined && traces !== ''
      ? traces
      : base === undefined || base === ''
        ? undefined
        : /\/v1\/traces\/?$/.test(base)
          ? base
          : `${base.replace(/\/+$/, '')}/v1/traces`;
  if (url === undefined) return undefined;
  // The value as the user gave it is what is wrong, not the traces URL made from it.
  const given = flag !== undefined || !traces ? (base ?? url) : url;
  const problem = urlProblem(url, given);
  if (problem !== undefined) {
    const source =
      flag !== undefined
        ? '--otlp'
        : traces
          ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
          : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    throw new UserError('invalid_option', `Expected ${source} to be ${problem}`, { option: source, url });
  }
  return {
    url,
    serviceName: env.OTEL_SERVICE_NAME || 'troupe',
    captureContent: content === true || env[CAPTURE_CONTENT_ENV]?.toLowerCase() === 'true',
  };
}

/**
 * What is wrong with `url` as an OTLP/HTTP endpoint (`an http or https URL ..., got <given>`), or
 * undefined; `given` is the value the user set, `url` may have the traces path added.
 */
function urlProblem(url: string, given: string): string | undefined {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  return protocol === 'http:' || protocol === 'https:'
    ? undefined
    : `an http or https URL (e.g. http://localhost:4318), got ${describeValue(given)}`;
}

/** The `--otlp` parser: an http(s) URL, checked before anything runs. */
function otlpUrl(value: string): string {
  const problem = urlProblem(value, value);
  if (problem !== undefined) throw new InvalidArgumentError(`Expected ${problem}.`);
  return value;
}

/** An exporting tracer provider, registered globally for the run. */
export interface CliTelemetry {
  readonly captureContent: boolean;
  /** Runs `work` inside a root `invoke_workflow NAME` span, so the run is one trace. */
  within<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** Sends the spans still buffered and stops exporting; failures are reported on stderr, never thrown. */
  shutdown(): Promise<void>;
}

/** Registers an OTLP/HTTP exporting tracer provider for `choice`. */
export async function startTelemetry(choice: OtlpChoice, io: CliIO): Promise<CliTelemetry> {
  const [
    { context, trace, SpanStatusCode },
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    resources,
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const { packageVersion } = await import('../../package-files.ts');
  const provider = new NodeTracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': choice.serviceName,
      'service.version': packageVersion(),
    }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: choice.url }))],
  });
  provider.register();
  return {
    captureContent: choice.captureContent,
    within: async (name, work) => {
      const tracer = trace.getTracer('troupe');
      const span = tracer.startSpan(`invoke_workflow ${name}`, {
        attributes: { 'gen_ai.operation.name': 'invoke_workflow' },
      });
      try {
        return await context.with(trace.setSpan(context.active(), span), work);
      } catch (error) {
        // The message may quote a key (a provider's 401 body): masked like every other span text.
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: redactText(error instanceof Error ? error.message : String(error)),
        });
        throw error;
      } finally {
        span.end();
      }
    },
    shutdown: async () => {
      const report = (error: unknown): void =>
        io.stderr(
          `troupe: could not export traces to ${redactText(choice.url)}: ${redactText(error instanceof Error ? error.message : String(error))}\n`,
        );
      // A failed flush (the collector is down) still shuts the provider down: its processor and
      // exporter stop, and the spans still queued get their one attempt.
      let failed = false;
      await provider.forceFlush().catch((error: unknown) => {
        failed = true;
        report(error);
      });
      await provider.shutdown().catch((error: unknown) => {
        if (!failed) report(error);
      });
      trace.disable();
      context.disable();
    },
  };
}

/** The flags of commands that can export spans. */
export interface OtlpFlags {
  readonly otlp?: string;
  readonly otlpContent?: boolean;
}

/**
 * Adds `--otlp URL` and `--otlp-content` to `command`, and checks the endpoint the flag or the
 * environment names before the command's action runs: a bad one fails with `invalid_option` before
 * a run directory or journal is created.
 */
export function otlpOptions(command: Command): Command {
  return command
    .hook('preAction', (_command, action) => {
      const flags = action.opts<OtlpFlags>();
      if (otlpChoice(flags.otlp, flags.otlpContent) === undefined && flags.otlpContent === true) {
        // Alone it exported nothing and said nothing: the user believed the content was captured.
        throw new UserError(
          'invalid_option',
          '--otlp-content goes with --otlp URL (or OTEL_EXPORTER_OTLP_ENDPOINT): without an endpoint no trace is exported',
          { option: '--otlp-content' },
        );
      }
    })
    .option(
      '--otlp <url>',
      'send OpenTelemetry traces over OTLP/HTTP to this collector, e.g. http://localhost:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT)',
      otlpUrl,
    )
    .option(
      '--otlp-content',
      `with --otlp: put prompts, tool arguments and results on the spans, secrets masked (or ${CAPTURE_CONTENT_ENV}=true)`,
    );
}

/**
 * Runs `work` with traces exported when `flags` or the environment ask for it, inside one root span
 * `invoke_workflow NAME`; `work` gets the supervisor options that say whether to record content.
 */
export async function withTelemetry<T>(
  flags: OtlpFlags,
  io: CliIO,
  name: string,
  work: (supervisor: Partial<SupervisorOptions>) => Promise<T>,
): Promise<T> {
  const choice = otlpChoice(flags.otlp, flags.otlpContent);
  if (choice === undefined) return work({});
  const telemetry = await startTelemetry(choice, io);
  try {
    return await telemetry.within(name, () => work({ tracing: { captureContent: choice.captureContent } }));
  } finally {
    await telemetry.shutdown();
  }
}
