/** `todo_write`: the agent's todo list, kept as projection state under the key `todos`. */
import type { Tool } from '../types.ts';

/** The projection state key the todo list lives under. */
export const TODOS_STATE_KEY = 'todos';

const STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;

interface TodoItem {
  readonly content: string;
  readonly status: (typeof STATUSES)[number];
}

type TodoWriteArgs = {
  readonly todos: readonly TodoItem[];
};

/**
 * Replaces the whole todo list. The list is a state update: it shows up once in the context, in
 * its newest version, and older results of this tool are replaced by a marker. An empty list
 * removes the state.
 */
export const todoWriteTool: Tool<TodoWriteArgs> = {
  name: 'todo_write',
  description:
    'Write your todo list for this task: give the complete list every time (it replaces the previous ' +
    'one). Use it to plan multi-step work and track progress; keep exactly one item in_progress ' +
    'while you work. An empty list clears it.',
  parameters: {
    type: 'object',
    properties: {
      todos: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            content: { type: 'string', minLength: 1, description: 'What to do.' },
            status: { type: 'string', enum: [...STATUSES] },
          },
          required: ['content', 'status'],
          additionalProperties: false,
        },
      },
    },
    required: ['todos'],
    additionalProperties: false,
  },
  readOnly: true,
  execute(args) {
    if (args.todos.length === 0) {
      return { ok: true, text: 'Todo list cleared.', stateUpdates: [{ key: TODOS_STATE_KEY, text: null }] };
    }
    const text = renderTodos(args.todos);
    return {
      ok: true,
      text,
      stateUpdates: [{ key: TODOS_STATE_KEY, text }],
      displayedStateKeys: [TODOS_STATE_KEY],
    };
  },
};

function renderTodos(todos: readonly TodoItem[]): string {
  const done = todos.filter((todo) => todo.status === 'completed').length;
  const lines = todos.map((todo, i) => `${i + 1}. [${todo.status}] ${todo.content}`);
  return `Todo list (${done}/${todos.length} completed):\n${lines.join('\n')}`;
}
