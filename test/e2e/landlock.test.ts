// Landlock is defence in depth under the mounts (docs/linux-sandbox.md: "Landlock"): without it a host FIFO on a
// read-only path can be opened for writing. srt never goes without it silently: the helper warns
// when the kernel has none (or only ABI 1), srt warns when allowNestedUserNamespaces turns it off,
// and srt doctor shows the kernel's ABI. A kernel without Landlock is played by a seccomp filter
// that answers landlock_create_ruleset with ENOSYS (not built in) or EOPNOTSUPP (not enabled).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, SRT_BIN, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-landlock-');
afterAll(() => tmp.cleanup());
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'proj');
mkdirSync(home);
mkdirSync(cwd);
// A host FIFO outside every writable path (mode 666: any user could open it but for the sandbox).
const fifo = join(tmp.path, 'host.fifo');
execFileSync('mkfifo', ['-m', '666', fifo]);
const SHIM = join(REPO, 'test/e2e/fixtures/refuse-syscall.py');
// No reader: ENXIO once the open got past the permission checks, EACCES when Landlock refused it.
const probe = ['python3', '-c', `import os\ntry: os.open(${JSON.stringify(fifo)}, os.O_WRONLY | os.O_NONBLOCK); print("fifo=opened")\nexcept OSError as e: print("fifo=" + ("refused" if e.errno == 13 else "reachable"))`];
const warnings = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('srt: warning:') && /Landlock/.test(l));

describe('Landlock is never off without a warning', () => {
  it('with Landlock: no warning, and a host FIFO on a read-only path cannot be opened for writing', async () => {
    const r = await srt(['--', ...probe], { home, cwd });
    expect(r.stdout, r.stderr).toBe('fifo=refused');
    expect(warnings(r.stderr)).toEqual([]);
  });

  it.each([
    [38, 'Landlock is not in this kernel (srt uses it from Linux 5.19)'],
    [95, 'Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)'],
  ])('a kernel answering landlock_create_ruleset with errno %i: one warning line, and the FIFO is then reachable', async (errno, text) => {
    const r = withoutLandlock(errno, ['--', ...probe]);
    expect(r.stdout, r.stderr).toBe('fifo=reachable');
    const w = warnings(r.stderr);
    expect(w).toHaveLength(1);
    expect(w[0]).toContain(`srt: warning: ${text}: writes are confined by the mounts alone`);
  });

  it('allowNestedUserNamespaces says that it turns Landlock off', async () => {
    const settings = join(tmp.path, 'nested.json');
    execFileSync('sh', ['-c', `echo '{"allowNestedUserNamespaces": true}' > ${settings}`]);
    const r = await srt(['--settings', settings, '--', ...probe], { home, cwd });
    expect(r.stdout, r.stderr).toBe('fifo=reachable');
    const w = warnings(r.stderr);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/^srt: warning: allowNestedUserNamespaces turns Landlock and the protected-path supervisor off/);
  });

  it('srt doctor shows the ABI, and warns on a kernel without Landlock', async () => {
    const ok = await srt(['doctor', '--json'], { home, cwd });
    const landlock = (out: string) => (JSON.parse(out) as { checks: { id: string; status: string; detail: string }[] }).checks.find((c) => c.id === 'landlock');
    expect(landlock(ok.stdout)).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^ABI \d+: /) });
    const off = withoutLandlock(38, ['doctor', '--json']);
    expect(landlock(off.stdout)).toMatchObject({ status: 'warn', detail: expect.stringMatching(/^not in this kernel/) });
  });

  it('srt doctor warns that allowNestedUserNamespaces turns Landlock off, and only then', async () => {
    const settings = join(tmp.path, 'nested-doctor.json');
    execFileSync('sh', ['-c', `echo '{"allowNestedUserNamespaces": true}' > ${settings}`]);
    const check = (out: string) => (JSON.parse(out) as { checks: { id: string; status: string; detail: string }[] }).checks.find((c) => c.id === 'nested-namespaces');
    const nested = await srt(['doctor', '--json', '--settings', settings], { home, cwd });
    expect(check(nested.stdout), nested.stderr).toMatchObject({ status: 'warn', detail: expect.stringContaining('turns Landlock and the protected-path supervisor off') });
    const plain = await srt(['doctor', '--json'], { home, cwd });
    expect(check(plain.stdout)).toBeUndefined();
  });
});

/** srt under the shim: node runs srt, so the filter covers bwrap and the helper too. */
function withoutLandlock(errno: number, args: string[]): { stdout: string; stderr: string } {
  const r = spawnSync('python3', [SHIM, '444', String(errno), process.execPath, SRT_BIN, ...args],
    { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 60_000 });
  return { stdout: r.stdout.trim(), stderr: r.stderr };
}
