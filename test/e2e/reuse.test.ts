// One library sandbox running many commands reuses its tree search (the protected-path search
// and the globs' walk) only while nothing in the searched trees changed (platform/tree-watch.ts).
// Each test makes something appear between two commands of one sandbox — made by the command
// before, by a host program, by a directory moved into the tree — and checks from outside that
// it is still protected in the next command, with a control that is not; and that the search
// really is reused when nothing changed (SpawnPlan.treeSearch, docs/library.md "Many commands").
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { keyValues, NO_SUPERVISOR, REPO, srt, srtArgv, tempDir, type SrtMode } from './helpers.js';

const dirs: { cleanup: () => void }[] = [];
afterAll(() => { for (const d of dirs) d.cleanup(); });

const DRIVER = join(REPO, 'test', 'e2e', 'fixtures', 'library-steps.cjs');

interface World { base: string; home: string; cwd: string; settings: string }

function world(settings: object = {}): World {
  const d = tempDir('srt-reuse-');
  dirs.push(d);
  const w = { base: d.path, home: join(d.path, 'home'), cwd: join(d.path, 'proj'), settings: join(d.path, 'settings.json') };
  mkdirSync(w.home);
  mkdirSync(w.cwd);
  writeFileSync(w.settings, JSON.stringify(settings));
  return w;
}

type Step = { run: string } | { host: string; busyMs?: number } | { policy: string };
interface TreeSearch { searches: number; reused: boolean; watched: number; stale?: string; landingsKept: number; listingsKept: number; planKept: boolean }

/** The fixture running `steps` in one sandbox of the library (it exits with the status it ends with). */
function driver(w: World, steps: Step[], mode: SrtMode = {}, path = process.env.PATH) {
  const spec = JSON.stringify({ cwd: w.cwd, home: w.home, settings: w.settings, steps });
  return execa(process.execPath, srtArgv([join(REPO, 'dist', 'index.js'), spec], mode, DRIVER), {
    cwd: w.cwd, reject: false, stdin: 'ignore', timeout: 120_000, extendEnv: false,
    env: { PATH: path, HOME: w.home, LANG: 'C.UTF-8' },
  });
}

interface StepResult { status: number; search: TreeSearch; runDir: string; violations: string[] }

/** Run `steps` in one sandbox of the library: each run's status, tree search, run directory, violations. */
async function inOneSandbox(w: World, steps: Step[], mode: SrtMode = {}, path?: string) {
  const r = await driver(w, steps, mode, path);
  expect(r.exitCode, r.stderr).toBe(0);
  const at = r.stdout.lastIndexOf('\n@@');
  const out = JSON.parse(r.stdout.slice(at + 3)) as { steps: StepResult[]; messages: string[] };
  return { ...out, values: keyValues(r.stdout.slice(0, at)), stderr: r.stderr };
}

const runDirs = (w: World) => (existsSync(join(w.home, '.srt', 'run')) ? readdirSync(join(w.home, '.srt', 'run')) : []);

const read = (p: string) => readFileSync(p, 'utf8').trim();

describe('a sandbox running many commands', () => {
  it('reuses its tree search while nothing changed, and searches again after any change', async () => {
    const w = world();
    mkdirSync(join(w.cwd, 'src', 'deep'), { recursive: true });
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' }, { run: 'cat /dev/null' },
      { host: 'touch src/deep/new-file' },
      { run: 'true' }, { run: 'true' },
      { run: 'mkdir made' }, { run: 'true' },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    // No second rg/find or glob walk while nothing changed: the count of searches stays.
    expect(r.steps.map((s) => s.search.searches)).toEqual([1, 1, 1, 2, 2, 2, 3]);
    expect(r.steps.map((s) => s.search.reused)).toEqual([false, true, true, false, true, true, false]);
    expect(r.steps[3]!.search.stale).toBe('a watched directory changed');
    expect(r.steps[0]!.search.watched).toBeGreaterThanOrEqual(3);
  });

  it('a file matching a denyWrite glob stays read-only in the next command: made by the command before, by a host program, moved into the tree', async () => {
    const w = world();
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyWrite: [join(w.cwd, '**/guarded.txt')] } }));
    const both = (dir: string) => `echo orig > ${dir}/guarded.txt && echo orig > ${dir}/free.txt`;
    const attack = (dir: string) => `echo pwned > ${dir}/guarded.txt 2>/dev/null; echo changed > ${dir}/free.txt`;
    const outside = join(w.base, 'outside');
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' },
      { run: `mkdir -p made/deep && ${both('made/deep')}` },
      // After each attack (its write to the control is a change) the search is reused again
      // before the next change.
      { run: attack('made/deep') }, { run: 'true' }, { run: 'true' },
      { host: `mkdir -p host/deep && ${both('host/deep')}` },
      { run: attack('host/deep') }, { run: 'true' }, { run: 'true' },
      { host: `mkdir -p ${outside}/deep && ${both(`${outside}/deep`)} && mv ${outside} moved` },
      { run: attack('moved/deep') },
    ]);
    for (const dir of ['made/deep', 'host/deep', 'moved/deep']) {
      expect(read(join(w.cwd, dir, 'guarded.txt')), dir).toBe('orig');
      // The control: its sibling, which no rule names, was changed by the same command.
      expect(read(join(w.cwd, dir, 'free.txt')), dir).toBe('changed');
    }
    // Each change came after a reused search, and made the next command search again.
    expect(r.steps.map((s) => s.search.reused)).toEqual([false, true, true, false, false, true, false, false, true, false]);
  });

  for (const mode of [{}, NO_SUPERVISOR]) {
    it(`a file matching a denyRead glob stays unreadable in the next command: made before, by a host program, moved in${mode === NO_SUPERVISOR ? ' (without the supervisor: placeholders)' : ''}`, async () => {
      const w = world();
      writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: [join(w.cwd, '**/.env')] } }));
      const outside = join(w.base, 'outside');
      const look = (name: string, dir: string) => `echo ${name}=$(cat ${dir}/.env 2>/dev/null || echo denied)/$(cat ${dir}/plain)`;
      const r = await inOneSandbox(w, [
        { run: 'true' }, { run: 'true' },
        // (With the supervisor a denied name cannot even be created: `;`, so the control is made.)
        { run: 'mkdir -p made/deep; echo SECRET-MADE > made/deep/.env; echo visible > made/deep/plain' },
        { run: look('made', 'made/deep') }, { run: 'true' },
        { host: 'mkdir -p host/deep && echo SECRET-HOST > host/deep/.env && echo visible > host/deep/plain' },
        { run: look('host', 'host/deep') }, { run: 'true' },
        { host: `mkdir -p ${outside}/deep && echo SECRET-MOVED > ${outside}/deep/.env && echo visible > ${outside}/deep/plain && mv ${outside} moved` },
        { run: look('moved', 'moved/deep') },
      ], mode);
      // The denied content is not readable inside; its sibling (the control) is.
      expect(r.values).toMatchObject({ made: 'denied/visible', host: 'denied/visible', moved: 'denied/visible' });
      // Every run removed its own placeholders and state, the later ones too.
      expect(readdirSync(w.cwd).sort()).toEqual(['host', 'made', 'moved']);
      expect(existsSync(join(w.home, '.srt', 'state')) ? readdirSync(join(w.home, '.srt', 'state')) : []).toEqual([]);
      expect(runDirs(w)).toEqual([]);
    });
  }

  it('a repository with core.hooksPath that appears between commands keeps its hooks protected: by a host program, moved into the tree', async () => {
    const w = world();
    const marker = (n: string) => join(w.base, `PWNED-${n}`);
    const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      env: { PATH: process.env.PATH, HOME: w.home }, stdio: 'ignore',
    });
    const repo = (dir: string) => `git init -q ${dir} && git -C ${dir} config core.hooksPath myhooks && mkdir ${dir}/myhooks`;
    const plant = (dir: string, n: string) => `printf '#!/bin/sh\\ntouch ${marker(n)}\\n' > ${dir}/myhooks/pre-commit 2>/dev/null; chmod +x ${dir}/myhooks/pre-commit 2>/dev/null; true`;
    const outside = join(w.base, 'outside');
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' },
      { host: repo('host-repo') },
      { run: plant('host-repo', 'host') }, { run: 'true' },
      { host: `${repo(outside)} && mv ${outside} moved-repo` },
      { run: plant('moved-repo', 'moved') },
    ]);
    for (const [dir, n] of [['host-repo', 'host'], ['moved-repo', 'moved']] as const) {
      git(join(w.cwd, dir), 'commit', '-q', '--allow-empty', '-m', 'x');
      expect(existsSync(marker(n)), dir).toBe(false);
    }
    // Each repository appeared after a reused search, and made the next command search again.
    expect(r.steps.map((s) => s.search.reused)).toEqual([false, true, false, true, false]);
    // The control: the same hook planted outside srt runs on the same commit.
    const control = join(w.base, 'control');
    execFileSync('sh', ['-c', `${repo(control)} && ${plant(control, 'control')}`], { env: { PATH: process.env.PATH, HOME: w.home } });
    git(control, 'commit', '-q', '--allow-empty', '-m', 'x');
    expect(existsSync(marker('control'))).toBe(true);
  });
  it('keeps where its paths land while nothing on their way changed; a symlink on the way re-pointed, a denied file renamed into place, a denied file made a directory, a directory replaced: each still denied in the next command', async () => {
    const w = world();
    const out = join(w.base, 'out');
    for (const d of ['a', 'b', 'dir']) mkdirSync(join(out, d), { recursive: true });
    writeFileSync(join(out, 'a', 'secret'), 'A-SECRET');
    writeFileSync(join(out, 'b', 'secret'), 'B-SECRET');
    writeFileSync(join(out, 'kind'), 'K-FILE');
    writeFileSync(join(out, 'dir', 'secret'), 'D-OLD');
    symlinkSync('a', join(out, 'link'));
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: ['link/secret', 'new/secret', 'kind', 'dir/secret'].map((p) => join(out, p)) } }));
    const look = (key: string, path: string) => `echo ${key}=$(cat ${join(out, path)} 2>/dev/null || echo denied)`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: `${look('a1', 'a/secret')}; ${look('b1', 'b/secret')}` },
      { host: `ln -sfn b ${out}/link` },
      { run: `${look('a2', 'a/secret')}; ${look('b2', 'b/secret')}` },
      { host: `mkdir ${out}/new && echo N-SECRET > ${out}/new/.part && mv ${out}/new/.part ${out}/new/secret` },
      { run: look('n', 'new/secret') },
      { host: `rm ${out}/kind && mkdir ${out}/kind && echo K-DIR > ${out}/kind/inner` },
      { run: look('k', 'kind/inner') },
      { host: `mv ${out}/dir ${out}/dir-old && mkdir ${out}/dir && echo D-NEW > ${out}/dir/secret` },
      { run: `${look('d', 'dir/secret')}; ${look('dold', 'dir-old/secret')}` }, { run: 'true' }, { run: 'true' }, { run: 'true' },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0]);
    // The deny follows the link to where it leads now; what it led to before is readable again.
    expect(r.values).toMatchObject({ a1: 'denied', b1: 'B-SECRET', a2: 'A-SECRET', b2: 'denied', n: 'denied', k: 'denied', d: 'denied', dold: 'D-OLD' });
    // Resolved again after each change; kept while nothing changed (the way to this test's
    // directory passes /tmp, where other tests make and remove files, so not for every command).
    expect(r.steps.slice(2, 6).map((s) => s.search.landingsKept)).toEqual([0, 0, 0, 0]);
    expect(Math.max(...[1, 6, 7, 8].map((i) => r.steps[i]!.search.landingsKept))).toBeGreaterThan(4);
    // The mounts are planned again after each change (the facts differ), and kept from the
    // command before while the facts are the same.
    expect(r.steps.map((s) => s.search.planKept)).toEqual([false, true, false, false, false, false, true, true, true]);
  });

  it("keeps a snapshot's listing while its directory is unchanged; a name a host program adds, renames or renames over the denied file is seen (or denied) in the next command", async () => {
    const w = world();
    const out = join(w.base, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'secret'), 'S-OLD');
    writeFileSync(join(out, 'plain'), 'P');
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: [join(out, 'secret')] } }));
    const look = (key: string, name: string) => `echo ${key}=$(cat ${join(out, name)} 2>/dev/null || echo none)`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' }, { run: `${look('p', 'plain')}; ${look('s1', 'secret')}` },
      { host: `echo ADDED > ${out}/added` },
      { run: look('a', 'added') },
      { host: `mv ${out}/added ${out}/moved` },
      { run: `${look('a2', 'added')}; ${look('m', 'moved')}` },
      { host: `echo S-NEW > ${out}/.t && mv ${out}/.t ${out}/secret` },
      { run: look('s2', 'secret') }, { run: 'true' }, { run: 'true' }, { run: 'true' },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(r.values).toMatchObject({ p: 'P', s1: 'none', a: 'ADDED', a2: 'none', m: 'ADDED', s2: 'none' });
    // Listed again after each change; kept while nothing changed (the way to this test's
    // directory passes /tmp, where other tests make files, so not for every command).
    expect([3, 4, 5].map((i) => r.steps[i]!.search.listingsKept)).toEqual([0, 0, 0]);
    expect(Math.max(...[1, 2, 6, 7, 8].map((i) => r.steps[i]!.search.listingsKept))).toBeGreaterThan(0);
  });

  it("judges again whether a denied file's name can be replaced outside when its directory's mode changes between commands (a sticky directory made plain): from then on the directory is held", async () => {
    const w = world();
    const out = join(w.base, 'out');
    mkdirSync(out);
    chmodSync(out, 0o1777);
    writeFileSync(join(out, 'secret'), 'S');
    writeFileSync(join(out, 'plain'), 'P');
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: [join(out, 'secret')] } }));
    // A tmpfs at the directory itself: the snapshot holding its names (bwrap-ops.ts).
    const held = (key: string) => `echo ${key}=$(awk -v p=${out} '$5 == p && / - tmpfs /' /proc/self/mountinfo | wc -l); echo p${key}=$(cat ${join(out, 'plain')})`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' }, { run: held('h1') },
      { host: `chmod 0777 ${out}` },
      { run: held('h2') }, { run: 'true' }, { run: held('h3') },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(r.values).toMatchObject({ h1: '0', ph1: 'P', ph2: 'P', ph3: 'P' });
    expect(Number(r.values.h2)).toBeGreaterThan(0);
    expect(Number(r.values.h3)).toBeGreaterThan(0);
  });

  it('keeps that a directory is too large to list while it is unchanged; once a host program removes enough names it is listed and held in the next command', async () => {
    const w = world();
    const big = join(w.base, 'big');
    mkdirSync(big);
    for (let i = 0; i < 1001; i++) writeFileSync(join(big, `f${i}`), '');
    writeFileSync(join(big, 'secret'), 'S');
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: [join(big, 'secret')] } }));
    const look = (key: string) => `echo ${key}=$(awk -v p=${big} '$5 == p && / - tmpfs /' /proc/self/mountinfo | wc -l); echo s${key}=$(cat ${join(big, 'secret')} 2>/dev/null || echo none)`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' }, { run: look('t1') },
      { host: `cd ${big} && rm f1*` },
      { run: look('t2') }, { run: 'true' }, { run: look('t3') },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0]);
    // Too large: the read gate holds the deny (no snapshot); then a snapshot.
    expect(r.values).toMatchObject({ t1: '0', st1: 'none', st2: 'none', st3: 'none' });
    expect(Number(r.values.t2)).toBeGreaterThan(0);
    expect(Number(r.values.t3)).toBeGreaterThan(0);
    expect(r.steps[3]!.search.listingsKept).toBe(0);
  });

  it("follows its policy changed in place between commands (sandbox.policy, at any depth): a file moved from allowRead to denyRead is denied, unix sockets taken back are refused; the plan is kept only while the policy's value stays", async () => {
    const w = world();
    const secret = join(w.base, 'out', 'secret');
    mkdirSync(join(w.base, 'out'));
    writeFileSync(secret, 'THE-SECRET');
    writeFileSync(w.settings, JSON.stringify({ filesystem: { allowRead: [secret] }, network: { allowAllUnixSockets: true } }));
    const look = (key: string) => `echo ${key}=$(cat ${secret} 2>/dev/null || echo denied)`;
    const unix = (key: string) => `echo ${key}=$(python3 -c 'import socket; socket.socket(socket.AF_UNIX); print("made")' 2>/dev/null || echo refused)`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: `${look('r1')}; ${unix('u1')}` },
      { policy: 'policy.filesystem.denyRead.push(policy.filesystem.allowRead.pop())' },
      { run: look('r2') }, { run: 'true' },
      { policy: 'policy.network.allowAllUnixSockets = false' },
      { run: unix('u2') }, { run: 'true' },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(r.values).toMatchObject({ r1: 'THE-SECRET', u1: 'made', r2: 'denied', u2: 'refused' });
    // Planned again after each change in place, kept while the policy and facts are the same.
    expect(r.steps.map((s) => s.search.planKept)).toEqual([false, true, false, true, false, true]);
  });

  it('a change lost in an overflow of the inotify queue (a host program floods a searched directory while the caller is busy) leaves no landing kept', async () => {
    const w = world();
    const out = join(w.base, 'out');
    for (const d of [join(out, 'a'), join(out, 'b'), join(w.cwd, 'sub')]) mkdirSync(d, { recursive: true });
    writeFileSync(join(out, 'a', 'secret'), 'A-SECRET');
    writeFileSync(join(out, 'b', 'secret'), 'B-SECRET');
    symlinkSync('a', join(out, 'link'));
    writeFileSync(w.settings, JSON.stringify({ filesystem: { denyRead: [join(out, 'link', 'secret')] } }));
    const flood = `cd sub && : > x && : > y && python3 -c "import os\nfor i in range(20000): os.utime('x'); os.utime('y')"`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' },
      { host: `sleep 0.2 && ${flood} && ln -sfn b ${out}/link`, busyMs: 3000 },
      { run: `echo b=$(cat ${out}/b/secret 2>/dev/null || echo denied)` },
    ]);
    expect(r.values).toMatchObject({ b: 'denied' });
  });

  it("warns in the next command when a directory on PATH holding srt's link is re-pointed into the project (where srt's own files land is kept with the landings)", async () => {
    const w = world();
    const launcher = join(REPO, 'bin', 'srt');
    mkdirSync(join(w.base, 'bin-out'));
    symlinkSync(launcher, join(w.base, 'bin-out', 'srt'));
    symlinkSync(join(w.base, 'bin-out'), join(w.base, 'on-path'));
    const warning = `srt is installed inside a path this sandbox may write (${join(w.base, 'on-path', 'srt')})`;
    const r = await inOneSandbox(w, [
      { run: 'true' }, { run: 'true' }, { run: 'true' }, { run: 'true' }, { run: 'true' }, { run: 'true' },
      { host: `mkdir bin-in && ln -s ${launcher} bin-in/srt && ln -sfn ${join(w.cwd, 'bin-in')} ${join(w.base, 'on-path')}` },
      { run: 'true' },
      { host: `mkdir ${w.base}/bin-new && ln -s ${launcher} ${w.base}/bin-new/srt && ln -s ${w.base}/bin-new ${w.base}/.on-path && mv -T ${w.base}/.on-path ${w.base}/on-path` },
      { run: 'true' }, { run: 'true' },
    ], {}, `${join(w.base, 'on-path')}:${process.env.PATH}`);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0]);
    // Only the command after the re-pointing warns: those before, and those after the link was
    // renamed back out of the project, do not.
    expect(r.messages.filter((m) => m.includes(warning))).toHaveLength(1);
    // Kept for some command before the re-pointing (the way to this test's directory passes /tmp,
    // where other tests make and remove files, so not for every command).
    expect(Math.max(...r.steps.slice(1, 6).map((s) => s.search.landingsKept)), JSON.stringify(r.steps.map((s) => s.search.stale))).toBeGreaterThan(0);
  });

  it('keeps one run directory and one proxy for all its commands: each command has its own TMPDIR and refusals; nothing is left after dispose', async () => {
    const w = world();
    const fetch = (name: string) => `curl -s -o /dev/null -w '${name}=%{http_code}\\n' http://blocked.example/`;
    const r = await inOneSandbox(w, [
      { run: `echo left > "$TMPDIR/file" && mkdir "$TMPDIR/dir" && ${fetch('first')}` },
      { run: `echo tmp=$(ls -A "$TMPDIR" | wc -l) && ${fetch('second')}` },
      { run: 'true' },
    ]);
    expect(r.steps.map((s) => s.status)).toEqual([0, 0, 0]);
    // The proxy of the first command refused the second's request too, and each command's
    // report holds only its own refusals; its TMPDIR starts empty.
    expect(r.values).toMatchObject({ first: '403', second: '403', tmp: '0' });
    expect(r.steps.map((s) => s.violations.filter((v) => v.includes('blocked.example')).length)).toEqual([1, 1, 0]);
    expect(new Set(r.steps.map((s) => s.runDir)).size).toBe(1);
    expect(runDirs(w)).toEqual([]);
  });

  it('a sandbox killed between commands leaves its run directory to the next run, which removes it', async () => {
    const w = world();
    const r = await driver(w, [{ run: 'true' }, { host: 'kill -KILL $PPID' }, { run: 'true' }]);
    expect(r.signal).toBe('SIGKILL');
    expect(runDirs(w).length).toBeGreaterThan(0);
    const after = await srt(['--', 'true'], { cwd: w.cwd, home: w.home });
    expect(after.exitCode, after.stderr).toBe(0);
    expect(runDirs(w)).toEqual([]);
  });
});
