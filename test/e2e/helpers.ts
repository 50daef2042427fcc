// Shared e2e plumbing: run the real built `srt` binary in an isolated HOME and cwd.
import { spawn, type ChildProcess } from 'node:child_process';
import { execa, type Options } from 'execa';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SRT_BIN = join(REPO, 'bin', 'srt');

/** A throwaway directory (symlinks resolved), removed by `cleanup` (`removeTree`). */
export function tempDir(prefix = 'srt-test-'): { path: string; cleanup: () => void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  return { path, cleanup: () => removeTree(path) };
}

/**
 * Remove `path` and everything below it, also what a test (or a failed one) left unwritable or
 * unsearchable: CI's unprivileged user cannot delete the entries of a 0555 directory, root can.
 */
export function removeTree(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    openUp(path);
    rmSync(path, { recursive: true, force: true });
  }
}

/** u+rwx on `path` and every directory below it; symlinks are not followed. */
function openUp(path: string): void {
  let st;
  try {
    st = lstatSync(path);
    if (!st.isDirectory()) return;
    chmodSync(path, (st.mode & 0o7777) | 0o700);
  } catch {
    return; // gone, or another user's: nothing this user could open up
  }
  for (const name of readdirSync(path)) openUp(join(path, name));
}

/** A fresh empty directory under `root` for each call: `root/0`, `root/1`, … */
export function scratchBases(root: () => string): () => string {
  let n = 0;
  return () => {
    const base = join(root(), String(n++));
    mkdirSync(base, { recursive: true });
    return base;
  };
}

/** Fresh `home` and `cwd` directories in a `base` under `root` for each call (`root/0/home`, `root/0/cwd`, …). */
export function scratchDirs(root: () => string): () => { base: string; home: string; cwd: string } {
  const bases = scratchBases(root);
  return () => {
    const base = bases();
    const home = join(base, 'home');
    const cwd = join(base, 'cwd');
    mkdirSync(home);
    mkdirSync(cwd);
    return { base, home, cwd };
  };
}

/** Write files given as { 'rel/path': content } under `base`, creating directories. */
export function writeTree(base: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = join(base, rel);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

/** How the harness starts srt: `supervisor: false` runs it as on a kernel without the
 *  protected-path supervisor (test/fixtures/without-supervisor.cjs). */
export interface SrtMode {
  supervisor?: boolean;
}

/** The mode that makes srt use placeholders instead of the seccomp supervisor. */
export const NO_SUPERVISOR: SrtMode = { supervisor: false };

/** node's arguments that start the srt `launcher` in `mode`. */
export function srtArgv(args: string[], mode: SrtMode = {}, launcher = SRT_BIN): string[] {
  return mode.supervisor === false ? [join(REPO, 'test', 'fixtures', 'without-supervisor.cjs'), launcher, ...args] : [launcher, ...args];
}

export interface SrtOptions extends Omit<Options, 'env'>, SrtMode {
  /** HOME for the run; tests always pass a temp HOME so the developer's own settings never leak in. */
  home: string;
  cwd?: string;
  env?: Record<string, string | undefined>;
}

/** What a finished `srt` run left: its status and its text output. */
export interface SrtResult {
  exitCode?: number;
  signal?: string;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/** What `srt --dry-run --json` prints (docs/cli.md, "Dry run"): the fields tests read. */
export interface DryRunPlan {
  version: number;
  platform: string;
  command: string[];
  argv: string[];
  env: { set: Record<string, string>; unset: string[] };
  runDir: string;
  filesystem: { writable: string[]; profile?: string; params?: [string, string][]; mounts?: ({ kind: string; dest: string } & Record<string, unknown>)[] };
  sections: { title: string; lines: string[] }[];
  warnings: string[];
}

/** Run `srt ARGS` and never throw on a non-zero exit. */
export async function srt(args: string[], opts: SrtOptions): Promise<SrtResult> {
  const { home, env, supervisor, ...rest } = opts;
  return await execa(process.execPath, srtArgv(args, { supervisor }), {
    reject: false,
    stdin: 'ignore',
    timeout: 60_000,
    ...rest,
    extendEnv: false,
    env: {
      PATH: process.env.PATH,
      LANG: 'C.UTF-8',
      HOME: home,
      ...env,
    },
  } as Options) as unknown as SrtResult;
}

/** Every file node loaded in a run made with NODE_DEBUG=module (srt's CLI is CommonJS chunks). */
export function loadedFiles(stderr: string): string[] {
  return [...new Set([...stderr.matchAll(/^MODULE \d+: load "(.+?)" for module/gm)].map((m) => m[1]!))];
}

const running = new Set<import('node:child_process').ChildProcess>();

/** Remember a background srt so `stopStragglers` can end it if a failed assertion skipped that. */
export function track<T extends import('node:child_process').ChildProcess>(child: T): T {
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

/** For afterAll: SIGTERM (srt cleans up and ends its sandbox) every tracked srt still running. */
export async function stopStragglers(): Promise<void> {
  await Promise.all([...running].map((child) => new Promise<void>((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.on('exit', () => { clearTimeout(force); resolve(); });
    child.kill('SIGTERM');
  })));
}

/** A shell snippet that prints `name=yes` when `cmd` succeeds inside, else `name=no`. */
export const attempt = (name: string, cmd: string) => `if ( ${cmd} ) >/dev/null 2>&1; then echo ${name}=yes; else echo ${name}=no; fi`;

/** Every `name=value` line of a sandboxed script's output. */
export function keyValues(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const m = /^(\w[\w-]*)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** The `name=yes|no` lines printed by `attempt` snippets. */
export function results(stdout: unknown): Record<string, string> {
  return Object.fromEntries(String(stdout).split('\n').filter((l) => /^\w+=(yes|no)$/.test(l)).map((l) => l.split('=') as [string, string]));
}

/** Host processes whose command line contains `marker`. */
export function processesWith(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes(marker)) out.push(`${pid}: ${cmd}`);
    } catch { /* gone */ }
  }
  return out;
}

export interface Background {
  child: ChildProcess;
  /** Everything before the `ready` line. */
  firstLine: string;
  out: () => string;
  exit: Promise<number | null>;
}

/** Start srt in the background (tracked); resolves once the command printed a `ready` line. */
export function startBackground(args: string[], home: string, cwd: string, mode: SrtMode = {}): Promise<Background> {
  const child = track(spawn(process.execPath, srtArgv(args, mode), { cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'ignore'] }));
  const exit = new Promise<number | null>((res) => child.on('exit', (code, sig) => res(code ?? (sig ? -1 : null))));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no ready line: ${out}`)); }, 25_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /^(.*)\nready\n/s.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, firstLine: m[1]!, out: () => out, exit }); }
    });
  });
}

/**
 * Run srt with a replaced /etc, which a test cannot write: `managedDir` as the fixed managed
 * location /etc/srt, and optionally `hosts` as /etc/hosts (names the proxy resolves instantly).
 * Runs inside `bwrap --dev-bind / /` with a replacement /etc made of symlinks to the real entries
 * (works as root and unprivileged, touches nothing on the host). `scratch` holds the replacement.
 */
export async function srtManaged(
  managedDir: string | null,
  args: string[],
  opts: { home: string; cwd: string; scratch: string; hosts?: string; env?: Record<string, string> },
): Promise<SrtResult> {
  const base = mkdtempSync(join(opts.scratch, 'etc-'));
  const fakeEtc = join(base, 'etc');
  const realEtc = join(base, 'real-etc');
  mkdirSync(fakeEtc, { recursive: true });
  mkdirSync(realEtc);
  const replaced: Record<string, string> = {};
  if (managedDir !== null) replaced.srt = managedDir;
  if (opts.hosts !== undefined) {
    replaced.hosts = join(base, 'hosts');
    writeFileSync(replaced.hosts, opts.hosts);
  }
  for (const name of readdirSync('/etc')) {
    if (!(name in replaced)) symlinkSync(join(realEtc, name), join(fakeEtc, name));
  }
  for (const [name, target] of Object.entries(replaced)) symlinkSync(target, join(fakeEtc, name));
  return await execa(
    'bwrap',
    ['--dev-bind', '/', '/', '--bind', '/etc', realEtc, '--bind', fakeEtc, '/etc', '--chdir', opts.cwd, '--', process.execPath, SRT_BIN, ...args],
    { reject: false, stdin: 'ignore', timeout: 60_000, extendEnv: false, env: { PATH: process.env.PATH, LANG: 'C.UTF-8', HOME: opts.home, ...opts.env } },
  ) as unknown as SrtResult;
}
