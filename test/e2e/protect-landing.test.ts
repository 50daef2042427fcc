// Protection by landing and provenance (SPEC §3, invariant 10): what a host program runs or reads
// as configuration is protected where it really lies, not only under its protected name; what the
// run made is its own, and every repository it made is reviewed wherever it ended up. Each test
// plants a payload inside srt, runs the real host program afterwards (git commit/status/push,
// bash -i, srt itself) and checks the marker it would leave is absent — and, as a control, plants
// the very same payload outside srt and sees the host program run it.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NO_SUPERVISOR, srt, tempDir, writeTree, type SrtMode } from './helpers.js';

const dirs: { cleanup: () => void }[] = [];
afterAll(() => { for (const d of dirs) d.cleanup(); });

interface World {
  base: string;
  home: string;
  cwd: string;
  /** What the planted code would create. */
  marker: string;
  env: Record<string, string>;
}

function world(setup: (w: World) => void, env: Record<string, string> = {}): World {
  const d = tempDir('srt-landing-');
  dirs.push(d);
  const w = { base: d.path, home: join(d.path, 'home'), cwd: join(d.path, 'proj'), marker: join(d.path, 'PWNED'), env };
  mkdirSync(w.home);
  mkdirSync(w.cwd);
  setup(w);
  return w;
}

const hostEnv = (w: World) => ({ PATH: process.env.PATH!, HOME: w.home, GIT_CONFIG_NOSYSTEM: '1', ...w.env });
/** Host git, as the user runs it next. */
function git(w: World, dir: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'user.email=e@x', '-c', 'user.name=n', ...args],
    { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: hostEnv(w) });
}
const hostGit = (dir: (w: World) => string, ...args: string[]) => (w: World) => {
  spawnSync('git', ['-c', 'user.email=e@x', '-c', 'user.name=n', ...args], { cwd: dir(w), stdio: 'ignore', env: hostEnv(w) });
};
const touch = (w: World) => `touch ${w.marker}`;

/**
 * Plant `plant` (a shell command run in cwd) inside srt, then run `host`: the marker must not
 * appear. Then the control: the same plant in a fresh world, outside srt, and `host` runs it.
 * Returns srt's result.
 */
async function plantedInside(make: () => World, plant: (w: World) => string, host: (w: World) => void, mode: SrtMode & { args?: (w: World) => string[] } = {}) {
  const inside = make();
  const r = await srt([...(mode.args?.(inside) ?? []), '-c', plant(inside)], { home: inside.home, cwd: inside.cwd, env: inside.env, ...(mode.supervisor === false ? NO_SUPERVISOR : {}) });
  host(inside);
  expect(existsSync(inside.marker), `planted inside srt, and the host program ran it: ${r.stderr}`).toBe(false);
  const outside = make();
  spawnSync('sh', ['-c', plant(outside)], { cwd: outside.cwd, stdio: 'ignore', env: hostEnv(outside) });
  host(outside);
  expect(existsSync(outside.marker), 'the control: planted outside srt, the host program runs it').toBe(true);
  return r;
}

describe('hole 1: symlinks inside protected directories protect their targets', () => {
  // install-hooks.sh style: .git/hooks/pre-commit -> ../../scripts/pre-commit.
  for (const mode of [{}, NO_SUPERVISOR]) {
    it(`a hook that links into the work tree: the next host git commit runs nothing planted${mode === NO_SUPERVISOR ? ' (without the supervisor)' : ''}`, async () => {
      const make = () => world((w) => {
        git(w, w.cwd, 'init', '-q');
        writeTree(w.cwd, { 'scripts/pre-commit': '#!/bin/sh\ntrue\n' });
        chmodSync(join(w.cwd, 'scripts/pre-commit'), 0o755);
        symlinkSync('../../scripts/pre-commit', join(w.cwd, '.git/hooks/pre-commit'));
      });
      const r = await plantedInside(make, (w) => `echo '${touch(w)}' >> scripts/pre-commit`, hostGit((w) => w.cwd, 'commit', '--allow-empty', '-qm', 'host'), mode);
      if (mode !== NO_SUPERVISOR) expect(r.stderr).toContain('refused writing scripts/pre-commit (protected');
    });
  }

  it('.vscode/tasks.json, .claude/settings.json and .srt/settings.json links: their targets stay as they were; the next srt keeps the deny', async () => {
    const make = () => world((w) => {
      writeTree(w.cwd, { 'shared/tasks.json': '{}', 'shared/claude.json': '{}', 'conf/srt.json': JSON.stringify({ filesystem: { denyRead: ['secret.txt'] } }), 'secret.txt': 'S3CRET' });
      mkdirSync(join(w.cwd, '.vscode'));
      mkdirSync(join(w.cwd, '.claude'));
      mkdirSync(join(w.cwd, '.srt'));
      symlinkSync('../shared/tasks.json', join(w.cwd, '.vscode/tasks.json'));
      symlinkSync('../shared/claude.json', join(w.cwd, '.claude/settings.json'));
      symlinkSync('../conf/srt.json', join(w.cwd, '.srt/settings.json'));
    });
    // The host program that obeys .srt/settings.json is srt itself: the next run.
    const nextSrt = async (w: World) => (await srt(['-c', 'cat secret.txt'], { home: w.home, cwd: w.cwd })).stdout;
    const inside = make();
    const r = await srt(['-c', "echo '{\"tasks\":[]}' > shared/tasks.json; echo '{\"hooks\":{}}' > shared/claude.json; echo '{}' > conf/srt.json; true"], { home: inside.home, cwd: inside.cwd });
    expect(r.stderr).toContain('refused writing conf/srt.json (protected');
    expect(readFileSync(join(inside.cwd, 'shared/tasks.json'), 'utf8')).toBe('{}');
    expect(readFileSync(join(inside.cwd, 'shared/claude.json'), 'utf8')).toBe('{}');
    expect(await nextSrt(inside)).not.toContain('S3CRET');
    const outside = make();
    writeFileSync(join(outside.cwd, 'conf/srt.json'), '{}');
    expect(await nextSrt(outside)).toContain('S3CRET');
  });
});

describe('hole 2: host configuration that lands in a writable root', () => {
  // srt run in the dotfiles repository that ~/.bashrc, ~/.gitconfig, ~/.config/git link into.
  const dotfiles = (extra: (w: World) => void = () => {}) => () => world((w) => {
    mkdirSync(w.cwd, { recursive: true });
    writeTree(w.cwd, { bashrc: 'true\n', gitconfig: '[user]\n\tname = n\n', 'git/ignore': '' });
    symlinkSync(join(w.cwd, 'bashrc'), join(w.home, '.bashrc'));
    symlinkSync(join(w.cwd, 'gitconfig'), join(w.home, '.gitconfig'));
    mkdirSync(join(w.home, '.config'));
    symlinkSync(join(w.cwd, 'git'), join(w.home, '.config/git'));
    mkdirSync(join(w.base, 'repo'));
    git(w, join(w.base, 'repo'), 'init', '-q');
    extra(w);
  });
  const repo = (w: World) => join(w.base, 'repo');

  it('stow-style ~/.bashrc -> ~/dotfiles/bashrc: the next bash -i runs nothing planted', async () => {
    const r = await plantedInside(dotfiles(), (w) => `echo '${touch(w)}' >> bashrc`,
      (w) => { spawnSync('bash', ['-i', '-c', 'true'], { cwd: w.base, stdio: 'ignore', env: { PATH: process.env.PATH!, HOME: w.home } }); });
    expect(r.stderr).toContain('refused writing bashrc (protected');
  });

  it('~/.gitconfig and ~/.config/git linked into the dotfiles: the next host git status runs no fsmonitor', async () => {
    const fsmon = (w: World) => `[core]\n\tfsmonitor = "${touch(w)}; false"\n`;
    await plantedInside(dotfiles(), (w) => `printf '${fsmon(w)}' >> gitconfig`, hostGit(repo, 'status'));
    await plantedInside(dotfiles(), (w) => `printf '${fsmon(w)}' > git/config`, hostGit(repo, 'status'));
  });

  it("git include chains: a repository's include.path into its work tree, the global includeIf into the dotfiles, $XDG_CONFIG_HOME in a writable root", async () => {
    const fsmon = (w: World) => `printf '[core]\\n\\tfsmonitor = "${touch(w)}; false"\\n'`;
    // Repository-local: include.path=../tools/gitconfig is relative to .git/config.
    const local = () => world((w) => {
      git(w, w.cwd, 'init', '-q');
      git(w, w.cwd, 'config', 'include.path', '../tools/gitconfig');
    });
    const r = await plantedInside(local, (w) => `mkdir -p tools && ${fsmon(w)} > tools/gitconfig`, hostGit((w) => w.cwd, 'status'));
    expect(r.stderr).toContain('refused writing tools/gitconfig (protected');
    // Global: an includeIf from ~/.gitconfig into a file of the writable root, through another include.
    const global = dotfiles((w) => {
      writeFileSync(join(w.cwd, 'gitconfig'), `[includeIf "gitdir:${w.base}/"]\n\tpath = ${w.cwd}/work.gitconfig\n`);
      writeFileSync(join(w.cwd, 'work.gitconfig'), '[include]\n\tpath = nested.gitconfig\n');
    });
    await plantedInside(global, (w) => `${fsmon(w)} > nested.gitconfig`, hostGit(repo, 'status'));
    // $XDG_CONFIG_HOME/git/config where XDG_CONFIG_HOME lies in the writable root (no link at all).
    const xdg = () => {
      const w = world(() => {});
      w.env.XDG_CONFIG_HOME = join(w.cwd, 'xdg');
      mkdirSync(join(w.base, 'repo'));
      git(w, join(w.base, 'repo'), 'init', '-q');
      return w;
    };
    await plantedInside(xdg, (w) => `mkdir -p xdg/git && ${fsmon(w)} > xdg/git/config`, hostGit(repo, 'status'));
  });
});

describe('protected locations below the home inside a writable root', () => {
  it('allowWrite ~/.config: ~/.config/git, systemd/user and autostart stay uncreatable, whether or not they existed', async () => {
    const w = world((x) => mkdirSync(join(x.home, '.config')));
    const r = await srt(['--allow-write', join(w.home, '.config'), '-c', [
      'mkdir -p ~/.config/systemd/user; echo x > ~/.config/systemd/user/x.service',
      'mkdir -p ~/.config/git; echo "[core] pager = x" > ~/.config/git/config',
      'mkdir -p ~/.config/autostart; echo x > ~/.config/autostart/x.desktop',
      'echo ok > ~/.config/app.conf', 'true',
    ].join('; ')], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const left = execFileSync('find', [join(w.home, '.config'), '-type', 'f'], { encoding: 'utf8' }).trim().split('\n');
    expect(left).toEqual([join(w.home, '.config/app.conf')]);
  });
});

describe('hole 3: bare repositories in a writable root', () => {
  // The remote a project pushes to, allowed with --allow-write, or lying inside the work tree.
  const remote = (where: 'allowWrite' | 'nested') => () => world((w) => {
    const bare = where === 'allowWrite' ? join(w.base, 'remote.git') : join(w.cwd, 'srv/a/remote.git');
    mkdirSync(bare, { recursive: true });
    git(w, bare, 'init', '-q', '--bare');
    git(w, w.cwd, 'init', '-q');
    git(w, w.cwd, 'commit', '-q', '--allow-empty', '-m', 'i');
    git(w, w.cwd, 'remote', 'add', 'origin', bare);
  });
  const bareOf = (w: World) => (existsSync(join(w.base, 'remote.git')) ? join(w.base, 'remote.git') : join(w.cwd, 'srv/a/remote.git'));
  const push = (w: World) => { git(w, w.cwd, 'commit', '-q', '--allow-empty', '-m', 'next'); hostGit((x) => x.cwd, 'push', '-q', 'origin', 'main')(w); };
  const hookScript = (w: World) => `printf '#!/bin/sh\\n${touch(w)}\\n' > ${bareOf(w)}/hooks/post-receive && chmod +x ${bareOf(w)}/hooks/post-receive`;
  const configPlant = (w: World) => `printf '[core]\\n\\thooksPath = ${w.base}/evilhooks\\n' >> ${bareOf(w)}/config`;

  it('--allow-write remote.git: git push works inside; hooks/ and config stay protected, so the next host git push runs nothing planted', async () => {
    const args = (w: World) => ['--allow-write', join(w.base, 'remote.git')];
    await plantedInside(remote('allowWrite'), hookScript, push, { args });
    // core.hooksPath in its config would point the host's push at other hooks.
    const withHooks = () => {
      const w = remote('allowWrite')();
      writeTree(w.base, { 'evilhooks/post-receive': `#!/bin/sh\n${touch(w)}\n` });
      chmodSync(join(w.base, 'evilhooks/post-receive'), 0o755);
      return w;
    };
    await plantedInside(withHooks, configPlant, push, { args });
    // The workflow itself.
    const w = remote('allowWrite')();
    const r = await srt(['--allow-write', join(w.base, 'remote.git'), '--', 'sh', '-c',
      'git -c user.email=e@x -c user.name=n commit -q --allow-empty -m inside && git push -q origin main'], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(git(w, join(w.base, 'remote.git'), 'log', '--format=%s', 'main').trim().split('\n')).toEqual(['inside', 'i']);
  }, 120_000); // five srt runs

  it('a bare repository inside the work tree: its hooks are protected like a .git\'s', async () => {
    const r = await plantedInside(remote('nested'), hookScript, push);
    expect(r.stderr).toContain('refused writing srv/a/remote.git/hooks/post-receive (protected');
  });
});

describe('provenance: what the run made is its own; what existed keeps its protected names', () => {
  // A repository to clone, with everything a host program would obey in an existing project.
  const PROJECT = {
    '.vscode/tasks.json': '{"tasks":[]}', '.devcontainer/devcontainer.json': '{}', '.claude/settings.json': '{}',
    '.gitmodules': '[submodule "lib"]\n\tpath = lib\n\turl = ../lib\n', '.pre-commit-config.yaml': 'repos: []\n', 'src/main.c': 'int main(void) { return 0; }\n',
  };
  const source = (w: World) => {
    const src = join(w.base, 'src-repo');
    writeTree(src, PROJECT);
    git(w, src, 'init', '-q');
    git(w, src, 'add', '.');
    git(w, src, 'commit', '-qm', 'first');
    return src;
  };

  it('git clone file:// of a repository with .vscode/, .devcontainer/, .claude/, .gitmodules, .pre-commit-config.yaml: every file checked out', async () => {
    const w = world(() => {});
    const src = source(w);
    const r = await srt(['--', 'git', 'clone', '-q', `file://${src}`, 'app'], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('refused');
    for (const [f, text] of Object.entries(PROJECT)) expect(readFileSync(join(w.cwd, 'app', f), 'utf8')).toBe(text);
    expect(git(w, join(w.cwd, 'app'), 'status', '--porcelain')).toBe('');
  });

  it('npm install of a package that ships .vscode/ and .idea/: every file unpacked, no TAR_ENTRY_ERROR', async () => {
    const w = world((x) => {
      writeTree(x.base, {
        'pkg/package.json': JSON.stringify({ name: 'ships-ide', version: '1.0.0' }),
        'pkg/index.js': 'module.exports = 1;\n', 'pkg/.vscode/settings.json': '{}', 'pkg/.idea/misc.xml': '<project/>',
      });
      execFileSync('npm', ['pack', '--silent'], { cwd: join(x.base, 'pkg'), stdio: 'ignore', env: hostEnv(x) });
      writeFileSync(join(x.cwd, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    });
    const r = await srt(['-c', `npm_config_cache="$TMPDIR/npm" npm install --offline --no-audit --no-fund ${w.base}/pkg/ships-ide-1.0.0.tgz`], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr + r.stdout).not.toMatch(/TAR_ENTRY_ERROR|refused/);
    for (const f of ['index.js', '.vscode/settings.json', '.idea/misc.xml']) expect(existsSync(join(w.cwd, 'node_modules/ships-ide', f)), f).toBe(true);
  }, 120_000);

  it('a clone made inside is reviewed: an fsmonitor set in it runs nothing on the host', async () => {
    const make = () => world((w) => { source(w); });
    const plant = (w: World) => `git clone -q file://${w.base}/src-repo app && git -C app config core.fsmonitor "${touch(w)}; false"`;
    const r = await plantedInside(make, plant, hostGit((w) => join(w.cwd, 'app'), 'status'));
    expect(r.stderr).toContain('srt: disabled core.fsmonitor in app/.git, a repository created inside the sandbox');
  });

  it('in directories that existed, protected names stay uncreatable, and the refusal names the rule', async () => {
    const w = world((x) => {
      git(x, x.cwd, 'init', '-q');
      mkdirSync(join(x.cwd, 'sub'));
    });
    const script = 'mkdir -p .vscode sub/.devcontainer; echo x > .vscode/tasks.json; echo x > .git/hooks/pre-commit; echo x > sub/x.code-workspace; ' +
      'mkdir fresh && mv fresh .idea; mkdir made && mkdir made/.vscode && mv made/.vscode .; true';
    const r = await srt(['-c', script], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    for (const p of ['.vscode', 'sub/.devcontainer', '.git/hooks/pre-commit', 'sub/x.code-workspace', '.idea']) expect(existsSync(join(w.cwd, p)), p).toBe(false);
    expect(existsSync(join(w.cwd, 'made/.vscode'))).toBe(true); // in the run's own directory
    // Below the top, the name's rule; at the top (paths srt found at the start) the path's.
    for (const line of [
      'refused writing sub/.devcontainer (protected: .devcontainer in a directory that existed before the run)',
      'refused writing sub/x.code-workspace (protected: *.code-workspace in a directory that existed before the run)',
      'refused writing .vscode (protected', 'refused writing .git/hooks/pre-commit (protected', 'refused writing .idea (protected',
    ]) expect(r.stderr).toContain(line);
  });
});

describe('hole 4: the review of new repositories cannot be dodged', () => {
  // The main repository, with a commit: a gitlink in its index makes host `git status` there
  // look into the new repository, and run its core.fsmonitor.
  const main = () => world((w) => {
    git(w, w.cwd, 'init', '-q');
    git(w, w.cwd, 'commit', '-q', '--allow-empty', '-m', 'i');
  });
  const G = 'git -c user.email=e@x -c user.name=n';
  const fsmonitor = (dir: string) => (w: World) => `${G} -C ${dir} commit -q --allow-empty -m x && git -C ${dir} config core.fsmonitor "${touch(w)}; false"`;
  const status = hostGit((w) => w.cwd, 'status');

  it('renamed after it was made, and added to the main repository as a gitlink', async () => {
    const plant = (w: World) => `git init -q a && ${fsmonitor('a')(w)} && mv a b && git add b`;
    const r = await plantedInside(main, plant, status);
    expect(r.stderr).toContain('srt: disabled core.fsmonitor in b/.git, a repository created inside the sandbox');
  });

  it('made inside the existing .git (git init --separate-git-dir=.git/x sub)', async () => {
    const plant = (w: World) => `git init -q --separate-git-dir=.git/x sub && ${fsmonitor('sub')(w)} && git add sub`;
    const r = await plantedInside(main, plant, status);
    expect(r.stderr).toContain('srt: disabled core.fsmonitor in .git/x, a repository created inside the sandbox');
  });

  it('after more refused writes than the report lists', async () => {
    const plant = (w: World) => `for i in $(seq 1 1100); do : > .git/hooks/h$i; done 2>/dev/null; git init -q a && ${fsmonitor('a')(w)} && mv a b && git add b`;
    const r = await plantedInside(main, plant, status);
    expect(r.stderr).toContain('… and 1090 more refused writes to protected paths');
    expect(r.stderr).toContain('srt: disabled core.fsmonitor in b/.git, a repository created inside the sandbox');
  });
});

describe('hole 5: a planted rebase', () => {
  // `git status` says "use git rebase --continue"; the todo list's exec lines run then.
  const repo = () => world((w) => {
    git(w, w.cwd, 'init', '-q');
    git(w, w.cwd, 'commit', '-q', '--allow-empty', '-m', 'one');
    git(w, w.cwd, 'commit', '-q', '--allow-empty', '-m', 'two');
  });
  const plant = (w: World) => `GIT_SEQUENCE_EDITOR="sed -i 1ibreak" git -c user.email=e@x -c user.name=n rebase -q -i --exec "${touch(w)}" HEAD~1`;
  for (const mode of [{}, NO_SUPERVISOR]) {
    it(`exec lines in .git/rebase-merge/git-rebase-todo are disabled: host git rebase --continue runs nothing${mode === NO_SUPERVISOR ? ' (without the supervisor)' : ''}`, async () => {
      const r = await plantedInside(repo, plant, hostGit((w) => w.cwd, 'rebase', '--continue'), mode);
      expect(r.stderr).toContain('srt: disabled 1 exec line(s) in .git/rebase-merge/git-rebase-todo, an interrupted rebase the run left (git rebase --continue would run them); ' +
        'review, then restore with: mv .git/rebase-merge/git-rebase-todo.srt-disabled .git/rebase-merge/git-rebase-todo');
    });
  }

  it("a rebase the user left, unchanged by the run, keeps its exec lines", async () => {
    const w = repo();
    execFileSync('sh', ['-c', plant(w)], { cwd: w.cwd, stdio: 'ignore', env: { ...hostEnv(w) } });
    const todo = readFileSync(join(w.cwd, '.git/rebase-merge/git-rebase-todo'), 'utf8');
    const r = await srt(['--', 'git', 'status'], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('disabled');
    expect(readFileSync(join(w.cwd, '.git/rebase-merge/git-rebase-todo'), 'utf8')).toBe(todo);
  });
});

describe('hole 6: a crash leaves no core file in a protected directory', () => {
  // The kernel writes a core file into the crashing process's working directory itself, past the
  // supervisor: `cd .git/hooks` then a crash left `core` there (depth 5: no read-only mount).
  it('RLIMIT_CORE is 0 inside, soft and hard', async () => {
    const crash = 'ulimit -c unlimited 2>/dev/null; cd a/b/c/d/e/.git/hooks && sh -c "kill -SEGV \\$\\$"; ulimit -Hc';
    const make = () => world((w) => {
      mkdirSync(join(w.cwd, 'a/b/c/d/e'), { recursive: true });
      git(w, join(w.cwd, 'a/b/c/d/e'), 'init', '-q');
    });
    const inside = make();
    const r = await srt(['-c', crash], { home: inside.home, cwd: inside.cwd });
    expect(r.stdout, r.stderr).toBe('0');
    expect(readdirSync(join(inside.cwd, 'a/b/c/d/e/.git/hooks')).filter((n) => n.startsWith('core'))).toEqual([]);
    // The control, where the host writes core files to the working directory at all.
    const pattern = readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
    if (pattern.startsWith('|') || pattern.includes('/')) return;
    const outside = make();
    const host = spawnSync('sh', ['-c', crash], { cwd: outside.cwd, encoding: 'utf8', env: hostEnv(outside) });
    if (host.stdout.trim() !== 'unlimited') return; // this host's own hard limit forbids core files
    expect(readdirSync(join(outside.cwd, 'a/b/c/d/e/.git/hooks')).filter((n) => n.startsWith('core')).length).toBe(1);
  });
});

describe('hole 7: what npx runs from its cache', () => {
  // The old README recipe, allowWrite ~/.npm: the sandbox rewrote ~/.npm/_npx/*, which the next
  // host `npx -y server` (every MCP host does this) ran without installing anything.
  const npxWorld = (cacheEnv: boolean) => () => world((w) => {
    writeTree(w.base, {
      'pkg/package.json': JSON.stringify({ name: 'hello-srt', version: '1.0.0', bin: { 'hello-srt': 'bin.js' } }),
      'pkg/bin.js': '#!/usr/bin/env node\nconsole.log("hello")\n',
    });
    chmodSync(join(w.base, 'pkg/bin.js'), 0o755);
    execFileSync('npm', ['pack', '--silent'], { cwd: join(w.base, 'pkg'), stdio: 'ignore', env: hostEnv(w) });
    if (cacheEnv) w.env.npm_config_cache = join(w.base, 'npm-cache');
    npx(w); // installed once on the host, as an MCP host's first start does
  });
  const npx = (w: World) => {
    spawnSync('npx', ['-y', '--package', join(w.base, 'pkg/hello-srt-1.0.0.tgz'), '--', 'hello-srt'], { cwd: w.cwd, stdio: 'ignore', env: hostEnv(w) });
  };
  const plant = (cache: string) => (w: World) =>
    `for f in ${cache}/_npx/*/node_modules/hello-srt/bin.js; do printf '#!/usr/bin/env node\\nrequire("fs").writeFileSync("${w.marker}", "")\\n' > "$f"; done`;

  it('allowWrite ~/.npm: the next host npx runs nothing planted in ~/.npm/_npx', async () => {
    const r = await plantedInside(npxWorld(false), plant('~/.npm'), npx, { args: (w) => ['--allow-write', join(w.home, '.npm')] });
    expect(r.stderr).toMatch(/refused writing \S+\/\.npm\/_npx\/\w+\/node_modules\/hello-srt\/bin\.js \(protected/);
  }, 180_000);

  it('npm_config_cache elsewhere, in a writable root: its _npx/ is protected the same', async () => {
    await plantedInside(npxWorld(true), (w) => plant(join(w.base, 'npm-cache'))(w), npx, { args: (w) => ['--allow-write', join(w.base, 'npm-cache')] });
  }, 180_000);
});

describe('srt doctor and --dry-run say what is protected by landing', () => {
  it('link targets, include targets, home configuration linked in, bare repositories', async () => {
    const w = world((x) => {
      git(x, x.cwd, 'init', '-q');
      git(x, x.cwd, 'config', 'include.path', '../tools/gitconfig');
      writeTree(x.cwd, { 'scripts/pre-commit': '#!/bin/sh\n', bashrc: '' });
      symlinkSync('../../scripts/pre-commit', join(x.cwd, '.git/hooks/pre-commit'));
      symlinkSync(join(x.cwd, 'bashrc'), join(x.home, '.bashrc'));
      mkdirSync(join(x.cwd, 'remote.git'));
      git(x, join(x.cwd, 'remote.git'), 'init', '-q', '--bare');
    });
    const expected = [
      `${w.cwd}/scripts/pre-commit (the target of ${w.cwd}/.git/hooks/pre-commit)`,
      `${w.cwd}/tools/gitconfig (include.path of ${w.cwd}/.git/config)`,
      `${w.cwd}/bashrc (~/.bashrc leads there)`,
      `${w.cwd}/remote.git/{config,config.worktree,commondir,hooks,worktrees} (in the bare repository ${w.cwd}/remote.git)`,
    ];
    const dry = await srt(['--dry-run', '--', 'true'], { home: w.home, cwd: w.cwd });
    expect(dry.exitCode, dry.stderr).toBe(0);
    const section = /# protected for what they are or where they land[^\n]*\n((?:.+(?:\n|$))+)/.exec(dry.stdout)?.[1]?.trim().split('\n');
    expect(section?.sort(), dry.stdout).toEqual([...expected].sort());
    const doc = await srt(['doctor', '--json'], { home: w.home, cwd: w.cwd, timeout: 240_000 });
    const check = (JSON.parse(doc.stdout) as { checks: { id: string; status: string; detail: string; items?: string[]; more?: number }[] }).checks.find((c) => c.id === 'protected.landing');
    expect(check?.status).toBe('ok');
    expect(check?.detail).toMatch(/^4 place\(s\) in writable paths kept read-only/);
    expect(check?.items).toHaveLength(3);
    for (const item of check!.items!) expect(expected).toContain(item);
    expect(check?.more).toBe(1);
  });
});
