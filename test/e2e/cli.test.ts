// Argument handling of the real `srt` binary that needs no sandbox: help, usage errors (125),
// and the subcommand/command boundary.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { srt, tempDir } from './helpers.js';

let home: ReturnType<typeof tempDir>;
beforeAll(() => {
  home = tempDir('srt-e2e-cli-');
});
afterAll(() => home.cleanup());

const run = (args: string[]) => srt(args, { home: home.path, cwd: home.path });

describe('srt command line', () => {
  it('--help explains usage with examples and exits 0', async () => {
    const r = await run(['--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Usage: srt [options] [--] COMMAND [ARGS...]');
    expect(r.stdout).toContain('srt npx -y some-mcp-server');
    expect(r.stdout).toContain('srt -- config');
    expect(r.stdout).toMatch(/config \[options\]\s+print the merged effective settings/);
    expect(r.stdout).toMatch(/proxy \[options\]\s+run only the filtering proxy/);
    expect(r.stdout).toMatch(/doctor \[options\]\s+diagnose dependencies/);
    expect(r.stdout).toMatch(/trust \[options\] \[file\]\s+approve the exact content/);
  });

  it('usage errors exit 125 with an srt: message', async () => {
    const cases: Array<[string[], string]> = [
      [['--bogus', 'ls'], "srt: unknown option '--bogus'"],
      [['--control-fd', '2', 'ls'], "srt: option '--control-fd <n>' argument '2' is invalid. must be a file descriptor number of 3 or more (0-2 are stdio)"],
      [['--control-fd', 'x', 'ls'], "srt: option '--control-fd <n>' argument 'x' is invalid. must be a file descriptor number of 3 or more (0-2 are stdio)"],
      [['-c', 'echo hi', 'extra'], 'srt: -c takes the whole command as one string; give either -c "COMMAND" or COMMAND ARGS, not both'],
      [['--settings'], "srt: option '-s, --settings <file>' argument missing"],
      [['config', 'extra'], "srt: too many arguments for 'config'. Expected 0 arguments but got 1."],
    ];
    for (const [args, message] of cases) {
      const r = await run(args);
      expect({ args, exitCode: r.exitCode, stderr: r.stderr }).toEqual({ args, exitCode: 125, stderr: message });
    }
  });

  it('no command at all is a usage error of its own: exit 2 (nothing was asked to run, so nothing failed to start)', async () => {
    const cases: Array<[string[], string]> = [
      [[], 'srt: no command given; usage: srt [options] [--] COMMAND [ARGS...]; srt --help for options and subcommands'],
      [['--'], 'srt: no command after --; usage: srt [options] -- COMMAND [ARGS...]'],
    ];
    for (const [args, message] of cases) {
      const r = await run(args);
      expect({ args, exitCode: r.exitCode, stderr: r.stderr }).toEqual({ args, exitCode: 2, stderr: message });
    }
  });

  it('`srt -- config` runs a command named config, not the subcommand', async () => {
    // Not on PATH: the shell's answer, and nothing of the subcommand's.
    const missing = await run(['--', 'config']);
    expect({ exitCode: missing.exitCode, stdout: missing.stdout }).toEqual({ exitCode: 127, stdout: '' });
    expect(missing.stderr).toMatch(/^srt: config: command not found$/m);
    // On PATH: that program runs, in the sandbox, with its arguments.
    const bin = join(home.path, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'config'), '#!/bin/sh\necho "the program named config ran: $SRT_SANDBOX $*"\n', { mode: 0o755 });
    const found = await srt(['--', 'config', '--json'], { home: home.path, cwd: home.path, env: { PATH: `${bin}:${process.env.PATH}` } });
    expect({ exitCode: found.exitCode, stdout: found.stdout }, found.stderr).toEqual({ exitCode: 0, stdout: 'the program named config ran: 1 --json' });
  });

  it('config takes the policy options too, before or after the subcommand', async () => {
    const before = await run(['--allow-domain', 'a.example', 'config', '--json']);
    const after = await run(['config', '--allow-domain', 'a.example', '--json']);
    expect(before.exitCode).toBe(0);
    expect(JSON.parse(String(before.stdout)).settings.network.allowedDomains).toEqual([
      { value: 'a.example', source: { scope: 'cli', flag: '--allow-domain' } },
    ]);
    expect(after.stdout).toBe(before.stdout);
  });
});
