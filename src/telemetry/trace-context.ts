/**
 * W3C trace context (`traceparent`) for an agent's spec: written on the supervisor from the agent's
 * span, read where the agent runs to make that span the parent of whatever is traced there. Only
 * `@opentelemetry/api` is used, so this works with or without an SDK in the process.
 */
import { type Context, context, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The `traceparent` of `spanContext`. */
export function formatTraceparent(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The span context a `traceparent` names, or undefined when it is malformed or all zeros. */
export function parseTraceparent(traceparent: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(traceparent);
  if (!match) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** `base` (default: the active context) with the span `traceparent` names as its current span. */
export function contextFromTraceparent(traceparent: string, base: Context = context.active()): Context {
  const spanContext = parseTraceparent(traceparent);
  return spanContext === undefined ? base : trace.setSpanContext(base, spanContext);
}
