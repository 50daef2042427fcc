// Placeholder mount points for missing protected paths, and the state file that records them
// (`~/.srt/state/<pid>.json`) so what a run killed with SIGKILL leaves is found and cleared by the
// next run (`reapStale`). A placeholder is removed only while it is still empty, and never while
// a live run has it recorded.

import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProtectedTarget } from '../profiles/protected.js';
import { removeTree } from './remove.js';

interface RunState {
  pid: number;
  /** Process start time (clock ticks since boot) guarding against pid reuse; null if unknown. */
  startTime: number | null;
  placeholders: ProtectedTarget[];
  /** Protected paths missing at the start that no placeholder covers: set aside if they appear. */
  watched?: string[];
}

function stateDir(home: string): string {
  return join(home, '.srt', 'state');
}

function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22, counted after the parenthesised command name (which may contain spaces).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return null;
  }
}

function isLive(state: Pick<RunState, 'pid' | 'startTime'>): boolean {
  const now = processStartTime(state.pid);
  if (now === null) return false;
  return state.startTime === null || state.startTime === now;
}

/** Every state file under `~/.srt/state` (unparseable ones skipped). */
function readStates(home: string): { file: string; state: RunState }[] {
  const dir = stateDir(home);
  let names: string[];
  try { names = readdirSync(dir); } catch { return []; }
  const out: { file: string; state: RunState }[] = [];
  for (const name of names) {
    if (!/^\d+\.json$/.test(name)) continue;
    const file = join(dir, name);
    try {
      const s = JSON.parse(readFileSync(file, 'utf8')) as RunState;
      if (typeof s.pid === 'number' && Array.isArray(s.placeholders)) out.push({ file, state: s });
    } catch { /* being written or foreign: not ours to judge */ }
  }
  return out;
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 10_000;

/**
 * Serialise placeholder bookkeeping between concurrent runs of one user: a run records what it
 * binds before another may decide to delete it. A lock older than LOCK_STALE_MS (its holder was
 * killed mid-section) is taken over.
 */
function withLock<T>(home: string, fn: () => T): T {
  mkdirSync(stateDir(home), { recursive: true, mode: 0o700 }); // a run without placeholders has not made it
  const lock = join(stateDir(home), '.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) { rmdirSync(lock); continue; }
      } catch { continue; }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock} (remove it if no srt is running)`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    try { rmdirSync(lock); } catch { /* taken over */ }
  }
}

/** Is the placeholder still one srt made: an empty file or an empty directory, not a link? */
function isPlaceholder(ph: ProtectedTarget): boolean {
  try {
    const st = lstatSync(ph.path);
    if (ph.kind === 'dir') return st.isDirectory() && readdirSync(ph.path).length === 0;
    return st.isFile() && st.size === 0;
  } catch {
    return false;
  }
}

/** Remove a placeholder only while it still is one: an empty file or directory, not a link. */
function removePlaceholder(ph: ProtectedTarget): void {
  try {
    const st = lstatSync(ph.path);
    if (ph.kind === 'dir' && st.isDirectory()) rmdirSync(ph.path); // fails unless empty: then it is not a placeholder any more
    else if (ph.kind === 'file' && st.isFile() && st.size === 0) unlinkSync(ph.path);
  } catch { /* gone or no longer empty: leave it */ }
}

/**
 * A watched protected path that appeared (the command made it): rename it to `NAME.srt-disabled`,
 * so nothing reads it any more and nothing is lost. The command may have taken write permission
 * off the directory (`chmod a-w .git`): it is restored for the rename, then put back.
 * Returns the new name, or null when the path does not exist; throws when it cannot be moved.
 */
export function setAside(path: string): string | null {
  if (!lstatSync(path, { throwIfNoEntry: false })) return null;
  let aside = `${path}.srt-disabled`;
  for (let i = 2; lstatSync(aside, { throwIfNoEntry: false }); i++) aside = `${path}.srt-disabled-${i}`;
  try {
    renameSync(path, aside);
  } catch (e) {
    if (!['EACCES', 'EPERM'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
    const parent = dirname(path);
    const mode = statSync(parent).mode & 0o7777;
    chmodSync(parent, mode | 0o300);
    try { renameSync(path, aside); } finally { chmodSync(parent, mode); }
  }
  return aside;
}

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true; // this run's own (a library sandbox's run directory and watches)
  if (processStartTime(pid) !== null) return true;
  if (process.platform === 'linux') return false;
  // No /proc (macOS): signal 0 tells whether the pid exists (EPERM: it does, another user's).
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The run directories (and watch fences) under `runRoot` whose owner is gone: each pid looked up once. */
function deadRunDirNames(runRoot: string): string[] {
  const alive = new Map<string, boolean>();
  return readdirSync(runRoot).filter((n) => {
    const pid = /^(\d+)-/.exec(n)?.[1];
    if (pid === undefined) return false;
    if (!alive.has(pid)) alive.set(pid, pidAlive(Number(pid)));
    return !alive.get(pid);
  });
}

/** What runs killed with SIGKILL left behind (read only; `reapStale` removes it). */
export interface StaleState {
  /** Placeholders of dead runs that are still srt's (empty) and that no live run holds. */
  placeholders: ProtectedTarget[];
  /** Run directories under `~/.srt/run` whose owner is gone. */
  runDirs: string[];
  /** State files of dead runs. */
  stateFiles: string[];
  /** Protected paths a dead run's sandbox created where no placeholder stood (set aside by reapStale). */
  watched: string[];
}

export function findStale(home: string): StaleState {
  const runRoot = join(home, '.srt', 'run');
  const states = readStates(home);
  const liveHeld = new Set<string>();
  for (const { state } of states) if (isLive(state)) for (const ph of state.placeholders) liveHeld.add(ph.path);
  const dead = states.filter(({ state }) => !isLive(state));
  const placeholders = dead.flatMap(({ state }) => state.placeholders).filter((ph) => !liveHeld.has(ph.path) && isPlaceholder(ph));
  let runDirs: string[] = [];
  try {
    runDirs = deadRunDirNames(runRoot).map((n) => join(runRoot, n));
  } catch { /* no run dir yet */ }
  const watched = [...new Set(dead.flatMap(({ state }) => state.watched ?? []))].filter((p) => lstatSync(p, { throwIfNoEntry: false }));
  return { placeholders: [...new Map(placeholders.map((p) => [p.path, p])).values()], runDirs, stateFiles: dead.map((d) => d.file), watched };
}

/**
 * Clear what runs killed with SIGKILL left behind: their placeholders that are still empty and
 * that no live run recorded too, their run directories under `~/.srt/run` and their state
 * files. A live run's files are never touched (the owner pid and its start time are checked).
 */
export function reapStale(home: string): string[] {
  const runRoot = join(home, '.srt', 'run');
  const deadStates = readStates(home).filter(({ state }) => !isLive(state));
  let deadRunDirs: string[] = [];
  try {
    deadRunDirs = deadRunDirNames(runRoot);
  } catch { /* no run dir yet */ }
  if (deadStates.length === 0 && deadRunDirs.length === 0) return [];
  const notes: string[] = [];
  withLock(home, () => {
    const liveHeld = new Set<string>();
    for (const { state } of readStates(home)) if (isLive(state)) for (const ph of state.placeholders) liveHeld.add(ph.path);
    for (const { file, state } of deadStates) {
      for (const ph of [...state.placeholders].reverse()) if (!liveHeld.has(ph.path)) removePlaceholder(ph);
      for (const path of state.watched ?? []) {
        try {
          const aside = setAside(path);
          if (aside) notes.push(`moved ${path} to ${aside}: it was created inside the sandbox of an srt run (pid ${state.pid}) killed before it could clean up`);
        } catch (e) {
          notes.push(`${path} was created inside the sandbox of an srt run (pid ${state.pid}) killed before it could clean up, and could not be moved aside (${(e as Error).message}); remove it`);
        }
      }
      try { unlinkSync(file); } catch { /* another run reaped it */ }
    }
    for (const name of deadRunDirs) removeTree(join(runRoot, name));
  });
  return notes;
}

export class PlaceholderSet {
  private readonly file: string;
  /** Placeholders this run may remove at the end (made by it, or shared with a live run). */
  private owned: ProtectedTarget[] = [];
  private recorded = false;
  private done = false;

  constructor(private readonly home: string) {
    this.file = join(stateDir(home), `${process.pid}.json`);
  }

  /**
   * Record, then create, under the lock. `wanted`: this run's own placeholders. `bound`: every
   * path it binds read-only; those that other runs recorded as placeholders are recorded here
   * too, because deleting a mount point in another mount namespace detaches the mount there.
   * Those of live runs are shared (the last run removes them); those of dead runs are stale and
   * left to `reapStale` of a later run. Any bound path missing by now is (re)created so bwrap finds it.
   */
  create(wanted: ProtectedTarget[], bound: ReadonlyMap<string, 'file' | 'dir'>, watched: string[] = []): void {
    // A library sandbox's next run: the last run's cleanup is done, this one's starts afresh.
    this.owned = [];
    this.recorded = false;
    this.done = false;
    const boundSet = new Set(bound.keys());
    if (wanted.length === 0 && boundSet.size === 0 && watched.length === 0) return;
    mkdirSync(stateDir(this.home), { recursive: true, mode: 0o700 });
    withLock(this.home, () => {
      const live = new Map<string, ProtectedTarget>();
      const stale = new Map<string, ProtectedTarget>();
      for (const { state } of readStates(this.home)) {
        if (state.pid === process.pid) continue;
        const alive = isLive(state);
        for (const ph of state.placeholders) if (boundSet.has(ph.path)) (alive ? live : stale).set(ph.path, ph);
      }
      const all = new Map<string, ProtectedTarget>([...stale, ...live]);
      for (const ph of wanted) if (!all.has(ph.path)) all.set(ph.path, ph);
      // A placeholder that existed when the plan was made but was removed since (its run
      // ended meanwhile) is made again: bwrap needs it, and the path must stay masked.
      for (const [path, kind] of bound) {
        if (all.has(path)) continue;
        try { statSync(path); } catch { all.set(path, { path, kind }); }
      }
      if (all.size === 0 && watched.length === 0) return;
      const state: RunState = {
        pid: process.pid, startTime: processStartTime(process.pid), placeholders: [...all.values()],
        ...(watched.length ? { watched } : {}),
      };
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, JSON.stringify(state) + '\n', { mode: 0o600 });
      renameSync(tmp, this.file);
      this.recorded = true;
      for (const ph of all.values()) {
        let made = false;
        try {
          if (ph.kind === 'dir') mkdirSync(ph.path, { mode: 0o755 });
          else closeSync(openSync(ph.path, 'wx', 0o444));
          made = true;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        }
        // Made here or shared with a live run: ours to remove last. Existing and nobody's (made
        // by the user meanwhile) or stale: never ours.
        if (made || live.has(ph.path)) this.owned.push(ph);
      }
    });
  }

  /** Synchronous so it can run from exit and signal handlers. Idempotent. */
  cleanup(): void {
    if (this.done || !this.recorded) return;
    this.done = true;
    const run = () => {
      const others = new Set<string>();
      for (const { state } of readStates(this.home)) {
        if (state.pid === process.pid || !isLive(state)) continue;
        for (const ph of state.placeholders) others.add(ph.path);
      }
      for (const ph of [...this.owned].reverse()) if (!others.has(ph.path)) removePlaceholder(ph);
      try { unlinkSync(this.file); } catch { /* already gone */ }
    };
    try {
      withLock(this.home, run);
    } catch {
      run(); // the lock is unobtainable: still never leave our own placeholders behind
    }
  }
}
