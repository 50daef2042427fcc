// `--platform`: the real srt prints either backend's plan on this (Linux) host, as text and as
// JSON (`--dry-run --json`). The macOS plan is taken from the argv sandbox-exec would get (the
// profile and each -D argument) and checked structurally and against paths of this run; running
// it here is refused cleanly. A dry run makes and removes nothing.
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProfile } from '../unit/sbpl-checker.js';
import { srt, tempDir, type DryRunPlan } from './helpers.js';

/** The macOS plan's profile and every -D parameter of its argv (the proxy's ports given). */
function macPlan(out: string): { plan: DryRunPlan; profile: string; params: [string, string][] } {
  const plan = JSON.parse(out) as DryRunPlan;
  const params = plan.argv.flatMap((a, i) => (plan.argv[i - 1] === '-D' ? [[a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1).replace(/(HTTP|SOCKS)_PORT$/, '40000')] as [string, string]] : []));
  return { plan, profile: plan.argv[plan.argv.indexOf('-p') + 1]!, params };
}

/** Every entry under `dir`, with its type, mode, size, modification time and content. */
function listing(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort().map((rel) => {
    const p = join(dir, rel);
    const st = lstatSync(p);
    const content = st.isFile() ? createHash('sha256').update(readFileSync(p)).digest('hex') : '';
    return `${rel} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${content}`;
  });
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
    const r = await srt(['--dry-run', '--json', '--platform', 'macos', '--deny-read', '~/.ssh', '--allow-domain', 'localhost:5432', '--', 'ls', "it's here"], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    const { plan, profile, params } = macPlan(r.stdout);
    expect([plan.version, plan.platform]).toEqual([1, 'macos']);
    expect(plan.command).toEqual(['ls', "it's here"]);
    expect(plan.argv.slice(plan.argv.indexOf('--'))).toEqual(['--', 'ls', "it's here"]);
    expect(plan.argv[0]).toBe('/usr/bin/sandbox-exec');
    expect(plan.filesystem.profile).toBe(profile);
    expect(profile).toMatch(/^\(version 1\)\n/);
    expect(profile).toContain('(deny default (with message "srt-');
    expect(profile.replace(/^\s*;.*$/gm, '')).not.toContain(home.path); // paths travel as parameters
    const ev = loadProfile(profile, params);
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
    expect(plan.env.set.HTTP_PROXY).toBe('http://127.0.0.1:HTTP_PORT');
    expect(plan.env.set.TMPDIR).toBe(join(plan.runDir, 'tmp'));
    expect(plan.runDir).toMatch(/\/\.srt\/run\/\d+-[\w-]+$/);
    expect(existsSync(plan.runDir)).toBe(false); // planned, never made
  });

  it('a symlink whose name matches a deny glob is denied where it leads', async () => {
    mkdirSync(join(home.path, 'keys'), { recursive: true });
    mkdirSync(join(home.path, 'data'), { recursive: true });
    writeFileSync(join(home.path, 'data', 'secret.txt'), 'k');
    symlinkSync(join(home.path, 'data', 'secret.txt'), join(home.path, 'keys', 'link.pem'));
    const r = await srt(['--dry-run', '--json', '--platform', 'macos', '--deny-read', '~/**/*.pem', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    const { profile, params } = macPlan(r.stdout);
    const ev = loadProfile(profile, params);
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'data', 'secret.txt'), type: 'REGULAR-FILE' })).toBe(false);
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'data', 'other.txt'), type: 'REGULAR-FILE' })).toBe(true);
    expect(ev.allows({ op: 'file-read-data', path: join(home.path, 'x', 'new.pem'), type: 'REGULAR-FILE' })).toBe(false);
  });

  it('--dry-run --platform linux prints the bubblewrap plan; with --json its argv, mounts and environment', async () => {
    const r = await srt(['--dry-run', '--platform', 'linux', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# bubblewrap command\n\S*bwrap /);
    expect(r.stdout).not.toContain('(version 1)');
    const j = await srt(['--dry-run', '--json', '--platform', 'linux', '--', 'true'], { home: home.path, cwd: work.path });
    expect(j.exitCode, j.stderr).toBe(0);
    const plan = JSON.parse(j.stdout) as DryRunPlan;
    expect([plan.version, plan.platform, plan.command]).toEqual([1, 'linux', ['true']]);
    expect(plan.argv[0]).toMatch(/\/bwrap$/);
    expect(plan.argv.slice(plan.argv.lastIndexOf('--'))).toEqual(['--', 'true']);
    expect(plan.argv).toContain('--unshare-net');
    expect(plan.filesystem.writable).toContain(work.path);
    expect(plan.filesystem.mounts).toContainEqual({ kind: 'bind', dest: work.path, source: work.path, ro: false });
    expect(plan.env.set.TMPDIR).toBe(join(plan.runDir, 'tmp'));
    expect(plan.sections.map((s) => s.title)).toContain('network');
    // The text is the same plan: its command section is the argv, quoted.
    expect(r.stdout.split('\n\n')[0]).toContain(plan.argv.slice(0, 3).join(' \\\n  '));
  });

  it('--dry-run (either platform) leaves ~/.srt byte for byte as it was: no run directory, nothing reaped', async () => {
    const srtDir = join(home.path, '.srt');
    // What a killed run leaves (its owner is gone): only a real run clears it.
    const stale = join(srtDir, 'run', '999999-stale1');
    mkdirSync(join(stale, 'tmp'), { recursive: true });
    writeFileSync(join(stale, 'tmp', 'f'), 'left\n');
    const variants = ['linux', 'macos'].flatMap((platform) => [[], ['--json']].map((json) => ['--dry-run', ...json, '--platform', platform, '--deny-read', '~/.ssh', '--', 'true']));
    // srt's own caches (~/.srt/cache: bytecode of each part of srt a run loads) are made by the
    // first run of any kind that loads that part; after that nothing changes.
    for (const args of variants) await srt(args, { home: home.path, cwd: work.path });
    const before = listing(srtDir);
    expect(before.some((l) => l.startsWith('run/999999-stale1/tmp/f '))).toBe(true);
    for (const args of variants) {
      const r = await srt(args, { home: home.path, cwd: work.path });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(listing(srtDir), args.join(' ')).toEqual(before);
    }
    rmSync(stale, { recursive: true });
  }, 300_000);

  it('running the macOS backend on Linux is refused (125) and runs nothing', async () => {
    const marker = join(work.path, 'ran');
    const r = await srt(['--platform', 'macos', '--', 'touch', marker], { home: home.path, cwd: work.path });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toContain('srt: the macOS backend runs only on macOS (sandbox-exec); use --dry-run to review its Seatbelt profile here');
    expect(existsSync(marker)).toBe(false);
    expect(listing(join(home.path, '.srt', 'run'))).toEqual([]);
  });

  it('an unknown platform is a usage error', async () => {
    const r = await srt(['--platform', 'windows', '--', 'true'], { home: home.path, cwd: work.path });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: option '--platform <name>' argument 'windows' is invalid\. must be linux or macos/);
  });
});
