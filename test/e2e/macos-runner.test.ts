// The macOS runner's lifecycle, on Linux: a TEST-ONLY stand-in for sandbox-exec
// (fixtures/fake-sandbox-exec.sh) checks the arguments srt passes and runs the command without a
// sandbox, so exit statuses, signal forwarding, the process group, the watchdog, the preflight and
// cleanup are exercised here. What Seatbelt enforces is checked on a Mac (scripts/macos-check.sh).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProfile } from '../unit/sbpl-checker.js';
import { REPO, stopStragglers, tempDir, track } from './helpers.js';

const FAKE = join(REPO, 'test', 'e2e', 'fixtures', 'fake-sandbox-exec.sh');
const RUNNER = join(REPO, 'test', 'e2e', 'fixtures', 'macos-runner.mjs');

interface Run { status: number | null; stdout: string; stderr: string }

function runner(args: string[], opts: { home: string; cwd: string; env?: Record<string, string>; onSpawn?: (pid: number) => void }): Promise<Run> {
  return new Promise((resolve) => {
    const child = track(spawn(process.execPath, [RUNNER, FAKE, ...args], {
      cwd: opts.cwd, env: { PATH: process.env.PATH, HOME: opts.home, LANG: 'C.UTF-8', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: job-control signals other tests send to theirs never reach it.
      detached: true,
    }));
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => { stdout += b; });
    child.stderr!.on('data', (b: Buffer) => { stderr += b; });
    opts.onSpawn?.(child.pid!);
    child.on('exit', (code, sig) => resolve({ status: code ?? (sig ? -1 : null), stdout, stderr }));
  });
}

/** Running (a zombie waiting for its new parent to reap it counts as gone). */
const alive = (pid: number) => {
  try { return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
};
/** The process state letter (R, S, T, Z, …). */
const state = (pid: number) => /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];

async function until(what: () => boolean, ms = 15_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) if (what()) return true;
  return what();
}

describe('macOS runner lifecycle (stand-in sandbox-exec, Linux)', () => {
  let home: ReturnType<typeof tempDir>;
  let work: ReturnType<typeof tempDir>;
  beforeAll(() => { home = tempDir('srt-home-'); work = tempDir('srt-work-'); });
  afterAll(async () => { await stopStragglers(); home.cleanup(); work.cleanup(); });
  const runDirs = () => (existsSync(join(home.path, '.srt', 'run')) ? readdirSync(join(home.path, '.srt', 'run')) : []);

  it('passes the profile and every -D parameter, the proxy ports among them; the environment points at that proxy; status and cleanup', async () => {
    const r = await runner(['/bin/sh', '-c', 'echo "proxy=$HTTPS_PROXY tmp=$TMPDIR sandbox=$SRT_SANDBOX"; test -d "$TMPDIR"; exit 7'], {
      home: home.path, cwd: work.path, env: { FAKE_SBX_DIR: work.path },
    });
    expect(r.stdout, r.stderr).toMatch(/status=7/);
    const params = readFileSync(join(work.path, 'params'), 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]);
    const http = params.find(([k]) => k === 'SRT_HTTP_PROXY')![1];
    expect(http).toMatch(/^localhost:\d+$/);
    expect(r.stdout).toContain(`proxy=http://127.0.0.1:${http.split(':')[1]}`);
    expect(r.stdout).toMatch(/sandbox=1/);
    // What sandbox-exec received passes the structural checker with the values it received.
    const ev = loadProfile(readFileSync(join(work.path, 'profile'), 'utf8'), params);
    expect(ev.allows({ op: 'network-outbound', remoteIp: http })).toBe(true);
    expect(ev.allows({ op: 'file-write-create', path: join(work.path, 'x'), type: 'REGULAR-FILE' })).toBe(true);
    expect(ev.allows({ op: 'file-write-create', path: join(home.path, 'x'), type: 'REGULAR-FILE' })).toBe(false);
    expect(runDirs()).toEqual([]);
  });

  it('128+N when the command is killed by a signal; 127 for a missing command (nothing started)', async () => {
    expect((await runner(['/bin/sh', '-c', 'kill -TERM $$'], { home: home.path, cwd: work.path })).stdout).toMatch(/status=143/);
    const missing = await runner(['/no/such/command'], { home: home.path, cwd: work.path });
    expect(missing.stdout).toMatch(/status=127/);
    expect(missing.stderr).toContain('srt: /no/such/command: command not found');
  });

  it('a profile sandbox-exec refuses stops the run before the command starts (125)', async () => {
    const marker = join(work.path, 'ran');
    const r = await runner(['/bin/sh', '-c', `touch ${marker}`], { home: home.path, cwd: work.path, env: { FAKE_SBX_REFUSE: '1' } });
    expect(r.stdout).toMatch(/status=125/);
    expect(r.stderr).toContain('srt: sandbox-exec refused the Seatbelt profile (sandbox-exec: profile rejected (test)); the command did not run');
    expect(existsSync(marker)).toBe(false);
    expect(runDirs()).toEqual([]);
  });

  it('what the command leaves running in its process group is killed when it ends', async () => {
    const pidFile = join(work.path, 'bg.pid');
    const r = await runner(['/bin/sh', '-c', `sleep 300 & echo $! > ${pidFile}`], { home: home.path, cwd: work.path });
    expect(r.stdout).toMatch(/status=0/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(await until(() => !alive(pid))).toBe(true);
  });

  it('Ctrl-Z (SIGTSTP) freezes the command and stops srt; SIGCONT resumes both', async () => {
    const counterFile = join(work.path, 'counter');
    let srtPid = 0;
    const run = runner(['/bin/sh', '-c', `i=0; while :; do i=$((i+1)); echo $i > ${counterFile}; sleep 0.02; done`], { home: home.path, cwd: work.path, onSpawn: (pid) => { srtPid = pid; } });
    const counter = () => (existsSync(counterFile) ? readFileSync(counterFile, 'utf8').trim() : '');
    expect(await until(() => counter() !== '')).toBe(true);
    process.kill(srtPid, 'SIGTSTP');
    expect(await until(() => state(srtPid) === 'T')).toBe(true);
    // Frozen (a process of the group may show D while its vfork child is stopped): no progress.
    await new Promise((r) => setTimeout(r, 300));
    const frozen = counter();
    await new Promise((r) => setTimeout(r, 500));
    expect(counter()).toBe(frozen);
    process.kill(srtPid, 'SIGCONT');
    expect(await until(() => counter() !== frozen && state(srtPid) !== 'T')).toBe(true);
    process.kill(srtPid, 'SIGTERM');
    expect((await run).stdout).toMatch(/status=143/);
  });

  it('SIGTERM to srt reaches the command; SIGKILL of srt still ends the command (watchdog) and the next run reaps the run directory', async () => {
    const ready = join(work.path, 'ready');
    const trapped = join(work.path, 'trapped');
    let srtPid = 0;
    const forwarded = runner(['/bin/sh', '-c', `trap 'echo got > ${trapped}; exit 3' TERM; touch ${ready}; while :; do sleep 0.05; done`], {
      home: home.path, cwd: work.path, onSpawn: (pid) => { srtPid = pid; },
    });
    expect(await until(() => existsSync(ready))).toBe(true);
    process.kill(srtPid, 'SIGTERM');
    expect((await forwarded).stdout).toMatch(/status=3/);
    expect(readFileSync(trapped, 'utf8')).toBe('got\n');

    const pidFile = join(work.path, 'cmd.pid');
    const killed = runner(['/bin/sh', '-c', `echo $$ > ${pidFile}; exec sleep 300`], { home: home.path, cwd: work.path, onSpawn: (pid) => { srtPid = pid; } });
    expect(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '')).toBe(true);
    const cmdPid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(cmdPid)).toBe(true);
    process.kill(srtPid, 'SIGKILL');
    await killed;
    expect(await until(() => !alive(cmdPid))).toBe(true);
    expect(runDirs().length).toBe(1); // SIGKILL leaves the run directory…
    await runner(['/usr/bin/true'], { home: home.path, cwd: work.path });
    expect(runDirs()).toEqual([]); // …which the next run removes
  });
});
