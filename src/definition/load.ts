/**
 * Loading one definition: text or file -> AgentDefinition plus every error and warning. These
 * functions never throw; unreadable files, bad YAML and internal surprises all become problems.
 */

import { isUtf8 } from 'node:buffer';
import { resolve } from 'node:path';
import { readFileWithin } from '../bounded-read.ts';
import { DEFINITION_BYTE_LIMIT } from './constants.ts';

export { definitionContent, definitionHash } from './hash.ts';

import { normalizeSource, type ParseMode, splitFrontmatter } from './frontmatter.ts';
import { definitionHash } from './hash.ts';
import { FILE_START, ProblemList } from './problems.ts';
import type { KnownTools } from './tool-references.ts';
import type { AgentDefinition, DefinitionProblem, DefinitionSource, SourcePosition } from './types.ts';
import { slugify, validateDefinition } from './validate.ts';
import { readFrontmatter } from './yaml-frontmatter.ts';

/** How to read one definition. */
export interface LoadOptions {
  /**
   * `lenient` falls back to line-based reading when strict YAML fails (compat sources only).
   * @default 'lenient' when `source` is `compat`, else 'strict'
   */
  readonly mode?: ParseMode;
  /**
   * Where the definition comes from. `compat` also turns a name with capitals or spaces into a
   * warning (the name is slugified) instead of an error.
   * @default 'project'
   */
  readonly source?: DefinitionSource;
  /** Canonical tool names of the tool registry, to check tool references against (see ValidationTarget). */
  readonly knownTools?: ReadonlySet<string> | KnownTools;
  /**
   * The definition's `path` field.
   * @default the file path (absolute), as given to parseDefinition or loadDefinitionFile
   */
  readonly path?: string;
}

/** The outcome of loading one definition. `definition` is present exactly when `errors` is empty. */
export interface LoadResult {
  readonly definition?: AgentDefinition;
  /** The agent's name when it could be read, even if the definition has errors. */
  readonly name?: string;
  /**
   * Where `name` is written (its value's line and column), when the name could be read: the place
   * a problem about the name as a whole (`shadowed`) points at.
   */
  readonly nameAt?: SourcePosition;
  readonly errors: DefinitionProblem[];
  readonly warnings: DefinitionProblem[];
}

/** Parses definition text. `file` names the source in problems (use an absolute path or `builtin:<name>`). */
export function parseDefinition(text: string, file: string, options: LoadOptions = {}): LoadResult {
  const problems = new ProblemList(file);
  const source = options.source ?? 'project';
  const mode = options.mode ?? (source === 'compat' ? 'lenient' : 'strict');
  let name: string | undefined;
  let nameAt: SourcePosition | undefined;
  try {
    const split = splitFrontmatter(normalizeSource(text), mode, problems);
    const data = split && readFrontmatter(split, mode, problems);
    if (split && data) {
      const rawName = data.values.name;
      if (typeof rawName === 'string' && rawName.trim() !== '') {
        name = slugify(rawName);
        nameAt = data.valueAt(['name']);
      }
      const target = { source, path: options.path ?? file, knownTools: options.knownTools };
      const validated = validateDefinition(data, split, target, problems);
      if (validated) {
        // The hash of what the text reads as: a definition changed since (a spread with other
        // tools) no longer matches it, and is recorded by its content (src/loop/pinning.ts).
        const definition = { ...validated, text, textHash: definitionHash(validated) };
        return { definition, name: definition.name, nameAt, errors: [], warnings: problems.warnings };
      }
    }
  } catch (error) {
    // A bug here must not take down discovery of every other agent: report it against the file.
    const reason = error instanceof Error ? error.message : String(error);
    problems.error('parse_error', `Internal error while reading the definition: ${reason}`, FILE_START);
  }
  return {
    ...(name === undefined ? {} : { name }),
    ...(nameAt === undefined ? {} : { nameAt }),
    errors: problems.errors,
    warnings: problems.warnings,
  };
}

/**
 * Reads and parses a definition file. I/O failures become an `io_error` problem, as does a file of
 * more than DEFINITION_BYTE_LIMIT bytes (at most one byte more is read, whatever `stat` says).
 */
export async function loadDefinitionFile(file: string, options: LoadOptions = {}): Promise<LoadResult> {
  const absolute = resolve(file);
  const problems = new ProblemList(absolute);
  try {
    const read = await readFileWithin(absolute, DEFINITION_BYTE_LIMIT);
    if (read.kind === 'not_file') {
      problems.error(
        'io_error',
        `Expected a definition file, found ${read.directory ? 'a directory' : 'no regular file'}`,
        FILE_START,
      );
    } else if (read.kind === 'too_large') {
      problems.error(
        'io_error',
        `Expected a definition file of at most ${DEFINITION_BYTE_LIMIT} bytes, found more (troupe reads no further)`,
        FILE_START,
      );
    } else {
      const { bytes } = read;
      const text = bytes.toString('utf8');
      const result = parseDefinition(text, absolute, options);
      if (isUtf8(bytes)) return result;
      // Read on as Claude Code does (each bad sequence becomes U+FFFD), but said, at the first.
      const at = text.indexOf('\uFFFD');
      const before = text.slice(0, Math.max(0, at));
      const line = before.split('\n').length;
      problems.warning(
        'invalid_utf8',
        'Expected UTF-8 text, found bytes that are not UTF-8 (read as U+FFFD, �); save the file as UTF-8',
        { line, column: at - (before.lastIndexOf('\n') + 1) + 1 },
      );
      return { ...result, warnings: [...problems.warnings, ...result.warnings] };
    }
  } catch (error) {
    problems.error('io_error', `Could not read the file: ${describeIoError(error)}`, FILE_START);
  }
  return { errors: problems.errors, warnings: problems.warnings };
}

function describeIoError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === undefined ? error.message : `${code} (${error.message})`;
  }
  return String(error);
}
