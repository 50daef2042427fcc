// Discovery: protected paths below every writable root (a small tree walked in this process,
// else one walk of srt-init, or ripgrep and find without it) and wrap-time expansion of read globs.
// Both are bounded in time; a search that runs out of time is an error (fail closed).

import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { globMatcher, isGlob } from '../glob.js';
import type { Landing } from '../profiles/landing.js';
import { gitConfigValue, parseGitConfig, type GitConfigEntry } from '../profiles/gitconfig.js';
import { isProtectedDirName, isProtectedLink, protectedListArgs, protectedSearchArgs } from '../profiles/protected.js';
import type { GitFile, RepoHooks, RootScan } from '../profiles/protected-plan.js';
import { findSystemTool } from './deps.js';
import { findInitHelper } from './init-helper.js';
import { cacheFileWriter, fnv64, openCacheFile } from './private-cache.js';
import { resolveLanding } from './landing.js';
import { walkProtected } from './search-walk.js';
import { sandboxMay } from './reach.js';
import type { TreeWatch } from './tree-watch.js';

const SEARCH_TIMEOUT_MS = 10_000;
const MAX_OUTPUT = 64 * 1024 * 1024;

export class SearchError extends Error {}

interface RgResult { files: string[]; timedOut: boolean }

function rg(args: string[], cwd: string): Promise<RgResult> {
  const bin = findSystemTool('rg');
  if (!bin) return Promise.reject(new SearchError('ripgrep (rg) is not installed; srt needs it to find protected paths (apt-get install ripgrep)'));
  return new Promise((resolvePromise, reject) => {
    execFile(bin, args, { cwd, timeout: SEARCH_TIMEOUT_MS, maxBuffer: MAX_OUTPUT, killSignal: 'SIGKILL' }, (err, stdout) => {
      const files = stdout.split('\n').filter(Boolean);
      if (!err) return resolvePromise({ files, timedOut: false });
      const e = err as Omit<NodeJS.ErrnoException, 'code'> & { killed?: boolean; code?: number | string };
      if (e.killed) return resolvePromise({ files, timedOut: true });
      // rg exits 1 when nothing matched and 2 on partial errors (unreadable dirs): keep what it found.
      if (e.code === 1 || e.code === 2) return resolvePromise({ files, timedOut: false });
      reject(new SearchError(`ripgrep failed: ${e.message}`));
    });
  });
}

/** Parse a `.git` file (`gitdir: X`) and its git dir's `commondir`. */
export function readGitFile(file: string): GitFile | null {
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(file, 'utf8'));
    if (!m) return null;
    const gitDir = resolve(dirname(file), m[1]!);
    let commonDir = gitDir;
    try {
      commonDir = resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim());
    } catch { /* a submodule: no commondir */ }
    let worktreeDirs: string[] = [];
    if (commonDir !== gitDir) {
      try {
        worktreeDirs = readdirSync(join(commonDir, 'worktrees'), { withFileTypes: true })
          .filter((e) => e.isDirectory()).map((e) => join(commonDir, 'worktrees', e.name));
      } catch { /* none */ }
    }
    return { file, gitDir, commonDir, worktreeDirs };
  } catch {
    return null;
  }
}

/** Symlinks with a protected name below root, to depth+2 (rg lists no symlinks), relative. */
function findLinks(root: string, depth: number): Promise<RgResult> {
  const bin = findSystemTool('find');
  if (!bin) return Promise.reject(new SearchError('find is not installed; srt needs it to find protected symlinks (apt-get install findutils)'));
  const args = ['-P', '.', '-maxdepth', String(depth + 2), '-type', 'l', '-print'];
  return new Promise((resolvePromise, reject) => {
    execFile(bin, args, { cwd: root, timeout: SEARCH_TIMEOUT_MS, maxBuffer: MAX_OUTPUT, killSignal: 'SIGKILL' }, (err, stdout) => {
      const files = stdout.split('\n').filter(Boolean).map((f) => f.replace(/^\.\//, '')).filter(isProtectedLink);
      if (!err) return resolvePromise({ files, timedOut: false });
      const e = err as Omit<NodeJS.ErrnoException, 'code'> & { killed?: boolean; code?: number | string };
      if (e.killed) return resolvePromise({ files, timedOut: true });
      // find exits 1 on unreadable directories: keep what it found.
      if (e.code === 1) return resolvePromise({ files, timedOut: false });
      reject(new SearchError(`find failed: ${e.message}`));
    });
  });
}

/**
 * rg's and find's listings in one walk of srt-init (init/listing.c): regular files with a
 * protected name, and every symlink (the protected ones picked here), relative. srt-init exits
 * 125 with a message on anything that would leave the listing incomplete.
 */
function listWithHelper(helper: string, root: string, depth: number, home?: string): Promise<{ files: RgResult; links: RgResult; shut: string[] }> {
  const args = protectedListArgs(depth);
  const record = home !== undefined ? walkRecord(home, root, depth) : undefined;
  return new Promise((resolvePromise, reject) => {
    runHelper(helper, record ? [...args, '--cache'] : args, root, record, (err, timedOut, stdout, stderr) => {
      let written = false;
      try {
        if (err && !timedOut) return reject(new SearchError(`the protected-path search failed: ${stderr.toString().trim() || err.message}`));
        const files: string[] = [];
        const links: string[] = [];
        const shut: string[] = [];
        for (let at = 0, end = stdout.indexOf(0); end >= 0; at = end + 1, end = stdout.indexOf(0, at)) {
          const kind = String.fromCharCode(stdout[at]!);
          // 'K': the record that came in stands (nothing was written); the empty one is dropped.
          if (kind === 'C' || kind === 'K') {
            written = kind === 'C' && !timedOut;
            continue;
          }
          const raw = stdout.subarray(at + 1, end);
          const path = raw.toString('utf8');
          const list = kind === 'f' ? files : kind === 'u' ? shut : kind === 'l' && isProtectedLink(path) ? links : undefined;
          if (!list) continue;
          // A path that is not UTF-8 cannot be named to bubblewrap or the supervisor: refused
          // where the part srt would protect holds such a name.
          if (!decodes(raw) && !protectedBelow(kind, path)) {
            return reject(new SearchError(`srt cannot protect ${JSON.stringify(join(root, path))}: its path is not valid UTF-8; rename it`));
          }
          list.push(path);
        }
        resolvePromise({ files: { files, timedOut }, links: { files: links, timedOut }, shut });
      } finally {
        if (written) record?.out.commit();
        else record?.out.discard();
      }
    });
  });
}

/**
 * srt-init's record of its last walk of `root` (init/listing.c, --cache: each directory's names
 * with the stamp it had before they were read), under ~/.srt/cache/tree, which no sandbox can
 * write; `in` is read by the walk (absent: it reads everything), `out` receives the new one,
 * kept only when written whole (none is written when it would repeat `in` byte for byte). A record that is not the user's alone is not read; where none
 * can be written (a directory on the way not the user's alone), the walk goes without.
 */
function walkRecord(home: string, root: string, depth: number): { in?: number; out: NonNullable<ReturnType<typeof cacheFileWriter>> } | undefined {
  const path = walkRecordPath(home, root, depth);
  const out = cacheFileWriter(home, path);
  if (!out) return undefined;
  const input = openCacheFile(home, path);
  return { ...(input !== undefined ? { in: input } : {}), out };
}

/** Where the record of srt-init's walk of `root` to `depth`+2 is kept. */
const walkRecordPath = (home: string, root: string, depth: number) =>
  join(home, '.srt', 'cache', 'tree', `${fnv64(`${root}\0${protectedListArgs(depth).join('\0')}`)}.walk`);

/** srt-init's walk, with the record's descriptors as its stdin and descriptor 3; stopped after
 *  SEARCH_TIMEOUT_MS or past MAX_OUTPUT bytes of listing. */
function runHelper(helper: string, args: string[], cwd: string, record: ReturnType<typeof walkRecord> | undefined,
  done: (err: Error | null, timedOut: boolean, stdout: Buffer, stderr: Buffer) => void): void {
  const stdio: ('ignore' | 'pipe' | number)[] = [record?.in ?? 'ignore', 'pipe', 'pipe', ...(record ? [record.out.fd] : [])];
  let child;
  try {
    child = spawn(helper, args, { cwd, stdio });
  } catch (e) {
    done(e as Error, false, Buffer.alloc(0), Buffer.alloc(0));
    return;
  } finally {
    if (record?.in !== undefined) closeSync(record.in);
    if (record) closeSync(record.out.fd);
  }
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let size = 0;
  let timedOut = false;
  let tooBig = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, SEARCH_TIMEOUT_MS);
  child.stdout!.on('data', (b: Buffer) => {
    size += b.length;
    if (size > MAX_OUTPUT) {
      tooBig = true;
      child.kill('SIGKILL');
    } else out.push(b);
  });
  child.stderr!.on('data', (b: Buffer) => err.push(b));
  let failed: Error | undefined;
  child.on('error', (e) => { failed = e; });
  child.on('close', (code, signal) => {
    clearTimeout(timer);
    const why = failed ?? (tooBig ? new Error(`its listing passed ${MAX_OUTPUT} bytes`) : code === 0 ? null : new Error(`exited ${code ?? signal}`));
    done(why, timedOut, Buffer.concat(out), Buffer.concat(err));
  });
}

const decodes = (raw: Uint8Array) => {
  try {
    STRICT_UTF8.decode(raw);
    return true;
  } catch {
    return false;
  }
};

/** A file below a protected directory whose own path decodes: the directory is what is kept. */
function protectedBelow(kind: string, path: string): boolean {
  const segs = path.split('/');
  const i = segs.findIndex(isProtectedDirName);
  return kind === 'f' && i >= 0 && i < segs.length - 1 && !segs.slice(0, i + 1).join('/').includes('\uFFFD');
}

function readConfig(file: string): GitConfigEntry[] {
  try {
    return parseGitConfig(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

/** A git dir as git recognises one: HEAD, with objects/ and refs/ (or a commondir) beside it. */
export function isGitDirectory(dir: string): boolean {
  try {
    if (!lstatSync(dir).isDirectory()) return false;
    const head = lstatSync(join(dir, 'HEAD'));
    if (!head.isFile() && !head.isSymbolicLink()) return false;
    return existsSync(join(dir, 'commondir')) || (statSync(join(dir, 'objects')).isDirectory() && statSync(join(dir, 'refs')).isDirectory());
  } catch {
    return false;
  }
}

/** A real repository's `.git` (SPEC §2.4: a directory with HEAD, or a `.git` file). */
function isRepository(dotGit: string): boolean {
  try {
    const st = statSync(dotGit);
    return st.isFile() || statSync(join(dotGit, 'HEAD')).isFile();
  } catch {
    return false;
  }
}

/** Does a repository hold `dir` (a work tree above it, or it lies inside a git dir)? */
function inRepository(dir: string): boolean {
  if (dir.split('/').includes('.git')) return true;
  for (let d = dirname(dir); ; d = dirname(d)) {
    if (isRepository(join(d, '.git'))) return true;
    if (d === '/') return false;
  }
}

/**
 * Would the sandboxed command reach `rel` below `root`? A root caller's search enters every
 * directory, but another user's mode-700 directory under /tmp stays shut to the command
 * (reach.ts), and bubblewrap cannot bind anything inside it.
 */
function sandboxReachable(root: string): (rel: string) => boolean {
  const passable = new Map<string, boolean>();
  const pass = (dir: string): boolean => {
    let ok = passable.get(dir);
    if (ok === undefined) {
      let st;
      try { st = lstatSync(dir); } catch { st = undefined; }
      ok = !st || sandboxMay(st, 'x');
      passable.set(dir, ok);
    }
    return ok;
  };
  return (rel) => {
    const parts = rel.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) if (!pass(join(root, ...parts.slice(0, i)))) return false;
    return true;
  };
}

export interface ProtectedScan {
  roots: RootScan[];
  /** The git dir of every repository found, with its work tree (bare: the git dir itself). */
  repos: { gitDir: string; workTree: string }[];
  repoHooks: RepoHooks[];
  workTrees: string[];
  globalHooksPath?: string;
}

/** What the search listed below one root (relative paths), before anything found is read. */
export interface RootListing {
  root: string;
  isGitDir?: boolean;
  /** Files with a protected name (ripgrep). */
  files: string[];
  /** Symlinks with a protected name (find). */
  links: string[];
  /** Directories srt-init could not list that the command could open up or pass through. */
  shut?: string[];
}

/**
 * What another process lists below `at` to depth+2, relative: srt-init's walk (a fifth of rg's
 * and find's CPU time) where it is built, else rg and find; `timedOut` when it ran out of time.
 */
export async function toolListing(at: string, depth: number, home?: string): Promise<{ files: string[]; links: string[]; shut: string[]; timedOut: boolean }> {
  const helper = findInitHelper();
  const [files, links, shut] = 'path' in helper ? await listWithHelper(helper.path, at, depth, home).then((l) => [l.files, l.links, l.shut] as const)
    : [...await Promise.all([rg(protectedSearchArgs(depth), at), findLinks(at, depth)]), []] as const;
  return { files: files.files.map((f) => f.replace(/^\.\//, '')), links: links.files, shut: [...shut], timedOut: files.timedOut || links.timedOut };
}

/**
 * List protected names below every writable root (files and symlinks: a small tree walked in
 * this process, else toolListing; the same listing either way) to depth+2. With `watch`, each
 * root is searched through a descriptor of it, and every directory the search reads is watched
 * first (so the listing can be reused while nothing changed); without, given `home`, srt-init
 * keeps a record of its walk there and reads again only the directories changed since. Fails
 * closed: an incomplete search would leave protected paths writable.
 */
export async function listProtected(roots: { root: string; isGitDir?: boolean }[], depth: number, watch?: TreeWatch, home?: string): Promise<RootListing[]> {
  return Promise.all(roots.map(async ({ root, isGitDir }) => {
    const pinned = watch?.pin(root);
    try {
      // A writable file (allowWrite ~/.node_repl_history) holds nothing to search.
      const dir = watch ? pinned !== undefined : statSync(root, { throwIfNoEntry: false })?.isDirectory() ?? false;
      const at = pinned?.at ?? root;
      // rg --max-depth N reads the directories N-1 levels down at most; so does find -maxdepth N.
      if (pinned) watch!.tree(at, depth + 1);
      // A small tree is walked in this process (search-walk.ts), a larger one by another; one
      // that srt-init last walked (it has a record) goes to srt-init at once (the same listing).
      const recorded = !watch && home !== undefined ? walkRecordPath(home, at, depth) : undefined;
      const listed: { files: string[]; links: string[]; shut?: string[]; timedOut?: boolean } = !dir ? { files: [], links: [] }
        : (recorded !== undefined && existsSync(recorded) ? undefined : walkProtected(at, depth + 2)) ?? await toolListing(at, depth, recorded !== undefined ? home : undefined);
      if (listed.timedOut) {
        throw new SearchError(`the protected-path search below ${root} did not finish within ${SEARCH_TIMEOUT_MS / 1000}s; run srt from a smaller directory, or lower mandatoryDenySearchDepth (srt config shows which file sets it; a repository may raise it, only your own settings can lower it)`);
      }
      const listing: RootListing = { root, files: listed.files, links: listed.links, ...(listed.shut?.length ? { shut: listed.shut } : {}), ...(isGitDir ? { isGitDir } : {}) };
      return listing;
    } finally {
      pinned?.close();
    }
  }));
}

/** Search every writable root for protected paths (listProtected, then readProtected). */
export async function scanProtected(roots: { root: string; isGitDir?: boolean }[], depth: number, home: string): Promise<ProtectedScan> {
  return readProtected(await listProtected(roots, depth, undefined, home), home);
}

/**
 * What a listing means now: the names the command can reach, the `.git` files found read, every
 * git dir found, and the hooksPath of every repository found (read afresh on every call: contents
 * change without a name changing).
 */
export function readProtected(listings: RootListing[], home: string): ProtectedScan {
  const scans = listings.map(({ root, isGitDir, files, links, shut }) => {
    const reachable = sandboxReachable(root);
    const found = files.filter(reachable);
    const linkList = links.filter(reachable);
    const gitFiles: GitFile[] = [];
    const candidates = new Set([join(root, '.git'), ...found.filter((f) => f === '.git' || f.endsWith('/.git')).map((f) => join(root, f))]);
    for (const file of candidates) {
      try {
        if (!lstatSync(file).isFile()) continue;
      } catch { continue; }
      const g = readGitFile(file);
      if (g) gitFiles.push(g);
    }
    // Every git dir found, whatever its name (a bare repository, a submodule's): where a HEAD has
    // objects/ and refs/ beside it.
    const gitDirs = found.filter((f) => basename(f) === 'HEAD').map((f) => dirname(f)).filter((d) => isGitDirectory(join(root, d)));
    const shutList = (shut ?? []).filter(reachable);
    const scan: RootScan = { root, found, links: linkList, gitFiles, gitDirs, inRepo: inRepository(root), ...(shutList.length ? { shut: shutList } : {}), ...(isGitDir ? { isGitDir } : {}) };
    return scan;
  });
  // Every repository found: its git dir and work tree, for core.hooksPath.
  const repos = new Map<string, string>(); // git dir → work tree
  for (const scan of scans) {
    const { root } = scan;
    for (const rel of scan.found) {
      if (rel === '.git/HEAD') repos.set(join(root, '.git'), root);
      else if (rel.endsWith('/.git/HEAD') && !rel.includes('/modules/')) repos.set(join(root, dirname(rel)), join(root, dirname(dirname(rel))));
    }
    for (const rel of scan.links) if (rel.split('/').at(-1) === '.git') repos.set(join(root, rel), join(root, dirname(rel)));
    for (const g of scan.gitFiles) repos.set(g.commonDir, dirname(g.file));
    for (const rel of scan.gitDirs) {
      const gitDir = rel === '.' ? root : join(root, rel);
      if (!repos.has(gitDir)) repos.set(gitDir, gitDir);
    }
  }
  for (let d = listings[0] ? listings[0].root : '/'; ; d = dirname(d)) {
    if (isRepository(join(d, '.git'))) {
      const g = readGitFile(join(d, '.git'));
      repos.set(g ? g.commonDir : join(d, '.git'), d);
      break;
    }
    if (d === '/') break;
  }
  const repoHooks: RepoHooks[] = [];
  for (const [gitDir, workTree] of repos) {
    const v = gitConfigValue([...readConfig(join(gitDir, 'config')), ...readConfig(join(gitDir, 'config.worktree'))], 'core.hooksPath');
    if (v) repoHooks.push({ workTree, hooksPath: v });
  }
  const xdg = process.env.XDG_CONFIG_HOME || join(home, '.config');
  const globalHooksPath = gitConfigValue(
    [...readConfig('/etc/gitconfig'), ...readConfig(join(xdg, 'git', 'config')), ...readConfig(join(home, '.gitconfig'))], 'core.hooksPath');
  return {
    roots: scans, repos: [...repos].map(([gitDir, workTree]) => ({ gitDir, workTree })), repoHooks, workTrees: [...new Set(repos.values())],
    ...(globalHooksPath ? { globalHooksPath } : {}),
  };
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
const MAX_GLOB_ENTRIES = 2_000_000;

export interface GlobExpansion { matches: Landing[]; undecodable: Landing[]; unreadable: Landing[] }
/** A glob's expansion as paths, before they are resolved to landings. */
export interface GlobPaths { matches: string[]; undecodable: string[]; unreadable: string[] }

/**
 * Existing paths matching absolute globs, as landings: files, directories (an empty one too)
 * and symlinks (a link whose name matches is covered where it leads). Globs below one base (their
 * directory before the first segment with glob syntax) share one walk, directory by directory,
 * with names kept as bytes: a name that is not valid UTF-8 cannot be handed to bubblewrap, so
 * the directories holding such a name that could match are returned apart (`undecodable`): a
 * deny rule covers them whole, an allow rule never opens them. So are the directories srt cannot
 * read (`unreadable`): their owner may open them up during the run, from inside or outside.
 * Bounded in time and entries (fail closed).
 */
export function expandGlobs(globs: string[]): Map<string, GlobExpansion> {
  return globLandings(expandGlobPaths(globs));
}

/** Glob expansions' paths resolved to landings (where each leads now). */
export function globLandings(paths: Map<string, GlobPaths>): Map<string, GlobExpansion> {
  return new Map([...paths].map(([glob, g]) => [glob, {
    matches: g.matches.map(resolveLanding), undecodable: g.undecodable.map(resolveLanding), unreadable: g.unreadable.map(resolveLanding),
  }]));
}

/**
 * expandGlobs' walk, its results as paths. With `watch`, each base is walked through a
 * descriptor of it, and every directory is watched before it is read.
 */
export function expandGlobPaths(globs: string[], watch?: TreeWatch): Map<string, GlobPaths> {
  const deadline = Date.now() + SEARCH_TIMEOUT_MS;
  let entries = 0;
  const out = new Map<string, GlobPaths>();
  const bases = new Map<string, string[]>();
  for (const glob of new Set(globs)) {
    const segs = glob.split('/').filter(Boolean);
    const first = segs.findIndex(isGlob);
    const base = '/' + segs.slice(0, first < 0 ? segs.length : first).join('/');
    if (first < 0) {
      out.set(glob, { matches: [], undecodable: [], unreadable: [] });
      continue;
    }
    bases.set(base, [...(bases.get(base) ?? []), glob]);
  }
  for (const [base, group] of bases) {
    const first = base === '/' ? 0 : base.split('/').length - 1;
    const all = group.map((glob) => {
      const segs = glob.split('/').filter(Boolean);
      return { glob, segs, patterns: segs.map((s) => (s === '**' ? null : globMatcher(s))),
        matched: new Set<string>(), undecodable: new Set<string>(), unreadable: new Set<string>(), seen: new Set<string>() };
    });
    type State = [g: number, i: number];
    const pinned = watch?.pin(base);
    // Where a directory of the walk is read: through the base's descriptor when watching.
    const at = (dir: string) => (pinned ? pinned.at + (base === '/' ? dir : dir.slice(base.length)) : dir);
    const visit = (dir: string, states: State[]): void => {
      // Each glob's states at this directory, without those already visited or below a match.
      const todo: State[] = [];
      const add = (g: number, i: number) => {
        const x = all[g]!;
        const key = `${i}\0${dir}`;
        if (x.seen.has(key) || x.matched.has(dir)) return;
        x.seen.add(key);
        todo.push([g, i]);
        // `**` matching no directory: the next segment applies here too.
        if (x.patterns[i] === null && i < x.segs.length - 1) add(g, i + 1);
      };
      for (const [g, i] of states) add(g, i);
      if (todo.length === 0) return;
      if (Date.now() > deadline || entries > MAX_GLOB_ENTRIES) {
        throw new SearchError(`expanding ${group.join(', ')} did not finish within ${SEARCH_TIMEOUT_MS / 1000}s; use a narrower glob`);
      }
      let list;
      watch?.dir(at(dir));
      try {
        list = readdirSync(at(dir), { withFileTypes: true, encoding: 'buffer' });
      } catch (e) {
        // Unreadable to srt, so to the command now (same user, no capabilities); but not for good.
        if ((e as NodeJS.ErrnoException).code === 'EACCES') for (const [g] of todo) all[g]!.unreadable.add(dir);
        return;
      }
      entries += list.length;
      const below = new Map<string, State[]>();
      for (const entry of list) {
        let name: string | undefined;
        try {
          name = STRICT_UTF8.decode(entry.name);
        } catch { /* judged below by its lossy spelling */ }
        const isDir = entry.isDirectory(); // a symlink is not descended into, but may match
        const path = name === undefined ? '' : join(dir, name);
        for (const [g, i] of todo) {
          const x = all[g]!;
          const pattern = x.patterns[i];
          const last = i === x.segs.length - 1;
          if (name === undefined) {
            // It could match here, or (a directory) lead to a match below.
            const could = pattern === null || pattern(entry.name.toString('utf8'));
            if (could && (last || isDir)) x.undecodable.add(dir);
            continue;
          }
          if (pattern !== null && !pattern(name)) continue;
          if (last) x.matched.add(path);
          else if (isDir) {
            let next = below.get(path);
            if (!next) below.set(path, (next = []));
            next.push([g, pattern === null ? i : i + 1]);
          }
        }
      }
      for (const [path, next] of below) visit(path, next);
    };
    try {
      if (watch ? pinned !== undefined : statSync(base).isDirectory()) visit(base, all.map((_, g) => [g, first] as State));
    } catch (e) {
      if (e instanceof SearchError) throw e;
      /* no base: nothing matches */
    } finally {
      pinned?.close();
    }
    for (const x of all) {
      // The shallowest match wins: a matched directory hides everything below it.
      const shallow = [...x.matched].sort().filter((p) => {
        for (let d = dirname(p); d.length > base.length; d = dirname(d)) if (x.matched.has(d)) return false;
        return true;
      });
      out.set(x.glob, { matches: shallow, undecodable: [...x.undecodable], unreadable: [...x.unreadable] });
    }
  }
  return out;
}

/** expandGlobs for one glob. */
export function expandGlob(glob: string): GlobExpansion {
  return expandGlobs([glob]).get(glob)!;
}
