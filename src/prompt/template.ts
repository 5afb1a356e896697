/**
 * troupe's prompt templates: liquid with `${{ expr }}` and `${% tag %}` delimiters, so that the
 * `{{ }}`, `{% %}` and `${ }` that prompts quote from other languages pass through untouched.
 */
import type * as LiquidJs from 'liquidjs';
import type { TagToken, TopLevelToken } from 'liquidjs';
import { UserError } from '../errors.ts';
import { requirePackage } from '../require-package.ts';

// CommonJS: required, not imported (src/require-package.ts says why).
const { Liquid, LiquidError, Tag } = requirePackage('liquidjs') as typeof LiquidJs;
type Liquid = LiquidJs.Liquid;

/** A template and where it came from, for error positions. */
export interface TemplateSource {
  readonly text: string;
  /** File the template was read from (`builtin:...` for troupe's own). */
  readonly file: string;
  /** 1-based line in `file` where `text` starts. */
  readonly firstLine: number;
}

// Templates come from agent definitions; they must not read files through include/render/layout.
const FILE_TAGS = ['include', 'render', 'layout'] as const;

function createEngine(): Liquid {
  const engine = new Liquid({
    outputDelimiterLeft: '${{',
    outputDelimiterRight: '}}',
    tagDelimiterLeft: '${%',
    tagDelimiterRight: '%}',
    strictVariables: true,
    strictFilters: true,
    jsTruthy: true,
    ownPropertyOnly: true,
    // Dates render the same on every machine, and liquidjs skips asking Intl for the system's
    // locale: ~100 ms of an actor-host thread's start, on the first Intl.DateTimeFormat.
    locale: 'en-US',
    // Applied to the value of every output, after its filters: a mapping or a list (a settings
    // value) renders as JSON, not as liquid's `[object Object]` or its items run together.
    outputEscape: structuredAsJson as (value: unknown) => string,
  });
  for (const name of FILE_TAGS) {
    engine.registerTag(
      name,
      class extends Tag {
        constructor(token: TagToken, remaining: TopLevelToken[], liquid: Liquid) {
          super(token, remaining, liquid);
          throw new Error(
            `the \`${name}\` tag is not available in troupe templates (they cannot read files)`,
          );
        }
        render(): void {}
      },
    );
  }
  return engine;
}

const engine = createEngine();

/**
 * A list or a plain mapping as its JSON; any other value as it is, for liquid to output as usual
 * (`null` and `undefined` as nothing, a Date or a liquid drop by its own rendering).
 */
function structuredAsJson(value: unknown): unknown {
  if (Array.isArray(value)) return JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return value;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null ? JSON.stringify(value) : value;
}

/**
 * Renders a template. Throws UserError `template_error` (fields: `file`, `line`, `column`, 1-based,
 * as positions in `source.file`) for a syntax error, an unknown variable, filter or tag.
 */
export async function renderTemplate(
  source: TemplateSource,
  variables: Readonly<Record<string, unknown>>,
): Promise<string> {
  try {
    return await engine.render(engine.parse(source.text), variables);
  } catch (error) {
    throw templateError(error, source, variables);
  }
}

function templateError(
  error: unknown,
  source: TemplateSource,
  variables: Readonly<Record<string, unknown>>,
): UserError {
  let line = source.firstLine;
  let column = 1;
  let message = error instanceof Error ? error.message : String(error);
  if (LiquidError.is(error)) {
    const [lineInText, columnInText] = error.token.getPosition();
    line = source.firstLine + (lineInText ?? 1) - 1;
    column = columnInText ?? 1;
    message = message.replace(/, line:\d+, col:\d+$/, '');
    if (error.name === 'UndefinedVariableError') {
      const name = message.replace(/^undefined variable: /, '');
      message = `unknown variable \`${name}\` (known: ${knownNames(name, variables)})`;
    }
  }
  return new UserError('template_error', `${source.file}:${line}:${column}: ${message}`, {
    file: source.file,
    line,
    column,
  });
}

/**
 * The names a template could have meant: the members of the deepest mapping the name reaches
 * (`settings.acme.weights.missing` -> `settings.acme.weights.urgency, ...`), else the top level.
 */
function knownNames(name: string, variables: Readonly<Record<string, unknown>>): string {
  const parts = name.split('.');
  let scope: unknown = variables;
  let prefix = '';
  for (const part of parts.slice(0, -1)) {
    if (typeof scope !== 'object' || scope === null || !Object.hasOwn(scope, part)) break;
    const next = (scope as Record<string, unknown>)[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) break;
    scope = next;
    prefix += `${part}.`;
  }
  const names = Object.keys(scope as object).map((key) => `${prefix}${key}`);
  return names.length === 0 ? `none under \`${prefix.slice(0, -1)}\`` : names.join(', ');
}
