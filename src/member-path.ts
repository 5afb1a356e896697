/**
 * A path into a parsed document, written as errors name it: `runs[2].task`,
 * `mcpServers["my.server"].env`. Indexes are bracketed, keys that read as identifiers (hyphens
 * allowed, as in `allowed-tools`) are dotted, and any other key is quoted, so `a.b` the key is
 * never mistaken for `a` then `b`. The empty path is the empty string.
 */
export function memberPath(path: readonly (string | number)[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/;
