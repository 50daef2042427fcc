// What the bwrap mounts must cover, read off the access model: the write-denied paths (and the
// placeholders that keep a missing one uncreatable without the supervisor), the read denies and
// the allows that re-open them, and the kind of every path a mount may go on.

import { dirname, join } from 'node:path';
import { selfAndAncestors } from '../glob.js';
import { literalOf } from './access-rule.js';
import type { Lowering } from './bwrap.js';
import type { BwrapFacts } from './bwrap-facts.js';
import type { Landing } from './landing.js';
import type { ProtectedTarget } from './protected.js';

export interface WriteDenies {
  /** Paths mounted read-only. */
  denyWrite: Set<string>;
  /** For the supervisor: every write-denied path, as written and where it lands. */
  protectedPaths: Set<string>;
  /** Mount points srt creates on the host to keep a missing denied path uncreatable. */
  placeholders: Map<string, ProtectedTarget>;
  /** Is p, or a directory above it, a placeholder? (Looked up along p's chain, not scanned.) */
  inPlaceholder: (p: string) => boolean;
  /** Directories a deny had to cover whole, because srt cannot search them. */
  blockedDirs: Set<string>;
}

/** Read denies and allows: real path → the trust of the strongest rule naming it. */
export interface ReadDenies {
  denyRead: Map<string, number>;
  allowRead: Map<string, number>;
  /** Read-denied paths that do not exist now, with the first missing component (one may appear). */
  missingReadDenies: Map<string, { firstMissing: string; trust: number }>;
  /** Deny globs the supervisor's read gate judges at each open. */
  openTimeGlobs: { glob: string; trust: number }[];
}

const exists = (l: Landing) => l.kind === 'file' || l.kind === 'dir';
const rank = (into: Map<string, number>, path: string, trust: number) => into.set(path, Math.max(trust, into.get(path) ?? -1));

/** Write denies as mounts: existing ones read-only; missing ones refused by the supervisor, or
 *  without it kept by a placeholder. */
export function writeDenyTargets({ policy, facts, access, model, supervised, warnings }: Lowering): WriteDenies {
  const denyWrite = new Set<string>();
  const blockedDirs = new Set<string>();
  const missingDenies: [Landing, 'file' | 'dir'][] = [];
  const protectedPaths = new Set<string>();
  const hardLinkWarning = (path: string, nlink: number) =>
    warnings.push(`protected file ${path} has ${nlink} hard links: writing another of its names changes it; remove the other links (find / -xdev -samefile ${path})`);
  for (const r of access.writeDenies) {
    const l = r.landing;
    if (r.kind === 'copy' || !l) continue; // a sentinel copy is read-only itself
    if (r.written !== undefined) protectedPaths.add(r.written);
    protectedPaths.add(l.real);
    if (r.region.base !== l.real) {
      denyWrite.add(r.region.base);
      if (l.why === 'unreadable') blockedDirs.add(r.region.base);
    } else if (exists(l)) denyWrite.add(l.real);
    else if (l.kind === 'missing' && l.firstMissing) missingDenies.push([l, r.shape ?? 'file']);
    // Read-only here, but its other names may be writable: writing one changes this file too.
    if (r.kind === 'protected' && l.kind === 'file' && (l.nlink ?? 1) > 1) hardLinkWarning(l.real, l.nlink!);
  }
  for (const r of policy.filesystem.denyWrite) {
    if (literalOf(r) === null) warnings.push(`filesystem.denyWrite: ${r.original}: a glob covers only the paths that match when the run starts; a new file matching it can be created (name the files, or their directory)`);
  }
  for (const h of facts.hardLinked ?? []) hardLinkWarning(h.path, h.nlink);
  const placeholders = new Map<string, ProtectedTarget>();
  const inPlaceholder = (p: string) => selfAndAncestors(p).some((a) => placeholders.has(a));
  if (!policy.filesystem.disabled && !supervised) {
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
  return { denyWrite, protectedPaths, placeholders, inPlaceholder, blockedDirs };
}

/** Read denies and allows as mounts. Adds to `blockedDirs` the directories a deny covers whole. */
export function readDenyTargets({ policy, facts, access, supervised, warnings }: Lowering, blockedDirs: Set<string>): ReadDenies {
  const denyRead = new Map<string, number>();
  const allowRead = new Map<string, number>();
  const missingReadDenies = new Map<string, { firstMissing: string; trust: number }>();
  const linkedDenies = new Set<string>();
  const openTimeGlobs: { glob: string; trust: number }[] = [];
  for (const r of access.readDenies) {
    const l = r.landing;
    if (r.region.tail !== undefined) openTimeGlobs.push({ glob: join(r.region.base, r.region.tail), trust: r.trust });
    else if (!l || r.region.base !== l.real) {
      // srt's own (other runs' directories), or a directory srt cannot search, covered whole
      if (l?.why === 'unreadable') blockedDirs.add(r.region.base);
      rank(denyRead, r.region.base, r.trust);
    } else if (exists(l)) {
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
  const fsPolicy = policy.filesystem;
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
  for (const r of access.readAllows) if (!r.landing || exists(r.landing)) rank(allowRead, r.region.base, r.trust);
  return { denyRead, allowRead, missingReadDenies, openTimeGlobs };
}

/** The kind of every path a mount may go on: a directory gets a tmpfs as its mask, a file the denied file. */
export function knownKinds(facts: BwrapFacts, placeholders: Map<string, ProtectedTarget>, blockedDirs: Set<string>): Map<string, 'file' | 'dir'> {
  const kindOf = new Map<string, 'file' | 'dir'>();
  const recordKinds = (ls: Iterable<Landing>) => { for (const l of ls) if (l.kind === 'file' || l.kind === 'dir') kindOf.set(l.real, l.kind); };
  recordKinds(facts.landings.values());
  for (const ms of facts.globMatches.values()) recordKinds(ms);
  for (const ms of facts.globUndecodable?.values() ?? []) recordKinds(ms);
  for (const ms of facts.globUnreadable?.values() ?? []) recordKinds(ms);
  for (const ph of placeholders.values()) kindOf.set(ph.path, ph.kind);
  for (const d of blockedDirs) kindOf.set(d, 'dir');
  kindOf.set(facts.tmpDir, 'dir');
  kindOf.set(facts.runDir, 'dir');
  if (facts.runRoot) kindOf.set(facts.runRoot, 'dir');
  for (const f of facts.runtimeFiles ?? []) kindOf.set(f.path, f.kind);
  return kindOf;
}
