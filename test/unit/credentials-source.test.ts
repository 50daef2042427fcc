import { describe, expect, it } from 'vitest';
import { runSourceCommand } from '../../src/credentials/source.js';

const opts = { cwd: '/', env: { PATH: process.env.PATH } };

describe('source commands', () => {
  it('resolve to trimmed stdout', async () => {
    expect(await runSourceCommand(['sh', '-c', 'printf "  tok-123\\n\\n"'], opts)).toBe('tok-123');
  });

  it('fail closed with the command\'s stderr: non-zero exit, no output, not found, timeout', async () => {
    await expect(runSourceCommand(['sh', '-c', 'echo "not logged in" >&2; exit 4'], opts)).rejects.toThrow('source command `sh -c "echo \\"not logged in\\" >&2; exit 4"` failed (exit 4): not logged in');
    await expect(runSourceCommand(['sh', '-c', 'true'], opts)).rejects.toThrow(/printed nothing/);
    await expect(runSourceCommand(['/nonexistent/gh', 'auth', 'token'], opts)).rejects.toThrow('source command `/nonexistent/gh auth token` could not be started: command not found');
    const t = Date.now();
    await expect(runSourceCommand(['sleep', '30'], { ...opts, timeoutMs: 300 })).rejects.toThrow('source command `sleep 30` did not finish within 0.3 s');
    expect(Date.now() - t).toBeLessThan(5000);
  });
});
