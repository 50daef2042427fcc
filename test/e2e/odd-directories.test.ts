// Odd directories never break or widen a run (issue 27; SPEC §3): the current directory `/` or one
// that holds the home directory or a system directory is read-only by default, and srt says so
// at once; an allowWrite of `/` keeps the sandbox's own /dev and /proc.
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyValues, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-odd-dirs-');
afterAll(() => tmp.cleanup());

let n = 0;
/** A HOME whose user settings search one level below each writable root (a wide root stays quick). */
function shallowHome(): string {
  const home = join(tmp.path, `home${n++}`);
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, '.srt-settings.json'), JSON.stringify({ mandatoryDenySearchDepth: 1 }));
  return home;
}

describe('the current directory', () => {
  it('/ is read-only, said at once; the command runs', async () => {
    // Planted by name at the top of the host's filesystem: as root it would land there.
    const marker = `/srt-e2e-cwd-root-${process.pid}-${Date.now()}`;
    try {
      const r = await srt(['--', 'sh', '-c', `echo ran=yes; if touch ${marker} 2>/dev/null; then echo wrote=yes; else echo wrote=no; fi`], { home: shallowHome(), cwd: '/' });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(keyValues(r.stdout)).toEqual({ ran: 'yes', wrote: 'no' });
      expect(r.stderr).toContain('srt: warning: the current directory / is the root directory, so it is read-only in this run');
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(marker, { force: true });
    }
  });

  it('a directory that holds the home directory is read-only; a project beside the home is writable (control)', async () => {
    const top = join(tmp.path, `top${n++}`);
    const home = join(top, 'home');
    const project = join(top, 'project');
    mkdirSync(home, { recursive: true });
    mkdirSync(project);
    const script = 'if touch planted 2>/dev/null; then echo wrote=yes; else echo wrote=no; fi';
    const wide = await srt(['--', 'sh', '-c', script], { home, cwd: top });
    expect(wide.exitCode, wide.stderr).toBe(0);
    expect(keyValues(wide.stdout)).toEqual({ wrote: 'no' });
    expect(wide.stderr).toContain(`srt: warning: the current directory ${top} holds the home directory ${home}, so it is read-only in this run`);
    expect(existsSync(join(top, 'planted'))).toBe(false);

    const control = await srt(['--', 'sh', '-c', script], { home, cwd: project });
    expect(control.exitCode, control.stderr).toBe(0);
    expect(keyValues(control.stdout)).toEqual({ wrote: 'yes' });
    expect(control.stderr).not.toContain('read-only in this run');
    expect(existsSync(join(project, 'planted'))).toBe(true);
  });

  it('a directory the caller cannot write is said to be read-only, to root as to anyone (root keeps no capability inside)', async () => {
    const home = shallowHome();
    const locked = join(tmp.path, `locked${n++}`);
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const script = 'if touch planted 2>/dev/null; then echo wrote=yes; else echo wrote=no; fi';
    try {
      const r = await srt(['--', 'sh', '-c', script], { home, cwd: locked });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(keyValues(r.stdout)).toEqual({ wrote: 'no' });
      expect(r.stderr).toContain(`srt: warning: the current directory ${locked} is not writable by you, so it is read-only inside the sandbox too`);
      expect(existsSync(join(locked, 'planted'))).toBe(false);

      chmodSync(locked, 0o755);
      const control = await srt(['--', 'sh', '-c', script], { home, cwd: locked });
      expect(control.exitCode, control.stderr).toBe(0);
      expect(keyValues(control.stdout)).toEqual({ wrote: 'yes' });
      expect(control.stderr).not.toContain('is not writable by you');
    } finally {
      chmodSync(locked, 0o755);
    }
  });
});

describe('allowWrite "/"', () => {
  it("keeps the sandbox's own /dev and /proc: /dev/null opens, the network relay lives, /proc is the sandbox's", async () => {
    const cwd = join(tmp.path, `work${n++}`);
    mkdirSync(cwd);
    const script = [
      'if echo x > /dev/null; then echo devnull=yes; else echo devnull=no; fi',
      // The sandbox's /proc (its pid namespace): the shell's pid there is the one it knows itself by.
      'read -r spid rest < /proc/self/stat; echo ownproc=$([ "$spid" = "$$" ] && echo yes || echo no)',
      "echo http=$(curl -s -m 20 -o /dev/null -w '%{http_code}' http://refused.invalid/)",
    ].join('\n');
    const r = await srt(['--allow-write', '/', '--', 'sh', '-c', script], { home: shallowHome(), cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const kv = keyValues(r.stdout);
    expect(kv.devnull, r.stderr).toBe('yes');
    expect(kv.http, r.stderr).toBe('403');
    expect(r.stderr).not.toContain('the network relay exited');
    expect(kv.ownproc).toBe('yes');
  });
});
