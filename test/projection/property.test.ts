/**
 * Model-based property test: random sequences of history pushes, state updates, removals and tool
 * outcomes (failed ones included) run against the Projection and against a deliberately naive
 * reference written from DESIGN.md's rules. After every step the renders must be equal, and the
 * incremental estimate must equal counting the reference render from scratch, for the heuristic
 * and for o200k (which is exact, see bpe-exactness.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REMOVED_MARKER, SUPERSEDED_MARKER } from '../../src/constants.ts';
import { Projection } from '../../src/projection/projection.ts';
import { heuristicCounter, o200kCounter, type TokenCounter } from '../../src/projection/token-counter.ts';
import type { ProjectionChange } from '../../src/projection/types.ts';
import type { StateUpdate } from '../../src/tools/types.ts';

/** The rules, as plainly as they can be written. */
class ReferenceProjection {
  readonly history: { text: string; displays: string[] }[] = [];
  /** In state order: an update moves its key to the end. */
  readonly states: { key: string; text: string }[] = [];

  constructor(
    readonly context: string[],
    readonly task: string,
  ) {}

  apply(change: ProjectionChange): void {
    const ok = change.ok !== false;
    if (ok) {
      for (const update of change.stateUpdates ?? []) this.#update(update);
    }
    if (change.text !== undefined) {
      this.history.push({ text: change.text, displays: ok ? [...(change.displayedStateKeys ?? [])] : [] });
    }
  }

  #update({ key, text }: StateUpdate): void {
    for (const entry of this.history) {
      if (entry.displays.includes(key)) {
        entry.text = text === null ? REMOVED_MARKER : SUPERSEDED_MARKER;
        entry.displays = [];
      }
    }
    const index = this.states.findIndex((state) => state.key === key);
    if (index >= 0) this.states.splice(index, 1);
    if (text !== null) this.states.push({ key, text });
  }

  render(): string {
    const displayed = new Set(this.history.flatMap((entry) => entry.displays));
    return [
      ...this.context,
      this.task,
      ...this.history.map((entry) => entry.text),
      ...this.states.filter((state) => !displayed.has(state.key)).map((state) => state.text),
    ]
      .filter((section) => section !== '')
      .join('\n\n');
  }
}

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const WORDS = [
  'read',
  'file',
  'ok',
  'Done.',
  'x = 1;',
  '\n',
  ' ',
  '',
  'error:',
  '中文',
  '😀',
  "it's",
  '12345',
  '...',
];

const sectionText = fc.oneof(
  fc.array(fc.constantFrom(...WORDS), { maxLength: 12 }).map((words) => words.join(' ')),
  fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }).map((words) => words.join('')),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('', SUPERSEDED_MARKER, 'big '.repeat(500)),
);
const key = fc.constantFrom(...KEYS);
const keys = fc.uniqueArray(key, { maxLength: 3 });
const update: fc.Arbitrary<StateUpdate> = fc.record({
  key,
  text: fc.oneof({ arbitrary: sectionText, weight: 3 }, fc.constant(null)),
});

type Step =
  | { readonly kind: 'push'; readonly text: string; readonly keys: string[] }
  | { readonly kind: 'updates'; readonly updates: StateUpdate[] }
  | { readonly kind: 'result'; readonly change: ProjectionChange }
  | { readonly kind: 'probe'; readonly change: ProjectionChange }
  | { readonly kind: 'restore' };

const change: fc.Arbitrary<ProjectionChange> = fc.record({
  text: sectionText,
  ok: fc.boolean(),
  stateUpdates: fc.array(update, { maxLength: 3 }),
  displayedStateKeys: keys,
});

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), text: sectionText, keys }),
  fc.record({
    kind: fc.constant('updates' as const),
    updates: fc.array(update, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant('result' as const), change }),
  fc.record({ kind: fc.constant('probe' as const), change }),
  fc.constant({ kind: 'restore' as const }),
);

function run(counter: TokenCounter, context: string[], task: string, steps: Step[]): void {
  const reserveTokens = 100;
  let projection = new Projection({ context, task, counter, reserveTokens });
  const reference = new ReferenceProjection(context, task);
  for (const current of steps) {
    switch (current.kind) {
      case 'push':
        projection.pushHistory(current.text, current.keys);
        reference.apply({ text: current.text, displayedStateKeys: current.keys });
        break;
      case 'updates':
        projection.applyUpdates(current.updates);
        reference.apply({ stateUpdates: current.updates });
        break;
      case 'result':
        projection.addToolResult({
          ...current.change,
          text: current.change.text ?? '',
          ok: current.change.ok ?? true,
        });
        reference.apply({ ...current.change, text: current.change.text ?? '' });
        break;
      case 'probe': {
        const before = projection.render();
        const candidate = projection.withCandidate(current.change);
        expect(projection.render()).toBe(before);
        const probe = new ReferenceProjection(context, task);
        probe.history.push(
          ...reference.history.map((entry) => ({ ...entry, displays: [...entry.displays] })),
        );
        probe.states.push(...reference.states.map((state) => ({ ...state })));
        probe.apply(current.change);
        expect(candidate).toBe(counter.count(probe.render()) + reserveTokens);
        break;
      }
      case 'restore':
        projection = Projection.fromSnapshot(JSON.parse(JSON.stringify(projection.snapshot())), {
          counter,
          reserveTokens,
        });
        break;
    }
    const expected = reference.render();
    expect(projection.render()).toBe(expected);
    expect(projection.estimatedTokens()).toBe(counter.count(expected) + reserveTokens);
  }
}

describe.each([heuristicCounter, o200kCounter].map((c) => [c.name, c] as const))(
  'projection against the reference model (%s)',
  (_name, counter) => {
    it('renders like the reference and estimates like a from-scratch count after every step', () => {
      fc.assert(
        fc.property(
          fc.array(sectionText, { maxLength: 3 }),
          sectionText,
          fc.array(step, { minLength: 1, maxLength: 40 }),
          (context, task, steps) => run(counter, context, task, steps),
        ),
        { numRuns: 300 },
      );
    });
  },
);
