// The red team's findings on masks and mount races (branch `redteam`, test/e2e/redteam-fs.test.ts
// and redteam-race.test.ts), kept as they were written: #2 a denied file replaced by a host-side
// rename, #7 a deny inside a directory srt cannot search, #3 a directory swapped with a symlink to
// $HOME while srt plans. deny-hold.test.ts and mount-race.test.ts cover each more widely.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SRT_BIN, srt, tempDir, track, stopStragglers, scratchDirs } from './helpers.js';

const tmp = tempDir('srt-redteam-mounts-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';

const scratch = scratchDirs(() => tmp.path);

/** Run `script` in a sandbox in the background; resolves with its stdout once it exits. */
function background(script: string, dir: { home: string; cwd: string }, args: string[] = []): Promise<string> {
  const child = track(spawn(process.execPath, [SRT_BIN, ...args, '--', 'sh', '-c', script], {
    cwd: dir.cwd, env: { PATH: process.env.PATH, HOME: dir.home, LANG: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
  return new Promise((res) => child.on('exit', () => res(out)));
}

async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 200 && !existsSync(path); i++) await sleep(50);
  if (!existsSync(path)) throw new Error(`${path} never appeared`);
}

describe('red team #2: masks that a host-side rename detaches', () => {
  it('a denyRead file that a host program replaces by rename during the run (credential refresh, editor save) stays unreadable', async () => {
    const dir = scratch();
    const secret = join(dir.home, '.aws', 'credentials');
    mkdirSync(join(dir.home, '.aws'));
    writeFileSync(secret, 'old-secret\n');
    const run = background(`touch started; while [ ! -e go ]; do sleep 0.05; done; cat ${secret} 2>&1`, dir, ['--deny-read', secret]);
    await waitForFile(join(dir.cwd, 'started'));
    writeFileSync(`${secret}.tmp`, 'NEW-SECRET-AKIA\n');
    renameSync(`${secret}.tmp`, secret); // what aws/gh/docker/editors do to save a file
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run;
    expect(out).not.toContain('NEW-SECRET-AKIA');
    expect(out).toContain('Permission denied');
  });

});

describe('red team #7: deny entries srt cannot resolve', () => {
  // Only an unprivileged caller meets a directory it cannot search (root searches anything).
  it.skipIf(process.getuid?.() === 0)('a denyRead entry inside a directory the user cannot search right now, in a writable root, is still enforced', async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'private'));
    writeFileSync(join(dir.cwd, 'private', 'key'), 'TOP-SECRET\n');
    chmodSync(join(dir.cwd, 'private'), 0o000);
    try {
      const r = await srt(['--deny-read', join(dir.cwd, 'private', 'key'), '--', 'sh', '-c', 'chmod 700 private; cat private/key'], dir);
      // Either srt refuses to start (it cannot apply the deny), or the file stays unreadable.
      expect(r.stdout).not.toContain('TOP-SECRET');
    } finally {
      chmodSync(join(dir.cwd, 'private'), 0o700);
    }
  });
});

const SWAPPER = [
  'import ctypes, time',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'time.sleep(1.0)',
  'end = time.time() + 25',
  'while time.time() < end:',
  '    if libc.renameat2(-100, b"web", -100, b".lnk", 2) != 0: raise OSError(ctypes.get_errno(), "renameat2")',
  '    time.sleep(0.0002)',
].join('\n');

describe('red team #3: races between planning and mounting', () => {
  it('srt started from a directory that a concurrent sandbox keeps swapping with a symlink to $HOME never binds $HOME writable', async () => {
    const home = join(tmp.path, 'race', 'home');
    const project = join(tmp.path, 'race', 'project');
    mkdirSync(home, { recursive: true });
    mkdirSync(join(project, 'web'), { recursive: true });
    execFileSync('git', ['init', '-q', '.'], { cwd: project });
    symlinkSync(home, join(project, '.lnk'));
    const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };

    // The attacker's sandbox, at the project root.
    const attacker = track(spawn(process.execPath, [SRT_BIN, '--', PYTHON, '-c', SWAPPER], { cwd: project, env, stdio: 'ignore' }));
    const attackerDone = new Promise((res) => attacker.on('exit', res));

    // The user's shell, already inside web/ (its cwd is the real directory) before swapping starts.
    // Any file in $HOME (not one of the home-protected names: ~/.npmrc, ~/.config/nvim/init.lua, … run code later).
    const keys = join(home, 'notes.txt');
    const loop = `sleep 1.5; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do ${process.execPath} ${SRT_BIN} -- sh -c 'echo k >> ${keys}' 2>/dev/null; done; echo done`;
    const user = track(spawn('sh', ['-c', loop], { cwd: join(project, 'web'), env, stdio: ['ignore', 'pipe', 'ignore'] }));
    await new Promise((res) => user.on('exit', res));
    attacker.kill('SIGTERM');
    await attackerDone;

    const written = existsSync(keys) ? readFileSync(keys, 'utf8').split('\n').filter(Boolean).length : 0;
    expect(written).toBe(0);
  }, 240_000);
});
