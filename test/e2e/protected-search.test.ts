// The protected-path search walks each writable root once with srt-init (init/listing.c); it
// must list exactly what ripgrep and find list (srt's search without the helper) on a real tree
// with every kind of entry, and fail, never shorten the listing, when it cannot finish; a
// directory it cannot list but the command could open up is kept shut.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findInitHelper } from '../../src/platform/init-helper.js';
import { listProtected } from '../../src/platform/search.js';
import { isProtectedLink, protectedListArgs, protectedSearchArgs } from '../../src/profiles/protected.js';
import { NO_SUPERVISOR, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-protected-search-');
afterAll(() => tmp.cleanup());
const scratch = scratchDirs(() => join(tmp.path, 'runs'));

const sorted = (xs: string[]) => [...xs].sort();

describe('the protected-path search (srt-init --list-protected)', () => {
  it('lists what rg and find list: names, endings, files in protected directories, git dirs, symlinks, to depth+2 and no deeper', () => {
    const t = tmp.path;
    const file = (rel: string, body = '') => {
      mkdirSync(join(t, rel, '..'), { recursive: true });
      writeFileSync(join(t, rel), body);
    };
    for (const rel of ['.bashrc', 'a/.zshrc', 'a/b/c/.profile', 'a/b/c/d/.gitconfig', 'a/b/c/d/e/.bashrc', 'a/b/c/d/e/f/.bashrc',
      'w.code-workspace', 'p/.code-workspace', 'x.code-workspace.txt', 'README.md', 'src/index.ts', 'src/.bashrc.bak',
      '.vscode/settings.json', 'p/.vscode/tasks.json', 'p/.vscode/sub/deep.json', 'q/.claude/agents/a.md', 'r/.vscode',
      '.git/HEAD', '.git/config', '.git/hooks/pre-commit', 'sub/.git', 'srv/app.git/HEAD', 'srv/app.git/config',
      'opencode.json', 'deep/x/y/z/.mcp.json', 'node_modules/pkg/.npmrc', 'node_modules/pkg/package.json']) file(rel);
    mkdirSync(join(t, 'srv/app.git/objects'));
    mkdirSync(join(t, 'srv/app.git/refs'));
    mkdirSync(join(t, 'empty/.idea'), { recursive: true });
    // Symlinks: protected names (a file, a directory, a git dir's entry), others, and below the depth.
    symlinkSync('README.md', join(t, '.mcp.json'));
    symlinkSync('../src', join(t, 'p/.idea'));
    symlinkSync('../../scripts/hook', join(t, '.git/hooks/pre-push'));
    symlinkSync('/elsewhere/config', join(t, 'sub/config'));
    mkdirSync(join(t, 'sub2/.git'), { recursive: true });
    symlinkSync('/elsewhere/hooks', join(t, 'sub2/.git/hooks'));
    mkdirSync(join(t, 'node_modules/.bin'), { recursive: true });
    symlinkSync('../pkg/cli.js', join(t, 'node_modules/.bin/pkg'));
    symlinkSync('../../x', join(t, 'a/b/c/d/.bash_profile'));
    symlinkSync('../../x', join(t, 'a/b/c/d/e/.bash_login'));
    symlinkSync('a', join(t, 'loop'));
    // Not regular files: neither lists them.
    execFileSync('mkfifo', [join(t, 'p/.zshenv')]);
    // A name that is not UTF-8 in a protected directory.
    writeFileSync(Buffer.concat([Buffer.from(`${t}/.vscode/`), Buffer.from([0xff, 0x2e, 0x6a])]), '');

    const helper = findInitHelper();
    if (!('path' in helper)) throw new Error(helper.error);
    const out = execFileSync(helper.path, protectedListArgs(3), { cwd: t, encoding: 'utf8' });
    const records = out.split('\0');
    expect(records.pop()).toBe('');
    const files = records.filter((r) => r.startsWith('f')).map((r) => r.slice(1));
    const links = records.filter((r) => r.startsWith('l')).map((r) => r.slice(1));
    expect(files.length + links.length).toBe(records.length);

    // rg exits 2 and find 1 on a directory they cannot open: what they listed stands.
    const listing = (cmd: string, args: string[]) => {
      try {
        return execFileSync(cmd, args, { cwd: t, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      } catch (e) {
        return (e as { stdout: string }).stdout;
      }
    };
    const rgOut = listing('rg', protectedSearchArgs(3));
    const findOut = listing('find', ['-P', '.', '-maxdepth', '5', '-type', 'l', '-print']);
    const rgFiles = rgOut.split('\n').filter(Boolean).map((f) => f.replace(/^\.\//, ''));
    const findLinks = findOut.split('\n').filter(Boolean).map((f) => f.replace(/^\.\//, ''));
    expect(sorted(files)).toEqual(sorted(rgFiles));
    expect(sorted(links)).toEqual(sorted(findLinks));
    // What the cases stand for, spelled out.
    expect(sorted(files)).toEqual(sorted([
      '.bashrc', 'a/.zshrc', 'a/b/c/.profile', 'a/b/c/d/.gitconfig', 'w.code-workspace', 'p/.code-workspace',
      '.vscode/settings.json', 'p/.vscode/tasks.json', 'p/.vscode/sub/deep.json', 'q/.claude/agents/a.md', '.vscode/\ufffd.j',
      '.git/HEAD', 'sub/.git', 'srv/app.git/HEAD', 'opencode.json', 'deep/x/y/z/.mcp.json',
    ]));
    expect(sorted(links.filter(isProtectedLink))).toEqual(sorted(['.mcp.json', 'p/.idea', 'sub2/.git/hooks', 'a/b/c/d/.bash_profile']));
  });

  it('a directory it cannot list is listed when the command could get in (its own: chmod; one it may pass through), and skipped when not', () => {
    // The walk runs as a user other than root (root lists everything): as nobody when the tests run as root.
    const root = process.getuid?.() === 0;
    const t = join(tmp.path, 'closed');
    mkdirSync(t, { recursive: true });
    for (const d of ['mine', 'passable', 'shut']) mkdirSync(join(t, d, 'lib/.git/hooks'), { recursive: true });
    const helper = findInitHelper();
    if (!('path' in helper)) throw new Error(helper.error);
    const walk = (dir: string) => {
      const argv = [helper.path, ...protectedListArgs(3)];
      const [cmd, ...args] = root ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...argv] : argv;
      try {
        return { status: 0, out: execFileSync(cmd!, args, { cwd: join(t, dir), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }), err: '' };
      } catch (e) {
        const { status, stderr } = e as { status: number; stderr: string };
        return { status, out: '', err: stderr };
      }
    };
    if (root) {
      chmodSync(tmp.path, 0o755);
      execFileSync('chown', ['-R', '65534:65534', t]);
    }
    // The user's own directory, closed (by an earlier command, say): the command may chmod it open
    // and write, say, the target of a hook symlink the listing never saw.
    chmodSync(join(t, 'mine'), 0);
    const listed = (r: { status: number; out: string; err: string }) => {
      expect(r.status, r.err).toBe(0);
      return r.out.split('\0').filter((x) => x.startsWith('u'));
    };
    expect(listed(walk('.'))).toEqual(['umine']);
    chmodSync(join(t, 'mine'), 0o755);
    if (root) {
      // Another user's: searchable but not readable (names inside are reached), or shut (skipped).
      execFileSync('chown', ['-R', '0:0', join(t, 'passable'), join(t, 'shut')]);
      chmodSync(join(t, 'passable'), 0o711);
      chmodSync(join(t, 'shut'), 0o700);
      expect(listed(walk('.'))).toEqual(['upassable']);
      chmodSync(join(t, 'passable'), 0o755);
      chmodSync(join(t, 'shut'), 0o755);
    }
  });

  // Root's search opens every directory; only another user meets one of its own it cannot list.
  it.skipIf(process.getuid?.() === 0).each([['with the supervisor', {}], ['without it (placeholders)', NO_SUPERVISOR]])('a directory of yours an earlier command closed (chmod 000) stays shut: the hook target inside it cannot be written after chmod inside, %s', async (_, mode) => {
    const dir = scratch();
    const lib = join(dir.cwd, 'vendor/lib');
    mkdirSync(join(lib, 'scripts'), { recursive: true });
    execFileSync('git', ['init', '-q', lib]);
    writeFileSync(join(lib, 'scripts/pre-commit'), '#!/bin/sh\n', { mode: 0o755 });
    symlinkSync('../../scripts/pre-commit', join(lib, '.git/hooks/pre-commit'));
    const marker = join(dir.base, 'PWNED');
    const commit = () => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x'], { cwd: lib, env: { ...process.env, HOME: dir.home } });
    chmodSync(join(dir.cwd, 'vendor'), 0);
    try {
      const r = await srt(['--', 'sh', '-c', `chmod 755 vendor; echo "touch ${marker}" >> vendor/lib/scripts/pre-commit && echo wrote`], { ...dir, ...mode });
      expect(r.stdout).not.toContain('wrote');
    } finally {
      chmodSync(join(dir.cwd, 'vendor'), 0o755);
    }
    commit();
    expect(existsSync(marker)).toBe(false);
    // Control: the same line written outside runs at the next commit.
    writeFileSync(join(lib, 'scripts/pre-commit'), `#!/bin/sh\ntouch ${marker}\n`);
    commit();
    expect(existsSync(marker)).toBe(true);
  });

  it('a name with a newline is one entry (NUL-separated), where a line-based listing would split it', async () => {
    const t = join(tmp.path, 'nl');
    mkdirSync(join(t, '.vscode'), { recursive: true });
    writeFileSync(join(t, '.vscode', 'a\nb.json'), '');
    const [listing] = await listProtected([{ root: t }], 3);
    expect(listing!.files).toEqual(['.vscode/a\nb.json']);
  });

  it('a protected path that is not UTF-8 stops the run (srt could name it to neither bubblewrap nor the supervisor); a file below a protected directory whose own path is does not', async () => {
    const dir = scratch();
    // The repository lies in a directory named by the bytes ff fe.
    const inOdd = (script: string) => execFileSync('sh', ['-c', `cd "$(printf '\\377\\376')/lib" && ${script}`], { cwd: dir.cwd, env: { ...process.env, HOME: dir.home } });
    execFileSync('sh', ['-c', `mkdir -p "$(printf '\\377\\376')/lib/scripts"`], { cwd: dir.cwd });
    inOdd("git init -q . && printf '#!/bin/sh\\n' > scripts/pre-commit && chmod 755 scripts/pre-commit && ln -s ../../scripts/pre-commit .git/hooks/pre-commit");
    const marker = join(dir.base, 'PWNED');
    const r = await srt(['--', 'sh', '-c', `echo "touch ${marker}" >> "$(printf '\\377\\376')/lib/scripts/pre-commit" && echo wrote`], dir);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: srt cannot protect .*: its path is not valid UTF-8; rename it/m);
    expect(r.stdout).not.toContain('wrote');
    inOdd('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x');
    expect(existsSync(marker)).toBe(false);
    // Below a protected directory at a decodable path, the directory is what srt keeps.
    const ok = scratch();
    mkdirSync(join(ok.cwd, '.vscode'));
    writeFileSync(Buffer.concat([Buffer.from(`${ok.cwd}/.vscode/`), Buffer.from([0xff])]), '');
    const [listing] = await listProtected([{ root: ok.cwd }], 3);
    expect(listing!.files).toEqual(['.vscode/\uFFFD']);
  });

  it('an option it does not know, or a depth out of range, stops it with a message (no partial listing)', () => {
    const helper = findInitHelper();
    if (!('path' in helper)) throw new Error(helper.error);
    for (const args of [['--list-protected', '0'], ['--list-protected', '13'], ['--list-protected', '3', '-x', 'a'], ['--list-protected', '3', '-f', 'a/b']]) {
      let status = 0;
      let stderr = '';
      try {
        execFileSync(helper.path, args, { cwd: tmp.path, stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        status = (e as { status: number }).status;
        stderr = String((e as { stderr: Buffer }).stderr);
      }
      expect(status, args.join(' ')).toBe(125);
      expect(stderr).toMatch(/^srt: srt-init: --list-protected/);
    }
  });
});
