// The seccomp rules as srt applies them from settings (the helper itself: seccomp.test.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-init-srt-');
afterAll(() => tmp.cleanup());

const UNIX_SOCKET = `python3 -c "
import socket
try: socket.socket(socket.AF_UNIX); print('unix=created')
except OSError as e: print('unix=' + str(e.errno))"`;

const fresh = scratchDirs(() => tmp.path);
/** A fresh home and repository, each with a .srt directory for settings. */
function scratch(): { home: string; cwd: string } {
  const { home, cwd } = fresh();
  for (const d of [join(home, '.srt'), join(cwd, '.srt'), join(cwd, '.git')]) mkdirSync(d);
  return { home, cwd };
}

describe('seccomp through srt', () => {
  it('refuses AF_UNIX sockets and hides the relays and helpers from the command', async () => {
    const { home, cwd } = scratch();
    const r = await srt(['-c', `${UNIX_SOCKET}; ps -eo pid=,comm= | tr -s ' ' | tr '\\n' ','`], { home, cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('unix=1'); // EPERM
    // Only the nested namespace's init (PID 1, non-dumpable, ignores the command's signals) and
    // the command's own processes: no relay, no outer helper, no bwrap.
    expect(r.stdout).toMatch(/^ ?1 srt-init,/m);
    expect(r.stdout.match(/srt-init/g)).toHaveLength(1);
    expect(r.stdout).not.toMatch(/bwrap/);
  });

  it('allowAllUnixSockets in user settings lifts the rule; in a project file it is ignored with a warning', async () => {
    const user = scratch();
    writeFileSync(join(user.home, '.srt', 'settings.json'), JSON.stringify({ network: { allowAllUnixSockets: true } }));
    const allowed = await srt(['-c', UNIX_SOCKET], user);
    expect(allowed.stdout).toContain('unix=created');

    const project = scratch();
    writeFileSync(join(project.cwd, '.srt', 'settings.json'), JSON.stringify({ network: { allowAllUnixSockets: true } }));
    const ignored = await srt(['-c', UNIX_SOCKET], project);
    expect(ignored.stdout).toContain('unix=1');
    expect(ignored.stderr).toMatch(/srt: warning: .*\.srt\/settings\.json: network\.allowAllUnixSockets: ignored/);
  });

  // `unshare -U` (no uid map): mapping root with `-r` needs CAP_SETFCAP, which the command never has.
  it('allowNestedUserNamespaces in user settings lets `unshare -U` work; by default it is refused', async () => {
    const def = scratch();
    const refused = await srt(['-c', 'unshare -U true 2>/dev/null; echo userns=$?'], def);
    expect(refused.stdout).toContain('userns=1');
    const user = scratch();
    writeFileSync(join(user.home, '.srt', 'settings.json'), JSON.stringify({ allowNestedUserNamespaces: true }));
    const allowed = await srt(['-c', 'unshare -U true; echo userns=$?'], user);
    expect(allowed.stdout).toContain('userns=0');
  });
});
