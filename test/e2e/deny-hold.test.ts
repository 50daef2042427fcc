// Deny entries that must hold for the whole run (SPEC §3, invariants 2 and 10): a deny srt
// cannot resolve at the start (a directory the user cannot search right now), and denied paths
// that a program outside the sandbox replaces while the command runs (a credential refresh, an
// editor saving). Every test checks the host afterwards.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NO_SUPERVISOR, SRT_BIN, srt, tempDir, track, stopStragglers } from './helpers.js';

const tmp = tempDir('srt-deny-hold-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const root = process.getuid?.() === 0;

let n = 0;
function scratch(): { home: string; cwd: string } {
  const base = join(tmp.path, String(n++));
  const home = join(base, 'home');
  const cwd = join(base, 'cwd');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd);
  return { home, cwd };
}

describe('a deny entry inside a directory the user cannot search right now', () => {
  // Root searches any directory, so srt resolves the entry itself: the same commands must still fail.
  it(`a denyRead entry (its owner chmods the directory open inside): the file stays unreadable${root ? ' (root resolves it directly)' : ''}`, async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'private'));
    writeFileSync(join(dir.cwd, 'private', 'key'), 'TOP-SECRET\n');
    chmodSync(join(dir.cwd, 'private'), 0o000);
    try {
      const r = await srt(['--deny-read', join(dir.cwd, 'private', 'key'), '--', 'sh', '-c', 'chmod 700 private; cat private/key; ls private'], dir);
      expect(r.stdout).not.toContain('TOP-SECRET');
      if (!root) expect(r.stderr).toContain(`srt cannot search ${join(dir.cwd, 'private')} (permission denied)`);
      expect(statSync(join(dir.cwd, 'private')).mode & 0o777).toBe(0o000); // the host's directory as it was
    } finally {
      chmodSync(join(dir.cwd, 'private'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'private', 'key'), 'utf8')).toBe('TOP-SECRET\n');
  });

  it.each([['with the supervisor', {}], ['without it (placeholders)', NO_SUPERVISOR]])('a denyWrite entry there: the file cannot be written after chmod inside, %s', async (_, env) => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'private'));
    writeFileSync(join(dir.cwd, 'private', 'hook'), '#!/bin/sh\n');
    chmodSync(join(dir.cwd, 'private'), 0o000);
    const settings = join(dir.home, 'deny.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyWrite: [join(dir.cwd, 'private', 'hook')] } }));
    try {
      const r = await srt(['-s', settings, '--', 'sh', '-c', 'chmod 700 private; echo "touch PWNED" >> private/hook && echo wrote'], { ...dir, env });
      expect(r.stdout).not.toContain('wrote');
    } finally {
      chmodSync(join(dir.cwd, 'private'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'private', 'hook'), 'utf8')).toBe('#!/bin/sh\n');
  });

  it('a denyRead glob whose matches may lie in such a directory: they stay unreadable', async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'certs'));
    writeFileSync(join(dir.cwd, 'certs', 'server.pem'), 'PRIVATE-KEY\n');
    chmodSync(join(dir.cwd, 'certs'), 0o000);
    try {
      const r = await srt(['--deny-read', `${dir.cwd}/**/*.pem`, '--', 'sh', '-c', 'chmod 700 certs; cat certs/server.pem'], dir);
      expect(r.stdout).not.toContain('PRIVATE-KEY');
      if (!root) expect(r.stderr).toContain(`srt cannot read ${join(dir.cwd, 'certs')} (permission denied)`);
    } finally {
      chmodSync(join(dir.cwd, 'certs'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'certs', 'server.pem'), 'utf8')).toBe('PRIVATE-KEY\n');
  });
});
