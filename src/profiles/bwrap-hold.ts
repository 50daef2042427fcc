// Denies that hold while the command runs (invariant 2). A mask is a mount on the host's own
// directory entry, and the kernel detaches it in every namespace once that entry is replaced or
// removed: a program outside that renames a new file over a denied one (a credential refresh, an
// editor saving), or moves a denied directory away and makes a new one, would show the new
// content inside. So the masks must hang on entries no host program can touch:
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

import { dirname } from 'node:path';
import { globBase, isWithin } from '../glob.js';
import type { GatedDeny, Lowering, MountTree } from './bwrap.js';
import type { ReadDenies } from './bwrap-denies.js';

export interface HeldDenies {
  /** Directories made snapshots, and those among them a masked file's copy needs. */
  snapshotDirs: Set<string>;
  maskSnapshots: Set<string>;
  /** Masked files whose sentinel copy takes their entry's place in a snapshot. */
  maskedCopies: Set<string>;
  /** Entries of snapshots with a mount somewhere below them (bound before it, by bwrap; were the
   *  helper to bind one, its bind would cover that mount, so the helper refuses a mount point
   *  that exists already). */
  holdsMounts: Set<string>;
  /** The first missing component of each denied path that did not exist: listed in a snapshot,
   *  a program outside made it after srt looked, and binding it back would show the denied content. */
  appeared: Set<string>;
  gated: GatedDeny[];
}

/** Decides for each read deny whether the read gate or a snapshot holds it, adds the mounts
 *  that needs (rename guards, snapshots) to `tree`, and lists what the gate checks. */
export function holdDenies(low: Lowering, reads: ReadDenies, denyWrite: Set<string>, tree: MountTree): HeldDenies {
  const { policy, facts, supervised, warnings, writableByRoots } = low;
  const { denyRead, allowRead, missingReadDenies } = reads;
  const { nodes, mustMount, kindOf } = tree;
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
  // The way up from a name is the same for every name below it: each set walks it once.
  const pinned = new Map<Set<string>, Set<string>>();
  const pin = (child: string, into: Set<string>) => {
    let walked = pinned.get(into);
    if (!walked) pinned.set(into, (walked = new Set()));
    for (let c = child, d = dirname(c); d !== '/' && !walked.has(c); c = d, d = dirname(d)) {
      walked.add(c);
      if (!low.model.read(d)) break; // inside a mask: the entries there are the sandbox's own
      if (facts.replaceable?.has(c)) into.add(d);
    }
  };
  if (!policy.filesystem.disabled) {
    for (const [d, trust] of denyRead) if (d !== facts.runRoot) hold(d, d, trust);
    for (const [path, { firstMissing, trust }] of missingReadDenies) hold(path, firstMissing, trust);
  }
  addRenameGuards(low, [...denyWrite, ...[...denyRead.keys()].filter((r) => !(supervised && gatedDenies.has(r)))], tree);
  // A sentinel copy is a mount on the masked file's name too: a host program renaming over that
  // file (`aws configure` rewriting ~/.aws/credentials) would detach it and show the real file.
  // Inside a writable path the read gate cannot help (the copy must stay readable): docs/linux-sandbox.md.
  // In a snapshot the copy takes the entry's place rather than covering a bind of the host file:
  // a mount on the host's dentry is what a rename over it detaches.
  const maskedCopies = new Set<string>();
  const maskSnapshots = new Set<string>();
  for (const m of facts.credentials?.masked ?? []) {
    const l = low.landing(m.path);
    if (!policy.filesystem.disabled && l.kind === 'file' && low.model.read(l.real) && !writableByRoots(l.real) && !isWithin(l.real, facts.tmpDir)) {
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
  const holdsMounts = new Set<string>();
  if (snapshotDirs.size) {
    const above = new Set<string>();
    for (const p of [...nodes, ...maskedCopies]) {
      for (let a = dirname(p); a !== '/' && !above.has(a); a = dirname(a)) {
        above.add(a);
        if (snapshotDirs.has(dirname(a))) holdsMounts.add(a);
      }
    }
  }
  const appeared = new Set([...missingReadDenies.values()].map((m) => m.firstMissing));
  const gated = gatedList(gatedDenies, reads);
  if (gated.length && !supervised && !policy.filesystem.disabled) {
    warnings.push(`${gated.map((g) => g.path).join(', ')} ${gated.length === 1 ? 'is a denied path' : 'are denied paths'} inside a writable directory: ` +
      'if a program outside the sandbox replaces one during the run (an editor saving it, a tool rewriting it), the command can read the new content; ' +
      'srt prevents that only with its seccomp supervisor, which this system cannot run (see the warning about protected paths)');
  }
  if (policy.filesystem.disabled && (denyRead.size || missingReadDenies.size)) {
    warnings.push('with filesystem.disabled a denied credential file that a program outside the sandbox replaces during the run is readable inside');
  }
  return { snapshotDirs, maskSnapshots, maskedCopies, holdsMounts, appeared, gated };
}

/** Rename guards: every directory between a write root and a denied path inside it becomes a
 *  mount point itself, so `mv`/`rm -rf` of a parent cannot swap the protected path away, nor put
 *  other content where a tool expects the hidden file (rename of a mount point fails with EBUSY).
 *  A read deny the read gate holds needs none: the supervisor refuses moving a directory that
 *  holds one (and 1,000 denied files in a project made hundreds of mounts). */
function addRenameGuards(low: Lowering, denied: string[], { nodes, mustMount, mayVanish, kindOf }: MountTree): void {
  const rootList = [...low.writeRoots.keys()];
  for (const d of denied) {
    const root = rootList.filter((w) => isWithin(d, w) && w !== d).sort((a, b) => b.length - a.length)[0];
    if (!root) continue;
    for (let a = dirname(d); a !== root && isWithin(a, root); a = dirname(a)) {
      if (!nodes.has(a) && low.supervised) mayVanish.add(a);
      nodes.add(a); mustMount.add(a); kindOf.set(a, 'dir');
    }
  }
}

/** What the read gate checks: each gated path or open-time glob with the allows that re-open
 *  part of it (a path re-opened whole is no deny). */
function gatedList(gatedDenies: Map<string, number>, { allowRead, openTimeGlobs }: ReadDenies): GatedDeny[] {
  const gated: GatedDeny[] = [];
  const allows = [...allowRead];
  for (const [d, trust] of gatedDenies) {
    const reopeners = allows.filter(([a, aTrust]) => aTrust >= trust && isWithin(a, d));
    if (reopeners.some(([a]) => a === d)) continue; // readable after all
    gated.push({ path: d, reopened: reopeners.map(([a]) => a) });
  }
  for (const { glob, trust } of openTimeGlobs) {
    // Only a path at or below a match re-opens it, and every match lies below the glob's base.
    const base = globBase(glob);
    const reopened = allows.filter(([a, aTrust]) => aTrust >= trust && a !== base && isWithin(a, base)).map(([a]) => a);
    gated.push({ path: glob, glob: true, reopened });
  }
  return gated;
}
