// The supervisor's pure matcher (init/rules.c) and the read gate's (init/readgate.c), compiled
// with a small driver (test/unit/c/rules-check.c) and fed rules files written by the real
// encodeRules. What these answer is what the supervisor refuses at every creating call.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_INTERNALS, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, PROTECTED_SUFFIXES, REPOSITORY_MARKERS } from '../../src/profiles/protected.js';
import { encodeRules, type SupervisorRules } from '../../src/profiles/supervisor.js';
import { tempDir } from '../e2e/helpers.js';

const REPO = new URL('../..', import.meta.url).pathname;
const SOURCES = ['test/unit/c/rules-check.c', 'init/rules.c', 'init/readgate.c', 'init/glob.c', 'init/util.c'].map((f) => join(REPO, f));
const HEADERS = ['init/helper.h', 'init/supervisor.h'].map((f) => join(REPO, f));

/** The driver, compiled once per source content. */
function driver(): string {
  const hash = createHash('sha256');
  for (const f of [...SOURCES, ...HEADERS]) hash.update(readFileSync(f));
  const bin = join(tmpdir(), `srt-rules-check-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(bin)) {
    const tmp = `${bin}.${process.pid}`;
    execFileSync('cc', ['-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror', '-pthread', '-o', tmp, ...SOURCES]);
    renameSync(tmp, bin);
  }
  return bin;
}

const dir = tempDir('srt-init-rules-');
afterAll(() => dir.cleanup());
let n = 0;

/** Answers of the driver for `queries` (see rules-check.c) under the rules `records`. */
function ask(records: Buffer, queries: string[]): boolean[] {
  const file = join(dir.path, `rules-${n++}`);
  writeFileSync(file, records);
  const out = execFileSync(driver(), [file], { input: queries.map((q) => `${q}\n`).join('') }).toString();
  return out.trim().split('\n').map((l) => l === '1');
}

const RULES: SupervisorRules = {
  names: [...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES],
  suffixes: [...PROTECTED_SUFFIXES],
  gitInternals: [...GIT_INTERNALS],
  exempt: ['/w/main/.git/worktrees/wt'],
  markers: [...REPOSITORY_MARKERS],
};
const records = (extra: Partial<{ roots: string[]; paths: string[]; free: string[]; hidden: { path: string; glob?: true; reopened: string[] }[] }> = {}) =>
  encodeRules(RULES, extra.roots ?? ['/w'], extra.paths ?? [], extra.free ?? [], extra.hidden ?? []);

/** The driver's answers as they are (the `w` query answers a rule, not 0 or 1). */
function ask2(records: Buffer, queries: string[]): string[] {
  const file = join(dir.path, `rules-${n++}`);
  writeFileSync(file, records);
  return execFileSync(driver(), [file], { input: queries.map((q) => `${q}\n`).join('') }).toString().trim().split('\n');
}

/** protected_path for each path: `exists`, `partial` as the supervisor passes them. */
const isProtected = (rec: Buffer, paths: string[], exists = false, partial = false) =>
  ask(rec, paths.map((p) => `p ${exists ? 1 : 0}${partial ? 1 : 0} ${p}`));

describe.skipIf(process.platform !== 'linux')('the supervisor\'s rule matcher (init/rules.c)', () => {
  it('a protected name at any depth below a writable root, and everything below it; never outside the roots', () => {
    const rec = records({ roots: ['/w', '/v/x'] });
    const cases: [string, boolean][] = [
      ['/w/.bashrc', true], ['/w/a/b/c/d/e/.bashrc', true], ['/w/.vscode', true], ['/w/.vscode/tasks.json', true],
      ['/w/a/.claude/settings.json', true], ['/w/proj.code-workspace', true], ['/w/.code-workspace', false],
      ['/w/.bashrcx', false], ['/w/x.bashrc', false], ['/w/a/b', false], ['/w', false],
      ['/v/x/.zshrc', true], ['/v/.zshrc', false], ['/elsewhere/.bashrc', false], ['/wx/.bashrc', false],
    ];
    expect(isProtected(rec, cases.map(([p]) => p))).toEqual(cases.map(([, v]) => v));
  });

  it('a name above the writable root does not count: only components below the root are names', () => {
    expect(isProtected(records({ roots: ['/home/u/.vscode/ext'] }), ['/home/u/.vscode/ext/a', '/home/u/.vscode/ext/.idea/x'])).toEqual([false, true]);
  });

  it('the longest root decides where the names start', () => {
    expect(isProtected(records({ roots: ['/', '/srv/.idea/w'] }), ['/srv/.idea/w/a', '/srv/.idea/x'])).toEqual([false, true]);
  });

  it('a protected path and all below it, anywhere; partial: a directory or link that would hold one', () => {
    const rec = records({ roots: ['/w'], paths: ['/home/u/.ssh', '/w/scripts/pre-commit'] });
    expect(isProtected(rec, ['/home/u/.ssh', '/home/u/.ssh/authorized_keys', '/home/u/.sshx', '/home/u', '/w/scripts/pre-commit', '/w/scripts']))
      .toEqual([true, true, false, false, true, false]);
    expect(isProtected(rec, ['/home/u', '/home', '/w/scripts', '/w/other'], false, true)).toEqual([true, true, true, false]);
  });

  it('free paths are exempt from every rule', () => {
    const rec = records({ roots: ['/w'], paths: ['/home/u/.srt'], free: ['/home/u/.srt/run/1/tmp'] });
    expect(isProtected(rec, ['/home/u/.srt/run/1/tmp/.bashrc', '/home/u/.srt/run/1/tmp/x', '/home/u/.srt/run/1/x', '/home/u/.srt/run/1/tmpx']))
      .toEqual([false, false, true, true]);
  });

  it('git internals of an existing `.git` (every one on the way), with `*`/`**` components; a linked worktree\'s own git dir exempt', () => {
    const rec = records();
    const cases: [string, boolean][] = [
      ['/w/.git/config', true], ['/w/.git/config.worktree', true], ['/w/.git/commondir', true],
      ['/w/.git/hooks', true], ['/w/.git/hooks/pre-commit', true], ['/w/.git/worktrees/x/commondir', true],
      ['/w/.git/modules/sub/config', true], ['/w/.git/modules/a/b/hooks/post-checkout', true], ['/w/.git/modules/config', false],
      ['/w/.git/HEAD', false], ['/w/.git/objects/ab/cd', false], ['/w/.git/index', false], ['/w/.git/configx', false],
      ['/w/sub/.git/hooks/x', true], ['/w/.git/modules/s/.git/config', true],
      ['/w/main/.git/worktrees/wt/config', false], ['/w/main/.git/worktrees/wt2/config', true],
    ];
    expect(isProtected(rec, cases.map(([p]) => p))).toEqual(cases.map(([, v]) => v));
    // partial: a directory about to stand where git internals would lie below it
    expect(isProtected(rec, ['/w/.git/modules', '/w/.git/modules/a', '/w/.git/objects'], false, true)).toEqual([true, true, false]);
  });

  it('an existing `.git` cannot be moved away or replaced, unless the run made it; its internals are then the run\'s own', () => {
    const root = join(dir.path, 'tree');
    mkdirSync(join(root, 'old', '.git'), { recursive: true });
    mkdirSync(join(root, 'new', '.git', 'x', '.git'), { recursive: true });
    const rec = records({ roots: [root] });
    const q = (p: string, e = 1) => `p ${e}0 ${join(root, p)}`;
    expect(ask(rec, [q('old/.git'), q('new/.git'), q('new/.git/config'), q('new/.git', 0)])).toEqual([true, true, true, false]);
    // The run made new/.git (the supervisor saw it created): it may go, its config may be written.
    expect(ask(rec, [`g ${join(root, 'new/.git')}`, q('old/.git'), q('new/.git'), q('new/.git/config'), q('new/.git/hooks/x'), q('new/.git/x/.git/config')]))
      .toEqual([true, true, false, false, false, true]);
  });

  it('a `.git` made inside an existing one is a new repository of its own; the outer one\'s entries keep their rules', () => {
    const root = join(dir.path, 'nested');
    mkdirSync(join(root, '.git', 'modules', 's', '.git'), { recursive: true });
    const rec = records({ roots: [root] });
    const q = (p: string) => `p 00 ${join(root, p)}`;
    expect(ask(rec, [`g ${join(root, '.git/modules/s/.git')}`, q('.git/modules/s/.git/config'), q('.git/modules/s/config'), q('.git/modules/s/hooks/x'), q('.git/modules/s/objects/x')]))
      .toEqual([true, false, true, true, false]);
  });

  it('provenance: a protected name counts only in a directory that existed before the run, wherever the run\'s own directories went', () => {
    const root = join(dir.path, 'prov');
    for (const d of ['old/sub', 'new/sub', 'new/moved-in']) mkdirSync(join(root, d), { recursive: true });
    const rec = records({ roots: [root], paths: [join(root, 'home/.config/systemd/user')] });
    const q = (p: string, partial = false) => `p 0${partial ? 1 : 0} ${join(root, p)}`;
    const before = [q('old/.vscode'), q('new/.vscode'), q('new/sub/.gitmodules'), q('.claude/settings.json')];
    expect(ask(rec, before)).toEqual([true, true, true, true]);
    // new/ and new/sub were made by the run; new/moved-in is an old directory moved there.
    expect(ask(rec, [`g ${join(root, 'new')}`, `g ${join(root, 'new/sub')}`, q('new/.vscode'), q('new/.vscode/tasks.json'), q('new/sub/.gitmodules'),
      q('new/moved-in/.vscode'), q('old/.vscode'), q('old/sub/.idea'), q('new/x.code-workspace'), q('home/.config/systemd/user/x.service')]))
      .toEqual([true, true, false, false, false, true, true, true, false, true]);
    // (Each ask is a fresh driver: what the run made is marked again.)
    const made = [`g ${join(root, 'new')}`, `g ${join(root, 'new/sub')}`];
    // Renaming a new directory to a protected name in an old directory: the name's directory is old.
    expect(ask(rec, [...made, q('old/.vscode', true), q('new/.devcontainer', true)])).toEqual([true, true, true, false]);
    // Gone (removed): its inode may come back as anything, and counts as old again.
    expect(ask(rec, [...made, `f ${join(root, 'new')}`, q('new/.vscode'), q('new/sub/.gitmodules')])).toEqual([true, true, true, true, false]);
  });

  it('every git dir that existed, whatever its name (a bare repository, the writable root itself): its hooks and config', () => {
    const root = join(dir.path, 'bare');
    for (const d of ['srv/remote.git/objects', 'srv/remote.git/refs', 'srv/made.git/objects', 'srv/made.git/refs', 'app/config', 'half/objects']) mkdirSync(join(root, d), { recursive: true });
    for (const f of ['srv/remote.git/HEAD', 'srv/made.git/HEAD', 'half/HEAD']) writeFileSync(join(root, f), 'ref: refs/heads/main\n');
    const q = (p: string) => `p 00 ${join(root, p)}`;
    const rec = records({ roots: [root] });
    expect(ask(rec, [q('srv/remote.git/hooks/post-receive'), q('srv/remote.git/config'), q('srv/remote.git/worktrees/x/gitdir'), q('srv/remote.git/objects/ab/c'),
      q('srv/remote.git/refs/heads/main'), q('app/config/x.json'), q('half/config')])).toEqual([true, true, true, false, false, false, false]);
    // The writable root itself (`--allow-write remote.git`).
    const asRoot = records({ roots: [join(root, 'srv/remote.git')] });
    expect(ask(asRoot, [q('srv/remote.git/hooks/pre-receive'), q('srv/remote.git/config'), q('srv/remote.git/HEAD')])).toEqual([true, true, false]);
    // One the run made (`git init --bare`): its own, reviewed when the run ends.
    expect(ask(rec, [`g ${join(root, 'srv/made.git')}`, q('srv/made.git/hooks/post-receive'), q('srv/made.git/config')])).toEqual([true, false, false]);
  });

  it('a submodule git dir the run made inside an existing .git is its own; an existing one stays protected', () => {
    const root = join(dir.path, 'modules');
    for (const d of ['.git/modules/old', '.git/modules/new/hooks']) mkdirSync(join(root, d), { recursive: true });
    const q = (p: string) => `p 00 ${join(root, p)}`;
    expect(ask(records({ roots: [root] }), [`g ${join(root, '.git/modules/new')}`, q('.git/modules/new/config'), q('.git/modules/new/hooks/x'), q('.git/modules/old/config'), q('.git/hooks/x')]))
      .toEqual([true, false, false, true, true]);
  });

  it('says which rule refused: a protected path, a name, a git dir entry, an existing .git', () => {
    const root = join(dir.path, 'why');
    for (const d of ['.git', 'b.git/objects', 'b.git/refs']) mkdirSync(join(root, d), { recursive: true });
    writeFileSync(join(root, 'b.git/HEAD'), 'ref: refs/heads/main\n');
    const w = (p: string, e = 0) => `w ${e}0 ${join(root, p)}`;
    expect(ask2(records({ roots: [root], paths: ['/h/.ssh'] }), ['w 00 /h/.ssh/config', w('a/.vscode/x'), w('x.code-workspace'), w('.git/hooks/pre-commit'),
      w('.git/modules/s/config'), w('b.git/config'), w('.git', 1), w('plain')]))
      .toEqual(['P/h/.ssh', 'N.vscode', 'N.code-workspace', 'Ghooks', 'Gmodules/**/config', 'Gconfig', 'R.git', '0']);
  });

  it('repository markers are the names srt reviews', () => {
    expect(ask(records(), ['m .git', 'm HEAD', 'm head', 'm .gitx', 'm config'])).toEqual([true, true, false, false, false]);
  });
});

describe.skipIf(process.platform !== 'linux')('the read gate\'s matcher (init/readgate.c)', () => {
  it('a hidden path and all below it, but what allowRead re-opens; partial: a directory that holds one', () => {
    const rec = records({ hidden: [{ path: '/w/.env', reopened: [] }, { path: '/w/secrets', reopened: ['/w/secrets/public'] }] });
    const q = (p: string, partial = false) => `h ${partial ? 1 : 0} ${p}`;
    expect(ask(rec, [q('/w/.env'), q('/w/.envx'), q('/w/secrets/k'), q('/w/secrets/public/k'), q('/w/secrets/publicx'),
      q('/w'), q('/w', true), q('/w/other', true), q('/w/.env (deleted)')]))
      .toEqual([true, false, true, false, true, false, true, false, true]);
  });

  // Literal paths are looked up along the path in sorted order: names that sort around `/`
  // (`a-b`, `a.b` before `a/`, `a0`, `ab` after) must neither hide their neighbours nor be missed.
  it('a thousand hidden paths, looked up by each directory on the way: exactly those and what lies below them', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({ path: `/d/set${i % 40}/r${i}`, reopened: [] as string[] }));
    const near = ['/d/a-b/k', '/d/a.b', '/d/a/x', '/d/a0', '/d/ab/y'].map((path) => ({ path, reopened: [] as string[] }));
    const rec = records({ hidden: [...many, ...near, { path: '/d/set3/open', reopened: ['/d/set3/open/pub'] }] });
    const q = (p: string, partial = false) => `h ${partial ? 1 : 0} ${p}`;
    const cases: [string, boolean][] = [
      [q('/d/set7/r7'), true], [q('/d/set7/r47'), true], [q('/d/set7/r999'), false], [q('/d/set39/r999'), true], [q('/d/set7/r7/x'), true],
      [q('/d/set7/r'), false], [q('/d/set7/r70'), false], [q('/d/set7'), false], [q('/d/set7', true), true], [q('/d/set40', true), false],
      [q('/d/a'), false], [q('/d/a', true), true], [q('/d/a/x'), true], [q('/d/a/y'), false], [q('/d/a-b'), false], [q('/d/a-b', true), true],
      [q('/d/a.b/z'), true], [q('/d/a0'), true], [q('/d/a1', true), false], [q('/d/ab', true), true], [q('/d/ab/y/z'), true], [q('/d/ab/x'), false],
      [q('/d/set3/open/k'), true], [q('/d/set3/open/pub/k'), false], [q('/'), false], [q('/', true), true], [q('/e', true), false], [q('/d/set7/r7 (deleted)'), true],
    ];
    expect(ask(rec, cases.map(([line]) => line))).toEqual(cases.map(([, hidden]) => hidden));
  });

  it('a hidden glob: every path it matches and all below; a re-opened path at or below the match lifts it', () => {
    const rec = records({ hidden: [
      { path: '/w/**/.env', glob: true, reopened: ['/w/conf/.env'] },
      { path: '/w/**/secrets/**', glob: true, reopened: ['/w/v/secrets/pub'] },
    ] });
    const q = (p: string) => `h 0 ${p}`;
    expect(ask(rec, [q('/w/.env'), q('/w/a/b/.env'), q('/w/a/.env/x'), q('/w/a/.envx'), q('/w/conf/.env'), q('/w/conf/.env/x'),
      q('/w/v/secrets'), q('/w/v/secrets/k'), q('/w/v/secrets/pub/k'), q('/w/v/secrets/pubx'), q('/elsewhere/.env'), q('/w/.env (deleted)')]))
      .toEqual([true, true, true, false, false, false, false, true, false, true, false, true]);
  });

  it('a moved tree: refused where a glob would no longer reach what it reaches now, or onto a path that re-opens', () => {
    const rec = records({ hidden: [
      { path: '/w/**/.env', glob: true, reopened: [] },
      { path: '/w/**/secrets/**', glob: true, reopened: ['/w/open/secrets/pub'] },
    ] });
    const q = (from: string, to: string) => `v ${from}\t${to}`;
    expect(ask(rec, [q('/w/a', '/w/b'), q('/w/v/secrets', '/w/v/s2'), q('/w/v/s2', '/w/v/secrets'), q('/w/a', '/elsewhere/a'),
      q('/w/v/secrets', '/w/open/secrets/pub'), q('/w/x', '/w/open/secrets')]))
      .toEqual([false, true, false, true, true, true]);
  });
});

describe.skipIf(process.platform !== 'linux')('a rules file the helper refuses', () => {
  const run = (content: Buffer) => {
    const file = join(dir.path, `bad-${n++}`);
    writeFileSync(file, content);
    return spawnSync(driver(), [file], { input: '' });
  };
  it.each([
    ['an unknown record', 'X/a\0', /unknown record X/],
    ['an empty record', 'W/a\0\0', /empty record/],
    ['a relative root', 'Wa\0', /record Wa: bad path/],
    ['an absolute name', 'N/a\0', /record N\/a: bad path/],
    ['an unterminated record', 'W/a', /unterminated record/],
    ['a reopened path outside a hidden one', 'O/a\0', /record O\/a outside a hidden path/],
  ])('%s: exit 125 with a message', (_, content, message) => {
    const r = run(Buffer.from(content));
    expect(r.status).toBe(125);
    expect(r.stderr.toString()).toMatch(message);
  });
});
