// Shared e2e plumbing: run the real built `srt` binary in an isolated HOME and cwd.
import { execa, type Options, type Result } from 'execa';
import { mkdtempSync, realpathSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SRT_BIN = join(REPO, 'bin', 'srt');

/** A throwaway directory (symlinks resolved), removed by `cleanup`. */
export function tempDir(prefix = 'srt-test-'): { path: string; cleanup: () => void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Write files given as { 'rel/path': content } under `base`, creating directories. */
export function writeTree(base: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = join(base, rel);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

export interface SrtOptions extends Omit<Options, 'env'> {
  /** HOME for the run; tests always pass a temp HOME so the developer's own settings never leak in. */
  home: string;
  cwd?: string;
  env?: Record<string, string | undefined>;
}

/** Run `srt ARGS` and never throw on a non-zero exit. */
export function srt(args: string[], opts: SrtOptions): Promise<Result> {
  const { home, env, ...rest } = opts;
  return execa(process.execPath, [SRT_BIN, ...args], {
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
  } as Options) as unknown as Promise<Result>;
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
