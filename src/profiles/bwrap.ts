// Policy → bubblewrap argv (pure). Every path decision is made here; the platform side only
// gathers facts (where each path lands after symlinks, what exists, glob matches) and runs it.
//
// Model: the policy names a set of paths ("nodes"). Each node gets an access state, decided by
// the most specific read rule covering it and by the write rules, and mounts are emitted
// shallow-to-deep so a deeper mount overrides a shallower one. bwrap takes every bind source
// from the host root, so each mount sets its path's state independently of its parents.
//   read:  a path is hidden when a denyRead covers it that no allowRead at least as specific
//          re-opens; an allowRead re-opens only denies of scopes it may overrule (TRUST in access.ts:
//          a repository's settings never re-open what managed, cli or user settings deny, user
//          settings never what managed or cli deny), and nothing re-opens a credential file. A
//          path writable by policy counts as allowRead of its scope (writing blind makes no sense).
//   write: under cwd, TMPDIR or allowWrite AND under no denyWrite/protected path (denyWrite wins
//          whatever its depth) AND readable.

import { dirname, join } from 'node:path';
import { globBase, isWithin } from '../glob.js';
import type { PathRule, Policy } from '../policy.js';
import { accessIndex, buildAccessRules, literalOf, SRT_OWN, type AccessRules } from './access.js';
import type { BwrapFacts } from './bwrap-facts.js';
import { bwrapLaunch } from './bwrap-launch.js';
import type { InitArgs } from './init-args.js';
import type { Landing } from './landing.js';
import type { MountOp } from './mounts.js';
import type { ProtectedTarget } from './protected.js';

/** An absolute path, then each directory above it up to "/": every path `isWithin` it is within. */
function selfAndAncestors(p: string): string[] {
  const out = [p];
  for (let a = p; a !== '/' && a !== '.'; ) out.push((a = dirname(a)));
  return out;
}

/** Does this landing stop at a write root that is a file (a name below it)? */
function belowFileRoot(l: Landing, roots: string[]): boolean {
  return l.kind === 'impossible' && l.why === 'not-dir' && l.blockedBy !== undefined && roots.includes(l.blockedBy);
}

/** A read deny the supervisor checks at every open: a path (and all below it) or a glob (every
 *  path it matches, and all below), with the paths inside it that stay readable. */
export interface GatedDeny { path: string; glob?: true; reopened: string[] }

export interface BwrapPlan {
  /** Arguments for `bwrap` (without the program name), rendered from the fields below. */
  args: string[];
  /** The same, one option with its values per group; the last: `--` and what bwrap runs. */
  argGroups: string[][];
  /** The mount operations, in order. */
  ops: MountOp[];
  /** The access model these mounts make true (test/unit/bwrap-access.test.ts holds them to it). */
  access: AccessRules;
  /** srt-init's options, when it is the sandbox's first process. */
  init?: InitArgs;
  /** Mount points srt must create on the host before the run (and remove after): none with the supervisor. */
  placeholders: ProtectedTarget[];
  /** For the supervisor: the writable roots its name rules apply in (TMPDIR excepted)… */
  protectedRoots: string[];
  /** …and every write-denied path (denyWrite and protected, as written and where it lands). */
  protectedPaths: string[];
  warnings: string[];
  /** Why the sandbox must not start (fail closed): a deny entry srt cannot resolve. */
  errors: string[];
  /** Decisions worth a `--debug` line. */
  notes: string[];
  /** The paths bound read-write (outermost only). */
  writable: string[];
  /** What runs bwrap (`LAUNCHER… bwrap ARGS`): srt-init binding the exposed host ports, or
   *  nothing when no port is exposed (bwrap is run directly). */
  launcher: string[];
  /** bwrap's `--chdir`: the helper checks it landed in the directory `landings` has for it. */
  chdir: string;
  /** Directories made snapshots (a read-only tmpfs, each entry bound back): the platform lists them
   *  in `facts.snapshots`, those a masked file's copy needs first (past a budget of entries the
   *  read gate holds the denies instead, never a copy). */
  snapshots: string[];
  /** Read-denied paths inside the writable paths, and with the supervisor every deny glob, each
   *  with the paths inside it that stay readable: the supervisor checks every open against them
   *  (`gateReads` of the filter). */
  gated: GatedDeny[];
}



function depthOf(p: string): number {
  if (p === '/') return 0;
  let n = 0;
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) n++;
  return n;
}


interface Access { read: boolean; write: boolean }

export function buildBwrapPlan(policy: Policy, facts: BwrapFacts, command: string[]): BwrapPlan {
  const warnings: string[] = [];
  const errors: string[] = [];
  const notes: string[] = [];
  const fsPolicy = policy.filesystem;
  const landing = (p: string): Landing => facts.landings.get(p) ?? { real: p, kind: 'missing', firstMissing: p };

  const existing = (l: Landing) => l.kind === 'file' || l.kind === 'dir';
  /** Globs are expanded now: the landings a glob covers; for a deny also the directories whose
   *  names bwrap cannot be given or srt cannot read, whole. */
  const expand = (r: PathRule, deny: boolean, what: string): Landing[] => {
    const matches = facts.globMatches.get(r.path) ?? [];
    notes.push(`${what} ${r.original}: ${matches.length} match(es) at wrap time`);
    if (!deny) return matches;
    const whole = facts.globUndecodable?.get(r.path) ?? [];
    for (const d of whole) warnings.push(`${what}: ${r.original}: ${d.real} holds a name that is not valid UTF-8 and may match; srt cannot name it to bubblewrap, so the whole directory is covered`);
    const closed = facts.globUnreadable?.get(r.path) ?? [];
    for (const d of closed) warnings.push(`${what}: ${r.original}: srt cannot read ${d.real} (permission denied), which may hold matches; the whole directory is covered`);
    return [...matches, ...whole, ...closed];
  };

  // Settings that do nothing here, said once rather than silently.
  const macOnly: Array<[string, boolean]> = [
    ['allowPty', policy.allowPty], ['allowAppleEvents', policy.allowAppleEvents],
    ['enableWeakerNetworkIsolation', policy.enableWeakerNetworkIsolation],
    ['network.allowLocalBinding', policy.network.allowLocalBinding],
    ['network.allowUnixSockets', policy.network.allowUnixSockets.length > 0],
  ];
  for (const [key, set] of macOnly) {
    if (set) warnings.push(`${key} only has an effect on macOS; ignored on Linux${key === 'network.allowUnixSockets' ? ' (Linux has no per-path rule: see network.allowAllUnixSockets)' : ''}`);
  }
  // --- the access model (access.ts): what the command may read and write, which the mounts
  // below make true (test/unit/bwrap-access.test.ts interprets them against it)
  const supervised = facts.seccomp?.supervisor !== undefined;
  const copies = (facts.credentials?.masked ?? []).map((m) => landing(m.path)).filter((l) => l.kind === 'file').map((l) => l.real);
  const access = buildAccessRules(policy, {
    landings: facts.landings, tmpDir: facts.tmpDir, runDir: facts.runDir,
    ...(facts.runRoot ? { runRoot: facts.runRoot } : {}),
    ...(facts.runtimeFiles ? { runtimeFiles: facts.runtimeFiles } : {}),
    ...(facts.worktree ? { worktree: facts.worktree } : {}),
    // With the supervisor a deny glob is judged at each open (the read gate), so nothing is
    // expanded and a match made during the run is covered too.
    expand, openTimeDenyGlobs: supervised, credentialDenies: facts.credentials?.deny ?? [], copies,
    // A write root that is a file is a mount point of its own, which cannot be removed or replaced
    // by a directory: nothing can appear below it, so no protected name there needs a deny (one
    // would cover the file itself, where the name cannot land, and make it read-only).
    protect: (roots) => facts.protectedTargets.filter((t) => !belowFileRoot(landing(t.path), roots))
      .map((t) => ({ path: t.path, kind: t.kind, why: t.path })),
  });
  warnings.push(...access.warnings);
  notes.push(...access.notes);
  errors.push(...access.errors);
  const model = accessIndex(access);
  const writeRoots = new Map(access.writeRoots.map((r) => [r.region.base, r.trust]));
  writeRoots.set(facts.tmpDir, SRT_OWN);
  const homeRoot = [...writeRoots.keys()].find((w) => w !== facts.tmpDir && isWithin(policy.home, w));
  if (homeRoot && !fsPolicy.disabled) {
    warnings.push(`the whole home directory ${policy.home} is writable in this sandbox (through ${homeRoot}): apart from srt's protected paths, ` +
      'the command can change any of your files there, including ones other programs run later');
  }
  const rootList = [...writeRoots.keys()];
  const writableByRoots = (p: string) => rootList.some((w) => isWithin(p, w));
  /** Directories a deny had to cover whole, because srt cannot search them. */
  const blockedDirs = new Set<string>();
  const rank = (into: Map<string, number>, path: string, trust: number) => into.set(path, Math.max(trust, into.get(path) ?? -1));

  // --- write denies as mounts: existing ones read-only; missing ones refused by the supervisor,
  // or without it kept by a placeholder
  const denyWrite = new Set<string>();
  const missingDenies: [Landing, 'file' | 'dir'][] = [];
  /** For the supervisor: every write-denied path, as written and where it lands. */
  const protectedPaths = new Set<string>();
  for (const r of access.writeDenies) {
    const l = r.landing;
    if (r.kind === 'copy' || !l) continue; // a sentinel copy is read-only itself
    if (r.written !== undefined) protectedPaths.add(r.written);
    protectedPaths.add(l.real);
    if (r.region.base !== l.real) {
      denyWrite.add(r.region.base);
      if (l.why === 'unreadable') blockedDirs.add(r.region.base);
    } else if (existing(l)) denyWrite.add(l.real);
    else if (l.kind === 'missing' && l.firstMissing) missingDenies.push([l, r.shape ?? 'file']);
    // Read-only here, but its other names may be writable: writing one changes this file too.
    if (r.kind === 'protected' && l.kind === 'file' && (l.nlink ?? 1) > 1) hardLinkWarning(l.real, l.nlink!);
  }
  for (const r of fsPolicy.denyWrite) {
    if (literalOf(r) === null) warnings.push(`filesystem.denyWrite: ${r.original}: a glob covers only the paths that match when the run starts; a new file matching it can be created (name the files, or their directory)`);
  }
  for (const h of facts.hardLinked ?? []) hardLinkWarning(h.path, h.nlink);
  function hardLinkWarning(path: string, nlink: number) {
    warnings.push(`protected file ${path} has ${nlink} hard links: writing another of its names changes it; remove the other links (find / -xdev -samefile ${path})`);
  }
  const placeholders = new Map<string, ProtectedTarget>();
  /** Is p, or a directory above it, a placeholder? (Looked up along p's chain, not scanned.) */
  const inPlaceholder = (p: string) => selfAndAncestors(p).some((a) => placeholders.has(a));
  if (!fsPolicy.disabled && !supervised) {
    for (const [l, kind] of missingDenies) {
      // A missing protected path must stay uncreatable. Mask its FIRST missing component: an
      // empty read-only directory if more components follow (e.g. `.git` for `.git/hooks` in a
      // non-repository: nothing below it can be created, and no hooks dir appears on the host),
      // else an empty file/dir of the path's own kind. Only needed where the parent is writable.
      const at = l.firstMissing!;
      const parent = dirname(at);
      if (!model.write(parent) || inPlaceholder(parent) || facts.readOnlyDirs?.has(parent)) continue;
      if (!placeholders.has(at)) placeholders.set(at, { path: at, kind: at === l.real ? kind : 'dir' });
      denyWrite.add(at);
    }
  }

  // --- read denies and allows as mounts: real path → the trust of the strongest rule naming it
  const denyRead = new Map<string, number>();
  const allowRead = new Map<string, number>();
  /** Read-denied paths that do not exist now, with the first missing component (one may appear). */
  const missingReadDenies = new Map<string, { firstMissing: string; trust: number }>();
  const linkedDenies = new Set<string>();
  /** Deny globs the supervisor's read gate judges at each open. */
  const openTimeGlobs: { glob: string; trust: number }[] = [];
  for (const r of access.readDenies) {
    const l = r.landing;
    if (r.region.tail !== undefined) openTimeGlobs.push({ glob: join(r.region.base, r.region.tail), trust: r.trust });
    else if (!l || r.region.base !== l.real) {
      // srt's own (other runs' directories), or a directory srt cannot search, covered whole
      if (l?.why === 'unreadable') blockedDirs.add(r.region.base);
      rank(denyRead, r.region.base, r.trust);
    } else if (existing(l)) {
      rank(denyRead, l.real, r.trust);
      // The mount hides one name: the file's other names show its content.
      if (l.kind === 'file' && (l.nlink ?? 1) > 1 && !linkedDenies.has(l.real)) {
        linkedDenies.add(l.real);
        warnings.push(`${r.setting ?? r.origin}: ${l.real} has ${l.nlink} hard links: the command can read it under its other names unless they are denied too (find / -xdev -samefile ${l.real})`);
      }
    } else if (l.kind === 'missing' && l.firstMissing) {
      const m = missingReadDenies.get(l.real);
      missingReadDenies.set(l.real, { firstMissing: l.firstMissing, trust: Math.max(r.trust, m?.trust ?? -1) });
    }
  }
  if (!supervised && !fsPolicy.disabled) {
    for (const [key, rules] of [['filesystem.denyRead', fsPolicy.denyRead], ['credentials.files', facts.credentials?.deny ?? []]] as const) {
      for (const r of rules) {
        if (literalOf(r) !== null) continue;
        warnings.push(`${key}: ${r.original}: a deny glob covers only the paths that match when the run starts: a matching file made during the run is readable ` +
          '(srt judges deny globs at each open only with its protected-path supervisor, which this system cannot run: see the warning about protected paths)');
      }
    }
  }
  // An allow that does not exist now re-opens nothing: there is nothing to bind.
  for (const r of access.readAllows) if (!r.landing || existing(r.landing)) rank(allowRead, r.region.base, r.trust);
  const kindOf = new Map<string, 'file' | 'dir'>();
  const recordKinds = (ls: Landing[]) => { for (const l of ls) if (l.kind === 'file' || l.kind === 'dir') kindOf.set(l.real, l.kind); };
  recordKinds([...facts.landings.values()]);
  for (const ms of facts.globMatches.values()) recordKinds(ms);
  for (const ms of facts.globUndecodable?.values() ?? []) recordKinds(ms);
  for (const ms of facts.globUnreadable?.values() ?? []) recordKinds(ms);
  for (const ph of placeholders.values()) kindOf.set(ph.path, ph.kind);
  for (const d of blockedDirs) kindOf.set(d, 'dir');
  kindOf.set(facts.tmpDir, 'dir');
  kindOf.set(facts.runDir, 'dir');
  if (facts.runRoot) kindOf.set(facts.runRoot, 'dir');
  for (const f of facts.runtimeFiles ?? []) kindOf.set(f.path, f.kind);

  const readable = model.read;
  // Started in a repository's subdirectory: its .git is outside what the command may write, so
  // commits (and every git command that writes) fail inside. Say it once, with the remedy.
  if (!fsPolicy.disabled && policy.root !== policy.cwd && !writableByRoots(join(policy.root, '.git'))) {
    warnings.push(`the repository's .git (${join(policy.root, '.git')}) is outside the writable paths, so git commits fail inside; run srt from ${policy.root}, or add it to filesystem.allowWrite`);
  }
  const accessOf = (p: string): Access => ({ read: model.read(p), write: model.write(p) && !inPlaceholder(p) });

  // --- nodes, plus rename guards (below, once the read gate's share is known)
  const nodes = new Set<string>([...writeRoots.keys(), ...denyWrite, ...denyRead.keys(), ...allowRead.keys()]);
  const mustMount = new Set<string>();

  // --- denies that hold while the command runs (invariant 2). A mask is a mount on the host's
  // own directory entry, and the kernel detaches it in every namespace once that entry is
  // replaced or removed: a program outside that renames a new file over a denied one (a
  // credential refresh, an editor saving), or moves a denied directory away and makes a new
  // one, would show the new content inside. So the masks must hang on entries no host program
  // can touch:
  //  - outside the writable paths, every directory on the way to a denied path whose entry there
  //    a program of the caller's could replace or rename (facts.replaceable) becomes a snapshot:
  //    a read-only tmpfs with each of its entries bound back (the binds hold the very files and
  //    directories listed; a name added there later, the denied file included, is not seen);
  //  - inside a writable path a snapshot would swallow the command's writes: there the
  //    supervisor checks every open against the denied paths (`gated`), whatever is mounted;
  //  - with the supervisor, outside too once the snapshots would cost more than a budget of
  //    entries at every start (a denied file in a directory of 10,000, or in hundreds of
  //    directories): each open is checked then, whatever the directories hold.
  // Not covered: "/" and sticky shared directories (/tmp) are never snapshots; without the
  // supervisor, a directory too large to bind entry by entry (a warning says which).
  const gatedDenies = new Map<string, number>();
  /** Denies outside the writable paths: each with the first name on its way a snapshot must hold. */
  const outside = new Map<string, { child: string; trust: number }>();
  const hold = (path: string, child: string, trust: number) => {
    if ((allowRead.get(path) ?? -1) >= trust) return; // re-opened after all
    if (writableByRoots(path) || isWithin(path, facts.tmpDir)) {
      gatedDenies.set(path, Math.max(trust, gatedDenies.get(path) ?? -1));
      return;
    }
    outside.set(path, { child, trust: Math.max(trust, outside.get(path)?.trust ?? -1) });
  };
  const pin = (child: string, into: Set<string>) => {
    for (let c = child, d = dirname(c); d !== '/'; c = d, d = dirname(d)) {
      if (!readable(d)) break; // inside a mask: the entries there are the sandbox's own
      if (facts.replaceable?.has(c)) into.add(d);
    }
  };
  if (!fsPolicy.disabled) {
    for (const [d, trust] of denyRead) if (d !== facts.runRoot) hold(d, d, trust);
    for (const [path, { firstMissing, trust }] of missingReadDenies) hold(path, firstMissing, trust);
  }
  // Rename guards: every directory between a write root and a write- or read-denied path inside
  // it becomes a mount point itself, so `mv`/`rm -rf` of a parent cannot swap the protected path
  // away, nor put other content where a tool expects the hidden file (rename of a mount point
  // fails with EBUSY). A read deny the read gate holds needs none: the supervisor refuses moving
  // a directory that holds one (and 1,000 denied files in a project made hundreds of mounts).
  for (const d of [...denyWrite, ...[...denyRead.keys()].filter((r) => !(supervised && gatedDenies.has(r)))]) {
    const root = rootList.filter((w) => isWithin(d, w) && w !== d).sort((a, b) => b.length - a.length)[0];
    if (!root) continue;
    for (let a = dirname(d); a !== root && isWithin(a, root); a = dirname(a)) {
      nodes.add(a); mustMount.add(a); kindOf.set(a, 'dir');
    }
  }
  // A sentinel copy is a mount on the masked file's name too: a host program renaming over that
  // file (`aws configure` rewriting ~/.aws/credentials) would detach it and show the real file.
  // Inside a writable path the read gate cannot help (the copy must stay readable): docs/linux-sandbox.md.
  // In a snapshot the copy takes the entry's place rather than covering a bind of the host file:
  // a mount on the host's dentry is what a rename over it detaches.
  const maskedCopies = new Set<string>();
  const maskSnapshots = new Set<string>();
  for (const m of facts.credentials?.masked ?? []) {
    const l = landing(m.path);
    if (!fsPolicy.disabled && l.kind === 'file' && readable(l.real) && !writableByRoots(l.real) && !isWithin(l.real, facts.tmpDir)) {
      pin(l.real, maskSnapshots);
      maskedCopies.add(l.real);
    }
  }
  const denySnapshots = new Set<string>();
  for (const { child } of outside.values()) pin(child, denySnapshots);
  // Listed once the first plan asked (masks' directories first): one that is too large, or past
  // the budget, means the read gate holds the denies.
  const tooLarge = (d: string) => facts.snapshots?.get(d) === 'too-large';
  const byGate = supervised && [...denySnapshots].some(tooLarge);
  if (byGate) for (const [path, { trust }] of outside) gatedDenies.set(path, Math.max(trust, gatedDenies.get(path) ?? -1));
  const snapshotDirs = new Set([...maskSnapshots, ...(byGate ? [] : denySnapshots)]);
  for (const d of [...snapshotDirs]) {
    if (tooLarge(d)) {
      snapshotDirs.delete(d);
      warnings.push(`${d} holds too many entries for srt to snapshot: a denied path below it that a program outside the sandbox replaces during the run would be seen inside`);
    }
  }
  for (const d of snapshotDirs) { nodes.add(d); kindOf.set(d, 'dir'); }
  // bwrap's --chdir comes before the helper completes the snapshots: a current directory inside
  // one (read-only, e.g. not listed by a reference-tool file) is mounted by bwrap itself.
  if ([...snapshotDirs].some((d) => d !== policy.cwd && isWithin(policy.cwd, d))) {
    nodes.add(policy.cwd); mustMount.add(policy.cwd); kindOf.set(policy.cwd, 'dir');
  }
  // What lies in a snapshot and has a mount of its own must get it (the tmpfs has nothing else).
  for (const p of nodes) if (p !== '/' && snapshotDirs.has(dirname(p))) mustMount.add(p);
  /** Entries of snapshots with a mount somewhere below them (bound before it, by bwrap; were the
   *  helper to bind one, its bind would cover that mount, so the helper refuses a mount point
   *  that exists already). */
  const holdsMounts = new Set<string>();
  for (const p of [...nodes, ...maskedCopies]) {
    for (let a = dirname(p); a !== '/'; a = dirname(a)) if (snapshotDirs.has(dirname(a))) holdsMounts.add(a);
  }
  /** The first missing component of each denied path that did not exist: listed in a snapshot,
   *  a program outside made it after srt looked, and binding it back would show the denied content. */
  const appeared = new Set([...missingReadDenies.values()].map((m) => m.firstMissing));
  const gated: BwrapPlan['gated'] = [];
  for (const [d, trust] of gatedDenies) {
    const reopeners = [...allowRead].filter(([a, aTrust]) => aTrust >= trust && isWithin(a, d));
    if (reopeners.some(([a]) => a === d)) continue; // readable after all
    gated.push({ path: d, reopened: reopeners.map(([a]) => a) });
  }
  for (const { glob, trust } of openTimeGlobs) {
    // Only a path at or below a match re-opens it, and every match lies below the glob's base.
    const base = globBase(glob);
    const reopened = [...allowRead].filter(([a, aTrust]) => aTrust >= trust && a !== base && isWithin(a, base)).map(([a]) => a);
    gated.push({ path: glob, glob: true, reopened });
  }
  if (gated.length && !supervised && !fsPolicy.disabled) {
    warnings.push(`${gated.map((g) => g.path).join(', ')} ${gated.length === 1 ? 'is a denied path' : 'are denied paths'} inside a writable directory: ` +
      'if a program outside the sandbox replaces one during the run (an editor saving it, a tool rewriting it), the command can read the new content; ' +
      'srt prevents that only with its seccomp supervisor, which this system cannot run (see the warning about protected paths)');
  }
  if (fsPolicy.disabled && (denyRead.size || missingReadDenies.size)) {
    warnings.push('with filesystem.disabled a denied credential file that a program outside the sandbox replaces during the run is readable inside');
  }

  const depth = new Map([...nodes].map((p) => [p, depthOf(p)]));
  const sorted = [...nodes].sort((a, b) => depth.get(a)! - depth.get(b)! || (a < b ? -1 : 1));
  const ops: MountOp[] = [];
  const stageDir = facts.seccomp?.mountsPath !== undefined ? facts.seccomp.stageDir : undefined;
  const byHelper = stageDir !== undefined;
  /** The helper's snapshots: each one's stage, bound once every other mount is made (the stages
   *  lie in the run directory, bound deeper than most snapshots). */
  const stages: { dir: string; stage: string }[] = [];
  const remountRo: string[] = [];
  const bind = (source: string, dest: string, ro: boolean) => ops.push({ kind: 'bind', dest, source, ro });
  /** Paths bound read-write: srt-init's Landlock rules allow writes beneath exactly these. */
  const writable: string[] = [];
  const parentAccess = (p: string): Access => {
    for (let a = dirname(p); ; a = dirname(a)) {
      if (nodes.has(a) && a !== p) return accessOf(a);
      if (a === '/') return { read: true, write: false };
    }
  };

  if (fsPolicy.disabled) {
    warnings.push('filesystem isolation is disabled (filesystem.disabled): the command can read and write every file you can');
    ops.push({ kind: 'bind', dest: '/', source: '/', ro: false, dev: true });
  } else {
    // A writable `/` (allowWrite) is bound first: /dev and /proc are mounted on it, never covered
    // by the host's (where /dev/null is a device the sandbox cannot open).
    const rootWritable = nodes.has('/') && !snapshotDirs.has('/') && accessOf('/').read && accessOf('/').write;
    bind('/', '/', !rootWritable);
    if (rootWritable) writable.push('/');
  }
  // denyRead ["/"] with allowRead carve-outs (a read allowlist): the kernel filesystems stay, so
  // the tmpfs over / goes before /dev, /proc and a read-only /sys are mounted on it.
  const rootHidden = !fsPolicy.disabled && nodes.has('/') && !accessOf('/').read;
  if (rootHidden) {
    maskRead('/');
    bind('/sys', '/sys', true);
  }
  ops.push({ kind: 'dev', dest: '/dev' });
  if (policy.enableWeakerNestedSandbox) {
    warnings.push('enableWeakerNestedSandbox: reusing the existing /proc instead of a fresh one; the sandbox is weaker (host processes may be visible)');
    ops.push({ kind: 'bind', dest: '/proc', source: '/proc', ro: false, unchecked: true });
  } else {
    ops.push({ kind: 'proc', dest: '/proc' });
  }
  // bwrap leaves /proc/sys writable for a root caller (uid 0 maps to host root); never allow it.
  // With srt-init the command sees the helper's own fresh /proc (which it covers
  // itself), and covering bwrap's /proc would stop the helper from mounting one.
  if (!facts.seccomp) ops.push({ kind: 'bind', dest: '/proc/sys', source: '/proc/sys', ro: true, unchecked: true });

  if (fsPolicy.disabled) {
    // Only credential denies survive; the filesystem is otherwise the host's.
    const creds = new Set(access.readDenies.filter((r) => r.kind === 'credential' && r.landing && existing(r.landing)).map((r) => r.landing!.real));
    for (const p of [...creds].sort()) maskRead(p);
    bind(facts.tmpDir, facts.tmpDir, false);
  } else {
    for (const p of sorted) {
      if (p === '/' && !snapshotDirs.has('/')) continue;
      if (snapshotDirs.has(p)) { snapshot(p); continue; }
      const acc = accessOf(p);
      const par = parentAccess(p);
      if (!acc.read) {
        if (par.read) maskRead(p);
        continue;
      }
      if (acc.read === par.read && acc.write === par.write && !mustMount.has(p) && !writeRoots.has(p)) continue;
      bind(p, p, !acc.write);
      if (acc.write && !writable.some((w) => isWithin(p, w))) writable.push(p);
    }
  }

  /** A read-only tmpfs at `dir` with each listed entry bound back (read-only: a snapshot is never
   *  writable), but those mounted on their own (`nodes`). With the helper's mount check the
   *  helper binds the entries (bwrap re-reads the whole mount table after each bind it makes:
   *  O(n²) for n entries): bwrap binds the host's `dir` once, read-only, at a stage in
   *  `stageDir`, and the helper binds each entry from there, makes the tmpfs read-only and covers
   *  the stages (init/verify.c). An entry with mounts of its own below it is bound by bwrap,
   *  before them, as without the helper. */
  function snapshot(dir: string) {
    const listed = facts.snapshots?.get(dir);
    if (!Array.isArray(listed)) {
      errors.push(`srt did not list ${dir}, which it must snapshot; nothing ran`);
      return;
    }
    ops.push({ kind: 'tmpfs', dest: dir });
    if (byHelper) stages.push({ dir, stage: join(stageDir!, String(stages.length)) });
    else remountRo.push(dir);
    for (const e of listed) {
      const at = join(dir, e.name);
      if (nodes.has(at) || maskedCopies.has(at) || appeared.has(at)) continue;
      if (e.kind === 'symlink') {
        ops.push({ kind: 'symlink', dest: at, target: e.target! });
      } else if (byHelper && !holdsMounts.has(at)) {
        ops.push({ kind: 'bind', dest: at, source: at, ro: true, optional: true, byHelper: true });
      } else {
        // Optional: an entry removed meanwhile is left out (the check then wants nothing there).
        ops.push({ kind: 'bind', dest: at, source: at, ro: true, optional: true });
      }
    }
  }

  function maskRead(p: string) {
    if (kindOf.get(p) === 'dir') {
      ops.push({ kind: 'tmpfs', dest: p });
      remountRo.push(p);
    } else if (byHelper) {
      ops.push({ kind: 'bind', dest: p, source: facts.deniedFile, ro: true, byHelper: true, deny: true });
    } else {
      bind(facts.deniedFile, p, true);
    }
  }
  for (const [link, target] of facts.symlinks ?? []) {
    if (!fsPolicy.disabled && !readable(dirname(link)) && readable(landing(link).real)) {
      ops.push({ kind: 'symlink', dest: link, target });
    }
  }
  // Sentinel copies over masked files, on top of every bind above (bwrap writes the copy into
  // its own tmpfs: nothing on the host, nothing another sandbox could see). A masked file the
  // policy hides anyway stays hidden.
  for (const m of facts.credentials?.masked ?? []) {
    const l = landing(m.path);
    if (l.kind !== 'file') continue;
    if (!fsPolicy.disabled && !readable(l.real)) continue;
    ops.push({ kind: 'data', dest: l.real, hides: l.real, fd: m.fd, mode: m.mode });
  }
  if (stages.length) {
    ops.push({ kind: 'tmpfs', dest: stageDir!, unchecked: true });
    for (const { dir, stage } of stages) ops.push({ kind: 'stage', dest: stage, dir });
    ops.push({ kind: 'cover', dest: stageDir! });
  }
  // Read-only last: carve-outs inside a tmpfs need their mount points created first.
  for (const p of remountRo) ops.push({ kind: 'remount-ro', dest: p });

  const { argGroups, init, launcher } = bwrapLaunch(policy, facts, ops, writable, command);
  return {
    args: argGroups.flat(), argGroups, ops, access, ...(init ? { init } : {}), placeholders: [...placeholders.values()], warnings, errors, notes, writable,
    launcher,
    chdir: policy.cwd, snapshots: [...[...snapshotDirs].filter((d) => maskSnapshots.has(d)).sort(), ...[...snapshotDirs].filter((d) => !maskSnapshots.has(d)).sort()], gated,
    protectedRoots: fsPolicy.disabled ? [] : [...writeRoots.keys()].filter((w) => w !== facts.tmpDir),
    protectedPaths: [...protectedPaths],
  };
}
