// Run lifecycle end to end: exit status, stdio, TTY, signals, cleanup, placeholders' state file,
// and srt's own failures (exit 125, nothing ran).
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { NO_SUPERVISOR, processesWith, REPO, scratchDirs, srt, SRT_BIN, startBackground, stopStragglers, tempDir, type DryRunPlan } from './helpers.js';

const tmp = tempDir('srt-sbx-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const scratch = scratchDirs(() => tmp.path);



describe('exit status and stdio', () => {
  it('passes the command status through: 0, 7, 143 (signal), 126, 127', async () => {
    const { home, cwd } = scratch();
    writeFileSync(join(cwd, 'notexec'), 'echo hi\n');
    const codes = await Promise.all([
      srt(['--', 'true'], { home, cwd }),
      srt(['--', 'sh', '-c', 'exit 7'], { home, cwd }),
      srt(['--', 'sh', '-c', 'kill -TERM $$'], { home, cwd }),
      srt(['--', './notexec'], { home, cwd }),
      srt(['--', 'no-such-command-srt'], { home, cwd }),
    ]);
    expect(codes.map((r) => r.exitCode)).toEqual([0, 7, 143, 126, 127]);
    expect(codes[4]!.stderr).toMatch(/srt: no-such-command-srt: command not found/);
    // Five concurrent runs in one directory leave none of their placeholders behind.
    expect(readdirSync(cwd)).toEqual(['notexec']);
  });

  it('TMPDIR is writable on every run, also once ~/.srt exists (it lives beneath it)', async () => {
    const { home, cwd } = scratch();
    for (let i = 0; i < 2; i++) {
      const r = await srt(['-c', 'echo x > "$TMPDIR/f" && cat "$TMPDIR/f" && ! touch ~/.srt/not-allowed 2>/dev/null && echo ok'], { home, cwd });
      expect(r.stdout, `run ${i}: ${r.stderr}`).toBe('x\nok');
    }
  });

  it('srt installed inside a denyRead region (e.g. under ~ with denyRead ~/) still runs, and node inside still works', async () => {
    const { home, cwd } = scratch();
    // A minimal install of this build under the denied home.
    const install = join(home, 'lib', 'srt');
    for (const part of ['bin', 'dist', 'package.json', join('init', 'build'), join('node_modules', 'undici')]) {
      cpSync(join(REPO, part), join(install, part), { recursive: true });
    }
    const r = await execa(process.execPath, [join(install, 'bin', 'srt'), '--deny-read', home, '-c', 'node -e "console.log(1 + 1)"; ls ~/lib/srt | tr "\\n" " "'], {
      cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, stdin: 'ignore',
    });
    expect(r.exitCode, r.stderr).toBe(0);
    // Only srt's own runtime files are re-opened, nothing else of the install.
    expect(r.stdout).toBe('2\ndist init node_modules ');
    expect(r.stderr).not.toContain('srt is installed inside');
    // Run from a directory that contains the install: srt keeps its files read-only, and says so.
    const inside = await execa(process.execPath, [join(install, 'bin', 'srt'), '--', 'true'], {
      cwd: home, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, stdin: 'ignore',
    });
    expect(inside.exitCode, inside.stderr).toBe(0);
    expect(inside.stderr).toContain(`srt: warning: srt is installed inside a path this sandbox may write (${join(install, 'package.json')}, ${join(install, 'bin')}, ${join(install, 'dist')} and `);
    expect(inside.stderr).toContain('srt keeps them read-only inside the sandbox');
  });

  it('stdin round trip and 50 MB of stdout arrive intact', async () => {
    const { home, cwd } = scratch();
    const echo = await srt(['--', 'cat'], { home, cwd, stdin: 'pipe', input: 'hello through the sandbox\n' });
    expect(echo.stdout).toBe('hello through the sandbox');
    const size = 50 * 1024 * 1024;
    const big = await execa(process.execPath, [SRT_BIN, '--', 'sh', '-c', `yes 0123456789abcdef | head -c ${size}`], {
      cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, encoding: 'buffer', maxBuffer: size * 2, reject: false,
    });
    const expected = createHash('sha256').update(Buffer.alloc(size, '0123456789abcdef\n')).digest('hex');
    expect(big.exitCode).toBe(0);
    expect(createHash('sha256').update(big.stdout as Uint8Array).digest('hex')).toBe(expected);
  });

  it('a TTY stays a TTY', async () => {
    const { home, cwd } = scratch();
    const inner = `${process.execPath} ${SRT_BIN} -- sh -c 'test -t 0 && test -t 1 && test -t 2 && echo IS-A-TTY'`;
    const r = await execa('script', ['-qec', inner, '/dev/null'], { cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, stdin: 'ignore', timeout: 30_000 });
    expect(r.stdout).toContain('IS-A-TTY');
  });
});

describe('file descriptors', () => {
  it('no descriptor srt inherited beyond stdio reaches the command', async () => {
    const { home, cwd } = scratch();
    // fd 5 of srt is a pipe whose reading end the test holds: a leak would carry data out.
    const child = execa(process.execPath, [SRT_BIN, '-c', 'ls /proc/self/fd | tr "\\n" " "; echo leaked >&5 && echo WROTE'], {
      cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false,
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    let leaked = '';
    (child.stdio as unknown as import('node:stream').Readable[])[5]!.on('data', (d: Buffer) => { leaked += d.toString(); });
    const r = await child;
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe('0 1 2 3 '); // 3 is ls's own handle on /proc/self/fd
    expect(r.stdout).not.toContain('WROTE');
    expect(leaked).toBe('');
  });
});

describe('signals and cleanup', () => {
  it('SIGINT to srt ends the command, removes the run dir and leaves no process', async () => {
    const { home, cwd } = scratch();
    // A unique sleep duration marks the command's processes (the shell and its child).
    const marker = `9${process.pid}${Date.now() % 100000}`;
    const { child, firstLine, exit } = await startBackground(['--', 'sh', '-c', `echo $TMPDIR; echo ready; sleep ${marker}; echo ${marker}`], home, cwd);
    expect(firstLine).toMatch(/\/\.srt\/run\/\d+-[^/]+\/tmp$/);
    // Like a person's Ctrl-C, only once `sleep` runs: a SIGINT that lands while sh is between fork
    // and exec is swallowed by sh's own handler in the child (true of any terminal too).
    for (const end = Date.now() + 20_000; Date.now() < end && !processesWith(marker).some((p) => p.includes(`sleep\0${marker}`));) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(processesWith(marker).some((p) => p.includes(`sleep\0${marker}`))).toBe(true);
    child.kill('SIGINT');
    const code = await Promise.race([exit, new Promise((r) => setTimeout(() => r('timeout'), 20_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code).toBe(130);
    expect(existsSync(firstLine.replace(/\/tmp$/, ''))).toBe(false);
    expect(processesWith(marker)).toEqual([]);
   }, 240_000);

  // Placeholders exist only without the seccomp supervisor (old kernels): forced here.
  it('without the supervisor: a run killed with SIGKILL leaves its state file; a later run keeps a live run\'s placeholders and reaps a dead one\'s', async () => {
    const { home, cwd } = scratch();
    // Run A (live) holds placeholders for the missing protected names in cwd.
    const a = await startBackground(['--', 'sh', '-c', 'echo $TMPDIR; echo ready; exec sleep 1000'], home, cwd, NO_SUPERVISOR);
    // SIGKILL leaves A's run dir behind by nature (in this test's home, removed with it).
    const stateA = join(home, '.srt/state', `${a.child.pid}.json`);
    expect(existsSync(stateA)).toBe(true);
    expect(existsSync(join(cwd, '.bashrc'))).toBe(true);
    // Run B finishes normally while A lives: A's placeholders stay.
    expect((await srt(['--', 'true'], { home, cwd, ...NO_SUPERVISOR })).exitCode).toBe(0);
    expect(existsSync(join(cwd, '.bashrc'))).toBe(true);
    expect(existsSync(join(cwd, '.vscode'))).toBe(true);
    // Kill A with SIGKILL: its state file, placeholders and run dir remain (stale).
    a.child.kill('SIGKILL');
    await a.exit;
    expect(existsSync(stateA)).toBe(true);
    expect(existsSync(join(cwd, '.bashrc'))).toBe(true);
    expect(existsSync(dirname(a.firstLine))).toBe(true);
    // Run C reaps the dead run's leftovers, is itself protected all the same, and cleans up after itself.
    const c = await srt(['--', 'sh', '-c', 'echo evil > .bashrc'], { home, cwd, ...NO_SUPERVISOR });
    expect(c.exitCode).not.toBe(0);
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(join(home, '.srt/state'))).toEqual([]);
    expect(existsSync(dirname(a.firstLine))).toBe(false);
  });
});

describe('srt failures stop the run (125, nothing ran)', () => {
  it('bad settings', async () => {
    const { home, cwd } = scratch();
    writeFileSync(join(cwd, 'bad.json'), '{ "filesystem": { "allowWrite": 5 } }');
    const r = await srt(['--settings', 'bad.json', '--', 'touch', join(cwd, 'marker')], { home, cwd });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: /m);
    expect(existsSync(join(cwd, 'marker'))).toBe(false);
  });

  it('bubblewrap missing or unable to start; a bwrap or rg earlier on PATH is never used', async () => {
    const { home, cwd, base } = scratch();
    // srt takes bwrap only from system directories, so the test hides the real one by running
    // srt inside an outer bubblewrap that covers /usr/bin/bwrap.
    const hidden = (cover: string, args: string[]) => execa('bwrap', ['--dev-bind', '/', '/', '--ro-bind', cover, '/usr/bin/bwrap',
      '--', process.execPath, SRT_BIN, ...args], { cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, stdin: 'ignore' });
    const missing = await hidden('/dev/null', ['--', 'touch', join(cwd, 'marker')]);
    expect(missing.exitCode).toBe(125);
    expect(missing.stderr).toMatch(/srt: bubblewrap \(bwrap\) is not installed/);
    // A bwrap that cannot create namespaces.
    const fake = join(base, 'fake-bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const broken = await hidden(fake, ['--', 'touch', join(cwd, 'marker')]);
    expect(broken.exitCode).toBe(125);
    expect(broken.stderr).toMatch(/srt: .*uid map: Permission denied.*the command did not run/);
    expect(existsSync(join(cwd, 'marker'))).toBe(false);
    // Tools planted first on PATH (as `npm run` puts node_modules/.bin first) are ignored.
    const bin = join(base, 'bin');
    mkdirSync(bin);
    for (const tool of ['bwrap', 'rg']) {
      writeFileSync(join(bin, tool), `#!/bin/sh\ntouch ${join(base, `planted-${tool}-ran`)}\nexit 1\n`);
      chmodSync(join(bin, tool), 0o755);
    }
    const planted = await srt(['--', 'true'], { home, cwd, env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(planted.exitCode).toBe(0);
    expect(existsSync(join(base, 'planted-bwrap-ran'))).toBe(false);
    expect(existsSync(join(base, 'planted-rg-ran'))).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('--dry-run prints the plan and runs nothing', async () => {
    const { home, cwd } = scratch();
    const command = ['touch', join(cwd, 'marker')];
    const text = await srt(['--dry-run', '--', ...command], { home, cwd });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^# bubblewrap command\n/);
    const json = await srt(['--dry-run', '--json', '--', ...command], { home, cwd });
    expect(json.exitCode, json.stderr).toBe(0);
    const plan = JSON.parse(json.stdout) as DryRunPlan;
    expect(plan.command).toEqual(command);
    expect(plan.argv.slice(-command.length)).toEqual(command);
    expect(plan.argv).toContain('--unshare-net');
    expect(plan.filesystem.mounts).toContainEqual({ kind: 'bind', dest: cwd, source: cwd, ro: false });
    expect(plan.env.set.SRT_SANDBOX).toBe('1');
    expect(existsSync(join(cwd, 'marker'))).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });
});
