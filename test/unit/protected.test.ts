import { describe, expect, it } from 'vitest';
import { GIT_INTERNALS, hooksPathDir, isProtectedLink, protectedLinkNames, protectedListArgs, protectedSearchArgs } from '../../src/profiles/protected.js';
import { landedLines, protectedPlan, type ProtectedInput, type RootScan } from '../../src/profiles/protected-plan.js';
import { encodeRules, parseReport, refusalLines } from '../../src/profiles/supervisor.js';

const root = (r: Partial<RootScan> = {}): RootScan => ({ root: '/w', found: [], links: [], gitFiles: [], gitDirs: [], inRepo: false, ...r });
const input = (i: Partial<ProtectedInput> = {}): ProtectedInput => ({
  roots: [root()], home: '/h', projectRoot: '/w', depth: 2, managedDir: '/etc/srt', repoHooks: [], workTrees: [], ...i,
});
const paths = (i: Partial<ProtectedInput> = {}) => protectedPlan(input(i)).targets.map((t) => `${t.kind} ${t.path}`);

describe('protected-path plan', () => {
  it('every SPEC §3 name at the top of a root, project/user/managed srt paths, the user settings file', () => {
    const p = paths();
    for (const f of ['.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.zshrc', '.zshenv', '.zprofile', '.zlogin', '.profile',
      '.gitconfig', '.gitmodules', '.ripgreprc', '.mcp.json', '.pre-commit-config.yaml']) expect(p).toContain(`file /w/${f}`);
    for (const d of ['.vscode', '.idea', '.claude', '.cursor', '.devcontainer', '.zed', '.srt']) expect(p).toContain(`dir /w/${d}`);
    // Other agents' configuration.
    for (const d of ['.gemini', '.codex', '.amazonq', '.roo', '.kiro', '.continue', '.windsurf']) expect(p).toContain(`dir /w/${d}`);
    expect(p).toContain('file /w/opencode.json');
    expect(p).toEqual(expect.arrayContaining(['dir /h/.srt', 'file /h/.srt-settings.json', 'file /h/.srt-settings.yaml', 'dir /etc/srt']));
  });

  it('applies to every writable root, not only cwd', () => {
    const p = paths({ roots: [root(), root({ root: '/h/projects', found: ['app/.git/HEAD', 'app/.bashrc'] })] });
    expect(p).toEqual(expect.arrayContaining(['file /h/projects/.bashrc', 'dir /h/projects/.vscode', 'dir /h/projects/app/.git/hooks',
      'file /h/projects/app/.git/config', 'file /h/projects/app/.bashrc', 'dir /h/projects/app/.claude']));
  });

  it('outside a repository HEAD, objects/, refs/ and config stay uncreatable at the top, `.git` only without the supervisor; never where a repository is', () => {
    const top = protectedPlan(input()).targets.filter((t) => ['/w/.git', '/w/HEAD', '/w/objects', '/w/refs', '/w/config'].includes(t.path));
    expect(top).toEqual([
      { path: '/w/.git', kind: 'dir', fallbackOnly: true },
      { path: '/w/HEAD', kind: 'file', ifMissing: true },
      { path: '/w/objects', kind: 'dir', ifMissing: true },
      { path: '/w/refs', kind: 'dir', ifMissing: true },
      { path: '/w/config', kind: 'file', ifMissing: true },
    ]);
    const repo = paths({ roots: [root({ found: ['.git/HEAD'] })] });
    expect(repo).toEqual(expect.arrayContaining(['dir /w/.git/hooks', 'file /w/.git/config', 'file /w/.git/commondir']));
    for (const p of ['dir /w/.git', 'file /w/HEAD', 'dir /w/objects', 'dir /w/refs']) expect(repo).not.toContain(p);
    // A root below a repository's top (srt started in a subdirectory) is in a repository too.
    const sub = paths({ roots: [root({ root: '/w/sub', inRepo: true })] });
    expect(sub).not.toContain('file /w/sub/HEAD');
    expect(sub).not.toContain('dir /w/sub/.git');
  });

  it("every repository's git dir: each entry GIT_INTERNALS names at its top, commondir only where it exists", () => {
    const repo = protectedPlan(input({ roots: [root({ found: ['.git/HEAD'] })] })).targets.filter((t) => t.path.startsWith('/w/.git/'));
    const top = GIT_INTERNALS.filter((g) => !g.includes('/'));
    expect(repo.map((t) => t.path.slice('/w/.git/'.length)).sort()).toEqual([...top].sort());
    expect(repo).toEqual(expect.arrayContaining([{ path: '/w/.git/config.worktree', kind: 'file' }, { path: '/w/.git/commondir', kind: 'file', ifExists: true },
      { path: '/w/.git/hooks', kind: 'dir' }, { path: '/w/.git/worktrees', kind: 'dir' }]));
  });

  it('nested finds within the depth: files, directories through a file inside, repositories, submodules, *.code-workspace', () => {
    const found = ['a/b/.bashrc', 'a/b/c/.bashrc', 'x/.devcontainer/devcontainer.json', 'x/y/z/.vscode/s.json', 'r/.git/HEAD',
      'p/q/.git/HEAD', '.git/modules/sub/HEAD', 'ws/team.code-workspace'];
    const gitDirs = ['r/.git', 'p/q/.git', '.git/modules/sub'];
    const p = protectedPlan(input({ roots: [root({ found, gitDirs })] })).targets.map((t) => t.path);
    expect(p).toEqual(expect.arrayContaining(['/w/a/b/.bashrc', '/w/x/.devcontainer', '/w/r/.git/hooks', '/w/p/q/.git/config',
      '/w/.git/modules/sub/hooks', '/w/.git/modules/sub/config', '/w/ws/team.code-workspace', '/w/r/.claude']));
    expect(p).not.toContain('/w/a/b/c/.bashrc'); // depth 3 > 2: the supervisor covers it
    expect(p).not.toContain('/w/x/y/z/.vscode');
  });

  it('every git dir the search found is a repository: a bare one at any depth it reached, protected with the reason', () => {
    const plan = protectedPlan(input({ roots: [root({ gitDirs: ['.', 'srv/remote.git', 'a/b/c/d/e/f.git'], found: ['HEAD', 'srv/remote.git/HEAD', 'a/b/c/d/e/f.git/HEAD'] })] }));
    for (const bare of ['/w', '/w/srv/remote.git', '/w/a/b/c/d/e/f.git']) {
      expect(plan.targets).toEqual(expect.arrayContaining([
        { path: `${bare}/hooks`, kind: 'dir', why: `in the bare repository ${bare}` },
        { path: `${bare}/config`, kind: 'file', why: `in the bare repository ${bare}` },
      ]));
    }
  });

  it('what is protected by landing, one line per reason, a git dir\'s entries together', () => {
    const plan = protectedPlan(input({ roots: [root({ gitDirs: ['r.git'], found: ['r.git/HEAD'] })] }));
    const targets = [...plan.targets, { path: '/h/.bashrc', kind: 'file' as const, why: '~/.bashrc leads there' },
      { path: '/w/a', kind: 'file' as const, why: 'include.path of /h/.gitconfig' }, { path: '/w/b/c', kind: 'file' as const, why: 'include.path of /h/.gitconfig' }];
    expect(landedLines(targets, (t) => (t.path === '/h/.bashrc' ? '/w/dot/bashrc' : t.path))).toEqual([
      '/w/r.git/{config,config.worktree,commondir,hooks,worktrees} (in the bare repository /w/r.git)',
      '/w/dot/bashrc (~/.bashrc leads there)',
      '/w/a, /w/b/c (include.path of /h/.gitconfig)',
    ]);
  });

  it('symlinks with a protected name are kept as links, a `.git` link as a repository', () => {
    const p = paths({ roots: [root({ links: ['.bashrc', 'a/.vscode', 'm/.git', '.git/hooks', 'd/x.code-workspace'] })] });
    expect(p).toEqual(expect.arrayContaining(['file /w/.bashrc', 'dir /w/a/.vscode', 'dir /w/m/.git/hooks', 'file /w/m/.git/config',
      'dir /w/.git/hooks', 'file /w/d/x.code-workspace', 'file /w/m/.bashrc']));
  });

  it('a linked worktree: its .git file, the main repository internals, every worktree\'s redirects; its own git dir is exempt', () => {
    const gitFiles = [{ file: '/w/.git', gitDir: '/m/.git/worktrees/w', commonDir: '/m/.git', worktreeDirs: ['/m/.git/worktrees/w', '/m/.git/worktrees/o'] }];
    const plan = protectedPlan(input({ roots: [root({ found: ['.git'], gitFiles, inRepo: true }), root({ root: '/m/.git', isGitDir: true, found: ['modules/s/HEAD'], gitDirs: ['.', 'modules/s'], inRepo: true })] }));
    const p = plan.targets.map((t) => t.path);
    expect(p).toEqual(expect.arrayContaining(['/w/.git', '/m/.git/hooks', '/m/.git/config', '/m/.git/commondir',
      '/m/.git/worktrees/w/config.worktree', '/m/.git/worktrees/w/commondir', '/m/.git/worktrees/w/gitdir',
      '/m/.git/worktrees/o/commondir', '/m/.git/worktrees/o/gitdir', '/m/.git/modules/s/config', '/m/.git/modules/s/hooks']));
    expect(p).not.toContain('/m/.git/worktrees');
    expect(p).not.toContain('/m/.git/.bashrc');
    expect(plan.rules.exempt).toEqual(['/m/.git/worktrees/w']);
  });

  it('core.hooksPath: each repository\'s (relative to its work tree, ~ expanded), husky 9\'s parent, the global one everywhere', () => {
    const p = paths({
      repoHooks: [{ workTree: '/w', hooksPath: '.husky/_' }, { workTree: '/w/r', hooksPath: '~/hooks' }, { workTree: '/w/s', hooksPath: '/opt/h' }],
      globalHooksPath: '.githooks', workTrees: ['/w', '/w/r'],
    });
    expect(p).toEqual(expect.arrayContaining(['dir /w/.husky/_', 'dir /w/.husky', 'dir /h/hooks', 'dir /opt/h', 'dir /w/.githooks', 'dir /w/r/.githooks']));
    // A one-component relative global hooksPath is also a name protected at any depth.
    expect(protectedPlan(input({ globalHooksPath: '.githooks' })).rules.names).toContain('.githooks');
    expect(hooksPathDir('hooks', '/w', '/h')).toBe('/w/hooks');
  });

  it('the home set only when a writable root holds the home directory', () => {
    expect(protectedPlan(input()).homeWritable).toBe(false);
    expect(paths()).not.toContain('dir /h/.ssh');
    const plan = protectedPlan(input({ roots: [root({ root: '/h' })] }));
    expect(plan.homeWritable).toBe(true);
    const p = plan.targets.map((t) => `${t.kind} ${t.path}`);
    for (const d of ['.config/git', '.ssh', '.local/bin', '.config/systemd/user', '.config/autostart', '.claude', '.cursor']) expect(p).toContain(`dir /h/${d}`);
    expect(p).toContain('file /h/.bashrc');
    expect(p).toContain('file /h/.claude.json');
    expect(protectedPlan(input({ roots: [root({ root: '/' })] })).homeWritable).toBe(true);
  });

  it("srt's own files are protected where a writable root holds them, and only there", () => {
    const srtFiles = [
      { path: '/h/.nvm/versions/node/v20/bin/node', kind: 'file' as const },
      { path: '/w/node_modules/srt/dist', kind: 'dir' as const },
      { path: '/usr/lib/node_modules/srt/bin', kind: 'dir' as const },
    ];
    const plan = protectedPlan(input({ srtFiles, roots: [root(), root({ root: '/h' })] }));
    const own = plan.targets.filter((t) => srtFiles.some((f) => f.path === t.path));
    expect(own).toEqual([
      { path: '/h/.nvm/versions/node/v20/bin/node', kind: 'file', ifExists: true },
      { path: '/w/node_modules/srt/dist', kind: 'dir', ifExists: true },
    ]);
    expect(paths({ srtFiles })).not.toContain('file /h/.nvm/versions/node/v20/bin/node'); // ~ not writable
  });

  it('supervisor rules: names, suffixes, git internals, markers; encoded as NUL-terminated records', () => {
    const { rules } = protectedPlan(input());
    expect(rules.names).toEqual(expect.arrayContaining(['.bashrc', '.vscode', '.claude', '.srt']));
    expect(rules.suffixes).toEqual(['.code-workspace']);
    expect(rules.gitInternals).toEqual([...GIT_INTERNALS]);
    expect(rules.markers).toEqual(['.git', 'HEAD']);
    const buf = encodeRules({ ...rules, names: ['.bashrc'], gitInternals: ['hooks'], suffixes: [], markers: ['.git'] }, ['/w'], ['/h/.srt']);
    expect(buf.toString()).toBe('W/w\0P/h/.srt\0N.bashrc\0Ghooks\0M.git\0');
    // srt's own TMPDIR lies below the protected ~/.srt and is free of every rule.
    expect(encodeRules({ ...rules, names: [], gitInternals: [], suffixes: [], markers: [] }, ['/w'], ['/h/.srt'], ['/h/.srt/run/1/tmp']).toString())
      .toBe('F/h/.srt/run/1/tmp\0W/w\0P/h/.srt\0');
    expect(() => encodeRules(rules, ['/w\0x'], [])).toThrow(/cannot be encoded/);
  });

  it('searches hidden and ignored files to depth+2; symlink names include .git internals', () => {
    const args = protectedSearchArgs(3);
    expect(args).toEqual(expect.arrayContaining(['--files', '--hidden', '--no-ignore', '--max-depth', '5', '*.code-workspace']));
    expect(args).toContain('HEAD');
    expect(protectedLinkNames()).toEqual(expect.arrayContaining(['.bashrc', '.git', 'hooks', '*.code-workspace']));
  });

  it("srt-init's walk is asked for the same names, endings and directories, to the same depth", () => {
    const args = protectedListArgs(3);
    expect(args.slice(0, 2)).toEqual(['--list-protected', '5']);
    const of = (opt: string) => args.flatMap((a, i) => (a === opt ? [args[i + 1]!] : []));
    expect(of('-f')).toEqual(expect.arrayContaining(['.bashrc', '.gitmodules', '.mcp.json', 'HEAD', '.git']));
    expect(of('-s')).toEqual(['.code-workspace']);
    expect(of('-d')).toEqual(expect.arrayContaining(['.vscode', '.claude', '.srt', '.opencode']));
    // rg's globs, one for one.
    const globs = protectedSearchArgs(3).filter((_, i, all) => all[i - 1] === '-g');
    expect([...globs].sort()).toEqual([...of('-f'), ...of('-s').map((x) => `*${x}`), ...of('-d').map((d) => `**/${d}/**`)].sort());
  });

  it('tells which listed symlinks stand for a protected path (find lists them all)', () => {
    for (const rel of ['.bashrc', 'a/b/.zshrc', 'x/.git', '.git', 'p/.vscode', '.srt', 'w.code-workspace', 'd/.code-workspace',
      '.git/hooks', 'sub/.git/config', 'r/.git/commondir']) expect(isProtectedLink(rel), rel).toBe(true);
    for (const rel of ['hooks', 'a/hooks', 'config', 'src/config', 'commondir', '.git/HEAD', 'node_modules/.bin/tsc', 'a/.bashrc.bak',
      '.gitx', 'x.code-workspace.txt']) expect(isProtectedLink(rel), rel).toBe(false);
  });
});

describe('supervisor report', () => {
  it('parses refusals with their rule, created markers, the unlisted count and lost track, ignoring a record cut short', () => {
    const buf = Buffer.from('R\0create\0/w/.bashrc\0N.bashrc\0C\0/w/sub/.git\0R\0write\0/w/.git/config\0Gconfig\0N\0' + '7\0T\0R\0cre');
    expect(parseReport(buf)).toEqual({
      refused: [{ op: 'create', path: '/w/.bashrc', rule: 'N.bashrc' }, { op: 'write', path: '/w/.git/config', rule: 'Gconfig' }],
      created: ['/w/sub/.git'],
      unlisted: 7,
      lostTrack: true,
      kernel: [],
      more: false,
      connects: [],
      connectsUnlisted: 0,
    });
  });

  it('parses what the kernel refused, and the mark that more were not listed', () => {
    const buf = Buffer.from('K\0mkdir\0/h/.npm\0EROFS\0R\0create\0/w/.bashrc\0N.bashrc\0K\0read\0/w/.env\0EACCES\0X\0K\0write\0/h/x');
    expect(parseReport(buf)).toEqual({
      refused: [{ op: 'create', path: '/w/.bashrc', rule: 'N.bashrc' }],
      created: [],
      unlisted: 0,
      lostTrack: false,
      kernel: [{ op: 'mkdir', path: '/h/.npm', err: 'EROFS' }, { op: 'read', path: '/w/.env', err: 'EACCES' }],
      more: true,
      connects: [],
      connectsUnlisted: 0,
    });
  });

  it('parses refused loopback connections (address, port, count) and the count past those listed', () => {
    const buf = Buffer.from(['L', '127.0.0.1', '18080', '3', 'L', '::1', '18080', '1', 'Y', '5', 'L', '127.0.0.2', '5432'].join('\0'));
    expect(parseReport(buf)).toMatchObject({
      connects: [{ address: '127.0.0.1', port: 18080, count: 3 }, { address: '::1', port: 18080, count: 1 }],
      connectsUnlisted: 5,
    });
  });

  it('names the rule: a name in a directory that existed, a git dir entry, an existing .git, a path srt knows more of', () => {
    const why = (p: string) => (p === '/w/scripts/pre-commit' ? 'the target of /w/.git/hooks/pre-commit' : undefined);
    expect(refusalLines([
      { op: 'create', path: '/w/.vscode/tasks.json', rule: 'N.vscode' }, { op: 'create', path: '/w/a.code-workspace', rule: 'N.code-workspace' },
      { op: 'write', path: '/w/.git/hooks/x', rule: 'Ghooks' }, { op: 'remove', path: '/w/.git', rule: 'R.git' },
      { op: 'write', path: '/w/scripts/pre-commit', rule: 'P/w/scripts/pre-commit' }, { op: 'write', path: '/h/.bashrc', rule: 'P/h/.bashrc' },
    ], '/w', 10, { unlisted: 1500, pathWhy: why })).toEqual([
      'refused writing .vscode/tasks.json (protected: .vscode in a directory that existed before the run)',
      'refused writing a.code-workspace (protected: *.code-workspace in a directory that existed before the run)',
      'refused writing .git/hooks/x (protected: hooks of a repository that existed before the run)',
      'refused removing .git (protected: the .git of a repository that existed before the run)',
      'refused writing scripts/pre-commit (protected: the target of /w/.git/hooks/pre-commit)',
      'refused writing /h/.bashrc (protected)',
      '… and 1500 more refused writes to protected paths',
    ]);
  });

  it('one line per path, relative to cwd, at most N then a count', () => {
    const refused = [
      { op: 'create', path: '/w/.git/hooks/pre-commit' }, { op: 'write', path: '/w/.git/hooks/pre-commit' },
      { op: 'remove', path: '/w/.bashrc' }, { op: 'move', path: '/elsewhere/.vscode' },
      ...Array.from({ length: 12 }, (_, i) => ({ op: 'create', path: `/w/d${i}/.bashrc` })),
    ];
    const lines = refusalLines(refused, '/w', 3);
    expect(lines).toEqual([
      'refused writing .git/hooks/pre-commit (protected)',
      'refused removing .bashrc (protected)',
      'refused moving /elsewhere/.vscode (protected)',
      '… and 12 more refused writes to protected paths',
    ]);
  });

  it('names the attribute calls: mode, owner, extended attributes and ACLs', () => {
    expect(refusalLines([
      { op: 'chmod', path: '/w/a' }, { op: 'chown', path: '/w/b' }, { op: 'setxattr', path: '/w/c' }, { op: 'removexattr', path: '/w/d' },
    ], '/w')).toEqual([
      'refused changing the mode of a (protected)', 'refused changing the owner of b (protected)',
      'refused setting an extended attribute or ACL on c (protected)', 'refused removing an extended attribute or ACL of d (protected)',
    ]);
  });
});
