/**
 * Parsed frontmatter values together with a way to find where each value was written, whether the
 * values came from the YAML parser or from the lenient line reader.
 */
import { isMap, isScalar, isSeq, type LineCounter, type Node } from 'yaml';
import type { FrontmatterSplit } from './frontmatter.ts';
import type { PathSegment } from './problems.ts';
import type { SourcePosition } from './types.ts';

/** Frontmatter values and their positions in the original file. */
export interface FrontmatterData {
  /** Top-level keys and their values, in file order (own properties only, `__proto__` included). */
  readonly values: Readonly<Record<string, unknown>>;
  /** Where the key at `path` is written, or the closest existing ancestor's key, or the opening fence. */
  keyAt(path: readonly PathSegment[]): SourcePosition;
  /** Where the value at `path` starts, falling back like {@link FrontmatterData.keyAt}. */
  valueAt(path: readonly PathSegment[]): SourcePosition;
}

/** Maps offsets in (a piece of) the YAML text to positions in the original file. */
export class YamlPositions {
  readonly #split: FrontmatterSplit;
  readonly #lineCounter: LineCounter;
  readonly #firstLine: number;

  /**
   * @param firstLine 0-based index of the YAML line where the parsed text starts (non-zero when a
   *   lenient reader parses one top-level entry on its own).
   */
  constructor(split: FrontmatterSplit, lineCounter: LineCounter, firstLine = 0) {
    this.#split = split;
    this.#lineCounter = lineCounter;
    this.#firstLine = firstLine;
  }

  /** The original-file position of `offset` in the parsed text. */
  at(offset: number): SourcePosition {
    const { line, col } = this.#lineCounter.linePos(offset);
    const yamlLine = this.#firstLine + Math.max(line, 1) - 1;
    return {
      line: this.#split.yamlLine + yamlLine,
      column: col + (this.#split.columnShifts[yamlLine] ?? 0),
    };
  }
}

interface Found {
  /** The deepest key (or list item) found along the path. */
  readonly key: Node | undefined;
  /** The value at the full path, when the whole path exists. */
  readonly value: Node | undefined;
}

/** Looks up key and value nodes of a composed YAML document by path. */
export class YamlNodeLocator {
  readonly #root: Node | null;
  readonly #positions: YamlPositions;
  readonly #fallback: SourcePosition;

  constructor(root: Node | null, positions: YamlPositions, fallback: SourcePosition) {
    this.#root = root;
    this.#positions = positions;
    this.#fallback = fallback;
  }

  keyAt(path: readonly PathSegment[]): SourcePosition {
    return this.#position(this.#find(path).key);
  }

  valueAt(path: readonly PathSegment[]): SourcePosition {
    const found = this.#find(path);
    return this.#position(found.value?.range ? found.value : found.key);
  }

  #position(node: Node | undefined): SourcePosition {
    const offset = node?.range?.[0];
    return offset === undefined ? this.#fallback : this.#positions.at(offset);
  }

  #find(path: readonly PathSegment[]): Found {
    let node: unknown = this.#root;
    let key: Node | undefined;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find(
          (item) => isScalar(item.key) && String(item.key.value) === String(segment),
        );
        if (!pair) return { key, value: undefined };
        if (isScalar(pair.key)) key = pair.key;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number') {
        const item: unknown = node.items[segment];
        if (!isNodeLike(item)) return { key, value: undefined };
        key = item;
        node = item;
      } else {
        return { key, value: undefined };
      }
    }
    return { key, value: isNodeLike(node) ? node : undefined };
  }
}

function isNodeLike(value: unknown): value is Node {
  return isMap(value) || isSeq(value) || isScalar(value);
}
