import { describe, expect, it } from 'vitest';
import { protectedSearchArgs, protectedTargets } from '../../src/profiles/protected.js';

const base = { cwd: '/w', home: '/h', root: '/w', depth: 2, managedDir: '/etc/srt', gitFiles: [] };

describe('protected paths', () => {
  it('covers every name in cwd, bare-repo conversion, project/user/managed srt dirs', () => {
    const paths = protectedTargets({ ...base, found: [] }).map((t) => `${t.kind} ${t.path}`);
    for (const f of ['.bashrc', '.bash_profile', '.zshrc', '.zprofile', '.profile', '.gitconfig', '.gitmodules', '.ripgreprc', '.mcp.json', '.bash_login', '.zshenv', '.zlogin', 'HEAD']) {
      expect(paths).toContain(`file /w/${f}`);
    }
    for (const d of ['.vscode', '.idea', '.srt', 'objects', 'refs']) expect(paths).toContain(`dir /w/${d}`);
    expect(paths).toContain('dir /h/.srt');
    expect(paths).toContain('dir /etc/srt');
  });

  it('outside a repository `.git` itself is uncreatable; inside one its hooks and config are masked', () => {
    const none = protectedTargets({ ...base, found: [] }).map((t) => `${t.kind} ${t.path}`);
    expect(none).toContain('dir /w/.git');
    expect(none.filter((p) => p.includes('/w/.git/'))).toEqual([]);
    const repo = protectedTargets({ ...base, found: ['.git/HEAD'] }).map((t) => `${t.kind} ${t.path}`);
    expect(repo).toEqual(expect.arrayContaining(['dir /w/.git/hooks', 'file /w/.git/config']));
    expect(repo).not.toContain('dir /w/.git');
  });

  it('nested finds within the depth, through files inside protected dirs and repositories', () => {
    const found = ['a/b/.bashrc', 'a/b/c/.bashrc', 'x/.vscode/settings.json', 'x/y/z/.vscode/s.json', 'r/.git/HEAD', 'p/q/.git/HEAD', '.git/modules/sub/HEAD'];
    const paths = protectedTargets({ ...base, found }).map((t) => t.path);
    expect(paths).toContain('/w/a/b/.bashrc');
    expect(paths).not.toContain('/w/a/b/c/.bashrc'); // depth 3 > 2
    expect(paths).toContain('/w/x/.vscode');
    expect(paths).not.toContain('/w/x/y/z/.vscode');
    expect(paths).toContain('/w/r/.git/hooks');
    expect(paths).toContain('/w/p/q/.git/config');
    expect(paths).toContain('/w/.git/modules/sub/hooks');
  });

  it('a linked worktree protects its .git file, the main repository hooks/config/commondir and every worktree\'s redirects', () => {
    const gitFiles = [{ file: '/w/.git', gitDir: '/m/.git/worktrees/w', commonDir: '/m/.git', worktreeDirs: ['/m/.git/worktrees/w', '/m/.git/worktrees/other'] }];
    const paths = protectedTargets({ ...base, found: ['.git'], gitFiles }).map((t) => t.path);
    expect(paths).toEqual(expect.arrayContaining(['/w/.git', '/m/.git/hooks', '/m/.git/config', '/m/.git/commondir',
      '/m/.git/worktrees/w/config.worktree', '/m/.git/worktrees/w/commondir', '/m/.git/worktrees/w/gitdir',
      '/m/.git/worktrees/other/commondir', '/m/.git/worktrees/other/gitdir']));
    // The worktree's own git dir (index, HEAD) stays writable.
    expect(paths).not.toContain('/m/.git/worktrees');
    expect(paths).not.toContain('/w/.git/hooks');
  });

  it('a repository\'s commondir and worktrees/ are protected (they redirect git to other config and hooks)', () => {
    const paths = protectedTargets({ ...base, found: ['.git/HEAD', 'r/.git/HEAD'] }).map((t) => t.path);
    expect(paths).toEqual(expect.arrayContaining(['/w/.git/commondir', '/w/.git/worktrees', '/w/r/.git/commondir', '/w/r/.git/worktrees']));
  });

  it('searches hidden and ignored files to depth+2', () => {
    const args = protectedSearchArgs(3);
    expect(args).toEqual(expect.arrayContaining(['--files', '--hidden', '--no-ignore', '--max-depth', '5']));
  });
});
