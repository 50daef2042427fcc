// Protected paths end to end (SPEC §3, invariants 1 and 10): nothing written inside runs outside.
// Each attack below let a sandboxed command plant code that a host program later ran without
// asking; each test tries it, then runs real git on the host (hooks, fsmonitor, status, commit)
// and checks that nothing the sandbox wrote ran. As root and, in `npm test`, as an unprivileged
// user. Without the seccomp supervisor (old kernels) srt falls back to placeholders: the
// `NO_SUPERVISOR` runs force that.
import { execFileSync, spawnSync, type SpawnSyncOptionsWithStringEncoding } from 'node:child_process';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, keyValues, NO_SUPERVISOR, REPO, results, scratchDirs, srt, srtArgv, SRT_BIN, startBackground, stopStragglers, tempDir, writeTree } from './helpers.js';

const tmp = tempDir('srt-prot-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup(); // also what a failed test left unwritable
}, 120_000); // copies of srt's package and node to remove: slow on a loaded machine
const scratch = scratchDirs(() => tmp.path);

/** Host git, isolated from the developer's own configuration. */
function git(dir: string, home: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'user.email=e@x', '-c', 'user.name=n', '-c', 'protocol.file.allow=always', ...args],
    { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' } });
}
/** What a user does next on the host, in a repository the sandbox could reach: anything that runs hooks or fsmonitor. */
function hostGitUse(dir: string, home: string): void {
  for (const args of [['status'], ['commit', '--allow-empty', '-qm', 'host'], ['checkout', '-q', '-b', `b${Date.now()}`]]) {
    spawnSync('git', ['-c', 'user.email=e@x', '-c', 'user.name=n', ...args], { cwd: dir, stdio: 'ignore', env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' } });
  }
}
const hook = (marker: string) => `printf '#!/bin/sh\\ntouch ${marker}\\n'`;
const fsmonitor = (marker: string) => `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n'`;

describe('every writable root, every spelling', () => {
  // allowWrite reaching the repository root with srt started in a subdirectory, and every
  // repository under an allowWrite such as ~/projects: their hooks, config and rc files were writable.
  it('the plan covers cwd and each allowWrite root: a repository above cwd and the repositories under ~/projects', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    git(cwd, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    mkdirSync(join(cwd, 'sub'));
    // The user's own hook, which must keep running (and must not be taken for the command's).
    const benign = join(base, 'benign-ran');
    writeTree(cwd, { '.git/hooks/pre-commit': `#!/bin/sh\ntouch ${benign}\n` });
    chmodSync(join(cwd, '.git/hooks/pre-commit'), 0o755);
    const app = join(home, 'projects', 'app');
    mkdirSync(app, { recursive: true });
    git(app, home, 'init', '-q');
    git(app, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    writeTree(home, { '.srt/settings.json': JSON.stringify({ filesystem: { allowWrite: ['~/projects'] } }) });
    const pwned = join(base, 'PWNED');
    const script = [
      attempt('rootHook', `${hook(pwned)} > ../.git/hooks/pre-commit && chmod +x ../.git/hooks/pre-commit`),
      attempt('rootHookNew', `${hook(pwned)} > ../.git/hooks/post-checkout && chmod +x ../.git/hooks/post-checkout`),
      attempt('branchInside', 'git checkout -q -b inside && git checkout -q main'),
      attempt('rootConfig', `${fsmonitor(pwned)} >> ../.git/config`),
      attempt('rootBashrc', 'echo evil > ../.bashrc'),
      attempt('appHook', `${hook(pwned)} > ${app}/.git/hooks/post-checkout && chmod +x ${app}/.git/hooks/post-checkout`),
      attempt('appConfig', `${fsmonitor(pwned)} >> ${app}/.git/config`),
      attempt('appVscode', `mkdir -p ${app}/.vscode && echo '{}' > ${app}/.vscode/tasks.json`),
      attempt('projectsMcp', `echo '{}' > ${home}/projects/.mcp.json`),
      attempt('ordinary', `echo ok > ../ok.txt && echo ok > ${app}/ok.txt`),
    ].join('\n');
    const r = await srt(['--allow-write', cwd, '--', 'sh', '-c', script], { home, cwd: join(cwd, 'sub') });
    expect(results(r.stdout), r.stderr).toEqual({
      rootHook: 'no', rootHookNew: 'no', branchInside: 'yes', rootConfig: 'no', rootBashrc: 'no', appHook: 'no', appConfig: 'no', appVscode: 'no', projectsMcp: 'no', ordinary: 'yes',
    });
    expect(r.stderr).toContain(`srt: refused writing ${cwd}/.git/hooks/pre-commit (protected)`);
    expect(r.stderr).not.toContain('disabled'); // rewriting an old repository's HEAD made no new one
    hostGitUse(cwd, home);
    hostGitUse(app, home);
    expect(existsSync(pwned)).toBe(false);
    expect(existsSync(benign)).toBe(true);
    expect(existsSync(join(cwd, '.bashrc'))).toBe(false);
  });

  // Protected names at any depth, in cwd and in an allowWrite root, created or replaced.
  it('protected names cannot be created or replaced at depth 5, below cwd and inside an allowWrite root', async () => {
    const { base, home, cwd } = scratch();
    const extra = join(base, 'extra');
    const deep = 'a/b/c/d/e';
    for (const root of [cwd, extra]) {
      mkdirSync(join(root, deep), { recursive: true });
      git(join(root, deep), home, 'init', '-q');
      writeTree(root, { [`${deep}/.bashrc`]: 'orig', [`${deep}/.idea/workspace.xml`]: 'orig' });
    }
    const names = ['.bashrc', '.zshenv', '.profile', '.gitconfig', '.gitmodules', '.mcp.json', '.pre-commit-config.yaml', 'team.code-workspace',
      '.vscode/tasks.json', '.idea/workspace.xml', '.claude/settings.json', '.cursor/mcp.json', '.devcontainer/devcontainer.json', '.zed/settings.json',
      '.srt/settings.json', '.git/hooks/pre-commit', '.git/config'];
    const checks: string[] = [];
    for (const [tag, root] of [['cwd', cwd], ['extra', extra]] as const) {
      names.forEach((n, i) => {
        const p = `${root}/${deep}/${n}`;
        checks.push(attempt(`${tag}${i}`, `mkdir -p $(dirname ${p}) ; echo evil >> ${p}`));
      });
      checks.push(
        attempt(`${tag}Mv`, `echo evil > ${root}/x && mv -f ${root}/x ${root}/${deep}/.bashrc`),
        attempt(`${tag}Ln`, `ln -sf /tmp ${root}/${deep}/.zshrc`),
        attempt(`${tag}Rm`, `rm -f ${root}/${deep}/.bashrc`),
        attempt(`${tag}MvDir`, `mkdir ${root}/v && mv ${root}/v ${root}/${deep}/.vscode`),
      );
    }
    const r = await srt(['--allow-write', extra, '--', 'sh', '-c', checks.join('\n')], { home, cwd });
    const res = results(r.stdout);
    for (const tag of ['cwd', 'extra']) {
      names.forEach((n, i) => expect(res[`${tag}${i}`], `${tag} ${deep}/${n}`).toBe('no'));
      for (const op of ['Mv', 'Ln', 'Rm', 'MvDir']) expect(res[`${tag}${op}`], `${tag}${op}`).toBe('no');
    }
    for (const root of [cwd, extra]) {
      expect(readFileSync(join(root, deep, '.bashrc'), 'utf8')).toBe('orig');
      expect(readdirSync(join(root, deep, '.git/hooks')).filter((n) => !n.endsWith('.sample'))).toEqual([]);
      for (const n of ['.vscode', '.claude', '.zshrc', 'team.code-workspace']) expect(existsSync(join(root, deep, n)), n).toBe(false);
    }
  });

  // A protected path that is a symlink protected only its target: the link itself was deleted and
  // replaced (`.git/hooks -> ../githooks`, `.git -> …`, `.bashrc -> dotfiles/…`, `.vscode`, `.srt`).
  it('a protected path that is a symlink is protected as a link too, and its target stays read-only', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    const benign = join(base, 'benign-ran');
    writeTree(cwd, { 'githooks/pre-commit': `#!/bin/sh\ntouch ${benign}\n`, 'dotfiles/bashrc': 'orig', 'vsc/settings.json': '{}', 'srtconf/settings.json': '{}' });
    chmodSync(join(cwd, 'githooks/pre-commit'), 0o755);
    rmSync(join(cwd, '.git/hooks'), { recursive: true });
    symlinkSync('../githooks', join(cwd, '.git/hooks'));
    symlinkSync('dotfiles/bashrc', join(cwd, '.bashrc'));
    linkSync(join(cwd, 'dotfiles/bashrc'), join(cwd, 'dotfiles/bashrc-backup')); // reported at start
    symlinkSync('vsc', join(cwd, '.vscode'));
    symlinkSync('srtconf', join(cwd, '.srt'));
    // A repository whose .git is a symlink to its git dir.
    const app = join(cwd, 'app');
    mkdirSync(app);
    git(app, home, 'init', '-q');
    git(app, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    renameSync(join(app, '.git'), join(cwd, 'app.git'));
    symlinkSync('../app.git', join(app, '.git'));
    const pwned = join(base, 'PWNED');
    const script = [
      attempt('hooksLink', `rm .git/hooks && mkdir .git/hooks && ${hook(pwned)} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`),
      attempt('hooksRelink', `ln -sfn /tmp .git/hooks`),
      attempt('hooksTarget', `echo "touch ${pwned}" >> githooks/pre-commit`),
      attempt('bashrcLink', 'rm .bashrc && echo evil > .bashrc'),
      attempt('bashrcThrough', 'echo evil >> .bashrc'),
      attempt('bashrcTarget', 'echo evil >> dotfiles/bashrc'),
      attempt('vscodeLink', `rm .vscode && mkdir .vscode && echo '{}' > .vscode/tasks.json`),
      attempt('vscodeTarget', `echo '{}' > vsc/tasks.json`),
      attempt('srtLink', `mv .srt srt2 && mkdir .srt && echo '{}' > .srt/settings.json`),
      attempt('gitLink', `rm app/.git && mkdir app/.git`),
      attempt('gitThrough', `${hook(pwned)} > app/.git/hooks/post-checkout && chmod +x app/.git/hooks/post-checkout`),
      attempt('gitTargetConfig', `${fsmonitor(pwned)} >> app.git/config`),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual({
      hooksLink: 'no', hooksRelink: 'no', hooksTarget: 'no', bashrcLink: 'no', bashrcThrough: 'no', bashrcTarget: 'no',
      vscodeLink: 'no', vscodeTarget: 'no', srtLink: 'no', gitLink: 'no', gitThrough: 'no', gitTargetConfig: 'no',
    });
    expect(r.stderr).toContain(`srt: warning: protected file ${cwd}/dotfiles/bashrc has 2 hard links`);
    for (const [link, target] of [['.git/hooks', '../githooks'], ['.bashrc', 'dotfiles/bashrc'], ['.vscode', 'vsc'], ['.srt', 'srtconf'], ['app/.git', '../app.git']]) {
      expect(readlinkSync(join(cwd, link!)), link).toBe(target);
    }
    expect(readFileSync(join(cwd, 'dotfiles/bashrc'), 'utf8')).toBe('orig');
    hostGitUse(cwd, home);
    hostGitUse(app, home);
    expect(existsSync(benign)).toBe(true); // the user's own hook still runs
    expect(existsSync(pwned)).toBe(false);
  });

  // allowWrite: ["./build"] with build -> elsewhere (planted by an earlier run) made the target writable.
  it('an allowWrite entry that runs through a symlink is refused with a warning naming the link', async () => {
    const { base, home, cwd } = scratch();
    mkdirSync(join(base, 'outside'));
    mkdirSync(join(home, '.ssh'));
    symlinkSync(join(base, 'outside'), join(cwd, 'build'));
    symlinkSync(join(home, '.ssh'), join(cwd, 'keys'));
    const r = await srt(['--allow-write', './build', '--allow-write', './keys/', '-c', [
      attempt('build', 'echo x > build/f'), attempt('keys', 'echo key >> keys/authorized_keys'), attempt('cwd', 'echo x > here'),
    ].join('\n')], { home, cwd });
    expect(results(r.stdout)).toEqual({ build: 'no', keys: 'no', cwd: 'yes' });
    expect(r.stderr).toContain(`srt: warning: filesystem.allowWrite: ./build: runs through the symlink ${cwd}/build -> ${base}/outside; entry ignored`);
    expect(r.stderr).toContain(`runs through the symlink ${cwd}/keys -> ${home}/.ssh`);
    expect(readdirSync(join(base, 'outside'))).toEqual([]);
    expect(readdirSync(join(home, '.ssh'))).toEqual([]);
  });

  // allowWrite: [".../area/parent"] with parent -> .. made the directory holding `area` writable;
  // as root the link counts as the system's own (root's link in root's directory), so only this
  // rule refuses it; the user's link is refused as planted too, and must be named as this.
  it('an allowWrite entry that is a symlink to one of its own ancestors is refused with a warning naming the landing; the run goes on', async () => {
    const { base, home, cwd } = scratch();
    const area = join(base, 'area');
    mkdirSync(area);
    symlinkSync('..', join(area, 'parent'));
    const r = await srt(['--allow-write', join(area, 'parent'), '-c', [
      attempt('parent', `echo x > ${join(area, 'parent', 'widened')}`), attempt('area', `echo x > ${join(area, 'f')}`), attempt('cwd', 'echo x > here'),
    ].join('\n')], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual({ parent: 'no', area: 'no', cwd: 'yes' });
    expect(r.stderr).toContain(`srt: warning: filesystem.allowWrite: ${join(area, 'parent')}: leads to ${base}, which holds ${join(area, 'parent')} itself`);
    expect(existsSync(join(base, 'widened'))).toBe(false);
  });
});

describe('git redirects and repositories made inside', () => {
  // `.git/commondir` written during the run sent host git (an IDE, a prompt, a second terminal)
  // to attacker config while the run lasted; after SIGKILL it stayed; `chmod a-w .git` defeated
  // the cleanup. With the supervisor it cannot be created at all, nor .git's mode changed.
  it('.git/commondir is uncreatable during the run: host git in a second terminal and after SIGKILL obeys nothing', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    git(cwd, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    const pwned = join(base, 'PWNED');
    const script = [
      'mkdir -p evil/hooks evil/refs evil/objects && cp .git/HEAD evil/',
      `${fsmonitor(pwned)} > evil/config`,
      attempt('commondir', 'echo ../evil > .git/commondir'),
      attempt('commondirPy', `${'python3'} -c 'import os; fd = os.open(".git/commondir", os.O_WRONLY | os.O_CREAT | os.O_EXCL); os.write(fd, b"../evil")'`),
      attempt('chmod', 'chmod a-w .git'),
      'echo ready', 'exec sleep 30',
    ].join('\n');
    const bg = await startBackground(['--', 'sh', '-c', script], home, cwd);
    expect(results(bg.firstLine)).toEqual({ commondir: 'no', commondirPy: 'no', chmod: 'no' });
    // A second terminal, while the run lasts.
    hostGitUse(cwd, home);
    expect(existsSync(pwned)).toBe(false);
    bg.child.kill('SIGKILL');
    await bg.exit;
    rmSync(join(home, '.srt', 'run'), { recursive: true, force: true });
    expect(existsSync(join(cwd, '.git/commondir'))).toBe(false);
    expect(statSync(join(cwd, '.git')).mode & 0o200).toBe(0o200);
    hostGitUse(cwd, home);
    expect(existsSync(pwned)).toBe(false);
  });

  it('without the supervisor: a created commondir is set aside when the run ends (despite chmod a-w .git) and after SIGKILL by the next run', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    git(cwd, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    const pwned = join(base, 'PWNED');
    // A git dir made of nothing but new files (the second run needs a fresh one: the first one's is
    // a repository by then, and its config protected).
    const plant = (evil: string) => `mkdir -p ${evil}/hooks ${evil}/refs ${evil}/objects && cp .git/HEAD ${evil}/ && ${fsmonitor(pwned)} > ${evil}/config && echo ../${evil} > .git/commondir && chmod a-w .git`;
    const r = await srt(['--', 'sh', '-c', plant('evil')], { home, cwd, ...NO_SUPERVISOR });
    expect(r.stderr).toMatch(/srt: warning: protected paths are kept with placeholder files/);
    expect(r.stderr).toMatch(/srt: moved \S+\/\.git\/commondir to \S+\/\.git\/commondir\.srt-disabled/);
    expect(existsSync(join(cwd, '.git/commondir'))).toBe(false);
    chmodSync(join(cwd, '.git'), 0o755);
    hostGitUse(cwd, home);
    expect(existsSync(pwned)).toBe(false);
    rmSync(join(cwd, '.git/commondir.srt-disabled'));
    // Killed before it could clean up: the next run sets it aside.
    const bg = await startBackground(['--', 'sh', '-c', `${plant('evil2')}; echo; echo ready; exec sleep 30`], home, cwd, NO_SUPERVISOR);
    bg.child.kill('SIGKILL');
    await bg.exit;
    expect(existsSync(join(cwd, '.git/commondir'))).toBe(true);
    const next = await srt(['--', 'true'], { home, cwd, ...NO_SUPERVISOR });
    expect(next.stderr).toMatch(/srt: warning: moved \S+\/\.git\/commondir to \S+: it was created inside the sandbox of an srt run \(pid \d+\) killed/);
    expect(existsSync(join(cwd, '.git/commondir'))).toBe(false);
    chmodSync(join(cwd, '.git'), 0o755);
    hostGitUse(cwd, home);
    expect(existsSync(pwned)).toBe(false);
  });

  // Linked worktree: the main repository's .git/modules/<sub>/config and hooks/ were writable.
  it('from a linked worktree, the main repository\'s submodule config and hooks stay read-only', async () => {
    const { base, home } = scratch();
    const src = join(base, 'src');
    const main = join(base, 'main');
    mkdirSync(src);
    mkdirSync(main);
    git(src, home, 'init', '-q');
    git(src, home, 'commit', '-q', '--allow-empty', '-m', 's');
    git(main, home, 'init', '-q');
    git(main, home, 'submodule', 'add', '-q', src, 'sub');
    git(main, home, 'commit', '-q', '-m', 'with sub');
    git(main, home, 'worktree', 'add', '-q', join(base, 'wt'));
    const pwned = join(base, 'PWNED');
    const mod = join(main, '.git/modules/sub');
    const script = [
      attempt('modConfig', `${fsmonitor(pwned)} >> ${mod}/config`),
      attempt('modHook', `${hook(pwned)} > ${mod}/hooks/post-checkout && chmod +x ${mod}/hooks/post-checkout`),
      attempt('mainConfig', `${fsmonitor(pwned)} >> ${main}/.git/config`),
      // A submodule git dir the run makes is its own: what becomes a repository there is reviewed.
      attempt('newModule', `mkdir -p ${main}/.git/modules/x && ${fsmonitor(pwned)} > ${main}/.git/modules/x/config`),
      // Made where the rename does not cross a mount, then moved into place whole.
      attempt('movedModule', `mkdir -p ${main}/.git/m2/hooks && ${fsmonitor(pwned)} > ${main}/.git/m2/config && mv ${main}/.git/m2 ${main}/.git/modules/y`),
      attempt('linkedModule', `ln -s ${main}/.git/m2 ${main}/.git/modules/z`),
      attempt('commit', 'git -c user.email=e@x -c user.name=n commit -q --allow-empty -m wt'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd: join(base, 'wt') });
    expect(results(r.stdout), r.stderr).toEqual({ modConfig: 'no', modHook: 'no', mainConfig: 'no', newModule: 'yes', movedModule: 'no', linkedModule: 'no', commit: 'yes' });
    hostGitUse(join(main, 'sub'), home);
    hostGitUse(main, home);
    expect(existsSync(pwned)).toBe(false);
  });

  // A nested repository created inside plus a gitlink in the parent's index made `git status`
  // in the main repository run the nested repository's core.fsmonitor.
  it('a repository created inside: its executable config and hooks are disabled when the run ends, with a way back', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    git(cwd, home, 'commit', '-q', '--allow-empty', '-m', 'i');
    const pwned = join(base, 'PWNED');
    // The user's own repository elsewhere, with its own fsmonitor and hook: srt must never take
    // it for the command's, even if a link to it ends up where the command made a repository.
    const mine = join(base, 'mine');
    mkdirSync(mine);
    git(mine, home, 'init', '-q');
    git(mine, home, 'config', 'core.fsmonitor', 'false');
    writeTree(mine, { '.git/hooks/pre-commit': '#!/bin/sh\ntrue\n' });
    const script = [
      `git init -q decoy && mv decoy decoy-moved && ln -s ${mine} decoy`,
      'git init -q nested && git -C nested -c user.email=e@x -c user.name=n commit -q --allow-empty -m n',
      `git -C nested config core.fsmonitor "touch ${pwned}; false"`,
      `git -C nested config alias.st "status"`,
      `${hook(pwned)} > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit`,
      'git update-index --add --cacheinfo 160000,$(git -C nested rev-parse HEAD),nested',
      'git clone -q nested cloned && git init -q --bare bare.git',
    ].join(' && ');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('srt: disabled core.fsmonitor, alias.st, hooks/pre-commit in nested/.git, a repository created inside the sandbox');
    expect(r.stderr).toContain('restore with: mv nested/.git/config.srt-disabled nested/.git/config && mv nested/.git/hooks.srt-disabled/* nested/.git/hooks/');
    // A plain clone and a bare repository carry nothing to disable; the linked one is not looked at.
    expect(r.stderr).not.toMatch(/cloned|bare\.git|decoy/);
    expect(git(mine, home, 'config', 'core.fsmonitor').trim()).toBe('false');
    expect(existsSync(join(mine, '.git/hooks/pre-commit'))).toBe(true);
    hostGitUse(cwd, home);
    hostGitUse(join(cwd, 'nested'), home);
    expect(existsSync(pwned)).toBe(false);
    // The remote and branch of the clone survive; restoring brings the attack back (it is real).
    expect(git(join(cwd, 'cloned'), home, 'remote', '-v')).toContain('nested');
    renameSync(join(cwd, 'nested/.git/config.srt-disabled'), join(cwd, 'nested/.git/config'));
    spawnSync('git', ['status'], { cwd, stdio: 'ignore', env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' } });
    expect(existsSync(pwned)).toBe(true);
  });
});

describe('names SPEC §3 protects that were not protected, and the home directory', () => {
  it('.claude, .cursor, .devcontainer, .zed, *.code-workspace, .pre-commit-config.yaml and the core.hooksPath directory (husky)', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    const ran = join(base, 'husky-ran');
    writeTree(cwd, { '.husky/pre-commit': `#!/bin/sh\ntouch ${ran}\n` });
    chmodSync(join(cwd, '.husky/pre-commit'), 0o755);
    git(cwd, home, 'config', 'core.hooksPath', '.husky');
    const pwned = join(base, 'PWNED');
    const script = [
      attempt('claude', `mkdir -p .claude && echo '{"hooks":{}}' > .claude/settings.json`),
      attempt('claudeCommands', `mkdir -p .claude/commands && echo x > .claude/commands/c.md`),
      attempt('cursor', `mkdir -p .cursor && echo '{}' > .cursor/mcp.json`),
      attempt('devcontainer', `mkdir -p .devcontainer && echo '{"initializeCommand":"touch ${pwned}"}' > .devcontainer/devcontainer.json`),
      attempt('zed', 'mkdir -p .zed && echo {} > .zed/settings.json'),
      attempt('workspace', 'echo {} > team.code-workspace'),
      attempt('precommit', 'echo "repos: []" > .pre-commit-config.yaml'),
      attempt('husky', `echo "touch ${pwned}" >> .husky/pre-commit`),
      attempt('huskyNew', `${hook(pwned)} > .husky/pre-push`),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual({
      claude: 'no', claudeCommands: 'no', cursor: 'no', devcontainer: 'no', zed: 'no', workspace: 'no', precommit: 'no', husky: 'no', huskyNew: 'no',
    });
    hostGitUse(cwd, home);
    expect(existsSync(ran)).toBe(true);
    expect(existsSync(pwned)).toBe(false);
    expect(readdirSync(cwd).sort()).toEqual(['.git', '.husky']);
  });

  // Other agents' project configuration names commands and MCP servers they start: it was writable.
  it("other agents' configuration (.gemini .codex .amazonq .roo .kiro .continue .windsurf opencode.json), and ~/.claude.json with a writable home", async () => {
    const { home, cwd } = scratch();
    writeTree(cwd, { '.gemini/settings.json': '{}', 'opencode.json': '{}' });
    const files = ['.gemini/settings.json', '.codex/config.toml', '.amazonq/mcp.json', '.roo/mcp.json', '.kiro/settings/mcp.json',
      '.continue/config.yaml', '.windsurf/workflows/w.md', 'opencode.json', 'sub/opencode.json', 'sub/.codex/config.toml'];
    mkdirSync(join(cwd, 'sub'));
    const script = files.map((f, i) => attempt(`f${i}`, `mkdir -p $(dirname ${f}) && echo '{"mcpServers":{}}' >> ${f}`)).join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual(Object.fromEntries(files.map((_, i) => [`f${i}`, 'no'])));
    expect(readFileSync(join(cwd, '.gemini/settings.json'), 'utf8')).toBe('{}');
    expect(readdirSync(cwd).sort()).toEqual(['.gemini', 'opencode.json', 'sub']);
    expect(readdirSync(join(cwd, 'sub'))).toEqual([]);
    const inHome = await srt(['-c', attempt('claudeJson', `echo '{"mcpServers":{}}' > ~/.claude.json`)], { home, cwd: home });
    expect(results(inHome.stdout), inHome.stderr).toEqual({ claudeJson: 'no' });
    expect(existsSync(join(home, '.claude.json'))).toBe(false);
  });

  it('started in $HOME: ~/.srt-settings.json, git/ssh/bin/systemd/autostart/agent files stay read-only, with a warning', async () => {
    const { home } = scratch();
    const script = [
      attempt('srtSettings', `echo '{"filesystem":{"disabled":true}}' > ~/.srt-settings.json`),
      attempt('srtSettingsYaml', 'echo "filesystem: {disabled: true}" > ~/.srt-settings.yaml'),
      attempt('gitConfig', 'mkdir -p ~/.config/git && echo "[core] pager = evil" > ~/.config/git/config'),
      attempt('ssh', 'mkdir -p ~/.ssh && echo key >> ~/.ssh/authorized_keys'),
      attempt('localBin', 'mkdir -p ~/.local/bin && echo evil > ~/.local/bin/ls'),
      attempt('systemd', 'mkdir -p ~/.config/systemd/user && echo x > ~/.config/systemd/user/x.service'),
      attempt('autostart', 'mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/x.desktop'),
      attempt('claude', 'mkdir -p ~/.claude && echo {} > ~/.claude/settings.json'),
      attempt('bashrc', 'echo evil >> ~/.bashrc'),
      attempt('ordinary', 'echo ok > ~/notes.txt'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd: home });
    expect(results(r.stdout), r.stderr).toEqual({
      srtSettings: 'no', srtSettingsYaml: 'no', gitConfig: 'no', ssh: 'no', localBin: 'no', systemd: 'no', autostart: 'no', claude: 'no', bashrc: 'no', ordinary: 'yes',
    });
    expect(r.stderr).toContain(`srt: warning: the whole home directory ${home} is writable in this sandbox`);
    // `mkdir -p` made the unprotected directories on the way; nothing else was written.
    const files = execFileSync('find', [home, '-not', '-type', 'd', '-not', '-path', `${home}/.srt/*`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    expect(files).toEqual([join(home, 'notes.txt')]);
  });
});

describe('no artefacts, and the launcher', () => {
  // Placeholders sat in the work tree during a run: `git add -A && git commit` committed them, a
  // top-level HEAD made `git diff HEAD` ambiguous, `npm pack` shipped them.
  for (const [name, mode] of [['with the supervisor', {}], ['without it (placeholders git ignores)', NO_SUPERVISOR]] as const) {
    it(`git add -A && git commit in a fresh repository commits only the command's files; git diff HEAD works (${name})`, async () => {
      const { base, home, cwd } = scratch();
      git(cwd, home, 'init', '-q');
      const start = join(base, 'START');
      writeFileSync(start, '');
      await new Promise((r) => setTimeout(r, 20));
      const r = await srt(['-c', 'echo a > a.txt && git add -A && git -c user.email=e@x -c user.name=n commit -qm x && git diff HEAD --exit-code && git status --porcelain && echo CLEAN'],
        { home, cwd, ...mode });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toBe('CLEAN');
      expect(git(cwd, home, 'ls-tree', '-r', '--name-only', 'HEAD').trim()).toBe('a.txt');
      const changed = execFileSync('find', ['.', '-newer', start, '-not', '-path', './.git/*', '-not', '-path', './.git'], { cwd, encoding: 'utf8' })
        .split('\n').filter(Boolean).sort();
      expect(changed).toEqual(['.', './a.txt']);
      expect(readdirSync(cwd).sort()).toEqual(['.git', 'a.txt']);
    });
  }

  // `#!/usr/bin/env node`: a node_modules/.bin/node planted by the sandbox ran, unsandboxed, the next
  // time `npm run`/`npx` invoked srt.
  it('bin/srt never runs a node found on PATH', async () => {
    const { base, home, cwd } = scratch();
    const bin = join(cwd, 'node_modules', '.bin');
    mkdirSync(bin, { recursive: true });
    const ran = join(base, 'planted-node-ran');
    writeFileSync(join(bin, 'node'), `#!/bin/sh\ntouch ${ran}\nexec ${process.execPath} "$@"\n`);
    chmodSync(join(bin, 'node'), 0o755);
    const r = spawnSync(SRT_BIN, ['--', 'echo', 'ran-sandboxed'], { cwd, encoding: 'utf8', env: { PATH: `${bin}:${process.env.PATH}`, HOME: home } });
    expect(r.stdout.trim(), r.stderr).toBe('ran-sandboxed');
    expect(existsSync(ran)).toBe(false);
    expect(readFileSync(join(REPO, 'dist', 'node-path'), 'utf8').trim()).toMatch(/^\//);
  });

  // bin/srt hides NODE_EXTRA_CA_CERTS from srt's own node (it costs node ~30-40 ms to read at
  // start-up and srt's TLS never uses it): the command must get exactly what the user had.
  it('bin/srt hands NODE_EXTRA_CA_CERTS to the command as it was: set, set empty, or unset', () => {
    const { home, cwd } = scratch();
    const show = 'echo "[${NODE_EXTRA_CA_CERTS-unset}] [${SRT_NODE_EXTRA_CA_CERTS-unset}]"';
    const run = (extra: Record<string, string>) =>
      spawnSync(SRT_BIN, ['--', 'sh', '-c', show], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, ...extra } });
    const cases: [Record<string, string>, string][] = [
      [{ NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' }, '[/etc/ssl/certs/ca-certificates.crt] [unset]'],
      [{ NODE_EXTRA_CA_CERTS: '' }, '[] [unset]'],
      [{}, '[unset] [unset]'],
      // A stray value of srt's own variable is not mistaken for the user's setting.
      [{ SRT_NODE_EXTRA_CA_CERTS: '/x' }, '[unset] [unset]'],
    ];
    for (const [env, want] of cases) {
      const r = run(env);
      expect(r.stdout.trim(), `${JSON.stringify(env)}: ${r.stderr}`).toBe(want);
    }
  });
});

/** A copy of the built srt at `pkg` whose runtime dependencies live in `deps` (its own node_modules,
 *  or a project's where npm hoisted them), run by the node at `node` (a copy, as nvm installs one). */
function installSrt(pkg: string, deps: string, node: string): void {
  mkdirSync(join(pkg, 'init'), { recursive: true });
  for (const d of ['bin', 'dist', 'package.json']) execFileSync('cp', ['-a', join(REPO, d), pkg]);
  execFileSync('cp', ['-a', join(REPO, 'init', 'build'), join(pkg, 'init')]);
  mkdirSync(deps, { recursive: true });
  const names = Object.keys((JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
  for (const n of new Set(names.map((x) => x.split('/')[0]!))) execFileSync('cp', ['-a', join(REPO, 'node_modules', n), deps]);
  mkdirSync(dirname(node), { recursive: true });
  execFileSync('cp', [process.execPath, node]);
  writeFileSync(join(pkg, 'dist', 'node-path'), `${node}\n`);
}

/** Plant code in every file of srt's that a later run executes; `mark` is touched if any of it runs. */
function plantInSrt(pkg: string, deps: string, node: string, links: string[], mark: string): string {
  const js = `;require("fs").writeFileSync(${JSON.stringify(mark)}, "")\n`;
  const sh = `#!/bin/sh\ntouch ${mark}\nexec ${process.execPath} "$@"\n`;
  const evil = (name: string, cmd: string) => attempt(name, cmd);
  return [
    `printf '%s' '${sh}' > "$TMPDIR/evil" && chmod +x "$TMPDIR/evil" && cp "$TMPDIR/evil" ./evil-node`,
    evil('nodeOverwrite', `cat ./evil-node > ${node}`),
    evil('nodeReplace', `rm -f ${node} && cp ./evil-node ${node}`),
    evil('nodeMove', `mv ${node} ${node}.orig`),
    evil('nodePathFile', `echo ${process.cwd()}/evil-node > ${pkg}/dist/node-path`),
    evil('launcher', `cp ./evil-node ${pkg}/bin/srt`),
    evil('bundle', `printf '%s' '${js}' >> ${pkg}/dist/bundle/cli.cjs`),
    evil('binPackageJson', `echo '{"type":"module"}' > ${pkg}/bin/package.json`),
    // The next run's bytecode (src/code-cache.ts) lives under ~/.srt, read-only in every sandbox.
    evil('codeCache', 'mkdir -p "$HOME/.srt/cache/code" && echo x > "$HOME/.srt/cache/code/planted"'),
    evil('packageJson', `echo '{"type":"commonjs"}' > ${pkg}/package.json`),
    evil('helper', `cp ./evil-node ${pkg}/init/build/srt-init`),
    evil('yaml', `printf '%s' '${js}' >> ${deps}/yaml/dist/index.js`),
    evil('zod', `printf '%s' '${js}' >> ${deps}/zod/index.cjs`),
    evil('shadowYaml', `mkdir -p ${pkg}/node_modules/yaml && echo '{"name":"yaml","main":"x.js"}' > ${pkg}/node_modules/yaml/package.json`),
    evil('movePackage', `mv ${pkg} ${pkg}.orig && mkdir -p ${pkg}`),
    ...links.map((l, i) => evil(`link${i}`, `rm -f ${l} && cp ./evil-node ${l}`)),
  ].join('\n');
}

// Without the supervisor the mounts keep every existing file and directory read-only, but not a
// symlink (docs/security-model.md "Known limitations"): srt then says that the link (~/bin/srt) can be replaced, and
// what the command created where none of srt's files was (a shadowing node_modules/) is set aside.
const MODES = [['with the supervisor', {}, true], ['without it (read-only mounts)', NO_SUPERVISOR, false]] as const;
describe.each(MODES)("srt's own files under a writable root, %s", (_, mode, supervised) => {
  // The launcher itself (sh, then the node it picks); without the supervisor the harness's entry
  // runs the same launcher's srt in node (test/fixtures/without-supervisor.cjs).
  const start = (launcher: string, args: string[], opts: SpawnSyncOptionsWithStringEncoding) =>
    supervised ? spawnSync(launcher, args, opts) : spawnSync(process.execPath, srtArgv(args, mode, launcher), opts);
  const planted = (links: number, shadowYaml = 'no') => ({
    nodeOverwrite: 'no', nodeReplace: 'no', nodeMove: 'no', nodePathFile: 'no', launcher: 'no', bundle: 'no', binPackageJson: 'no', codeCache: 'no', packageJson: 'no',
    helper: 'no', yaml: 'no', zod: 'no', shadowYaml, movePackage: 'no',
    ...Object.fromEntries(Array.from({ length: links }, (__, i) => [`link${i}`, 'no'])),
  });
  // Red team: an nvm user's node (dist/node-path) lies under ~: a run from ~ warned, but the command
  // could replace that node and the next srt ran it outside any sandbox; the same for srt's package
  // (bin/srt, dist/, its dependencies) installed under ~ or inside the project.
  it('srt installed under HOME with an nvm node: launcher, node, package and dependencies stay read-only; the next srt runs none of the planted code', async () => {
    const { base, home } = scratch();
    const pkg = join(home, '.local/share/srt');
    const node = join(home, '.nvm/versions/node/v20/bin/node');
    installSrt(pkg, join(pkg, 'node_modules'), node);
    mkdirSync(join(home, 'bin'));
    symlinkSync(join(pkg, 'bin/srt'), join(home, 'bin/srt'));
    writeTree(home, { '.srt/settings.yaml': 'filesystem:\n  allowWrite: []\n' }); // the next run loads yaml and zod
    const mark = join(base, 'PLANTED_RAN');
    const env = { PATH: `${join(home, 'bin')}:${process.env.PATH}`, HOME: home };
    const run = (args: string[]) => start(join(home, 'bin/srt'), args, { cwd: home, encoding: 'utf8', env, timeout: 60_000 });
    const links = supervised ? [join(home, 'bin/srt')] : [];
    const r = run(['--', 'sh', '-c', plantInSrt(pkg, join(pkg, 'node_modules'), node, links, mark)]);
    expect(results(r.stdout), r.stderr).toEqual(planted(links.length));
    expect(r.stderr).toContain(`srt: warning: the node srt runs with (${node}) lies inside a path this sandbox may write: srt keeps it read-only inside the sandbox`);
    expect(r.stderr).toMatch(/srt: warning: srt is installed inside a path this sandbox may write \(.*\): srt keeps them read-only/);
    if (!supervised) {
      expect(r.stderr).toContain(`srt: warning: srt's own files (${join(home, 'bin/srt')}) lie inside a path this sandbox may write (without the protected-path supervisor srt cannot keep a symlink): the command could replace it`);
    }
    expect(readFileSync(join(pkg, 'dist/node-path'), 'utf8')).toBe(`${node}\n`);
    // The user's next run, from elsewhere, through the same link: none of it ran.
    const next = spawnSync(join(home, 'bin/srt'), ['--', 'echo', 'sandboxed'], { cwd: base, encoding: 'utf8', env, timeout: 60_000 });
    expect(next.stdout.trim(), next.stderr).toBe('sandboxed');
    expect(existsSync(mark)).toBe(false);
  });

  it('srt installed in the project (node_modules/srt, dependencies hoisted): the same, through node_modules/.bin/srt', async () => {
    const { base, home, cwd } = scratch();
    const pkg = join(cwd, 'node_modules/srt');
    const deps = join(cwd, 'node_modules');
    const node = join(cwd, '.tools/node/bin/node');
    installSrt(pkg, deps, node);
    mkdirSync(join(deps, '.bin'));
    symlinkSync('../srt/bin/srt', join(deps, '.bin/srt'));
    git(cwd, home, 'init', '-q');
    writeTree(home, { '.srt/settings.yaml': 'filesystem:\n  allowWrite: []\n' });
    const mark = join(base, 'PLANTED_RAN');
    const env = { PATH: process.env.PATH, HOME: home };
    const bin = join(deps, '.bin/srt');
    const links = supervised ? [bin] : [];
    const r = start(bin, ['--', 'sh', '-c', plantInSrt(pkg, deps, node, links, mark)], { cwd, encoding: 'utf8', env, timeout: 60_000 });
    // srt's node_modules/ did not exist (npm hoisted its dependencies): the supervisor refuses to
    // create it, the mounts alone cannot, and srt sets it aside when the run ends.
    expect(results(r.stdout), r.stderr).toEqual(planted(links.length, supervised ? 'no' : 'yes'));
    if (!supervised) {
      expect(r.stderr).toContain(`srt: moved ${pkg}/node_modules to ${pkg}/node_modules.srt-disabled: it was created inside the sandbox`);
      expect(r.stderr).toContain(`srt: warning: srt's own files (${bin}) lie inside a path this sandbox may write (without the protected-path supervisor srt cannot keep a symlink)`);
    }
    // Ordinary work in the project's node_modules goes on.
    const ok = start(bin, ['--', 'sh', '-c', 'mkdir node_modules/left-pad && echo x > node_modules/left-pad/index.js && rm -r node_modules/left-pad'], { cwd, encoding: 'utf8', env, timeout: 60_000 });
    expect(ok.status, ok.stderr).toBe(0);
    const next = spawnSync(bin, ['--', 'echo', 'sandboxed'], { cwd, encoding: 'utf8', env, timeout: 60_000 });
    expect(next.stdout.trim(), next.stderr).toBe('sandboxed');
    expect(existsSync(mark)).toBe(false);
  });
});

describe('the supervisor itself', () => {
  // The lead's red-team list: the path rewritten in memory between the check and the call.
  it('a multi-threaded race rewriting the path in memory never creates a protected name (10k calls)', async () => {
    const { base, home, cwd } = scratch();
    const exe = join(base, 'race');
    execFileSync('gcc', ['-O2', '-pthread', '-o', exe, join(REPO, 'test/e2e/fixtures/race.c')]);
    const r = await srt(['--allow-write', base, '--', exe, '10000', 'harmless', '.bashrc'], { home, cwd, timeout: 120_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const counts = Object.fromEntries(r.stdout.trim().split(' ').map((kv) => kv.split('=').map((x, i) => (i ? Number(x) : x))));
    // The harmless spelling went through many times, the protected one never.
    for (const k of ['created', 'dirs', 'links', 'renamed']) expect(counts[k], k).toBeGreaterThan(0);
    expect(lstatSync(join(cwd, '.bashrc'), { throwIfNoEntry: false })).toBeUndefined();
    expect(r.stderr).toContain('srt: refused writing .bashrc (protected)');
  });

  it('ways around a name check: /proc/self/fd reopen, hard link, O_TMPFILE, rename exchange, truncate, chmod, FIFOs, nested listeners, Landlock', async () => {
    const { base, home, cwd } = scratch();
    // Beyond mandatoryDenySearchDepth: not bound read-only, the supervisor alone protects it.
    const repo = 'd1/d2/d3/d4/r';
    git(cwd, home, 'init', '-q');
    git(cwd, home, 'config', 'core.hooksPath', 'tools/hooks');
    mkdirSync(join(cwd, repo), { recursive: true });
    git(join(cwd, repo), home, 'init', '-q');
    writeTree(cwd, { [`${repo}/.git/hooks/post-checkout`]: '#!/bin/sh\necho disabled\n' });
    const cfg = `${repo}/.git/config`;
    const code = [
      'import ctypes, os, sys',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def tried(name, f):',
      '    try: f(); print(f"{name}=yes")',
      '    except OSError: print(f"{name}=no")',
      `cfg = "${cfg}"`,
      'def reopen():',
      '    r = os.open(cfg, os.O_RDONLY); os.close(os.open(f"/proc/self/fd/{r}", os.O_WRONLY | os.O_APPEND))',
      'tried("reopen", reopen)',
      'tried("reopenDevFd", lambda: os.close(os.open(f"/dev/fd/{os.open(cfg, os.O_RDONLY)}", os.O_RDWR)))',
      'tried("hardlink", lambda: os.link(cfg, "cfg-link"))',
      'tried("dirfd", lambda: os.close(os.open("config", os.O_WRONLY | os.O_TRUNC, dir_fd=os.open(os.path.dirname(cfg), os.O_RDONLY))))',
      'def tmpfile():',
      '    t = os.open(".", os.O_WRONLY | os.O_TMPFILE, 0o644); os.write(t, b"evil"); os.link(f"/proc/self/fd/{t}", ".bashrc")',
      'tried("tmpfile", tmpfile)',
      'open("x", "w").write("[core]\\n\\tfsmonitor = touch PWNED\\n")',
      'def exchange():',
      '    if libc.renameat2(-100, b"x", -100, cfg.encode(), 2) != 0: raise OSError(ctypes.get_errno(), "renameat2")',
      'tried("exchange", exchange)',
      'tried("truncate", lambda: os.truncate(cfg, 0))',
      `tried("chmodHook", lambda: os.chmod("${repo}/.git/hooks/post-checkout", 0o755))`,
      'tried("fifo", lambda: os.mkfifo(".bashrc"))',
      'tried("mknodReg", lambda: os.mknod(".profile", 0o100644))',
      `tried("symlinkModule", lambda: os.symlink("${base}", "${repo}/.git/modules"))`,
      `tried("moveGit", lambda: os.rename("${repo}/.git", "git-moved"))`,
      // A new .git made inside an old one is a new repository (reviewed at the end); the old one's entries keep their rules.
      `tried("newGitInOld", lambda: (os.makedirs("${repo}/.git/modules/x/.git"), open("${repo}/.git/modules/x/.git/config", "w")))`,
      'os.makedirs("t2/hooks"); open("t2/hooks/pre-commit", "w").write("#!/bin/sh\\ntouch PWNED\\n"); os.chmod("t2/hooks/pre-commit", 0o755)',
      'tried("moveHooksPath", lambda: os.rename("t2", "tools"))',
      'tried("linkHooksPath", lambda: os.symlink("t2", "tools"))',
      `tried("rmGitDir", lambda: os.rmdir("${repo}/.git/hooks"))`,
      'def listener():',
      '    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, NULL)',
      '    nr = {"x86_64": 317, "aarch64": 277}[os.uname().machine]',
      '    if libc.syscall(nr, 1, 8, None) < 0 and ctypes.get_errno() == 1: raise OSError(1, "EPERM")',
      'tried("nestedListener", listener)',
      'def landlock():',
      '    if libc.syscall(444, None, 0, 1) < 0: raise OSError(ctypes.get_errno(), "landlock")',
      'tried("landlock", landlock)',
      'xfd = os.open("x", os.O_RDONLY)',
      'tried("ordinaryReopen", lambda: os.close(os.open(f"/proc/self/fd/{xfd}", os.O_WRONLY)))',
    ].join('\n');
    writeFileSync(join(base, 'probe.py'), code);
    const r = await srt(['--', 'python3', join(base, 'probe.py')], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual({
      reopen: 'no', reopenDevFd: 'no', hardlink: 'no', dirfd: 'no', tmpfile: 'no', exchange: 'no', truncate: 'no', chmodHook: 'no',
      fifo: 'no', mknodReg: 'no', symlinkModule: 'no', moveGit: 'no', newGitInOld: 'yes', moveHooksPath: 'no', linkHooksPath: 'no', rmGitDir: 'no', nestedListener: 'no', landlock: 'no', ordinaryReopen: 'yes',
    });
    expect(readFileSync(join(cwd, cfg), 'utf8')).not.toContain('fsmonitor');
    expect(statSync(join(cwd, repo, '.git/hooks/post-checkout')).mode & 0o111).toBe(0);
    hostGitUse(join(cwd, repo), home);
    hostGitUse(cwd, home);
    expect(existsSync(join(cwd, repo, 'PWNED'))).toBe(false);
    expect(existsSync(join(cwd, 'PWNED'))).toBe(false);
  });

  // Red team: setting system.posix_acl_access rewrites the mode bits, and the supervisor saw only
  // chmod. A hook the user disabled (chmod -x) below the mounted depth became 0755 and ran at the
  // next commit on the host; the same made .git/config writable by other local users.
  it('a POSIX ACL, another extended attribute or an owner change of a protected file is refused like chmod, in every spelling', async () => {
    const { base, home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    const repo = 'a/b/c/d/e';
    mkdirSync(join(cwd, repo), { recursive: true });
    git(join(cwd, repo), home, 'init', '-q');
    git(join(cwd, repo), home, 'commit', '-q', '--allow-empty', '-m', 'i');
    const pwned = join(base, 'PWNED');
    const hookPath = join(cwd, repo, '.git/hooks/pre-commit');
    writeFileSync(hookPath, `#!/bin/sh\ntouch ${pwned}\n`, { mode: 0o644 }); // disabled: chmod -x
    chmodSync(hookPath, 0o644);
    const cfgMode = statSync(join(cwd, repo, '.git/config')).mode & 0o777;
    writeFileSync(join(cwd, 'plain'), 'x\n', { mode: 0o600 });
    chmodSync(join(cwd, 'plain'), 0o600);
    const code = [
      'import ctypes, os, struct',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'L = ctypes.c_long',
      'def tried(name, f):',
      '    try: f(); print(f"{name}=yes")',
      '    except OSError as e: print(f"{name}=no" if e.errno != 38 else f"{name}=enosys")',
      'def acl(u, g, o):',
      '    e = lambda tag, perm: struct.pack("<HHI", tag, perm, 0xffffffff)',
      '    return struct.pack("<I", 2) + e(1, u) + e(4, g) + e(0x20, o)',
      'A = "system.posix_acl_access"',
      'RX = acl(7, 5, 5)',
      `hook, cfg, plain = "${repo}/.git/hooks/pre-commit", "${repo}/.git/config", "plain"`,
      'def sys(nr, *args):',
      '    if libc.syscall(L(nr), *[a if isinstance(a, bytes) or a is None else L(a) for a in args]) != 0:',
      '        raise OSError(ctypes.get_errno(), "syscall")',
      'def setxattrat(dfd, path, flags, name, value):',
      '    v = ctypes.create_string_buffer(value, len(value))',
      '    args = ctypes.create_string_buffer(struct.pack("<QII", ctypes.addressof(v), len(value), 0), 16)',
      '    sys(463, dfd, path, flags, name, ctypes.addressof(args), 16)',
      'ro = os.open(hook, os.O_RDONLY)',
      'opath = os.open(hook, os.O_PATH)',
      'gitdir = os.open(os.path.dirname(cfg), os.O_PATH)',
      'tried("setxattr", lambda: os.setxattr(hook, A, RX))',
      'tried("lsetxattr", lambda: os.setxattr(hook, A, RX, follow_symlinks=False))',
      'tried("fsetxattrReadOnlyFd", lambda: os.setxattr(ro, A, RX))',
      'tried("procFdOfOpath", lambda: os.setxattr(f"/proc/self/fd/{opath}", A, RX))',
      'tried("setxattrat", lambda: setxattrat(-100, hook.encode(), 0, A.encode(), RX))',
      'tried("setxattratEmptyPath", lambda: setxattrat(ro, b"", 0x1000, A.encode(), RX))',
      'tried("dirfdDotDot", lambda: os.setxattr(f"/proc/self/fd/{gitdir}/hooks/../config", A, acl(6, 4, 6)))',
      'tried("configOtherWrite", lambda: os.setxattr(cfg, A, acl(6, 4, 6)))',
      'tried("userXattr", lambda: os.setxattr(cfg, "user.x", b"1"))',
      'tried("removexattr", lambda: os.removexattr(hook, A))',
      'tried("removexattrat", lambda: sys(466, -100, hook.encode(), 0, A.encode()))',
      'tried("chown", lambda: os.chown(cfg, os.getuid(), os.getgid()))',
      'tried("lchown", lambda: os.lchown(cfg, -1, os.getgid()))',
      'tried("fchown", lambda: os.fchown(ro, -1, os.getgid()))',
      'tried("fchownatEmpty", lambda: sys(260 if os.uname().machine == "x86_64" else 54, opath, b"", -1, os.getgid(), 0x1000))',
      'tried("chmodGitDirDot", lambda: os.chmod(f"{os.path.dirname(cfg)}/.", 0o777))',
      // Ordinary files keep every one of these calls.
      'tried("plainAcl", lambda: os.setxattr(plain, A, RX))',
      'print("plainMode=" + oct(os.stat(plain).st_mode & 0o777))',
      'tried("plainUser", lambda: (os.setxattr(plain, "user.x", b"v"), os.getxattr(plain, "user.x") == b"v" or os.abort()))',
      'tried("plainRemove", lambda: os.removexattr(plain, "user.x"))',
      'tried("plainChown", lambda: os.chown(plain, os.getuid(), os.getgid()))',
      'tried("plainFchown", lambda: os.fchown(os.open(plain, os.O_RDONLY), -1, -1))',
      'tried("plainXattrat", lambda: setxattrat(-100, plain.encode(), 0, b"user.y", b"w"))',
    ].join('\n');
    writeFileSync(join(base, 'acl.py'), code);
    const r = await srt(['--', 'python3', join(base, 'acl.py')], { home, cwd });
    const got = keyValues(r.stdout);
    // setxattrat and removexattrat exist from Linux 6.13: ENOSYS before, as the kernel says.
    const xattrat = got.plainXattrat === 'enosys' ? 'enosys' : 'no';
    expect(got, r.stderr).toEqual({
      setxattr: 'no', lsetxattr: 'no', fsetxattrReadOnlyFd: 'no', procFdOfOpath: 'no', setxattrat: xattrat, setxattratEmptyPath: xattrat,
      dirfdDotDot: 'no', configOtherWrite: 'no', userXattr: 'no', removexattr: 'no', removexattrat: xattrat,
      chown: 'no', lchown: 'no', fchown: 'no', fchownatEmpty: 'no', chmodGitDirDot: 'no',
      plainAcl: 'yes', plainMode: '0o755', plainUser: 'yes', plainRemove: 'yes', plainChown: 'yes', plainFchown: 'yes',
      plainXattrat: xattrat === 'enosys' ? 'enosys' : 'yes',
    });
    expect(r.stderr).toContain(`srt: refused setting an extended attribute or ACL on ${repo}/.git/hooks/pre-commit (protected`);
    expect(statSync(hookPath).mode & 0o777).toBe(0o644);
    expect(statSync(join(cwd, repo, '.git/config')).mode & 0o777).toBe(cfgMode);
    expect(statSync(join(cwd, repo, '.git')).mode & 0o777).not.toBe(0o777);
    expect(statSync(join(cwd, 'plain')).mode & 0o777).toBe(0o755);
    hostGitUse(join(cwd, repo), home);
    expect(existsSync(pwned)).toBe(false);
  });

  // The supervisor opens /proc entries as init, which may open its own /proc/1/mem: served to the
  // command (a root caller's, whose uid owns init's /proc files), that handed it init's memory and
  // with it the supervisor's rules.
  it("init's own /proc entries are never opened for the command: /proc/1/mem, its tasks and fds, through dirfds, links and /proc/self/fd", async () => {
    const { base, home, cwd } = scratch();
    const code = [
      'import os',
      'def tried(name, f):',
      '    try: f(); print(f"{name}=yes")',
      '    except OSError: print(f"{name}=no")',
      'W = os.O_RDWR',
      'tried("mem", lambda: os.open("/proc/1/mem", W))',
      'tids = os.listdir("/proc/1/task")',
      'print("initThreads=" + str(len(tids)))',
      'tried("taskMem", lambda: [os.open(f"/proc/1/task/{t}/mem", W) for t in tids])',
      'tried("tidMem", lambda: [os.open(f"/proc/{t}/mem", W) for t in tids if t != "1"])',
      'tried("dotDot", lambda: os.open("/proc/self/../1/mem", W))',
      'tried("dirfd", lambda: os.open("mem", W, dir_fd=os.open("/proc/1", os.O_PATH)))',
      'tried("taskDirfd", lambda: os.open("mem", W, dir_fd=os.open(f"/proc/1/task/{tids[-1]}", os.O_PATH)))',
      'tried("opathReopen", lambda: os.open(f"/proc/self/fd/{os.open(\'/proc/1/mem\', os.O_PATH)}", W))',
      'os.symlink("/proc/1/mem", "m"); os.symlink("/proc/1", "p")',
      'tried("symlink", lambda: os.open("m", W))',
      'tried("symlinkDir", lambda: os.open("p/mem", W))',
      'tried("fds", lambda: [os.open(f"/proc/1/fd/{n}", os.O_WRONLY) for n in range(0, 3)])',
      'tried("attr", lambda: os.open("/proc/1/attr/current", W))',
      'tried("comm", lambda: os.open("/proc/1/comm", os.O_WRONLY))',
      'tried("chmodMem", lambda: os.chmod("/proc/1/mem", 0o666))',
      // The command's own /proc works as before.
      'tried("ownComm", lambda: open("/proc/self/comm", "w").write("renamed"))',
      'f = os.open("own", os.O_CREAT | os.O_WRONLY, 0o644)',
      'tried("ownReopen", lambda: os.open(f"/proc/self/fd/{f}", os.O_WRONLY))',
      'tried("ownMem", lambda: os.open(f"/proc/{os.getpid()}/mem", W))',
    ].join('\n');
    writeFileSync(join(base, 'proc.py'), code);
    const r = await srt(['--', 'python3', join(base, 'proc.py')], { home, cwd });
    const got = keyValues(r.stdout);
    expect(got, r.stderr).toEqual({
      mem: 'no', initThreads: '2', taskMem: 'no', tidMem: 'no', dotDot: 'no', dirfd: 'no', taskDirfd: 'no', opathReopen: 'no',
      symlink: 'no', symlinkDir: 'no', fds: 'no', attr: 'no', comm: 'no', chmodMem: 'no',
      ownComm: 'yes', ownReopen: 'yes', ownMem: 'yes',
    });
  });

  it('ordinary work is unchanged: FIFOs, /dev/stdout, umask, no setuid bits, O_EXCL, dirfds, renames, tar, git, node', async () => {
    const { home, cwd } = scratch();
    const script = [
      attempt('fifo', 'mkfifo p && { (sleep 0.2; cat p > got) & echo through > p; wait; } && grep -q through got'),
      attempt('devStdout', 'echo o > /dev/stdout && echo e > /dev/stderr && echo f > /dev/fd/1 && echo n > /dev/null'),
      attempt('procSub', 'cat <(echo x) | grep -q x && echo y > >(cat >/dev/null)'),
      attempt('umask', 'umask 077 && echo s > secret && test "$(stat -c %a secret)" = 600'),
      attempt('setuidRefused', '! python3 -c "import os; os.close(os.open(\\"suid\\", os.O_CREAT | os.O_WRONLY, 0o4755))" && touch suid && ! chmod u+s suid'),
      attempt('excl', 'set -C; echo 1 > once; ! (echo 2 > once) 2>/dev/null'),
      attempt('append', 'echo a >> log && echo b >> log && test "$(cat log)" = "a\nb"'),
      attempt('dirs', 'mkdir -p x/y/z && mv x w && ln -s w/y l && touch l/f && test -f w/y/f && rm -r w l'),
      attempt('cpTar', 'mkdir t && echo c > t/c && tar cf t.tar t && mkdir u && tar xf t.tar -C u && cp -a u v && test -f v/t/c'),
      attempt('gitWork', 'git init -q g && cd g && echo a > a && git add a && git -c user.email=e@x -c user.name=n commit -qm a && git checkout -qb b && git gc -q && git clone -q . ../g2'),
      attempt('node', 'node -e "const fs=require(\\"fs\\");fs.mkdirSync(\\"nm/a/b\\",{recursive:true});for(let i=0;i<200;i++)fs.writeFileSync(\\"nm/a/b/f\\"+i,\\"x\\");fs.renameSync(\\"nm/a\\",\\"nm/c\\")"'),
      attempt('pyTemp', 'python3 -c "import tempfile,os; f=tempfile.NamedTemporaryFile(dir=\\".\\",delete=False); f.write(b\\"x\\"); f.close(); os.replace(f.name, \\"final\\")"'),
      attempt('tmpdir', 'echo t > "$TMPDIR/.bashrc" && mkdir "$TMPDIR/.vscode"'),
    ].join('\n');
    const r = await srt(['--', 'bash', '-c', script], { home, cwd });
    expect(results(r.stdout), r.stderr).toEqual({
      fifo: 'yes', devStdout: 'yes', procSub: 'yes', umask: 'yes', setuidRefused: 'yes', excl: 'yes', append: 'yes',
      dirs: 'yes', cpTar: 'yes', gitWork: 'yes', node: 'yes', pyTemp: 'yes', tmpdir: 'yes',
    });
    expect(r.stderr).not.toMatch(/srt: (?!warning)/);
  });

  it('the end-of-run report: each refused path once, at most 10 lines, then a count', async () => {
    const { home, cwd } = scratch();
    // Directories that existed before the run (in one the run made, the names are its own).
    for (let i = 1; i <= 14; i++) mkdirSync(join(cwd, `d${i}`));
    const r = await srt(['-c', 'for i in $(seq 1 14); do echo x > d$i/.bashrc; echo y > d$i/.bashrc; done 2>/dev/null; true'], { home, cwd });
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('srt: ') && !l.startsWith('srt: warning'));
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe('srt: refused writing d1/.bashrc (protected: .bashrc in a directory that existed before the run)');
    expect(lines[10]).toBe('srt: … and 4 more refused writes to protected paths');
  });

  it('the supervisor stops only once no process is under the filter: after every child of the command ended, its calls are still judged', async () => {
    const { home, cwd } = scratch();
    const r = await srt(['-c', 'for i in 1 2 3; do (true); sh -c true & wait; done; echo x > .bashrc; echo rc=$?'], { home, cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('rc=1');
    expect(lstatSync(join(cwd, '.bashrc'), { throwIfNoEntry: false })).toBeUndefined();
    expect(r.stderr).toContain('srt: refused writing .bashrc (protected)');
  });

  it('the supervisor does not stop while the filter has users: after an idle spell, and from a setsid grandchild whose parents exited, protected writes are refused, never hang', async () => {
    const { home, cwd } = scratch();
    // The grandchild is reparented to init (its parent and the subshell exit at once) and writes
    // after 1.5 s of no call under the filter; the command writes again after 3 s.
    const script = '(setsid sh -c \'sleep 1.5; echo x > .bashrc; echo grandchild=$?\' > out &); sleep 3; cat out; echo x > .bashrc; echo command=$?';
    const started = Date.now();
    const r = await srt(['-c', script], { home, cwd, timeout: 30_000 });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode, r.stderr).toBe(0);
    // The shells say 1 (bash) or 2 (dash) for a refused redirection.
    expect(keyValues(r.stdout)).toEqual({ grandchild: expect.stringMatching(/^[12]$/), command: expect.stringMatching(/^[12]$/) });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(lstatSync(join(cwd, '.bashrc'), { throwIfNoEntry: false })).toBeUndefined();
    expect(r.stderr).toContain('srt: refused writing .bashrc (protected)');
  }, 60_000);

  it('fails closed: when the supervisor dies, the command dies with it and nothing more is written', async () => {
    const { home, cwd } = scratch();
    const bg = await startBackground(['-c', 'echo; echo ready; for i in $(seq 1 100); do sleep 0.1; echo $i > f$i; done'], home, cwd);
    // The supervisor is a thread of init, the helper's process inside the nested PID namespace.
    const children = (pid: number): number[] => {
      try { return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number); } catch { return []; }
    };
    const helper = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('srt-init');
    const [bwrap] = children(bg.child.pid!);
    const outer = children(bwrap!).find(helper);
    // init is the helper's child that runs the command (the network relay is one too, childless).
    const init = children(outer!).find((pid) => helper(pid) && children(pid).length > 0);
    expect(readFileSync(`/proc/${init}/cmdline`, 'utf8')).toContain('srt-init');
    expect(readdirSync(`/proc/${init}/task`).length).toBe(2);
    process.kill(init!, 'SIGKILL');
    await bg.exit;
    const written = readdirSync(cwd).length;
    await new Promise((r) => setTimeout(r, 300));
    expect(readdirSync(cwd).length).toBe(written);
    expect(written).toBeLessThan(100);
  });
});

describe('without the supervisor (placeholders)', () => {
  it('protected names at the top and existing ones within mandatoryDenySearchDepth stay read-only; the placeholders go', async () => {
    const { home, cwd } = scratch();
    git(cwd, home, 'init', '-q');
    writeTree(cwd, { 'a/b/.bashrc': 'orig', 'a/b/c/d/.bashrc': 'deep' });
    const script = [
      attempt('top', 'echo evil > .bashrc'),
      attempt('topVscode', 'mkdir -p .vscode/x'),
      attempt('hooks', 'echo evil > .git/hooks/pre-commit'),
      attempt('existingDepth2', 'echo evil >> a/b/.bashrc'),
      attempt('gitStatusClean', 'test -z "$(git status --porcelain --untracked-files=all | grep -v "^?? a/")"'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd, ...NO_SUPERVISOR });
    expect(results(r.stdout), r.stderr).toEqual({ top: 'no', topVscode: 'no', hooks: 'no', existingDepth2: 'no', gitStatusClean: 'yes' });
    expect(readFileSync(join(cwd, 'a/b/.bashrc'), 'utf8')).toBe('orig');
    expect(readdirSync(cwd).sort()).toEqual(['.git', 'a']);
    expect(existsSync(join(home, '.srt/state')) ? readdirSync(join(home, '.srt/state')) : []).toEqual([]);
    expect(dirname(cwd)).toBeTruthy();
  });
});
