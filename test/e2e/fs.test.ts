// Filesystem isolation end to end: real srt, real bubblewrap. Each test batches its checks into
// one sandboxed shell script that prints NAME=yes|no per attempted operation.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, NO_SUPERVISOR, results, scratchBases, srt, tempDir, writeTree } from './helpers.js';

const tmp = tempDir('srt-fs-');
afterAll(() => tmp.cleanup());
const scratch = scratchBases(() => tmp.path);



function git(cwd: string, ...args: string[]) {
  execFileSync('git', ['-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'ignore' });
}

describe('writes', () => {
  it('only cwd, TMPDIR and allowWrite are writable; denyWrite and symlinks out are not', async () => {
    const base = scratch();
    const home = join(base, 'home');
    const cwd = join(base, 'proj');
    writeTree(base, { 'home/keep': 'x', 'sib/keep': 'x', 'extra/locked/keep': 'x', 'proj/keep': 'x' });
    symlinkSync(join(base, 'sib'), join(cwd, 'out'));
    const settings = join(base, 's.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { allowWrite: [join(base, 'extra')], denyWrite: [join(base, 'extra/locked')] } }));
    const script = [
      attempt('cwd', 'echo a > new.txt'),
      attempt('tmpdir', 'echo a > "$TMPDIR/t" && test "${TMPDIR#$HOME/.srt/run/}" != "$TMPDIR"'),
      attempt('etc', 'echo a > /etc/srt-e2e-probe'),
      attempt('home', `echo a > ${home}/h`),
      attempt('sibling', `echo a > ${base}/sib/s`),
      attempt('parent', 'echo a > ../p'),
      attempt('dotdot', `echo a > ${cwd}/../p2`),
      attempt('allowWrite', `echo a > ${base}/extra/e`),
      attempt('denyWrite', `echo a > ${base}/extra/locked/l`),
      attempt('denyWriteRm', `rm -f ${base}/extra/locked/keep`),
      attempt('symlinkOut', 'echo a > out/through-link'),
      attempt('symlinkNew', `ln -s ${home} h && echo a > h/via-new-link`),
    ].join('\n');
    const r = await srt(['--settings', settings, '--', 'sh', '-c', script], { home, cwd });
    expect(r.stderr).not.toMatch(/srt: (?!warning|refused)/);
    expect(results(String(r.stdout))).toEqual({
      cwd: 'yes', tmpdir: 'yes', etc: 'no', home: 'no', sibling: 'no', parent: 'no', dotdot: 'no',
      allowWrite: 'yes', denyWrite: 'no', denyWriteRm: 'no', symlinkOut: 'no', symlinkNew: 'no',
    });
    expect(readdirSync(join(base, 'sib'))).toEqual(['keep']);
    expect(readdirSync(home).filter((n) => n !== '.srt')).toEqual(['keep']);
    expect(existsSync(join(base, 'extra/locked/keep'))).toBe(true);
    expect(existsSync(join(cwd, 'new.txt'))).toBe(true);
  });

  for (const [what, mode] of [['with the supervisor', {}], ['without it', NO_SUPERVISOR]] as const) {
    it(`an allowWrite entry naming an existing file makes that file writable, not its siblings or its directory (${what})`, async () => {
      const base = scratch();
      const home = join(base, 'home');
      const cwd = join(base, 'proj');
      writeTree(base, { 'home/keep': 'x', 'proj/keep': 'x', 'out/log.txt': 'old\n', 'out/sib.txt': 'x' });
      const log = join(base, 'out', 'log.txt');
      const script = [
        attempt('append', `echo new >> ${log}`),
        attempt('truncate', `echo only > ${log} && echo again >> ${log}`),
        attempt('sibling', `echo a >> ${base}/out/sib.txt`),
        attempt('create', `echo a > ${base}/out/new.txt`),
        attempt('remove', `rm -f ${log}`),
        attempt('replace', `echo a > ${base}/out/tmp && mv ${base}/out/tmp ${log}`),
      ].join('\n');
      const r = await srt(['--allow-write', log, '--', 'sh', '-c', script], { home, cwd, ...mode });
      expect(r.stderr).not.toMatch(/srt: (?!warning|refused)/);
      expect(results(String(r.stdout))).toEqual({ append: 'yes', truncate: 'yes', sibling: 'no', create: 'no', remove: 'no', replace: 'no' });
      expect(readFileSync(log, 'utf8')).toBe('only\nagain\n');
      expect(readFileSync(join(base, 'out', 'sib.txt'), 'utf8')).toBe('x');
      expect(readdirSync(join(base, 'out')).sort()).toEqual(['log.txt', 'sib.txt']);
    });
  }
});

describe('protected paths', () => {
  const names = ['.bashrc', '.gitconfig', '.mcp.json', '.srt/settings.json', '.vscode/settings.json', '.git/hooks/pre-commit', '.git/config'];

  it('cannot be created or modified in cwd and in a repository two levels down, existing or not; parents cannot be moved away', async () => {
    const base = scratch();
    const home = join(base, 'home');
    const cwd = join(base, 'proj');
    mkdirSync(home);
    mkdirSync(join(cwd, 'a/b'), { recursive: true });
    git(cwd, 'init', '-q');
    git(join(cwd, 'a/b'), 'init', '-q');
    // Existing copies two levels down, plus a few existing in cwd.
    writeTree(cwd, { 'a/b/.bashrc': 'orig', 'a/b/.vscode/settings.json': 'orig', 'a/b/.mcp.json': 'orig', 'a/b/.srt/settings.json': '{}', '.gitconfig': 'orig' });
    const hostConfig = readFileSync(join(cwd, 'a/b/.git/config'), 'utf8');
    const checks: string[] = [];
    for (const [tag, dir] of [['top', '.'], ['deep', 'a/b']] as const) {
      names.forEach((n, i) => {
        checks.push(attempt(`${tag}${i}`, `mkdir -p $(dirname ${dir}/${n}) ; echo evil >> ${dir}/${n}`));
      });
    }
    checks.push(
      attempt('mvParent', 'mv a/b a/moved'),
      attempt('rmParent', 'rm -rf a; test ! -e a/b/.bashrc'),
      attempt('mvGit', 'mv .git .git-moved'),
      attempt('gitCommitWorks', 'git -c user.email=e@x -c user.name=n commit -q --allow-empty -m m'),
      attempt('bare', 'git init -q --bare .'),
      attempt('headFile', 'echo ref > HEAD'),
    );
    const r = await srt(['--', 'sh', '-c', checks.join('\n')], { home, cwd });
    const res = results(String(r.stdout));
    for (let i = 0; i < names.length; i++) {
      expect(res[`top${i}`], `create/modify ./${names[i]}`).toBe('no');
      expect(res[`deep${i}`], `create/modify a/b/${names[i]}`).toBe('no');
    }
    // cwd is a repository: a bare one beside its .git is never used by git, so HEAD is no longer kept.
    expect(res).toMatchObject({ mvParent: 'no', mvGit: 'no', gitCommitWorks: 'yes', bare: 'yes', headFile: 'yes' });
    // Host side: originals intact, nothing planted, placeholders gone.
    expect(readFileSync(join(cwd, 'a/b/.bashrc'), 'utf8')).toBe('orig');
    expect(readFileSync(join(cwd, 'a/b/.vscode/settings.json'), 'utf8')).toBe('orig');
    expect(readFileSync(join(cwd, 'a/b/.git/config'), 'utf8')).toBe(hostConfig);
    expect(existsSync(join(cwd, '.git/hooks/pre-commit'))).toBe(false);
    expect(existsSync(join(cwd, 'a/b/.git/hooks/pre-commit'))).toBe(false);
    for (const leftover of ['.bashrc', '.mcp.json', '.srt', '.vscode', '.idea']) {
      expect(existsSync(join(cwd, leftover)), leftover).toBe(false);
    }
    const state = join(home, '.srt/state');
    expect(existsSync(state) ? readdirSync(state) : []).toEqual([]);
  });

  it('in a directory that is not a repository, no bare repository can be made at the top; without the supervisor no repository at all', async () => {
    for (const mode of [{}, NO_SUPERVISOR]) {
      const base = scratch();
      const home = join(base, 'home');
      const cwd = join(base, 'plain');
      mkdirSync(home);
      mkdirSync(cwd);
      const script = [
        attempt('bare', 'git init -q --bare .'),
        attempt('ordinary', 'echo ok > file.txt'),
      ].join('\n');
      const r = await srt(['--', 'sh', '-c', script], { home, cwd, ...mode });
      expect(results(String(r.stdout)), r.stderr).toEqual({ bare: 'no', ordinary: 'yes' });
      for (const n of ['HEAD', 'objects', 'refs', 'config']) expect(existsSync(join(cwd, n)), n).toBe(false);
      const init = await srt(['-c', 'git init -q .'], { home, cwd, ...mode });
      // A `.git` made there is a new repository (reviewed when the run ends); the placeholder
      // fallback cannot tell a new repository's internals from an old one's and refuses it.
      expect(init.exitCode, init.stderr).toBe(mode === NO_SUPERVISOR ? 128 : 0);
      expect(existsSync(join(cwd, '.git/HEAD'))).toBe(mode !== NO_SUPERVISOR);
    }
  });

  it('a linked worktree may write the main .git except its hooks and config', async () => {
    const base = scratch();
    const home = join(base, 'home');
    const main = join(base, 'main');
    mkdirSync(home);
    mkdirSync(main);
    git(main, 'init', '-q');
    git(main, '-c', 'user.email=e@x', '-c', 'user.name=n', 'commit', '-q', '--allow-empty', '-m', 'init');
    git(main, 'worktree', 'add', '-q', join(base, 'wt'));
    const script = [
      attempt('commit', 'git -c user.email=e@x -c user.name=n commit -q --allow-empty -m wt'),
      attempt('hook', `echo evil > ${main}/.git/hooks/pre-commit`),
      attempt('config', `echo evil >> ${main}/.git/config`),
      attempt('gitfile', 'echo "gitdir: /tmp" > .git'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd: join(base, 'wt') });
    expect(results(String(r.stdout))).toEqual({ commit: 'yes', hook: 'no', config: 'no', gitfile: 'no' });
  });
});

describe('kernel interfaces and namespaces', () => {
  it('/proc/sys, /sys and block devices are read-only, host processes invisible, hostname private', async () => {
    const base = scratch();
    const script = [
      attempt('procsys', 'echo 0 > /proc/sys/kernel/sysrq'),
      attempt('procsysHost', 'echo sandboxed > /proc/sys/kernel/hostname'),
      attempt('sysfs', 'echo 1 > /sys/kernel/mm/ksm/run'),
      attempt('sysrq', 'echo h > /proc/sysrq-trigger'),
      attempt('blockdev', 'ls /sys/block | while read d; do test -e /dev/$d && exit 0; done; exit 1'),
      attempt('hostPid', `test -e /proc/${process.pid}`),
      attempt('fewProcs', 'test $(ls -d /proc/[0-9]* | wc -l) -lt 10'),
      attempt('sethostname', 'hostname srt-e2e-changed'),
    ].join('\n');
    const before = hostname();
    const r = await srt(['--', 'sh', '-c', script], { home: base, cwd: base });
    expect(results(String(r.stdout))).toEqual({
      procsys: 'no', procsysHost: 'no', sysfs: 'no', sysrq: 'no', blockdev: 'no', hostPid: 'no', fewProcs: 'yes', sethostname: 'no',
    });
    expect(hostname()).toBe(before);
  });
});

describe('reads', () => {
  it('denyRead hides files and dirs, allowRead re-opens, a read glob hides its matches', async () => {
    const base = scratch();
    const home = join(base, 'home');
    const cwd = join(base, 'proj');
    writeTree(base, {
      'home/secret.txt': 'S1', 'home/keys/id': 'S2', 'home/keys/public/pub': 'P', 'home/keys/public/private': 'S3',
      'proj/a/cert.pem': 'S4', 'proj/b/c/key.pem': 'S5', 'proj/readme': 'R',
    });
    const settings = join(base, 's.json');
    writeFileSync(settings, JSON.stringify({
      filesystem: {
        denyRead: [join(home, 'secret.txt'), join(home, 'keys'), join(home, 'keys/public/private'), '**/*.pem'],
        allowRead: [join(home, 'keys/public')],
      },
    }));
    const script = [
      attempt('file', `grep -q S1 ${home}/secret.txt`),
      attempt('dir', `grep -q S2 ${home}/keys/id`),
      attempt('dirList', `ls ${home}/keys | grep -q id`),
      attempt('carve', `grep -q P ${home}/keys/public/pub`),
      attempt('inner', `grep -q S3 ${home}/keys/public/private`),
      attempt('pem1', 'grep -q S4 a/cert.pem'),
      attempt('pem2', 'grep -q S5 b/c/key.pem'),
      attempt('other', 'grep -q R readme'),
      attempt('writeHidden', `echo x > ${home}/keys/new`),
    ].join('\n');
    const r = await srt(['--settings', settings, '--', 'sh', '-c', script], { home, cwd });
    expect(results(String(r.stdout))).toEqual({
      file: 'no', dir: 'no', dirList: 'no', carve: 'yes', inner: 'no', pem1: 'no', pem2: 'no', other: 'yes', writeHidden: 'no',
    });
  });
});
