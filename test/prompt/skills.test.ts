import { mkdir, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SKILL_BYTE_LIMIT, SKILL_FRONTMATTER_BYTE_LIMIT } from '../../src/constants.ts';
import { checkSkills } from '../../src/prompt/assemble.ts';
import {
  discoverSkills,
  parseSkill,
  renderSkillsSection,
  SKILL_TOO_LARGE_WARNING_CODE,
} from '../../src/prompt/skills.ts';
import { useTempDirs, writeTree } from './temp-dir.ts';

const tempDir = useTempDirs();

const skill = (name: string, description: string, body = `Instructions of ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

describe('skills', () => {
  it('skips a SKILL.md over the bound with a warning naming it and the bound, reading no more of it', async () => {
    const repo = await tempDir();
    const home = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/big/SKILL.md': skill('big', 'Too long'),
      '.troupe/skills/huge/SKILL.md': skill('huge', 'Far too long'),
      '.troupe/skills/small/SKILL.md': skill('small', 'Fine'),
    });
    const big = path.join(repo, '.troupe/skills/big/SKILL.md');
    const huge = path.join(repo, '.troupe/skills/huge/SKILL.md');
    await truncate(big, SKILL_BYTE_LIMIT + 1);
    await truncate(huge, 3 * 2 ** 30); // sparse: read whole it was refused, and skipped unsaid
    const warnings: (Error & { code?: string })[] = [];
    const listener = (warning: Error): void => void warnings.push(warning);
    process.on('warning', listener);
    try {
      const skills = await discoverSkills(repo, { homeDir: home });
      expect([...skills.keys()]).toEqual(['small']);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    const ours = warnings.filter((warning) => warning.code === SKILL_TOO_LARGE_WARNING_CODE);
    expect(ours.map((warning) => warning.message)).toEqual([
      `Skipped skill ${big}: it is longer than ${SKILL_BYTE_LIMIT} bytes, the most troupe reads of a SKILL.md (SKILL_BYTE_LIMIT)`,
      `Skipped skill ${huge}: it is longer than ${SKILL_BYTE_LIMIT} bytes, the most troupe reads of a SKILL.md (SKILL_BYTE_LIMIT)`,
    ]);
  });

  it('fails a definition pre-loading a SKILL.md over the bound naming the file, its size and the bound', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git/HEAD': 'x', '.troupe/skills/big/SKILL.md': skill('big', 'Too long') });
    const big = path.join(repo, '.troupe/skills/big/SKILL.md');
    await truncate(big, SKILL_BYTE_LIMIT + 1);
    const def = { skills: ['big'], path: path.join(repo, 'agent.md'), bodyLine: 1 };
    // It failed as an unknown skill ("no skills were found"), only a warning saying why.
    const error = await checkSkills(def, repo, { homeDir: repo }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: 'skill_too_large',
      message:
        `${def.path}: skill \`big\` is not loaded: ${big} is ${SKILL_BYTE_LIMIT + 1} bytes, over ` +
        `${SKILL_BYTE_LIMIT} bytes, the most troupe reads of a SKILL.md (SKILL_BYTE_LIMIT)`,
      fields: { skill: 'big', skillFile: big, size: SKILL_BYTE_LIMIT + 1, limit: SKILL_BYTE_LIMIT },
    });
  });

  it('fails a definition pre-loading a SKILL.md over the bound by its frontmatter name as too large', async () => {
    const repo = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/big/SKILL.md': skill('release-notes', 'Too long'),
      // A frontmatter that does not close within the bytes read for it: known by its folder.
      '.troupe/skills/open/SKILL.md': `---\nname: never-closed\ndescription: ${'x'.repeat(SKILL_FRONTMATTER_BYTE_LIMIT)}\n---\n`,
    });
    const big = path.join(repo, '.troupe/skills/big/SKILL.md');
    const open = path.join(repo, '.troupe/skills/open/SKILL.md');
    await truncate(big, SKILL_BYTE_LIMIT + 1);
    await truncate(open, SKILL_BYTE_LIMIT + 1);
    const failure = (skills: string[]) =>
      checkSkills({ skills, path: path.join(repo, 'agent.md'), bodyLine: 1 }, repo, { homeDir: repo }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
    // It failed as an unknown skill: only the folder name of a skipped SKILL.md was known.
    expect(await failure(['release-notes'])).toMatchObject({
      code: 'skill_too_large',
      fields: { skill: 'release-notes', skillFile: big, size: SKILL_BYTE_LIMIT + 1, limit: SKILL_BYTE_LIMIT },
    });
    expect(await failure(['open'])).toMatchObject({
      code: 'skill_too_large',
      fields: { skill: 'open', skillFile: open, size: SKILL_BYTE_LIMIT + 1 },
    });
    expect(await failure(['big'])).toMatchObject({ code: 'unknown_skill' });
  });

  it('lets a project SKILL.md over the bound shadow a smaller user or compat skill of its name', async () => {
    const repo = await tempDir();
    const home = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/review/SKILL.md': skill('review', 'The project review, too long'),
      '.claude/skills/review/SKILL.md': skill('review', 'A compat review'),
    });
    await writeTree(home, {
      '.troupe/skills/review/SKILL.md': skill('review', 'A user review'),
      '.claude/skills/review/SKILL.md': skill('review', 'A compat user review'),
    });
    const big = path.join(repo, '.troupe/skills/review/SKILL.md');
    await truncate(big, SKILL_BYTE_LIMIT + 1);
    const def = { skills: ['review'], path: path.join(repo, 'agent.md'), bodyLine: 1 };
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      // The user's review was pre-loaded in its place, silently (a warning said only that the
      // project's was skipped).
      const error = await checkSkills(def, repo).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({
        code: 'skill_too_large',
        fields: { skill: 'review', skillFile: big, size: SKILL_BYTE_LIMIT + 1, limit: SKILL_BYTE_LIMIT },
      });
      expect((await discoverSkills(repo)).has('review')).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.HOME;
      else process.env.HOME = saved;
    }
  });

  it('finds project, user and compat skills with their frontmatter and body', async () => {
    const repo = await tempDir();
    const home = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/release/SKILL.md': skill('release', 'Cut a release'),
      '.claude/skills/lint/SKILL.md': skill('lint', 'Fix lint errors'),
      '.troupe/skills/not-a-skill/README.md': 'no SKILL.md here',
    });
    await writeTree(home, { '.troupe/skills/triage/SKILL.md': skill('triage', 'Sort issues') });
    const skills = await discoverSkills(repo, { homeDir: home });
    expect([...skills.keys()].sort()).toEqual(['lint', 'release', 'triage']);
    expect(skills.get('release')).toEqual({
      name: 'release',
      description: 'Cut a release',
      path: path.join(repo, '.troupe/skills/release/SKILL.md'),
      body: 'Instructions of release.',
      source: 'project',
    });
    expect(skills.get('triage')?.source).toBe('user');
    expect(skills.get('lint')?.source).toBe('compat');
  });

  it('lets a closer project dir beat an outer one, project beat user, and user beat compat', async () => {
    const repo = await tempDir();
    const home = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/a/SKILL.md': skill('a', 'outer project'),
      'pkg/.troupe/skills/a/SKILL.md': skill('a', 'closer project'),
      '.troupe/skills/b/SKILL.md': skill('b', 'project'),
      'pkg/.claude/skills/c/SKILL.md': skill('c', 'compat'),
    });
    await writeTree(home, {
      '.troupe/skills/b/SKILL.md': skill('b', 'user'),
      '.troupe/skills/c/SKILL.md': skill('c', 'user'),
    });
    const skills = await discoverSkills(path.join(repo, 'pkg'), { homeDir: home });
    expect(skills.get('a')?.description).toBe('closer project');
    expect(skills.get('b')?.description).toBe('project');
    expect(skills.get('c')?.description).toBe('user');
  });

  it('ignores .claude/skills when compat is off', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.claude/skills/lint/SKILL.md': skill('lint', 'Fix lint') });
    expect((await discoverSkills(repo, { homeDir: repo, compat: false })).size).toBe(0);
    expect((await discoverSkills(repo, { homeDir: repo })).has('lint')).toBe(true);
  });

  it("skips, with a warning, a project's SKILL.md that links outside the project; the user's may link anywhere", async () => {
    const outside = await tempDir();
    const repo = await tempDir();
    const home = await tempDir();
    await writeFile(path.join(outside, 'id_rsa'), 'PRIVATE KEY');
    await writeFile(path.join(outside, 'mine.md'), skill('mine', 'Kept elsewhere'));
    await writeTree(repo, { '.git/HEAD': 'x', '.claude/skills/ok/SKILL.md': skill('ok', 'Inside') });
    await mkdir(path.join(repo, '.claude/skills/steal'), { recursive: true });
    await symlink(path.join(outside, 'id_rsa'), path.join(repo, '.claude/skills/steal/SKILL.md'));
    await mkdir(path.join(home, '.claude/skills/mine'), { recursive: true });
    await symlink(path.join(outside, 'mine.md'), path.join(home, '.claude/skills/mine/SKILL.md'));
    const warnings: Error[] = [];
    const listener = (warning: Error): void => void warnings.push(warning);
    process.on('warning', listener);
    try {
      const skills = await discoverSkills(repo, { homeDir: home });
      expect([...skills.keys()].sort()).toEqual(['mine', 'ok']);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    expect(warnings.map((warning) => warning.message)).toEqual([
      expect.stringContaining(
        `${path.join(repo, '.claude/skills/steal/SKILL.md')}: it links to ${path.join(outside, 'id_rsa')}, outside the project`,
      ),
    ]);
  });

  it('keeps a skill with broken or missing frontmatter under its folder name', async () => {
    expect(await parseSkill('---\nname: [unclosed\n---\nBody', 'folder')).toEqual({
      name: 'folder',
      description: '',
      body: 'Body',
    });
    expect(await parseSkill('Just text.', 'plain')).toEqual({
      name: 'plain',
      description: '',
      body: 'Just text.',
    });
    expect(
      await parseSkill('\uFEFF---\r\nname: crlf\r\ndescription: "quoted: yes"\r\n---\r\nBody\r\n', 'x'),
    ).toEqual({
      name: 'crlf',
      description: 'quoted: yes',
      body: 'Body',
    });
  });

  it('pre-loads named skills in full and lists the rest by name and description', async () => {
    const repo = await tempDir();
    await writeTree(repo, {
      '.troupe/skills/release/SKILL.md': skill('release', 'Cut a release', 'Step 1: tag.\nStep 2: push.'),
      '.troupe/skills/triage/SKILL.md': skill('triage', 'Sort issues'),
    });
    const skills = await discoverSkills(repo, { homeDir: repo });
    const release = skills.get('release');
    const triage = skills.get('triage');
    if (release === undefined || triage === undefined) throw new Error('skills not found');
    const section = renderSkillsSection([release], [triage]);
    expect(section).toContain('<skill name="release">\nStep 1: tag.\nStep 2: push.\n</skill>');
    expect(section).toContain(`- triage: Sort issues (${triage.path})`);
    expect(section).not.toContain('Instructions of triage');
    expect(renderSkillsSection([], [])).toBe('');
  });
});
