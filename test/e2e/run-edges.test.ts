// Odd places and odd inputs of a run (issue 27): directories srt's search can list but the sandbox
// cannot enter, the current directory `/`, limits, a control descriptor the command could write,
// what the command's terminal state does to srt's own lines, allowWrite entries that lead to
// their own ancestors, and how a test switches the supervisor off.
import { execa } from 'execa';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NO_SUPERVISOR, srt, stopStragglers, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-edges-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});

let n = 0;
function world() {
  const root = join(tmp.path, `w${n++}`);
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  return { root, home, cwd };
}

describe("another user's directory inside a writable root", () => {
  // Only a root caller can list another user's mode-700 directory (and make one for the test);
  // an unprivileged caller's search never sees inside, so the case does not arise for it.
  it.skipIf(process.getuid?.() !== 0)('holding a repository and a protected symlink neither stops the run nor opens it', async () => {
    const w = world();
    const other = join(w.cwd, 'other');
    mkdirSync(other);
    await execa('git', ['init', '-q', join(other, 'repo')]);
    symlinkSync('/nowhere', join(other, '.bashrc'));
    writeFileSync(join(other, 'repo', 'README'), 'theirs\n');
    await execa('chown', ['-R', '65534:65534', other]);
    chmodSync(other, 0o700);
    const r = await srt(['-c', 'echo ran; ls other 2>/dev/null || echo shut; echo mine > mine'], { home: w.home, cwd: w.cwd });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('ran\nshut');
    expect(readFileSync(join(w.cwd, 'mine'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(other, 'repo', 'README'), 'utf8')).toBe('theirs\n');
    expect(existsSync(join(other, 'repo', '.git', 'HEAD'))).toBe(true);
  });
});

describe('the test switch that turns the supervisor off', () => {
  // a/b/c/d/e exists before the run: the supervisor lets a directory the run creates hold
  // protected names, not one that existed.
  const deepWorld = () => {
    const w = world();
    mkdirSync(join(w.cwd, 'a/b/c/d/e'), { recursive: true });
    return w;
  };
  const deep = 'mkdir -p a/b/c/d/e && echo evil > a/b/c/d/e/.bashrc 2>/dev/null; cat a/b/c/d/e/.bashrc 2>/dev/null || echo refused';
  it('is out of reach of the environment: SRT_TEST_NO_SUPERVISOR=1 (the old switch) leaves the supervisor on', async () => {
    const w = deepWorld();
    const r = await srt(['-c', deep], { home: w.home, cwd: w.cwd, env: { SRT_TEST_NO_SUPERVISOR: '1' } });
    expect(r.stdout).toBe('refused');
    expect(r.stderr).not.toContain('placeholder');
    expect(existsSync(join(w.cwd, 'a/b/c/d/e/.bashrc'))).toBe(false);
  });

  it("the harness's own entry does switch it off (placeholders, within the search depth only)", async () => {
    const w = deepWorld();
    const r = await srt(['-c', deep], { home: w.home, cwd: w.cwd, ...NO_SUPERVISOR });
    expect(r.stdout).toBe('evil');
    expect(r.stderr).toContain('protected paths are kept with placeholder files during the run, not by the seccomp supervisor (switched off by the test harness)');
  });
});
