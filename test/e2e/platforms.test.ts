// `--platform`: the real srt prints either backend's plan on this (Linux) host. The macOS plan is
// taken apart the way sandbox-exec would get it (the profile text and each -D argument) and
// checked structurally and against paths of this run; running it here is refused cleanly.
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProfile } from '../unit/sbpl-checker.js';
import { srt, tempDir } from './helpers.js';

/** The words of a line of shellQuote output: plain words, '…' quotes and \' escapes. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ') { if (word !== null) words.push(word); word = null; continue; }
    word ??= '';
    if (c === "'") { const end = line.indexOf("'", i + 1); word += line.slice(i + 1, end); i = end; } else if (c === '\\') word += line[++i]; else word += c;
  }
  if (word !== null) words.push(word);
  return words;
}

/** The profile and the -D parameters from `srt --dry-run --platform macos` output. */
function parseMacDryRun(out: string): { profile: string; params: [string, string][]; argv: string[] } {
  const command = out.slice(0, out.indexOf('\n\n')).split(' \\\n  ');
  const params = command.filter((l) => l.startsWith('-D ')).map((l) => {
    const kv = shellWords(l)[1]!;
    return [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string];
  });
  const argv = shellWords(command[command.length - 1]!).slice(1);
  const start = out.indexOf('(version 1)');
  const profile = out.slice(start, out.indexOf('\n# network'));
  return { profile, params, argv };
}

describe('srt --platform', () => {
  let home: ReturnType<typeof tempDir>;
  let work: ReturnType<typeof tempDir>;
  beforeAll(() => {
    home = tempDir('srt-home-');
    work = tempDir('srt-work-');
    mkdirSync(join(work.path, '.git'));
    writeFileSync(join(work.path, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(work.path, '.git', 'config'), '[core]\n\thooksPath = .husky/_\n');
    mkdirSync(join(home.path, '.ssh'));
  });
  afterAll(() => { home.cleanup(); work.cleanup(); });

  it('--dry-run --platform macos prints a Seatbelt profile that checks out, with every path as a -D parameter', async () => {
    const r = await srt(['--dry-run', '--platform', 'macos', '--deny-read', '~/.ssh', '--allow-domain', 'localhost:5432', '--', 'ls', "it's here"], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    const { profile, params, argv } = parseMacDryRun(r.stdout);
    expect(argv).toEqual(['ls', "it's here"]);
    expect(profile).toMatch(/^\(version 1\)\n/);
    expect(profile).toContain('(deny default (with message "srt-');
    expect(profile.replace(/^\s*;.*$/gm, '')).not.toContain(home.path); // paths travel as parameters
    const ev = loadProfile(profile, params.map(([k, v]) => [k, v.replace(/(HTTP|SOCKS)_PORT$/, '40000')]));
    const q = (op: string, path: string) => ev.allows({ op, path, type: 'REGULAR-FILE' });
    expect(q('file-read-data', join(home.path, '.ssh', 'id_ed25519'))).toBe(false);
    expect(q('file-read-data', join(work.path, 'README'))).toBe(true);
    expect(q('file-write-create', join(work.path, 'out.txt'))).toBe(true);
    expect(q('file-write-create', join(work.path, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(q('file-write-create', join(work.path, 'deep', 'er', '.vscode', 'tasks.json'))).toBe(false);
    expect(q('file-write-create', join(home.path, 'escape'))).toBe(false);
    // core.hooksPath (husky 9: .husky/_, whose stubs run the scripts in .husky/).
    expect(q('file-write-create', join(work.path, '.husky', 'pre-commit'))).toBe(false);
    expect(q('file-write-create', join(work.path, '.husky', '_', 'h'))).toBe(false);
    expect(ev.allows({ op: 'network-outbound', remoteIp: 'localhost:5432' })).toBe(true);
    expect(ev.allows({ op: 'network-outbound', remoteIp: 'localhost:5433' })).toBe(false);
    expect(r.stdout).toMatch(/^HTTP_PROXY=http:\/\/127\.0\.0\.1:HTTP_PORT$/m);
    expect(r.stdout).toMatch(/^TMPDIR=.*\/\.srt\/run\/\d+-\w+\/tmp$/m);
    expect(readdirSync(join(home.path, '.srt', 'run'))).toEqual([]); // the dry run's directory is gone
  });

  it('a symlink whose name matches a deny glob is denied where it leads', async () => {
    mkdirSync(join(home.path, 'keys'), { recursive: true });
    mkdirSync(join(home.path, 'data'), { recursive: true });
    writeFileSync(join(home.path, 'data', 'secret.txt'), 'k');
    symlinkSync(join(home.path, 'data', 'secret.txt'), join(home.path, 'keys', 'link.pem'));
    const r = await srt(['--dry-run', '--platform', 'macos', '--deny-read', '~/**/*.pem', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    const { profile, params } = parseMacDryRun(r.stdout);
    const ev = loadProfile(profile, params.map(([k, v]) => [k, v.replace(/(HTTP|SOCKS)_PORT$/, '40000')]));
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'data', 'secret.txt'), type: 'REGULAR-FILE' })).toBe(false);
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'data', 'other.txt'), type: 'REGULAR-FILE' })).toBe(true);
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'x', 'new.pem'), type: 'REGULAR-FILE' })).toBe(false);
  });

  it('--dry-run --platform linux prints the bubblewrap plan', async () => {
    const r = await srt(['--dry-run', '--platform', 'linux', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# bubblewrap command\n\S*bwrap /);
    expect(r.stdout).not.toContain('(version 1)');
  });

  it('running the macOS backend on Linux is refused (125) and runs nothing', async () => {
    const marker = join(work.path, 'ran');
    const r = await srt(['--platform', 'macos', '--', 'touch', marker], { home: home.path, cwd: work.path });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toContain('srt: the macOS backend runs only on macOS (sandbox-exec); use --dry-run to review its Seatbelt profile here');
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(join(home.path, '.srt', 'run'))).toEqual([]);
  });

  it('an unknown platform is a usage error', async () => {
    const r = await srt(['--platform', 'windows', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: option '--platform <name>' argument 'windows' is invalid\. must be linux or macos/);
  });
});
