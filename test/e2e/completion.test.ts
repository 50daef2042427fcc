// `srt completion bash|zsh|fish` and `srt help man`: the bash script passes `bash -n` and
// completes what the program accepts (driven here as bash's programmable completion calls it),
// and the man page man renders is the one the package ships (docs/srt.1).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-completion-');
afterAll(() => tmp.cleanup());
const home = join(tmp.path, 'home');
mkdirSync(home);
const script = join(tmp.path, 'srt.bash');

beforeAll(async () => {
  const r = await srt(['completion', 'bash'], { home });
  expect(r.exitCode).toBe(0);
  writeFileSync(script, r.stdout);
});

/** What bash offers for the command line `words` (the last word is the one being completed). */
async function complete(words: string[], cwd = tmp.path): Promise<string[]> {
  const quoted = words.map((w) => `'${w}'`).join(' ');
  const r = await execa('bash', ['-c', `source '${script}'; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _srt; printf '%s\\n' "\${COMPREPLY[@]}"`], { cwd, reject: false });
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').filter(Boolean).sort();
}

describe('srt completion', () => {
  it('bash: the script parses', async () => {
    expect((await execa('bash', ['-n', script], { reject: false })).exitCode).toBe(0);
  });

  it('bash: srt doc<TAB> completes to doctor', async () => {
    expect(await complete(['srt', 'doc'])).toEqual(['doctor']);
  });

  it('bash: subcommands, options, preset names, choices and settings paths', async () => {
    expect(await complete(['srt', ''])).toEqual(expect.arrayContaining(['check', 'completion', 'config', 'doctor', 'help', 'proxy', 'schema', 'trust']));
    expect(await complete(['srt', '--allow-d'])).toEqual(['--allow-domain']);
    expect(await complete(['srt', '--with', 'p'])).toEqual(['pip', 'pnpm']);
    expect(await complete(['srt', '--platform', ''])).toEqual(['linux', 'macos']);
    expect(await complete(['srt', 'completion', ''])).toEqual(['bash', 'fish', 'zsh']);
    expect(await complete(['srt', 'check', 'w'])).toEqual(['write']);
    expect(await complete(['srt', 'doctor', '--f'])).toEqual(['--fix']);
    const dir = join(tmp.path, 'project');
    mkdirSync(join(dir, '.srt'), { recursive: true });
    writeFileSync(join(dir, '.srt', 'settings.json'), '{}');
    expect(await complete(['srt', '-s', '.srt/s'], dir)).toEqual(['.srt/settings.json']);
    expect(await complete(['srt', '--with', 'npm', 'config', '--settings', '.srt/'], dir)).toEqual(['.srt/settings.json']);
  });

  it('bash: after -- (or a command that is no subcommand) the words are the command\'s own', async () => {
    expect(await complete(['srt', '--', 'bas'])).toContain('bash');
    expect(await complete(['srt', '--with', 'npm', '--', 'bas'])).toContain('bash');
    expect(await complete(['srt', '-c', 'true', 'doc'])).toEqual(['doctor']);
  });

  it('zsh and fish get scripts; an unknown shell is a usage error (125)', async () => {
    const zsh = await srt(['completion', 'zsh'], { home });
    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -o filenames -F _srt srt');
    const fish = await srt(['completion', 'fish'], { home });
    expect(fish.stdout).toContain("complete -c srt -n __fish_use_subcommand -f -a doctor");
    expect(fish.stdout).toContain("-l with -x -a 'npm pnpm yarn pip uv cargo go gradle maven git gh'");
    const bad = await srt(['completion', 'tcsh'], { home });
    expect(bad.exitCode).toBe(125);
    expect(bad.stderr).toContain('tcsh');
  });
});

describe('srt help man', () => {
  it('is docs/srt.1, and man renders it with every subcommand and option', async () => {
    const page = await srt(['help', 'man'], { home });
    expect(page.exitCode).toBe(0);
    expect(`${page.stdout}\n`).toBe(readFileSync(join(REPO, 'docs', 'srt.1'), 'utf8'));
    const shown = await execa('man', ['-l', join(REPO, 'docs', 'srt.1')], { env: { MANPAGER: 'cat', MANWIDTH: '100', PATH: process.env.PATH }, reject: false });
    expect(shown.exitCode).toBe(0);
    const text = shown.stdout.replace(/.\x08/g, '');
    for (const word of ['NAME', 'SYNOPSIS', 'OPTIONS', 'COMMANDS', 'EXIT STATUS', 'srt doctor', 'srt completion', '--allow-domain', '--control-fd', 'TOOLCHAIN PRESETS']) expect(text).toContain(word);
  });
});
