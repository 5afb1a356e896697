/**
 * Help texts, error messages, TSDoc and the README send users to `docs/X.md` pages. A user of the
 * installed package has only what `npm pack` puts in the tarball, so every such page must be in
 * it. The tarball's file list comes from `npm pack --dry-run --json --ignore-scripts` (no build:
 * what `files` selects does not depend on dist/ existing).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../definition/helpers.ts';

/** `docs/X.md` not preceded by a path or URL part (`./docs/**` globs, `https://…/docs/…` are not pages). */
const DOC_REFERENCE = /(?<![\w./-])docs\/([\w-]+(?:\/[\w-]+)*\.md)\b/g;

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(repoRoot, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|mjs|js|md|yaml)$/.test(entry.name))
    .map((entry) => path.relative(repoRoot, path.join(entry.parentPath, entry.name)));
}

/** Every `docs/X.md` page named in what the package ships or compiles from, with where it is named. */
function referencedPages(): Map<string, string> {
  const pages = new Map<string, string>();
  for (const file of [...filesUnder('src'), ...filesUnder('workers'), ...filesUnder('bin'), 'README.md']) {
    for (const match of readFileSync(path.join(repoRoot, file), 'utf8').matchAll(DOC_REFERENCE)) {
      const page = `docs/${match[1]}`;
      if (!pages.has(page)) pages.set(page, file);
    }
  }
  return pages;
}

let packed: string[] | undefined;

function packedFiles(): string[] {
  if (packed !== undefined) return packed;
  const env = { ...process.env };
  // `npm test` exports its own npm context; this pack is of the checkout, as a user's would be.
  for (const key of Object.keys(env))
    if (/^npm_(config|lifecycle|package|command)_/i.test(key)) delete env[key];
  const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: repoRoot,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(pack.status, pack.stderr).toBe(0);
  const report = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m))) as { files: { path: string }[] }[];
  packed = (report[0]?.files ?? []).map((file) => file.path);
  return packed;
}

describe('the docs pages the package points users at', () => {
  it('are all in the packed package', () => {
    const pages = referencedPages();
    // The scan itself still finds what it looks for (help texts name docs/errors.md and others).
    expect(pages.has('docs/errors.md')).toBe(true);
    expect(pages.has('docs/limits.md')).toBe(true);
    const packed = new Set(packedFiles());
    const missing = [...pages]
      .filter(([page]) => !packed.has(page))
      .map(([page, from]) => `${page} (${from})`);
    expect(missing).toEqual([]);
  });

  it('leave the screenshots out of the package', () => {
    expect(packedFiles().filter((file) => file.startsWith('docs/images/'))).toEqual([]);
  });
});
