// srt starts its proxy while bwrap and srt-init set the sandbox up; srt-init starts the command
// only on srt's go (`--go-fd`, init/init.c), sent once the proxy listens. Fail closed: a proxy
// that does not start, a signal to srt before the go, or srt's death leave the command unrun.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyValues, processesWith, scratchDirs, srt, srtArgv, stopStragglers, tempDir, track } from './helpers.js';

const tmp = tempDir('srt-go-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const scratch = scratchDirs(() => tmp.path);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function children(pid: number | string): string[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

function command(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

const program = (pid: string) => command(pid).split('\0')[0]!;

/** Whether srt-init runs in srt's sandbox: bwrap (srt's child) has set the sandbox up and run it. */
function helperRuns(srtPid: number): boolean {
  return children(srtPid).some((bwrap) => children(bwrap).some((pid) => program(pid).endsWith('/srt-init')));
}

/** Whether the proxy of a run under `home` listens yet (srt sends the go only after that). */
function proxyListens(home: string): boolean {
  const root = join(home, '.srt', 'run');
  try {
    return readdirSync(root).some((d) => existsSync(join(root, d, 'http.sock')));
  } catch {
    return false;
  }
}

interface Held { child: ChildProcess; exit: Promise<unknown> }

function stopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
  } catch {
    return false;
  }
}

/**
 * srt, running `touch MARKER`, stopped (SIGSTOP) as soon as bwrap runs, before its proxy listens, and held until
 * srt-init runs in the sandbox: srt-init waits for the go. (srt is killed only after that:
 * bubblewrap's sandbox process waits forever for a bwrap parent that died before it set the
 * sandbox's user namespace up, and --die-with-parent kills that parent with srt.) A loaded
 * machine may run srt on until its proxy listens before the stop lands: then it is tried again.
 */
async function holdBeforeGo(home: string, cwd: string, marker: string): Promise<Held> {
  for (let tries = 0; tries < 5; tries++) {
    const child = track(spawn(process.execPath, srtArgv(['--', 'touch', marker]), { cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, stdio: 'ignore' }));
    const exit = new Promise((res) => child.on('exit', res));
    const pid = child.pid!;
    let deadline = Date.now() + 20_000;
    // A busy wait: the proxy starts as soon as the run's bwrap runs (srt may run other programs,
    // bwrap probes too, before).
    const sandbox = (c: string) => program(c).endsWith('/bwrap') && command(c).includes(marker);
    while (Date.now() < deadline && child.exitCode === null && !children(pid).some(sandbox)) { /* poll */ }
    process.kill(pid, 'SIGSTOP');
    while (Date.now() < deadline && !stopped(pid)) { /* poll */ }
    if (proxyListens(home)) {
      process.kill(pid, 'SIGCONT');
      await exit;
      rmSync(marker, { force: true }); // this try's command ran
      continue;
    }
    deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !helperRuns(pid)) await sleep(10);
    expect(helperRuns(pid)).toBe(true);
    return { child, exit };
  }
  throw new Error('srt was never stopped before its proxy listened');
}

describe('the go pipe: srt-init starts the command only once srt says its proxy listens', () => {
  it('a proxy that cannot start: 125, srt says why, nothing ran', async () => {
    const { home, cwd } = scratch();
    const marker = join(cwd, 'ran');
    const r = await srt(['--', 'touch', marker], { home, cwd, env: { HTTPS_PROXY: 'https://upstream.invalid:3128' } });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: cannot start the network proxy: HTTPS_PROXY: only http:\/\/ upstream proxies/m);
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(join(home, '.srt', 'run'))).toEqual([]);
  });

  for (const [sig, n] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]] as const) {
    it(`${sig} to srt while srt-init waits for the go: 128+${n}, nothing runs, nothing left in ~/.srt/run, no process of the run left`, async () => {
      const { home, cwd } = scratch();
      const marker = join(cwd, `ran-after-${sig}`);
      const held = await holdBeforeGo(home, cwd, marker);
      held.child.kill(sig);
      held.child.kill('SIGCONT');
      expect(await held.exit).toBe(128 + n);
      const deadline = Date.now() + 10_000;
      while (processesWith(marker).length > 0 && Date.now() < deadline) await sleep(50);
      expect(processesWith(marker)).toEqual([]);
      expect(existsSync(marker)).toBe(false);
      expect(readdirSync(join(home, '.srt', 'run'))).toEqual([]);
    }, 120_000);
  }

  it('srt killed while srt-init waits for the go: nothing runs, no process of the run is left', async () => {
    const { home, cwd } = scratch();
    const marker = join(cwd, 'ran-after-kill');
    const held = await holdBeforeGo(home, cwd, marker);
    await sleep(500); // srt-init had time to run the command, were it not waiting
    expect(existsSync(marker)).toBe(false);
    held.child.kill('SIGKILL');
    await held.exit;
    const deadline = Date.now() + 10_000;
    while (processesWith(marker).length > 0 && Date.now() < deadline) await sleep(50);
    expect(processesWith(marker)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  }, 120_000);

  it('the go descriptor never reaches the command, and init has closed its own by then', async () => {
    const { home, cwd } = scratch();
    // init is PID 1 of the command's PID namespace; its argv names the go descriptor.
    const r = await srt(['--', 'sh', '-c', 'g=$(tr "\\0" "\\n" < /proc/1/cmdline | grep -x -A1 -e --go-fd | tail -n 1); echo "go=$g"; echo "self=$(ls /proc/self/fd | sort -n | tr "\\n" " ")"; echo "init=$(ls /proc/1/fd | sort -n | tr "\\n" " ")"'], { home, cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const kv = keyValues(r.stdout);
    expect(kv.go).toMatch(/^\d+$/);
    // ls's own descriptor on /proc/self/fd is 3.
    expect(kv.self!.trim()).toBe('0 1 2 3');
    expect(kv.init!.trim().split(' ')).not.toContain(kv.go);
  });

  it('the command runs once the proxy listens, and reaches it', async () => {
    const { home, cwd } = scratch();
    const r = await srt(['--', 'sh', '-c', 'curl -s -o /dev/null -w "%{http_code}" -x "$HTTPS_PROXY" http://example.invalid/; echo " ran"'], { home, cwd });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('403 ran');
  });
});
