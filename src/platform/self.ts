// srt's own files: what the next srt run executes outside any sandbox. The launcher (bin/srt and
// the `srt` links leading to it), every node the launcher may pick (dist/node-path first), srt's
// package (package.json, bin/, dist/, srt-init, node_modules/) and the packages srt
// loads at run time wherever npm put them (hoisted into a project's node_modules). When srt is
// installed under a writable root (nvm under ~, `npm install srt` in the project), the command
// could replace any of them and the next srt would run that code unsandboxed: each one inside a
// writable root is a protected path of the run (src/profiles/protected.ts).

import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { Module } from 'node:module';
import { basename, delimiter, dirname, join } from 'node:path';
import { PACKAGE_JSON, PACKAGE_ROOT } from '../paths.js';

export interface OwnFile {
  path: string;
  kind: 'file' | 'dir';
  /** For messages: `srt`, `the node srt runs with`, `srt's dependency yaml`. */
  what: string;
}

/** At most this many packages are followed from srt's dependencies (srt has a handful). */
const MAX_PACKAGES = 200;

const real = (p: string): string | undefined => {
  try { return realpathSync(p); } catch { return undefined; }
};
// (A PATH entry the user cannot search, e.g. under /root, is simply not there.)
const present = (p: string): boolean => {
  try { return lstatSync(p, { throwIfNoEntry: false }) !== undefined; } catch { return false; }
};

/** The nodes bin/srt tries, in its order: recorded at build, beside an npm global prefix, the system's. */
export function launcherNodes(root = PACKAGE_ROOT): string[] {
  let recorded: string | undefined;
  try { recorded = readFileSync(join(root, 'dist', 'node-path'), 'utf8').split('\n')[0]; } catch { /* not built */ }
  const m = /^(.*)\/lib\/node_modules\/[^/]+$/.exec(root);
  return [recorded, m ? join(m[1]!, 'bin', 'node') : undefined, '/usr/local/bin/node', '/usr/bin/node']
    .filter((n): n is string => !!n && n.startsWith('/'));
}

/** Where node's require looks for a package from a file in dir: each node_modules up the tree,
 *  then the global folders. (Not require.resolve.paths, which NODE_DEBUG=module reports as lookups.) */
function lookupPaths(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    if (basename(d) !== 'node_modules') out.push(join(d, 'node_modules'));
    if (dirname(d) === d) break;
  }
  return [...out, ...((Module as unknown as { globalPaths?: string[] }).globalPaths ?? [])];
}

/** The packages srt's own dependencies resolve to (node's lookup from each package), transitively. */
function runtimePackages(): { name: string; dir: string }[] {
  const out: { name: string; dir: string }[] = [];
  const seen = new Set<string>();
  const visit = (pkgJson: string) => {
    let deps: Record<string, string> = {};
    try {
      const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
      deps = { ...pkg.dependencies, ...pkg.optionalDependencies };
    } catch { return; }
    const paths = lookupPaths(dirname(pkgJson));
    for (const name of Object.keys(deps)) {
      const dir = paths.map((d) => join(d, name)).find((d) => existsSync(join(d, 'package.json')));
      if (!dir || seen.has(dir) || seen.size >= MAX_PACKAGES) continue;
      seen.add(dir);
      out.push({ name, dir });
      visit(join(dir, 'package.json'));
    }
  };
  visit(PACKAGE_JSON);
  return out;
}

// One search per process (a run asks several times), again if PATH changes (the links on it).
let found: { path: string | undefined; files: OwnFile[] } | undefined;

/** Every file or directory of srt's own that a later srt run executes or loads (see above). */
export function ownFiles(): OwnFile[] {
  if (!found || found.path !== process.env.PATH) found = { path: process.env.PATH, files: findOwnFiles() };
  return found.files;
}

function findOwnFiles(): OwnFile[] {
  const files: OwnFile[] = [
    { path: PACKAGE_JSON, kind: 'file', what: 'srt' },
    ...['bin', 'dist', join('init', 'build'), 'node_modules'].map((d) => ({ path: join(PACKAGE_ROOT, d), kind: 'dir' as const, what: 'srt' })),
  ];
  // The `srt` links a shell or npm runs: on PATH, npm's local `.bin`, a global prefix's bin/.
  const launcher = real(join(PACKAGE_ROOT, 'bin', 'srt'));
  const links = (process.env.PATH ?? '').split(delimiter).filter((d) => d.startsWith('/')).map((d) => join(d, 'srt'));
  if (basename(dirname(PACKAGE_ROOT)) === 'node_modules') links.push(join(dirname(PACKAGE_ROOT), '.bin', 'srt'));
  const prefix = /^(.*)\/lib\/node_modules\/[^/]+$/.exec(PACKAGE_ROOT);
  if (prefix) links.push(join(prefix[1]!, 'bin', 'srt'));
  for (const l of new Set(links)) {
    if (launcher && present(l) && real(l) === launcher) files.push({ path: l, kind: 'file', what: 'the srt launcher' });
  }
  for (const n of new Set([...launcherNodes(), process.execPath])) {
    if (present(n)) files.push({ path: n, kind: 'file', what: 'the node srt runs with' });
  }
  for (const p of runtimePackages()) files.push({ path: p.dir, kind: 'dir', what: `srt's dependency ${p.name}` });
  // Where each lands too: a writable root is a real path, and a link is protected as a link.
  const landed = files.flatMap((f) => {
    const r = real(f.path);
    return r && r !== f.path ? [{ ...f, path: r }] : [];
  });
  return [...files, ...landed];
}
