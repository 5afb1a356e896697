/**
 * troupe's package.json scripts as npm sees them when a user installs the package. npm 11 lists
 * every install-time script of a package installed from a tarball or git (`npm warn
 * install-scripts ... not yet covered by allowScripts`): a `prepare` named troupe there even though
 * npm never runs it for a tarball. The build runs before packing (`prepack`) instead.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../definition/helpers.ts';

const manifest = JSON.parse(readFileSync(`${repoRoot}/package.json`, 'utf8')) as {
  scripts: Record<string, string>;
};

describe('package.json scripts', () => {
  it('has no install-time script, so installing the package warns about none of troupe', () => {
    const installTime = ['preinstall', 'install', 'postinstall', 'prepare'];
    expect(Object.keys(manifest.scripts).filter((name) => installTime.includes(name))).toEqual([]);
  });

  it('builds dist/ before npm pack and npm publish', () => {
    expect(manifest.scripts.prepack).toBe('npm run build');
  });
});
