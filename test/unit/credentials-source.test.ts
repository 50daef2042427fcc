import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runSourceCommand } from '../../src/credentials/source.js';

const opts = { cwd: '/', env: { PATH: process.env.PATH } };
/** runSourceCommand with argv[0] found as srt finds it (platform/writable.ts): here, in /bin. */
const run = (argv: string[], extra: { timeoutMs?: number } = {}) =>
  runSourceCommand(argv, { ...opts, ...extra, program: argv[0]!.startsWith('/') ? argv[0]! : `/bin/${argv[0]}` });

describe('source commands', () => {
  it('resolve to trimmed stdout', async () => {
    expect(await run(['sh', '-c', 'printf "  tok-123\\n\\n"'])).toBe('tok-123');
  });

  it('fail closed with the command\'s stderr: non-zero exit, no output, not found, timeout', async () => {
    await expect(run(['sh', '-c', 'echo "not logged in" >&2; exit 4'])).rejects.toThrow('source command `sh -c "echo \\"not logged in\\" >&2; exit 4"` failed (exit 4): not logged in');
    await expect(run(['sh', '-c', 'true'])).rejects.toThrow(/printed nothing/);
    await expect(run(['/nonexistent/gh', 'auth', 'token'])).rejects.toThrow('source command `/nonexistent/gh auth token` could not be started: command not found');
    await expect(run(['sleep', '30'], { timeoutMs: 300 })).rejects.toThrow('source command `sleep 30` did not finish within 0.3 s');
  });

  it('a timeout stops the command\'s children too (one holding its stdout open cannot stall srt)', async () => {
    const marker = `${process.pid}${Date.now() % 1000}`; // sleep 30.<digits>: a name to find it by
    const alive = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`sleep\u000030.${marker}`);
      } catch {
        return false;
      }
    });
    // The shell waits for its child sleep, which holds the shell's stdout.
    await expect(run(['sh', '-c', `sleep 30.${marker}; echo token`], { timeoutMs: 300 })).rejects.toThrow(/did not finish within 0.3 s/);
    // SIGKILL is delivered, not waited for: a killed sleep may show for a moment (bounded wait).
    for (let i = 0; i < 100 && alive().length; i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive()).toEqual([]);
    // A grandchild that left the tree (re-parented at once) still holds stdout: srt stops reading.
    await expect(run(['sh', '-c', `(sleep 30.${marker} &); sleep 30; echo token`], { timeoutMs: 300 })).rejects.toThrow(/did not finish/);
    for (const pid of alive()) process.kill(Number(pid), 'SIGKILL');
  });
});
